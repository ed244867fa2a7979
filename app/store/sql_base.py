"""The SQL store's plumbing, for SQLite and PostgreSQL alike: one connection on one
thread, migrations, transactions and the audit row every other part writes with its
change (the base of :class:`~app.store.sql.SQLStore`).

Both databases run the same statements (``?`` placeholders; the PostgreSQL connection
translates them), so the two stores keep the same semantics by construction and one
contract suite (tests/store) runs against both. What differs is a few class attributes:
how a write transaction begins, how rows are locked for claiming, and the migrations.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import dataclasses
import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from app.errors import NoDatabase, StoreError
from app.store.interface import Store
from app.store.migrations import Migration
from app.store.models import (
    Job,
    JobState,
    Outcome,
    Pause,
)

T = TypeVar("T")


class Row(Protocol):
    """A result row, by column name or position (``sqlite3.Row`` and the PostgreSQL
    store's rows both are)."""

    def __getitem__(self, key: str | int, /) -> Any: ...


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class DB(Protocol):
    """The part of a DB-API connection the store uses, with ``?`` placeholders."""

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Cursor: ...

    def executemany(self, sql: str, params: Iterable[Sequence[Any]], /) -> Cursor: ...

    def close(self) -> None: ...


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


# The outcomes table has one column per Outcome field, of the same name; these hold JSON.
_OUTCOME_FIELDS = tuple(f.name for f in dataclasses.fields(Outcome))
_OUTCOME_COLUMNS = ", ".join(_OUTCOME_FIELDS)
_OUTCOME_JSON = ("details", "links", "ship_it")


def _outcome(row: Row) -> Outcome:
    values = {name: row[name] for name in _OUTCOME_FIELDS}
    for name in _OUTCOME_JSON:
        values[name] = json.loads(values[name])
    values["links"] = tuple(values["links"])
    values["two_person"] = bool(values["two_person"])
    return Outcome(**values)


def _pause(row: Row) -> Pause:
    return Pause(repo=row["repo"], actor=row["actor"], at=row["at"], reason=row["reason"])


class SQLBase(Store):
    """Subclasses give the connection (``_open_db``) and the dialect's attributes."""

    MIGRATIONS: tuple[Migration, ...]
    # How a write transaction starts: SQLite takes the write lock at once.
    BEGIN = "BEGIN IMMEDIATE"
    # Appended to a SELECT whose rows the transaction then changes. SQLite's write lock
    # already serialises writers; PostgreSQL locks the rows (``FOR UPDATE``), and a
    # claim skips the rows another worker holds (``FOR UPDATE SKIP LOCKED``).
    FOR_UPDATE = ""
    SKIP_LOCKED = ""
    # Threads, each with its own connection, that run this store's calls. SQLite has one
    # writer at a time, so one; a server database serves calls side by side (the webhook
    # intake is then not queued behind the workers' claims).
    CONNECTIONS = 1
    # One more thread and connection for the webhook intake alone (a server database):
    # a delivery is stored while the workers' calls keep the others busy.
    INTAKE_CONNECTION = False

    def __init__(self, *, url: str, default_max_attempts: int = 3, create: bool = True):
        self.create = create
        self.url = url
        self.default_max_attempts = default_max_attempts
        self._executor: ThreadPoolExecutor | None = None
        self._intake: ThreadPoolExecutor | None = None
        self._local = threading.local()  # .conn: the calling store thread's connection
        self._conns: list[DB] = []
        self._conns_lock = threading.Lock()

    @abc.abstractmethod
    def _open_db(self) -> DB:
        """Connect (on the store's thread); raise StoreError saying what is wrong."""

    def _migration_lock(self, db: DB) -> None:
        """Hold off other processes migrating the same database (inside the transaction)."""

    def _has_schema(self, db: DB) -> bool:
        """Whether the database holds Patchwarden's tables (``create=False`` needs them)."""
        return True

    def _reconnect_if_broken(self) -> None:
        """Before each call: a server-side database may have dropped the connection."""

    # -- plumbing -----------------------------------------------------------
    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._executor is None:
            raise StoreError("the store is not open; call open() first")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, fn, *args)

    async def _run_intake(self, fn: Callable[..., T], *args: Any) -> T:
        """``_run`` on the intake's own thread and connection, where there is one."""
        if self._intake is None:
            return await self._run(fn, *args)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._intake, self._call, fn, *args)

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        if getattr(self._local, "conn", None) is not None:
            self._reconnect_if_broken()
        return fn(*args)

    @property
    def _db(self) -> DB:
        """This store thread's connection, opened on its first call."""
        conn: DB | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._open_db()
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    def _replace_connection(self) -> None:
        """Close this thread's connection (broken); the next call opens another."""
        conn: DB | None = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with self._conns_lock:
                self._conns.remove(conn)
            with contextlib.suppress(Exception):
                conn.close()

    def _connect(self) -> None:
        try:
            self._migrate()
        except BaseException:
            self._replace_connection()
            raise

    def _migrate(self) -> None:
        db = self._db
        db.execute(self.BEGIN)
        try:
            self._migration_lock(db)
            if not self.create and not self._has_schema(db):
                raise NoDatabase(
                    f"{self.url} holds no Patchwarden tables: check PATCHWARDEN_DATABASE_URL "
                    "(`patchwarden serve` creates them on first start)"
                )
            db.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                " applied_at DOUBLE PRECISION NOT NULL)"
            )
            current = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
            version = int(current.fetchone()[0])
            latest = self.MIGRATIONS[-1].version
            if version > latest:
                raise StoreError(
                    f"{self.url} has schema version {version}, newer than this Patchwarden "
                    f"knows ({latest}). Upgrade Patchwarden or use another database."
                )
            for migration in self.MIGRATIONS:
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

    def _tx(self, fn: Callable[[DB], T]) -> T:
        """Run ``fn`` in a write transaction."""
        db = self._db
        db.execute(self.BEGIN)
        try:
            out = fn(db)
        except BaseException:
            # On a connection the server dropped, ROLLBACK fails too (the server rolled
            # back already): the first error is the one to report.
            with contextlib.suppress(Exception):
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return out

    def _write(self, fn: Callable[[DB], T]) -> Callable[[], T]:
        return lambda: self._tx(fn)

    @staticmethod
    def _audit_row(
        db: DB,
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
        self._executor = ThreadPoolExecutor(
            max_workers=self.CONNECTIONS, thread_name_prefix="store"
        )
        try:
            await self._run(self._connect)
        except BaseException:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise
        if self.INTAKE_CONNECTION:
            self._intake = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store-intake")

    async def close(self) -> None:
        if self._executor is None:
            return
        executor, self._executor = self._executor, None
        intake, self._intake = self._intake, None
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, executor.shutdown, True)
        if intake is not None:
            await loop.run_in_executor(None, intake.shutdown, True)
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:  # the store's threads are gone: close them from here
            with contextlib.suppress(Exception):
                conn.close()

    async def ping(self) -> None:
        await self._run(lambda: self._db.execute("SELECT 1").fetchone())

    async def schema_version(self) -> int:
        def q() -> int:
            row = self._db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
            return int(row[0] or 0)

        return await self._run(q)
