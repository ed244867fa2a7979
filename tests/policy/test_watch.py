"""The watch on the default branch (app/policy/watch_rules.py): pure rules over a check
history, table-tested."""

from __future__ import annotations

import pytest

from app.policy.policy_model import WatchRules
from app.policy.watch_rules import Run, flaky_checks, p95, watch
from tests.policy_helpers import default_policy

NOW = 1_800_000_000.0
HOUR = 3600.0
RULES = default_policy().watch  # 20 recent against 100, +30 points, x2, 14 days


def runs(
    check: str,
    outcomes: str,
    *,
    seconds: float | list[float] = 60.0,
    start: float = NOW - 400 * HOUR,
    sha: str | None = None,
) -> list[Run]:
    """One run per character, an hour apart: ``.`` passed, ``F`` failed, ``c`` cancelled."""
    times = seconds if isinstance(seconds, list) else [seconds] * len(outcomes)
    names = {".": "success", "F": "failure", "c": "cancelled"}
    return [
        Run(
            check=check,
            sha=sha or f"{i:040x}",
            conclusion=names[o],
            completed_at=start + i * HOUR,
            started_at=start + i * HOUR - times[i],
        )
        for i, o in enumerate(outcomes)
    ]


def kinds(found: list[object]) -> list[str]:
    return [getattr(f, "key", "") for f in found]


def test_a_steady_history_shows_nothing() -> None:
    history = runs("tests", ("." * 9 + "F") * 12)  # 10 % failures, all along
    assert watch(history, RULES, now=NOW) == []


def test_a_failure_rate_that_jumps_is_found_with_its_figures() -> None:
    history = runs("tests", "." * 95 + "F" * 5 + ".F" * 10)  # 5 % then 50 %
    (found,) = watch(history, RULES, now=NOW)
    assert found.key == "failure_rate:tests"
    assert found.facts == (
        "failed 10 of its last 20 runs (50 %), against 5 % over the 100 runs before",
    )


@pytest.mark.parametrize(
    ("outcomes", "why"),
    [
        ("." * 100 + ".." * 9 + "FF", "only 2 failures (min_failures 3)"),
        ("F" * 30 + "." * 70 + ".F" * 10, "the baseline failed 30 % already: +20 points"),
        ("." * 10 + ".F" * 10, "a baseline of 10 runs is too short (20 needed)"),
        ("." * 100 + "c" * 20, "cancelled runs are neither"),
    ],
)
def test_what_is_not_a_failure_rate_jump(outcomes: str, why: str) -> None:
    assert kinds(watch(runs("tests", outcomes), RULES, now=NOW)) == [], why


def test_a_jump_of_exactly_the_threshold_counts() -> None:
    """14 of 20 against 40 of 100 is 30 points, though 0.7 - 0.4 is 0.29999... in floats."""
    baseline = ("F" * 4 + "." * 6) * 10
    recent = "F" * 14 + "." * 6
    assert kinds(watch(runs("tests", baseline + recent), RULES, now=NOW)) == ["failure_rate:tests"]


def test_a_duration_that_doubles_is_found() -> None:
    times = [60.0] * 100 + [150.0] * 20
    (found,) = watch(runs("build", "." * 120, seconds=times), RULES, now=NOW)
    assert found.key == "duration:build"
    assert "150 s, against 60 s over the 100 before (2.5x)" in found.facts[0]


@pytest.mark.parametrize(
    ("times", "why"),
    [
        ([60.0] * 100 + [110.0] * 20, "1.8x is not double"),
        ([4.0] * 100 + [9.0] * 20, "a 4 s check is noise (min_duration_seconds 10)"),
        ([60.0] * 100 + [60.0] * 19 + [600.0], "one slow run in 20 is not the p95"),
    ],
)
def test_what_is_not_a_duration_jump(times: list[float], why: str) -> None:
    assert watch(runs("build", "." * 120, seconds=times), RULES, now=NOW) == [], why


def test_failed_runs_do_not_count_for_the_duration() -> None:
    times = [60.0] * 100 + [900.0] * 20  # slow because they time out, and fail
    history = runs("build", "." * 100 + "F" * 20, seconds=times)
    assert kinds(watch(history, RULES, now=NOW)) == ["failure_rate:build"]


def test_a_check_that_failed_and_passed_on_one_commit_is_flaky() -> None:
    same = "a" * 40
    history = [
        *runs("tests", "." * 30),
        Run("tests", same, "failure", NOW - 5 * HOUR),
        Run("tests", same, "success", NOW - 4 * HOUR),
        Run("lint", "b" * 40, "failure", NOW - 3 * HOUR),  # failed, fixed by a commit
        Run("lint", "c" * 40, "success", NOW - 2 * HOUR),
    ]
    (found,) = watch(history, RULES, now=NOW)
    assert (found.key, found.shas) == ("flaky:tests", (same,))
    assert flaky_checks(history, days=14, now=NOW) == {"tests": [same]}
    # older than flaky_days: forgotten
    assert flaky_checks(history, days=14, now=NOW + 15 * 24 * HOUR) == {}


def test_each_check_is_judged_on_its_own_history() -> None:
    history = runs("tests", "." * 120) + runs("e2e", "." * 100 + "F" * 20)
    assert kinds(watch(history, RULES, now=NOW)) == ["failure_rate:e2e"]


def test_thresholds_come_from_the_policy() -> None:
    history = runs("tests", "." * 95 + "F" * 5 + ".F" * 10)
    strict = WatchRules.model_validate({**RULES.model_dump(), "failure_rate_jump": 0.6})
    assert watch(history, strict, now=NOW) == []


def test_p95_is_the_nearest_rank() -> None:
    assert p95([1.0]) == 1.0
    assert p95([float(i) for i in range(1, 101)]) == 95.0
    assert p95([float(i) for i in range(1, 21)]) == 19.0
