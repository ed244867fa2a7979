"""What the score reads besides the diff's features, and what it gives back.

In: ``Trigger`` (what asked for the change), ``History`` (what became of Patchwarden's
earlier changes here), ``Verification`` (what the session checked). Out: ``Score``, its
``Contribution`` per factor, its ``RuleHit`` per hard rule and what earned autonomy
``Learned``. Between them, ``Scoring`` (all a score reads) and the ``Tally`` every factor
adds to: app/policy/factors.py and app/policy/checked.py hold the factors,
app/policy/score.py runs them in order and reads the decision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.policy.evidence import Bump, FindingsDelta, ModelUsage, Scope, Session, TestDelta
from app.policy.features import Features
from app.policy.learn import Past, Standing, standing
from app.policy.policy_model import Autonomy, Decision, Policy, Thresholds, Weights

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

    fixer: str  # the fixer's name: "llm", "lint", "revert", ...
    # Its record's (app/fixers/interface.py): the kind of change it makes, whether a
    # model wrote it (contained), and one line on who it is. Unknown: as a model's.
    category: str | None = None
    model: bool = True
    about: str = ""
    tests: TestDelta | None = None
    findings: tuple[FindingsDelta, ...] = ()
    usage: ModelUsage | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    unfinished: str | None = None  # why the fixer stopped before it finished
    bump: Bump | None = None  # the dependency fixer's security update
    scope: Scope | None = None  # where the change lies against what the task implicates
    # The tests the fixer wrote to show the bug agree (two sampled independently) or the
    # issue's own example backs them: more than one model's word
    agreed: bool = False
    # How many other changes pass every test as well as this one (the repair's
    # mechanical round): the tests cannot tell which fixes the bug
    alternatives: int = 0

    @property
    def weighed_as(self) -> tuple[str, ...]:
        """The names the policy weighs this change by, first found first: the fixer's
        own, the kind of change it makes, and ``llm`` for a model's."""
        return tuple(n for n in (self.fixer, self.category, "llm" if self.model else None) if n)

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
            category=fix.category if fix is not None else None,
            model=fix.model if fix is not None else True,
            about=fix.about if fix is not None else "",
            tests=result.tests,
            findings=tuple(result.findings),
            usage=fix.usage if fix is not None else None,
            unfinished=fix.unfinished if fix is not None else None,
            bump=getattr(fix, "bump", None),
            scope=result.scope,
            agreed=bool(getattr(getattr(fix, "repair", None), "agreed", False)),
            alternatives=len(getattr(getattr(fix, "repair", None), "alternatives", ())),
            max_tokens=max_tokens,
            max_cost_usd=max_cost_usd,
        )


@dataclass(frozen=True)
class Scoring:
    """What one score reads."""

    features: Features
    policy: Policy
    verification: Verification | None = None
    trigger: Trigger | None = None
    history: History | None = None

    @property
    def human(self) -> bool:
        """A person's change (``patchwarden score``), not a fixer's."""
        return self.trigger is not None and self.trigger.kind == "human"

    @property
    def w(self) -> Weights:
        return self.policy.weights


class Tally:
    """The factors and the rules found so far, in the order they were found."""

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


Factor = Callable[[Scoring, Tally], None]


def listed(items: list[str], limit: int = 3) -> str:
    shown = ", ".join(f"`{i}`" for i in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
