"""PostgreSQL: one database shared by any number of ``serve`` and ``worker``
processes on any number of hosts.

The store's statements run through psycopg 3 on the store's own threads, as SQLite's
do, so the two keep the same semantics by construction; what differs is locking (jobs
are claimed with ``FOR UPDATE SKIP LOCKED``), the migrations' types, an advisory lock
that lets one process migrate while the others wait, and the webhook intake in one
statement. Why psycopg 3 and not asyncpg: docs/decisions/009.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

from app.errors import StoreError
from app.store.database import DB, Cursor, Database, Driver
from app.store.migrations import POSTGRESQL
from app.store.models import Delivery, NewJob
from app.store.urls import mask_url, url_passwords

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)

# Any constant both processes agree on: the advisory lock held while migrating.
_MIGRATION_LOCK = 0x70617463  # "patc"


@lru_cache(maxsize=256)
def _placeholders(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


def _clean(params: Sequence[Any]) -> tuple[Any, ...]:
    # PostgreSQL's text cannot hold NUL; SQLite's can. Untrusted text (an error, a
    # reason) keeps everything else, with U+FFFD where a NUL was.
    return tuple(p.replace("\x00", "\ufffd") if isinstance(p, str) else p for p in params)


class _Row(tuple[Any, ...]):
    """A row readable by column name or position, as ``sqlite3.Row`` is."""

    names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self.names[key])
        return tuple.__getitem__(self, key)


@lru_cache(maxsize=512)
def _row_type(names: tuple[str, ...]) -> type[_Row]:
    return type("Row", (_Row,), {"names": {name: i for i, name in enumerate(names)}})


def _row_factory(cursor: Any) -> Any:
    return _row_type(tuple(d.name for d in cursor.description or ()))


class _Connection:
    """A psycopg connection that takes the store's ``?`` statements."""

    def __init__(self, conn: psycopg.Connection[Any]):
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Cursor:
        if not params:
            return self.conn.execute(sql)
        return self.conn.execute(_placeholders(sql), _clean(params))

    def execute_bound(self, sql: str, params: Sequence[Any], /, *, prepare: bool) -> Cursor:
        """With the values bound by the server, not rendered into the text, for a hot
        statement whose every parameter has its type cast; ``prepare``: prepared on
        its first run and reused after."""
        import psycopg

        cur = psycopg.Cursor(self.conn, row_factory=_row_factory)
        return cur.execute(_placeholders(sql), _clean(params), prepare=prepare)

    def executemany(self, sql: str, params: Iterable[Sequence[Any]], /) -> Cursor:
        cur = self.conn.cursor()
        cur.executemany(_placeholders(sql), [_clean(p) for p in params])
        return cur

    def close(self) -> None:
        self.conn.close()


class PostgresDriver(Driver):
    dialect = POSTGRESQL
    begin = "BEGIN"
    for_update = " FOR UPDATE"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    connections = 4
    intake_connection = True

    def __init__(self, url: str):
        self.url = mask_url(url)  # what errors and logs show: never the password
        self.prepare = True  # the intake's statement; off behind a pooler that loses it
        self._dsn = re.sub(r"^postgres(ql)?\+\w+://", "postgresql://", url)

    def connect(self, *, create: bool) -> DB:
        try:
            import psycopg
        except ImportError as exc:
            raise StoreError(
                "PostgreSQL needs the psycopg package: pip install 'patchwarden[postgres]'"
            ) from exc
        try:
            conn = psycopg.connect(
                self._dsn,
                autocommit=True,  # the store says BEGIN and COMMIT itself
                cursor_factory=psycopg.ClientCursor,
                row_factory=_row_factory,
                connect_timeout=10,
                application_name="patchwarden",
            )
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            for password in url_passwords(self._dsn):  # libpq may quote the URL back
                reason = reason.replace(password, "***")
            raise StoreError(f"cannot connect to {self.url}: {reason}") from None
        return _Connection(conn)

    def migration_lock(self, db: DB) -> None:
        db.execute(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")

    def has_schema(self, db: DB) -> bool:
        row = db.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
        return bool(row[0])

    def broken(self, db: DB) -> bool:
        return isinstance(db, _Connection) and bool(db.conn.broken)

    # -- the intake in one round trip --------------------------------------------
    def intake(
        self, database: Database, delivery: Delivery, jobs: Sequence[NewJob], max_attempts: int
    ) -> Callable[[], bool]:
        """As the queue's transaction, in one statement (one round trip instead of six):
        the delivery, its audit entry, its jobs and theirs, each step fed by the one
        before (so the audit keeps the order: the delivery, then each job), nothing if
        the delivery was stored already. The store contract tests hold both to one
        meaning."""
        sql, params = _intake(delivery, jobs, time.time(), max_attempts)

        def one() -> bool:
            import psycopg

            db = cast(_Connection, database.db)
            try:
                return bool(db.execute_bound(sql, params, prepare=self.prepare).fetchone()[0])
            except (
                psycopg.errors.InvalidSqlStatementName,
                psycopg.errors.DuplicatePreparedStatement,
            ):
                # A pooler that does not keep prepared statements (PgBouncer in
                # transaction mode before 1.21): bound, but unprepared, from now on.
                log.warning("PostgreSQL: prepared statements do not survive here; not preparing")
                self.prepare = False
                return bool(db.execute_bound(sql, params, prepare=False).fetchone()[0])

        return one


# The intake's jobs and their audit entries: _JOBS_HEAD, one VALUES row per job, _JOBS_TAIL.
_JOBS_HEAD = (
    ", j AS (INSERT INTO jobs (kind, queue, idempotency_key, repo, installation_id,"
    " delivery_id, payload, state, attempts, max_attempts, run_after, created_at,"
    " updated_at) SELECT v.kind, v.queue, v.key, v.repo, v.installation_id,"
    " v.delivery_id, v.payload, 'queued', 0, v.max_attempts, v.run_after,"
    " ?::double precision, ?::double precision FROM (VALUES "
)
_JOBS_TAIL = (
    ") AS v (kind, queue, key, repo, installation_id, delivery_id, payload,"
    " max_attempts, run_after, n) CROSS JOIN da ORDER BY v.n"
    " ON CONFLICT (idempotency_key) DO NOTHING"
    " RETURNING id, kind, queue, idempotency_key, repo, delivery_id),"
    " ja AS (INSERT INTO audit (at, action, actor, repo, job_id, delivery_id, reason,"
    " details) SELECT ?::double precision, 'job.enqueued', ?::text, j.repo, j.id,"
    " j.delivery_id, j.kind, '{\"key\": ' || to_json(j.idempotency_key)::text"
    " || ', \"queue\": ' || to_json(j.queue)::text || '}' FROM j ORDER BY j.id)"
)


def _intake(
    delivery: Delivery, jobs: Sequence[NewJob], now: float, max_attempts: int
) -> tuple[str, list[Any]]:
    reason = f"{delivery.event}.{delivery.action}" if delivery.action else delivery.event
    details = {"source": delivery.source, "installation_id": delivery.installation_id}
    params: list[Any] = [
        delivery.id, delivery.source, delivery.event, delivery.action,
        delivery.installation_id, delivery.repo, delivery.sender,
        json.dumps(delivery.payload), delivery.received_at,
        delivery.received_at, delivery.sender, delivery.repo, reason,
        json.dumps(details, sort_keys=True),
    ]  # fmt: skip
    sql = (
        "WITH d AS (INSERT INTO deliveries (id, source, event, action, installation_id, repo,"
        " sender, payload, received_at) VALUES (?::text, ?::text, ?::text, ?::text,"
        " ?::bigint, ?::text, ?::text, ?::text, ?::double precision)"
        " ON CONFLICT (id) DO NOTHING RETURNING id),"
        " da AS (INSERT INTO audit (at, action, actor, repo, job_id, delivery_id, reason,"
        " details) SELECT ?::double precision, 'delivery.received', ?::text, ?::text, NULL,"
        " d.id, ?::text, ?::text FROM d RETURNING id)"
    )
    if jobs:
        rows, values = [], []
        for job in jobs:
            rows.append(
                "(?::text, ?::text, ?::text, ?::text, ?::bigint, ?::text, ?::text,"
                " ?::integer, ?::double precision, ?::integer)"
            )
            values += [
                job.kind, job.queue, job.key, job.repo, job.installation_id, job.delivery_id,
                json.dumps(job.payload, sort_keys=True), job.max_attempts or max_attempts,
                job.run_after if job.run_after is not None else now, len(rows),
            ]  # fmt: skip
        sql += _JOBS_HEAD + ", ".join(rows) + _JOBS_TAIL  # placeholders: values are parameters
        params += [now, now, *values, now, delivery.sender]
    sql += " SELECT EXISTS (SELECT 1 FROM d)"
    return sql, params
