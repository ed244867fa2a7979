"""Earned autonomy: what each kind of change may do in a repository, from its record there.

Pure: a function from Patchwarden's past changes to one repository (:class:`Past`), the
maintainers' resets and the policy's ``learn`` rules to a :class:`Standing` per kind of
change. No clock of its own (``now`` is given), no I/O; the same inputs give the same
standings. The caller turns its stored outcomes into ``Past`` (``policy/`` imports no
other room).

A kind of change is the fixer's for ``lint`` and ``revert``, otherwise the riskiest
policy category among the files it touches (:func:`kind_of`). Within the window:

- every merge of the kind adds one to its streak of clean merges;
- a revert of one of its merges (when the revert merged) ends the streak and counts
  against it, and so does a pull request of the kind that a person closed without
  merging it; reaching ``demote_after_reverts`` or ``demote_after_rejections`` demotes
  the kind: its streak starts again from nothing and its autonomy is ``review`` at most
  until the streak reaches ``promote_after`` again;
- a streak of ``promote_after`` promotes a kind listed in ``learn.categories`` to the
  ceiling (when the ceiling is above the repository's ``autonomy``).

Only the autonomy moves. The score, its thresholds and every hard rule are applied
before it (``app/policy/score.py``), so nothing earned lifts a rejection or a hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from app.policy.policy_model import AUTONOMY_CEILING, LADDER, Autonomy, LearnRules

State = Literal["base", "earned", "demoted"]
ALL = "*"  # a reset of every kind


@dataclass(frozen=True)
class Past:
    """One change Patchwarden proposed in the repository, as far as learning cares."""

    kind: str  # kind_of() when it was scored
    merged_at: float | None = None
    reverted_at: float | None = None  # when the revert of its merge merged
    rejected_at: float | None = None  # closed without a merge, by a person


@dataclass(frozen=True)
class Standing:
    """Where one kind of change stands in one repository."""

    kind: str
    autonomy: Autonomy
    state: State
    merged: int  # its clean merges in the window since it was last demoted or reset
    reverted: int  # its merges reverted in the window (since the reset)
    rejected: int  # its pull requests closed unmerged in the window (since the reset)
    needed: int  # learn.promote_after
    window_days: float

    def explain(self) -> str:
        """One line for a pull request body: "lint fixes merge themselves here: 12 merged
        in 30 days, 0 reverted"."""
        what = _PLURAL.get(self.kind, f"{self.kind} changes")
        record = (
            f"{self.merged} merged in {self.window_days:g} days since the last setback, "
            if self.state == "demoted"
            else f"{self.merged} merged in {self.window_days:g} days, "
        ) + f"{self.reverted} reverted, {self.rejected} closed unmerged"
        if self.state == "earned":
            return f"{what} {_EARNED[self.autonomy]} here: {record}"
        if self.state == "demoted":
            return (
                f"{what} wait for a review here after a setback: {record}; "
                f"{self.needed} clean merges earn it back"
            )
        return f"{what} have not earned more autonomy here: {record} (of {self.needed} needed)"


_PLURAL = {
    "lint": "lint fixes",
    "revert": "reverts",
    "docs": "docs changes",
    "tests": "test changes",
    "source": "source changes",
    "dependencies": "dependency changes",
}
_EARNED = {
    "automerge": "merge themselves",
    "review": "open for review",
    "propose": "open as drafts",
}


def kind_of(made: str | None, categories: Iterable[str], weights: Mapping[str, float]) -> str:
    """The kind of a change: the riskiest of the policy ``categories`` its files are in
    (``source`` when there are none), or the kind its fixer ``made`` (``lint``,
    ``revert``) when none of them weighs more than ``source`` (a lint fix in ``auth/`` is
    a ``security`` change)."""
    touched = sorted(categories, key=lambda c: (-weights.get(c, 0.0), c))
    riskiest = touched[0] if touched else "source"
    if made and weights.get(riskiest, 0.0) <= weights.get("source", 1.0):
        return made
    return riskiest


def _events(kind: str, past: Iterable[Past], *, since: float, now: float) -> list[str]:
    """``kind``'s merges, reverts and rejections between ``since`` and ``now``, in
    time order; at one instant a setback counts after a merge."""
    events: list[tuple[float, int, str]] = []
    for p in past:
        if p.kind != kind:
            continue
        # a merge later reverted was never clean: its revert counts instead
        merged_at = p.merged_at if p.reverted_at is None else None
        for at, order, what in (
            (merged_at, 0, "merged"),
            (p.reverted_at, 1, "reverted"),
            (p.rejected_at, 1, "rejected"),
        ):
            if at is not None and since <= at <= now:
                events.append((at, order, what))
    return [what for _, _, what in sorted(events)]


def _replay(events: list[str], rules: LearnRules) -> tuple[int, bool, int, int]:
    """The clean streak at the end, whether the kind stands demoted, and the reverts
    and rejections counted on the way."""
    streak = reverts = rejections = 0
    total_reverts = total_rejections = 0
    demoted = False
    for what in events:
        if what == "merged":
            streak += 1
            if streak >= rules.promote_after:
                demoted = False
            continue
        if what == "reverted":
            reverts += 1
            total_reverts += 1
            streak = 0  # a revert is a setback even below the demotion threshold
        else:
            rejections += 1
            total_rejections += 1
        if reverts >= rules.demote_after_reverts or rejections >= rules.demote_after_rejections:
            demoted, streak, reverts, rejections = True, 0, 0, 0
    return streak, demoted, total_reverts, total_rejections


def standing(
    kind: str,
    past: Iterable[Past],
    rules: LearnRules,
    *,
    base: Autonomy,
    now: float,
    resets: Mapping[str, float] | None = None,
) -> Standing:
    """Where ``kind`` stands: ``past`` is every change in the repository (others are
    skipped), ``resets`` the time of the last ``trust reset`` per kind (``*``: all)."""
    start = now - rules.window_days * 86400
    resets = resets or {}
    reset = max(resets.get(kind, float("-inf")), resets.get(ALL, float("-inf")))
    events = _events(kind, past, since=max(start, reset), now=now)
    streak, demoted, total_reverts, total_rejections = _replay(events, rules)
    state: State = "base"
    autonomy = base
    if demoted:
        state, autonomy = "demoted", _at_most(base, "review")
    elif streak >= rules.promote_after and may_earn(kind, rules, base=base):
        state, autonomy = "earned", rules.ceiling
    return Standing(
        kind=kind,
        autonomy=autonomy,
        state=state,
        merged=streak,
        reverted=total_reverts,
        rejected=total_rejections,
        needed=rules.promote_after,
        window_days=rules.window_days,
    )


def standings(
    past: Iterable[Past],
    rules: LearnRules,
    *,
    base: Autonomy,
    now: float,
    resets: Mapping[str, float] | None = None,
) -> dict[str, Standing]:
    """:func:`standing` for every kind ``past`` names, and every kind that may earn."""
    history = list(past)
    kinds = sorted({p.kind for p in history} | set(rules.categories))
    by_kind: dict[str, list[Past]] = {k: [] for k in kinds}
    for p in history:
        by_kind[p.kind].append(p)
    return {k: standing(k, by_kind[k], rules, base=base, now=now, resets=resets) for k in kinds}


def may_earn(kind: str, rules: LearnRules, *, base: Autonomy) -> bool:
    """Whether ``kind`` can earn more than ``base`` under ``rules``."""
    return kind in rules.categories and _rank(rules.ceiling) > _rank(base)


def _rank(autonomy: Autonomy) -> int:
    return LADDER.index(AUTONOMY_CEILING[autonomy])


def _at_most(autonomy: Autonomy, top: Autonomy) -> Autonomy:
    return autonomy if _rank(autonomy) <= _rank(top) else top
