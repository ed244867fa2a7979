"""``patchwarden setup``: create the GitHub App from its manifest, as Probot apps do.

It serves ``GET /setup`` (a page with one button that posts the manifest to GitHub),
and ``GET /setup/callback``, where GitHub sends the person back with a code. The code
is exchanged (``POST /app-manifests/{code}/conversions``) for the App's id, private key
and webhook secret, which are written next to each other with mode 0600: the key to
``app.pem`` and the settings to ``.env`` (``patchwarden serve`` reads it from its
working folder). Then the page says what to do next, and the command ends.

Only the person who started the command can use the page: its address carries a
one-time token printed on the terminal (it is also the ``state`` GitHub sends back), so
a stranger who finds the port cannot bind this server to an App of theirs. Once the
App is configured (settings or ``.env``), setup refuses to run.
"""

from __future__ import annotations

import asyncio
import hmac
import html
import json
import logging
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from app.config import Settings
from app.errors import ConfigError
from app.github.manifest import (
    CALLBACK_PATH,
    LOCAL_HOSTS,
    SETUP_PATH,
    build_manifest,
    convert_manifest,
    new_app_url,
    public_base,
)

log = logging.getLogger("patchwarden")
COOKIE = "patchwarden_setup"

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Patchwarden setup</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:42em;margin:3em auto;padding:0 1em}}
code{{background:#f3f3f3;padding:0 .2em}}button{{font-size:1em;padding:.5em 1em}}</style>
</head><body>
<h1>{title}</h1>
{body}
</body></html>
"""


def page(title: str, body: str, status: int = 200) -> web.Response:
    return web.Response(
        status=status,
        text=PAGE.format(title=html.escape(title), body=body),
        content_type="text/html",
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )


def configured(settings: Settings, env_file: Path) -> str | None:
    """Why the App counts as configured already (nothing to set up), or None."""
    if settings.app_id is not None:
        return "PATCHWARDEN_APP_ID is set"
    if env_file.exists():
        for line in env_file.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.strip().startswith("PATCHWARDEN_APP_ID="):
                return f"{env_file} holds PATCHWARDEN_APP_ID"
    return None


def write_credentials(
    app: dict[str, Any], *, env_file: Path, key_file: Path, public_url: str | None = None
) -> None:
    """The key to ``key_file`` and the settings appended to ``env_file`` (whatever else
    it holds is kept), both mode 0600. Refuses to overwrite a key."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        fd = os.open(key_file, flags, 0o600)
    except FileExistsError:
        raise ConfigError(f"{key_file} exists: move it away to set up a new App") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(str(app["pem"]))
    lines = [
        f"# the GitHub App {app['slug']} ({app.get('html_url', '')}), from patchwarden setup",
        f"PATCHWARDEN_APP_ID={int(app['id'])}",
        f"PATCHWARDEN_PRIVATE_KEY_PATH={key_file.resolve()}",
        f"PATCHWARDEN_WEBHOOK_SECRET={app['webhook_secret']}",
        f"PATCHWARDEN_BOT_NAME={app['slug']}",
    ]
    if public_url:  # check runs link to the audit pages there
        lines.append(f"PATCHWARDEN_PUBLIC_URL={public_url}")
    fd = os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        if env_file.stat().st_size:
            out.write("\n")
        out.write("\n".join(lines) + "\n")


@dataclass
class Setup:
    settings: Settings
    base: str  # the server's public base URL, as GitHub will call it
    name: str
    org: str | None
    public: bool
    env_file: Path
    key_file: Path
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    done: asyncio.Event = field(default_factory=asyncio.Event)
    created: dict[str, Any] | None = None
    # The browser that first opened the page: a cookie it alone holds, asked for from
    # then on (a link seen in a proxy's log or over a shoulder is not enough).
    browser: str | None = None

    def authorised(self, request: web.Request, name: str) -> bool:
        given = request.query.get(name, "")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return False
        if self.browser is None:
            return name == "token"  # the first visit binds the browser
        cookie = request.cookies.get(COOKIE, "")
        return hmac.compare_digest(cookie.encode(), self.browser.encode())

    async def form(self, request: web.Request) -> web.Response:
        why = configured(self.settings, self.env_file)
        if why or self.created is not None:
            return page(
                "Already set up", f"<p>Nothing to do: {html.escape(why or 'done')}.</p>", 409
            )
        if not self.authorised(request, "token"):
            return page(
                "Not this link",
                "<p>Open the address <code>patchwarden setup</code> printed on its "
                "terminal: it carries a one-time token.</p>",
                403,
            )
        manifest = build_manifest(url=self.base, name=self.name, public=self.public)
        action = new_app_url(self.settings.github_api_url, org=self.org, state=self.token)
        value = html.escape(json.dumps(manifest), quote=True)
        owner = f"the organisation <b>{html.escape(self.org)}</b>" if self.org else "your account"
        body = (
            f"<p>This creates the GitHub App <b>{html.escape(self.name)}</b>, owned by {owner},"
            f" sending webhooks to <code>{html.escape(manifest['hook_attributes']['url'])}</code>."
            " GitHub shows what it asks for before you confirm.</p>"
            f'<form action="{html.escape(action, quote=True)}" method="post">'
            f'<input type="hidden" name="manifest" value="{value}">'
            "<button type=submit>Create the GitHub App</button></form>"
        )
        answer = page("Create the Patchwarden GitHub App", body)
        if self.browser is None:
            self.browser = secrets.token_urlsafe(24)
        answer.set_cookie(
            COOKIE, self.browser, httponly=True, samesite="Lax", path="/setup", max_age=3600
        )
        return answer

    async def callback(self, request: web.Request) -> web.Response:
        why = configured(self.settings, self.env_file)
        if why or self.created is not None:
            return page(
                "Already set up", f"<p>Nothing to do: {html.escape(why or 'done')}.</p>", 409
            )
        if not self.authorised(request, "state"):
            return page("Not this request", "<p>The state does not match this setup.</p>", 403)
        code = request.query.get("code", "")
        if not code:
            return page(
                "No code", "<p>GitHub sent no code: start again from the setup page.</p>", 400
            )
        try:
            async with aiohttp.ClientSession() as session:
                app = await convert_manifest(session, self.settings.github_api_url, code)
            # Check runs link to audit pages at the public URL: not on this machine's
            # localhost, which people reading github.com cannot open.
            public = None if urlsplit(self.base).hostname in LOCAL_HOSTS else self.base
            write_credentials(
                app, env_file=self.env_file, key_file=self.key_file, public_url=public
            )
        except (ConfigError, OSError, aiohttp.ClientError, ValueError) as exc:
            return page("Setup failed", f"<p>{html.escape(str(exc))}</p>", 502)
        self.created = app
        self.done.set()
        install = f"{app.get('html_url', '')}/installations/new"
        body = (
            f"<p>The App <b>{html.escape(str(app['slug']))}</b> (id {int(app['id'])}) exists."
            f" Its key is in <code>{html.escape(str(self.key_file))}</code> and its settings in"
            f" <code>{html.escape(str(self.env_file))}</code> (both readable by you only).</p>"
            "<ol><li>Start the server in this folder: <code>patchwarden serve</code>"
            " (then <code>patchwarden doctor</code> checks it).</li>"
            f'<li><a href="{html.escape(install, quote=True)}">Install the App</a>'
            " on the repositories it may fix.</li></ol>"
        )
        return page("Patchwarden is set up", body)


def setup_app(setup: Setup) -> web.Application:
    app = web.Application()
    app.router.add_get(SETUP_PATH, setup.form)
    app.router.add_get(CALLBACK_PATH, setup.callback)
    return app


async def serve_setup(setup: Setup, host: str, port: int) -> dict[str, Any]:
    """Serve the setup pages until the App is created; its details."""
    runner = web.AppRunner(setup_app(setup), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        print(
            f"Open {setup.base}{SETUP_PATH}?token={setup.token} in your browser "
            f"(listening on {host}:{port}; Ctrl-C to stop).",
            flush=True,
        )
        await setup.done.wait()
        await asyncio.sleep(0.5)  # the last page reaches the browser
    finally:
        await runner.cleanup()
    assert setup.created is not None
    return setup.created


def run_setup(args: Any, settings: Settings) -> int:
    from app.cli.serve import listen_error

    env_file, key_file = Path(args.env_file), Path(args.key_file)
    why = configured(settings, env_file)
    if why:
        raise ConfigError(f"the App is configured already ({why}): nothing to set up")
    # Checked before GitHub creates the App: its code works once, so the key and the
    # secret must have somewhere to go.
    if key_file.exists():
        raise ConfigError(f"{key_file} exists: move it away, or give --key-file another path")
    for path in (key_file, env_file):
        target = path if path.exists() else path.parent.resolve()
        if not os.access(target, os.W_OK):
            raise ConfigError(f"{path} cannot be written here: run setup in a folder you own")
    port = args.port or settings.port
    base, warnings = public_base(args.url or f"http://localhost:{port}", option="--url")
    for warning in warnings:
        print(f"warning: {warning}", flush=True)
    setup = Setup(
        settings=settings,
        base=base,
        name=args.name,
        org=args.org,
        public=args.public,
        env_file=env_file,
        key_file=key_file,
    )
    try:
        created = asyncio.run(serve_setup(setup, args.host or settings.host, port))
    except OSError as exc:
        raise ConfigError(listen_error(exc, args.host or settings.host, port)) from None
    print(
        f"The App {created['slug']} (id {created['id']}) is set up: {env_file} and "
        f"{args.key_file} hold its settings and key. Next: patchwarden serve, then install "
        f"it at {created.get('html_url', '')}/installations/new"
    )
    return 0
