"""First install like a Probot app: `patchwarden setup` serves the manifest form, and
GitHub's redirect back is exchanged (against LocalForge, contract-checked) for the App's
id, key and webhook secret, written with mode 0600; the settings it writes work."""

from __future__ import annotations

import asyncio
import html
import json
import re
import stat
import time
from pathlib import Path

import aiohttp
import jwt
import pytest

from app.cli.setup import Setup, serve_setup, write_credentials
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


async def test_the_app_is_created_from_its_manifest(tmp_path: Path, forge: LocalForge) -> None:
    port = free_port()
    settings = Settings(github_api_url=forge.url, port=port)  # nothing configured yet
    setup = Setup(
        settings=settings,
        base=f"http://localhost:{port}",
        name="Patchwarden",
        org="octo-org",
        public=False,
        env_file=tmp_path / ".env",
        key_file=tmp_path / "app.pem",
    )
    (tmp_path / ".env").write_text("PATCHWARDEN_LOG_LEVEL=INFO\n")  # kept, not replaced
    task = asyncio.create_task(serve_setup(setup, "127.0.0.1", port))
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):  # until it listens
        try:
            await _get(f"{base}/setup")
            break
        except aiohttp.ClientConnectorError:
            await asyncio.sleep(0.05)
    status, _ = await _get(f"{base}/setup")
    assert status == 403  # no token: not the person who started it

    browser = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
    status, text = await _get(f"{base}/setup?token={setup.token}", browser)
    assert status == 200
    # The link alone, in another browser (seen in a proxy's log), is no longer enough.
    assert (await _get(f"{base}/setup?token={setup.token}"))[0] == 403
    assert (await _get(f"{base}/setup?token={setup.token}", browser))[0] == 200
    action = html.unescape(re.search(r'<form action="([^"]+)"', text)[1])  # type: ignore[index]
    assert action == f"{forge.url}/organizations/octo-org/settings/apps/new?state={setup.token}"
    manifest = json.loads(html.unescape(re.search(r'name="manifest" value="([^"]+)"', text)[1]))  # type: ignore[index]
    assert manifest["redirect_url"] == f"http://localhost:{port}/setup/callback"

    code = forge.submit_manifest(manifest)  # the person confirms on GitHub
    status, _ = await _get(f"{base}/setup/callback?code={code}&state=forged", browser)
    assert status == 403
    status, _ = await _get(f"{base}/setup/callback?code={code}&state={setup.token}")
    assert status == 403  # the right state from another browser
    status, text = await _get(f"{base}/setup/callback?code={code}&state={setup.token}", browser)
    await browser.close()
    assert status == 200, text
    assert "is set up" in text
    created = await asyncio.wait_for(task, 10)
    assert created["id"] == forge.app_id
    assert forge.created_from_manifest == [manifest]

    for written in (tmp_path / ".env", tmp_path / "app.pem"):
        assert stat.S_IMODE(written.stat().st_mode) == 0o600
    env = (tmp_path / ".env").read_text()
    assert env.startswith("PATCHWARDEN_LOG_LEVEL=INFO\n")
    assert f"PATCHWARDEN_APP_ID={forge.app_id}" in env
    assert f"PATCHWARDEN_WEBHOOK_SECRET={forge.webhook_secret}" in env

    # What it wrote is enough to act as the App: read from .env, the key signs a JWT
    # that GitHub (the forge, holding the new public key) accepts.
    written = load_settings(_env_file=str(tmp_path / ".env"))
    assert written.app_id == forge.app_id
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
