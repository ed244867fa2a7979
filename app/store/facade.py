"""The store: one database, and a repository per concern over it.

``store.queue`` (jobs and their leases), ``store.journal`` (deliveries, the audit log,
answers given once), ``store.repos`` (installations, spend, pauses, the dashboard issue),
``store.learning`` (outcomes, earned autonomy) and ``store.checks`` (the watch's
history). A change that spans two of them and must be atomic lives in one repository
(each writes its own audit entry in its own transaction).
"""

from __future__ import annotations

from app.store.check_history import SQLCheckHistory
from app.store.database import Database
from app.store.interface import CheckHistory, Journal, Learning, Queue, RepoState
from app.store.job_queue import SQLQueue
from app.store.journal import SQLJournal
from app.store.learning import SQLLearning
from app.store.models import MetricsSnapshot
from app.store.readings import read_metrics
from app.store.repo_state import SQLRepoState


class Store:
    """Open it once per process, share it, close it at shutdown."""

    def __init__(self, database: Database, *, default_max_attempts: int = 3):
        self.database = database
        self.queue: Queue = SQLQueue(database, default_max_attempts=default_max_attempts)
        self.journal: Journal = SQLJournal(database, default_max_attempts=default_max_attempts)
        self.repos: RepoState = SQLRepoState(database)
        self.learning: Learning = SQLLearning(database)
        self.checks: CheckHistory = SQLCheckHistory(database)

    @property
    def url(self) -> str:
        """The database's URL, its password masked."""
        return self.database.url

    async def open(self) -> None:
        """Connect and apply pending migrations."""
        await self.database.open()

    async def close(self) -> None:
        await self.database.close()

    async def ping(self) -> None:
        """Raise if the database does not answer."""
        await self.database.ping()

    async def schema_version(self) -> int:
        return await self.database.schema_version()

    async def metrics(self, *, now: float | None = None) -> MetricsSnapshot:
        """The counts ``GET /metrics`` shows, read in one go."""
        return await read_metrics(self.database, now=now)
