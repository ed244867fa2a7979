"""One database for every repository of the store: its connections, each on its own
thread, the migrations, write transactions, and the audit row each change writes with
itself.

SQLite and PostgreSQL run the same statements (``?`` placeholders; the PostgreSQL
connection translates them), so they keep the same semantics by construction and one
contract suite (tests/store) runs against both. Where their SQL differs, a
:class:`Driver` says so: how to connect, how a write transaction begins, how rows are
locked for claiming, and the dialect the one migration history is written for.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, Unpack

from app.errors import NoDatabase, StoreError
from app.store.migrations import Dialect, migrations_for
from app.store.models import AuditFields

if TYPE_CHECKING:
    from app.store.models import Delivery, NewJob

T = TypeVar("T")


class Row(Protocol):
    """A result row, by column name or position (``sqlite3.Row`` and the PostgreSQL
    driver's rows both are)."""

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


class Driver:
    """What one database engine does its own way. The defaults are SQLite's."""

    dialect: Dialect
    # What errors and logs show: never a password.
    url: str
    # How a write transaction starts: SQLite takes the write lock at once.
    begin = "BEGIN IMMEDIATE"
    # Appended to a SELECT whose rows the transaction then changes. SQLite's write lock
    # already serialises writers; PostgreSQL locks the rows (``FOR UPDATE``), and a
    # claim skips the rows another worker holds (``FOR UPDATE SKIP LOCKED``).
    for_update = ""
    skip_locked = ""
    # Threads, each with its own connection, that run the store's calls. SQLite has one
    # writer at a time, so one; a server database serves calls side by side.
    connections = 1
    # One more thread and connection for the webhook intake alone (a server database):
    # a delivery is stored while the workers' calls keep the others busy.
    intake_connection = False

    def connect(self, *, create: bool) -> DB:
        """Connect (on the store's thread); raise StoreError saying what is wrong."""
        raise NotImplementedError

    def migration_lock(self, db: DB) -> None:
        """Hold off other processes migrating the same database (inside the transaction)."""

    def has_schema(self, db: DB) -> bool:
        """Whether the database holds Patchwarden's tables (``create=False`` needs them)."""
        return True

    def broken(self, db: DB) -> bool:
        """Whether a server-side database dropped this connection."""
        return False

    def intake(
        self, database: Database, delivery: Delivery, jobs: Sequence[NewJob], max_attempts: int
    ) -> Callable[[], bool] | None:
        """The engine's own way to record a delivery with its jobs, or ``None`` for the
        queue's transaction."""
        return None


def audit_row(
    db: DB, action: str, *, at: float | None = None, **fields: Unpack[AuditFields]
) -> None:
    """Write an audit entry inside the caller's transaction (``at``: now by default)."""
    unknown = fields.keys() - AuditFields.__annotations__.keys()
    if unknown:  # mypy says so too; a caller it does not check fails here, not silently
        raise TypeError(f"an audit entry has no field {', '.join(sorted(unknown))}")
    db.execute(
        "INSERT INTO audit (at, action, actor, repo, job_id, delivery_id, reason, details)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            at if at is not None else time.time(),
            action,
            fields.get("actor"),
            fields.get("repo"),
            fields.get("job_id"),
            fields.get("delivery_id"),
            fields.get("reason"),
            json.dumps(fields.get("details") or {}, sort_keys=True),
        ),
    )


class Database:
    """The driver's connections on the store's threads, opened on first use."""

    def __init__(self, driver: Driver, *, create: bool = True):
        self.driver = driver
        self.create = create
        self.url = driver.url
        self.migrations = migrations_for(driver.dialect)  # the history this database reaches
        self._executor: ThreadPoolExecutor | None = None
        self._intake: ThreadPoolExecutor | None = None
        self._local = threading.local()  # .conn: the calling store thread's connection
        self._conns: list[DB] = []
        self._conns_lock = threading.Lock()

    # -- calls ----------------------------------------------------------------
    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` on one of the store's threads (its connection is ``db``)."""
        if self._executor is None:
            raise StoreError("the store is not open; call open() first")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, fn, *args)

    async def run_intake(self, fn: Callable[..., T], *args: Any) -> T:
        """``run`` on the intake's own thread and connection, where there is one."""
        if self._intake is None:
            return await self.run(fn, *args)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._intake, self._call, fn, *args)

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        conn: DB | None = getattr(self._local, "conn", None)
        if conn is not None and self.driver.broken(conn):
            self._replace_connection()
        return fn(*args)

    @property
    def db(self) -> DB:
        """This store thread's connection, opened on its first call."""
        conn: DB | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self.driver.connect(create=self.create)
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    def tx(self, fn: Callable[[DB], T]) -> T:
        """Run ``fn`` in a write transaction."""
        db = self.db
        db.execute(self.driver.begin)
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

    def write(self, fn: Callable[[DB], T]) -> Callable[[], T]:
        """``fn`` as a call for ``run`` that runs it in a write transaction."""
        return lambda: self.tx(fn)

    def _replace_connection(self) -> None:
        """Close this thread's connection (broken); the next call opens another."""
        conn: DB | None = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with self._conns_lock:
                self._conns.remove(conn)
            with contextlib.suppress(Exception):
                conn.close()

    # -- migrations -----------------------------------------------------------
    def _connect(self) -> None:
        try:
            self._migrate()
        except BaseException:
            self._replace_connection()
            raise

    def _migrate(self) -> None:
        db = self.db
        db.execute(self.driver.begin)
        try:
            self.driver.migration_lock(db)
            if not self.create and not self.driver.has_schema(db):
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
            latest = self.migrations[-1].version
            if version > latest:
                raise StoreError(
                    f"{self.url} has schema version {version}, newer than this Patchwarden "
                    f"knows ({latest}). Upgrade Patchwarden or use another database."
                )
            for migration in self.migrations:
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

    # -- lifecycle ------------------------------------------------------------
    async def open(self) -> None:
        """Connect and apply pending migrations."""
        if self._executor is not None:
            return
        self._executor = ThreadPoolExecutor(
            max_workers=self.driver.connections, thread_name_prefix="store"
        )
        try:
            await self.run(self._connect)
        except BaseException:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise
        if self.driver.intake_connection:
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
        """Raise if the database does not answer."""
        await self.run(lambda: self.db.execute("SELECT 1").fetchone())

    async def schema_version(self) -> int:
        def q() -> int:
            row = self.db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
            return int(row[0] or 0)

        return await self.run(q)
