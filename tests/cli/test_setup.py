"""First install like a Probot app: `patchwarden setup` serves the manifest form, and
GitHub's redirect back is exchanged (against LocalForge, contract-checked) for the App's
id, key and webhook secret, written with mode 0600; the settings it writes work."""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import re
import stat
import time
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import jwt
import pytest

from app.cli.setup import Setup, browser_address, local_link, serve_setup, write_credentials
from app.config import Settings, load_settings
from app.errors import ConfigError
from app.github.manifest import build_manifest, public_base
from app.localforge import LocalForge
from tests.cli.test_cli import clean_env, free_port, run


@pytest.mark.parametrize(
    ("url", "base", "warns"),
    [
        ("https://pw.example.org/", "https://pw.example.org", False),
        ("https://pw.example.org/patchwarden", "https://pw.example.org/patchwarden", False),
        ("http://localhost:8080", "http://localhost:8080", True),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080", True),
    ],
)
def test_public_urls(url: str, base: str, warns: bool) -> None:
    got, warnings = public_base(url)
    assert got == base
    assert bool(warnings) is warns


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://pw.example.org", "plain http"),
        ("pw.example.org", "public base URL"),
        ("ftp://pw.example.org", "public base URL"),
        ("https://pw.example.org/?x=1", "without ?query"),
    ],
)
def test_urls_github_should_not_call_are_refused(url: str, says: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)):
        public_base(url)


def test_the_manifest_sends_the_person_back_to_the_callback() -> None:
    manifest = build_manifest(url="https://pw.example.org/")
    assert manifest["redirect_url"] == "https://pw.example.org/setup/callback"


def test_the_browser_comes_back_to_localhost_while_webhooks_go_to_the_public_url() -> None:
    manifest = build_manifest(url="https://pw.example.org", back_to="http://localhost:8080")
    assert manifest["redirect_url"] == "http://localhost:8080/setup/callback"
    assert manifest["hook_attributes"]["url"] == "https://pw.example.org/webhooks/github"
    assert manifest["url"] == "https://pw.example.org"
    with pytest.raises(ConfigError, match="browser can go back to"):
        build_manifest(url="https://pw.example.org", back_to="ftp://localhost")


PUBLIC = "https://pw.example.org"


@pytest.mark.parametrize(
    ("public", "host", "forwarded", "back"),
    [
        (PUBLIC, "localhost:8080", ("", ""), "http://localhost:8080"),  # on the laptop
        (PUBLIC, "localhost:9000", ("", ""), "http://localhost:9000"),  # ssh -L 9000:...:8080
        (PUBLIC, "127.0.0.1:8080", ("", ""), "http://127.0.0.1:8080"),  # its cookie's host
        (PUBLIC, "[::1]:8080", ("", ""), "http://[::1]:8080"),
        (PUBLIC, "pw.example.org", ("", ""), PUBLIC),  # the public URL itself, with its https
        (f"{PUBLIC}/pw", "pw.example.org", ("", ""), f"{PUBLIC}/pw"),  # and its path
        (PUBLIC, "127.0.0.1:8080", ("pw.example.org", "https"), PUBLIC),  # through its proxy
        (PUBLIC, "127.0.0.1:8080", ("other.example", "https"), "https://other.example"),
        (PUBLIC, "a b", ("", ""), None),
        (PUBLIC, "x/y@evil.example", ("", ""), None),
    ],
)
def test_github_sends_the_browser_back_where_it_reached_setup(
    public: str, host: str, forwarded: tuple[str, str], back: str | None
) -> None:
    got = browser_address(
        public=public,
        scheme="http",
        host=host,
        forwarded_host=forwarded[0],
        forwarded_proto=forwarded[1],
    )
    assert got == back


@pytest.mark.parametrize(
    ("host", "link"),
    [
        ("127.0.0.1", "http://localhost:8080/setup"),
        ("0.0.0.0", "http://localhost:8080/setup"),  # noqa: S104 - what --host may say
        ("::", "http://localhost:8080/setup"),
        ("10.0.0.5", "http://10.0.0.5:8080/setup"),
        ("fe80::1", "http://[fe80::1]:8080/setup"),
    ],
)
def test_the_printed_link_is_on_this_machine(host: str, link: str) -> None:
    assert local_link(host, 8080) == link


@pytest.mark.slow  # a `patchwarden` process
def test_manifest_command_refuses_http_and_warns_on_localhost(tmp_path: Path) -> None:
    refused = run("manifest", "--url", "http://pw.example.org", cwd=tmp_path)
    assert refused.returncode == 2
    assert "plain http" in refused.stderr
    local = run("manifest", "--url", "http://localhost:8080", cwd=tmp_path)
    assert local.returncode == 0
    assert "warning:" in local.stderr


async def _get(url: str, browser: aiohttp.ClientSession | None = None) -> tuple[int, str]:
    """GET as ``browser`` (its cookies kept), or as a new one."""
    if browser is not None:
        async with browser.get(url) as response:
            return response.status, await response.text()
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


def _setup(tmp_path: Path, *, api: str, base: str, org: str | None = None) -> Setup:
    return Setup(
        settings=Settings(github_api_url=api),  # nothing configured yet
        base=base,
        name="Patchwarden",
        org=org,
        public=False,
        env_file=tmp_path / ".env",
        key_file=tmp_path / "app.pem",
    )


async def _serve(setup: Setup, port: int) -> asyncio.Task[dict[str, object]]:
    """``serve_setup`` on 127.0.0.1:``port``, once it listens."""
    task = asyncio.create_task(serve_setup(setup, "127.0.0.1", port))
    for _ in range(200):
        try:
            await _get(f"http://127.0.0.1:{port}/setup")
            return task
        except aiohttp.ClientConnectorError:
            await asyncio.sleep(0.05)
    raise AssertionError("setup does not listen")


def _manifest(page: str) -> dict[str, object]:
    found = re.search(r'name="manifest" value="([^"]+)"', page)
    assert found is not None, page
    manifest: dict[str, object] = json.loads(html.unescape(found[1]))
    return manifest


async def test_the_app_is_created_from_its_manifest(tmp_path: Path, forge: LocalForge) -> None:
    port = free_port()
    setup = _setup(tmp_path, api=forge.url, base=f"http://localhost:{port}", org="octo-org")
    (tmp_path / ".env").write_text("PATCHWARDEN_LOG_LEVEL=INFO\n")  # kept, not replaced
    task = await _serve(setup, port)
    base = f"http://127.0.0.1:{port}"
    status, _ = await _get(f"{base}/setup")
    assert status == 403  # no token: not the person who started it

    browser = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
    status, text = await _get(f"{base}/setup?token={setup.token}", browser)
    assert status == 200
    # The link alone, in another browser (seen in a proxy's log), is no longer enough.
    assert (await _get(f"{base}/setup?token={setup.token}"))[0] == 410  # used: gone
    assert (await _get(f"{base}/setup?token={setup.token}", browser))[0] == 200
    action = html.unescape(re.search(r'<form action="([^"]+)"', text)[1])  # type: ignore[index]
    assert action == f"{forge.url}/organizations/octo-org/settings/apps/new?state={setup.token}"
    manifest = _manifest(text)
    # Back to where this browser opened the page (127.0.0.1, its cookie's host), not to
    # the localhost spelling of --url.
    back = f"{base}/setup/callback"
    assert manifest["redirect_url"] == back

    code = forge.submit_manifest(manifest)  # the person confirms on GitHub
    status, text = await _get(f"{back}?code={code}&state=forged", browser)
    assert status == 403
    assert "Not this setup's request" in html.unescape(text)
    assert "patchwarden setup</code> again" in text
    assert f"{forge.url}/organizations/octo-org/settings/apps" in text  # delete a stray App
    status, text = await _get(f"{back}?code={code}&state={setup.token}")
    assert status == 403  # the right state from another browser
    assert "Not the browser that started setup" in text
    # GitHub redirects the browser to the manifest's redirect_url
    status, text = await _get(f"{back}?code={code}&state={setup.token}", browser)
    await browser.close()
    assert status == 200, text
    assert "is set up" in text
    created = await asyncio.wait_for(task, 10)
    assert created["id"] == forge.state.app_id
    assert forge.state.created_from_manifest == [manifest]

    for written in (tmp_path / ".env", tmp_path / "app.pem"):
        assert stat.S_IMODE(written.stat().st_mode) == 0o600
    env = (tmp_path / ".env").read_text()
    assert env.startswith("PATCHWARDEN_LOG_LEVEL=INFO\n")
    assert f"PATCHWARDEN_APP_ID={forge.state.app_id}" in env
    assert f"PATCHWARDEN_WEBHOOK_SECRET={forge.hooks.webhook_secret}" in env

    # What it wrote is enough to act as the App: read from .env, the key signs a JWT
    # that GitHub (the forge, holding the new public key) accepts.
    written = load_settings(_env_file=str(tmp_path / ".env"))
    assert written.app_id == forge.state.app_id
    assert written.public_url is None  # localhost: no audit link github.com readers could open
    key = written.app_private_key()
    assert key is not None
    token = jwt.encode(
        {"iat": int(time.time()) - 30, "exp": int(time.time()) + 300, "iss": str(written.app_id)},
        key,
        algorithm="RS256",
    )
    async with aiohttp.ClientSession() as session:
        async with session.get(
            f"{forge.url}/app", headers={"Authorization": f"Bearer {token}"}
        ) as r:
            assert r.status == 200
        # the code is good once: a second exchange is refused by GitHub
        async with session.post(f"{forge.url}/app-manifests/{code}/conversions") as r:
            assert r.status == 404


async def _forward(to_port: int) -> asyncio.Server:
    """What ``ssh -L`` does: a port on "the laptop" carrying each connection to setup's."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def carry(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", to_port)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    return await asyncio.start_server(carry, "127.0.0.1", 0)


async def test_setup_completes_on_localhost_before_the_public_url_works(
    tmp_path: Path, forge: LocalForge
) -> None:
    """The maintainer's laptop: the public URL does not answer yet (nothing listens at
    pw.example.org), setup is reached through a forwarded port on localhost, and GitHub
    sends the browser back there, while webhooks are to go to the public URL."""
    port = free_port()
    setup = _setup(tmp_path, api=forge.url, base=PUBLIC)
    task = await _serve(setup, port)
    forward = await _forward(port)
    laptop = f"http://localhost:{forward.sockets[0].getsockname()[1]}"
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
        status, text = await _get(f"{laptop}/setup?token={setup.token}", browser)
        assert status == 200, text
        manifest = _manifest(text)
        back, hook = urlsplit(str(manifest["redirect_url"])), manifest["hook_attributes"]
        assert f"{back.scheme}://{back.netloc}" == laptop
        assert back.hostname == "localhost"
        assert hook == {"url": f"{PUBLIC}/webhooks/github", "active": True}
        assert urlsplit(hook["url"]).hostname == "pw.example.org"  # type: ignore[index]
        assert f"back to <code>{laptop}/setup/callback</code>" in text  # the page says so

        code = forge.submit_manifest(manifest)  # confirmed on GitHub, which redirects:
        status, text = await _get(
            f"{manifest['redirect_url']}?code={code}&state={setup.token}", browser
        )
        assert status == 200, text
        assert "is set up" in text
    created = await asyncio.wait_for(task, 10)
    forward.close()
    await forward.wait_closed()
    assert created["id"] == forge.state.app_id
    assert forge.state.created_from_manifest == [manifest]
    env = (tmp_path / ".env").read_text()
    assert f"PATCHWARDEN_APP_ID={forge.state.app_id}" in env
    assert f"PATCHWARDEN_PUBLIC_URL={PUBLIC}\n" in env  # audit links: the public URL


async def test_a_used_or_expired_link_says_to_run_setup_again(tmp_path: Path) -> None:
    port = free_port()
    setup = _setup(tmp_path, api="http://127.0.0.1:9", base=f"http://localhost:{port}")
    task = await _serve(setup, port)
    base = f"http://127.0.0.1:{port}"
    again = "run <code>patchwarden setup</code> again"
    try:
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as first:
            assert (await _get(f"{base}/setup?token={setup.token}", first))[0] == 200
            # A reload in the browser that opened it still works.
            assert (await _get(f"{base}/setup?token={setup.token}", first))[0] == 200

        # The same link in another browser: used, and said so (never a second browser).
        status, text = await _get(f"{base}/setup?token={setup.token}")
        assert status == 410
        assert "This link was used already" in text
        assert again in text
        # A link an earlier run printed (each run has its own token).
        status, text = await _get(f"{base}/setup?token=from-an-earlier-run")
        assert status == 403
        assert "This link has expired" in text
        assert again in text
        status, text = await _get(f"{base}/setup")
        assert status == 403
        assert "printed on its terminal" in text
        assert again in text
        assert setup.created is None  # none of it got anywhere
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.mark.slow  # a `patchwarden` process
def test_setup_refuses_once_configured(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("PATCHWARDEN_APP_ID=12\n")
    done = run("setup", "--port", str(free_port()), cwd=tmp_path, env=clean_env(), timeout=30)
    assert done.returncode == 2
    assert "configured already" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow  # a `patchwarden` process
def test_setup_checks_where_the_key_goes_before_github_creates_the_app(tmp_path: Path) -> None:
    (tmp_path / "app.pem").write_text("an old key\n")
    done = run("setup", "--port", str(free_port()), cwd=tmp_path, env=clean_env(), timeout=30)
    assert done.returncode == 2
    assert "app.pem exists" in done.stderr
    assert "Open http" not in done.stdout  # nothing was served


@pytest.mark.slow  # a `patchwarden` process
def test_the_public_url_is_written_for_the_check_runs_audit_links(tmp_path: Path) -> None:
    app = {"id": 9, "slug": "pw", "pem": "k", "webhook_secret": "w", "html_url": "h"}
    write_credentials(
        app,
        env_file=tmp_path / ".env",
        key_file=tmp_path / "app.pem",
        public_url="https://pw.example.org",
    )
    env = (tmp_path / ".env").read_text()
    assert "PATCHWARDEN_PUBLIC_URL=https://pw.example.org\n" in env
