"""The risk score and the decision: a deterministic function of features and policy.

``score`` runs the table of factors and hard rules (app/policy/factors.py: each a small
named function adding points with their value and reason, or a rule with the most it
allows), keeps the sum of the points within 0-100 and reads the decision off the
thresholds; the hard rules then cap it (``reject`` for a protected path, a credential, a
broken test, a new high-severity finding, a diff that cannot be read whole), and
``autonomy`` — the repository's, or what the change's kind has earned here — caps it
last. The ladder, most cautious first: reject, draft, review, automerge. Same inputs,
same output. docs/policy.md follows the same order.
"""

from __future__ import annotations

import math
from dataclasses import replace

from app.policy import checked, factors
from app.policy.diff import parse_diff
from app.policy.evidence import Session
from app.policy.features import Features, extract
from app.policy.learn import kind_of, may_earn
from app.policy.policy_model import (
    AUTONOMY_CEILING,
    Autonomy,
    Decision,
    Policy,
    Thresholds,
    ladder_min,
)
from app.policy.score_types import (
    HISTORY_DAYS,
    Contribution,
    Factor,
    History,
    Learned,
    Risk,
    RuleHit,
    Score,
    Scoring,
    Tally,
    Trigger,
    TriggerKind,
    Verification,
)

__all__ = [
    "HISTORY_DAYS",
    "Contribution",
    "History",
    "Learned",
    "Risk",
    "RuleHit",
    "Score",
    "Trigger",
    "TriggerKind",
    "Verification",
    "score",
    "score_diff",
    "score_session",
]


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


# The factors and hard rules, in the order the PR body lists them.
FACTORS: tuple[Factor, ...] = (
    factors.diff_rules,
    factors.categories,
    factors.counted,
    factors.typosquats,
    factors.lockfile,
    factors.caps,
    factors.behaviour,
    checked.fixer,
    checked.scope,
    checked.tests_run,
    checked.tests_fixed,
    checked.model_tests_only,
    checked.tests_cannot_choose,
    checked.findings,
    checked.budget,
    checked.security_update,
    factors.asked_by,
    factors.reverted_recently,
)


def score(
    features: Features,
    policy: Policy,
    *,
    verification: Verification | None = None,
    trigger: Trigger | None = None,
    history: History | None = None,
) -> Score:
    s = Scoring(features, policy, verification, trigger, history)
    tally = Tally()
    for factor in FACTORS:
        factor(s, tally)
    value, by_score = _by_score(tally, policy.thresholds)
    risk_decision = ladder_min(by_score, *(r.decision for r in tally.rules))
    kind = kind_of(
        verification.category if verification is not None else None,
        features.categories,
        {name: c.weight for name, c in policy.categories.items()},
    )
    autonomy, learned, decision = _capped(s, tally, risk_decision, kind)
    return Score(
        score=value,
        decision=decision,
        risk=_RISK[risk_decision],
        by_score=by_score,
        autonomy=autonomy,
        contributions=tally.contributions,
        rules=tally.rules,
        thresholds=policy.thresholds,
        kind=kind,
        learned=learned,
        files=len(features.files),
        lines_added=features.lines_added,
        lines_removed=features.lines_removed,
    )


def _by_score(tally: Tally, t: Thresholds) -> tuple[int, Decision]:
    """The points added up (0-100), and what the thresholds alone say of them."""
    total = sum(c.points for c in tally.contributions)
    value = max(0, min(100, math.floor(total + 0.5)))
    ladder: tuple[tuple[Decision, int], ...] = (
        ("automerge", t.automerge),
        ("review", t.review),
        ("draft", t.draft),
    )
    by_score: Decision = next((d for d, top in ladder if value <= top), "reject")
    if by_score == "reject":
        why = f"the score {value} is above the policy's draft threshold {t.draft}"
        tally.rule("score", "reject", why)
    return value, by_score


def _capped(
    s: Scoring, tally: Tally, risk_decision: Decision, kind: str
) -> tuple[Autonomy, Learned | None, Decision]:
    """Autonomy says what Patchwarden may do with its own changes; a person's is not
    capped. Undoing its own merge is allowed further (``merge.revert_automerge``);
    undoing a person's commit never merges without a person."""
    policy = s.policy
    reverts = s.trigger.reverts if s.trigger is not None else None
    autonomy, learned = policy.autonomy, None
    held = s.history.standing(kind, policy) if s.history is not None and not s.human else None
    if held is not None:
        autonomy = held.autonomy
        learned = Learned(
            kind=kind,
            state=held.state,
            autonomy=held.autonomy,
            explanation=held.explain(),
            may_earn=may_earn(kind, policy.learn, base=policy.autonomy),
        )
    ceiling: Decision = "automerge" if s.human else AUTONOMY_CEILING[autonomy]
    if reverts == "bot" and policy.merge.revert_automerge:
        ceiling = "automerge"
    if ladder_min(risk_decision, ceiling) != risk_decision:
        why = f"the repository's autonomy is `{policy.autonomy}`"
        if learned is not None and learned.state != "base":
            why = learned.explanation
        tally.rule("autonomy", ceiling, why)
    if reverts == "human" and ladder_min(risk_decision, ceiling, "review") != ladder_min(
        risk_decision, ceiling
    ):
        why = "it reverts a person's commit: a person approves that"
        tally.rule("reverts_person", "review", why)
        ceiling = ladder_min(ceiling, "review")
    return autonomy, learned, ladder_min(risk_decision, ceiling)


_RISK: dict[Decision, Risk] = {
    "automerge": "low",
    "review": "medium",
    "draft": "high",
    "reject": "high",
}
