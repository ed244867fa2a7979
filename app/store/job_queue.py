"""The queue: jobs enqueued (a delivery's in its transaction: app/store/journal.py), claimed
with leases, heartbeats, retries with backoff, crash counting and failure (with the
notice to the person who asked), as decision 002 gives them to the store.

Two workers, in this process or another, never lease the same job: on SQLite,
``BEGIN IMMEDIATE`` takes the write lock before a job is read for claiming; on
PostgreSQL the claim locks the row it takes (``FOR UPDATE SKIP LOCKED``), so workers
on many hosts claim different jobs at once instead of queueing behind one lock."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from app.store.database import DB, Database, Row, audit_row
from app.store.interface import Queue
from app.store.models import (
    FAILURE_NOTICE,
    MAX_CRASHES,
    Job,
    JobState,
    NewJob,
    backoff,
)

_JOB_COLUMNS = (
    "id, kind, queue, idempotency_key, repo, installation_id, delivery_id, payload, state,"
    " attempts, max_attempts, run_after, lease_owner, lease_expires_at, last_error, result,"
    " created_at, updated_at, crashes"
)


def _job(row: Row) -> Job:
    return Job(
        id=row["id"],
        kind=row["kind"],
        queue=row["queue"],
        key=row["idempotency_key"],
        repo=row["repo"],
        installation_id=row["installation_id"],
        delivery_id=row["delivery_id"],
        payload=json.loads(row["payload"]),
        state=JobState(row["state"]),
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        run_after=row["run_after"],
        lease_owner=row["lease_owner"],
        lease_expires_at=row["lease_expires_at"],
        last_error=row["last_error"],
        result=json.loads(row["result"]) if row["result"] else None,
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        crashes=row["crashes"],
    )


def insert_job(db: DB, job: NewJob, actor: str | None, *, default_max_attempts: int) -> int | None:
    """Insert ``job`` unless one with its key exists, audited; its id, or ``None``."""
    now = time.time()
    inserted = db.execute(
        "INSERT INTO jobs (kind, queue, idempotency_key, repo, installation_id, delivery_id,"
        " payload, state, attempts, max_attempts, run_after, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', 0, ?, ?, ?, ?)"
        " ON CONFLICT (idempotency_key) DO NOTHING RETURNING id",
        (
            job.kind,
            job.queue,
            job.key,
            job.repo,
            job.installation_id,
            job.delivery_id,
            json.dumps(job.payload, sort_keys=True),
            job.max_attempts or default_max_attempts,
            job.run_after if job.run_after is not None else now,
            now,
            now,
        ),
    )
    row = inserted.fetchone()
    if row is None:
        return None
    job_id = int(row[0])
    audit_row(
        db,
        "job.enqueued",
        actor=actor,
        repo=job.repo,
        job_id=job_id,
        delivery_id=job.delivery_id,
        reason=job.kind,
        details={"key": job.key, "queue": job.queue},
        at=now,
    )
    return job_id


class SQLQueue(Queue):
    def __init__(self, database: Database, *, default_max_attempts: int = 3):
        self.database = database
        self.default_max_attempts = default_max_attempts

    def _get_job(self, db: DB, job_id: int) -> Job:
        row = db.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()  # noqa: S608
        return _job(row)

    async def enqueue(self, job: NewJob, *, actor: str | None = None) -> tuple[Job, bool]:
        def tx(db: DB) -> tuple[Job, bool]:
            job_id = insert_job(db, job, actor, default_max_attempts=self.default_max_attempts)
            if job_id is not None:
                return self._get_job(db, job_id), True
            row = db.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE idempotency_key = ?",  # noqa: S608
                (job.key,),
            ).fetchone()
            return _job(row), False

        return await self.database.run(self.database.write(tx))

    async def claim(
        self,
        *,
        queue: str,
        kinds: Sequence[str],
        owner: str,
        lease_seconds: float,
        crash_backoff_seconds: float = 10.0,
    ) -> Job | None:
        if not kinds:
            return None
        marks = ", ".join("?" for _ in kinds)
        skip_locked = self.database.driver.skip_locked
        # One statement picks the next due job and leases it (the row locked, and rows
        # other workers hold skipped, on PostgreSQL).
        lease = (  # marks and the dialect's suffix only: no input in the text
            "UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_owner = ?,"  # noqa: S608
            " lease_expires_at = ?, updated_at = ? WHERE id = ("
            " SELECT id FROM jobs WHERE queue = ? AND state = 'queued' AND run_after <= ?"
            f" AND kind IN ({marks}) ORDER BY run_after, id LIMIT 1{skip_locked})"
            f" RETURNING {_JOB_COLUMNS}"
        )

        def tx(db: DB) -> Job | None:
            now = time.time()
            expired = db.execute(
                "SELECT id, crashes, lease_owner FROM jobs WHERE queue = ?"  # noqa: S608
                f" AND kind IN ({marks}) AND state = 'running' AND lease_expires_at < ?"
                f" ORDER BY id{skip_locked}",
                (queue, *kinds, now),
            ).fetchall()
            for row in expired:
                self._lost_lease(db, row, now, crash_backoff_seconds)
            row = db.execute(
                lease, (owner, now + lease_seconds, now, queue, now, *kinds)
            ).fetchone()
            if row is None:
                return None
            job = _job(row)
            details: dict[str, Any] = {"attempt": job.attempts, "owner": owner}
            if job.crashes:
                details["crashes"] = job.crashes
            audit_row(
                db, "job.claimed", repo=job.repo, job_id=job.id, reason=job.kind,
                details=details, at=now,
            )  # fmt: skip
            return job

        return await self.database.run(self.database.write(tx))

    def _lost_lease(self, db: DB, row: Row, now: float, crash_backoff_seconds: float) -> None:
        """An expired lease is a crash (the worker died, was killed, lost the database):
        not the job's own error. The job waits a backoff and runs again; after
        MAX_CRASHES it fails, and the person who asked is told."""
        crashes = row["crashes"] + 1
        stopped = f"the worker {row['lease_owner']} stopped without finishing"
        if crashes >= MAX_CRASHES:
            db.execute("UPDATE jobs SET crashes = ? WHERE id = ?", (crashes, row["id"]))
            self._fail_row(db, row["id"], f"{stopped}, {crashes} times: a crash loop", now)
            return
        delay = backoff(crash_backoff_seconds, crashes)
        db.execute(
            "UPDATE jobs SET state = 'queued', crashes = ?, lease_owner = NULL,"
            " lease_expires_at = NULL, last_error = ?, run_after = ?, updated_at = ?"
            " WHERE id = ?",
            (crashes, f"{stopped} (crash {crashes} of {MAX_CRASHES})", now + delay, now, row["id"]),
        )
        job_row = db.execute("SELECT repo FROM jobs WHERE id = ?", (row["id"],)).fetchone()
        audit_row(
            db,
            "job.retried_after_lost_lease",
            repo=job_row["repo"],
            job_id=row["id"],
            reason=stopped,
            details={"crash": crashes, "of": MAX_CRASHES, "delay_seconds": delay},
            at=now,
        )

    def _owned_update(
        self,
        job_id: int,
        owner: str,
        sets: str,
        params: tuple[Any, ...],
        audit: tuple[str, str | None, dict[str, Any]] | None,
    ) -> Callable[[], bool]:
        def tx(db: DB) -> bool:
            now = time.time()
            held = db.execute(
                f"UPDATE jobs SET {sets}, updated_at = ? WHERE id = ? AND lease_owner = ?"  # noqa: S608
                " AND state = 'running' RETURNING repo",
                (*params, now, job_id, owner),
            ).fetchone()
            if held is None:
                return False
            if audit is not None:
                action, reason, details = audit
                repo = held[0]
                audit_row(
                    db, action, repo=repo, job_id=job_id, reason=reason, details=details, at=now
                )
            return True

        return lambda: self.database.tx(tx)

    async def heartbeat(self, job_id: int, *, owner: str, lease_seconds: float) -> bool:
        return await self.database.run(
            self._owned_update(
                job_id, owner, "lease_expires_at = ?", (time.time() + lease_seconds,), None
            )
        )

    async def save_result(self, job_id: int, body: str, *, version: int) -> None:
        def tx(db: DB) -> None:
            db.execute(
                "INSERT INTO session_results (job_id, version, body, saved_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (job_id) DO UPDATE SET"
                " version = excluded.version, body = excluded.body, saved_at = excluded.saved_at",
                (job_id, version, body, time.time()),
            )

        await self.database.run(self.database.write(tx))

    async def load_result(self, job_id: int) -> tuple[int, str] | None:
        def q() -> tuple[int, str] | None:
            row = self.database.db.execute(
                "SELECT version, body FROM session_results WHERE job_id = ?", (job_id,)
            ).fetchone()
            return (int(row[0]), str(row[1])) if row else None

        return await self.database.run(q)

    async def complete(self, job_id: int, *, owner: str, result: dict[str, Any]) -> bool:
        return await self.database.run(
            self._owned_update(
                job_id,
                owner,
                "state = 'succeeded', lease_owner = NULL, lease_expires_at = NULL, result = ?",
                (json.dumps(result, sort_keys=True),),
                ("job.succeeded", None, result),
            )
        )

    async def retry_later(
        self, job_id: int, *, owner: str, error: str, delay_seconds: float
    ) -> bool:
        return await self.database.run(
            self._owned_update(
                job_id,
                owner,
                "state = 'queued', lease_owner = NULL, lease_expires_at = NULL,"
                " last_error = ?, run_after = ?",
                (error, time.time() + delay_seconds),
                ("job.retry_scheduled", error, {"delay_seconds": delay_seconds}),
            )
        )

    async def fail(self, job_id: int, *, owner: str, error: str) -> bool:
        def tx(db: DB) -> bool:
            held = db.execute(
                "SELECT 1 FROM jobs WHERE id = ? AND lease_owner = ?"  # noqa: S608
                f" AND state = 'running'{self.database.driver.for_update}",
                (job_id, owner),
            ).fetchone()
            if held is None:
                return False
            self._fail_row(db, job_id, error, time.time())
            return True

        return await self.database.run(self.database.write(tx))

    def _fail_row(self, db: DB, job_id: int, error: str, now: float) -> None:
        """Fail the job, audit it, and queue the notice that tells the person who asked
        (a job that has a person: an issue or a pull request in its payload)."""
        db.execute(
            "UPDATE jobs SET state = 'failed', lease_owner = NULL, lease_expires_at = NULL,"
            " last_error = ?, updated_at = ? WHERE id = ?",
            (error, now, job_id),
        )
        job = self._get_job(db, job_id)
        audit_row(db, "job.failed", repo=job.repo, job_id=job_id, reason=error, at=now)
        if job.kind != FAILURE_NOTICE and (
            job.payload.get("issue_number") or job.payload.get("pr")
        ):
            notice = NewJob(
                kind=FAILURE_NOTICE,
                key=f"{FAILURE_NOTICE}:{job_id}",
                queue="events",  # app.queue.EVENTS_QUEUE: GitHub calls only
                repo=job.repo,
                installation_id=job.installation_id,
                payload={"job_id": job_id},
            )
            insert_job(db, notice, None, default_max_attempts=self.default_max_attempts)

    async def release(self, job_id: int, *, owner: str) -> bool:
        return await self.database.run(
            self._owned_update(
                job_id,
                owner,
                "state = 'queued', lease_owner = NULL, lease_expires_at = NULL,"
                " attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, run_after = ?",
                (time.time(),),
                ("job.released", "worker shutting down; the job will run again", {}),
            )
        )

    async def get_job(self, job_id: int) -> Job | None:
        def q() -> Job | None:
            row = self.database.db.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?",  # noqa: S608
                (job_id,),
            ).fetchone()
            return _job(row) if row else None

        return await self.database.run(q)

    async def list_jobs(self, *, kind: str | None = None, state: str | None = None) -> list[Job]:
        def q() -> list[Job]:
            rows = self.database.db.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE (? IS NULL OR kind = ?)"  # noqa: S608
                " AND (? IS NULL OR state = ?) ORDER BY id",
                (kind, kind, state, state),
            ).fetchall()
            return [_job(r) for r in rows]

        return await self.database.run(q)

    async def jobs_with_key(self, kind: str, prefix: str) -> list[Job]:
        def q() -> list[Job]:
            rows = self.database.db.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE kind = ?"  # noqa: S608
                " AND substr(idempotency_key, 1, ?) = ? ORDER BY id",
                (kind, len(prefix), prefix),
            ).fetchall()
            return [_job(r) for r in rows]

        return await self.database.run(q)

    async def cancel_queued(
        self, kind: str, prefix: str, *, reason: str, delivery_id: str | None = None
    ) -> list[int]:
        result = {"status": "cancelled", "reason": reason}

        def tx(db: DB) -> list[int]:
            rows = db.execute(
                "UPDATE jobs SET state = 'succeeded', result = ?, updated_at = ?"
                " WHERE kind = ? AND state = 'queued' AND substr(idempotency_key, 1, ?) = ?"
                " RETURNING id, repo",
                (json.dumps(result, sort_keys=True), time.time(), kind, len(prefix), prefix),
            ).fetchall()
            for row in rows:
                audit_row(
                    db,
                    "job.cancelled",
                    repo=row["repo"],
                    job_id=row["id"],
                    delivery_id=delivery_id,
                    reason=reason,
                )
            return sorted(int(row["id"]) for row in rows)

        return await self.database.run(self.database.write(tx))
