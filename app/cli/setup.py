"""``patchwarden setup``: create the GitHub App from its manifest, as Probot apps do.

It serves ``GET /setup`` (a page with one button that posts the manifest to GitHub),
and ``GET /setup/callback``, where GitHub sends the person back with a code. GitHub
sends the *browser* back (a redirect, not a call from its servers), so the manifest's
``redirect_url`` is the address the browser reached the page on (``http://localhost:
PORT`` on a laptop or through ``ssh -L``), while its webhook URL is the public one
(``--url``): setup needs no public URL that works yet. The code is exchanged
(``POST /app-manifests/{code}/conversions``) for the App's id, private key and webhook
secret, which are written next to each other with mode 0600: the key to ``app.pem``
and the settings to ``.env`` (``patchwarden serve`` reads it from its working folder).
Then the page says what to do next, and the command ends.

Only the person who started the command can use the page: its address carries a
one-time token printed on the terminal (it is also the ``state`` GitHub sends back), so
a stranger who finds the port cannot bind this server to an App of theirs, and the
first browser to open it keeps it (a cookie). A link from an earlier run, or opened in
a second browser, is refused with a page that says so and what to do: run setup again.
Once the App is configured (settings or ``.env``), setup refuses to run.
"""

from __future__ import annotations

import asyncio
import hmac
import html
import ipaddress
import json
import logging
import os
import re
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
    apps_url,
    build_manifest,
    convert_manifest,
    new_app_url,
    public_base,
)

log = logging.getLogger("patchwarden")
COOKIE = "patchwarden_setup"
AGAIN = "run <code>patchwarden setup</code> again: it prints a new link"
# A Host header as a browser sends it: a name or an address, and a port.
_HOST = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?"
)

# Why the form is not shown: the link's token is missing, unknown, or used by another browser.
REFUSED: dict[str, tuple[str, str, int]] = {
    "missing": (
        "This page needs its link",
        "<p>Open the address <code>patchwarden setup</code> printed on its terminal:"
        f" it carries a one-time token. If that terminal is gone, {AGAIN}.</p>",
        403,
    ),
    "unknown": (
        "This link has expired",
        "<p>It is not the link this <code>patchwarden setup</code> printed: each run"
        " prints a new one, and a link from an earlier run (or a mistyped one) no"
        " longer works. Open the link on the terminal where setup runs now, or"
        f" {AGAIN}.</p>",
        403,
    ),
    "used": (
        "This link was used already",
        "<p>Another browser opened it first, and only that browser may go on (a"
        " link seen in a log or over a shoulder must not be enough). Go on in that"
        " browser, or stop setup (Ctrl-C on its terminal) and"
        f" {AGAIN}.</p>",
        410,
    ),
}

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


def browser_address(
    *, public: str, scheme: str, host: str, forwarded_host: str = "", forwarded_proto: str = ""
) -> str | None:
    """The base URL the browser reached the setup page on, for GitHub to send it back
    to: ``scheme://host`` (``http://localhost:8080``, or the port ``ssh -L`` forwards),
    as a proxy in front saw them (``X-Forwarded-Host``, ``-Proto``), or ``public``
    itself (with its path) when that is the host. None for a host no browser sends.
    Only the holder of the link gets this far: the headers cannot send others away."""
    host = forwarded_host.split(",")[0].strip() or host
    if forwarded_proto in {"http", "https"}:
        scheme = forwarded_proto
    if host.lower() == urlsplit(public).netloc.lower():
        return public
    if not _HOST.fullmatch(host):
        return None
    return f"{scheme}://{host}"


def local_link(host: str, port: int) -> str:
    """The setup page's address on the machine it listens on."""
    try:
        address = ipaddress.ip_address(host)
        local = address.is_loopback or address.is_unspecified
    except ValueError:
        local = host in {"", *LOCAL_HOSTS}
    shown = "localhost" if local else host
    shown = f"[{shown}]" if ":" in shown else shown
    return f"http://{shown}:{port}{SETUP_PATH}"


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

    def refusal(self, request: web.Request, name: str) -> str | None:
        """Why this request may not use the setup: ``missing`` or ``unknown`` (not this
        run's token: an earlier run's, or made up), ``used`` (the right token in a
        browser other than the first one); None when it may."""
        given = request.query.get(name, "")
        if not given:
            return "missing"
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return "unknown"
        if self.browser is None:
            return None if name == "token" else "used"  # the first visit binds the browser
        cookie = request.cookies.get(COOKIE, "")
        return None if hmac.compare_digest(cookie.encode(), self.browser.encode()) else "used"

    def finished(self) -> web.Response | None:
        why = configured(self.settings, self.env_file)
        if why is None and self.created is None:
            return None
        said = html.escape(why or "this setup created the App")
        return page("Already set up", f"<p>Nothing to do: {said}.</p>", 409)

    async def form(self, request: web.Request) -> web.Response:
        if (done := self.finished()) is not None:
            return done
        refused = self.refusal(request, "token")
        if refused in REFUSED:
            title, text, status = REFUSED[refused]
            return page(title, text, status)
        back = browser_address(
            public=self.base,
            scheme=request.scheme,
            host=request.host,
            forwarded_host=request.headers.get("X-Forwarded-Host", ""),
            forwarded_proto=request.headers.get("X-Forwarded-Proto", ""),
        )
        if back is None:
            return page(
                "Not an address to come back to",
                f"<p>GitHub cannot send a browser back to <code>{html.escape(request.host)}</code>:"
                " open the link <code>patchwarden setup</code> printed.</p>",
                400,
            )
        manifest = build_manifest(url=self.base, name=self.name, public=self.public, back_to=back)
        action = new_app_url(self.settings.github_api_url, org=self.org, state=self.token)
        value = html.escape(json.dumps(manifest), quote=True)
        owner = f"the organisation <b>{html.escape(self.org)}</b>" if self.org else "your account"
        body = (
            f"<p>This creates the GitHub App <b>{html.escape(self.name)}</b>, owned by {owner},"
            f" sending webhooks to <code>{html.escape(manifest['hook_attributes']['url'])}</code>"
            " (GitHub's servers post there once <code>patchwarden serve</code> runs; it need"
            " not work yet). GitHub shows what it asks for before you confirm, then sends this"
            f" browser back to <code>{html.escape(manifest['redirect_url'])}</code>, the"
            " address you opened this page on.</p>"
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
        if (done := self.finished()) is not None:
            return done
        refused = self.refusal(request, "state")
        if refused == "used":
            return page(
                "Not the browser that started setup",
                "<p>Only the browser that first opened the setup link may finish it, and"
                " nothing was exchanged yet. Copy this page's address into that browser (the"
                f" code in it works once, for an hour), or {AGAIN}.</p>",
                403,
            )
        if refused is not None:
            apps = apps_url(self.settings.github_api_url, org=self.org)
            return page(
                "Not this setup's request",
                "<p>GitHub sent you back with a state this <code>patchwarden setup</code>"
                " did not issue: the form came from an earlier run (each run has its own"
                " link) or from someone else. Nothing was exchanged. GitHub may have created"
                f' the App all the same: delete it in <a href="{html.escape(apps, quote=True)}">'
                "your GitHub Apps</a> (its name stays taken while it exists), then"
                f" {AGAIN}.</p>",
                403,
            )
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
            f"Open {local_link(host, port)}?token={setup.token} in your browser "
            f"(listening on {host}:{port}; Ctrl-C to stop).\n"
            "GitHub sends your browser back to the address you open, so localhost works, "
            f"also from your laptop through `ssh -L {port}:127.0.0.1:{port} THIS-SERVER`;\n"
            f"webhooks will go to {setup.base}/webhooks/github (it need not answer yet).",
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
