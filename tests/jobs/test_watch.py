"""The watch on the default branch end to end on the local forge: an outside CI reports
a history of check runs on main (signed ``check_run`` webhooks, as GitHub sends them);
the watch finds a flaky check, a failure-rate jump and a duration jump, opens one issue
each, updates them instead of repeating them, stops on ``@patchwarden ignore``, and a
flaky check's next failure is not handed to a fixer."""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from app.jobs.weekly import week_of
from app.localforge import LocalForge
from app.store import AuditQuery
from tests.conftest import REPO, Harness
from tests.jobs.test_lifecycle import bot_comments, settle, story  # noqa: F401 (the fixture)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap sessions"),
]

HOUR = 3600.0
# Small windows keep the history short: 5 recent runs against the 20 before.
WATCH = (
    "watch:\n  enabled: true\n  recent_runs: 5\n  baseline_runs: 20\n  min_failures: 3\n"
    "weekly_report: true\n"
)


def weekly_reports(forge: LocalForge) -> list[Any]:
    return [
        i
        for i in forge.repos[REPO].issues.values()
        if i.title.startswith("Patchwarden weekly report:")
    ]


def watch_issues(forge: LocalForge) -> dict[str, int]:
    return {
        i.title: i.number
        for i in forge.repos[REPO].issues.values()
        if i.title.startswith("Patchwarden watch:")
    }


async def history(
    forge: LocalForge, check: str, outcomes: str, shas: list[str], *, seconds: list[float]
) -> None:
    """One run per character (``.`` passed, ``F`` failed), an hour apart, ending now."""
    now = time.time()
    for i, o in enumerate(outcomes):
        done = now - (len(outcomes) - i) * HOUR
        await forge.report_check(
            REPO,
            shas[i % len(shas)],
            check,
            conclusion="success" if o == "." else "failure",
            started_at=done - seconds[i],
            completed_at=done,
        )


async def test_the_watch_finds_flaky_failing_and_slow_checks_once_each(
    story: Callable[..., Awaitable[Harness]],  # noqa: F811
) -> None:
    pw = await story(checks=False, extra=WATCH)
    forge = pw.forge
    main = forge.repos[REPO].git
    one = str(main.resolve("refs/heads/main"))
    two = await forge.push(REPO, {"notes.md": "more\n"}, author="alice")
    await settle(pw)
    alerts_before = len(await pw.jobs("alert"))

    await history(forge, "unit", "." * 10, [one, two], seconds=[30.0] * 10)
    await forge.report_check(  # a re-run of a failure that passes: flaky
        REPO,
        two,
        "unit",
        conclusion="failure",
        started_at=time.time() - 60,
        completed_at=time.time() - 30,
    )
    await forge.report_check(
        REPO,
        two,
        "unit",
        conclusion="success",
        started_at=time.time() - 30,
        completed_at=time.time(),
    )
    # e2e: steady on the first commit, then failing on three of the five commits after
    fresh = [await forge.push(REPO, {"notes.md": f"v{i}\n"}, author="alice") for i in range(5)]
    await settle(pw)
    await history(forge, "e2e", "." * 20, [one], seconds=[40.0] * 20)
    for sha, outcome in zip(fresh, "F.F.F", strict=True):
        await history(forge, "e2e", outcome, [sha], seconds=[40.0])
    await history(forge, "build", "." * 25, [one, two], seconds=[60.0] * 20 + [150.0] * 5)
    await settle(pw)

    issues = watch_issues(forge)
    assert sorted(issues) == [
        "Patchwarden watch: Failing more often: e2e",
        "Patchwarden watch: Flaky check: unit",
        "Patchwarden watch: Slower: build",
    ]
    flaky = forge.issue(REPO, issues["Patchwarden watch: Flaky check: unit"]).body or ""
    assert f"`{two[:12]}`" in flaky
    assert "not handed to a fixer" in flaky
    failing = forge.issue(REPO, issues["Patchwarden watch: Failing more often: e2e"]).body or ""
    assert "failed 3 of its last 5 runs (60 %), against 0 % over the 20 runs before" in failing
    slower = forge.issue(REPO, issues["Patchwarden watch: Slower: build"]).body or ""
    assert "150 s, against 60 s" in slower
    audit = [
        e.action for e in await pw.store.journal.query_audit(AuditQuery(repo=REPO, limit=100_000))
    ]
    assert audit.count("watch.opened") == 3
    # This week's report (weekly_report: true) says what the watch noticed.
    (report,) = weekly_reports(forge)
    noticed = report.body or ""
    assert f"Patchwarden weekly report: {week_of(time.time())[0]}" == report.title
    for title, number in issues.items():
        assert f"{title.removeprefix('Patchwarden watch: ')} (#{number}, open)" in noticed

    # More of the same: the issues are edited, never repeated.
    await forge.report_check(
        REPO,
        two,
        "e2e",
        conclusion="failure",
        started_at=time.time() - 40,
        completed_at=time.time(),
    )
    await settle(pw)
    assert watch_issues(forge) == issues
    failing = forge.issue(REPO, issues["Patchwarden watch: Failing more often: e2e"]).body or ""
    # F . F . F F: the last five hold 3 failures, the twenty before now hold the first
    assert "failed 3 of its last 5 runs (60 %), against 5 % over the 20 runs before" in failing

    # e2e passes again on five new commits: its issue says the watch no longer sees it.
    healed = [await forge.push(REPO, {"notes.md": f"w{i}\n"}, author="alice") for i in range(5)]
    await settle(pw)
    for sha in healed:
        await history(forge, "e2e", ".", [sha], seconds=[40.0])
    await settle(pw)
    failing = forge.issue(REPO, issues["Patchwarden watch: Failing more often: e2e"]).body or ""
    assert failing.startswith("**No longer seen** by the watch")
    assert watch_issues(forge) == issues

    # A writer answers `ignore` on the build issue: it is left alone from then on.
    build = issues["Patchwarden watch: Slower: build"]
    await forge.post_comment(REPO, build, "@patchwarden ignore", author="carol")
    await settle(pw)
    assert any("Ignored by @carol" in c for c in bot_comments(forge, build))
    before = forge.issue(REPO, build).body
    await history(forge, "build", "....", [one], seconds=[400.0] * 4)
    await settle(pw)
    assert forge.issue(REPO, build).body == before
    assert watch_issues(forge) == issues

    # The flaky check fails again on a new commit: no fixer is sent after it.
    three = await forge.push(REPO, {"notes.md": "even more\n"}, author="alice")
    await settle(pw)
    alerts = len(await pw.jobs("alert"))
    await forge.report_check(
        REPO,
        three,
        "unit",
        conclusion="failure",
        started_at=time.time() - 30,
        completed_at=time.time(),
    )
    await settle(pw)
    assert len(await pw.jobs("alert")) == alerts
    assert len(weekly_reports(forge)) == 1  # edited through the week, never repeated
    reasons = [
        e.reason or ""
        for e in await pw.store.journal.query_audit(AuditQuery(repo=REPO, limit=100_000))
    ]
    assert any("unit is flaky here" in r for r in reasons)
    assert alerts > alerts_before  # the e2e failures did start the culprit finder


async def test_with_issues_turned_off_the_watch_skips_and_opens_them_once_they_are_on(
    story: Callable[..., Awaitable[Harness]],  # noqa: F811
) -> None:
    """GitHub answers 410 to a new issue where issues are turned off: the watch says it
    skipped, keeps no claim on the issue, and opens it when issues are back."""
    pw = await story(checks=False, extra=WATCH)
    forge = pw.forge
    one = str(forge.repos[REPO].git.resolve("refs/heads/main"))
    two = await forge.push(REPO, {"notes.md": "more\n"}, author="alice")
    await settle(pw)
    forge.fail("POST", rf"^/repos/{REPO}/issues$", 410, message="Issues are disabled", times=1000)
    await history(forge, "unit", "." * 10, [one, two], seconds=[30.0] * 10)
    for outcome in ("failure", "success"):  # a re-run of a failure that passes: flaky
        await forge.report_check(
            REPO, two, "unit", conclusion=outcome, started_at=time.time() - 30,
            completed_at=time.time(),
        )  # fmt: skip
    await settle(pw)
    assert watch_issues(forge) == {}
    results = [j.result for j in await pw.jobs("watch") if j.result]
    assert {"status": "skipped", "reason": "GitHub refused the issue (410)"} in results

    forge.state.faults.clear()  # issues are on again
    await forge.report_check(
        REPO, two, "unit", conclusion="success", started_at=time.time() - 30,
        completed_at=time.time(),
    )  # fmt: skip
    await settle(pw)
    assert list(watch_issues(forge)) == ["Patchwarden watch: Flaky check: unit"]
