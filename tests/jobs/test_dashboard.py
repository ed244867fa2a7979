"""The "Patchwarden dashboard" issue: what it says (render, pure), and that a story with
a merge, a revert and a failed job leaves one issue, edited in place, saying so."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from app.jobs.dashboard import TITLE, View, render
from app.store import Job, JobState, ModelSpend, NewJob, Outcome
from tests.conftest import INSTALLATION, REPO, Harness
from tests.jobs.test_lifecycle import fix_this, settle, story  # noqa: F401 (the fixture)

T0 = 1_780_000_000.0


def _outcome(job_id: int, **fields: Any) -> Outcome:
    values: dict[str, Any] = {"kind": "fix", "trigger": "comment", "created_at": T0 + job_id}
    return Outcome(job_id=job_id, repo=REPO, **(values | fields))


def _job(job_id: int, error: str) -> Job:
    return Job(
        id=job_id,
        kind="fix",
        queue="sessions",
        key=f"k{job_id}",
        repo=REPO,
        installation_id=INSTALLATION,
        delivery_id=None,
        payload={},
        state=JobState.FAILED,
        attempts=3,
        max_attempts=3,
        run_after=T0,
        lease_owner=None,
        lease_expires_at=None,
        last_error=error,
        result=None,
        created_at=T0,
        updated_at=T0 + 500,
    )


def _view(**fields: Any) -> View:
    values: dict[str, Any] = {
        "repo": REPO,
        "bot": "patchwarden",
        "now": T0 + 1000,
        "paused": None,
        "open_pulls": [],
        "outcomes": [],
        "failed": [],
        "spend": ModelSpend(),
        "daily_budget_usd": 20.0,
    }
    return View(**(values | fields))


def test_a_quiet_repository() -> None:
    text = render(_view())
    assert "**Running.** `@patchwarden pause` stops new work here." in text
    for section in ("Open pull requests", "Merged in the last 30 days", "Reverts", "Failed jobs"):
        assert f"## {section}\n\nNone." in text
    assert "$0.00 of the $20.00 daily budget: 0 model calls, 0 tokens" in text
    assert "## The last 30 days\n\nNothing yet." in text


def test_a_busy_repository() -> None:
    outcomes = [
        _outcome(1, pr_number=3, title="Drop the unused import", risk="low", score=12,
                 decision="automerge", pr_opened_at=T0 + 31, merged_at=T0 + 101,
                 merged_how="auto", reverted_by_pr=5, cost_usd=0.5),
        _outcome(2, kind="revert", pr_number=5, revert_of_pr=3, merged_at=T0 + 701,
                 merged_how="auto"),
        _outcome(3, pr_number=7, title="Fix the parser", risk="medium", score=41,
                 decision="review", pr_opened_at=T0 + 63,
                 merge_said="Not merged yet: waiting for a maintainer's approval."),
    ]  # fmt: skip
    text = render(
        _view(
            paused="paused by @alice: release week",
            open_pulls=[{"number": 7, "title": "Fix the parser", "draft": False}],
            outcomes=outcomes,
            failed=[_job(9, "GitHub is down\nmore detail")],
            spend=ModelSpend(calls=3, prompt_tokens=1000, completion_tokens=200, cost_usd=1.25),
        )
    )
    # untrusted text is inline and pings nobody (a word joiner after each @)
    assert (
        "**Paused**: paused by @\u2060alice: release week. `@patchwarden resume` resumes." in text
    )
    assert (
        "- #7 Fix the parser: risk medium (41), review; Not merged yet: waiting for a "
        "maintainer's approval." in text
    )
    assert "- #3 Drop the unused import: merged itself, " in text
    assert "— **reverted** by #5" in text
    assert "- #5 of #3: merged " in text
    assert "- job 9 (fix), " in text
    assert "GitHub is down (`patchwarden audit --job 9`)" in text
    assert "more detail" not in text  # one line per failure
    assert "$1.25 of the $20.00 daily budget: 3 model calls, 1,200 tokens" in text
    assert "| accepted (merged) | 50 % (1) |" in text  # #3 merged, #7 open; the revert is no change
    assert "| reverted after merging | 100 % (1) |" in text
    assert "| median time to recover | 10m00s |" in text
    assert "| cost per merged change | $0.50 |" in text


def test_untrusted_titles_and_errors_stay_on_their_line() -> None:
    text = render(
        _view(
            open_pulls=[{"number": 1, "title": "x\n## Merged\n- @everyone <img src=x>"}],
            failed=[_job(2, "boom <script>alert(1)</script>")],
        )
    )
    assert "\n## Merged\n- @everyone" not in text
    assert "<script>" not in text
    assert "<img" not in text
    linked = render(_view(open_pulls=[{"number": 2, "title": "[Approve](https://evil) ![x](y)"}]))
    assert "](https://evil)" not in linked  # no link or image a stranger plants
    assert "\\[Approve\\]\\(https://evil\\)" in linked


def test_a_failure_s_secret_never_reaches_the_issue() -> None:
    token = "ghs_" + "A" * 36
    text = render(_view(failed=[_job(3, f"push failed: {token}")], secrets=["hunter2-own"]))
    assert token not in text
    own = render(_view(failed=[_job(4, "bad key hunter2-own")], secrets=["hunter2-own"]))
    assert "hunter2-own" not in own


async def test_a_story_leaves_one_dashboard_saying_what_happened(
    story: Callable[..., Awaitable[Harness]],  # noqa: F811
) -> None:
    pw = await story(smoke=True)
    forge = pw.forge
    await fix_this(pw)
    await settle(pw)  # the fix merges itself, smoke fails on main, its revert merges
    # A person's pull request from a branch named like Patchwarden's is not the App's.
    git = forge.repos[REPO].git
    git.update_ref("refs/heads/patchwarden/evil", git.resolve("refs/heads/main") or "")
    await forge.push(REPO, {"notes.txt": "x\n"}, author="carol", branch="patchwarden/evil")
    await forge.open_pull(
        REPO, head="patchwarden/evil", base=None, title="[Approve](https://evil) now",
        author="carol",
    )  # fmt: skip
    await settle(pw)
    # A job that fails for good: its payload is not a fix job's.
    await pw.store.queue.enqueue(
        NewJob(kind="fix", key="broken", queue="sessions", repo=REPO,
               installation_id=INSTALLATION, payload={"repo": REPO})
    )  # fmt: skip
    pw.runtime.pool.wake("sessions")
    await settle(pw)
    boards = [i for i in forge.repos[REPO].issues.values() if i.title == TITLE]
    assert len(boards) == 1, [i.title for i in forge.repos[REPO].issues.values()]
    body = boards[0].body or ""
    assert boards[0].user.login == "patchwarden[bot]"
    fix, revert = forge.pulls(REPO)[:2]
    assert f"- #{fix.number} " in body
    assert "merged itself" in body
    assert f"— **reverted** by #{revert.number}" in body
    assert f"- #{revert.number} of #{fix.number}: merged" in body
    assert "has a payload this version cannot read" in body  # the failed job, with why
    assert "| reverted after merging | 100 % (1) |" in body
    assert "evil" not in body  # carol's pull request is not listed as Patchwarden's
    assert (await pw.store.repos.dashboard_issue(REPO))[0] == boards[0].number


def test_a_security_alert_still_open_long_after_its_fix_merged_is_listed() -> None:
    day = 86400.0
    outcomes = [
        # merged two days ago, the alert never closed: listed
        _outcome(1, kind="security_alert", trigger="dependabot", pr_number=4,
                 title="Bump pw-vuln to 1.0.1 (GHSA-9wx4-h78v-vm56)", merged_at=T0 - 2 * day),
        # merged two days ago, GitHub closed the alert: not listed
        _outcome(2, kind="security_alert", trigger="dependabot", pr_number=5,
                 merged_at=T0 - 2 * day, details={"alert_closed": {"action": "fixed"}}),
        # merged an hour ago: GitHub still has time
        _outcome(3, kind="security_alert", trigger="code_scanning", pr_number=6,
                 merged_at=T0),
    ]  # fmt: skip
    text = render(_view(outcomes=outcomes, alert_hours={"dependabot": 24, "code_scanning": 24}))
    section = text.split("## Security alerts still open after their fix merged\n\n")[1]
    [line] = [x for x in section.split("\n\n")[0].splitlines() if x.startswith("- #")]
    assert line.startswith("- #4 Bump pw-vuln to 1.0.1 \\(GHSA-9wx4-h78v-vm56\\): merged ")
    assert line.endswith(
        "and GitHub has not closed the alert 24 h later. Check that the file GitHub reads "
        "changed (a lock file?), or dismiss the alert with a reason."
    )
    assert "## Security alerts still open" not in render(_view(outcomes=outcomes[1:]))
