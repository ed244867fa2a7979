"""What a coding session is asked to do: the ``Task`` (its title, its documents, and
what a trigger knows: a stack trace's places, an advisory, a code scanning alert), the
model ``Budget`` and the ``SessionSpec`` a job hands to app/sessions/session.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from app.git import LOCAL_AUTHOR, Author, Remote

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Document:
    """Text from someone other than the requester (an issue body, a comment, an alert
    payload, a failing check's output). Fixers treat it as data: sanitised and fenced
    (:mod:`app.untrusted.sanitize`) before any model sees it."""

    source: str  # "issue #12 body", "comment by @octocat", "alert payload"
    text: str


@dataclass(frozen=True)
class Place:
    """Where an alert says the failure happened (a stack frame of the application's
    code): a path as the running program named it, which may be absolute or start
    elsewhere than the repository's root (the fixer finds the file it means)."""

    path: str
    line: int | None = None
    function: str | None = None


@dataclass(frozen=True)
class Advisory:
    """A Dependabot alert's facts: names, versions and ids (its texts are documents)."""

    package: str
    ecosystem: str
    manifest: str | None
    vulnerable_range: str
    first_patched: str | None
    id: str  # GHSA id
    cve: str | None = None
    severity: str = ""
    url: str = ""
    summary: str = ""  # the advisory's summary (sanitised at intake; untrusted)


@dataclass(frozen=True)
class ScanAlert:
    """A code scanning alert's facts: the tool, the rule and where it was found."""

    tool: str  # "semgrep", "CodeQL", ...
    rule: str  # the rule's id as the tool reported it
    path: str
    start_line: int
    end_line: int | None = None
    number: int = 0  # the alert's number in the repository


@dataclass(frozen=True)
class Task:
    """What a session is asked to do."""

    title: str  # one line: names the branch and the commit
    # What asked: a request for a fix (an issue, a person), or a failing check or alert.
    kind: Literal["fix", "alert"] = "fix"
    fixer: str | None = None  # the fixer a person asked for by name; None: the App chooses
    instructions: str = ""  # the requester's own words (a writer's command, --task)
    documents: tuple[Document, ...] = ()  # untrusted context
    check: str | None = None  # alert from CI: the failing check's name
    good: str | None = None  # alert: the last commit known to pass, if the caller knows it
    culprit: str | None = None  # revert exactly this commit (the canary, `@patchwarden revert`)
    monitoring: bool = False  # alert from monitoring (/alerts): its tests pass as a rule
    places: tuple[Place, ...] = ()  # a stack trace's frames in the application, innermost first
    advisory: Advisory | None = None  # a Dependabot alert: the package to raise past it
    scan: ScanAlert | None = None  # a code scanning alert: the rule and its place

    @property
    def words(self) -> str:
        """Everything the task says, in one string: title, instructions, documents (for
        matching only; documents stay untrusted data)."""
        return " ".join([self.title, self.instructions, *(d.text for d in self.documents)])


@dataclass(frozen=True)
class Budget:
    """Limits on one job's model use (docs/configuration.md#the-llm-fixer)."""

    max_steps: int = 40  # model turns
    max_tokens: int = 400_000  # prompt + completion, all turns
    max_cost_usd: float | None = 2.0  # None: no cap (a local model costs nothing)
    daily_usd: float | None = 20.0  # per installation per UTC day; None: no cap


@dataclass(frozen=True)
class SessionSpec:
    remote: Remote
    task: Task
    job_id: int | None = None
    base: str | None = None  # a sha or ref of the repository; None = default branch tip
    installation_id: int | None = None  # whose daily model budget the job spends
    budget: Budget = field(default_factory=Budget)
    branch: str | None = None  # default: patchwarden/<job>-<slug>; an update keeps its PR's
    # `setup:`/`test:` for this session over the base branch's config (patchwarden run)
    commands: Mapping[str, Any] = field(default_factory=dict)
    author: Author = LOCAL_AUTHOR  # the App's bot user, when a job knows it


def quiet(message: str) -> None:
    """The default progress callback: nothing shown."""
