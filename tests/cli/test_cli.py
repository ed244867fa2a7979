"""The ``patchwarden`` command as a user runs it, plus settings and log redaction."""

from __future__ import annotations

import argparse
import asyncio
import http.client
import io
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from app.cli.arguments import parse_since
from app.config import load_settings
from app.errors import ConfigError
from app.fixers.llm.scripted import ScriptedModel
from app.github.manifest import PERMISSION_NAMES, PERMISSIONS, SUBSCRIBED_EVENTS
from app.localforge import LocalForge
from app.localforge.keys import generate_app_key
from app.logs import RedactSecrets
from app.store import Delivery, NewJob, store_for_url
from tests.conftest import INSTALLATION

BIN = Path(sys.executable).parent / "patchwarden"
WEBHOOK_SECRET = "whsec-4b1d-9c2e-cli-test"
REPO_A = "octo-org/widgets"
REPO_B = "octo-org/gadgets"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHWARDEN_")}
    env.update(extra)
    return env


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args],
        cwd=cwd,
        env=env if env is not None else clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# -- manifest ----------------------------------------------------------------


@pytest.mark.slow  # a `patchwarden` process
def test_manifest_asks_for_what_the_app_needs_and_nothing_dangerous(tmp_path: Path) -> None:
    done = run("manifest", "--url", "https://pw.example.org", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = json.loads(done.stdout)
    assert manifest["hook_attributes"]["url"] == "https://pw.example.org/webhooks/github"
    perms = manifest["default_permissions"]
    for name in ("contents", "pull_requests", "issues", "checks"):
        assert perms[name] == "write", name
    for name in ("statuses", "metadata"):
        assert perms[name] == "read", name
    assert "workflows" not in perms
    assert "administration" not in perms
    assert set(manifest["default_events"]) >= {
        "issue_comment",
        "issues",
        "check_run",
        "workflow_run",
        "pull_request",
        "pull_request_review",
        "check_suite",
        "push",
        "status",
    }


@pytest.mark.slow  # a `patchwarden` process
def test_manifest_trailing_slash_makes_no_double_slash(tmp_path: Path) -> None:
    done = run("manifest", "--url", "https://pw.example.org/", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hook_attributes"]["url"] == (
        "https://pw.example.org/webhooks/github"
    )


@pytest.mark.parametrize("url", ["pw.example.org", "ftp://pw.example.org", "https://"])
@pytest.mark.slow  # a `patchwarden` process
def test_manifest_with_bad_url_exits_2(tmp_path: Path, url: str) -> None:
    done = run("manifest", "--url", url, cwd=tmp_path)
    assert done.returncode == 2
    assert "--url" in done.stderr
    assert "https://pw.example.org" in done.stderr  # shows what a good one looks like
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


# -- serve -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def healthz(port: int) -> int | None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status
    except OSError:
        return None
    finally:
        conn.close()


def serve_and_stop(tmp_path: Path, env: dict[str, str], *args: str) -> str:
    """Start ``serve``, wait for /healthz, SIGTERM it; return its log (stderr)."""
    port = free_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            [str(BIN), "serve", "--port", str(port), *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
        )
        try:
            deadline = time.monotonic() + 20
            while healthz(port) != 200:
                assert proc.poll() is None, f"serve exited early:\n{log_path.read_text()}"
                assert time.monotonic() < deadline, f"no healthy /healthz:\n{log_path.read_text()}"
                time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    log = log_path.read_text()
    assert code == 0, log
    return log


@pytest.fixture
def key_pem() -> str:
    return generate_app_key()[0]


@pytest.mark.slow  # a real `serve` process
def test_serve_refuses_to_start_without_webhook_secret(tmp_path: Path, key_pem: str) -> None:
    key_file = tmp_path / "app.pem"
    key_file.write_text(key_pem)
    env = clean_env(
        PATCHWARDEN_APP_ID="4242",
        PATCHWARDEN_PRIVATE_KEY_PATH=str(key_file),
        PATCHWARDEN_DATABASE_URL=f"sqlite:///{tmp_path / 'pw.db'}",
        PATCHWARDEN_PORT=str(free_port()),
    )
    done = run("serve", cwd=tmp_path, env=env, timeout=30)
    assert done.returncode != 0
    assert "PATCHWARDEN_WEBHOOK_SECRET" in done.stderr
    assert "--insecure-no-signature" in done.stderr
    assert "Traceback" not in done.stderr


def configured_env(tmp_path: Path, key_pem: str) -> dict[str, str]:
    """The environment of a configured App: id, key file, webhook secret, a database."""
    key_file = tmp_path / "app.pem"
    key_file.write_text(key_pem)
    return clean_env(
        PATCHWARDEN_APP_ID="4242",
        PATCHWARDEN_PRIVATE_KEY_PATH=str(key_file),
        PATCHWARDEN_WEBHOOK_SECRET=WEBHOOK_SECRET,
        PATCHWARDEN_DATABASE_URL=f"sqlite:///{tmp_path / 'pw.db'}",
    )


@pytest.mark.slow  # a real `serve` process
def test_serve_without_anything_set_names_every_missing_setting_at_once(tmp_path: Path) -> None:
    """Issue 35: serve revealed missing settings one at a time, after six banner lines
    (`… as App None`). Now every one is said at once, before anything starts."""
    done = run("serve", "--port", str(free_port()), cwd=tmp_path, timeout=30)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "patchwarden: serve cannot start:"
    assert [ln.split(":")[0] for ln in lines[1:4]] == [
        "  - PATCHWARDEN_WEBHOOK_SECRET is not set",
        "  - PATCHWARDEN_APP_ID is not set",
        "  - PATCHWARDEN_PRIVATE_KEY_PATH (or PATCHWARDEN_PRIVATE_KEY) is not set",
    ]
    assert lines[-1].startswith("`patchwarden setup` creates the App")
    assert "as App None" not in done.stderr
    assert "Traceback" not in done.stderr
    # A key file that is not there is said with the rest.
    env = clean_env(PATCHWARDEN_PRIVATE_KEY_PATH=str(tmp_path / "gone.pem"))
    done = run("serve", "--port", str(free_port()), cwd=tmp_path, env=env, timeout=30)
    assert f"  - cannot read PATCHWARDEN_PRIVATE_KEY_PATH={tmp_path / 'gone.pem'}" in done.stderr
    assert "PATCHWARDEN_APP_ID is not set" in done.stderr


@pytest.mark.slow
def test_serve_enforces_signatures_and_logs_no_secret(tmp_path: Path, key_pem: str) -> None:
    env = configured_env(tmp_path, key_pem)
    log = serve_and_stop(tmp_path, env)
    assert "webhook signatures: enforced" in log
    assert "NOT CHECKED" not in log
    assert WEBHOOK_SECRET not in log
    assert "PRIVATE KEY" not in log
    for line in key_pem.splitlines():
        assert line not in log


@pytest.mark.slow
def test_serve_insecure_says_not_checked(tmp_path: Path, key_pem: str) -> None:
    env = clean_env(
        PATCHWARDEN_APP_ID="4242",
        # a PEM in a variable, with literal \n escapes as .env files often carry it
        PATCHWARDEN_PRIVATE_KEY=key_pem.replace("\n", "\\n"),
        PATCHWARDEN_DATABASE_URL=f"sqlite:///{tmp_path / 'pw.db'}",
    )
    log = serve_and_stop(tmp_path, env, "--insecure-no-signature")
    assert "webhook signatures: NOT CHECKED" in log
    assert "enforced" not in log
    for line in key_pem.splitlines():
        assert line not in log


def _one_line_failure(done: subprocess.CompletedProcess[str], starts: str) -> str:
    """A start-up failure: exit 2, its last line says why, no traceback, never 'listening'."""
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"patchwarden: {starts}"), done.stderr
    assert "Traceback" not in done.stderr
    assert "listening" not in done.stderr
    return last


@pytest.mark.slow  # real `serve` processes
def test_serve_start_up_failures_are_one_line_each(tmp_path: Path, key_pem: str) -> None:
    env = configured_env(tmp_path, key_pem)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = run("serve", "--port", port, cwd=tmp_path, env=env, timeout=30)
    assert "the port is in use" in _one_line_failure(done, f"cannot listen on 127.0.0.1:{port}")

    done = run("serve", "--host", "no-such-host.invalid", cwd=tmp_path, env=env, timeout=30)
    assert "PATCHWARDEN_HOST" in _one_line_failure(done, "cannot listen on no-such-host.invalid")

    unwritable = env | {"PATCHWARDEN_CACHE_DIR": "/proc/patchwarden-cache"}
    done = run("serve", "--port", str(free_port()), cwd=tmp_path, env=unwritable, timeout=30)
    assert "PATCHWARDEN_CACHE_DIR" in _one_line_failure(done, "the cache folder")

    password = "pw" + "-never-shown"
    no_db = env | {"PATCHWARDEN_DATABASE_URL": f"postgresql://u:{password}@127.0.0.1:1/pw"}
    done = run("serve", "--port", str(free_port()), cwd=tmp_path, env=no_db, timeout=30)
    _one_line_failure(done, "cannot connect to postgresql://u:***@127.0.0.1:1/pw")
    assert password not in done.stderr


@pytest.mark.slow
def test_serve_says_listening_only_once_it_listens(tmp_path: Path, key_pem: str) -> None:
    log = serve_and_stop(tmp_path, configured_env(tmp_path, key_pem))
    lines = log.splitlines()
    listening = [i for i, line in enumerate(lines) if "listening on http://127.0.0.1:" in line]
    started = [i for i, line in enumerate(lines) if "workers started" in line]
    assert len(listening) == 1
    assert started
    assert started[0] < listening[0]  # the key, the cache and the database were checked first


# -- audit -------------------------------------------------------------------


@pytest.fixture
def audit_db(tmp_path: Path) -> tuple[str, int]:
    """A store with an old delivery for REPO_A and fresh rows for REPO_A, REPO_B and a job."""
    url = f"sqlite:///{tmp_path / 'audit.db'}"

    async def seed() -> int:
        store = store_for_url(url)
        await store.open()
        try:
            await store.journal.record_delivery(
                Delivery(
                    id="old-delivery",
                    source="github",
                    event="issues",
                    action="opened",
                    installation_id=7,
                    repo=REPO_A,
                    sender="alice",
                    payload={},
                    received_at=time.time() - 3 * 86400,
                )
            )
            job, _ = await store.queue.enqueue(NewJob(kind="fix", key="fix:a:1", repo=REPO_A))
            await store.journal.audit("session.note", repo=REPO_A, job_id=job.id, reason="fresh a")
            await store.journal.audit("session.note", repo=REPO_B, reason="fresh b")
            return job.id
        finally:
            await store.close()

    return url, asyncio.run(seed())


def audit_rows(tmp_path: Path, url: str, *args: str) -> list[dict[str, Any]]:
    done = run("audit", "--json", *args, cwd=tmp_path, env=clean_env(PATCHWARDEN_DATABASE_URL=url))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.slow  # a `patchwarden` process
def test_audit_filters_by_repo(tmp_path: Path, audit_db: tuple[str, int]) -> None:
    url, _ = audit_db
    rows = audit_rows(tmp_path, url, "--repo", REPO_A)
    assert {r["repo"] for r in rows} == {REPO_A}
    assert {r["action"] for r in rows} == {"delivery.received", "job.enqueued", "session.note"}
    b_rows = audit_rows(tmp_path, url, "--repo", REPO_B)
    assert [(r["action"], r["reason"]) for r in b_rows] == [("session.note", "fresh b")]


@pytest.mark.slow  # a `patchwarden` process
def test_audit_text_has_a_header_row(tmp_path: Path, audit_db: tuple[str, int]) -> None:
    url, _ = audit_db
    done = run("audit", "--repo", REPO_A, cwd=tmp_path, env=clean_env(PATCHWARDEN_DATABASE_URL=url))
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["at", "(UTC)", "action", "repo", "job", "actor", "why"]
    assert rows
    assert all(REPO_A in row for row in rows)
    # the columns line up under their names
    assert rows[-1].index("session.note") == header.index("action")
    assert rows[-1].index(REPO_A) == header.index("repo")


@pytest.mark.slow  # a `patchwarden` process
def test_audit_filters_by_job(tmp_path: Path, audit_db: tuple[str, int]) -> None:
    url, job_id = audit_db
    rows = audit_rows(tmp_path, url, "--job", str(job_id))
    assert [r["action"] for r in rows] == ["job.enqueued", "session.note"]
    assert {r["job"] for r in rows} == {job_id}
    assert audit_rows(tmp_path, url, "--job", str(job_id + 100)) == []


@pytest.mark.slow  # a `patchwarden` process
def test_audit_filters_by_since(tmp_path: Path, audit_db: tuple[str, int]) -> None:
    url, _ = audit_db
    everything = audit_rows(tmp_path, url)
    assert "delivery.received" in {r["action"] for r in everything}
    recent = audit_rows(tmp_path, url, "--since", "1h")
    assert "delivery.received" not in {r["action"] for r in recent}
    assert len(recent) == len(everything) - 1
    assert [r["action"] for r in audit_rows(tmp_path, url, "--since", "7d", "--repo", REPO_A)] == [
        "delivery.received",
        "job.enqueued",
        "session.note",
    ]
    for row in everything:
        assert row["at"].endswith("Z")


@pytest.mark.slow  # a `patchwarden` process
def test_audit_text_output(tmp_path: Path, audit_db: tuple[str, int]) -> None:
    url, _ = audit_db
    env = clean_env(PATCHWARDEN_DATABASE_URL=url)
    done = run("audit", "--repo", REPO_B, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "session.note" in done.stdout
    assert "fresh b" in done.stdout
    assert REPO_A not in done.stdout
    none = run("audit", "--repo", "nobody/nothing", cwd=tmp_path, env=env)
    assert none.returncode == 0
    assert none.stdout == ""
    assert "no audit entries match" in none.stderr


@pytest.mark.slow  # a `patchwarden` process
def test_audit_rejects_a_garbage_since(tmp_path: Path, audit_db: tuple[str, int]) -> None:
    url, _ = audit_db
    done = run(
        "audit",
        "--since",
        "yesterday-ish-garbage",
        cwd=tmp_path,
        env=clean_env(PATCHWARDEN_DATABASE_URL=url),
    )
    assert done.returncode == 2
    assert "--since" in done.stderr
    assert "yesterday-ish-garbage" in done.stderr
    assert "30m" in done.stderr
    assert "Traceback" not in done.stderr


NOW = 1_800_000_000.0
TEN_UTC = datetime(2026, 11, 22, 10, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30m", NOW - 30 * 60),
        ("2h", NOW - 2 * 3600),
        ("7d", NOW - 7 * 86400),
        ("45s", NOW - 45),
        (" 2h ", NOW - 2 * 3600),
        ("2026-11-22T10:00:00Z", TEN_UTC),
        ("2026-11-22T10:00", TEN_UTC),
        ("2026-11-22T12:00:00+02:00", TEN_UTC),
        ("2026-11-22", datetime(2026, 11, 22, tzinfo=UTC).timestamp()),
    ],
)
def test_parse_since(text: str, expected: float) -> None:
    assert parse_since(text, now=NOW) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["yesterday", "2 hours", "-1h", "1w", ""])
def test_parse_since_rejects(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="30m, 2h, 7d"):
        parse_since(text, now=NOW)


# -- doctor ------------------------------------------------------------------

DOCTOR_ENTRIES = {
    "python",
    "git",
    "bwrap",
    "ruff",
    "bandit",
    "semgrep",
    "database",
    "webhook signatures",
    "llm fixer",
}


def doctor(tmp_path: Path, env: dict[str, str]) -> tuple[int, dict[str, dict[str, str]]]:
    done = run("doctor", "--json", cwd=tmp_path, env=env, timeout=120)
    checks = json.loads(done.stdout)
    by_name = {c["name"]: c for c in checks}
    assert set(by_name) >= DOCTOR_ENTRIES, by_name.keys()
    for check in checks:
        assert check["status"] in {"ok", "warn", "fail"}
        assert check["detail"]
    failed = any(c["status"] == "fail" for c in checks)
    assert done.returncode == (1 if failed else 0), done.stderr
    return done.returncode, by_name


@pytest.mark.slow
def test_doctor_fails_without_webhook_secret(tmp_path: Path) -> None:
    code, checks = doctor(tmp_path, clean_env())
    assert code == 1
    assert checks["webhook signatures"]["status"] == "fail"
    assert "PATCHWARDEN_WEBHOOK_SECRET" in checks["webhook signatures"]["detail"]


@pytest.mark.slow
async def test_doctor_with_configuration(
    tmp_path: Path, forge: LocalForge, app_keys: tuple[str, str]
) -> None:
    """doctor asks GitHub (the forge): the App by its key, and where it is installed."""
    env = configured_env(tmp_path, app_keys[0]) | {"PATCHWARDEN_GITHUB_API_URL": forge.url}
    await _create_store(env["PATCHWARDEN_DATABASE_URL"])  # as `serve` would have
    _, checks = await asyncio.to_thread(doctor, tmp_path, env)
    assert checks["webhook signatures"]["status"] == "ok"
    assert checks["database"]["status"] == "ok"
    identity = checks["GitHub App identity"]
    assert identity["status"] == "ok"
    assert f"App patchwarden (id {forge.state.app_id})" in identity["detail"]
    assert checks["installations"] == {
        "name": "installations",
        "status": "ok",
        "detail": "1: octo-org (id 7)",
    }
    assert checks["installation grants"]["status"] == "ok"
    assert WEBHOOK_SECRET not in json.dumps(checks)
    assert checks["audit links"]["status"] == "warn"
    assert "PATCHWARDEN_PUBLIC_URL" in checks["audit links"]["detail"]

    # The owner installed the App before it asked for GitHub's security alerts, and has
    # not accepted the new request: doctor names what is missing and where to accept it.
    older = {k: v for k, v in PERMISSIONS.items() if k not in PERMISSION_NAMES}
    events = [e for e in SUBSCRIBED_EVENTS if not e.endswith("_alert")]
    forge.state.grants[INSTALLATION] = (older, events)
    _, checks = await asyncio.to_thread(doctor, tmp_path, env)
    grants = checks["installation grants"]
    assert grants["status"] == "warn"
    assert grants["detail"].startswith(
        "octo-org (id 7) lacks vulnerability_alerts: read (Dependabot alerts), "
        "security_events: read (Code scanning alerts), the code_scanning_alert event, "
        "the dependabot_alert event: accept them at "
    )
    assert grants["detail"].endswith("/organizations/octo-org/settings/installations/7")
    del forge.state.grants[INSTALLATION]

    forge.repos.clear()  # uninstalled everywhere
    env["PATCHWARDEN_PUBLIC_URL"] = "https://pw.example.org/"
    _, checks = await asyncio.to_thread(doctor, tmp_path, env)
    assert checks["installations"]["status"] == "warn"
    assert checks["audit links"] == {
        "name": "audit links",
        "status": "ok",
        "detail": "check runs link to https://pw.example.org/audit/<owner>/<repo>/pull/<n>",
    }
    assert "/installations/new" in checks["installations"]["detail"]


@pytest.mark.slow
async def test_doctor_says_what_is_wrong_with_the_app_identity(
    tmp_path: Path, forge: LocalForge, key_pem: str
) -> None:
    other_app = configured_env(tmp_path, key_pem) | {"PATCHWARDEN_GITHUB_API_URL": forge.url}
    _, checks = await asyncio.to_thread(doctor, tmp_path, other_app)
    assert checks["GitHub App identity"]["status"] == "fail"
    assert "refused the App's key (401)" in checks["GitHub App identity"]["detail"]

    (tmp_path / "app.pem").write_text("not a key\n")
    _, checks = await asyncio.to_thread(doctor, tmp_path, other_app)
    assert "not a readable PEM private key" in checks["GitHub App identity"]["detail"]

    nowhere = configured_env(tmp_path, key_pem) | {
        "PATCHWARDEN_GITHUB_API_URL": "http://127.0.0.1:9"
    }
    _, checks = await asyncio.to_thread(doctor, tmp_path, nowhere)
    assert "cannot reach http://127.0.0.1:9" in checks["GitHub App identity"]["detail"]


@pytest.mark.slow
def test_doctor_shows_what_setup_gets_of_the_hosts_package_configuration(
    tmp_path: Path,
) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://deploy:sekrit-pass@pypi.corp.example/simple\n")
    env = clean_env(PIP_CONFIG_FILE=str(conf), HTTPS_PROXY="http://proxy.corp.example:3128")
    env["PATCHWARDEN_CACHE_DIR"] = str(tmp_path / "cache")
    _, checks = doctor(tmp_path, env)
    detail = checks["setup packages"]["detail"]
    assert str(conf) in detail
    assert "HTTPS_PROXY=http://proxy.corp.example:3128" in detail
    assert "PIP_CONFIG_FILE=/pkgconfig/etc/pip.conf" in detail
    assert "sekrit-pass" not in json.dumps(checks)
    text = run("doctor", cwd=tmp_path, env=env, timeout=120).stdout
    # wrapped at 100 columns, not cut: only one word too long for a line (a path) is longer
    assert [ln for ln in text.splitlines() if len(ln) > 100 and len(ln.split()) > 1] == []
    assert "HTTPS_PROXY=http://proxy.corp.example:3128" in text
    assert "sekrit-pass" not in text
    env["PATCHWARDEN_SETUP_PASSENV"] = ""  # the maintainer passes nothing
    _, checks = doctor(tmp_path, env)
    assert "no package configuration" in checks["setup packages"]["detail"]


# -- settings ----------------------------------------------------------------


def test_secrets_do_not_show_in_repr_or_str(key_pem: str) -> None:
    settings = load_settings(
        webhook_secret=WEBHOOK_SECRET, alerts_secret="alerts-secret-xyz", private_key=key_pem
    )
    for shown in (repr(settings), str(settings)):
        assert WEBHOOK_SECRET not in shown
        assert "alerts-secret-xyz" not in shown
        assert "PRIVATE KEY" not in shown
        assert "**********" in shown


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PATCHWARDEN_WORKERS", "-1"),
        ("PATCHWARDEN_WORKERS", "many"),
        ("PATCHWARDEN_ALERT_ROUTES", "not json"),
        ("PATCHWARDEN_ALERT_ROUTES", '{"HighErrorRate": "not-a-repo"}'),
        ("PATCHWARDEN_LOG_LEVEL", "LOUD"),
        ("PATCHWARDEN_PORT", "70000"),
        ("PATCHWARDEN_LLM_FALLBACKS", "not json"),
        ("PATCHWARDEN_LLM_FALLBACKS", '[{"base_url": "http://x/v1"}]'),
        ("PATCHWARDEN_LLM_FALLBACKS", '[{"model": "m", "azure_api_version": "2024-10-21"}]'),
        ("PATCHWARDEN_LLM_PRICES", '{"gpt-4.1": {"input": -1, "output": 8}}'),
        ("PATCHWARDEN_LLM_TOOL_MODE", "telepathy"),
        ("PATCHWARDEN_LLM_MAX_STEPS", "0"),
    ],
)
def test_invalid_variable_names_itself(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=name):
        load_settings()


def test_llm_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHWARDEN_LLM_MODEL", "qwen2.5-coder:7b")
    monkeypatch.setenv("PATCHWARDEN_LLM_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("PATCHWARDEN_LLM_API_KEY", "sk-primary-key-0123456789")
    monkeypatch.setenv(
        "PATCHWARDEN_LLM_FALLBACKS",
        '[{"model": "gpt-4.1", "api_key": "sk-fallback-key-0123456789"}]',
    )
    monkeypatch.setenv("PATCHWARDEN_LLM_PRICES", '{"gpt-4.1": {"input": 2, "output": 8}}')
    monkeypatch.setenv("PATCHWARDEN_LLM_MAX_COST_USD", "none")
    settings = load_settings()
    assert [p.label for p in settings.llm_providers()] == [
        "qwen2.5-coder:7b@localhost:11434",
        "gpt-4.1@api.openai.com",
    ]
    assert settings.llm_max_cost_usd is None
    assert settings.llm_daily_budget_usd == 20.0
    assert {"sk-primary-key-0123456789", "sk-fallback-key-0123456789"} <= set(
        settings.secret_values()
    )
    assert "sk-fallback-key" not in repr(settings)


@pytest.mark.slow
def test_doctor_says_which_model_and_which_caps(tmp_path: Path, key_pem: str) -> None:
    env = configured_env(tmp_path, key_pem)
    _, checks = doctor(tmp_path, env)
    assert checks["llm fixer"]["status"] == "warn"
    assert "lint fixer only" in checks["llm fixer"]["detail"]
    env["PATCHWARDEN_LLM_MODEL"] = "local-model"
    env["PATCHWARDEN_LLM_BASE_URL"] = "http://127.0.0.1:9/v1"
    env["PATCHWARDEN_LLM_API_KEY"] = "sk-doctor-key-0123456789"
    _, checks = doctor(tmp_path, env)
    llm = checks["llm fixer"]
    assert llm["status"] == "warn"
    assert llm["detail"].startswith("local-model@127.0.0.1:9; tools auto; per job 40 turns")
    assert "no price for local-model" in llm["detail"]
    endpoint = checks["model endpoint local-model@127.0.0.1:9"]  # nothing listens there
    assert endpoint["status"] == "warn"
    assert "does not answer at http://127.0.0.1:9/v1/models" in endpoint["detail"]
    env["PATCHWARDEN_LLM_PRICES"] = '{"local-model": {"input": 0, "output": 0}}'
    _, checks = doctor(tmp_path, env)
    assert checks["llm fixer"]["status"] == "ok"
    assert "sk-doctor-key" not in json.dumps(checks)


@pytest.mark.slow  # a `patchwarden` process
async def test_doctor_says_whether_the_model_endpoint_answers(tmp_path: Path, key_pem: str) -> None:
    key = "sk-doctor-key-0123456789"
    env = configured_env(tmp_path, key_pem) | {
        "PATCHWARDEN_LLM_MODEL": "local-model",
        "PATCHWARDEN_LLM_API_KEY": key,
    }
    async with ScriptedModel(api_key=key, served=["local-model"]) as model:
        env["PATCHWARDEN_LLM_BASE_URL"] = model.base_url
        _, checks = await asyncio.to_thread(doctor, tmp_path, env)
        (found,) = [c for n, c in checks.items() if n.startswith("model endpoint")]
        assert found["status"] == "ok"
        assert found["detail"] == f"answers at {model.base_url}/models"
        env["PATCHWARDEN_LLM_MODEL"] = "other-model"
        _, checks = await asyncio.to_thread(doctor, tmp_path, env)
        (found,) = [c for n, c in checks.items() if n.startswith("model endpoint")]
        assert found["detail"] == "answers, but serves local-model, not other-model"
    assert key not in json.dumps(checks)


def test_alert_routes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHWARDEN_ALERT_ROUTES", '{"HighErrorRate": "octo/api"}')
    assert load_settings().alert_routes == {"HighErrorRate": "octo/api"}


def test_private_key_with_literal_newline_escapes(
    monkeypatch: pytest.MonkeyPatch, key_pem: str
) -> None:
    monkeypatch.setenv("PATCHWARDEN_PRIVATE_KEY", key_pem.replace("\n", "\\n"))
    pem = load_settings().app_private_key()
    assert pem == key_pem
    serialization.load_pem_private_key(pem.encode(), password=None)


def test_missing_private_key_file_names_the_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere" / "app.pem"
    monkeypatch.setenv("PATCHWARDEN_PRIVATE_KEY_PATH", str(missing))
    settings = load_settings()
    with pytest.raises(ConfigError, match="PATCHWARDEN_PRIVATE_KEY_PATH") as info:
        settings.app_private_key()
    assert str(missing) in str(info.value)


# -- log redaction -----------------------------------------------------------


def redacting_logger(name: str, secrets: list[str]) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    handler.addFilter(RedactSecrets(secrets))
    logger = logging.getLogger(name)
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger, out


def test_redact_secrets_masks_message_and_arguments() -> None:
    logger, out = redacting_logger("pw.test.redact", [WEBHOOK_SECRET, "alerts-secret-xyz"])
    logger.info("configured with %s and %r", WEBHOOK_SECRET, "alerts-secret-xyz")
    logger.info(f"inline {WEBHOOK_SECRET}!")
    logger.info("nothing secret here: %d jobs", 3)
    text = out.getvalue()
    assert WEBHOOK_SECRET not in text
    assert "alerts-secret-xyz" not in text
    assert "configured with *** and '***'" in text
    assert "inline ***!" in text
    assert "nothing secret here: 3 jobs" in text


def test_redact_secrets_masks_exception_text() -> None:
    logger, out = redacting_logger("pw.test.redact_exc", [WEBHOOK_SECRET])
    try:
        raise RuntimeError(f"request failed with token {WEBHOOK_SECRET}")
    except RuntimeError:
        logger.exception("delivery failed")
    text = out.getvalue()
    assert "delivery failed" in text
    assert "RuntimeError" in text
    assert WEBHOOK_SECRET not in text


async def _create_store(url: str) -> None:
    store = store_for_url(url)
    await store.open()
    await store.close()


@pytest.mark.slow  # a `patchwarden` process
def test_audit_on_a_missing_database_says_so_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / ".." / "not-there.db"
    done = run(
        "audit", cwd=tmp_path, env=clean_env(PATCHWARDEN_DATABASE_URL=f"sqlite:///{missing}")
    )
    assert done.returncode == 2
    assert "no database at" in done.stderr
    assert "PATCHWARDEN_DATABASE_URL" in done.stderr
    assert not (tmp_path / "not-there.db").exists()


@pytest.mark.slow
def test_doctor_warns_about_a_database_not_created_yet(tmp_path: Path, key_pem: str) -> None:
    env = configured_env(tmp_path, key_pem)
    _, checks = doctor(tmp_path, env)
    assert checks["database"]["status"] == "warn"
    assert "serve" in checks["database"]["detail"]
    assert not (tmp_path / "pw.db").exists()


@pytest.mark.slow  # a `patchwarden` process
def test_the_command_starts_without_loading_what_only_some_verbs_need() -> None:
    """Building the parser (``--version``, ``audit``, ``pause`` …) loads neither the
    openai SDK, the sandbox, aiohttp's server nor the GitHub double: each verb loads
    what it needs when it runs (``--version`` took 1.3 s of CPU when it did)."""
    probe = (
        "import sys\n"
        "from app.cli.main import build_parser\n"
        "build_parser()\n"
        "heavy = ('openai', 'app.fixers.llm', 'app.sessions.session', 'aiohttp.web',"
        " 'app.localforge.forge_server', 'app.jobs')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


async def test_audit_failed_keeps_to_limit_names_the_thread_and_ignores_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`audit --failed` reads each job as its kind (the issue or pull request where the
    person waits), matches the repository as GitHub does (case-insensitive), and shows
    the latest ``--limit``."""
    from app.cli.audit import _audit_failed
    from app.config import load_settings

    url = f"sqlite:///{tmp_path / 'pw.db'}"
    store = store_for_url(url)
    await store.open()
    try:
        payloads = [
            ("fix", {"repo": "Octo/Widgets", "issue_number": 3}),
            ("merge", {"repo": "Octo/Widgets", "pr": 9, "reason": "checks"}),
            ("fix", {"repo": "Octo/Widgets", "issue_number": "garbled"}),
        ]
        for n, (kind, payload) in enumerate(payloads):
            new = NewJob(kind=kind, key=f"k{n}", repo="Octo/Widgets", payload=payload)
            job, _ = await store.queue.enqueue(new)
            claimed = await store.queue.claim(
                queue=new.queue, owner="w", lease_seconds=60, kinds=[kind]
            )
            assert claimed is not None
            assert claimed.id == job.id
            assert await store.queue.fail(job.id, owner="w", error=f"boom {n}")
    finally:
        await store.close()
    settings = load_settings(database_url=url)
    capsys.readouterr()
    assert await _audit_failed(settings, repo="octo/widgets", since=None, as_json=True) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["kind"], r["issue"], r["error"]) for r in rows] == [
        ("fix", 3, "boom 0"),
        ("merge", 9, "boom 1"),
        ("fix", None, "boom 2"),  # an unreadable payload is still listed
    ]
    assert await _audit_failed(settings, repo=None, since=None, as_json=True, limit=2) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["error"] for r in rows] == ["boom 1", "boom 2"]


@pytest.mark.parametrize(
    ("files", "says"),
    [
        ({"kernel/apparmor_restrict_unprivileged_userns": "1"}, "AppArmor restricts"),
        ({"kernel/apparmor_restrict_unprivileged_userns": "0"}, None),
        ({"kernel/unprivileged_userns_clone": "0"}, "unprivileged_userns_clone=1"),
        ({"user/max_user_namespaces": "0"}, "max_user_namespaces = 0"),
        ({"user/max_user_namespaces": "63000"}, None),
        ({}, None),
    ],
)
def test_doctor_names_why_the_kernel_refuses_bwrap(
    tmp_path: Path, files: dict[str, str], says: str | None
) -> None:
    from app.cli.doctor import userns_restriction

    for name, value in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(value + "\n")
    found = userns_restriction(tmp_path)
    if says is None:
        assert found is None
    else:
        assert found is not None
        assert says in found


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("PATCHWARDEN_DATABSE_URL", "did you mean PATCHWARDEN_DATABASE_URL?"),
        ("patchwarden_workrs", "did you mean PATCHWARDEN_WORKERS?"),
        ("PATCHWARDEN_WEBHOOK_SECRT", "did you mean PATCHWARDEN_WEBHOOK_SECRET?"),
        ("PATCHWARDEN_FOO", "docs/configuration.md lists them"),
        ("PATCHWARDEN_DATABASE_URL", None),  # a setting
        ("patchwarden_database_url", None),  # read case-insensitively, as pydantic does
        ("PATCHWARDEN_TEST_CACHE", None),  # the test suite's own
        ("OTHER_DATABSE_URL", None),
    ],
)
def test_a_misspelt_setting_is_named_with_the_closest_one(name: str, says: str | None) -> None:
    from app.config import unknown_variables

    found = unknown_variables({name: "x"})
    if says is None:
        assert found == []
    else:
        [warning] = found
        assert warning.startswith(f"{name} is not a Patchwarden setting and is ignored")
        assert warning.endswith(says)


@pytest.mark.slow  # a `patchwarden` process
def test_the_cli_warns_about_a_misspelt_setting(tmp_path: Path) -> None:
    env = clean_env(PATCHWARDEN_DATABSE_URL="sqlite:///x.db")
    done = run("audit", cwd=tmp_path, env=env)
    assert "did you mean PATCHWARDEN_DATABASE_URL?" in done.stderr
