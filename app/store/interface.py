"""The store's repositories, one interface per concern. Callers depend on these (through
:class:`~app.store.facade.Store`), never on a database driver; each has one SQL
implementation that runs on SQLite and PostgreSQL alike."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, Unpack

from app.store.models import (
    AuditEntry,
    AuditFields,
    AuditQuery,
    CheckRecord,
    Delivery,
    Job,
    ModelSpend,
    NewJob,
    Outcome,
    Pause,
    TrustEvent,
    TrustStanding,
    WatchFinding,
)


class Queue(abc.ABC):
    """Jobs: enqueued, claimed with leases, heartbeats, retries, crashes and failures."""

    @abc.abstractmethod
    async def enqueue(self, job: NewJob, *, actor: str | None = None) -> tuple[Job, bool]:
        """Enqueue ``job`` unless one with its key exists; return it and whether it is new."""

    @abc.abstractmethod
    async def claim(
        self,
        *,
        queue: str,
        kinds: Sequence[str],
        owner: str,
        lease_seconds: float,
        crash_backoff_seconds: float = 10.0,
    ) -> Job | None:
        """Lease the next runnable job that is queued and due.

        Expired leases are crashes: each such job is queued again after a backoff
        (``crash_backoff_seconds``, doubled per crash, at most 10 minutes), or becomes
        ``failed`` at ``MAX_CRASHES`` (with its notice).
        """

    @abc.abstractmethod
    async def heartbeat(self, job_id: int, *, owner: str, lease_seconds: float) -> bool:
        """Extend the lease; ``False`` when ``owner`` no longer holds it."""

    @abc.abstractmethod
    async def save_result(self, job_id: int, body: str, *, version: int) -> None:
        """Keep the session result of ``job_id`` (JSON text of schema ``version``), in
        place of an earlier attempt's: later jobs of the same change read it on any host."""

    @abc.abstractmethod
    async def load_result(self, job_id: int) -> tuple[int, str] | None:
        """The session result kept for ``job_id``: its schema version and JSON text."""

    @abc.abstractmethod
    async def complete(self, job_id: int, *, owner: str, result: dict[str, Any]) -> bool:
        """Mark the job succeeded, only if ``owner`` still holds the lease."""

    @abc.abstractmethod
    async def retry_later(
        self, job_id: int, *, owner: str, error: str, delay_seconds: float
    ) -> bool:
        """Put the job back in the queue after a failed attempt."""

    @abc.abstractmethod
    async def fail(self, job_id: int, *, owner: str, error: str) -> bool:
        """Mark the job failed for good, with the reason."""

    @abc.abstractmethod
    async def release(self, job_id: int, *, owner: str) -> bool:
        """Give the job back untouched (shutdown): queued again, the attempt not counted."""

    @abc.abstractmethod
    async def get_job(self, job_id: int) -> Job | None: ...

    @abc.abstractmethod
    async def list_jobs(
        self, *, kind: str | None = None, state: str | None = None
    ) -> list[Job]: ...

    @abc.abstractmethod
    async def jobs_with_key(self, kind: str, prefix: str) -> list[Job]:
        """The jobs of ``kind`` whose idempotency key starts with ``prefix``, oldest first."""

    @abc.abstractmethod
    async def cancel_queued(
        self, kind: str, prefix: str, *, reason: str, delivery_id: str | None = None
    ) -> list[int]:
        """End, without running them, the queued jobs of ``kind`` whose key starts with
        ``prefix``: succeeded with ``{"status": "cancelled", "reason": ...}``, each audited
        (``job.cancelled``). A running job is left to finish. Their ids."""


class Journal(abc.ABC):
    """Deliveries as received, the audit log, and the answers given once."""

    @abc.abstractmethod
    async def record_delivery(self, delivery: Delivery, *, jobs: Sequence[NewJob] = ()) -> bool:
        """Store ``delivery`` and enqueue ``jobs`` in one transaction.

        Returns ``False`` (and changes nothing) when a delivery with that id exists.
        """

    @abc.abstractmethod
    async def get_delivery(self, delivery_id: str) -> Delivery | None: ...

    @abc.abstractmethod
    async def count_deliveries(self) -> int: ...

    @abc.abstractmethod
    async def audit(self, action: str, **fields: Unpack[AuditFields]) -> None: ...

    @abc.abstractmethod
    async def query_audit(self, query: AuditQuery) -> list[AuditEntry]: ...

    @abc.abstractmethod
    async def claim_once(self, key: str) -> bool:
        """True for the first caller with ``key``, in any process; False after that."""

    @abc.abstractmethod
    async def release_once(self, key: str) -> None:
        """Forget ``key`` (the answer it guarded could not be given; a retry may)."""


class RepoState(abc.ABC):
    """Per installation and repository: covered repositories, model spend, pauses,
    GitHub's rate limits, the dashboard issue."""

    @abc.abstractmethod
    async def set_installation(
        self, installation_id: int, *, account: str | None, active: bool
    ) -> None: ...

    @abc.abstractmethod
    async def add_installation_repos(self, installation_id: int, repos: Sequence[str]) -> None: ...

    @abc.abstractmethod
    async def remove_installation_repos(
        self, installation_id: int, repos: Sequence[str] | None = None
    ) -> None:
        """Forget ``repos`` (all of the installation's when ``None``)."""

    @abc.abstractmethod
    async def installation_for_repo(self, repo: str) -> int | None:
        """The active installation on ``repo`` (owner/name, any letter case: GitHub
        names are case-insensitive), or ``None``."""

    @abc.abstractmethod
    async def installed_repos(self) -> dict[str, int]: ...

    @abc.abstractmethod
    async def add_model_spend(self, installation_id: int, *, day: str, spend: ModelSpend) -> None:
        """Add ``spend`` to the installation's total for ``day`` (``YYYY-MM-DD``, UTC)."""

    @abc.abstractmethod
    async def model_spend(self, installation_id: int, *, day: str) -> ModelSpend: ...

    @abc.abstractmethod
    async def set_pause(
        self, repo: str, *, paused: bool, actor: str, reason: str | None = None
    ) -> bool:
        """Pause or resume ``repo``; True when that changed its state.

        A change is audited (``repo.paused`` / ``repo.resumed``) in the same
        transaction; pausing a paused repository (or resuming a running one) changes
        nothing, not even the recorded actor or reason, and returns False.
        """

    @abc.abstractmethod
    async def get_pause(self, repo: str) -> Pause | None: ...

    @abc.abstractmethod
    async def pauses(self) -> list[Pause]:
        """Every paused repository, by name."""

    @abc.abstractmethod
    async def pause_requests(self, scope: str, until: float) -> None:
        """No GitHub request of ``scope`` (an installation id, or ``app``) leaves before
        ``until`` (epoch seconds), in any process; a later ``until`` only extends it."""

    @abc.abstractmethod
    async def requests_paused_until(self, scope: str) -> float:
        """Until when ``scope``'s GitHub requests wait (0 when they do not)."""

    @abc.abstractmethod
    async def dashboard_issue(self, repo: str) -> tuple[int | None, str | None]:
        """``repo``'s dashboard issue, if Patchwarden opened one, and the SHA-256 of the
        body it last wrote there (an update that would change nothing is skipped)."""

    @abc.abstractmethod
    async def set_dashboard_issue(self, repo: str, issue_number: int, body_sha: str) -> None: ...


class Learning(abc.ABC):
    """What became of each job, and earned autonomy's records (app/policy/learn.py)."""

    @abc.abstractmethod
    async def save_outcome(self, outcome: Outcome) -> None:
        """Insert ``outcome``, or replace the one saved for the same ``job_id``."""

    @abc.abstractmethod
    async def get_outcome(self, job_id: int) -> Outcome | None: ...

    @abc.abstractmethod
    async def find_outcomes(
        self,
        *,
        repo: str | None = None,
        pr_number: int | None = None,
        head_sha: str | None = None,
        merge_sha: str | None = None,
        since: float | None = None,
    ) -> list[Outcome]:
        """Outcomes matching every filter given (``since``: created then or later),
        oldest first (by ``created_at``, then ``job_id``)."""

    @abc.abstractmethod
    async def add_trust_event(self, event: TrustEvent) -> None:
        """Record a pull request closed unmerged or a maintainer's reset, audited in the
        same transaction; a reset also forgets the standings it covers."""

    @abc.abstractmethod
    async def trust_events(self, repo: str, *, since: float | None = None) -> list[TrustEvent]:
        """``repo``'s trust events at ``since`` or later, oldest first."""

    @abc.abstractmethod
    async def set_standing(
        self, standing: TrustStanding, *, job_id: int | None = None
    ) -> TrustStanding | None:
        """Keep what a kind of change stands at now, and return what it stood at before
        (None: never scored, or reset since). A change of state (promoted, demoted,
        back to the base) is audited in the same transaction."""

    @abc.abstractmethod
    async def standings(self, repo: str | None = None) -> list[TrustStanding]:
        """The standings last scored, by repository and kind."""


class CheckHistory(abc.ABC):
    """The watch on the default branch (app/policy/watch_rules.py): checks and findings."""

    @abc.abstractmethod
    async def record_check(self, record: CheckRecord) -> bool:
        """Keep a check completed on the default branch; False when GitHub's run or
        status (``source`` + ``external_id``) is recorded already (a redelivery)."""

    @abc.abstractmethod
    async def check_history(self, repo: str, *, since: float) -> list[CheckRecord]:
        """``repo``'s checks completed at ``since`` or later, oldest first."""

    @abc.abstractmethod
    async def watch_findings(self, repo: str) -> list[WatchFinding]:
        """The issues kept for ``repo``'s findings, by key."""

    @abc.abstractmethod
    async def save_finding(self, finding: WatchFinding, *, audit: str | None = None) -> None:
        """Keep ``finding`` (insert or update by repository and key); with ``audit``, an
        audit entry of that action in the same transaction."""
