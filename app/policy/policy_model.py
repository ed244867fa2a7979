"""The policy: ``policies/default.yml`` with the repository's own file merged over it.

Pure: it takes the two files' texts and returns a validated :class:`Policy`, or raises
:class:`PolicyError` naming the file, the line and what is wrong. Reading the files
(the repository's from its **base** branch) is the caller's job.

Merging: mappings merge key by key and a value replaces the default, except
``protected_paths``, which adds to the default list; ``unprotect`` takes default
patterns out (each must be one of them, written exactly). The default file is complete,
so the model has no defaults of its own: one place says what the defaults are.

Over ~400 lines on purpose: every section's model with its checks and each key's
description (``patchwarden schema``), the merge and the YAML reader that keeps each
key's line are one contract (what a maintainer may write, and where an error points);
split, each part would be read only beside the others.
"""

from __future__ import annotations

import collections.abc
import difflib
import re
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from app.errors import RepoConfigError

Decision = Literal["reject", "draft", "review", "automerge"]
LADDER: tuple[Decision, ...] = ("reject", "draft", "review", "automerge")
Autonomy = Literal["propose", "review", "automerge"]
AUTONOMY_CEILING: dict[str, Decision] = {
    "propose": "draft",
    "review": "review",
    "automerge": "automerge",
}

DEFAULT_SOURCE = "policies/default.yml"
REPO_SOURCE = ".github/patchwarden.yml"
# Keys of .github/patchwarden.yml the session's commands own (sessions/repo_commands.py);
# the fixers' sections come with :class:`KnownFixers`.
COMMAND_KEYS = ("setup", "test")


@dataclass(frozen=True)
class KnownFixers:
    """What the policy may name of the fixers, from their records
    (app/fixers/registry.py): their names (``weights.fixer``,
    ``behaviour.never_automerge``), the kinds of change they make (``learn.categories``)
    and their sections of .github/patchwarden.yml, which they validate themselves."""

    names: tuple[str, ...]
    kinds: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()
    settings: type[BaseModel] | None = None  # one model of all their sections

    @staticmethod
    def given(info: ValidationInfo) -> KnownFixers | None:
        """The fixers a validation was given (``load_policy(fixers=...)``), if any."""
        fixers = (info.context or {}).get("fixers")
        return fixers if isinstance(fixers, KnownFixers) else None

    def check(self, names: Iterable[str], *, also: Sequence[str]) -> None:
        """ValueError naming the first of ``names`` that is no fixer's (nor one of
        ``also``), and the ones there are."""
        known = list(dict.fromkeys([*self.names, *also]))
        for name in names:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"did you mean `{close[0]}`? " if close else ""
                raise ValueError(
                    f"no fixer is called {name!r}; {hint}the fixers: {', '.join(known)}"
                )


Lines = dict[tuple[Any, ...], int]  # a key path ("caps", "files") -> its line, 1-based


class PolicyError(RepoConfigError):
    """A policy file cannot be used: which file, which line, what is wrong."""

    def __init__(self, source: str, line: int | None, problem: str) -> None:
        self.source, self.line, self.problem = source, line, problem
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {problem}")


class _Strict(BaseModel):
    # Each field's docstring is its description in `patchwarden schema` (an editor's tooltip).
    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=False, use_attribute_docstrings=True
    )


class Category(_Strict):
    weight: float = Field(ge=0, le=10)
    """Risk multiplier (0-10) of this kind of file; the highest among matching categories wins."""
    paths: list[str]
    """Globs of the files of this kind (`source` also takes every file no category claims)."""


class Caps(_Strict):
    files: int = Field(ge=1)
    """The most files one change may touch; more is over the cap (see `over`)."""
    changed_lines: int = Field(ge=1)
    """The most lines one change may add plus remove; more is over the cap."""
    new_dependencies: int = Field(ge=0)
    """The most dependencies one change may add (a version change is not new)."""
    over: Literal["draft", "reject"]
    """What a change over any cap is at best: `draft`, or `reject` to refuse it."""


def _regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
    return pattern


# Stand-ins for real credentials of several shapes, built here so no source file holds
# one: an allow pattern that matches one of them whole would let every credential of
# that shape through, not a known example.
_ANY_CREDENTIAL = (
    "ghp_" + "Zx9a" * 9,
    "AKIA" + "Q7WZ" * 4,
    "sk-proj-" + "Ab3d" * 12,
    "f3" * 20,
    "hunter2",
)


def _narrow(pattern: str) -> str:
    too_broad = [c for c in _ANY_CREDENTIAL if re.fullmatch(pattern, c)]
    if too_broad:
        raise ValueError(
            f"{pattern!r} matches any credential of a kind (it matches {too_broad[0][:4]}…), "
            "so it would let real ones through: name the example values themselves "
            "(docs/policy.md#secrets)"
        )
    return pattern


class SecretRules(_Strict):
    """What the credential scan leaves alone (docs/policy.md#secrets)."""

    allow: list[Annotated[str, AfterValidator(_regex), AfterValidator(_narrow)]]
    """Regular expressions of known example values, each matching a found value whole."""


class Thresholds(_Strict):
    automerge: int = Field(ge=0, le=100)
    """The highest score (0-100) that may merge itself once every check is green."""
    review: int = Field(ge=0, le=100)
    """The highest score (0-100) for a pull request that waits for an approval."""
    draft: int = Field(ge=0, le=100)
    """The highest score (0-100) for a draft pull request; above it, rejected."""

    @model_validator(mode="after")
    def _ordered(self) -> Thresholds:
        if not self.automerge <= self.review <= self.draft:
            raise ValueError(
                "must be in order automerge <= review <= draft "
                f"(got {self.automerge}, {self.review}, {self.draft})"
            )
        return self


def _fixer_weights(points: dict[str, float]) -> dict[str, float]:
    for name in ("llm", "human"):
        if name not in points:
            raise ValueError(
                f"`{name}` is missing: every policy weighs a model's and a person's change"
            )
    for name, value in points.items():
        if value < 0:
            raise ValueError(f"`{name}`: points cannot be negative (got {value})")
    return points


# Points by who wrote the change: a fixer's name, `llm` for a model's change (and a
# fixer this policy does not weigh), `human` for a person's.
FixerWeights = Annotated[dict[str, float], AfterValidator(_fixer_weights)]


class FindingWeights(_Strict):
    medium: float = Field(ge=0)
    """Points per new medium-severity finding on the changed files (a high one rejects)."""
    low: float = Field(ge=0)
    """Points per new low-severity finding on the changed files."""
    info: float = Field(ge=0)
    """Points per new informational finding on the changed files."""


class BumpWeights(_Strict):
    patch: float = Field(ge=0)
    """Points for a security update that changes the patch number (2.31.0 → 2.31.1)."""
    minor: float = Field(ge=0)
    """Points for one that changes the minor number (2.31 → 2.32)."""
    major: float = Field(ge=0)
    """Points for one that changes the major number (1.x → 2.x)."""


class SeverityWeights(_Strict):
    low: float = Field(le=0)
    """Credit (0 or less) for fixing an advisory of low severity."""
    medium: float = Field(le=0)
    """Credit (0 or less) for fixing one of medium severity."""
    high: float = Field(le=0)
    """Credit (0 or less) for fixing one of high severity."""
    critical: float = Field(le=0)
    """Credit (0 or less) for fixing a critical one."""


class Weights(_Strict):
    touch: float = Field(ge=0)
    """Points for touching a category, times the category's weight."""
    per_10_lines: float = Field(ge=0)
    """Points per 10 changed lines in a category, times the category's weight."""
    category_max: float = Field(ge=0)
    """The most points one category can add."""
    fixer: FixerWeights
    """Points for who wrote the change, by fixer name (`llm`: a model, and any fixer not
    named here that a model drives; `human`: a person's change). A fixer not named
    here is weighed as the kind of change it makes (`lint`, `revert`), else as `llm`."""

    @field_validator("fixer")
    @classmethod
    def _known_fixers(cls, points: dict[str, float], info: ValidationInfo) -> dict[str, float]:
        fixers = KnownFixers.given(info)
        if fixers is not None:
            fixers.check(points, also=("llm", "human"))
        return points

    def fixer_points(self, weighed_as: Sequence[str]) -> float:
        """The points of the first of ``weighed_as`` this policy weighs, else ``llm``'s."""
        return next((self.fixer[n] for n in weighed_as if n in self.fixer), self.fixer["llm"])

    deleted_file: float = Field(ge=0)
    """Points per file deleted (a test file counts under `test_deleted`)."""
    renamed_file: float = Field(ge=0)
    """Points per file renamed or moved."""
    binary_file: float = Field(ge=0)
    """Points per binary file: nobody can review it in the diff."""
    executable_bit: float = Field(ge=0)
    """Points per file made executable."""
    new_dependency: float = Field(ge=0)
    """Points per direct dependency added."""
    typosquat_dependency: float = Field(ge=0)
    """Points per added Python dependency one letter from a popular one."""
    changed_dependency: float = Field(ge=0)
    """Points per dependency whose version changed (lockfile packages too)."""
    removed_dependency: float = Field(ge=0)
    """Points per dependency removed."""
    lockfile_max: float = Field(ge=0)
    """The most points changed lockfile packages can add."""
    test_deleted: float = Field(ge=0)
    """Points per test file deleted."""
    test_removed: float = Field(ge=0)
    """Points per test function removed from a test file that stays."""
    test_skipped: float = Field(ge=0)
    """Points per skip/xfail/only marker added."""
    tests_not_run: float = Field(ge=0)
    """Points when no test command is known, or the tests did not run."""
    tests_still_failing: float = Field(ge=0)
    """Points when the tests fail on the patch (and failed before it too)."""
    tests_already_failing: float = Field(ge=0)
    """Points when the patch passes but for tests failing on the base alike."""
    tests_fixed: float = Field(le=0)
    """Credit (0 or less) per test failing before the change and passing after."""
    tests_fixed_max: float = Field(le=0)
    """The most credit (0 or less) `tests_fixed` can give."""
    not_reproduced: float = Field(ge=0)
    """Points for a model's fix that no test shows failing before and passing after."""
    finding: FindingWeights
    """Points per new ruff/semgrep/bandit finding on the changed files, by severity."""
    findings_max: float = Field(ge=0)
    """The most points new findings can add."""
    tool_failed: float = Field(ge=0)
    """Points when a verification tool did not run or its output did not parse."""
    budget_heavy: float = Field(ge=0)
    """Points when the fixer used over 75% of its token or cost budget."""
    reverted_recently: float = Field(ge=0)
    """Points per Patchwarden merge here in the last 30 days that was reverted."""
    reverted_recently_max: float = Field(ge=0)
    """The most points recently reverted merges can add."""
    security_update: BumpWeights
    """Points for a dependency raised past a vulnerability, by the part that changes."""
    new_transitive_dependency: float = Field(default=5, ge=0)
    """Points per package a security update installs that the base did not have."""
    regenerated_lock: float = Field(default=2, ge=0)
    """Points per lock file a security update regenerates with its own tool (the tool's
    resolver decides what else moves; each moved package is listed)."""
    advisory_severity: SeverityWeights
    """Credit for a security update by its advisory's severity: a vulnerability left
    open is a risk of its own."""
    outside_scope: float = Field(default=5, ge=0)
    """Points per place a model's change touches that the task does not explain (at
    most five places count)."""


class BehaviourWeights(_Strict):
    """Points for each behaviour a change adds (app/policy/behaviour.py), once per kind."""

    network: float = Field(ge=0)
    """Points for network use: sockets, HTTP clients, urlopen, curl/wget."""
    process: float = Field(ge=0)
    """Points for running processes: subprocess, os.system/exec*/spawn*, `| sh`."""
    environment: float = Field(ge=0)
    """Points for reading the environment: os.environ, getenv, process.env."""
    outside_files: float = Field(ge=0)
    """Points for paths outside the repository: /etc, ~, Path.home()."""
    dynamic_code: float = Field(ge=0)
    """Points for dynamic code: eval, exec, compile, __import__, importlib, ctypes."""
    deserialisation: float = Field(ge=0)
    """Points for unsafe loading: pickle, marshal, yaml.load without a safe loader."""
    package_install: float = Field(ge=0)
    """Points for installing packages at run time (pip/npm/conda install)."""
    test_harness: float = Field(ge=0)
    """Points for the test harness: conftest.py, pytest config and hooks, .pth files."""
    package_index: float = Field(ge=0)
    """Points for package sources: pip.conf, .npmrc, --extra-index-url, `-e git+...`."""
    install_script: float = Field(ge=0)
    """Points for a package.json script npm runs at install (preinstall, postinstall, ...)."""
    conda_dependencies: float = Field(ge=0)
    """Points for an environment.yml's dependencies."""
    action: float = Field(ge=0)
    """Points for an action.yml anywhere: code a workflow runs."""
    gitattributes: float = Field(ge=0)
    """Points for .gitattributes: diff, merge and filter drivers."""
    file_mode: float = Field(ge=0)
    """Points for world-writable, setuid or setgid modes (chmod 777, os.umask(0))."""
    opaque_literal: float = Field(ge=0)
    """Points for a random-looking string no credential detector knows."""


class BehaviourRules(_Strict):
    """What a change makes the code do (docs/policy.md#behaviour)."""

    weights: BehaviourWeights
    """Points per kind of behaviour a change adds, each kind counted once."""
    never_automerge: list[str]
    """Fixers whose changes never merge themselves when they add any behaviour (`llm`:
    every fixer a model drives)."""

    @field_validator("never_automerge")
    @classmethod
    def _known_fixers(cls, names: list[str], info: ValidationInfo) -> list[str]:
        fixers = KnownFixers.given(info)
        if fixers is not None:
            fixers.check(names, also=("llm",))
        return names


class ScopeRules(_Strict):
    """How far a model's change may go when it touches what the task does not explain
    (docs/policy.md#scope)."""

    outside: Decision = "review"
    """The most such a change gets: `review` (a maintainer approves it), `draft` or
    `reject`; `automerge` lets it merge by itself, so a model steered by an issue's
    text could merge a credential built in a way no detector reads."""


class MergeRules(_Strict):
    """How Patchwarden merges, and what it does after a merge (docs/policy.md#merging)."""

    method: Literal["merge", "squash", "rebase"]
    """GitHub's merge method: `merge` (a merge commit), `squash` or `rebase`."""
    two_person: bool
    """Whoever asked for the change cannot be its only approver (a second writer approves)."""
    canary_minutes: float = Field(ge=0)
    """Minutes after a merge the canary watches the default branch to revert it; 0: off."""
    revert_automerge: bool
    """The revert of Patchwarden's own merge may merge itself whatever `autonomy` says."""


class LearnRules(_Strict):
    """Autonomy a kind of change earns from its record here (docs/policy.md#learning)."""

    ceiling: Autonomy
    """The most autonomy a kind of change may earn; `review` earns nothing."""
    categories: list[str]
    """Kinds (categories, `lint`, `revert`) that may earn it; demotion applies to all."""
    promote_after: int = Field(ge=1)
    """Clean merges of a kind within the window that earn it the ceiling."""
    window_days: float = Field(gt=0, le=365)
    """Days (up to 365) of the record that promotion and demotion count."""
    demote_after_reverts: int = Field(ge=1)
    """Reverts of a kind's merges within the window that demote it (`review` at most)."""
    demote_after_rejections: int = Field(ge=1)
    """Pull requests of a kind closed unmerged by a person in the window that demote it."""


class WatchRules(_Strict):
    """What the watch on the default branch reports (docs/policy.md#the-watch)."""

    enabled: bool
    """Open one issue per finding; false: none (the checks are still recorded)."""
    recent_runs: int = Field(ge=3, le=1000)
    """A check's latest runs (3-1000), compared with the baseline runs before them."""
    baseline_runs: int = Field(ge=3, le=10_000)
    """The runs (3-10000) before the recent ones that make a check's baseline."""
    failure_rate_jump: float = Field(gt=0, le=1)
    """Rise in failure rate over the baseline's (0-1; 0.3: 30 points) to report."""
    min_failures: int = Field(ge=1)
    """The fewest failures among the recent runs for a failure-rate rise to count."""
    duration_ratio: float = Field(gt=1)
    """Recent p95 duration over the baseline's (above 1) that reports a check slower."""
    min_duration_seconds: float = Field(ge=0)
    """Seconds: a baseline p95 duration shorter than this is noise."""
    flaky_days: float = Field(gt=0, le=365)
    """Days within which failing and passing on one commit makes a check flaky."""


AlertMode = Literal["off", "review", "within-autonomy"]


def _off(value: Any) -> Any:
    """YAML 1.1 (PyYAML) reads a bare `off` as false; here it can only mean `off`."""
    return "off" if value is False else value


Mode = Annotated[
    AlertMode,
    BeforeValidator(_off),
    WithJsonSchema({"enum": ["off", "review", "within-autonomy", False]}),
]
Severity = Literal["low", "medium", "high", "critical"]
SEVERITIES: tuple[Severity, ...] = ("low", "medium", "high", "critical")


class AlertKindRules(_Strict):
    """How one kind of GitHub security alert is handled (docs/policy.md, "Security
    alerts")."""

    mode: Mode
    """`off`: the alert starts nothing; `review`: its fix waits for a maintainer;
    `within-autonomy`: its fix goes as far as `autonomy` (and the score) let it."""
    min_severity: Severity
    """The least severity that starts a fix: `low`, `medium`, `high` or `critical`."""
    open_after_merge_hours: int = Field(default=24, ge=1)
    """An alert still open this many hours after its fix merged is listed on the
    dashboard (GitHub closes it when the default branch no longer matches)."""


class CodeScanningRules(AlertKindRules):
    """Code scanning alerts (CodeQL, semgrep, any SARIF uploader) on the default branch."""

    model: bool
    """Let a model write the fix of a rule that has no autofix; false: autofixes only."""


BumpSize = Literal["none", "patch", "minor", "major"]


class DependabotRules(AlertKindRules):
    """Dependabot alerts: fixed by raising the package's constraints, no model."""

    merge_up_to: BumpSize = "patch"
    """The largest version bump that may merge itself (within `autonomy` and the score):
    `none`, `patch`, `minor` or `major`. A larger one waits for a maintainer."""


class AlertRules(_Strict):
    """GitHub's own security alerts, each kind on its own."""

    dependabot: DependabotRules
    """Dependabot alerts: a dependency with a known vulnerability, fixed by a version bump."""
    code_scanning: CodeScanningRules
    """Code scanning alerts: a finding at a place in the code."""


def _alerts_held() -> AlertRules:
    """``alerts`` for an operator's default policy written before the key existed: as
    the shipped default has them (each fix waits for a maintainer, no model on code
    scanning), which is also how the webhook handler queued the alert's job."""
    return AlertRules.model_validate(
        {
            "dependabot": {"mode": "review", "min_severity": "low"},
            "code_scanning": {"mode": "review", "min_severity": "medium", "model": False},
        }
    )


class Policy(_Strict):
    autonomy: Autonomy
    """The most Patchwarden may do: `propose` (drafts), `review`, or `automerge`."""
    learn: LearnRules
    """Autonomy a kind of change earns, or loses, from its record in this repository."""
    watch: WatchRules
    """The watch on the default branch: flaky, more often failing and slower checks."""
    dashboard: bool  # app/jobs/dashboard.py
    """Keep the "Patchwarden dashboard" issue up to date; false: no such issue."""
    weekly_report: bool  # app/jobs/weekly.py
    """Keep one weekly report issue per ISO week, edited in place."""
    commit_signing: Literal["git", "api"]
    """How commits reach GitHub: `git` (unsigned) or `api` (GitHub signs them)."""
    protected_paths: list[str]
    """Globs no fixer may change: the default's and the file's, minus `unprotect`."""
    unprotect: list[str]
    """Default protected patterns to drop, written exactly as the default has them."""
    secrets: SecretRules
    """What the credential scan leaves alone (a credential added is rejected)."""
    categories: dict[str, Category]
    """Kinds of file by glob, each with a risk weight; `source` takes the rest."""
    caps: Caps
    """Limits on a single change; over one, it is a draft at best (or rejected)."""
    thresholds: Thresholds
    """Score bands of the decision: automerge, review, draft; above them, reject."""
    weights: Weights
    """Points each factor adds; the score is their sum, kept within 0-100."""
    behaviour: BehaviourRules
    """What a change makes the code do: points, and fixers that wait for a person."""
    scope: ScopeRules = Field(default_factory=ScopeRules)
    """What a model's change may touch beyond the functions the task implicates."""
    merge: MergeRules
    """How Patchwarden merges, and what it does after a merge."""
    alerts: AlertRules = Field(default_factory=_alerts_held)
    """Which Dependabot and code scanning alerts start a fix, and how far it may go."""

    @model_validator(mode="after")
    def _has_source(self, info: ValidationInfo) -> Policy:
        if "source" not in self.categories:
            raise ValueError("`categories` must keep `source`, the category of every other file")
        fixers = KnownFixers.given(info)
        if fixers is None:
            return self  # a stored result's policy, or the default file alone
        known = [*fixers.kinds, *self.categories]
        for name in self.learn.categories:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"did you mean `{close[0]}`?" if close else "the kinds: " + ", ".join(known)
                raise ValueError(f"`learn.categories`: {name!r} is no kind of change; {hint}")
        return self

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# -- reading -----------------------------------------------------------------------------


def load_policy(
    default_text: str,
    repo_text: str | None = None,
    *,
    default_source: str = DEFAULT_SOURCE,
    repo_source: str = REPO_SOURCE,
    fixers: KnownFixers | None = None,
) -> Policy:
    """The effective policy: the default with the repository's file merged over it.

    ``fixers`` (app/fixers/registry.py's ``KNOWN``): every fixer name the files use must
    be one of them, and their sections of the file are theirs to check. Without it, the
    names are not checked and a fixer's section is refused as an unknown key (for the
    default file alone, and tests)."""
    default, default_lines = parse_config(default_text, default_source)
    repo: dict[str, Any] = {}
    repo_lines: Lines = {}
    if repo_text is not None:
        repo, repo_lines = parse_config(repo_text, repo_source)
        for key in list(repo):
            if key in Policy.model_fields:
                continue
            if key not in (*COMMAND_KEYS, *(fixers.sections if fixers else ())):
                raise PolicyError(repo_source, repo_lines.get((key,)), unknown_key(key, fixers))
            del repo[key]
        _check_sections(repo_text, repo_source, fixers)
    merged = _merge(default, repo, repo_source, repo_lines)
    try:
        return Policy.model_validate(merged, context={"fixers": fixers})
    except ValidationError as exc:
        raise invalid(exc, (repo_source, repo_lines), (default_source, default_lines)) from None


def _check_sections(text: str, source: str, fixers: KnownFixers | None) -> None:
    """The fixers' sections of the file, checked with their own schemas: a wrong one
    stops the job before anything is spent, whichever fixer it would have reached."""
    if fixers is None or fixers.settings is None:
        return
    raw, lines = parse_config(text, source)
    present = {k: v for k, v in raw.items() if k in fixers.sections and v is not None}
    try:
        fixers.settings.model_validate(present)
    except ValidationError as exc:
        raise invalid(exc, (source, lines), model=fixers.settings) from None


def invalid(
    exc: ValidationError, *files: tuple[str, Lines], model: type[BaseModel] | None = None
) -> PolicyError:
    """A schema error as the file and line a person has to change (the first error);
    ``model``: the one the error is of (the policy's by default)."""
    first, *rest = every_error(exc, *files, model=model or Policy)
    more = f" (and {len(rest)} more)" if rest else ""
    return PolicyError(first.source, first.line, f"{first.problem}{more}")


def every_error(
    exc: ValidationError, *files: tuple[str, Lines], model: type[BaseModel] | None = None
) -> list[PolicyError]:
    """Each schema error as the file and line a person has to change (``validate``);
    an unknown key at any depth gets the closest key ``model`` allows there."""
    found = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        source, line = locate(loc, *files)
        where = ".".join(str(p) for p in loc) or "the top level"
        problem = _message(err)
        if err["type"] == "missing" and loc[:1] != ("categories",) and len(files) > 1:
            # A file merged over the default needs no key; the default lacks this one.
            # (True while every required key is a mapping's or a scalar's: a list of
            # models, merged whole, would need its own case.)
            source, line = locate(loc, files[-1])
            problem += (
                " from the default policy, which is older than this key: start it again "
                "from the policies/default.yml of this Patchwarden (PATCHWARDEN_DEFAULT_POLICY)"
            )
        if err["type"] == "extra_forbidden" and loc:
            close = difflib.get_close_matches(str(loc[-1]), _keys_at(model, loc[:-1]), n=1)
            problem += f"; did you mean `{close[0]}`?" if close else ""
        found.append(PolicyError(source, line, f"`{where}`: {problem}"))
    return found


def _keys_at(model: Any, path: tuple[Any, ...]) -> list[str]:
    """The keys ``model`` allows at ``path`` (through nested models, mappings and
    optionals); [] when that is not a model."""
    current, parts = model, list(path)
    while current is not None:
        args = typing.get_args(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            if not parts:
                return list(current.model_fields)
            field = current.model_fields.get(str(parts.pop(0)))
            current = field.annotation if field is not None else None
        elif typing.get_origin(current) in (dict, collections.abc.Mapping) and parts:
            parts.pop(0)  # a key of the mapping: its value's model next
            current = args[1] if len(args) == 2 else None
        elif args and typing.get_origin(current) in (typing.Union, types.UnionType, Annotated):
            current = next(
                (a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), args[0]
            )
        else:
            return []
    return []


def merge_repo(
    default_text: str, repo: dict[str, Any], repo_lines: Lines, repo_source: str = REPO_SOURCE
) -> dict[str, Any]:
    """The default policy with the repository's policy keys merged over it (unvalidated)."""
    default, _ = parse_config(default_text, DEFAULT_SOURCE)
    return _merge(default, repo, repo_source, repo_lines)


def unknown_key(key: str, fixers: KnownFixers | None) -> str:
    """What to say about a top-level key that is no setting (the closest one, or all)."""
    known = [*Policy.model_fields, *COMMAND_KEYS, *(fixers.sections if fixers else ())]
    close = difflib.get_close_matches(str(key), known, n=1)
    hint = f"; did you mean `{close[0]}`?" if close else f"; the keys are {', '.join(known)}"
    return f"unknown key `{key}`{hint}"


def _message(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown key"
    if err["type"] == "missing":
        new_category: bool = err["loc"][0] == "categories"
        return "missing" + (" (a new category needs both `weight` and `paths`)" * new_category)
    msg = str(err["msg"])
    return msg.removeprefix("Value error, ")


def locate(loc: tuple[Any, ...], *files: tuple[str, Lines]) -> tuple[str, int | None]:
    """The first file that has the longest prefix of ``loc``, and that key's line."""
    for n in range(len(loc), 0, -1):
        for source, lines in files:
            if loc[:n] in lines:
                return source, lines[loc[:n]]
    return files[0][0], None


def _merge(
    default: dict[str, Any],
    repo: dict[str, Any],
    repo_source: str,
    repo_lines: dict[tuple[Any, ...], int],
) -> dict[str, Any]:
    merged = _deep_merge(default, {k: v for k, v in repo.items() if k != "protected_paths"})
    base_protected = default.get("protected_paths") or []
    extra = repo.get("protected_paths") or []
    if not isinstance(extra, list):
        raise PolicyError(
            repo_source, repo_lines.get(("protected_paths",)), "`protected_paths` must be a list"
        )
    unprotect = repo.get("unprotect") or []
    if not isinstance(unprotect, list):
        raise PolicyError(
            repo_source, repo_lines.get(("unprotect",)), "`unprotect` must be a list of patterns"
        )
    for i, pattern in enumerate(unprotect):
        if pattern not in base_protected:
            raise PolicyError(
                repo_source,
                repo_lines.get(("unprotect", i)),
                f"`unprotect`: {pattern!r} is not one of the default protected patterns "
                "(write it exactly as policies/default.yml does)",
            )
    protected: list[Any] = []
    for pattern in [*base_protected, *extra]:
        if pattern not in protected and pattern not in unprotect:
            protected.append(pattern)
    merged["protected_paths"] = protected
    merged["unprotect"] = list(unprotect)
    return merged


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def parse_config(text: str, source: str) -> tuple[dict[str, Any], Lines]:
    """The YAML mapping and, for every key path, the line it is on (1-based).

    The one reader of Patchwarden's YAML files: invalid YAML, a key set twice or a
    top level that is not a mapping is a :class:`PolicyError` with its line."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise PolicyError(source, line, f"the file is not valid YAML: {problem}") from None
    if node is None:
        return {}, {}
    if not isinstance(node, yaml.MappingNode):
        raise PolicyError(source, node.start_mark.line + 1, "must be a mapping of settings")
    lines: dict[tuple[Any, ...], int] = {}
    _walk(node, (), lines, source)
    data = yaml.safe_load(text)
    return data, lines


def _walk(
    node: yaml.Node, path: tuple[Any, ...], lines: dict[tuple[Any, ...], int], source: str
) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                raise PolicyError(
                    source, key_node.start_mark.line + 1, f"`{key}` is set twice in one mapping"
                )
            seen.add(key)
            lines[(*path, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*path, key), lines, source)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*path, i)] = item.start_mark.line + 1
            _walk(item, (*path, i), lines, source)


def ladder_min(*decisions: Decision) -> Decision:
    """The most cautious of ``decisions`` (reject < draft < review < automerge)."""
    return min(decisions, key=LADDER.index)
