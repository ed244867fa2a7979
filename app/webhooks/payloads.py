"""The shape of a delivery, checked before anything acts on it.

A correctly signed body can still be anything: GitHub's own payloads never nest 10,000
deep, name an installation ``[7]`` or an issue ``"1; DROP"``, but a leaked webhook
secret, a proxy that mangles bodies or a bug upstream can send exactly that. So intake
(:mod:`app.server`) and the delivery job (:func:`app.webhooks.route_delivery`) both run
:func:`check` first: a body nested too deep or with a string that is not valid Unicode
(:mod:`app.untrusted.json_body`), or an event Patchwarden handles that lacks a field
its handler reads (or has it with the wrong type or out of bounds) is
:class:`Invalid`, with a short reason.
Intake answers it 400, audits it and creates no job; a handler never sees it.

The models list the fields Patchwarden reads, nothing more (``extra="ignore"``): GitHub
adds fields all the time. Numbers are strict (``"7"`` is not an installation id) and
bounded (ids fit SQLite's 64-bit integers), names follow GitHub's own rules (an
``owner/name`` of at most 140 characters), texts are capped at GitHub's own limits.
The delivery job reads the body into its model once (:func:`check`); its handlers and
the pure screens of :mod:`app.webhooks.triggers` receive that model, never the dict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from app.untrusted.json_body import unsound

INT64_MAX = 2**63 - 1

Id = Annotated[int, Field(strict=True, ge=1, le=INT64_MAX)]
Number = Annotated[int, Field(strict=True, ge=1, le=2**31 - 1)]
# GitHub logins: letters, digits and single hyphens, at most 39; Apps end in [bot];
# Enterprise Managed Users add an _shortcode.
Login = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}(?:\[bot\])?$")]
RepoName = Annotated[
    str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,38}/[A-Za-z0-9_.-]{1,100}$")
]
Sha = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")]
Word = Annotated[str, StringConstraints(max_length=100)]  # an action, a state, a slug
Name = Annotated[str, StringConstraints(max_length=1024)]  # a branch, a check, a label
Title = Annotated[str, StringConstraints(max_length=1024)]  # GitHub caps titles at 256
Body = Annotated[str, StringConstraints(max_length=262_144)]  # GitHub caps bodies at 65,536
Url = Annotated[str, StringConstraints(max_length=2048)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class User(_Model):
    login: Login
    type: Word | None = None


class Repository(_Model):
    full_name: RepoName
    default_branch: Name | None = None


class Account(_Model):
    login: Login | None = None


class Installation(_Model):
    id: Id
    account: Account | None = None


class Envelope(_Model):
    """What every delivery is read for: intake stores these, routing uses ``action``."""

    action: Word | None = None
    installation: Installation | None = None
    repository: Repository | None = None
    sender: User | None = None


class Issue(_Model):
    number: Number
    title: Title = ""
    body: Body | None = None
    pull_request: dict[str, Any] | None = None
    user: User | None = None


class Comment(_Model):
    id: Id
    body: Body | None = None
    user: User | None = None


class IssueCommentEvent(Envelope):
    repository: Repository
    issue: Issue
    comment: Comment


class Label(_Model):
    name: Name


class IssuesEvent(Envelope):
    repository: Repository
    issue: Issue
    label: Label | None = None


class PullRequest(_Model):
    number: Number
    merged: bool | None = None
    merge_commit_sha: Sha | None = None
    body: Body | None = None


class Review(_Model):
    state: Word
    user: User | None = None


class PullRequestEvent(Envelope):
    repository: Repository
    pull_request: PullRequest


class PullRequestReviewEvent(Envelope):
    repository: Repository
    pull_request: PullRequest
    review: Review


class App(_Model):
    slug: Word | None = None


class CheckSuite(_Model):
    head_branch: Name | None = None
    head_sha: Sha | None = None
    app: App | None = None
    pull_requests: list[dict[str, Any]] = []


class CheckRun(_Model):
    name: Name
    head_sha: Sha
    id: Id | None = None
    status: Word | None = None
    started_at: Word | None = None  # ISO 8601, as GitHub writes it
    completed_at: Word | None = None
    conclusion: Word | None = None
    html_url: Url | None = None
    app: App | None = None
    check_suite: CheckSuite | None = None
    pull_requests: list[dict[str, Any]] = []


class CheckRunEvent(Envelope):
    repository: Repository
    check_run: CheckRun


class CheckSuiteEvent(Envelope):
    repository: Repository
    check_suite: CheckSuite


class WorkflowRun(_Model):
    name: Name | None = None
    head_sha: Sha
    head_branch: Name | None = None
    conclusion: Word | None = None
    html_url: Url | None = None
    head_repository: Repository | None = None


class WorkflowRunEvent(Envelope):
    repository: Repository
    workflow_run: WorkflowRun


class Branch(_Model):
    name: Name


class StatusEvent(Envelope):
    repository: Repository
    sha: Sha
    state: Word
    id: Id | None = None
    updated_at: Word | None = None
    context: Name | None = None
    target_url: Url | None = None
    branches: list[Branch] = []


class RepoRef(_Model):
    full_name: RepoName


class InstallationEvent(Envelope):
    installation: Installation
    repositories: list[RepoRef] | None = None


class InstallationRepositoriesEvent(Envelope):
    installation: Installation
    repositories_added: list[RepoRef] = []
    repositories_removed: list[RepoRef] = []


# GitHub's own security alerts. The texts (an advisory's description, a rule's
# help) are the advisory's or the tool's author's: untrusted, fenced before a prompt.
Line = Annotated[int, Field(strict=True, ge=0, le=2**31 - 1)]


class AlertPackage(_Model):
    ecosystem: Word
    name: Name


class AlertDependency(_Model):
    package: AlertPackage
    manifest_path: Name | None = None


class PatchedVersion(_Model):
    identifier: Name


class Vulnerability(_Model):
    severity: Word
    vulnerable_version_range: Name
    first_patched_version: PatchedVersion | None = None


class Advisory(_Model):
    ghsa_id: Word
    cve_id: Word | None = None
    summary: Title = ""
    description: Body | None = None
    severity: Word


class DependabotAlert(_Model):
    number: Number
    state: Word
    dependency: AlertDependency
    security_advisory: Advisory
    security_vulnerability: Vulnerability
    html_url: Url


class DependabotAlertEvent(Envelope):
    """https://docs.github.com/en/webhooks/webhook-events-and-payloads#dependabot_alert"""

    repository: Repository
    alert: DependabotAlert


class ScanRule(_Model):
    id: Name
    severity: Word | None = None  # none, note, warning, error
    security_severity_level: Word | None = None  # low .. critical, for security rules
    description: Title = ""
    full_description: Body | None = None
    tags: list[Name] | None = None


class ScanTool(_Model):
    name: Name
    version: Name | None = None


class ScanLocation(_Model):
    path: Name | None = None
    start_line: Line | None = None
    end_line: Line | None = None
    start_column: Line | None = None
    end_column: Line | None = None


class ScanMessage(_Model):
    text: Body | None = None


class ScanInstance(_Model):
    ref: Name | None = None
    message: ScanMessage | None = None
    location: ScanLocation | None = None


class CodeScanningAlert(_Model):
    number: Number
    state: Word
    rule: ScanRule
    tool: ScanTool
    html_url: Url
    most_recent_instance: ScanInstance | None = None
    instances: list[ScanInstance] | None = None  # the older shape, which the schema requires


class CodeScanningAlertEvent(Envelope):
    """https://docs.github.com/en/webhooks/webhook-events-and-payloads#code_scanning_alert;
    ``ref`` and ``commit_oid`` are empty when a person closed or reopened the alert."""

    repository: Repository
    alert: CodeScanningAlert
    ref: Name = ""
    commit_oid: Word = ""


# The events Patchwarden's handlers read, and the model of what they read.
MODELS: dict[str, type[Envelope]] = {
    "issue_comment": IssueCommentEvent,
    "issues": IssuesEvent,
    "pull_request": PullRequestEvent,
    "pull_request_review": PullRequestReviewEvent,
    "check_run": CheckRunEvent,
    "check_suite": CheckSuiteEvent,
    "workflow_run": WorkflowRunEvent,
    "status": StatusEvent,
    "dependabot_alert": DependabotAlertEvent,
    "code_scanning_alert": CodeScanningAlertEvent,
    "installation": InstallationEvent,
    "installation_repositories": InstallationRepositoriesEvent,
}


@dataclass(frozen=True)
class Invalid:
    """Why a delivery cannot be acted on: said (400), audited (on ``repo`` if known)."""

    reason: str
    repo: str | None = None


def check(
    event: str, payload: Any, *, handled: Callable[[str, str | None], bool] = lambda e, a: True
) -> Envelope | Invalid:
    """The delivery's typed model, or why it is not one Patchwarden can act on.

    Every delivery must have a sound envelope; only one that a handler will read
    (``handled(event, action)``) must also have what that handler reads."""
    if not isinstance(payload, dict):
        return Invalid("the payload must be a JSON object")
    problem = unsound(payload)
    if problem is not None:
        return Invalid(problem)
    envelope = None
    try:
        envelope = Envelope.model_validate(payload)
        model = MODELS.get(event)
        if model is None or not handled(event, envelope.action):
            return envelope
        return model.model_validate(payload)
    except ValidationError as exc:
        repository = envelope.repository if envelope is not None else None
        return Invalid(_reason(exc), repo=repository.full_name if repository else None)


M = TypeVar("M", bound=Envelope)


def typed(model: type[M], data: Envelope) -> M:
    """A handler's view of the delivery: the model :func:`check` made of it once, before
    any handler ran (TypeError if it is another event's: a handler registered wrong)."""
    if not isinstance(data, model):
        raise TypeError(f"the delivery was read as {type(data).__name__}, not {model.__name__}")
    return data


def _reason(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "the payload"
    message = str(err["msg"])
    if err["type"] == "missing":
        message = "missing"
    elif err["type"] == "string_pattern_mismatch":
        message = "not in the form GitHub uses"
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"`{where}`: {message}{more}"[:300]
