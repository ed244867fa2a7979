"""The weekly report (app/jobs/weekly.py): its week and what it says, pure."""

from __future__ import annotations

from datetime import UTC, datetime

from app.jobs.weekly import Week, render, week_of
from app.store import AuditEntry, Outcome, WatchFinding

THU = datetime(2026, 11, 26, 9, 13, tzinfo=UTC).timestamp()
MON = datetime(2026, 11, 23, tzinfo=UTC).timestamp()


def test_the_week_is_the_iso_week_from_monday_utc() -> None:
    assert week_of(THU) == ("2026-W48", MON, MON + 7 * 86400)
    assert week_of(MON)[0] == "2026-W48"
    assert week_of(MON - 1)[0] == "2026-W47"
    assert week_of(datetime(2027, 1, 1, tzinfo=UTC).timestamp())[0] == "2026-W53"


def outcome(job: int, **kw: object) -> Outcome:
    values: dict[str, object] = {"kind": "fix", "trigger": "comment", "created_at": MON + job}
    values.update(kw)
    return Outcome(job_id=job, repo="o/r", **values)  # type: ignore[arg-type]


def test_the_report_says_what_was_noticed_done_learned_and_spent() -> None:
    outcomes = [
        outcome(1, pr_number=10, merged_at=MON + 50, merged_how="auto", tokens=1200, cost_usd=0.5),
        outcome(2, pr_number=11, merged_at=MON + 60, merged_how="approved", cost_usd=0.25),
        outcome(3, status="rejected"),
        outcome(4, kind="revert", pr_number=12, merged_at=MON + 70),
    ]
    learned = [
        AuditEntry(1, MON + 80, "trust.promoted", None, "o/r", 2, None,
                   "lint fixes merge themselves here: 10 merged", {"category": "lint"}),
        AuditEntry(2, MON + 90, "trust.rejected", "carol", "o/r", None, None, "#13", {}),
    ]  # fmt: skip
    week = Week(
        repo="o/r",
        bot="patchwarden",
        label="2026-W48",
        start=MON,
        now=THU,
        outcomes=outcomes,
        merged=[o for o in outcomes if o.merged_at],
        learned=learned,
        rejected=1,
        noticed=[WatchFinding("o/r", "flaky:unit", 7, "open", "Flaky check: unit", MON, THU)],
    )
    text = render(week)
    assert "- Flaky check: unit (#7, open)" in text
    assert "- jobs: 4" in text
    assert "- pull requests opened: 2" in text
    assert "- merged: 2 (1 by themselves, 1 approved, 0 by hand)" in text
    assert "- reverts merged: 1" in text
    assert "- rejected by the policy: 1" in text
    assert "- closed unmerged by a person: 1" in text
    assert "`lint` promoted: lint fixes merge themselves here: 10 merged" in text
    assert "- tokens: 1,200" in text
    assert "- model cost: $0.75" in text


def test_a_hostile_check_name_stays_inert_in_the_watch_issue() -> None:
    from app.jobs.watch import render as render_watch
    from app.policy.watch_rules import Finding
    from tests.policy_helpers import default_policy

    name = "ci --> @octo-org/everyone **[click](https://evil.example)** <!--"
    finding = Finding("flaky", name, f"Flaky check: {name}", ("failed and passed",))
    body = render_watch(finding, bot="patchwarden", first_seen=MON, rules=default_policy().watch)
    first = body.splitlines()[0]
    assert first.startswith("<!-- patchwarden:watch=")
    assert "-->" not in first.removesuffix("-->")  # the name never closes the marker
    assert name not in body.splitlines()[0]
    headline = next(line for line in body.splitlines() if line.startswith("**Flaky check:**"))
    assert headline.count("`") >= 2  # the name as inline code: no mention, no link
