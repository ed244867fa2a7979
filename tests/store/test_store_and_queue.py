"""The store's contract, on a real SQLite file and a real PostgreSQL server (the
``store_url`` fixture runs each test on both), and the worker pool: leases, retries,
limits."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.errors import PermanentJobError, StoreError
from app.queue import Lane, WorkerPool
from app.store import AuditQuery, Delivery, Job, JobState, ModelSpend, NewJob, Store, store_for_url

HUNTER2 = "hunter" + "2"  # built, so this file holds no literal credential


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[Store]:
    s = store_for_url(store_url, default_max_attempts=3)
    await s.open()
    yield s
    await s.close()


def _job(key: str, **kw: Any) -> NewJob:
    return NewJob(kind="work", key=key, queue="q", payload={"key": key}, **kw)


async def test_migrations_apply_once_and_refuse_a_newer_schema(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    for _ in range(2):
        s = store_for_url(url)
        await s.open()
        assert await s.schema_version() == 11
        await s.close()
    with sqlite3.connect(tmp_path / "m.db") as db:
        assert db.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == 11
        db.execute("INSERT INTO schema_migrations VALUES (99, 'future', 0)")
    with pytest.raises(StoreError, match="newer than this Patchwarden"):
        await store_for_url(url).open()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (f"postgresql://pw:{HUNTER2}@127.0.0.1:1/pw", r"cannot connect to postgresql://pw:\*\*\*@"),
        (f"postgresql://pw@127.0.0.1:1/pw?password={HUNTER2}", r"password=\*\*\*"),
        # libpq quotes a badly encoded password back in its error: masked there too
        (f"postgresql://pw:{HUNTER2}%zz@127.0.0.1:1/pw", r"invalid percent-encoded token"),
        ("mysql://db/pw", "unknown database URL scheme"),
        ("sqlite://relative.db", "sqlite:///"),
        ("sqlite:////nonexistent-dir/x/pw.db", "does not exist"),
    ],
)
async def test_bad_database_urls_say_what_to_do(url: str, message: str) -> None:
    with pytest.raises(StoreError, match=message) as caught:
        await store_for_url(url).open()
    assert HUNTER2 not in str(caught.value)  # a password is never shown


async def test_delivery_is_stored_once_with_its_jobs(store: Store) -> None:
    delivery = Delivery(
        "d1", "github", "issues", "opened", 7, "o/r", "alice", {"a": 1}, time.time()
    )
    assert await store.journal.record_delivery(delivery, jobs=[_job("k1")]) is True
    assert await store.journal.record_delivery(delivery, jobs=[_job("k2")]) is False
    assert [j.key for j in await store.queue.list_jobs()] == ["k1"]
    assert await store.journal.get_delivery("d1") == delivery


async def test_a_delivery_with_several_jobs_is_audited_in_order_and_keys_stay_unique(
    store: Store,
) -> None:
    """What the intake writes, the same on both databases (PostgreSQL does it in one
    statement): the delivery, its audit entry, then each new job and its entry; a job
    whose key exists is not made again; odd text is kept."""
    await store.queue.enqueue(_job("old"))
    odd = 'it\'s 100% "quoted"; -- ?, $1, %s, \\ and a NUL:\x00 é'
    delivery = Delivery(
        "d-odd", "github", "issue_comment", None, None, None, odd, {"body": odd}, 1000.0
    )
    d = {"delivery_id": "d-odd"}
    jobs = [
        _job("new-1", repo="o/r", run_after=5000.0, **d),
        _job("old", **d),
        _job("new-2", **d),
        _job("new-1", **d),
    ]
    assert await store.journal.record_delivery(delivery, jobs=jobs) is True
    assert [j.key for j in await store.queue.list_jobs()] == ["old", "new-1", "new-2"]
    first = (await store.queue.list_jobs())[1]
    assert (first.repo, first.run_after, first.max_attempts) == ("o/r", 5000.0, 3)
    stored = await store.journal.get_delivery("d-odd")
    assert stored is not None
    assert stored.payload == {"body": odd}  # JSON keeps a NUL as \u0000
    entries = await store.journal.query_audit(AuditQuery())
    ours = [e for e in entries if e.delivery_id == "d-odd"]
    assert [(e.action, e.reason) for e in ours] == [
        ("delivery.received", "issue_comment"),
        ("job.enqueued", "work"),
        ("job.enqueued", "work"),
    ]
    assert ours[0].details == {"source": "github", "installation_id": None}
    assert ours[0].actor in (odd, odd.replace("\x00", "\ufffd"))  # PostgreSQL: no NUL
    assert [e.details for e in ours[1:]] == [
        {"key": "new-1", "queue": "q"},
        {"key": "new-2", "queue": "q"},
    ]
    assert [e.job_id for e in ours[1:]] == [j.id for j in (await store.queue.list_jobs())[1:]]
    assert ours[0].at == 1000.0
    assert await store.journal.record_delivery(delivery, jobs=[_job("new-3")]) is False
    assert len(await store.journal.query_audit(AuditQuery())) == len(entries)


async def test_enqueue_is_idempotent_on_the_key(store: Store) -> None:
    first, new = await store.queue.enqueue(_job("same"))
    again, new_again = await store.queue.enqueue(_job("same"))
    assert (new, new_again) == (True, False)
    assert first.id == again.id


async def test_queued_jobs_of_one_key_prefix_are_cancelled_and_running_ones_left(
    store: Store,
) -> None:
    """Issue 34: a dismissed alert ends the work still queued for it, and no other."""
    for key in ("alert:o/r#1:1", "alert:o/r#1:2", "alert:o/r#12:1", "alert:o/r#1:3"):
        await store.queue.enqueue(_job(key, repo="o/r"))
    running = await store.queue.claim(queue="q", kinds=["work"], owner="w", lease_seconds=30)
    assert running is not None
    assert running.key == "alert:o/r#1:1"
    found = await store.queue.jobs_with_key("work", "alert:o/r#1:")
    assert [j.key for j in found] == ["alert:o/r#1:1", "alert:o/r#1:2", "alert:o/r#1:3"]
    assert await store.queue.jobs_with_key("other", "alert:o/r#1:") == []

    ids = await store.queue.cancel_queued(
        "work", "alert:o/r#1:", reason="dismissed", delivery_id="d1"
    )
    assert ids == [found[1].id, found[2].id]
    states = {j.key: (j.state, j.result) for j in await store.queue.list_jobs(kind="work")}
    assert states == {
        "alert:o/r#1:1": (JobState.RUNNING, None),
        "alert:o/r#1:2": (JobState.SUCCEEDED, {"status": "cancelled", "reason": "dismissed"}),
        "alert:o/r#1:3": (JobState.SUCCEEDED, {"status": "cancelled", "reason": "dismissed"}),
        "alert:o/r#12:1": (JobState.QUEUED, None),
    }
    cancelled = [
        e for e in await store.journal.query_audit(AuditQuery()) if e.action == "job.cancelled"
    ]
    assert sorted(e.job_id or 0 for e in cancelled) == ids
    assert {(e.repo, e.delivery_id, e.reason) for e in cancelled} == {("o/r", "d1", "dismissed")}
    assert await store.queue.cancel_queued("work", "alert:o/r#1:", reason="again") == []


async def test_two_workers_never_claim_the_same_job(store_url: str) -> None:
    a, b = store_for_url(store_url), store_for_url(store_url)
    await a.open()
    await b.open()
    for i in range(30):
        await a.queue.enqueue(_job(f"k{i}"))

    async def drain(s: Store, owner: str) -> list[int]:
        got = []
        while job := await s.queue.claim(queue="q", kinds=["work"], owner=owner, lease_seconds=30):
            got.append(job.id)
        return got

    ids_a, ids_b = await asyncio.gather(drain(a, "A"), drain(b, "B"))
    assert sorted(ids_a + ids_b) == list(range(1, 31))
    assert not set(ids_a) & set(ids_b)
    await a.close()
    await b.close()


@pytest.mark.slow  # waits leases and backoffs out
async def test_only_the_lease_holder_completes(store: Store) -> None:
    await store.queue.enqueue(_job("k"))
    job = await store.queue.claim(queue="q", kinds=["work"], owner="A", lease_seconds=0.05)
    assert job is not None
    await asyncio.sleep(0.1)  # A's lease expires: a crash; the job waits a backoff
    # (a whole second: "not yet" must hold on a busy machine too)
    backoff = {"crash_backoff_seconds": 1.0}
    assert not await store.queue.claim(
        queue="q", kinds=["work"], owner="B", lease_seconds=1, **backoff
    )
    await asyncio.sleep(1.05)
    retaken = await store.queue.claim(queue="q", kinds=["work"], owner="B", lease_seconds=30)
    assert retaken is not None
    assert retaken.id == job.id
    assert (retaken.attempts, retaken.crashes, retaken.errors) == (2, 1, 1)
    assert await store.queue.complete(job.id, owner="A", result={}) is False
    assert await store.queue.heartbeat(job.id, owner="A", lease_seconds=30) is False
    assert await store.queue.complete(job.id, owner="B", result={"ok": True}) is True
    done = await store.queue.get_job(job.id)
    assert done is not None
    assert done.state == JobState.SUCCEEDED
    assert done.result == {"ok": True}


FAST = {"crash_backoff_seconds": 0.005}


@pytest.mark.slow  # waits leases and backoffs out
async def test_crashes_are_not_the_job_s_errors_and_back_off(store: Store) -> None:
    """A worker that dies mid-job is a crash: the job runs again after a backoff that
    doubles, whatever its max_attempts; at MAX_CRASHES it fails, visibly."""
    from app.store.models import MAX_CRASHES

    await store.queue.enqueue(_job("k", max_attempts=2))
    delays = []
    for n in range(MAX_CRASHES):
        job = None
        for _ in range(400):
            job = await store.queue.claim(
                queue="q", kinds=["work"], owner=f"w{n}", lease_seconds=0.01, **FAST
            )
            if job is not None:
                break
            await asyncio.sleep(0.01)
        assert job is not None, f"crash {n}: the job never came back"
        await asyncio.sleep(0.02)  # the worker dies: its lease expires
        if n == MAX_CRASHES - 1:
            break
        assert not await store.queue.claim(
            queue="q", kinds=["work"], owner="x", lease_seconds=1, **FAST
        )
        [queued] = await store.queue.list_jobs()
        assert queued.state == JobState.QUEUED
        assert queued.crashes == n + 1
        delays.append(queued.run_after - queued.updated_at)
    assert delays == sorted(delays)
    assert delays[-1] > delays[0]
    assert not await store.queue.claim(
        queue="q", kinds=["work"], owner="C", lease_seconds=1, **FAST
    )
    [job] = await store.queue.list_jobs()
    assert job.state == JobState.FAILED
    assert f"{MAX_CRASHES} times: a crash loop" in (job.last_error or "")
    actions = [e.action for e in await store.journal.query_audit(AuditQuery(job_id=job.id))]
    assert actions[-1] == "job.failed"


async def test_a_failed_job_with_a_person_queues_its_notice_once(store: Store) -> None:
    await store.queue.enqueue(_job("k", max_attempts=1))
    await store.queue.enqueue(NewJob(kind="work", key="i", queue="q", payload={"issue_number": 7}))
    for _ in range(2):
        job = await store.queue.claim(queue="q", kinds=["work"], owner="A", lease_seconds=30)
        assert job is not None
        assert await store.queue.fail(job.id, owner="A", error="boom")
    notices = await store.queue.list_jobs(kind="failure_notice")
    assert [n.payload for n in notices] == [{"job_id": job.id}]  # only the one with an issue
    assert notices[0].queue == "events"


async def test_retry_later_waits_and_release_does_not_count(store: Store) -> None:
    await store.queue.enqueue(_job("k"))
    job = await store.queue.claim(queue="q", kinds=["work"], owner="A", lease_seconds=30)
    assert job is not None
    assert await store.queue.retry_later(job.id, owner="A", error="boom", delay_seconds=60)
    assert await store.queue.claim(queue="q", kinds=["work"], owner="A", lease_seconds=30) is None
    await store.queue.enqueue(_job("k2"))
    job2 = await store.queue.claim(queue="q", kinds=["work"], owner="A", lease_seconds=30)
    assert job2 is not None
    assert await store.queue.release(job2.id, owner="A")
    back = await store.queue.get_job(job2.id)
    assert back is not None
    assert back.state == JobState.QUEUED
    assert back.attempts == 0


async def test_kinds_without_a_runner_wait_in_the_store(store: Store) -> None:
    await store.queue.enqueue(NewJob(kind="fix", key="f", queue="q"))
    assert await store.queue.claim(queue="q", kinds=["work"], owner="A", lease_seconds=1) is None
    [job] = await store.queue.list_jobs()
    assert job.state == JobState.QUEUED


async def test_pool_bounds_concurrency_and_queues_the_rest(store: Store) -> None:
    running = 0
    peak = 0
    done: list[int] = []

    async def handler(job: Job) -> dict[str, Any]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.05)
        running -= 1
        done.append(job.id)
        return {}

    pool = WorkerPool(store, {"work": ("q", handler)}, [Lane("q", 2)], poll_seconds=0.02)
    for i in range(10):
        await store.queue.enqueue(_job(f"k{i}"))
    await pool.start()
    for _ in range(200):
        if len(done) == 10:
            break
        await asyncio.sleep(0.02)
    await pool.stop()
    assert sorted(done) == list(range(1, 11))
    assert peak == 2


async def test_pool_retries_then_fails_with_the_reason(store: Store) -> None:
    attempts: list[int] = []

    async def flaky(job: Job) -> dict[str, Any]:
        attempts.append(job.attempts)
        raise RuntimeError("GitHub is down")

    async def doomed(job: Job) -> dict[str, Any]:
        raise PermanentJobError("the delivery is gone")

    pool = WorkerPool(
        store,
        {"work": ("q", flaky), "doomed": ("q", doomed)},
        [Lane("q", 1)],
        retry_base_seconds=0,
    )
    await store.queue.enqueue(_job("k"))
    await store.queue.enqueue(NewJob(kind="doomed", key="d", queue="q"))
    await pool.run_until_idle()
    assert attempts == [1, 2, 3]
    flaky_job, doomed_job = await store.queue.list_jobs()
    assert flaky_job.state == doomed_job.state == JobState.FAILED
    assert (
        flaky_job.last_error == "gave up after 3 attempts; last error: RuntimeError: GitHub is down"
    )
    assert doomed_job.attempts == 1
    assert "the delivery is gone" in (doomed_job.last_error or "")


@pytest.mark.slow  # waits leases and backoffs out
async def test_heartbeat_keeps_a_long_job_leased(store: Store) -> None:
    async def slow(job: Job) -> dict[str, Any]:
        await asyncio.sleep(1.5)  # five lease lengths
        return {"slow": True}

    # A lease of 0.3 s is beaten every 0.1 s: a beat may be 0.2 s late on a busy machine
    # (with 0.05 s, the beat's own interval, one late beat lost the lease).
    pool = WorkerPool(store, {"work": ("q", slow)}, [Lane("q", 1)], lease_seconds=0.3)
    await store.queue.enqueue(_job("k"))
    runner = asyncio.create_task(pool.run_until_idle())
    await asyncio.sleep(0.75)
    # another worker looking now finds nothing to steal
    assert (
        await store.queue.claim(queue="q", kinds=["work"], owner="thief", lease_seconds=1) is None
    )
    await runner
    [job] = await store.queue.list_jobs()
    assert job.state == JobState.SUCCEEDED
    assert job.attempts == 1


async def test_model_spend_adds_up_per_installation_and_day(store_url: str) -> None:
    store = store_for_url(store_url)
    await store.open()
    try:
        one = ModelSpend(calls=1, prompt_tokens=100, completion_tokens=20, cost_usd=0.25)
        await asyncio.gather(
            *(store.repos.add_model_spend(7, day="2026-11-22", spend=one) for _ in range(4))
        )
        await store.repos.add_model_spend(7, day="2026-11-23", spend=one)
        await store.repos.add_model_spend(8, day="2026-11-22", spend=one)
        assert await store.repos.model_spend(7, day="2026-11-22") == ModelSpend(
            calls=4, prompt_tokens=400, completion_tokens=80, cost_usd=1.0
        )
        assert (await store.repos.model_spend(7, day="2026-11-23")).calls == 1
        assert (await store.repos.model_spend(8, day="2026-11-22")).cost_usd == 0.25
        assert await store.repos.model_spend(9, day="2026-11-22") == ModelSpend()
    finally:
        await store.close()


async def test_claim_once_lets_one_caller_through_across_store_handles(store_url: str) -> None:
    first, second = store_for_url(store_url), store_for_url(store_url)  # as two processes
    await first.open()
    await second.open()
    try:
        claims = await asyncio.gather(
            *(s.journal.claim_once("refusal:octo/x#1:comment:9") for s in (first, second) * 4)
        )
        assert sorted(claims) == [False] * 7 + [True]
        await first.journal.release_once("refusal:octo/x#1:comment:9")
        assert await second.journal.claim_once("refusal:octo/x#1:comment:9")
        assert await first.journal.claim_once("refusal:octo/x#1:comment:10")
    finally:
        await first.close()
        await second.close()


@pytest.mark.parametrize(
    ("base", "n", "wait"),
    [
        (1.0, 1, 1.0),
        (1.0, 2, 2.0),
        (1.0, 4, 8.0),
        (10.0, 7, 600.0),
        (10.0, 30, 600.0),
        (5.0, 0, 5.0),
    ],
)
def test_a_job_waits_longer_after_each_error_or_crash_and_never_over_ten_minutes(
    base: float, n: int, wait: float
) -> None:
    """One backoff for a job's errors (the worker) and its crashes (the store)."""
    from app.store.models import backoff

    assert backoff(base, n) == wait


async def test_an_sqlite_too_old_for_returning_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 31, 1))
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.31.1")
    with pytest.raises(StoreError, match=r"SQLite is 3\.31\.1; Patchwarden needs 3\.35"):
        await store_for_url(f"sqlite:///{tmp_path / 'old.db'}").open()


async def test_an_audit_entry_with_a_field_it_does_not_have_is_refused(store: Store) -> None:
    """A misspelt field would lose what the entry says (``reason`` as ``reson``): mypy
    names it, and a caller mypy does not check gets an error, not a silent blank."""
    with pytest.raises(TypeError, match="no field reson"):
        await store.journal.audit("job.noted", reson="typo")  # type: ignore[call-arg]
    with pytest.raises(TypeError):  # the time is the store's to set
        await store.journal.audit("job.noted", at=0.0)  # type: ignore[call-arg]
    await store.journal.audit("job.noted", repo="octo/x", reason="kept")
    entries = await store.journal.query_audit(AuditQuery(action_prefix="job.noted"))
    assert [(e.repo, e.reason) for e in entries] == [("octo/x", "kept")]
