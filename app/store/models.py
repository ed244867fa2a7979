"""Plain records the store reads and writes. No I/O here."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, TypedDict


class JobState(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True)
class Delivery:
    """A webhook delivery (or an alert) as it was received."""

    id: str
    source: str  # "github" | "alerts"
    event: str
    action: str | None
    installation_id: int | None
    repo: str | None
    sender: str | None
    payload: dict[str, Any]
    received_at: float


@dataclass(frozen=True)
class NewJob:
    """What a handler asks the queue to do. ``key`` makes it idempotent."""

    kind: str
    key: str
    payload: dict[str, Any] = field(default_factory=dict)
    queue: str = "sessions"
    repo: str | None = None
    installation_id: int | None = None
    delivery_id: str | None = None
    max_attempts: int | None = None
    run_after: float | None = None  # not before then (epoch seconds); None: at once


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    queue: str
    key: str
    repo: str | None
    installation_id: int | None
    delivery_id: str | None
    payload: dict[str, Any]
    state: JobState
    attempts: int
    max_attempts: int
    run_after: float
    lease_owner: str | None
    lease_expires_at: float | None
    last_error: str | None
    result: dict[str, Any] | None
    created_at: float
    updated_at: float
    crashes: int = 0  # runs whose worker stopped without finishing (not the job's own error)

    @property
    def errors(self) -> int:
        """Runs that ended in the job's own error (or are running now)."""
        return self.attempts - self.crashes


# A job whose worker stops this many times without finishing fails: a crash loop.
MAX_CRASHES = 8
MAX_BACKOFF_SECONDS = 600.0


def backoff(base_seconds: float, n: int) -> float:
    """How long a job waits before its next run after its ``n``-th error or crash:
    doubling from ``base_seconds``, at most ten minutes."""
    return min(base_seconds * 2.0 ** max(n - 1, 0), MAX_BACKOFF_SECONDS)


# The kind of job that tells the person who asked that a job failed (app/jobs/notice.py).
FAILURE_NOTICE = "failure_notice"


class AuditFields(TypedDict, total=False):
    """What an audit entry says beside its action (each optional), written once for the
    journal's ``audit`` and the rows other changes write in their own transaction."""

    actor: str | None
    repo: str | None
    job_id: int | None
    delivery_id: str | None
    reason: str | None
    details: dict[str, Any] | None


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: float
    action: str
    actor: str | None
    repo: str | None
    job_id: int | None
    delivery_id: str | None
    reason: str | None
    details: dict[str, Any]


@dataclass(frozen=True)
class AuditQuery:
    repo: str | None = None
    job_id: int | None = None
    since: float | None = None
    limit: int = 1000
    action_prefix: str | None = None  # "trust.": only those actions


@dataclass(frozen=True)
class MetricsSnapshot:
    """Counts read from the database at one moment, for ``GET /metrics``: the same for
    every process that shares it, and the same numbers the audit and outcomes show."""

    deliveries: dict[tuple[str, str], int]  # (source, event) -> stored deliveries
    jobs: dict[tuple[str, str], int]  # (kind, state) -> jobs
    queued: dict[str, int]  # queue -> jobs due to run and not running yet
    oldest_waiting: dict[str, float]  # queue -> seconds the longest-waiting due job waits
    decisions: dict[str, int]  # decision -> outcomes scored so
    merges: dict[str, int]  # how (auto, approved, manual) -> merged changes (no reverts)
    reverts: int  # Patchwarden's merges reverted (their revert merged)
    model: ModelSpend  # every installation, every day


@dataclass(frozen=True)
class ModelSpend:
    """What one installation's jobs spent on models on one UTC day."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class Outcome:
    """What became of one job: its PR, decision, merge and revert. One row per job."""

    job_id: int
    repo: str
    kind: str  # "fix" | "alert" | "revert"
    trigger: str  # "comment" | "label" | "ci" | "alert" | "canary" | "request"
    created_at: float
    issue_number: int | None = None
    requested_by: str | None = None
    status: str = "running"  # running | published | rejected | no-change | failed | refused
    decision: str | None = None  # reject | draft | review | automerge
    score: int | None = None
    risk: str | None = None  # low | medium | high
    pr_number: int | None = None
    branch: str | None = None
    base_sha: str | None = None
    head_sha: str | None = None
    pr_opened_at: float | None = None
    merged_at: float | None = None
    merged_how: str | None = None  # "auto" | "approved" | "manual"
    merged_by: str | None = None
    merge_sha: str | None = None
    reverted_by_pr: int | None = None  # the revert PR opened for this job's merge
    revert_of_pr: int | None = None  # this job's PR reverts that PR
    tokens: int = 0
    cost_usd: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)  # the score, factor by factor
    # Written when the change is scored and published; what its merge job reads:
    title: str = ""  # the change's title (the pull request's, without the revert's prefix)
    links: tuple[str, ...] = ()  # Patchwarden's own lines in the body: Fixes #n, Reverts #m
    pr_url: str | None = None
    reverts: str | None = None  # "bot" | "human": whose merge or commit the change reverts
    merge_method: str = "merge"  # policy merge.method on the base branch it was judged by
    two_person: bool = True  # policy merge.two_person (unknown: the stricter rule)
    canary_minutes: float = 0.0  # policy merge.canary_minutes (0: no canary)
    # The merge job's own state, kept across its runs:
    ship_it: dict[str, str] = field(default_factory=dict)  # writer -> head they said it for
    merge_said: str | None = None  # the merge comment's current text
    refused_head: str | None = None  # GitHub refused to merge this head...
    refused_why: str | None = None  # ...saying this (not tried again for it by itself)
    category: str | None = None  # its kind of change, as earned autonomy counts it (learn)

    @property
    def is_revert(self) -> bool:
        """A revert pull request, whoever asked for it: ``@patchwarden revert``, the canary,
        or the culprit finder reverting a person's commit. It is never a merged change."""
        return self.kind == "revert" or self.reverts is not None


@dataclass(frozen=True)
class Pause:
    """A repository on which Patchwarden is paused: who paused it, when and why."""

    repo: str
    actor: str
    at: float
    reason: str | None = None


@dataclass(frozen=True)
class TrustEvent:
    """What moves a kind of change's standing in a repository besides its merges and
    reverts (those are outcomes): a pull request a person closed unmerged (``rejected``),
    a maintainer's ``trust reset`` (``category`` ``*``: every kind)."""

    repo: str
    what: str  # "rejected" | "reverted" (by a person's pull request) | "reset"
    category: str
    at: float
    actor: str | None = None
    pr_number: int | None = None


@dataclass(frozen=True)
class TrustStanding:
    """What a kind of change had earned in a repository when Patchwarden last scored one
    (``audit --outcomes`` shows it; a change of state is audited)."""

    repo: str
    category: str
    autonomy: str  # propose | review | automerge
    state: str  # base | earned | demoted
    explanation: str
    at: float


@dataclass(frozen=True)
class CheckRecord:
    """A check run or commit status that completed on a repository's default branch,
    as GitHub reported it: what the watch reads (app/policy/watch_rules.py)."""

    repo: str
    check: str  # the check run's name, or the status's context
    sha: str
    conclusion: str  # success, failure, timed_out, cancelled, neutral, skipped, error
    completed_at: float
    started_at: float | None = None
    source: str = "check_run"  # check_run | status
    external_id: str = ""  # GitHub's id of the run or status: a redelivery is one record


@dataclass(frozen=True)
class WatchFinding:
    """The issue Patchwarden keeps for one finding of the watch (``key``: kind:check)."""

    repo: str
    key: str
    issue_number: int
    state: str  # open | gone (no longer seen) | ignored | closed
    title: str
    first_seen: float
    last_seen: float
    body_sha: str = ""  # the body last written (an edit that changes nothing is skipped)
