"""The SQLite store's plumbing: one connection on one thread, migrations, transactions
and the audit row every other part writes with its change (the base of
:class:`~app.store.sqlite.SQLiteStore`)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from app.errors import NoDatabase, StoreError
from app.store.base import Store
from app.store.migrations import SQLITE_MIGRATIONS
from app.store.models import (
    Job,
    JobState,
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


class SQLiteBase(Store):
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
