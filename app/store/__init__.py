"""The store: one database (SQLite or PostgreSQL) and a repository per concern over it."""

from __future__ import annotations

from urllib.parse import urlsplit

from app.errors import StoreError
from app.store.database import Database, Driver
from app.store.facade import Store
from app.store.models import (
    AuditEntry,
    AuditQuery,
    CheckRecord,
    Delivery,
    Job,
    JobState,
    MetricsSnapshot,
    ModelSpend,
    NewJob,
    Outcome,
    Pause,
    TrustEvent,
    TrustStanding,
    WatchFinding,
)
from app.store.urls import mask_url

__all__ = [
    "AuditEntry",
    "AuditQuery",
    "CheckRecord",
    "Delivery",
    "Job",
    "JobState",
    "MetricsSnapshot",
    "ModelSpend",
    "NewJob",
    "Outcome",
    "Pause",
    "Store",
    "TrustEvent",
    "TrustStanding",
    "WatchFinding",
    "mask_url",
    "open_store",
    "store_for_url",
]


def store_for_url(url: str, *, default_max_attempts: int = 3, create: bool = True) -> Store:
    """Build (not open) the store a ``PATCHWARDEN_DATABASE_URL`` names.

    ``create=False`` is for commands that only read (``audit``, ``doctor``): a wrong
    URL then says so instead of leaving an empty database behind.
    """
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        if not url.startswith("sqlite:///"):
            raise StoreError(
                f"bad database URL {url!r}: write sqlite:///relative/path.db, "
                "sqlite:////absolute/path.db or sqlite:///:memory:"
            )
        from app.store.sqlite import SQLiteDriver

        path = url.removeprefix("sqlite:///") or ":memory:"
        driver: Driver = SQLiteDriver(path, url=url)
    elif scheme in {"postgres", "postgresql", "postgresql+psycopg"}:
        from app.store.postgres import PostgresDriver

        driver = PostgresDriver(url)
    else:
        raise StoreError(
            f"unknown database URL scheme {scheme!r} in {mask_url(url)!r}; use sqlite:///PATH "
            "or postgresql://USER:PASSWORD@HOST/DATABASE"
        )
    return Store(Database(driver, create=create), default_max_attempts=default_max_attempts)


async def open_store(url: str, *, default_max_attempts: int = 3) -> Store:
    store = store_for_url(url, default_max_attempts=default_max_attempts)
    await store.open()
    return store
