"""Durable jobs across real processes: kill -9 mid-job, graceful drain on SIGTERM, on
SQLite and PostgreSQL; and several workers on PostgreSQL killed while they work."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.localforge import LocalForge
from app.localforge.state import Comment
from app.store import AuditQuery, Delivery, Job, JobState, NewJob, Store, store_for_url
from tests.conftest import APP_ID, INSTALLATION, REPO, SECRET
from tests.postgres_server import PostgresServer

# Real `patchwarden serve` and `worker` processes, started, killed and drained.
# Workers killed mid-job and leases that expire: alone, so a lease is never late because
# another test had the cores.
pytestmark = [pytest.mark.slow, pytest.mark.serial]

PATCHWARDEN = str(Path(sys.executable).parent / "patchwarden")


async def _wait(
    predicate: Callable[[], bool | Awaitable[bool]], *, what: str, within: float = 15.0
) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = predicate()
        if value if isinstance(value, bool) else await value:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


@dataclass
class Scenario:
    """One stored delivery whose routing job real worker processes run."""

    store: Store
    forge: LocalForge
    comment: Comment
    start_worker: Callable[..., subprocess.Popen[bytes]]

    async def mid_job(self, hold_seconds: float, **env: str) -> subprocess.Popen[bytes]:
        """Start a worker and return once it is stuck in the job's permission lookup."""
        self.forge.delay("/permission", hold_seconds, times=1)
        worker = self.start_worker(**env)
        await _wait(
            lambda: any("/permission" in a for a in self.forge.state.arrivals),
            what="a worker mid-job",
        )
        return worker

    async def job(self) -> Job:
        [job] = await self.store.queue.list_jobs(kind="delivery")
        return job

    async def finished(self) -> bool:
        return (await self.job()).state == JobState.SUCCEEDED


async def _signal_and_wait(proc: subprocess.Popen[bytes], sig: int, within: float = 20) -> int:
    """Signal the process; wait for it without blocking the loop that runs the double."""
    proc.send_signal(sig)
    return await asyncio.to_thread(proc.wait, within)


def _worker_env(
    tmp_path: Path, forge: LocalForge, app_keys: tuple[str, str], url: str
) -> dict[str, str]:
    key = tmp_path / "app.pem"
    key.write_text(app_keys[0])
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PATCHWARDEN_APP_ID": str(APP_ID),
        "PATCHWARDEN_PRIVATE_KEY_PATH": str(key),
        "PATCHWARDEN_WEBHOOK_SECRET": SECRET,
        "PATCHWARDEN_GITHUB_API_URL": forge.url,
        "PATCHWARDEN_DATABASE_URL": url,
        "PATCHWARDEN_LEASE_SECONDS": "1",
        "PATCHWARDEN_POLL_SECONDS": "0.1",
        "PATCHWARDEN_RETRY_BASE_SECONDS": "0.2",  # a crash's backoff (10 s by default)
        "PATCHWARDEN_DASHBOARD_SECONDS": "0.2",  # its window (30 s by default), as in-process
        "PATCHWARDEN_LOG_LEVEL": "INFO",
    }


def _delivery(n: int, payload: dict[str, Any]) -> tuple[Delivery, list[NewJob]]:
    """Exactly what the server stores before answering 202."""
    delivery = Delivery(
        f"d-{n}",
        "github",
        "issue_comment",
        "created",
        INSTALLATION,
        REPO,
        "alice",
        payload,
        time.time(),
    )
    job = NewJob(
        kind="delivery", queue="events", key=f"delivery:d-{n}", payload={"delivery_id": f"d-{n}"}
    )
    return delivery, [job]


@pytest.fixture
async def scenario(
    tmp_path: Path, forge: LocalForge, app_keys: tuple[str, str], store_url: str
) -> AsyncIterator[Scenario]:
    env = _worker_env(tmp_path, forge, app_keys, store_url)
    store = store_for_url(env["PATCHWARDEN_DATABASE_URL"])
    await store.open()
    forge.add_user(REPO, "alice", "write")
    issue = forge.open_issue(REPO, "Crash", author="alice")
    comment = await forge.post_comment(
        REPO, issue.number, "@patchwarden fix this", author="alice", send=False
    )
    delivery, jobs = _delivery(1, forge.comment_event(REPO, issue.number, comment))
    await store.journal.record_delivery(delivery, jobs=jobs)
    procs: list[subprocess.Popen[bytes]] = []
    log = (tmp_path / "workers.log").open("ab")

    def start_worker(**extra: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [PATCHWARDEN, "worker"], env=env | extra, stdout=log, stderr=subprocess.STDOUT
        )
        procs.append(proc)
        return proc

    yield Scenario(store, forge, comment, start_worker)
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    log.close()
    await store.close()


async def test_killed_worker_leaves_the_job_to_be_retried_once(scenario: Scenario) -> None:
    first = await scenario.mid_job(30)  # the first worker hangs in GitHub's answer
    assert await _signal_and_wait(first, signal.SIGKILL) == -signal.SIGKILL
    job = await scenario.job()
    assert job.state == JobState.RUNNING  # not lost: still leased to the dead worker
    assert job.attempts == 1

    second = scenario.start_worker()
    await _wait(scenario.finished, what="the retried job to finish")
    job = await scenario.job()
    assert job.state == JobState.SUCCEEDED
    assert job.attempts == 2
    assert len(await scenario.store.queue.list_jobs(kind="fix")) == 1
    assert scenario.forge.comment_reactions(scenario.comment.id) == ["eyes"]
    actions = [
        e.action for e in await scenario.store.journal.query_audit(AuditQuery(job_id=job.id))
    ]
    assert "job.retried_after_lost_lease" in actions
    assert actions.count("job.succeeded") == 1
    assert await _signal_and_wait(second, signal.SIGTERM) == 0


async def test_sigterm_drains_the_running_job(scenario: Scenario) -> None:
    worker = await scenario.mid_job(1.0, PATCHWARDEN_DRAIN_SECONDS="10")
    assert await _signal_and_wait(worker, signal.SIGTERM) == 0
    job = await scenario.job()
    assert job.state == JobState.SUCCEEDED
    assert job.attempts == 1


async def test_sigterm_without_drain_time_gives_the_job_back(scenario: Scenario) -> None:
    worker = await scenario.mid_job(5.0, PATCHWARDEN_DRAIN_SECONDS="0")
    assert await _signal_and_wait(worker, signal.SIGTERM) == 0
    job = await scenario.job()
    assert job.state == JobState.QUEUED  # released, not failed, not lost
    assert job.attempts == 0
    assert await scenario.store.queue.list_jobs(kind="fix") == []

    again = scenario.start_worker()
    await _wait(scenario.finished, what="the released job to run")
    assert len(await scenario.store.queue.list_jobs(kind="fix")) == 1
    assert scenario.forge.comment_reactions(scenario.comment.id) == ["eyes"]
    assert await _signal_and_wait(again, signal.SIGTERM) == 0


async def test_workers_killed_again_and_again_do_not_fail_the_job(scenario: Scenario) -> None:
    """A crash loop (a worker killed mid-job three times: the old limit that failed
    every job) is not the job's fault: it backs off, and the next worker finishes it."""
    for n in range(3):
        worker = await scenario.mid_job(30)
        assert await _signal_and_wait(worker, signal.SIGKILL) == -signal.SIGKILL
        scenario.forge.state.arrivals.clear()
        if n < 2:
            # the next worker finds the expired lease and requeues the job with a backoff
            continue
    last = scenario.start_worker()
    await _wait(scenario.finished, what="the job to finish after three crashes", within=30)
    job = await scenario.job()
    assert job.state == JobState.SUCCEEDED
    assert job.crashes == 3
    assert len(await scenario.store.queue.list_jobs(kind="fix")) == 1
    actions = [
        e.action for e in await scenario.store.journal.query_audit(AuditQuery(job_id=job.id))
    ]
    assert actions.count("job.retried_after_lost_lease") == 3
    assert await _signal_and_wait(last, signal.SIGTERM) == 0


async def test_several_workers_on_postgres_killed_while_they_work(
    tmp_path: Path, forge: LocalForge, app_keys: tuple[str, str], postgres: PostgresServer
) -> None:
    """Three worker processes share one PostgreSQL database and 24 deliveries; workers
    are killed (SIGKILL) mid-job and replaced. Nothing is lost (every delivery routed,
    every fix job queued) and nothing is done twice (one fix job per request, one 👀 per
    comment, one success per job)."""
    url = postgres.create_database()
    env = _worker_env(tmp_path, forge, app_keys, url) | {
        "PATCHWARDEN_WORKERS": "0",  # routing only: the fix jobs wait in the store
        "PATCHWARDEN_EVENT_WORKERS": "3",
        "PATCHWARDEN_RETRY_BASE_SECONDS": "0.2",
    }
    store = store_for_url(url)
    await store.open()
    forge.add_user(REPO, "alice", "write")
    comments = []
    for n in range(24):
        issue = forge.open_issue(REPO, f"Crash {n}", author="alice")
        comment = await forge.post_comment(
            REPO, issue.number, "@patchwarden fix this", author="alice", send=False
        )
        comments.append(comment)
        delivery, jobs = _delivery(n, forge.comment_event(REPO, issue.number, comment))
        await store.journal.record_delivery(delivery, jobs=jobs)
    forge.delay("/permission", 0.5)  # every routing job is mid-flight for a while
    log = (tmp_path / "workers.log").open("ab")

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [PATCHWARDEN, "worker"], env=env, stdout=log, stderr=subprocess.STDOUT
        )

    workers = [start() for _ in range(3)]
    try:
        for victim in range(4):  # kill one mid-job, start another, four times
            seen = 3 * (victim + 1)
            await _wait(
                lambda seen=seen: sum("/permission" in a for a in forge.state.arrivals) > seen,
                what="workers busy",
                within=30,
            )
            assert await _signal_and_wait(workers[victim % 3], signal.SIGKILL) == -signal.SIGKILL
            workers[victim % 3] = start()

        async def all_routed() -> bool:
            jobs = await store.queue.list_jobs(kind="delivery")
            return all(j.state == JobState.SUCCEEDED for j in jobs)

        await _wait(all_routed, what="every delivery routed", within=90)
        routed = await store.queue.list_jobs(kind="delivery")
        assert len(routed) == 24
        assert await store.queue.list_jobs(state="failed") == []
        fixes = await store.queue.list_jobs(kind="fix")
        assert len(fixes) == 24
        assert len({j.payload["issue_number"] for j in fixes}) == 24
        for comment in comments:
            assert forge.comment_reactions(comment.id) == ["eyes"]
        audit = await store.journal.query_audit(AuditQuery(limit=100_000))
        succeeded = [e.job_id for e in audit if e.action == "job.succeeded"]
        assert sorted(succeeded) == sorted({j.id for j in routed})  # each exactly once
        assert any(e.action == "job.retried_after_lost_lease" for e in audit)  # kills hit jobs
    finally:
        for proc in workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in workers:
            await asyncio.to_thread(proc.wait, 20)
        log.close()
        await store.close()
