"""Earned autonomy (app/policy/learn.py): a pure function from a repository's record and
the policy's ``learn`` bounds to what each kind of change may do, table-tested, and the
hard rules that no record lifts."""

from __future__ import annotations

from typing import Any

import pytest

from app.policy.diff import parse_diff
from app.policy.evidence import Finding, FindingsDelta, Scope, TestDelta
from app.policy.features import extract
from app.policy.learn import ALL, Past, kind_of, standing, standings
from app.policy.policy_model import PolicyError
from app.policy.score import History, Score, Trigger, Verification, score
from tests.policy_helpers import by, default_policy, gdiff, passed, policy_with

DAY = 86400.0
NOW = 1_800_000_000.0
ON = "autonomy: review\nlearn:\n  ceiling: automerge\n"
PY_CMD = ["python", "-m", "pytest", "-q"]


def ago(days: float) -> float:
    return NOW - days * DAY


def merged(n: int, *, kind: str = "lint", start: float = 20.0, step: float = 1.0) -> list[Past]:
    """``n`` clean merges of ``kind``, the first ``start`` days ago, ``step`` days apart."""
    return [Past(kind=kind, merged_at=ago(start - i * step)) for i in range(n)]


def at(past: list[Past], *, policy: str = ON, kind: str = "lint", **kw: Any) -> tuple[str, str]:
    s = standing(
        kind, past, policy_with(policy).learn, base=policy_with(policy).autonomy, now=NOW, **kw
    )
    return s.state, s.autonomy


REVERTED = Past(kind="lint", merged_at=ago(5), reverted_at=ago(4))
REJECTED = Past(kind="lint", rejected_at=ago(3))


@pytest.mark.parametrize(
    ("past", "policy", "kw", "expected"),
    [
        ([], ON, {}, ("base", "review")),
        (merged(9), ON, {}, ("base", "review")),
        (merged(10), ON, {}, ("earned", "automerge")),
        (merged(12), ON, {}, ("earned", "automerge")),
        # the default ceiling (review) earns nothing
        (merged(12), "autonomy: review\n", {}, ("base", "review")),
        # `propose` earns `review` under a review ceiling
        (merged(10), "autonomy: propose\nlearn:\n  ceiling: review\n", {}, ("earned", "review")),
        # a kind the policy does not list may not earn
        (merged(12), ON + "  categories: [docs]\n", {}, ("base", "review")),
        # merges older than the window do not count
        (merged(10, start=40), ON, {}, ("base", "review")),
        (merged(10, start=40), ON + "  window_days: 60\n", {}, ("earned", "automerge")),
        # a revert demotes; the merges before it no longer count
        ([*merged(10, start=20), REVERTED], ON, {}, ("demoted", "review")),
        # ... and ten clean merges after it earn it back
        ([REVERTED, *merged(10, start=3, step=0.2)], ON, {}, ("earned", "automerge")),
        ([REVERTED, *merged(9, start=3, step=0.2)], ON, {}, ("demoted", "review")),
        # one rejection is not enough; two are
        ([*merged(10), REJECTED], ON, {}, ("earned", "automerge")),
        (
            [*merged(10), REJECTED, Past(kind="lint", rejected_at=ago(2))],
            ON,
            {},
            ("demoted", "review"),
        ),
        # a repository on automerge is held at review after a revert, learning on or off
        ([REVERTED], "autonomy: automerge\n", {}, ("demoted", "review")),
        ([REVERTED], "autonomy: propose\n", {}, ("demoted", "propose")),
        # a setback older than the window is forgotten
        (
            [Past(kind="lint", merged_at=ago(45), reverted_at=ago(44))],
            "autonomy: automerge\n",
            {},
            ("base", "automerge"),
        ),
        # another kind's record does not count
        (merged(12, kind="docs"), ON, {}, ("base", "review")),
        (
            [Past(kind="docs", merged_at=ago(5), reverted_at=ago(4)), *merged(10)],
            ON,
            {},
            ("earned", "automerge"),
        ),
        # any revert ends the streak, even below the demotion threshold
        (
            [*merged(10, start=20), REVERTED],
            ON + "  demote_after_reverts: 2\n",
            {},
            ("base", "review"),
        ),
        # a reset forgets what came before it: merges and setbacks alike
        (merged(12), ON, {"resets": {"lint": ago(1)}}, ("base", "review")),
        (merged(12), ON, {"resets": {ALL: ago(1)}}, ("base", "review")),
        (merged(12), ON, {"resets": {"docs": ago(1)}}, ("earned", "automerge")),
        ([REVERTED], "autonomy: automerge\n", {"resets": {ALL: ago(1)}}, ("base", "automerge")),
        # a merge in the future of `now` (clock skew) does not count
        ([*merged(9), Past(kind="lint", merged_at=NOW + 60)], ON, {}, ("base", "review")),
    ],
)
def test_standing(
    past: list[Past], policy: str, kw: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert at(past, policy=policy, **kw) == expected


def test_the_explanation_gives_the_record() -> None:
    rules = policy_with(ON).learn
    s = standing("lint", [*merged(12), REJECTED], rules, base="review", now=NOW)
    assert s.explain() == (
        "lint fixes merge themselves here: 12 merged in 30 days, 0 reverted, 1 closed unmerged"
    )
    s = standing(
        "lint", [*merged(10), REVERTED, *merged(2, start=2)], rules, base="review", now=NOW
    )
    assert s.explain().startswith("lint fixes wait for a review here after a setback: 2 merged")
    assert "1 reverted" in s.explain()
    assert "10 clean merges earn it back" in s.explain()
    s = standing("docs", merged(3, kind="docs"), rules, base="review", now=NOW)
    assert "3 merged in 30 days" in s.explain()
    assert "(of 10 needed)" in s.explain()


def test_standings_covers_every_kind_seen_and_every_kind_that_may_earn() -> None:
    got = standings(
        [*merged(10), *merged(2, kind="source")], policy_with(ON).learn, base="review", now=NOW
    )
    assert sorted(got) == ["docs", "lint", "source", "tests"]
    assert got["lint"].state == "earned"
    assert got["source"].state == "base"


@pytest.mark.parametrize(
    ("fixer", "categories", "kind"),
    [
        ("lint", ["source", "tests"], "lint"),
        ("revert", ["source", "docs"], "revert"),
        # a fixer's change in a riskier category is that category's, not the fixer's
        ("lint", ["security", "source"], "security"),
        ("revert", ["dependencies"], "dependencies"),
        # a fixer that makes no kind of its own (a model's): its files' kind
        (None, ["docs"], "docs"),
        (None, ["docs", "tests"], "tests"),
        (None, ["tests", "source"], "source"),
        (None, ["source", "dependencies"], "dependencies"),
        (None, [], "source"),
    ],
)
def test_the_kind_of_a_change(fixer: str | None, categories: list[str], kind: str) -> None:
    weights = {n: c.weight for n, c in default_policy().categories.items()}
    assert kind_of(fixer, categories, weights) == kind


def test_an_unknown_kind_in_the_policy_is_refused_with_a_hint() -> None:
    with pytest.raises(PolicyError, match=r"'lnit' is no kind of change; did you mean `lint`"):
        policy_with("learn:\n  categories: [lnit]\n")
    with pytest.raises(PolicyError, match="promote_after"):
        policy_with("learn:\n  promote_after: 0\n")


# -- through the score: only the autonomy moves --------------------------------------------

LINT_FIX = gdiff("src/util.py", remove=["import os"])
EARNED = History(past=tuple(merged(12)), now=NOW)


def scored(
    diff: str, v: Verification, *, policy: str = ON, history: History | None = EARNED
) -> Score:
    p = policy_with(policy)
    return score(extract(parse_diff(diff), p), p, verification=v, history=history)


def lint(**kw: Any) -> Verification:
    tests = kw.pop(
        "tests", TestDelta(command=PY_CMD, source="detected", base=passed(5), head=passed(5))
    )
    return by(kw.pop("fixer", "lint"), tests=tests, **{"scope": Scope(), **kw})


def test_an_earned_kind_merges_itself_and_the_score_says_why() -> None:
    s = scored(LINT_FIX, lint())
    assert s.decision == "automerge"
    assert s.autonomy == "automerge"
    assert s.learned is not None
    assert s.learned.state == "earned"
    assert "lint fixes merge themselves here: 12 merged" in s.learned.explanation
    # without the record, or with too short a one, it waits
    assert scored(LINT_FIX, lint(), history=None).decision == "review"
    short = History(past=tuple(merged(9)), now=NOW)
    waits = scored(LINT_FIX, lint(), history=short)
    assert waits.decision == "review"
    assert waits.learned is not None
    assert "9 merged in 30 days" in waits.learned.explanation


def test_a_demoted_kind_waits_even_on_an_automerge_repository() -> None:
    history = History(past=(REVERTED,), now=NOW)
    s = scored(LINT_FIX, lint(), policy="autonomy: automerge\n", history=history)
    assert s.decision == "review"
    (hit,) = [r for r in s.rules if r.rule == "autonomy"]
    assert "after a setback" in hit.reason


SECRET = 'TOKEN = "ghp_' + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c" + '"'
HARD: list[tuple[str, str, Verification, str]] = [
    ("protected", gdiff(".github/workflows/ci.yml", ["on: push"]), lint(), "protected_path"),
    ("secret", gdiff("src/util.py", [SECRET]), lint(), "secret"),
    (
        "broken-test",
        LINT_FIX,
        lint(
            tests=TestDelta(
                command=PY_CMD,
                source="detected",
                base=passed(5),
                head=passed(4, failed=1),
                broken=["tests/test_util.py::test_greet"],
            )
        ),
        "tests_broken",
    ),
    (
        "high-finding",
        LINT_FIX,
        lint(
            findings=(
                FindingsDelta(
                    tool="bandit",
                    new=[
                        Finding(
                            tool="bandit",
                            rule="B602",
                            path="src/util.py",
                            line=1,
                            severity="high",
                            message="shell",
                        )
                    ],
                ),
            )
        ),
        "high_finding",
    ),
]


@pytest.mark.parametrize(("diff", "v", "rule"), [h[1:] for h in HARD], ids=[h[0] for h in HARD])
def test_no_record_lifts_a_hard_rule(diff: str, v: Verification, rule: str) -> None:
    # the longest clean record any kind could have, learning on to the top
    forever = History(
        past=tuple(merged(500, start=29, step=0.05) + merged(500, kind="ci", start=29, step=0.05)),
        now=NOW,
    )
    s = scored(diff, v, history=forever, policy=ON + "  categories: [lint, source, ci]\n")
    assert s.decision == "reject"
    assert rule in [r.rule for r in s.rules]


def test_behaviour_in_a_models_change_still_waits_whatever_it_earned() -> None:
    diff = gdiff("src/util.py", ["import os", "KEY = os.environ['KEY']"])
    record = History(past=tuple(merged(20, kind="source")), now=NOW)
    s = scored(diff, lint(fixer="llm"), policy=ON + "  categories: [source]\n", history=record)
    assert s.learned is not None
    assert s.learned.state == "earned"
    assert s.decision == "review"
    assert "behaviour" in [r.rule for r in s.rules]


def test_a_persons_change_is_never_judged_by_a_record() -> None:
    p = policy_with(ON)
    s = score(extract(parse_diff(LINT_FIX), p), p, trigger=Trigger("human"), history=EARNED)
    assert s.learned is None


def test_an_operator_s_default_policy_older_than_a_key_is_named_with_what_to_do() -> None:
    """An operator's own default policy (PATCHWARDEN_DEFAULT_POLICY) written before a
    key existed is refused naming that file, the key, and where a current one is; a
    repository's file, merged over it, is not blamed for what it need not say."""
    import yaml

    from app.policy.policy_model import PolicyError, load_policy
    from app.sessions.policyfile import default_policy_text

    old = yaml.safe_load(default_policy_text())
    del old["learn"]
    with pytest.raises(PolicyError) as err:
        load_policy(yaml.safe_dump(old), "autonomy: review\n", default_source="/etc/pw/old.yml")
    assert str(err.value).startswith("/etc/pw/old.yml: `learn`: missing from the default policy")
    assert "policies/default.yml" in str(err.value)


def test_the_record_read_from_outcomes_and_trust_events() -> None:
    from app.contract.lifecycle_rules import record_of
    from app.store.models import Outcome, TrustEvent

    def change(job: int, pr: int, **kw: Any) -> Outcome:
        return Outcome(
            job_id=job,
            repo="o/r",
            kind="fix",
            trigger="comment",
            created_at=ago(20),
            pr_number=pr,
            category="lint",
            **kw,
        )

    outcomes = [
        change(1, 11, merged_at=ago(10), reverted_by_pr=21),  # reverted: the revert merged
        change(2, 12, merged_at=ago(9), reverted_by_pr=22),  # its revert never merged
        change(3, 13, merged_at=ago(8)),  # reverted with GitHub's Revert button
        change(4, 14, merged_at=ago(7)),  # closed, reopened, merged after all
        change(5, 15),  # closed for good
        Outcome(
            job_id=6,
            repo="o/r",
            kind="revert",
            trigger="request",
            created_at=ago(6),
            pr_number=21,
            merged_at=ago(5),
            category="revert",
        ),
        Outcome(
            job_id=7,
            repo="o/r",
            kind="revert",
            trigger="request",
            created_at=ago(6),
            pr_number=22,
            category="revert",
        ),
    ]
    events = [
        TrustEvent("o/r", "reverted", "lint", ago(4), actor="carol", pr_number=13),
        TrustEvent("o/r", "rejected", "lint", ago(6), actor="carol", pr_number=14),
        TrustEvent("o/r", "rejected", "lint", ago(3), actor="carol", pr_number=15),
        TrustEvent("o/r", "reset", "*", ago(30), actor="alice"),
        TrustEvent("o/r", "reset", "*", ago(2), actor="alice"),
        TrustEvent("o/r", "reset", "docs", ago(1), actor="alice"),
    ]
    past, resets = record_of(outcomes, events)
    lint = [p for p in past if p.kind == "lint"]
    assert [(p.merged_at, p.reverted_at, p.rejected_at) for p in lint] == [
        (ago(10), ago(5), None),
        (ago(9), None, None),
        (ago(8), ago(4), None),
        (ago(7), None, None),
        (None, None, ago(3)),
    ]
    assert resets == (("*", ago(2)), ("docs", ago(1)))
