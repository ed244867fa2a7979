"""``patchwarden doctor``: what is installed, what is enforced, what is missing."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app import __version__
from app.cli.doctor_check import Check
from app.cli.doctor_model import llm_check, llm_endpoint_checks
from app.config import Settings
from app.errors import NoDatabase, PatchwardenError
from app.sessions.pkgconfig import host_package_config, passenv_patterns
from app.store import Pause, mask_url, store_for_url
from app.words import plural

WIDTH = 100  # the text report's lines; --json keeps each detail on one line


def find_tool(name: str) -> str | None:
    """A tool in this interpreter's environment first (the venv), then on PATH."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    return shutil.which(name)


def tool_version(name: str, argv: list[str]) -> Check:
    path = find_tool(name)
    if path is None:
        return Check(name, "warn", "not installed (needed by coding sessions)")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    with tempfile.TemporaryDirectory(prefix="pw-doctor-") as home:
        env["HOME"] = home  # semgrep writes settings to HOME; keep it throwaway
        try:
            out = subprocess.run(  # noqa: S603 - fixed argv, no shell
                [path, *argv], capture_output=True, text=True, timeout=60, env=env, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Check(name, "warn", f"{path}: does not run ({exc})")
    text = (out.stdout or out.stderr).strip().splitlines()
    return Check(name, "ok" if out.returncode == 0 else "warn", text[0] if text else path)


def _store_check(settings: Settings) -> Check:
    async def probe() -> str:
        store = store_for_url(settings.database_url, create=False)
        await store.open()
        try:
            await store.ping()
            version = await store.schema_version()
            return f"{store.url} reachable, schema version {version}"
        finally:
            await store.close()

    try:
        return Check("database", "ok", asyncio.run(probe()))
    except NoDatabase as exc:  # normal before the first `serve`
        return Check("database", "warn", str(exc))
    except PatchwardenError as exc:
        return Check("database", "fail", str(exc))
    except Exception as exc:
        return Check("database", "fail", f"{mask_url(settings.database_url)}: {exc}")


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _pause_check(settings: Settings) -> Check:
    """The global pause (PATCHWARDEN_PAUSED) and the repositories paused in the store."""

    async def paused_repos() -> list[Pause]:
        store = store_for_url(settings.database_url, create=False)
        await store.open()
        try:
            return await store.repos.pauses()
        finally:
            await store.close()

    parts = ["paused globally (PATCHWARDEN_PAUSED)"] if settings.paused else []
    try:
        pauses = asyncio.run(paused_repos())
    except NoDatabase:
        pauses = []  # no database yet: nothing can have been paused
    except Exception as exc:  # the database check says what is wrong with the store
        parts.append(f"repository pauses unknown: {exc}")
        return Check("pauses", "warn", "; ".join(parts))
    for p in pauses:
        parts.append(
            f"{p.repo} paused by {p.actor} since {_when(p.at)}"
            + (f" ({p.reason})" if p.reason else "")
        )
    if not parts:
        return Check("pauses", "ok", "none: no global pause, no repository paused")
    return Check("pauses", "warn", "; ".join(parts))


def userns_restriction(sysctl: Path = Path("/proc/sys")) -> str | None:
    """Why this kernel refuses bubblewrap an unprivileged user namespace, if it says so:
    Ubuntu 24.04's AppArmor restriction (GitHub's ubuntu-latest runners have it), Debian's
    older switch, or no namespaces allowed at all."""

    def read(name: str) -> str | None:
        try:
            return (sysctl / name).read_text().strip()
        except OSError:
            return None

    if read("kernel/apparmor_restrict_unprivileged_userns") == "1":
        return (
            "AppArmor restricts unprivileged user namespaces (Ubuntu 24.04 and newer): "
            "add an AppArmor profile for bwrap, or on a throwaway VM `sudo sysctl -w "
            "kernel.apparmor_restrict_unprivileged_userns=0` (docs/install.md)"
        )
    if read("kernel/unprivileged_userns_clone") == "0":
        return (
            "unprivileged user namespaces are off: "
            "sudo sysctl -w kernel.unprivileged_userns_clone=1"
        )
    if read("user/max_user_namespaces") == "0":
        return "user namespaces are disabled (user.max_user_namespaces = 0)"
    return None


def _sandbox_check(settings: Settings) -> Check:
    """Which sandbox sessions use, what it enforces, and whether it starts here."""
    from app.sessions.factory import sandbox_from

    try:
        sandbox = sandbox_from(settings)
        detail = sandbox.check()
    except PatchwardenError as exc:
        return Check("sandbox", "fail", str(exc))
    if not sandbox.isolated:
        return Check("sandbox", "warn", detail)
    if sandbox.backend == "docker":
        return Check("sandbox", "ok", f"{detail} (the engine is probed by the first session)")
    try:
        done = asyncio.run(sandbox.run(["/bin/true"], cwd="/", timeout=30))
    except PatchwardenError as exc:
        return Check("sandbox", "fail", str(exc))
    if not done.ok:
        why = (done.stderr or done.stdout).strip().splitlines()
        hint = userns_restriction() if sandbox.backend == "bwrap" else None
        return Check(
            "sandbox",
            "fail",
            f"{detail}, but it does not start: {why[-1] if why else ''}"
            + (f"; {hint}" if hint else ""),
        )
    return Check("sandbox", "ok", f"{detail}; starts in {done.duration_seconds * 1000:.0f} ms")


def _setup_packages_check(settings: Settings) -> Check:
    """What the setup phase gets of this host's package configuration (masked)."""
    try:
        packages = host_package_config(
            os.environ,
            passenv=passenv_patterns(settings.setup_passenv),
            state_dir=settings.cache_dir / "pkgconfig",
            isolated=settings.sandbox != "unsafe-local",
        )
    except OSError as exc:
        return Check("setup packages", "warn", f"cannot prepare it: {exc}")
    if not packages.sources:
        return Check(
            "setup packages",
            "ok",
            "no package configuration on this host: setup reaches the default indexes",
        )
    given = packages.shown()
    shown = ", ".join(f"{k}={v}" for k, v in given.items())
    return Check(
        "setup packages",
        "ok",
        f"the setup phase gets {plural(len(given), 'setting')} and "
        f"{plural(len(packages.mounts), 'read-only mount')} from "
        f"{plural(len(packages.sources), 'source')}; "
        f"{plural(len(packages.secrets), 'credential')} masked "
        f"(PATCHWARDEN_SETUP_PASSENV chooses). Sources: {', '.join(packages.sources)}. "
        f"Settings: {shown}.",
    )


TOOLS = [
    ("git", ["--version"]),
    ("bwrap", ["--version"]),
    ("ruff", ["--version"]),
    ("bandit", ["--version"]),
    ("semgrep", ["--version", "--metrics=off", "--disable-version-check"]),
]


def collect(settings: Settings) -> list[Check]:
    from concurrent.futures import ThreadPoolExecutor

    # The tools answer side by side (semgrep alone takes ~2 s to start) while the rest
    # is checked.
    with ThreadPoolExecutor(max_workers=len(TOOLS)) as pool:
        versions = [pool.submit(tool_version, name, argv) for name, argv in TOOLS]
        later = [
            _sandbox_check(settings),
            _setup_packages_check(settings),
            llm_check(settings),
            *llm_endpoint_checks(settings),
        ]
        tools = [v.result() for v in versions]
    checks = [
        Check("patchwarden", "ok", __version__),
        Check(
            "python",
            "ok" if sys.version_info >= (3, 11) else "fail",
            f"{platform.python_version()} at {sys.executable}",
        ),
        *tools,
    ]
    if checks[2].status != "ok":
        checks[2] = Check("git", "fail", checks[2].detail)
    checks += later
    checks.append(_store_check(settings))
    checks.append(_pause_check(settings))
    checks.append(
        Check(
            "webhook signatures",
            "ok" if settings.webhook_secret else "fail",
            "enforced (PATCHWARDEN_WEBHOOK_SECRET set)"
            if settings.webhook_secret
            else "PATCHWARDEN_WEBHOOK_SECRET is not set: `serve` will refuse to start",
        )
    )
    missing = settings.missing_for_github()
    if missing:
        checks.append(Check("GitHub App identity", "fail", "missing " + ", ".join(missing)))
    else:
        checks.extend(_identity_checks(settings))
    checks.append(
        Check(
            "alerts endpoint",
            "ok" if settings.alerts_secret else "warn",
            "enabled" if settings.alerts_secret else "disabled (set PATCHWARDEN_ALERTS_SECRET)",
        )
    )
    checks.append(
        Check(
            "Sentry webhooks",
            "ok" if settings.sentry_client_secret else "warn",
            "enabled (signed with the integration's Client Secret)"
            if settings.sentry_client_secret
            else "disabled (set PATCHWARDEN_SENTRY_CLIENT_SECRET: the integration's Client Secret)",
        )
    )
    checks.append(_audit_links_check(settings))
    return checks


def _audit_links_check(settings: Settings) -> Check:
    if settings.public_url is None:
        return Check(
            "audit links", "warn", "off: set PATCHWARDEN_PUBLIC_URL so check runs link to them"
        )
    if settings.webhook_secret is None:
        return Check("audit links", "warn", "off: they are signed with the webhook secret")
    return Check(
        "audit links",
        "ok",
        f"check runs link to {settings.public_url}/audit/<owner>/<repo>/pull/<n>",
    )


def _identity_checks(settings: Settings) -> list[Check]:
    """The key parses, GitHub knows the App by it (``GET /app``), and where it is
    installed (``GET /app/installations``): each wrong step says what to change."""
    from app.github.auth import load_private_key

    try:
        pem = settings.app_private_key()
        assert pem is not None
        load_private_key(pem)
    except PatchwardenError as exc:
        return [Check("GitHub App identity", "fail", str(exc))]
    try:
        app, installations = asyncio.run(_ask_github(settings, pem))
    except Exception as exc:  # each failure is a line of the report, not a traceback
        return [Check("GitHub App identity", "fail", _github_failure(settings, exc))]
    identity = Check(
        "GitHub App identity",
        "ok",
        f"App {app.get('slug')} (id {app.get('id')}) at {settings.github_api_url}, key accepted",
    )
    if not installations:
        html = app.get("html_url") or "the App's page on GitHub"
        return [
            identity,
            Check(
                "installations",
                "warn",
                f"installed nowhere yet: install it on repositories at {html}/installations/new",
            ),
        ]
    where = ", ".join(
        f"{(i.get('account') or {}).get('login', '?')} (id {i.get('id')})" for i in installations
    )
    return [
        identity,
        Check("installations", "ok", f"{len(installations)}: {where}"),
        _grants_check(installations),
    ]


def _grants_check(installations: list[Any]) -> Check:
    """Each installation has the permissions and events the manifest asks for: an App
    that asks for more (Dependabot and code scanning alerts) gets them where an
    owner accepted the request, and its events start nothing elsewhere."""
    from app.github.manifest import lacking

    short = []
    for i in installations:
        missing = lacking(i.get("permissions") or {}, i.get("events") or [])
        if missing:
            who = f"{(i.get('account') or {}).get('login', '?')} (id {i.get('id')})"
            page = i.get("html_url") or "the installation's settings page"
            short.append(f"{who} lacks {', '.join(missing)}: accept them at {page}")
    if short:
        return Check("installation grants", "warn", "; ".join(short))
    return Check("installation grants", "ok", "every installation has what the manifest asks")


async def _ask_github(settings: Settings, pem: str) -> tuple[dict[str, Any], list[Any]]:
    import aiohttp

    from app.github import GitHubApp, RetryPolicy

    timeout = aiohttp.ClientTimeout(total=20)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        assert settings.app_id is not None
        github = GitHubApp(
            app_id=settings.app_id,
            private_key=pem,
            api_url=settings.github_api_url,
            session=session,
            policy=RetryPolicy(max_retries=0),
        )
        client = github.as_app()
        app = await client.getitem("/app")
        installations = [i async for i in client.getiter("/app/installations")]
    return dict(app), installations


def _github_failure(settings: Settings, exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    where = settings.github_api_url
    if status == 401:
        return (
            f"{where} refused the App's key (401): PATCHWARDEN_APP_ID {settings.app_id} and "
            "the key must be the same App's; generate a new key on the App's settings page"
        )
    if status == 404:
        return f"{where} knows no App {settings.app_id} (404): check PATCHWARDEN_APP_ID"
    if status is not None:
        return f"{where} answered {status} for GET /app: {exc}"
    reason = str(exc) or type(exc).__name__
    return f"cannot reach {where} ({reason}): check PATCHWARDEN_GITHUB_API_URL and the network"


def run_doctor(settings: Settings, *, as_json: bool = False) -> int:
    checks = collect(settings)
    if as_json:
        print(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}
        for c in checks:
            head = f"[{marks[c.status]}] {c.name:<20} "
            lines = textwrap.wrap(
                c.detail, WIDTH - len(head), break_long_words=False, break_on_hyphens=False
            )
            print(head + ("\n" + " " * len(head)).join(lines))
    return 1 if any(c.status == "fail" for c in checks) else 0
