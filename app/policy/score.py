"""The risk score and the decision: a deterministic function of features and policy.

``score`` adds up points factor by factor (each with its value and reason), keeps the
sum within 0-100 and reads the decision off the thresholds; hard rules then cap it
(``reject`` for a protected path, a credential, a broken test, a new high-severity
finding, a diff that cannot be read whole), and ``autonomy`` caps it last. The ladder,
most cautious first: reject, draft, review, automerge. Same inputs, same output.

Over ~400 lines on purpose: every factor's weight and every hard rule in one function,
so that a reviewer reads the whole score in one place (docs/policy.md follows it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.policy.behaviour import KINDS, SAYS, Behaviour
from app.policy.config import (
    AUTONOMY_CEILING,
    SEVERITIES,
    Autonomy,
    Decision,
    Policy,
    Thresholds,
    ladder_min,
)
from app.policy.diff import parse_diff
from app.policy.evidence import BUMP_SIZES, Bump, FindingsDelta, ModelUsage, Session, TestDelta
from app.policy.features import Features, extract
from app.policy.learn import Past, Standing, kind_of, may_earn, standing
from app.policy.typosquat import possible_typosquats
from app.words import plural

Risk = Literal["low", "medium", "high"]
TriggerKind = Literal["comment", "label", "ci", "alert", "canary", "manual", "human"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class Contribution(_Model):
    factor: str  # "category:source", "fixer", "tests_deleted", ...
    value: str  # what was measured, for a person: "3 files, +40 -2"
    points: float
    reason: str


class RuleHit(_Model):
    rule: str  # "protected_path", "secret", "tests_broken", "caps", "autonomy", ...
    decision: Decision  # the most this rule allows
    reason: str


class Learned(_Model):
    """What the change's kind has earned here (``learn``), as the score applied it."""

    kind: str
    state: Literal["base", "earned", "demoted"]
    autonomy: Autonomy
    explanation: str
    may_earn: bool  # the policy lets this kind earn more than the repository's autonomy


class Score(_Model):
    score: int = Field(ge=0, le=100)
    decision: Decision
    risk: Risk  # from the score and the rules, before autonomy: what the change is
    by_score: Decision  # what the thresholds alone say
    autonomy: Autonomy  # what capped it: the repository's, or what its kind earned
    contributions: list[Contribution]
    rules: list[RuleHit]  # every rule that capped the decision, in the order they fired
    thresholds: Thresholds  # what the score was read against
    kind: str = "source"  # the kind of change, as earned autonomy counts it (learn.py)
    learned: Learned | None = None  # None: scored without the repository's record
    files: int
    lines_added: int
    lines_removed: int

    def to_json(self) -> dict[str, object]:
        return self.model_dump(mode="json")


@dataclass(frozen=True)
class Trigger:
    """What asked for the change; ``human``: a person's change scored by ``score``."""

    kind: TriggerKind = "human"
    # A revert: of Patchwarden's own merge ("bot") or of a person's commit ("human").
    reverts: Literal["bot", "human"] | None = None
    # GitHub's own security alert the change answers: its `alerts.<kind>.mode` holds it
    alert: Literal["dependabot", "code_scanning"] | None = None


@dataclass(frozen=True)
class History:
    """What became of Patchwarden's earlier changes to the repository (its outcomes)."""

    reverted_recently: int = 0  # its jobs of the last HISTORY_DAYS days whose merge was reverted
    # For earned autonomy (app/policy/learn.py): every change it proposed here, the
    # maintainers' trust resets by kind (``*``: every kind), and the time they were read.
    past: tuple[Past, ...] = ()
    resets: tuple[tuple[str, float], ...] = ()
    now: float | None = None

    def standing(self, kind: str, policy: Policy) -> Standing | None:
        if self.now is None:
            return None
        return standing(
            kind,
            self.past,
            policy.learn,
            base=policy.autonomy,
            now=self.now,
            resets=dict(self.resets),
        )


HISTORY_DAYS = 30


@dataclass(frozen=True)
class Verification:
    """What a session learnt about the change besides its diff."""

    fixer: str  # "llm", "lint", "revert", or another fixer's name
    tests: TestDelta | None = None
    findings: tuple[FindingsDelta, ...] = ()
    usage: ModelUsage | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    unfinished: str | None = None  # why the fixer stopped before it finished
    bump: Bump | None = None  # the dependency fixer's security update

    @classmethod
    def of(
        cls,
        result: Session,
        *,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
    ) -> Verification:
        fix = result.fix
        return cls(
            fixer=fix.fixer if fix is not None else "unknown",
            tests=result.tests,
            findings=tuple(result.findings),
            usage=fix.usage if fix is not None else None,
            unfinished=fix.unfinished if fix is not None else None,
            bump=getattr(fix, "bump", None),
            max_tokens=max_tokens,
            max_cost_usd=max_cost_usd,
        )


def score_session(
    result: Session,
    policy: Policy,
    *,
    trigger: Trigger | None = None,
    max_tokens: int | None = None,
    max_cost_usd: float | None = None,
    history: History | None = None,
) -> Score:
    """Score what a session produced: its diff, as git's stats saw it, and its checks."""
    parsed = parse_diff(result.diff.unified)
    diff = replace(
        parsed,
        truncated=parsed.truncated or result.diff.truncated,
        # git's stats name every path, also those a truncated diff lost
        extra_paths=tuple(p for f in result.diff.files for p in (f.path, f.old_path) if p),
    )
    # A session's change is a fixer's: its own pragma comments waive nothing.
    features = extract(diff, policy, extra_secrets=result.diff.secrets, pragma=False)
    verification = Verification.of(result, max_tokens=max_tokens, max_cost_usd=max_cost_usd)
    return score(features, policy, verification=verification, trigger=trigger, history=history)


def score_diff(text: str, policy: Policy, *, trigger: Trigger | None = None) -> Score:
    """Score a unified diff alone (``patchwarden score``): a person's change, say."""
    return score(extract(parse_diff(text), policy), policy, trigger=trigger)


def _list(items: list[str], limit: int = 3) -> str:
    shown = ", ".join(f"`{i}`" for i in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def score(
    features: Features,
    policy: Policy,
    *,
    verification: Verification | None = None,
    trigger: Trigger | None = None,
    history: History | None = None,
) -> Score:
    w = policy.weights
    tally = _Tally()
    add, rule = tally.add, tally.rule
    contributions, rules = tally.contributions, tally.rules

    # Hard rules on the diff itself.
    if features.parse_error:
        rule("unreadable_diff", "reject", features.parse_error)
    if features.truncated:
        rule(
            "truncated_diff",
            "reject",
            "the diff is larger than Patchwarden reads whole, so credentials and protected "
            "paths cannot be ruled out",
        )
    if not features.files and not features.parse_error:
        rule("empty", "reject", "the change is empty")
    human = trigger is not None and trigger.kind == "human"
    for f in features.protected:
        # A bot may never change these; a person may, with a maintainer's review.
        rule(
            "protected_path",
            "review" if human else "reject",
            f"changes `{f.path}`, protected by `{f.protected_by}` in the policy",
        )
    for hit in features.secrets:
        where = f"{hit.path}:{hit.line}" if hit.line else hit.path
        rule("secret", "reject", f"adds what looks like a credential ({hit.kind}) at `{where}`")

    # Size and kind of change, per category.
    for name, stats in features.categories.items():
        category = policy.categories.get(name)
        weight = category.weight if category else 1.0
        raw = weight * (w.touch + w.per_10_lines * stats.lines / 10)
        points = min(raw, w.category_max)
        add(
            f"category:{name}",
            f"{plural(stats.files, 'file')}, +{stats.added} -{stats.removed}",
            points,
            f"changes {name} files (weight {weight:g})",
        )
    deleted = [
        f.path
        for f in features.files
        if f.status == "removed" and f.path not in features.tests_deleted
    ]
    new = features.deps("added")
    removed_fns = list(features.test_functions_removed)
    runner = verification.tests if verification is not None else None
    if runner is not None and len(runner.removed) > len(removed_fns):
        # Tests the runner saw on the base and not on the patch, if it saw more.
        removed_fns = list(runner.removed)
    # Factors that count things: (factor, the things, points each, what the reason says).
    counted: list[tuple[str, list[str], float, str]] = [
        ("deleted_files", deleted, w.deleted_file, "deletes"),
        (
            "renamed_files",
            [f"{f.old_path} → {f.path}" for f in features.files if f.status == "renamed"],
            w.renamed_file,
            "renames",
        ),
        (
            "binary_files",
            [f.path for f in features.files if f.binary],
            w.binary_file,
            "binary files nobody can review in the diff:",
        ),
        (
            "executable_bit",
            [f.path for f in features.files if f.made_executable],
            w.executable_bit,
            "makes executable:",
        ),
        ("new_dependencies", [f"{d.name} {d.new or ''}".strip() for d in new], w.new_dependency,
         "adds"),
        (
            "changed_dependencies",
            [f"{d.name} {d.old} → {d.new}" for d in features.deps("changed")],
            w.changed_dependency,
            "changes",
        ),
        (
            "removed_dependencies",
            [d.name for d in features.deps("removed")],
            w.removed_dependency,
            "removes",
        ),
        ("tests_deleted", list(features.tests_deleted), w.test_deleted, "deletes test files:"),
        ("tests_removed", removed_fns, w.test_removed, "removes tests:"),
        ("tests_skipped", list(features.skips_added), w.test_skipped,
         "adds skip/xfail markers at"),
    ]  # fmt: skip
    for factor, items, each, says in counted:
        add(factor, str(len(items)), len(items) * each, f"{says} {_list(items)}")
    squats = possible_typosquats(features.dependencies)
    add(
        "typosquat_dependencies",
        str(len(squats)),
        len(squats) * w.typosquat_dependency,
        "adds " + _list([f"{d.name}` (one letter from `{near}`)" for d, near in squats]),
    )
    if squats:
        rule(
            "typosquat",
            "review",
            "a dependency it adds is one letter from a popular PyPI project and is not one "
            f"itself: {_list([f'{d.name}` (not `{near}`?)' for d, near in squats])}; check it "
            "is the package meant",
        )
    locked = [d.name for d in features.dependencies if not d.direct]
    add(
        "lockfile",
        f"{len(locked)} packages",
        min(len(locked) * w.changed_dependency, w.lockfile_max),
        f"the lockfile changes {_list(locked)}",
    )

    # Caps.
    caps = policy.caps
    over = []
    if len(features.files) > caps.files:
        over.append(f"{len(features.files)} files (cap {caps.files})")
    lines = features.lines_added + features.lines_removed
    if lines > caps.changed_lines:
        over.append(f"{lines} changed lines (cap {caps.changed_lines})")
    if len(new) > caps.new_dependencies:
        over.append(f"{len(new)} new dependencies (cap {caps.new_dependencies})")
    if over:
        rule("caps", caps.over, "over the policy's caps: " + "; ".join(over))

    _behaviour(features, policy, verification, tally)
    if verification is not None:
        # Only test files changed: tests it makes pass prove nothing about the code.
        # (A test file outranked by another category, tests/auth/..., is still a test.)
        tests = {*features.tests_added, *features.tests_modified, *features.tests_deleted}
        only_tests = bool(features.files) and all(f.path in tests for f in features.files)
        _verification(verification, policy, tally, only_tests=only_tests)
        if verification.bump is not None:
            _security_update(verification.bump, policy, tally)
    if trigger is not None and trigger.alert is not None:
        if getattr(policy.alerts, trigger.alert).mode == "review":
            what = "Dependabot" if trigger.alert == "dependabot" else "code scanning"
            rule(
                "alert_mode",
                "review",
                f"a maintainer approves every {what} fix (`alerts.{trigger.alert}.mode`: review)",
            )
    else:
        add("fixer", "human", w.fixer.human, "a person's change, scored from its diff alone")

    if history is not None and history.reverted_recently:
        n = history.reverted_recently
        add(
            "reverted_recently",
            str(n),
            min(n * w.reverted_recently, w.reverted_recently_max),
            f"{plural(n, 'change')} Patchwarden merged here in the last {HISTORY_DAYS} days "
            f"{'was' if n == 1 else 'were'} reverted",
        )

    total = sum(c.points for c in contributions)
    value = max(0, min(100, math.floor(total + 0.5)))
    t = policy.thresholds
    ladder: tuple[tuple[Decision, int], ...] = (
        ("automerge", t.automerge),
        ("review", t.review),
        ("draft", t.draft),
    )
    by_score: Decision = next((d for d, top in ladder if value <= top), "reject")
    if by_score == "reject":
        rule(
            "score", "reject", f"the score {value} is above the policy's draft threshold {t.draft}"
        )
    risk_decision = ladder_min(by_score, *(r.decision for r in rules))
    risk: Risk = _RISK[risk_decision]
    # Autonomy says what Patchwarden may do with its own changes; a person's is not capped.
    # Undoing its own merge is allowed further (merge.revert_automerge); undoing a
    # person's commit never merges without a person.
    reverts = trigger.reverts if trigger is not None else None
    autonomy, learned = policy.autonomy, None
    kind = kind_of(
        verification.fixer if verification is not None else None,
        features.categories,
        {name: c.weight for name, c in policy.categories.items()},
    )
    held = history.standing(kind, policy) if history is not None and not human else None
    if held is not None:
        autonomy = held.autonomy
        learned = Learned(
            kind=kind,
            state=held.state,
            autonomy=held.autonomy,
            explanation=held.explain(),
            may_earn=may_earn(kind, policy.learn, base=policy.autonomy),
        )
    ceiling: Decision = "automerge" if human else AUTONOMY_CEILING[autonomy]
    if reverts == "bot" and policy.merge.revert_automerge:
        ceiling = "automerge"
    if ladder_min(risk_decision, ceiling) != risk_decision:
        why = f"the repository's autonomy is `{policy.autonomy}`"
        if learned is not None and learned.state != "base":
            why = learned.explanation
        rule("autonomy", ceiling, why)
    if reverts == "human" and ladder_min(risk_decision, ceiling, "review") != ladder_min(
        risk_decision, ceiling
    ):
        rule("reverts_person", "review", "it reverts a person's commit: a person approves that")
        ceiling = ladder_min(ceiling, "review")
    decision = ladder_min(risk_decision, ceiling)
    return Score(
        score=value,
        decision=decision,
        risk=risk,
        by_score=by_score,
        autonomy=autonomy,
        contributions=contributions,
        rules=rules,
        thresholds=t,
        kind=kind,
        learned=learned,
        files=len(features.files),
        lines_added=features.lines_added,
        lines_removed=features.lines_removed,
    )


class _Tally:
    def __init__(self) -> None:
        self.contributions: list[Contribution] = []
        self.rules: list[RuleHit] = []

    def add(self, factor: str, value: str, points: float, reason: str) -> None:
        if points:
            self.contributions.append(
                Contribution(factor=factor, value=value, points=round(points, 2), reason=reason)
            )

    def rule(self, name: str, decision: Decision, reason: str) -> None:
        self.rules.append(RuleHit(rule=name, decision=decision, reason=reason))


def _behaviour(
    features: Features, policy: Policy, verification: Verification | None, tally: _Tally
) -> None:
    """A factor per kind of behaviour the change adds, and the rule that holds a
    fixer's change with any of them for a person (``behaviour.never_automerge``)."""
    by_kind: dict[str, list[Behaviour]] = {}
    for b in features.behaviours:
        by_kind.setdefault(b.kind, []).append(b)
    rules = policy.behaviour
    for kind in KINDS:
        found = by_kind.get(kind)
        if found:
            places = [f"{b.what}` at `{b.where}" if b.line else b.where for b in found]
            tally.add(
                f"behaviour:{kind}",
                plural(len(found), "place"),
                getattr(rules.weights, kind),
                f"adds {SAYS[kind]}: {_list(places)}",
            )
    fixer = verification.fixer if verification is not None else None
    held = fixer in rules.never_automerge or (
        fixer is not None and fixer not in _FIXER_REASON and "llm" in rules.never_automerge
    )
    if held and by_kind:
        kinds = ", ".join(SAYS[k] for k in KINDS if k in by_kind)
        tally.rule(
            "behaviour",
            "review",
            f"written by the {fixer} fixer, it adds {kinds}: a maintainer reviews that "
            "(behaviour.never_automerge)",
        )


_SIZES = ("none", *BUMP_SIZES)  # `merge_up_to` may also say none


def _security_update(bump: Bump, policy: Policy, tally: _Tally) -> None:
    """A dependency raised past a vulnerability: its size, what it installs anew, and
    the rules of ``alerts.dependabot`` (how far such a change may go by itself)."""
    w, rules = policy.weights, policy.alerts.dependabot
    was = f"from {bump.old} " if bump.old else ""
    why = f" ({bump.severity})" if bump.severity else ""
    tally.add(
        "security_update",
        f"{bump.size}: {bump.package} {bump.old or '?'} → {bump.new}",
        getattr(w.security_update, bump.size),
        f"raises `{bump.package}` {was}to {bump.new}, a {bump.size} bump, for {bump.advisory}{why}",
    )
    known = bump.severity in SEVERITIES  # the payload's word: never an attribute's name
    credit = getattr(w.advisory_severity, bump.severity) if known else 0.0
    tally.add(
        "advisory_severity",
        bump.severity,
        credit,
        f"fixes a {bump.severity} advisory: leaving it open is a risk of its own",
    )
    if bump.locks:
        tally.add(
            "regenerated_lock",
            str(len(bump.locks)),
            len(bump.locks) * w.regenerated_lock,
            f"regenerates {_list([p.replace('`', chr(39)) for p in bump.locks])} with its "
            "own tool, which moved: "
            f"{_list([line.split(': ', 1)[-1] for line in bump.locked])}",
        )
    tally.add(
        "new_transitive_dependencies",
        str(len(bump.installed)),
        len(bump.installed) * w.new_transitive_dependency,
        f"the update installs packages the base did not have: {_list(bump.installed)}",
    )
    if _SIZES.index(bump.size) > _SIZES.index(rules.merge_up_to):
        tally.rule(
            "security_update",
            "review",
            f"a {bump.size} bump of `{bump.package}` waits for a maintainer "
            f"(`alerts.dependabot.merge_up_to`: {rules.merge_up_to})",
        )


def _verification(
    v: Verification, policy: Policy, tally: _Tally, *, only_tests: bool = False
) -> None:
    """Factors and rules from the session's own checks."""
    add, rule = tally.add, tally.rule
    w = policy.weights
    fixer_points = getattr(w.fixer, v.fixer, w.fixer.llm)  # an unknown fixer: as a model
    add("fixer", v.fixer, fixer_points, _FIXER_REASON.get(v.fixer, "an unknown fixer"))
    tests = v.tests
    if v.unfinished:
        # A person looks at it only when a test shows it does something: otherwise it is
        # a lost model's last edit, and a pull request would be noise.
        shown = tests is not None and bool(tests.fixed or tests.reproduced)
        rule(
            "unfinished",
            "review" if shown else "reject",
            f"the fixer did not finish ({v.unfinished[:200]}); this is the change it had "
            "made when it stopped"
            + ("" if shown else ", and no test shows that it fixes anything"),
        )
    if tests is None or tests.head is None:
        why = "no test command is known" if tests is None else "the tests did not run"
        add("tests_not_run", "no", w.tests_not_run, f"{why}: nothing checked the change")
        rule("tests_not_run", "review", f"{why}; a person has to check the change")
    else:
        if tests.broken:
            rule(
                "tests_broken", "reject", f"breaks tests that passed before: {_list(tests.broken)}"
            )
        elif tests.only_already_failing:
            n = len(tests.already_failing)
            add(
                "tests_already_failing",
                str(n),
                w.tests_already_failing,
                f"{n} test{'s' if n > 1 else ''} fail{'' if n > 1 else 's'} on the base and "
                f"on the patch alike, not because of it: {_list(tests.already_failing)}",
            )
        elif not tests.head.ok:
            what = "timed out" if tests.head.timed_out else f"exit code {tests.head.exit_code}"
            base = tests.base.counts if tests.base is not None else None
            ran = base.total - base.skipped if base is not None else 0
            if base is not None and ran and 2 * (base.failed + base.errored) > ran:
                what += (
                    f"; {base.failed + base.errored} of {ran} fail on the "
                    "base too: the test environment looks broken"
                )
            add(
                "tests_still_failing",
                what,
                w.tests_still_failing,
                "the tests do not pass on the patch",
            )
            rule("tests_failing", "draft", f"the tests do not pass on the patch ({what})")
        if tests.fixed and only_tests:
            # No credit, and a person looks: either the tests were wrong, or the change
            # made them agree with the bug.
            rule(
                "tests_edited_to_pass",
                "review",
                f"makes failing tests pass only by changing tests ({_list(tests.fixed)}): "
                "nothing shows the code was fixed",
            )
        elif tests.fixed:
            credit = max(len(tests.fixed) * w.tests_fixed, w.tests_fixed_max)
            add(
                "tests_fixed",
                str(len(tests.fixed)),
                credit,
                f"makes failing tests pass: {_list(tests.fixed)}",
            )
        unproven = tests.reproducible and not tests.fixed and not tests.reproduced
        if v.fixer == "llm" and tests.passing and unproven:
            add(
                "not_reproduced",
                "no",
                w.not_reproduced,
                "no test fails without the change and passes with it: nothing shows the "
                "problem was reproduced, or that this fixes it",
            )
    findings_points = 0.0
    for delta in v.findings:
        if not delta.ran and not delta.error and not delta.files:
            continue  # nothing it checks changed (ruff and bandit on a change with no .py)
        if not delta.ran or delta.error:
            add(
                f"tool:{delta.tool}",
                "did not run",
                w.tool_failed,
                f"{delta.tool} did not check the change: {delta.error or 'not run'}",
            )
            rule("tool_failed", "review", f"{delta.tool} did not check the change")
            continue
        high = [f for f in delta.new if f.severity == "high"]
        for f in high:
            rule(
                "high_finding",
                "reject",
                f"{delta.tool} reports a new high-severity finding: {f.rule} at "
                f"`{f.path}:{f.line}`",
            )
        counts = {
            s: sum(1 for f in delta.new if f.severity == s) for s in ("medium", "low", "info")
        }
        points = sum(counts[s] * getattr(w.finding, s) for s in counts)
        points = min(points, max(0.0, w.findings_max - findings_points))
        findings_points += points
        if delta.new or delta.fixed:
            parts = [f"{n} {s}" for s, n in counts.items() if n]
            if high:
                parts.insert(0, f"{len(high)} high")
            value = f"{len(delta.new)} new" + (f" ({', '.join(parts)})" if parts else "")
            value += f", {len(delta.fixed)} fixed"
            add(
                f"findings:{delta.tool}",
                value,
                points,
                f"new {delta.tool} findings on the changed files",
            )
    usage = v.usage
    if usage is not None:
        heavy = []
        if v.max_tokens and usage.total_tokens > 0.75 * v.max_tokens:
            heavy.append(f"{usage.total_tokens:,} of {v.max_tokens:,} tokens")
        if v.max_cost_usd and usage.cost_usd > 0.75 * v.max_cost_usd:
            heavy.append(f"${usage.cost_usd:.2f} of ${v.max_cost_usd:.2f}")
        if heavy:
            add(
                "budget",
                "; ".join(heavy),
                w.budget_heavy,
                "the fixer needed most of its budget: it struggled",
            )


_RISK: dict[Decision, Risk] = {
    "automerge": "low",
    "review": "medium",
    "draft": "high",
    "reject": "high",
}
_FIXER_REASON = {
    "llm": "written by a model: read it as a stranger's patch",
    "lint": "mechanical ruff/semgrep autofixes",
    "revert": "a git revert of one commit: the one bisect blamed, or the one named",
    "dependency": "a dependency's constraints raised past a vulnerability, no model",
}
