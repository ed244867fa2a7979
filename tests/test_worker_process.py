"""Durable jobs across real processes: kill -9 mid-job, graceful drain on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.localforge import LocalForge
from app.store import AuditQuery, Delivery, JobState, NewJob, Store, store_for_url
from tests.conftest import APP_ID, INSTALLATION, REPO, SECRET

PATCHWARDEN = str(Path(sys.executable).parent / "patchwarden")


async def _wait(predicate, within: float = 15.0, what: str = "condition"):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = await predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


@pytest.fixture
async def setup(tmp_path: Path, forge: LocalForge, app_keys: tuple[str, str]):  # type: ignore[no-untyped-def]
    key = tmp_path / "app.pem"
    key.write_text(app_keys[0])
    db = tmp_path / "pw.db"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PATCHWARDEN_APP_ID": str(APP_ID),
        "PATCHWARDEN_PRIVATE_KEY_PATH": str(key),
        "PATCHWARDEN_WEBHOOK_SECRET": SECRET,
        "PATCHWARDEN_GITHUB_API_URL": forge.url,
        "PATCHWARDEN_DATABASE_URL": f"sqlite:///{db}",
        "PATCHWARDEN_LEASE_SECONDS": "1",
        "PATCHWARDEN_POLL_SECONDS": "0.1",
        "PATCHWARDEN_LOG_LEVEL": "INFO",
    }
    store = store_for_url(env["PATCHWARDEN_DATABASE_URL"])
    await store.open()
    forge.add_user(REPO, "alice", "write")
    issue = forge.open_issue(REPO, "Crash", author="alice")
    comment = await forge.post_comment(
        REPO, issue.number, "@patchwarden fix this", author="alice", send=False
    )
    payload = forge.comment_event(REPO, issue.number, comment)
    # Exactly what the server stores before answering 202.
    await store.record_delivery(
        Delivery(
            "d-1",
            "github",
            "issue_comment",
            "created",
            INSTALLATION,
            REPO,
            "alice",
            payload,
            time.time(),
        ),
        jobs=[
            NewJob(
                kind="delivery", queue="events", key="delivery:d-1", payload={"delivery_id": "d-1"}
            )
        ],
    )
    procs: list[subprocess.Popen[bytes]] = []
    log = (tmp_path / "workers.log").open("ab")

    def start_worker(**extra: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [PATCHWARDEN, "worker"], env=env | extra, stdout=log, stderr=subprocess.STDOUT
        )
        procs.append(proc)
        return proc

    yield store, comment, start_worker
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    log.close()
    await store.close()


async def _job_state(store: Store) -> JobState:
    [job] = await store.list_jobs(kind="delivery")
    return job.state


async def test_killed_worker_leaves_the_job_to_be_retried_once(setup, forge: LocalForge) -> None:  # type: ignore[no-untyped-def]
    store, comment, start_worker = setup
    forge.delay("/permission", 30, times=1)  # the first worker hangs mid-job
    first = start_worker()
    await _wait(
        lambda: _async(any("/permission" in a for a in forge.arrivals)),
        what="the first worker to reach GitHub",
    )
    first.send_signal(signal.SIGKILL)
    assert await _exited(first, 10) == -signal.SIGKILL
    [job] = await store.list_jobs(kind="delivery")
    assert job.state == JobState.RUNNING  # not lost: still leased to the dead worker
    assert job.attempts == 1

    second = start_worker()
    await _wait(lambda: _done(store), what="the retried job to finish")
    [job] = await store.list_jobs(kind="delivery")
    assert job.state == JobState.SUCCEEDED
    assert job.attempts == 2
    assert len(await store.list_jobs(kind="fix")) == 1
    assert forge.comment_reactions(comment["id"]) == ["eyes"]
    actions = [e.action for e in await store.query_audit(AuditQuery(job_id=job.id))]
    assert "job.retried_after_lost_lease" in actions
    assert actions.count("job.succeeded") == 1

    second.send_signal(signal.SIGTERM)
    assert await _exited(second, 15) == 0


async def test_sigterm_drains_the_running_job(setup, forge: LocalForge) -> None:  # type: ignore[no-untyped-def]
    store, _, start_worker = setup
    forge.delay("/permission", 1.0, times=1)
    worker = start_worker(PATCHWARDEN_DRAIN_SECONDS="10")
    await _wait(lambda: _async(any("/permission" in a for a in forge.arrivals)), what="mid-job")
    worker.send_signal(signal.SIGTERM)
    assert await _exited(worker, 20) == 0
    [job] = await store.list_jobs(kind="delivery")
    assert job.state == JobState.SUCCEEDED
    assert job.attempts == 1


async def test_sigterm_without_drain_time_gives_the_job_back(setup, forge: LocalForge) -> None:  # type: ignore[no-untyped-def]
    store, comment, start_worker = setup
    forge.delay("/permission", 5.0, times=1)
    worker = start_worker(PATCHWARDEN_DRAIN_SECONDS="0")
    await _wait(lambda: _async(any("/permission" in a for a in forge.arrivals)), what="mid-job")
    worker.send_signal(signal.SIGTERM)
    assert await _exited(worker, 20) == 0
    [job] = await store.list_jobs(kind="delivery")
    assert job.state == JobState.QUEUED  # released, not failed, not lost
    assert job.attempts == 0
    assert await store.list_jobs(kind="fix") == []

    again = start_worker()
    await _wait(lambda: _done(store), what="the released job to run")
    assert len(await store.list_jobs(kind="fix")) == 1
    assert forge.comment_reactions(comment["id"]) == ["eyes"]
    again.send_signal(signal.SIGTERM)
    assert await _exited(again, 15) == 0


async def _exited(proc: subprocess.Popen[bytes], within: float) -> int:
    """Wait for the process without blocking the loop that runs the GitHub double."""
    return await asyncio.to_thread(proc.wait, within)


async def _async(value: bool) -> bool:
    return value


async def _done(store: Store) -> bool:
    return await _job_state(store) == JobState.SUCCEEDED
