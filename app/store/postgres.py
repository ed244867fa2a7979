"""The PostgreSQL store: one database shared by any number of ``serve`` and ``worker``
processes on any number of hosts.

It runs the SQL store's statements (:mod:`app.store.sql`) through psycopg 3 on the
store's own thread, as the SQLite store does, so the two keep the same semantics by
construction; what differs is locking (jobs are claimed with ``FOR UPDATE SKIP
LOCKED``), the migrations' types, and an advisory lock that lets one process migrate
while the others wait. Why psycopg 3 and not asyncpg: docs/decisions/009.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from app.errors import StoreError
from app.store.migrations_postgres import POSTGRES_MIGRATIONS
from app.store.sql import SQLStore
from app.store.sql_base import DB, Cursor
from app.store.urls import mask_url, url_passwords

if TYPE_CHECKING:
    import psycopg

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

    def executemany(self, sql: str, params: Iterable[Sequence[Any]], /) -> Cursor:
        cur = self.conn.cursor()
        cur.executemany(_placeholders(sql), [_clean(p) for p in params])
        return cur

    def close(self) -> None:
        self.conn.close()


class PostgresStore(SQLStore):
    MIGRATIONS = POSTGRES_MIGRATIONS
    BEGIN = "BEGIN"
    FOR_UPDATE = " FOR UPDATE"
    SKIP_LOCKED = " FOR UPDATE SKIP LOCKED"
    CONNECTIONS = 4

    def __init__(self, url: str, *, default_max_attempts: int = 3, create: bool = True):
        # self.url is what errors and logs show: never the password.
        super().__init__(
            url=mask_url(url), default_max_attempts=default_max_attempts, create=create
        )
        self._dsn = re.sub(r"^postgres(ql)?\+\w+://", "postgresql://", url)

    def _open_db(self) -> DB:
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

    def _migration_lock(self, db: DB) -> None:
        db.execute(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")

    def _has_schema(self, db: DB) -> bool:
        row = db.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
        return bool(row[0])

    def _reconnect_if_broken(self) -> None:
        conn = getattr(self._local, "conn", None)
        if isinstance(conn, _Connection) and conn.conn.broken:
            self._replace_connection()
