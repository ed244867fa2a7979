"""The score's factors and hard rules from what the session checked, as small named
functions (as app/policy/factors.py has for the diff): who wrote the change and whether
it finished, the tests on the base and the patch, new linter findings, the model budget
spent, and a security update's size and rules.
"""

from __future__ import annotations

from app.policy.evidence import BUMP_SIZES, Bump, TestDelta
from app.policy.features import Features
from app.policy.policy_model import SEVERITIES, Weights
from app.policy.score_types import Scoring, Tally, Verification, listed
from app.words import plural

MAX_SCOPE_PLACES = 5  # places that add points; every one is named


def fixer(s: Scoring, tally: Tally) -> None:
    """Who wrote the change: a fixer's points, and a fixer that stopped before it
    finished (a person looks only when a test shows the change does something)."""
    v = s.verification
    if v is None:
        return
    points = s.w.fixer_points(v.weighed_as)
    tally.add("fixer", v.fixer, points, v.about or "a fixer Patchwarden has no record of")
    if v.unfinished:
        shown = v.tests is not None and bool(v.tests.fixed or v.tests.reproduced)
        tally.rule(
            "unfinished",
            "review" if shown else "reject",
            f"the fixer did not finish ({v.unfinished[:200]}); this is the change it had "
            "made when it stopped"
            + ("" if shown else ", and no test shows that it fixes anything"),
        )


def scope(s: Scoring, tally: Tally) -> None:
    """A model's change that touches what the task does not explain: points per place,
    and the rule that holds it (``scope.outside``, review by default). A change whose
    scope was not checked is held as well: containment fails closed."""
    v = s.verification
    if v is None or not v.model:
        return
    cap = s.policy.scope.outside
    if v.scope is None and cap != "automerge":
        why = "nothing checked which of its lines the task explains"
        tally.rule("outside_scope", cap, f"a {_who(v)}'s change, and {why}")
    if v.scope is None:
        return
    places = [p.shown() for p in v.scope.outside]
    if not places:
        return
    shown = "; ".join(places[:3]) + (f" and {len(places) - 3} more" if len(places) > 3 else "")
    tally.add(
        "outside_scope",
        str(len(places)),
        min(len(places), MAX_SCOPE_PLACES) * s.w.outside_scope,
        "changes places the task does not explain (the rule below names them)",
    )
    if cap == "automerge":
        return  # relaxed by the maintainer: the points and the PR body's list remain
    tally.rule(
        "outside_scope",
        cap,
        f"a {_who(v)}'s change outside the task's scope waits for a person "
        f"(`scope.outside`: {cap}): {shown}",
    )


def _who(v: Verification) -> str:
    return "model" if v.model else f"`{v.fixer}` fixer"


def tests_run(s: Scoring, tally: Tally) -> None:
    """The tests on the patch: not run, broken, failing before and after alike, or
    still failing (and whether the base's failures say the environment is broken)."""
    if s.verification is None:
        return
    tests, w = s.verification.tests, s.w
    if tests is None or tests.head is None:
        why = "no test command is known" if tests is None else "the tests did not run"
        tally.add("tests_not_run", "no", w.tests_not_run, f"{why}: nothing checked the change")
        tally.rule("tests_not_run", "review", f"{why}; a person has to check the change")
        return
    if tests.broken:
        why = f"breaks tests that passed before: {listed(tests.broken)}"
        tally.rule("tests_broken", "reject", why)
    elif tests.only_already_failing:
        n = len(tests.already_failing)
        tally.add(
            "tests_already_failing",
            str(n),
            w.tests_already_failing,
            f"{n} test{'s' if n > 1 else ''} fail{'' if n > 1 else 's'} on the base and "
            f"on the patch alike, not because of it: {listed(tests.already_failing)}",
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
        why = "the tests do not pass on the patch"
        tally.add("tests_still_failing", what, w.tests_still_failing, why)
        tally.rule("tests_failing", "draft", f"{why} ({what})")


def tests_fixed(s: Scoring, tally: Tally) -> None:
    """Credit for tests the change makes pass — none when it changed only tests (then
    either the tests were wrong, or the change made them agree with the bug) — and
    points for a model's change that nothing reproduced."""
    v = s.verification
    tests = v.tests if v is not None else None
    if v is None or tests is None or tests.head is None:
        return
    w = s.w
    if tests.fixed and _only_tests(s.features):
        tally.rule(
            "tests_edited_to_pass",
            "review",
            f"makes failing tests pass only by changing tests ({listed(tests.fixed)}): "
            "nothing shows the code was fixed",
        )
    elif tests.fixed:
        credit = max(len(tests.fixed) * w.tests_fixed, w.tests_fixed_max)
        why = f"makes failing tests pass: {listed(tests.fixed)}"
        tally.add("tests_fixed", str(len(tests.fixed)), credit, why)
    if v.model and tests.passing and _unproven(tests):
        tally.add(
            "not_reproduced",
            "no",
            w.not_reproduced,
            "no test fails without the change and passes with it: nothing shows the "
            "problem was reproduced, or that this fixes it",
        )


def model_tests_only(s: Scoring, tally: Tally) -> None:
    """A model's change that only tests it wrote itself show to work (none of the
    repository's own tests failed before it and pass with it) is a draft at most, unless
    independently sampled tests agreed on the bug or the issue's own example backs them:
    one model's test may assert the bug it was asked to show, and then a wrong change
    passes it."""
    v = s.verification
    tests = v.tests if v is not None else None
    if v is None or not v.model or tests is None or tests.fixed or v.agreed:
        return
    if tests.reproduced:
        tally.rule(
            "model_tests_only",
            "draft",
            f"only tests the model wrote show that it works ({listed(tests.reproduced)}): "
            "no test of the repository fails without it, and no second test agreed",
        )


def tests_cannot_choose(s: Scoring, tally: Tally) -> None:
    """A change that other changes match on every test (the repair's mechanical round
    found a few that pass as well) is a draft at most: the tests cannot tell which one
    fixes the bug, and a maintainer chooses among them (the description names them)."""
    v = s.verification
    if v is None or not v.alternatives:
        return
    n = v.alternatives
    tally.rule(
        "tests_cannot_choose",
        "draft",
        f"{plural(n, 'other change')} {'passes' if n == 1 else 'pass'} every test as well "
        "(the description names them): the tests cannot tell which one fixes the bug",
    )


def _only_tests(features: Features) -> bool:
    """Only test files changed (a test file outranked by another category,
    tests/auth/..., is still a test)."""
    tests = {*features.tests_added, *features.tests_modified, *features.tests_deleted}
    return bool(features.files) and all(f.path in tests for f in features.files)


def _unproven(tests: TestDelta) -> bool:
    return tests.reproducible and not tests.fixed and not tests.reproduced


def findings(s: Scoring, tally: Tally) -> None:
    """New linter findings on the changed files: points by severity up to a cap, a
    person looks when a tool did not check the change, and a new high one rejects."""
    if s.verification is None:
        return
    w, spent = s.w, 0.0
    for delta in s.verification.findings:
        if not delta.ran and not delta.error and not delta.files:
            continue  # nothing it checks changed (ruff and bandit on a change with no .py)
        if not delta.ran or delta.error:
            why = f"{delta.tool} did not check the change"
            tally.add(f"tool:{delta.tool}", "did not run", w.tool_failed,
                      f"{why}: {delta.error or 'not run'}")  # fmt: skip
            tally.rule("tool_failed", "review", why)
            continue
        high = [f for f in delta.new if f.severity == "high"]
        for f in high:
            tally.rule(
                "high_finding",
                "reject",
                f"{delta.tool} reports a new high-severity finding: {f.rule} at "
                f"`{f.path}:{f.line}`",
            )
        counts = {
            sev: sum(1 for f in delta.new if f.severity == sev) for sev in ("medium", "low", "info")
        }
        points = sum(n * getattr(w.finding, sev) for sev, n in counts.items())
        points = min(points, max(0.0, w.findings_max - spent))
        spent += points
        if delta.new or delta.fixed:
            parts = [f"{n} {sev}" for sev, n in counts.items() if n]
            if high:
                parts.insert(0, f"{len(high)} high")
            value = f"{len(delta.new)} new" + (f" ({', '.join(parts)})" if parts else "")
            value += f", {len(delta.fixed)} fixed"
            why = f"new {delta.tool} findings on the changed files"
            tally.add(f"findings:{delta.tool}", value, points, why)


def budget(s: Scoring, tally: Tally) -> None:
    """A fixer that needed most of its budget struggled."""
    v = s.verification
    usage = v.usage if v is not None else None
    if v is None or usage is None:
        return
    heavy = []
    if v.max_tokens and usage.total_tokens > 0.75 * v.max_tokens:
        heavy.append(f"{usage.total_tokens:,} of {v.max_tokens:,} tokens")
    if v.max_cost_usd and usage.cost_usd > 0.75 * v.max_cost_usd:
        heavy.append(f"${usage.cost_usd:.2f} of ${v.max_cost_usd:.2f}")
    if heavy:
        why = "the fixer needed most of its budget: it struggled"
        tally.add("budget", "; ".join(heavy), s.w.budget_heavy, why)


_SIZES = ("none", *BUMP_SIZES)  # `merge_up_to` may also say none


def security_update(s: Scoring, tally: Tally) -> None:
    """A dependency raised past a vulnerability: its size, what it installs anew, and
    the rules of ``alerts.dependabot`` (how far such a change may go by itself)."""
    bump = s.verification.bump if s.verification is not None else None
    if bump is None:
        return
    w, rules = s.w, s.policy.alerts.dependabot
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
    _installed(bump, w, tally)
    if _SIZES.index(bump.size) > _SIZES.index(rules.merge_up_to):
        tally.rule(
            "security_update",
            "review",
            f"a {bump.size} bump of `{bump.package}` waits for a maintainer "
            f"(`alerts.dependabot.merge_up_to`: {rules.merge_up_to})",
        )


def _installed(bump: Bump, w: Weights, tally: Tally) -> None:
    """What a security update's locks moved, and the packages it installs anew."""
    if bump.locks:
        tally.add(
            "regenerated_lock",
            str(len(bump.locks)),
            len(bump.locks) * w.regenerated_lock,
            f"regenerates {listed([p.replace('`', chr(39)) for p in bump.locks])} with its "
            "own tool, which moved: "
            f"{listed([line.split(': ', 1)[-1] for line in bump.locked])}",
        )
    tally.add(
        "new_transitive_dependencies",
        str(len(bump.installed)),
        len(bump.installed) * w.new_transitive_dependency,
        f"the update installs packages the base did not have: {listed(bump.installed)}",
    )
