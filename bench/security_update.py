"""From a Dependabot alert's delivery to the open pull request, on real projects.

Run: ``.venv/bin/python bench/security_update.py [--only NAME] [--cached 2] [--json]``.

For each project of tests/realworld/bumps.py (pinned PyPI sdists whose own manifests
allow a version a real advisory names) the whole product runs in this process, as the
demo runs it: LocalForge (the GitHub double) with the project as a repository,
``patchwarden serve``'s app on a local port with one session worker, SQLite. GitHub
raises the alert (a signed ``dependabot_alert`` delivery); the clock runs from the
moment the forge sends it until the pull request exists. Once **cold** (the setup phase
builds the base's and the patch's environments, with network) and ``--cached`` more
times (a person dismisses the alert, which closes the pull request; GitHub raises a new
one; both environments come from the cache).

From the session's stored steps:

- ``setup``: the setup commands, base and patch (0 when cached);
- ``tests``: the project's own test command, base + patch (the base's runs while the
  fixer works; with a bump that takes no time, both are on the critical path);
- ``linters``: ruff, bandit and semgrep on the changed files (concurrently with the
  patch's tests);
- ``to PR``: the delivery to the open pull request;
- ``overhead``: ``to PR`` minus setup minus both test runs: what Patchwarden adds
  (intake, queue, workspace, fixer, commit, verification beyond the tests, scoring,
  push and the pull request's API calls).

Target: overhead ≤ 10 s with cached environments (the median of the cached runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.config import load_settings  # noqa: E402
from app.localforge import LocalForge  # noqa: E402
from app.localforge.keys import generate_app_key  # noqa: E402
from app.server import RUNTIME, create_app  # noqa: E402
from app.sessions.result import SessionResult  # noqa: E402
from tests.realworld.bumps import BUMPS, Bump  # noqa: E402
from tests.realworld.sdists import as_repository  # noqa: E402

TARGET_SECONDS = 10.0
INSTALLATION = 7


def phases(result: SessionResult, to_pr: float) -> dict[str, float]:
    steps = result.steps
    setup = sum(s.duration_seconds for s in steps if s.phase == "setup" and not s.cached)
    tests = sum(s.duration_seconds for s in steps if s.name == "tests")
    linters = [s.duration_seconds for s in steps if s.name in ("ruff", "bandit", "semgrep")]
    return {
        "to PR": round(to_pr, 2),
        "session": round(result.usage.wall_seconds, 2),
        "setup": round(setup, 2),
        "tests": round(tests, 2),
        "linters": round(max(linters, default=0.0), 2),
        "overhead": round(to_pr - setup - tests, 2),
    }


async def one(bump: Bump, work: Path, cached: int) -> dict[str, Any]:
    source = work / bump.project.name
    as_repository(bump.project, source)
    private, public = generate_app_key()
    secret = secrets.token_hex(16)
    forge = LocalForge(app_id=4242, app_public_key=public, webhook_secret=secret)
    await forge.start()
    repo = f"bench/{bump.project.name.replace('_', '-')}"
    forge.add_repo(repo, installation_id=INSTALLATION, source=source)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    settings = load_settings(
        app_id=4242,
        private_key=private,
        webhook_secret=secret,
        github_api_url=forge.url,
        database_url=f"sqlite:///{work / f'{bump.project.name}.db'}",
        cache_dir=work / "cache",
        poll_seconds=0.05,
        dashboard_seconds=3600,
        workers=1,
    )
    app = create_app(settings)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    forge.hooks.webhook_url = f"http://127.0.0.1:{sock.getsockname()[1]}/webhooks/github"
    store = app[RUNTIME].store
    runs: list[dict[str, Any]] = []
    try:
        await forge.install(INSTALLATION, by=repo.split("/")[0])
        for n in range(1 + cached):
            seen = {p.number for p in forge.pulls(repo)}
            started = time.monotonic()
            alert = await forge.security.raise_dependabot_alert(
                repo,
                package=bump.package,
                vulnerable_range=bump.vulnerable_range,
                first_patched=bump.fixed,
                manifest=bump.manifest,
                ghsa=bump.advisory,
                cve=bump.cve,
                severity="medium",
            )
            pull = await _opened(forge, repo, seen, within=900)
            to_pr = time.monotonic() - started
            jobs = [j for j in await store.queue.list_jobs(kind="security_alert")]
            result = _result(settings.cache_dir, max(j.id for j in jobs))
            row = {"run": "cold" if n == 0 else "cached", "pr": pull, **phases(result, to_pr)}
            runs.append(row)
            await forge.security.alert_event(repo, alert, "dismissed", by=repo.split("/")[0])
            await forge.settle(within=30)
    finally:
        await runner.cleanup()
        await forge.stop()
    return {"project": bump.project.id, "runs": runs}


async def _opened(forge: LocalForge, repo: str, seen: set[int], *, within: float) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        new = [p.number for p in forge.pulls(repo) if p.number not in seen]
        if new:
            return new[0]
        await asyncio.sleep(0.05)
    raise TimeoutError(f"no pull request in {within:g} s")


def _result(cache: Path, job_id: int) -> SessionResult:
    path = cache / "results" / f"{job_id}.json"
    for _ in range(100):  # written before the pull request opens; read it whole
        if path.is_file():
            return SessionResult.load(json.loads(path.read_text()))
        time.sleep(0.05)
    raise FileNotFoundError(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="one project (its PyPI name)")
    parser.add_argument("--cached", type=int, default=2, help="runs with cached environments")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    chosen = [b for b in BUMPS if args.only in (None, b.project.name)]
    if not chosen:
        parser.error(f"no project {args.only!r}: {', '.join(b.project.name for b in BUMPS)}")
    report = []
    with tempfile.TemporaryDirectory(prefix="pw-bench-bump-") as tmp:
        for bump in chosen:
            work = Path(tmp) / bump.project.name
            work.mkdir()
            report.append(asyncio.run(one(bump, work, args.cached)))
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    keys = ("to PR", "session", "setup", "tests", "linters", "overhead")
    print("| project | run | " + " | ".join(f"{k} s" for k in keys) + " |")
    print("| --- | --- | " + " | ".join("---:" for _ in keys) + " |")
    overheads = []
    for entry in report:
        for row in entry["runs"]:
            print(
                f"| {entry['project']} | {row['run']} | "
                + " | ".join(f"{row[k]:.1f}" for k in keys)
                + " |"
            )
            if row["run"] == "cached":
                overheads.append(row["overhead"])
    if overheads:
        median = statistics.median(overheads)
        met = "met" if median <= TARGET_SECONDS else "MISSED"
        print(f"\ncached overhead, median {median:.1f} s: target ≤ {TARGET_SECONDS:g} s {met}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
