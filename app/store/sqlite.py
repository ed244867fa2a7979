"""SQLite, the embedded default: one file, WAL mode, safe to share between the
processes of one host (``serve`` and any number of ``worker``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import cast

from app.errors import NoDatabase, StoreError
from app.store.database import DB, Driver
from app.store.migrations import SQLITE


class SQLiteDriver(Driver):
    dialect = SQLITE

    def __init__(self, path: str, *, url: str | None = None):
        self.path = path
        self.url = url or f"sqlite:///{path}"

    def connect(self, *, create: bool) -> DB:
        if sqlite3.sqlite_version_info < (3, 35):
            raise StoreError(
                f"this Python's SQLite is {sqlite3.sqlite_version}; Patchwarden needs 3.35 or "
                "newer (RETURNING). Use a newer Python build, or PostgreSQL "
                "(PATCHWARDEN_DATABASE_URL=postgresql://...)"
            )
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            if not parent.is_dir():
                raise StoreError(
                    f"cannot open {self.url}: the folder {parent} does not exist. "
                    "Create it or point PATCHWARDEN_DATABASE_URL elsewhere."
                )
            if not create and not Path(self.path).expanduser().exists():
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
        return cast(DB, conn)
