"""The SQLite store: one file, WAL mode, safe to share between processes.

All database work runs on one dedicated thread per store so the event loop never
blocks on disk, and writes from this process are serialised. Other processes (a
separate ``patchwarden worker``) coordinate through SQLite's own locking:
``BEGIN IMMEDIATE`` takes the write lock before a job is read for claiming, so two
workers can never lease the same job.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from app.errors import NoDatabase, StoreError
from app.store.base import Store
from app.store.migrations import SQLITE_MIGRATIONS
from app.store.models import (
    FAILURE_NOTICE,
    MAX_CRASHES,
    AuditEntry,
    AuditQuery,
    Delivery,
    Job,
    JobState,
    ModelSpend,
    NewJob,
    Outcome,
    Pause,
)

T = TypeVar("T")

_JOB_COLUMNS = (
    "id, kind, queue, idempotency_key, repo, installation_id, delivery_id, payload, state,"
    " attempts, max_attempts, run_after, lease_owner, lease_expires_at, last_error, result,"
    " created_at, updated_at, crashes"
)


def _job(row: sqlite3.Row) -> Job:
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


# The outcomes table has one column per Outcome field, of the same name; these hold JSON.
_OUTCOME_FIELDS = tuple(f.name for f in dataclasses.fields(Outcome))
_OUTCOME_COLUMNS = ", ".join(_OUTCOME_FIELDS)
_OUTCOME_JSON = ("details", "links", "ship_it")


def _outcome(row: sqlite3.Row) -> Outcome:
    values = {name: row[name] for name in _OUTCOME_FIELDS}
    for name in _OUTCOME_JSON:
        values[name] = json.loads(values[name])
    values["links"] = tuple(values["links"])
    values["two_person"] = bool(values["two_person"])
    return Outcome(**values)


def _pause(row: sqlite3.Row) -> Pause:
    return Pause(repo=row["repo"], actor=row["actor"], at=row["at"], reason=row["reason"])


class SQLiteStore(Store):
    def __init__(
        self,
        path: str,
        *,
        url: str | None = None,
        default_max_attempts: int = 3,
        create: bool = True,
    ):
        self.create = create
        self.path = path
        self.url = url or f"sqlite:///{path}"
        self.default_max_attempts = default_max_attempts
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None

    # -- plumbing -----------------------------------------------------------
    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._executor is None:
            raise StoreError("the store is not open; call open() first")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, *args)

    @property
    def _db(self) -> sqlite3.Connection:
        assert self._conn is not None, "store not open"
        return self._conn

    def _connect(self) -> None:
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            if not parent.is_dir():
                raise StoreError(
                    f"cannot open {self.url}: the folder {parent} does not exist. "
                    "Create it or point PATCHWARDEN_DATABASE_URL elsewhere."
                )
            if not self.create and not Path(self.path).expanduser().exists():
                raise NoDatabase(
                    f"no database at {self.url}: check PATCHWARDEN_DATABASE_URL "
                    "(`patchwarden serve` creates it on first start)"
                )
        try:
            conn = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.url}: {exc}") from exc
        self._conn = conn
        self._migrate()

    def _migrate(self) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
            )
            current = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
            version = int(current.fetchone()[0])
            latest = SQLITE_MIGRATIONS[-1].version
            if version > latest:
                raise StoreError(
                    f"{self.url} has schema version {version}, newer than this Patchwarden "
                    f"knows ({latest}). Upgrade Patchwarden or use another database."
                )
            for migration in SQLITE_MIGRATIONS:
                if migration.version <= version:
                    continue
                for statement in migration.sql.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.name, time.time()),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _tx(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in a write transaction (``BEGIN IMMEDIATE``)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            out = fn(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return out

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> Callable[[], T]:
        return lambda: self._tx(fn)

    @staticmethod
    def _audit_row(
        db: sqlite3.Connection,
        action: str,
        *,
        actor: str | None = None,
        repo: str | None = None,
        job_id: int | None = None,
        delivery_id: str | None = None,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        at: float | None = None,
    ) -> None:
        db.execute(
            "INSERT INTO audit (at, action, actor, repo, job_id, delivery_id, reason, details)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                at if at is not None else time.time(),
                action,
                actor,
                repo,
                job_id,
                delivery_id,
                reason,
                json.dumps(details or {}, sort_keys=True),
            ),
        )

    # -- lifecycle ----------------------------------------------------------
    async def open(self) -> None:
        if self._executor is not None:
            return
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store")
        try:
            await self._run(self._connect)
        except BaseException:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise

    async def close(self) -> None:
        if self._executor is None:
            return
        if self._conn is not None:
            await self._run(self._conn.close)
            self._conn = None
        self._executor.shutdown(wait=True)
        self._executor = None

    async def ping(self) -> None:
        await self._run(lambda: self._db.execute("SELECT 1").fetchone())

    async def schema_version(self) -> int:
        def q() -> int:
            row = self._db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
            return int(row[0] or 0)

        return await self._run(q)

    # -- deliveries ---------------------------------------------------------
    def _insert_job(self, db: sqlite3.Connection, job: NewJob, actor: str | None) -> int | None:
        now = time.time()
        cur = db.execute(
            "INSERT INTO jobs (kind, queue, idempotency_key, repo, installation_id, delivery_id,"
            " payload, state, attempts, max_attempts, run_after, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', 0, ?, ?, ?, ?)"
            " ON CONFLICT (idempotency_key) DO NOTHING",
            (
                job.kind,
                job.queue,
                job.key,
                job.repo,
                job.installation_id,
                job.delivery_id,
                json.dumps(job.payload, sort_keys=True),
                job.max_attempts or self.default_max_attempts,
                now,
                now,
                now,
            ),
        )
        if cur.rowcount == 0:
            return None
        job_id = cur.lastrowid
        self._audit_row(
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

    async def record_delivery(self, delivery: Delivery, *, jobs: Sequence[NewJob] = ()) -> bool:
        def tx(db: sqlite3.Connection) -> bool:
            cur = db.execute(
                "INSERT INTO deliveries (id, source, event, action, installation_id, repo,"
                " sender, payload, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO NOTHING",
                (
                    delivery.id,
                    delivery.source,
                    delivery.event,
                    delivery.action,
                    delivery.installation_id,
                    delivery.repo,
                    delivery.sender,
                    json.dumps(delivery.payload),
                    delivery.received_at,
                ),
            )
            if cur.rowcount == 0:
                return False
            self._audit_row(
                db,
                "delivery.received",
                actor=delivery.sender,
                repo=delivery.repo,
                delivery_id=delivery.id,
                reason=f"{delivery.event}.{delivery.action}" if delivery.action else delivery.event,
                details={"source": delivery.source, "installation_id": delivery.installation_id},
                at=delivery.received_at,
            )
            for job in jobs:
                self._insert_job(db, job, delivery.sender)
            return True

        return await self._run(self._write(tx))

    async def get_delivery(self, delivery_id: str) -> Delivery | None:
        def q() -> Delivery | None:
            row = self._db.execute("SELECT * FROM deliveries WHERE id = ?", (delivery_id,))
            r = row.fetchone()
            if r is None:
                return None
            return Delivery(
                id=r["id"],
                source=r["source"],
                event=r["event"],
                action=r["action"],
                installation_id=r["installation_id"],
                repo=r["repo"],
                sender=r["sender"],
                payload=json.loads(r["payload"]),
                received_at=r["received_at"],
            )

        return await self._run(q)

    async def count_deliveries(self) -> int:
        return await self._run(
            lambda: int(self._db.execute("SELECT COUNT(*) FROM deliveries").fetchone()[0])
        )

    # -- jobs ---------------------------------------------------------------
    def _get_job(self, db: sqlite3.Connection, job_id: int) -> Job:
        row = db.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()  # noqa: S608
        return _job(row)

    async def enqueue(self, job: NewJob, *, actor: str | None = None) -> tuple[Job, bool]:
        def tx(db: sqlite3.Connection) -> tuple[Job, bool]:
            job_id = self._insert_job(db, job, actor)
            if job_id is not None:
                return self._get_job(db, job_id), True
            row = db.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE idempotency_key = ?",  # noqa: S608
                (job.key,),
            ).fetchone()
            return _job(row), False

        return await self._run(self._write(tx))

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

        def tx(db: sqlite3.Connection) -> Job | None:
            now = time.time()
            # An expired lease is a crash (the worker died, was killed, lost the
            # database): not the job's own error. The job waits a backoff and runs again;
            # after MAX_CRASHES it fails, and the person who asked is told.
            expired = db.execute(
                "SELECT id, crashes, lease_owner FROM jobs WHERE queue = ?"  # noqa: S608
                f" AND kind IN ({marks}) AND state = 'running' AND lease_expires_at < ?",
                (queue, *kinds, now),
            ).fetchall()
            for row in expired:
                crashes = row["crashes"] + 1
                stopped = f"the worker {row['lease_owner']} stopped without finishing"
                if crashes >= MAX_CRASHES:
                    db.execute("UPDATE jobs SET crashes = ? WHERE id = ?", (crashes, row["id"]))
                    self._fail_row(db, row["id"], f"{stopped}, {crashes} times: a crash loop", now)
                    continue
                delay = min(crash_backoff_seconds * 2 ** (crashes - 1), 600.0)
                db.execute(
                    "UPDATE jobs SET state = 'queued', crashes = ?, lease_owner = NULL,"
                    " lease_expires_at = NULL, last_error = ?, run_after = ?, updated_at = ?"
                    " WHERE id = ?",
                    (crashes, f"{stopped} (crash {crashes} of {MAX_CRASHES})", now + delay, now,
                     row["id"]),
                )  # fmt: skip
                job_row = db.execute("SELECT repo FROM jobs WHERE id = ?", (row["id"],)).fetchone()
                self._audit_row(
                    db,
                    "job.retried_after_lost_lease",
                    repo=job_row["repo"],
                    job_id=row["id"],
                    reason=stopped,
                    details={"crash": crashes, "of": MAX_CRASHES, "delay_seconds": delay},
                    at=now,
                )
            row = db.execute(
                f"SELECT id FROM jobs WHERE queue = ?"  # noqa: S608
                f" AND state = 'queued' AND run_after <= ? AND kind IN ({marks})"
                " ORDER BY run_after, id LIMIT 1",
                (queue, now, *kinds),
            ).fetchone()
            if row is None:
                return None
            db.execute(
                "UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_owner = ?,"
                " lease_expires_at = ?, updated_at = ? WHERE id = ?",
                (owner, now + lease_seconds, now, row["id"]),
            )
            job = self._get_job(db, row["id"])
            details: dict[str, Any] = {"attempt": job.attempts, "owner": owner}
            if job.crashes:
                details["crashes"] = job.crashes
            self._audit_row(
                db,
                "job.claimed",
                repo=job.repo,
                job_id=job.id,
                reason=job.kind,
                details=details,
                at=now,
            )
            return job

        return await self._run(self._write(tx))

    def _owned_update(
        self,
        job_id: int,
        owner: str,
        sets: str,
        params: tuple[Any, ...],
        audit: tuple[str, str | None, dict[str, Any]] | None,
    ) -> Callable[[], bool]:
        def tx(db: sqlite3.Connection) -> bool:
            now = time.time()
            cur = db.execute(
                f"UPDATE jobs SET {sets}, updated_at = ? WHERE id = ? AND lease_owner = ?"  # noqa: S608
                " AND state = 'running'",
                (*params, now, job_id, owner),
            )
            if cur.rowcount == 0:
                return False
            if audit is not None:
                action, reason, details = audit
                repo = db.execute("SELECT repo FROM jobs WHERE id = ?", (job_id,)).fetchone()[0]
                self._audit_row(
                    db, action, repo=repo, job_id=job_id, reason=reason, details=details, at=now
                )
            return True

        return lambda: self._tx(tx)

    async def heartbeat(self, job_id: int, *, owner: str, lease_seconds: float) -> bool:
        return await self._run(
            self._owned_update(
                job_id, owner, "lease_expires_at = ?", (time.time() + lease_seconds,), None
            )
        )

    async def complete(self, job_id: int, *, owner: str, result: dict[str, Any]) -> bool:
        return await self._run(
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
        return await self._run(
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
        def tx(db: sqlite3.Connection) -> bool:
            held = db.execute(
                "SELECT 1 FROM jobs WHERE id = ? AND lease_owner = ? AND state = 'running'",
                (job_id, owner),
            ).fetchone()
            if held is None:
                return False
            self._fail_row(db, job_id, error, time.time())
            return True

        return await self._run(self._write(tx))

    def _fail_row(self, db: sqlite3.Connection, job_id: int, error: str, now: float) -> None:
        """Fail the job, audit it, and queue the notice that tells the person who asked
        (a job that has a person: an issue or a pull request in its payload)."""
        db.execute(
            "UPDATE jobs SET state = 'failed', lease_owner = NULL, lease_expires_at = NULL,"
            " last_error = ?, updated_at = ? WHERE id = ?",
            (error, now, job_id),
        )
        job = self._get_job(db, job_id)
        self._audit_row(db, "job.failed", repo=job.repo, job_id=job_id, reason=error, at=now)
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
            self._insert_job(db, notice, None)

    async def release(self, job_id: int, *, owner: str) -> bool:
        return await self._run(
            self._owned_update(
                job_id,
                owner,
                "state = 'queued', lease_owner = NULL, lease_expires_at = NULL,"
                " attempts = MAX(attempts - 1, 0), run_after = ?",
                (time.time(),),
                ("job.released", "worker shutting down; the job will run again", {}),
            )
        )

    async def get_job(self, job_id: int) -> Job | None:
        def q() -> Job | None:
            row = self._db.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?",  # noqa: S608
                (job_id,),
            ).fetchone()
            return _job(row) if row else None

        return await self._run(q)

    async def list_jobs(self, *, kind: str | None = None, state: str | None = None) -> list[Job]:
        def q() -> list[Job]:
            rows = self._db.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE (? IS NULL OR kind = ?)"  # noqa: S608
                " AND (? IS NULL OR state = ?) ORDER BY id",
                (kind, kind, state, state),
            ).fetchall()
            return [_job(r) for r in rows]

        return await self._run(q)

    # -- audit --------------------------------------------------------------
    async def audit(
        self,
        action: str,
        *,
        actor: str | None = None,
        repo: str | None = None,
        job_id: int | None = None,
        delivery_id: str | None = None,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        def tx(db: sqlite3.Connection) -> None:
            self._audit_row(
                db,
                action,
                actor=actor,
                repo=repo,
                job_id=job_id,
                delivery_id=delivery_id,
                reason=reason,
                details=details,
            )

        await self._run(self._write(tx))

    async def query_audit(self, query: AuditQuery) -> list[AuditEntry]:
        def q() -> list[AuditEntry]:
            rows = self._db.execute(
                "SELECT * FROM audit WHERE (? IS NULL OR repo = ?) AND (? IS NULL OR job_id = ?)"
                " AND (? IS NULL OR at >= ?) ORDER BY id LIMIT ?",
                (
                    query.repo,
                    query.repo,
                    query.job_id,
                    query.job_id,
                    query.since,
                    query.since,
                    query.limit,
                ),
            ).fetchall()
            return [
                AuditEntry(
                    id=r["id"],
                    at=r["at"],
                    action=r["action"],
                    actor=r["actor"],
                    repo=r["repo"],
                    job_id=r["job_id"],
                    delivery_id=r["delivery_id"],
                    reason=r["reason"],
                    details=json.loads(r["details"]),
                )
                for r in rows
            ]

        return await self._run(q)

    # -- installations -----------------------------------------------------
    async def set_installation(
        self, installation_id: int, *, account: str | None, active: bool
    ) -> None:
        def tx(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO installations (id, account, active, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET account = COALESCE(excluded.account, account),"
                " active = excluded.active, updated_at = excluded.updated_at",
                (installation_id, account, int(active), time.time()),
            )

        await self._run(self._write(tx))

    async def add_installation_repos(self, installation_id: int, repos: Sequence[str]) -> None:
        def tx(db: sqlite3.Connection) -> None:
            now = time.time()
            db.executemany(
                "INSERT INTO installation_repos (repo, installation_id, added_at) VALUES (?, ?, ?)"
                " ON CONFLICT (repo) DO UPDATE SET installation_id = excluded.installation_id",
                [(repo, installation_id, now) for repo in repos],
            )

        await self._run(self._write(tx))

    async def remove_installation_repos(
        self, installation_id: int, repos: Sequence[str] | None = None
    ) -> None:
        def tx(db: sqlite3.Connection) -> None:
            if repos is None:
                db.execute(
                    "DELETE FROM installation_repos WHERE installation_id = ?", (installation_id,)
                )
            else:
                db.executemany(
                    "DELETE FROM installation_repos WHERE installation_id = ? AND repo = ?",
                    [(installation_id, repo) for repo in repos],
                )

        await self._run(self._write(tx))

    async def installation_for_repo(self, repo: str) -> int | None:
        def q() -> int | None:
            row = self._db.execute(
                "SELECT r.installation_id FROM installation_repos r JOIN installations i"
                " ON i.id = r.installation_id WHERE lower(r.repo) = lower(?) AND i.active = 1",
                (repo,),
            ).fetchone()
            return int(row[0]) if row else None

        return await self._run(q)

    async def installed_repos(self) -> dict[str, int]:
        def q() -> dict[str, int]:
            rows = self._db.execute(
                "SELECT r.repo, r.installation_id FROM installation_repos r JOIN installations i"
                " ON i.id = r.installation_id WHERE i.active = 1 ORDER BY r.repo"
            ).fetchall()
            return {r[0]: int(r[1]) for r in rows}

        return await self._run(q)

    async def add_model_spend(self, installation_id: int, *, day: str, spend: ModelSpend) -> None:
        def tx(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO model_usage (installation_id, day, calls, prompt_tokens,"
                " completion_tokens, cost_usd, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (installation_id, day) DO UPDATE SET"
                " calls = calls + excluded.calls,"
                " prompt_tokens = prompt_tokens + excluded.prompt_tokens,"
                " completion_tokens = completion_tokens + excluded.completion_tokens,"
                " cost_usd = cost_usd + excluded.cost_usd, updated_at = excluded.updated_at",
                (
                    installation_id,
                    day,
                    spend.calls,
                    spend.prompt_tokens,
                    spend.completion_tokens,
                    spend.cost_usd,
                    time.time(),
                ),
            )

        await self._run(self._write(tx))

    async def model_spend(self, installation_id: int, *, day: str) -> ModelSpend:
        def q() -> ModelSpend:
            row = self._db.execute(
                "SELECT calls, prompt_tokens, completion_tokens, cost_usd FROM model_usage"
                " WHERE installation_id = ? AND day = ?",
                (installation_id, day),
            ).fetchone()
            if row is None:
                return ModelSpend()
            return ModelSpend(
                calls=row["calls"],
                prompt_tokens=row["prompt_tokens"],
                completion_tokens=row["completion_tokens"],
                cost_usd=row["cost_usd"],
            )

        return await self._run(q)

    async def claim_once(self, key: str) -> bool:
        def tx(db: sqlite3.Connection) -> bool:
            cur = db.execute(
                "INSERT INTO once_keys (key, claimed_at) VALUES (?, ?)"
                " ON CONFLICT (key) DO NOTHING",
                (key, time.time()),
            )
            return cur.rowcount == 1

        return await self._run(self._write(tx))

    async def release_once(self, key: str) -> None:
        def tx(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM once_keys WHERE key = ?", (key,))

        await self._run(self._write(tx))

    # -- outcomes -----------------------------------------------------------
    async def save_outcome(self, outcome: Outcome) -> None:
        values = dataclasses.asdict(outcome)
        for name in _OUTCOME_JSON:
            values[name] = json.dumps(values[name], sort_keys=True)
        marks = ", ".join("?" for _ in _OUTCOME_FIELDS)
        updates = ", ".join(f"{name} = excluded.{name}" for name in _OUTCOME_FIELDS[1:])

        def tx(db: sqlite3.Connection) -> None:
            db.execute(
                f"INSERT INTO outcomes ({_OUTCOME_COLUMNS}) VALUES ({marks})"  # noqa: S608
                f" ON CONFLICT (job_id) DO UPDATE SET {updates}",
                tuple(values[name] for name in _OUTCOME_FIELDS),
            )

        await self._run(self._write(tx))

    async def get_outcome(self, job_id: int) -> Outcome | None:
        def q() -> Outcome | None:
            row = self._db.execute(
                f"SELECT {_OUTCOME_COLUMNS} FROM outcomes WHERE job_id = ?",  # noqa: S608
                (job_id,),
            ).fetchone()
            return _outcome(row) if row else None

        return await self._run(q)

    async def find_outcomes(
        self,
        *,
        repo: str | None = None,
        pr_number: int | None = None,
        head_sha: str | None = None,
        merge_sha: str | None = None,
        since: float | None = None,
    ) -> list[Outcome]:
        def q() -> list[Outcome]:
            rows = self._db.execute(
                f"SELECT {_OUTCOME_COLUMNS} FROM outcomes"  # noqa: S608
                " WHERE (? IS NULL OR repo = ?) AND (? IS NULL OR pr_number = ?)"
                " AND (? IS NULL OR head_sha = ?) AND (? IS NULL OR merge_sha = ?)"
                " AND (? IS NULL OR created_at >= ?) ORDER BY created_at, job_id",
                (
                    repo,
                    repo,
                    pr_number,
                    pr_number,
                    head_sha,
                    head_sha,
                    merge_sha,
                    merge_sha,
                    since,
                    since,
                ),
            ).fetchall()
            return [_outcome(r) for r in rows]

        return await self._run(q)

    # -- per-repository pause -------------------------------------------------
    async def set_pause(
        self, repo: str, *, paused: bool, actor: str, reason: str | None = None
    ) -> bool:
        def tx(db: sqlite3.Connection) -> bool:
            now = time.time()
            if paused:
                cur = db.execute(
                    "INSERT INTO pauses (repo, actor, at, reason) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (repo) DO NOTHING",
                    (repo, actor, now, reason),
                )
            else:
                cur = db.execute("DELETE FROM pauses WHERE repo = ?", (repo,))
            if cur.rowcount == 0:
                return False
            self._audit_row(
                db,
                "repo.paused" if paused else "repo.resumed",
                actor=actor,
                repo=repo,
                reason=reason,
                at=now,
            )
            return True

        return await self._run(self._write(tx))

    async def get_pause(self, repo: str) -> Pause | None:
        def q() -> Pause | None:
            row = self._db.execute(
                "SELECT repo, actor, at, reason FROM pauses WHERE repo = ?", (repo,)
            ).fetchone()
            return _pause(row) if row else None

        return await self._run(q)

    async def pauses(self) -> list[Pause]:
        def q() -> list[Pause]:
            rows = self._db.execute(
                "SELECT repo, actor, at, reason FROM pauses ORDER BY repo"
            ).fetchall()
            return [_pause(r) for r in rows]

        return await self._run(q)
