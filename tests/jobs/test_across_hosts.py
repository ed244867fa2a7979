"""One change across hosts: its fix on one `patchwarden worker` process, its update and
merge on another with a cache of its own, on one database (a SQLite file; the tests'
PostgreSQL server). Nothing of a job's state lives on a worker's disk."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from app.localforge import LocalForge
from tests.conftest import INSTALLATION, REPO, Harness
from tests.jobs.test_lifecycle import _risk_line, fix_this, sample
from tests.queue.test_worker_process import PATCHWARDEN, _signal_and_wait, _worker_env

pytestmark = pytest.mark.slow


async def test_a_change_s_update_and_merge_run_on_another_worker_process(
    tmp_path: Path,
    forge: LocalForge,
    app_keys: tuple[str, str],
    store_url: str,
    make_pw: Callable[..., Awaitable[Harness]],
) -> None:
    """Two `patchwarden worker` processes, each with a cache of its own, on one database
    (a SQLite file; the tests' PostgreSQL server): the fix runs on the first. With the
    first gone, the second carries the change onto a moved base (the update job) and
    merges it (the merge job): the carried change keeps its fixer and its score, and the
    merged pull request gets its final body. Neither host keeps a result on its disk."""
    await forge.push(REPO, sample(autonomy="review"), author="alice")
    forge.add_user(REPO, "alice", "maintain")
    forge.add_user(REPO, "carol", "write")
    forge.require_check(
        REPO, "tests", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    )
    intake = await make_pw(workers=0, database_url=store_url)  # the server: no workers
    await forge.install(INSTALLATION, by="alice")
    env = _worker_env(tmp_path, forge, app_keys, store_url)
    hosts = {name: tmp_path / f"host-{name}" for name in ("a", "b")}
    with (tmp_path / "workers.log").open("ab") as log:

        def worker(host: str) -> subprocess.Popen[bytes]:
            cache = {"PATCHWARDEN_CACHE_DIR": str(hosts[host])}
            return subprocess.Popen(
                [PATCHWARDEN, "worker"], env=env | cache, stdout=log, stderr=subprocess.STDOUT
            )

        first = worker("a")
        try:
            await fix_this(intake)
            await intake.settle(within=180, every_job=True)
        finally:
            assert await _signal_and_wait(first, signal.SIGTERM) == 0
        (pull,) = forge.pulls(REPO)
        risk_before = _risk_line(forge.issue(REPO, pull.number).body)
        second = worker("b")
        try:
            await forge.push(REPO, {"CHANGES.md": "a person's change\n"}, author="carol")
            await forge.approve(REPO, pull.number, user="carol")
            await intake.settle(within=180, every_job=True)
            body = forge.issue(REPO, pull.number).body or ""
            assert "lint" in body.lower()
            assert _risk_line(body) == risk_before  # scored as the lint fix it is
            await forge.approve(REPO, pull.number, user="carol")
            await intake.settle(within=180, every_job=True)
        finally:
            assert await _signal_and_wait(second, signal.SIGTERM) == 0
    assert pull.merged
    body = forge.issue(REPO, pull.number).body or ""
    assert pull.merge_commit_sha[:12] in body  # the final body, from the store
    jobs = await intake.store.queue.list_jobs(kind=None)
    assert {j.kind for j in jobs} >= {"fix", "update", "merge"}
    for host in hosts.values():
        assert host.is_dir()  # each worker had its cache there
        assert not (host / "results").exists()
