"""The kinds of job, typed: what the intake and the webhook handlers ask the workers to do.

Each kind is a frozen model with its queue, its idempotency key and its payload. The
intake (``server.py``) and the handlers (``app/webhooks/``) build these, never dicts; a
job handler reads its job back with :meth:`JobKind.of`, which fails the job for good,
saying why, when its payload is not one this version can read.

The payload's keys are the same as before kinds were typed, and a field added since
has a default, so jobs queued by an earlier version still run after an upgrade.

This module is the contract between the intake and the workers: it imports the store's
records and the queues' names, nothing of the handlers or the jobs (tests/test_architecture.py).
"""

from __future__ import annotations

from typing import ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.errors import PermanentJobError
from app.queue import EVENTS_QUEUE, SESSIONS_QUEUE
from app.store.models import FAILURE_NOTICE, Job, NewJob

MergeReason = Literal["opened", "approval", "ship-it", "merged", "checks"]


class JobKind(BaseModel):
    """One kind of job. Subclasses set ``kind`` and ``queue`` and define ``key``."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: ClassVar[str]
    queue: ClassVar[str] = SESSIONS_QUEUE
    # Whether the repository's dashboard issue is brought up to date after it. Not after
    # a delivery: GitHub sends the App the `issues.edited` of its own dashboard edit, and
    # an update after each delivery would edit the dashboard again, forever.
    updates_dashboard: ClassVar[bool] = False

    @property
    def key(self) -> str:
        """Idempotency: a second job with the same key is not queued."""
        raise NotImplementedError

    @property
    def target(self) -> str | None:
        """The repository the job acts on."""
        return getattr(self, "repo", None)

    @property
    def thread(self) -> int | None:
        """The issue or pull request where a person waits to hear of the job, if any."""
        return None

    @property
    def requester(self) -> str | None:
        """Who asked for it (audited as the actor), if a person did."""
        return None

    def new_job(
        self,
        *,
        installation_id: int | None,
        delivery_id: str | None = None,
        run_after: float | None = None,
    ) -> NewJob:
        return NewJob(
            kind=self.kind,
            key=self.key,
            queue=self.queue,
            repo=self.target,
            installation_id=installation_id,
            delivery_id=delivery_id,
            payload=self.model_dump(mode="json"),
            run_after=run_after,
        )

    @classmethod
    def of(cls, job: Job) -> Self:
        """The job's payload as this kind; a payload it cannot read fails the job."""
        if job.kind != cls.kind:
            raise PermanentJobError(f"job {job.id} is a {job.kind!r} job, not {cls.kind!r}")
        try:
            return cls.model_validate(job.payload)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "payload"
            raise PermanentJobError(
                f"job {job.id} ({job.kind}) has a payload this version cannot read "
                f"({where}: {first['msg']}); it was queued by another version, or by hand"
            ) from None


class DeliveryJob(JobKind):
    """Route a stored webhook delivery to its handlers."""

    kind: ClassVar[str] = "delivery"
    queue: ClassVar[str] = EVENTS_QUEUE
    delivery_id: str
    repo: str | None = None  # the delivery's, if it names one

    @property
    def key(self) -> str:
        return f"delivery:{self.delivery_id}"


class FixJob(JobKind):
    """`@patchwarden fix this` (or a fixer's own word: `lint`), or the fix label, on an issue."""

    kind: ClassVar[str] = "fix"
    updates_dashboard: ClassVar[bool] = True
    repo: str
    issue_number: int
    ref: str = ""  # the request: ``comment:<id>`` or ``label:<delivery id>``
    issue_title: str = ""
    trigger: Literal["comment", "label"] = "comment"
    comment_id: int | None = None
    requested_by: str | None = None
    instructions: str = ""
    # "fix": the App chooses the fixer; else the name of the fixer the command asked for
    # (`@patchwarden lint`), which app/fixers/registry.py knows
    mode: str = Field(default="fix", pattern=r"^[a-z][a-z0-9-]{0,39}$")
    asked_at: float | None = None  # when the request was made (kept by a request that waits)

    @property
    def key(self) -> str:
        return f"fix:{self.repo}#{self.issue_number}:{self.ref}"

    @property
    def thread(self) -> int:
        return self.issue_number

    @property
    def requester(self) -> str | None:
        return self.requested_by


class AlertFrame(BaseModel):
    """A stack frame of the application's code an alert names (``app.alerts.Frame``)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    path: str
    line: int | None = None
    function: str | None = None


class AlertJob(JobKind):
    """A check failing on the default branch (``sha`` set), or a monitoring alert."""

    kind: ClassVar[str] = "alert"
    updates_dashboard: ClassVar[bool] = True
    repo: str
    source: str  # the event (check_run, workflow_run, status), alertmanager, generic
    fingerprint: str = ""  # ``ci:<sha>``, or the alert's own stable identity
    title: str = ""
    body: str = ""
    labels: dict[str, str] = {}
    url: str | None = None
    frames: list[AlertFrame] = []  # Sentry: the application's stack frames, innermost first
    # A failing check only:
    sha: str | None = None
    branch: str | None = None
    name: str | None = None
    conclusion: str | None = None

    @property
    def key(self) -> str:
        return f"alert:{self.repo}:{self.fingerprint}"

    @property
    def monitoring(self) -> bool:
        """Posted to ``/alerts``, not a check failing on a commit."""
        return self.sha is None


class SecurityAlertJob(JobKind):
    """A Dependabot or code scanning alert that asks for a fix: one job per
    opening of an alert (``round``), built by app/webhooks/security_alerts.py. The
    advisory's and the rule's texts are their authors': untrusted, fenced before any
    prompt or page shows them."""

    kind: ClassVar[str] = "security_alert"
    updates_dashboard: ClassVar[bool] = True
    repo: str
    source: Literal["dependabot", "code_scanning"]
    number: int  # the alert's number in the repository
    round: int = 1  # 1: its first opening; reopened, reintroduced: 2, 3, ...
    action: str = ""  # what opened it: created, reopened, appeared_in_branch, ...
    url: str = ""  # the alert on GitHub
    severity: str = ""  # low | medium | high | critical
    mode: Literal["review", "within-autonomy"] = "review"  # the policy's, at intake
    model: bool = False  # code scanning: a model may write the fix (policy)
    summary: str = ""  # the advisory's summary, the rule's description
    description: str = ""  # the advisory's description, the rule's full one, the message
    # Dependabot: the package, where it is declared, what is vulnerable, what is fixed
    ecosystem: str = ""
    package: str = ""
    manifest: str | None = None
    vulnerable_range: str = ""
    first_patched: str | None = None
    advisory: str = ""  # GHSA id
    cve: str | None = None
    # Code scanning: the tool, the rule and the most recent instance's place
    tool: str = ""
    rule: str = ""
    path: str | None = None
    start_line: int | None = None
    end_line: int | None = None

    @staticmethod
    def prefix(repo: str, source: str, number: int) -> str:
        """The start of the keys of every job for one alert (every round of it)."""
        return f"security_alert:{repo}:{source}#{number}:"

    @property
    def key(self) -> str:
        return f"{self.prefix(self.repo, self.source, self.number)}{self.round}"


class RevertJob(JobKind):
    """Revert one of Patchwarden's merges: by the canary, or `@patchwarden revert`."""

    kind: ClassVar[str] = "revert"
    updates_dashboard: ClassVar[bool] = True
    repo: str
    pr: int
    trigger: Literal["canary", "request"] = "request"
    why: str = ""
    requested_by: str | None = None
    # the canary's culprit search, in words: its revert says what a person's would
    evidence: str = ""

    @property
    def key(self) -> str:
        # The canary and `@patchwarden revert` share it: a merge is reverted at most once.
        return f"revert:{self.repo}#{self.pr}"

    @property
    def thread(self) -> int:
        return self.pr

    @property
    def requester(self) -> str | None:
        return self.requested_by


class UpdateJob(JobKind):
    """The base moved: carry job ``job``'s scored patch onto ``base`` and verify again."""

    kind: ClassVar[str] = "update"
    updates_dashboard: ClassVar[bool] = True
    repo: str
    pr: int
    job: int
    base: str = ""  # the base branch's tip it was asked for

    @property
    def key(self) -> str:
        return f"update:{self.repo}#{self.pr}:{self.base}"

    @property
    def thread(self) -> int:
        return self.pr


class MergeJob(JobKind):
    """An event that may let a Patchwarden pull request merge."""

    kind: ClassVar[str] = "merge"
    updates_dashboard: ClassVar[bool] = True
    queue: ClassVar[str] = EVENTS_QUEUE
    repo: str
    pr: int
    reason: MergeReason
    actor: str | None = None
    ref: str = ""  # the delivery, or the head it was opened at

    @property
    def key(self) -> str:
        return f"merge:{self.repo}#{self.pr}:{self.reason}:{self.ref}"

    @property
    def thread(self) -> int:
        return self.pr

    @property
    def person_asked(self) -> bool:
        """A writer's approval or `ship it`: a refusal of GitHub's is tried again."""
        return self.reason in ("approval", "ship-it")


class FailureNotice(JobKind):
    """Tell the person who asked that job ``job_id`` failed for good (queued by the store,
    in the transaction that fails the job)."""

    kind: ClassVar[str] = FAILURE_NOTICE
    updates_dashboard: ClassVar[bool] = True
    queue: ClassVar[str] = EVENTS_QUEUE
    job_id: int

    @property
    def key(self) -> str:
        return f"{FAILURE_NOTICE}:{self.job_id}"


class DashboardJob(JobKind):
    """Bring the repository's dashboard issue up to date. Queued after each job there, to
    run when its window (``PATCHWARDEN_DASHBOARD_SECONDS`` long) ends: the jobs of a
    window share one update, which sees them all."""

    kind: ClassVar[str] = "dashboard"
    queue: ClassVar[str] = EVENTS_QUEUE
    repo: str
    window: int  # time.time() // DASHBOARD_SECONDS when it was asked for
    # Asked for at once by a delivery (a pause or a resume): one update per delivery,
    # run now rather than at the window's end.
    delivery: str | None = None

    @property
    def key(self) -> str:
        if self.delivery is not None:
            return f"dashboard:{self.repo}:delivery:{self.delivery}"
        return f"dashboard:{self.repo}:{self.window}"


class WatchJob(JobKind):
    """Read the default branch's check history and bring the watch's issues up to date.
    Queued when a check completes there, to run when its window (the dashboard's) ends:
    the checks of a window share one run."""

    kind: ClassVar[str] = "watch"
    queue: ClassVar[str] = EVENTS_QUEUE
    repo: str
    window: int  # time.time() // PATCHWARDEN_DASHBOARD_SECONDS when a check completed

    @property
    def key(self) -> str:
        return f"watch:{self.repo}:{self.window}"


KINDS: dict[str, type[JobKind]] = {
    k.kind: k
    for k in (
        DeliveryJob,
        FixJob,
        AlertJob,
        SecurityAlertJob,
        RevertJob,
        UpdateJob,
        MergeJob,
        FailureNotice,
        DashboardJob,
        WatchJob,
    )
}


def parse(job: Job) -> JobKind:
    """Any job as its kind; an unknown kind or an unreadable payload fails it."""
    kind = KINDS.get(job.kind)
    if kind is None:
        raise PermanentJobError(f"job {job.id} is of a kind this version does not know: {job.kind}")
    return kind.of(job)


def thread_of(job: Job) -> int | None:
    """Where a person waits to hear of ``job``; None when there is nobody, or its payload
    cannot be read (a failed job is still listed)."""
    try:
        return parse(job).thread
    except PermanentJobError:
        return None
