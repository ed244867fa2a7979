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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from app.policy.config import WatchRules

FAILED = frozenset({"failure", "timed_out", "startup_failure", "error"})
PASSED = frozenset({"success"})
Kind = Literal["flaky", "failure_rate", "duration"]


@dataclass(frozen=True)
class Run:
    """One completed check on the default branch."""

    check: str  # the check run's name, or the status's context
    sha: str
    conclusion: str  # success, failure, timed_out, cancelled, neutral, skipped, error
    completed_at: float
    seconds: float | None = None  # None: a commit status, or no start time

    @property
    def failed(self) -> bool:
        return self.conclusion in FAILED

    @property
    def passed(self) -> bool:
        return self.conclusion in PASSED


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


def _by_check(runs: Iterable[Run]) -> dict[str, list[Run]]:
    grouped: dict[str, list[Run]] = {}
    for run in runs:
        grouped.setdefault(run.check, []).append(run)
    return grouped


def _flaky_shas(runs: Sequence[Run], since: float) -> list[str]:
    failed: set[str] = set()
    passed: set[str] = set()
    order: list[str] = []
    for run in runs:
        if run.completed_at < since:
            continue
        if run.failed:
            failed.add(run.sha)
        elif run.passed:
            passed.add(run.sha)
        else:
            continue
        if run.sha not in order:
            order.append(run.sha)
    return [sha for sha in order if sha in failed and sha in passed]


def flaky_checks(runs: Iterable[Run], *, days: float, now: float) -> dict[str, list[str]]:
    """Checks that failed and passed on one commit within ``days``: name -> commits."""
    since = now - days * 86400
    found = {}
    for check, mine in _by_check(runs).items():
        shas = _flaky_shas(mine, since)
        if shas:
            found[check] = shas
    return found


def _pct(value: float) -> str:
    return f"{100 * value:.0f} %"


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"


def watch(runs: Iterable[Run], rules: WatchRules, *, now: float) -> list[Finding]:
    """What the history shows, per check, in check order (flaky, failure rate, duration)."""
    findings: list[Finding] = []
    since = now - rules.flaky_days * 86400
    for check, mine in sorted(_by_check(runs).items()):
        mine = [r for r in mine if r.completed_at <= now]
        shas = _flaky_shas(mine, since)
        if shas:
            findings.append(
                Finding(
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
            )
        decided = [r for r in mine if r.failed or r.passed]
        recent = decided[-rules.recent_runs :]
        baseline = decided[-(rules.recent_runs + rules.baseline_runs) : -rules.recent_runs]
        if len(recent) == rules.recent_runs and len(baseline) >= rules.recent_runs:
            failures = sum(r.failed for r in recent)
            rate = failures / len(recent)
            before = sum(r.failed for r in baseline) / len(baseline)
            if failures >= rules.min_failures and rate - before >= rules.failure_rate_jump:
                findings.append(
                    Finding(
                        kind="failure_rate",
                        check=check,
                        title=f"Failing more often: {check}",
                        facts=(
                            f"failed {failures} of its last {len(recent)} runs "
                            f"({_pct(rate)}), against {_pct(before)} over the "
                            f"{len(baseline)} runs before",
                        ),
                    )
                )
        timed = [r for r in mine if r.passed and r.seconds is not None]
        now_times = [float(r.seconds or 0) for r in timed[-rules.recent_runs :]]
        base_times = [
            float(r.seconds or 0)
            for r in timed[-(rules.recent_runs + rules.baseline_runs) : -rules.recent_runs]
        ]
        enough = max(2, rules.recent_runs // 2)
        if len(now_times) >= enough and len(base_times) >= enough:
            late, usual = p95(now_times), p95(base_times)
            if usual >= rules.min_duration_seconds and late >= rules.duration_ratio * usual:
                findings.append(
                    Finding(
                        kind="duration",
                        check=check,
                        title=f"Slower: {check}",
                        facts=(
                            f"95th percentile of its last {len(now_times)} successful runs: "
                            f"{_seconds(late)}, against {_seconds(usual)} over the "
                            f"{len(base_times)} before ({late / usual:.1f}x)",
                        ),
                    )
                )
    return findings
