"""``SessionResult``: what a coding session produced, typed, versioned, JSON-serialisable.

It is stored with the job and is the only thing later stages (policy, publish) read.
Every output inside has been truncated and redacted before it gets here.
Bump ``SCHEMA_VERSION`` when a field changes meaning; readers refuse versions they do
not know (:meth:`SessionResult.load`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.errors import PatchwardenError
from app.policy.evidence import (
    Bump,
    FindingsDelta,
    ModelUsage,
    Scope,
    SecretFound,
    TestDelta,
    Tool,
)
from app.policy.policy_model import Policy
from app.redact import redact

SCHEMA_VERSION: Literal[2] = 2

Phase = Literal["setup", "fix", "verify"]
Tree = Literal["base", "head"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Usage(_Model):
    """Resources one sandboxed process tree used.

    CPU and memory come from ``wait4``'s rusage where the backend lets them through;
    bwrap's reaper (PID 1 of the sandbox) does not, so they are ``None`` there.
    """

    wall_seconds: float = 0.0
    cpu_seconds: float | None = None
    max_rss_kb: int | None = None


class Step(_Model):
    """One command run in the sandbox: what, where, how it ended, what it printed."""

    name: str  # "setup", "tests", "ruff", "semgrep", "bandit", or a fixer's own step
    phase: Phase
    tree: Tree | None = None
    argv: list[str]
    exit_code: int | None  # None when it was killed (timeout, limit)
    duration_seconds: float
    timed_out: bool = False
    killed_by: str | None = None  # "timeout", "SIGKILL", "SIGXCPU", "SIGXFSZ", ...
    output: str = ""  # stdout then stderr, truncated with a marker, redacted
    output_truncated: bool = False
    usage: Usage = Field(default_factory=Usage)
    cached: bool = False  # setup: the environment came from the cache

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class FileStat(_Model):
    path: str
    old_path: str | None = None  # for renames
    status: Literal["added", "modified", "removed", "renamed", "type-changed"]
    added: int = 0
    removed: int = 0
    binary: bool = False
    old_mode: str | None = None
    new_mode: str | None = None


class Diff(_Model):
    unified: str = ""  # `git diff --binary`, redacted; cut at a size cap
    truncated: bool = False
    files: list[FileStat] = Field(default_factory=list)
    secrets: list[SecretFound] = Field(default_factory=list)  # found before masking

    @property
    def lines_added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def lines_removed(self) -> int:
        return sum(f.removed for f in self.files)


class SandboxInfo(_Model):
    backend: Literal["bwrap", "docker", "unsafe-local"]
    isolated: bool
    network: bool = False  # the untrusted phases never get a network
    uid: int | None = None
    limits: dict[str, int] = Field(default_factory=dict)


class TranscriptEntry(_Model):
    """One turn of a fixer's conversation or one tool call, redacted and capped."""

    role: Literal["system", "user", "assistant", "tool", "note"]
    content: str = ""
    tool: str | None = None  # the tool called (assistant) or answering (tool)
    arguments: str | None = None  # the call's arguments as the model sent them (JSON)


class ModuleScan(_Model):
    """The changed Python modules imported in the sandbox, their values scanned for
    credentials (app/sessions/contain.py). A module that does not import is no error:
    it is named here, and only what the others compute was seen."""

    imported: list[str] = Field(default_factory=list)  # of the patched tree
    failed: dict[str, str] = Field(default_factory=dict)  # path -> why it did not import
    found: int = 0  # credentials among the values only the patched tree's modules hold
    steps: list[str] = Field(default_factory=list)  # the steps that ran the imports


class Culprit(_Model):
    """The first bad commit the revert fixer found, and how."""

    sha: str
    subject: str
    author: str
    pull_request: int | None = None  # from "Merge pull request #N" or a "(#N)" subject
    merge: bool = False  # reverted with -m 1
    good: str  # the last good commit bisect started from
    tested: int = 0  # test runs in all: reproductions, probes for ``good``, bisect steps
    bisect_log: str = ""
    # What the search showed, in words: which runs failed and how often, the last passing
    # commit, what was tested (empty when the caller named the commit)
    evidence: str = ""


class RepairReport(_Model):
    """What the llm fixer's repair strategy did, for the pull request and the eval. A
    stored report's keys this version no longer has are dropped when it is read."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    suspects: list[str] = Field(default_factory=list)  # "f (path:3-9): evidence; ..."
    reproduction: str | None = None  # the test file it wrote and kept, in the patch
    reproduction_note: str = ""  # how it failed on the base, how many samples agreed
    # The reproduction is more than one model's test: independently sampled tests agreed
    # on it, or the issue's own example backs it (a lone model test may assert anything).
    agreed: bool = False
    target: str | None = None  # the function the chosen fix rewrote
    rounds: int = 0
    samples: int = 0  # answers read
    candidates: int = 0  # distinct, parseable changes that were tested
    passed: int = 0
    dropped: dict[str, int] = Field(default_factory=dict)  # why answers never ran: counts
    failed: dict[str, int] = Field(default_factory=dict)  # why tested candidates failed
    chosen: str = ""  # why this candidate
    mechanical: int = 0  # mechanical changes tested after the model's answers missed
    mechanical_note: str = ""  # why the mechanical round kept none (two passed, a weak
    # judge allowed few kinds, its time was up)
    # Other changes that pass every test as well as the chosen one ("what (path:line)"):
    # the tests cannot tell which fixes the bug, and a maintainer chooses.
    alternatives: list[str] = Field(default_factory=list)
    # Suspects no answer was asked for: writing them back takes more than an answer holds
    too_long: list[str] = Field(default_factory=list)
    # The narrow mechanisms that acted (app/fixers/llm/repair/switches.py), times each; and the
    # one that brought the chosen change ("" for a plain round of answers).
    fired: dict[str, int] = Field(default_factory=dict)
    won_by: str = ""


class FixOutcome(_Model):
    """What a fixer did: its summary for the PR, success or why not, and what it used."""

    fixer: str
    # What the policy reads of the fixer (its record, app/fixers/interface.py): the kind
    # of change it makes, whether a model wrote it, and one line on who it is. A fixer
    # without a record (or a result saved before records) reads as a model's: contained.
    category: str | None = None
    model: bool = True
    about: str = ""
    summary: str = ""
    ok: bool = True
    reason: str | None = None
    final: bool = False  # do not hand the task to another fixer (a flaky test, say)
    commit_message: str | None = None  # the patch commit's message; default: the task title
    usage: ModelUsage = Field(default_factory=ModelUsage)
    transcript: list[TranscriptEntry] = Field(default_factory=list)
    culprit: Culprit | None = None
    rules_fixed: dict[str, int] = Field(default_factory=dict)  # lint: rule id -> times fixed
    # Why the fixer stopped before it finished, when the change is the one it had made
    # then (the coding agent lost after changing the code): never merged by itself.
    unfinished: str | None = None
    repair: RepairReport | None = None  # the llm fixer's repair strategy: what it tried
    bump: Bump | None = None  # the dependency fixer: the package raised, and why
    # The functions the fixer's own localisation implicated before it changed anything
    # ("path::qualname"): part of the scope a model's change must stay in.
    implicated: list[str] = Field(default_factory=list)

    def redacted(self, known: list[str], *, opaque: Sequence[str] = ()) -> FixOutcome:
        """Every text the fixer produced, with credentials masked (``opaque``: values
        masked as such, app/redact.py)."""

        def r(text: str | None) -> str | None:
            return None if text is None else redact(text, known=known, opaque=opaque)

        culprit = self.culprit
        if culprit is not None:
            culprit = culprit.model_copy(
                update={
                    "subject": r(culprit.subject),
                    "author": r(culprit.author),
                    "bisect_log": r(culprit.bisect_log),
                }
            )
        return self.model_copy(
            update={
                "summary": r(self.summary),
                "reason": r(self.reason),
                "unfinished": r(self.unfinished),
                "commit_message": r(self.commit_message),
                "transcript": [
                    e.model_copy(update={"content": r(e.content), "arguments": r(e.arguments)})
                    for e in self.transcript
                ],
                "culprit": culprit,
            }
        )


class SessionResult(_Model):
    schema_version: Literal[2] = SCHEMA_VERSION
    job_id: int | None
    repo: str
    base_sha: str
    branch: str
    head_sha: str | None = None  # the patch commit on ``branch``; None if no change
    status: Literal["patched", "no-change", "failed"]
    error: str | None = None
    # "config": the repository's .github/patchwarden.yml cannot be used (a usage error:
    # `patchwarden run` exits 2, as `validate` would refuse the file).
    error_kind: Literal["config"] | None = None
    sandbox: SandboxInfo
    fix: FixOutcome | None = None
    diff: Diff = Field(default_factory=Diff)
    steps: list[Step] = Field(default_factory=list)
    tests: TestDelta | None = None
    findings: list[FindingsDelta] = Field(default_factory=list)
    # Which of the change's places the task explains (a model's change: app/sessions/scope.py)
    scope: Scope | None = None
    # The changed modules imported, their values scanned (None: no Python changed)
    modules: ModuleScan | None = None
    # The effective policy (policies/default.yml + the base branch's .github/patchwarden.yml),
    # read before the fixer ran; the score is computed with exactly this.
    policy: Policy | None = None
    usage: Usage = Field(default_factory=Usage)
    started_at: float
    finished_at: float
    # What the store cut to keep the result under its size cap (app/sessions/stored.py)
    cut: str = ""

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def load(cls, data: dict[str, Any]) -> SessionResult:
        """Read a stored result; a version this code does not know is refused clearly."""
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise SessionResultError(
                f"stored SessionResult has schema_version {version!r}; this Patchwarden "
                f"reads version {SCHEMA_VERSION}. Re-run the job or upgrade Patchwarden."
            )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise SessionResultError(f"stored SessionResult does not validate: {exc}") from None

    def findings_for(self, tool: Tool) -> FindingsDelta | None:
        return next((f for f in self.findings if f.tool == tool), None)


class SessionResultError(PatchwardenError):
    """A stored SessionResult cannot be read."""
