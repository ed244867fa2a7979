"""What the policy reads from a coding session besides its diff: the evidence.

The policy owns these types; ``app/sessions/`` produces them (its ``SessionResult``
holds them) and the policy engine scores them. So the arrow points one way: sessions
import the policy, never the other way round (tests/test_architecture.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field

Tool = Literal["ruff", "semgrep", "bandit", "eslint", "tsc"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SecretFound(_Model):
    """A credential an added line held before the diff was masked (app/policy/secrets.py)."""

    path: str
    line: int  # 0: not a line of the diff (a value the module computes)
    kind: str
    # Found among the values the patched module holds once imported, not in its text:
    # where (``KEY_ID``, ``Settings.token``, ``PARTS[2]``)
    computed: str = ""


class OutsidePlace(_Model):
    """A place a change touches that the task does not explain (app/sessions/scope.py)."""

    path: str
    line: int = 0  # the first line (the patched file's; the base's for a removal); 0: the file
    what: str  # "a new YAML data file", "module-level code", "a new function `f`", ...
    removed: bool = False  # the change removes lines there (and adds none)

    def shown(self) -> str:
        """``"`shop/keys.py:3` (module-level code)"``: markdown, the path as code."""
        where = f"{self.path}:{self.line}" if self.line else self.path
        where = where.replace("`", "'")
        return f"`{where}` ({'removes ' if self.removed else ''}{self.what})"


class Scope(_Model):
    """Where a change lies against what the session implicated before the fixer changed
    anything: the functions the fixer's localisation found, those the task names and
    those the tests that show the fix reach on the base."""

    implicated: list[str] = Field(default_factory=list)  # "path::qualname": why
    outside: list[OutsidePlace] = Field(default_factory=list)
    note: str = ""  # how it was found (what was traced, what could not be)


class Finding(_Model):
    tool: Tool
    rule: str  # ruff code, semgrep rule id, bandit test id, eslint rule id, TS code
    path: str  # relative to the repository root
    line: int
    message: str
    severity: Literal["info", "low", "medium", "high"] = "medium"
    snippet: str = ""  # the offending source line(s), redacted


class FindingsDelta(_Model):
    """What a tool reports on the changed files, before and after the patch."""

    tool: Tool
    ran: bool = True
    error: str | None = None  # the tool failed to run or its output did not parse
    files: int = 0  # files the tool looked at (changed files it applies to)
    base_count: int = 0
    head_count: int = 0
    new: list[Finding] = Field(default_factory=list)
    fixed: list[Finding] = Field(default_factory=list)


class TestCounts(_Model):
    __test__ = False  # not a pytest test class
    passed: int = 0
    failed: int = 0
    errored: int = 0
    skipped: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.errored + self.skipped


class TestRun(_Model):
    __test__ = False  # not a pytest test class
    exit_code: int | None
    timed_out: bool = False
    counts: TestCounts | None = None  # None when the runner gives no per-test report
    outcomes: dict[str, Literal["passed", "failed", "errored", "skipped"]] = Field(
        default_factory=dict
    )

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class TestDelta(_Model):
    __test__ = False  # not a pytest test class
    """The repository's own tests on the base tree and on the patched tree."""

    command: list[str]
    source: Literal["config", "detected"]
    base: TestRun | None = None
    head: TestRun | None = None
    fixed: list[str] = Field(default_factory=list)  # failing/erroring on base, passing on head
    broken: list[str] = Field(default_factory=list)  # passing on base, failing/erroring on head
    added: list[str] = Field(default_factory=list)  # only on head
    removed: list[str] = Field(default_factory=list)  # only on base
    # Tests the patch adds or changes that fail on the base code and pass on the patch
    # (app/sessions/reproduce.py): they show the problem it fixes.
    reproduced: list[str] = Field(default_factory=list)
    # Whether the session could check such tests (pytest) and should (not an alert):
    # only then does the score count a fix that nothing reproduces.
    reproducible: bool = False
    # Failing or erroring on the base and on the patch alike: not the patch's doing.
    already_failing: list[str] = Field(default_factory=list)

    @property
    def only_already_failing(self) -> bool:
        """Whether the patch's tests fail only where the base's fail the same way, and
        break none. Not for an alert (the failing tests are what it must fix: then
        ``reproducible`` is False), not where most fail on the base (the environment is
        broken), not when the run stopped early (``-x``) or failed for another reason
        than failing tests (pytest's exit code 1 is "some tests failed"), and only when
        the patch ran every test the base ran."""
        base, head = self.base, self.head
        if base is None or head is None or head.ok or head.timed_out or self.broken:
            return False
        if not self.reproducible or head.exit_code != 1 or _stops_early(self.command):
            return False
        if base.counts is None or head.counts is None or base.outcomes.keys() - head.outcomes:
            return False
        failing = {t for t, o in head.outcomes.items() if o in ("failed", "errored")}
        if not failing or not failing <= set(self.already_failing):
            return False
        bad = base.counts.failed + base.counts.errored
        return 2 * bad <= base.counts.passed + bad  # most, not half

    @property
    def passing(self) -> bool:
        """The patch passes the tests, but for those already failing on the base."""
        return self.head is not None and (self.head.ok or self.only_already_failing)


def _stops_early(command: list[str]) -> bool:
    """Whether a test command stops at the first failures (pytest's -x, --maxfail)."""
    return any(
        a == "--exitfirst" or a.startswith("--maxfail") or (a[:1] == "-" != a[1:2] and "x" in a)
        for a in command
    )


class ModelUsage(_Model):
    """What a fixer's model calls used, from the API's ``usage`` fields."""

    calls: int = 0  # answered calls (failed attempts are in the audit log, not here)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    estimated: bool = False  # a server sent no usage: tokens estimated from the text
    unpriced: list[str] = Field(default_factory=list)  # models used that have no price
    # Per answered call, in order: how long it took (s) and its prompt's size (tokens).
    turn_seconds: list[float] = Field(default_factory=list)
    turn_prompt_tokens: list[int] = Field(default_factory=list)
    # How the model wrote its tool calls: "native", or the dialect read from its text.
    dialects: dict[str, int] = Field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


BumpSize = Literal["patch", "minor", "major"]
BUMP_SIZES: tuple[BumpSize, ...] = ("patch", "minor", "major")  # smallest first


def larger_bump(a: BumpSize, b: BumpSize) -> BumpSize:
    return max(a, b, key=BUMP_SIZES.index)


def bump_size(old: str | None, new: str) -> BumpSize:
    """``patch``, ``minor`` or ``major``: the part of the version that changes. An old
    version unknown counts as ``major`` (nothing says how far it is), and so does a new
    minor below 1.0 or another epoch (semver: 0.x minors break)."""
    try:
        a, b = Version(old or ""), Version(new)
    except InvalidVersion:
        return "major"
    x, y = (*a.release, 0, 0)[:3], (*b.release, 0, 0)[:3]
    if a.epoch != b.epoch or x[0] != y[0] or (x[0] == 0 and x[1] != y[1]):
        return "major"
    return "minor" if x[1] != y[1] else "patch"


class Bump(_Model):
    """A dependency raised past a known vulnerability (the dependency fixer):
    the advisory's facts (ids, versions and severity; never its texts) and what the
    patched tree's own setup installed that the base's did not."""

    package: str
    old: str | None  # the lowest version the manifests allowed before, if one was named
    new: str  # the first version that is not vulnerable
    size: BumpSize  # the part of the version that changes
    advisory: str  # GHSA id
    cve: str | None = None
    severity: str = ""  # low | medium | high | critical
    vulnerable_range: str = ""
    url: str = ""  # the alert on GitHub
    summary: str = ""  # the advisory's summary: its author's text, fenced where shown
    files: list[str] = Field(default_factory=list)  # the manifests and locks changed
    locks: list[str] = Field(default_factory=list)  # lock files its own tool regenerates
    lock_commands: list[str] = Field(default_factory=list)  # how, as shown
    locked: list[str] = Field(default_factory=list)  # "`uv.lock`: idna 3.6 → 3.7", ...
    installed: list[str] = Field(default_factory=list)  # "name version" new to the env
    upgraded: list[str] = Field(default_factory=list)  # "name old → new" in the env
    setup: bool = False  # the patched tree had its own setup (and its tests ran with it)
    version: str | None = None  # the package's version that setup installed, if it did


# -- what a session is, to the policy: read-only shapes SessionResult fits --------------


class ChangedPath(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def old_path(self) -> str | None: ...


class ChangedDiff(Protocol):
    @property
    def unified(self) -> str: ...  # `git diff`, redacted, maybe cut at a size cap
    @property
    def truncated(self) -> bool: ...
    @property
    def files(self) -> Sequence[ChangedPath]: ...  # git's stats: every path, also cut ones
    @property
    def secrets(self) -> Sequence[SecretFound]: ...  # found before masking


class FixDone(Protocol):
    @property
    def fixer(self) -> str: ...
    @property
    def category(self) -> str | None: ...
    @property
    def model(self) -> bool: ...
    @property
    def about(self) -> str: ...
    @property
    def usage(self) -> ModelUsage | None: ...
    @property
    def unfinished(self) -> str | None: ...
    @property
    def bump(self) -> Bump | None: ...


class Session(Protocol):
    """What :func:`app.policy.score.score_session` reads from a session's result."""

    @property
    def diff(self) -> ChangedDiff: ...
    @property
    def fix(self) -> FixDone | None: ...
    @property
    def tests(self) -> TestDelta | None: ...
    @property
    def findings(self) -> Sequence[FindingsDelta]: ...
    @property
    def scope(self) -> Scope | None: ...  # None: not checked (a fixer that needs no model)
