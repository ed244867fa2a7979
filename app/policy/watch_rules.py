"""The watch on the default branch: what a repository's check history shows, by rule.

Pure: a function from the completed check runs (and commit statuses) GitHub reported
for the default branch, oldest first, and the policy's ``watch`` thresholds to
:class:`Finding` s. No clock of its own (``now`` is given), no I/O, no model.

Per check (by name):

- **flaky**: it failed and passed on the same commit within ``flaky_days``. A failure
  of a flaky check is not a bug to hand to a fixer (:func:`flaky_checks`).
- **failure rate**: over its last ``recent_runs`` runs it failed ``failure_rate_jump``
  more often than over the ``baseline_runs`` runs before them (and at least
  ``min_failures`` times); the baseline needs ``recent_runs`` runs itself.
- **duration**: the 95th percentile of its last ``recent_runs`` successful runs is
  ``duration_ratio`` times that of the baseline's successful runs, when the baseline's
  is at least ``min_duration_seconds`` (and each side has half of ``recent_runs``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol

from app.policy.policy_model import WatchRules

FAILED = frozenset({"failure", "timed_out", "startup_failure", "error"})
PASSED = "success"
Kind = Literal["flaky", "failure_rate", "duration"]


class Completed(Protocol):
    """A completed check as the watch reads it (the store's records are these)."""

    @property
    def check(self) -> str: ...
    @property
    def sha(self) -> str: ...
    @property
    def conclusion(self) -> str: ...
    @property
    def completed_at(self) -> float: ...
    @property
    def started_at(self) -> float | None: ...


class Run(NamedTuple):
    """One completed check on the default branch."""

    check: str  # the check run's name, or the status's context
    sha: str
    conclusion: str  # success, failure, timed_out, cancelled, neutral, skipped, error
    completed_at: float
    started_at: float | None = None  # None: a commit status, or no start time


@dataclass(frozen=True)
class Finding:
    """One thing the watch noticed, keyed so that it is reported once and updated."""

    kind: Kind
    check: str
    title: str
    facts: tuple[str, ...]  # lines for a person: what was measured
    shas: tuple[str, ...] = ()  # flaky: the commits it failed and passed on

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.check}"


def p95(values: Sequence[float]) -> float:
    """The nearest-rank 95th percentile of ``values`` (not empty)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


@dataclass
class _Seen:
    """One check's history as read newest first, up to what the rules need."""

    decided: list[bool] = field(default_factory=list)  # failed?, newest first
    times: list[float] = field(default_factory=list)  # successful runs' seconds
    failed: set[str] = field(default_factory=set)  # commits, within the flaky window
    passed: set[str] = field(default_factory=set)
    order: list[str] = field(default_factory=list)  # those commits, newest first


def _read(runs: Sequence[Completed], *, need: int, since: float, now: float) -> dict[str, _Seen]:
    """One pass over ``runs`` (oldest first), newest first, keeping per check only the
    last ``need`` decided runs and successful durations and the commits of ``since``."""
    seen: dict[str, _Seen] = {}
    for run in reversed(runs):
        at = run.completed_at
        if at > now:
            continue
        mine = seen.get(run.check)
        if mine is None:
            mine = seen[run.check] = _Seen()
        conclusion = run.conclusion
        failed = conclusion in FAILED
        passed = conclusion == PASSED
        if not (failed or passed):
            continue
        if at >= since:
            if run.sha not in mine.failed and run.sha not in mine.passed:
                mine.order.append(run.sha)
            (mine.failed if failed else mine.passed).add(run.sha)
        if len(mine.decided) < need:
            mine.decided.append(failed)
        started = run.started_at
        if passed and started is not None and len(mine.times) < need:
            mine.times.append(at - started)
    return seen


def flaky_checks(runs: Iterable[Completed], *, days: float, now: float) -> dict[str, list[str]]:
    """Checks that failed and passed on one commit within ``days``: name -> commits,
    oldest first."""
    since = now - days * 86400
    found = {}
    for check, mine in _read(list(runs), need=0, since=since, now=now).items():
        shas = [sha for sha in reversed(mine.order) if sha in mine.failed and sha in mine.passed]
        if shas:
            found[check] = shas
    return found


def _pct(value: float) -> str:
    return f"{100 * value:.0f} %"


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"


def watch(runs: Sequence[Completed], rules: WatchRules, *, now: float) -> list[Finding]:
    """What the history (oldest first) shows, per check by name: each rule of
    ``WATCHES`` (flaky, failure rate, duration) in turn."""
    need = rules.recent_runs + rules.baseline_runs
    seen = _read(runs, need=need, since=now - rules.flaky_days * 86400, now=now)
    found = (rule(check, seen[check], rules) for check in sorted(seen) for rule in WATCHES)
    return [f for f in found if f is not None]


def _flaky(check: str, mine: _Seen, rules: WatchRules) -> Finding | None:
    """Failed and passed on the same commit."""
    shas = [sha for sha in reversed(mine.order) if sha in mine.failed and sha in mine.passed]
    if not shas:
        return None
    return Finding(
        kind="flaky",
        check=check,
        title=f"Flaky check: {check}",
        facts=(
            f"failed and passed on the same commit: {len(shas)} "
            f"commit{'s' if len(shas) != 1 else ''} in the last "
            f"{rules.flaky_days:g} days",
        ),
        shas=tuple(shas[-10:]),
    )


def _failure_rate(check: str, mine: _Seen, rules: WatchRules) -> Finding | None:
    """Its last runs fail more often than the ones before, by ``failure_rate_jump``."""
    recent_n = rules.recent_runs
    recent, baseline = mine.decided[:recent_n], mine.decided[recent_n:]
    if len(recent) != recent_n or len(baseline) < recent_n:
        return None
    failures = sum(recent)
    rate = failures / len(recent)
    before = sum(baseline) / len(baseline)
    jumped = rate - before >= rules.failure_rate_jump - 1e-9  # 0.7 - 0.4 is 0.2999...
    if failures < rules.min_failures or not jumped:
        return None
    return Finding(
        kind="failure_rate",
        check=check,
        title=f"Failing more often: {check}",
        facts=(
            f"failed {failures} of its last {len(recent)} runs "
            f"({_pct(rate)}), against {_pct(before)} over the "
            f"{len(baseline)} runs before",
        ),
    )


def _duration(check: str, mine: _Seen, rules: WatchRules) -> Finding | None:
    """Its recent successful runs' 95th percentile is ``duration_ratio`` times the
    usual one."""
    recent_n = rules.recent_runs
    now_times, base_times = mine.times[:recent_n], mine.times[recent_n:]
    enough = max(2, recent_n // 2)
    if len(now_times) < enough or len(base_times) < enough:
        return None
    late, usual = p95(now_times), p95(base_times)
    if usual < rules.min_duration_seconds or late < rules.duration_ratio * usual:
        return None
    return Finding(
        kind="duration",
        check=check,
        title=f"Slower: {check}",
        facts=(
            f"95th percentile of its last {len(now_times)} successful runs: "
            f"{_seconds(late)}, against {_seconds(usual)} over the "
            f"{len(base_times)} before ({late / usual:.1f}x)",
        ),
    )


# The watch's rules, in the order their findings are listed for a check.
WATCHES: tuple[Callable[[str, _Seen, WatchRules], Finding | None], ...] = (
    _flaky,
    _failure_rate,
    _duration,
)
