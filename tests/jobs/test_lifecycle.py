"""The PR lifecycle end to end: a maintainer's "fix this" → a risk-scored pull request →
approvals, auto-merge, the head-sha guard, the canary's revert, pause and resume.

Everything runs for real: the server and its workers, coding sessions in bubblewrap
with the lint fixer, git pushes over HTTP to the local forge, the forge's CI running
the repository's tests as a required check, and signed webhooks both ways.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from app.cli.demo import SAMPLE, SMOKE_COMMAND, SMOKE_CONFIG
from app.localforge import LocalForge
from app.store import JobState
from tests.conftest import INSTALLATION, REPO, Harness, running_with

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap sessions"),
]


def sample(*, autonomy: str = "automerge", extra: str = "") -> dict[str, str | bytes | None]:
    config = f"autonomy: {autonomy}\n{SMOKE_CONFIG}{extra}"
    return {**SAMPLE, ".github/patchwarden.yml": config}


# A person's later commit that relies on what the lint fix removed.
BREAKING = {
    "test_uses_os.py": (
        "import util\n\n\ndef test_util_exposes_os():\n    assert util.os.sep == '/'\n"
    )
}


async def settle(pw: Harness) -> None:
    """Until the forge is quiet and every job of every kind has ended."""
    await pw.settle(within=180, every_job=True)


@pytest.fixture
async def story(
    make_pw: Callable[..., Awaitable[Harness]],
    tmp_path: Path,
    forge: LocalForge,
) -> Callable[..., Awaitable[Harness]]:
    async def start(
        *,
        autonomy: str = "automerge",
        checks: bool = True,
        smoke: bool = False,
        extra: str = "",
        **settings: Any,
    ) -> Harness:
        await forge.push(REPO, sample(autonomy=autonomy, extra=extra), author="alice")
        forge.add_user(REPO, "alice", "maintain")
        forge.add_user(REPO, "carol", "write")
        forge.add_user(REPO, "bob", "read")
        if checks:
            forge.require_check(
                REPO, "tests", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
            )
        if smoke:  # the post-merge check the fix breaks (smoke.py uses util.os)
            forge.post_merge_check(REPO, "smoke", SMOKE_COMMAND)
        pw = await make_pw(workers=2, **settings)
        await forge.install(INSTALLATION, by="alice")
        return pw

    return start


async def fix_this(pw: Harness, *, by: str = "alice") -> int:
    issue = pw.forge.open_issue(REPO, "util.py imports os and never uses it", author="bob")
    await pw.forge.post_comment(REPO, issue.number, "@patchwarden fix this", author=by)
    return issue.number


def on_main(forge: LocalForge, path: str) -> bytes:
    """``path`` as the default branch has it now."""
    git = forge.repos[REPO].git
    entry = git.entry(git.resolve("refs/heads/main") or "", path)
    assert entry is not None, f"{path} is not on main"
    return entry.content or b""


def dashboard_body(forge: LocalForge) -> str:
    """The one dashboard issue's body."""
    (issue,) = [i for i in forge.repos[REPO].issues.values() if i.title == "Patchwarden dashboard"]
    return issue.body or ""


def bot_comments(forge: LocalForge, number: int) -> list[str]:
    return [c.body for c in forge.comments(REPO, number) if c.user.login == "patchwarden[bot]"]


async def scrape(pw: Harness) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """GET /metrics, parsed by prometheus-client's own parser: sample -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    async with pw.session.get(f"{pw.url}/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = await response.text()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def assert_metrics_match_the_store(pw: Harness) -> dict[Any, float]:
    """What /metrics says is what the store (the audit, the outcomes) says."""
    from collections import Counter

    got = await scrape(pw)
    deliveries = sum(v for (name, _), v in got.items() if name == "patchwarden_deliveries_total")
    assert deliveries == await pw.store.journal.count_deliveries()
    jobs = Counter((j.kind, str(j.state)) for j in await pw.store.queue.list_jobs())
    shown = {
        (dict(labels)["kind"], dict(labels)["state"]): v
        for (name, labels), v in got.items()
        if name == "patchwarden_jobs"
    }
    assert shown == {k: float(v) for k, v in jobs.items()}
    outcomes = await pw.store.learning.find_outcomes()
    decisions = Counter(o.decision for o in outcomes if o.decision)
    assert {
        dict(labels)["decision"]: v
        for (name, labels), v in got.items()
        if name == "patchwarden_decisions_total"
    } == {k: float(v) for k, v in decisions.items()}
    merged = Counter(o.merged_how for o in outcomes if o.merged_at and o.kind != "revert")
    assert {
        dict(labels)["how"]: v
        for (name, labels), v in got.items()
        if name == "patchwarden_merges_total"
    } == {k: float(v) for k, v in merged.items()}
    return got


async def test_fix_this_to_automerge_closes_the_issue(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story(progress_seconds=0.1)
    number = await fix_this(pw)
    await settle(pw)
    forge = pw.forge
    pulls = forge.pulls(REPO)
    assert len(pulls) == 1
    pull = pulls[0]
    issue = forge.issue(REPO, pull.number)
    assert "Patchwarden risk" in (issue.body or "")
    assert f"Fixes #{number}" in (issue.body or "")
    assert "risk:low" in forge.labels(REPO, pull.number)
    assert pull.merged, bot_comments(forge, pull.number)
    assert [m.number for m in forge.merges(REPO)] == [pull.number]
    assert forge.issue(REPO, number).state == "closed"
    ours = [r for r in forge.check_runs(REPO, pull.head_sha) if r.name == "patchwarden"]
    assert len(ours) == 1  # one run, moved from queued to completed
    assert ours[-1].status == "completed"
    assert ours[-1].conclusion == "success"
    # The commit is the App's: GitHub links <bot user id>+<slug>[bot]@users.noreply... to it.
    commit = forge.repos[REPO].git.commit(pull.head_sha)
    bot = forge.state.bot
    assert (commit.author.name, commit.author.email) == (
        "patchwarden[bot]",
        f"{bot.id}+patchwarden[bot]@users.noreply.github.com",
    )
    assert commit.committer == commit.author

    # /metrics after the story: the counts the store holds, and this process's own.
    status, _ = await pw.post_webhook("ping", {"zen": "x"}, signature="sha256=" + "0" * 64)
    assert status == 401
    got = await assert_metrics_match_the_store(pw)
    assert got[("patchwarden_merges_total", (("how", "auto"),))] == 1
    assert got[("patchwarden_webhook_requests_total", (("outcome", "bad_signature"),))] == 1
    assert got[("patchwarden_webhook_requests_total", (("outcome", "accepted"),))] >= 2
    phases = {dict(k[1])["phase"] for k in got if k[0] == "patchwarden_session_phase_seconds_count"}
    assert {"setup", "verify"} & phases
    assert ("patchwarden_github_rate_limit_remaining", (("installation", "7"),)) in got
    # the installation's rate-limit gate: no pause in this story, and none held
    assert got[("patchwarden_github_rate_limit_pauses_total", (("installation", "7"),))] == 0
    assert got[("patchwarden_github_rate_limit_held_total", (("installation", "7"),))] == 0
    assert "Risk" in (ours[-1].output.title if ours[-1].output else "")
    said = bot_comments(forge, number)
    assert len(said) == 1, said  # one comment, edited in place
    edits = [str(c.body) for c in forge.calls("PATCH", r"/issues/comments/\d+$")]
    assert any("Working on it: verify:" in e for e in edits), edits  # progress as it ran
    assert "merged" in said[0]
    assert f"#{pull.number}" in said[0]
    assert "git revert -m 1" in (issue.body or "")
    assert pull.merge_commit_sha[:12] in (issue.body or "")


def merge_said(forge: LocalForge, pr: int) -> str:
    found = [b for b in bot_comments(forge, pr) if "patchwarden:merge" in b]
    assert len(found) <= 1, found
    return found[0] if found else ""


async def test_review_autonomy_waits_for_a_second_writer(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story(autonomy="review")
    forge = pw.forge
    number = await fix_this(pw)
    await settle(pw)
    (pull,) = forge.pulls(REPO)
    assert not pull.merged
    assert f"Fixes #{number}" in (forge.issue(REPO, pull.number).body or "")
    assert "approval" in merge_said(forge, pull.number)
    assert [u.login for u in pull.requested_reviewers] == ["alice"]

    await forge.post_comment(REPO, pull.number, "@patchwarden revert", author="carol")
    await settle(pw)
    assert any("Nothing to revert" in b for b in bot_comments(forge, pull.number))
    assert len(forge.pulls(REPO)) == 1  # nothing merged, so nothing reverted

    await forge.approve(REPO, pull.number, user="bob")  # read access: does nothing
    await settle(pw)
    assert not pull.merged

    await forge.post_comment(REPO, pull.number, "@patchwarden ship it", author="alice")
    await settle(pw)
    assert not pull.merged  # alice asked for the fix: she cannot be the only approver
    assert "second writer" in merge_said(forge, pull.number)

    await forge.approve(REPO, pull.number, user="carol")
    await settle(pw)
    assert pull.merged
    assert forge.issue(REPO, number).state == "closed"
    assert "approved by" in merge_said(forge, pull.number)


async def test_a_push_by_someone_else_after_scoring_stops_the_merge(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story(autonomy="review")
    forge = pw.forge
    await fix_this(pw)
    await settle(pw)
    (pull,) = forge.pulls(REPO)
    scored = pull.head_sha
    await forge.push(REPO, {"notes.txt": "mine\n"}, author="carol", branch=pull.head)
    await forge.approve(REPO, pull.number, user="carol")
    await settle(pw)
    assert pull.head_sha != scored
    assert not pull.merged
    assert not forge.merges(REPO)
    said = merge_said(forge, pull.number)
    assert "the head moved" in said, said
    refused = [e for e in await pw.store.journal.query_audit(_q()) if e.action == "merge.refused"]
    assert refused
    assert "did not score" in (refused[-1].reason or "")


def _q() -> Any:
    from app.store import AuditQuery

    return AuditQuery(repo=REPO)


async def test_a_repository_without_checks_is_never_auto_merged(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story(checks=False)
    await fix_this(pw)
    await settle(pw)
    (pull,) = pw.forge.pulls(REPO)
    assert not pull.merged
    assert "no checks ran" in merge_said(pw.forge, pull.number)


async def test_pause_refuses_new_fixes_until_resume(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story()
    forge = pw.forge
    issue = forge.open_issue(REPO, "util.py imports os and never uses it", author="bob")
    await forge.post_comment(REPO, issue.number, "@patchwarden pause", author="carol")
    await settle(pw)
    assert not await pw.store.repos.get_pause(REPO)  # write access is not enough to pause
    await forge.post_comment(REPO, issue.number, "@patchwarden pause", author="alice")
    await settle(pw)
    assert (await pw.store.repos.get_pause(REPO)).actor == "alice"
    assert "**Paused**: Patchwarden is paused on" in dashboard_body(forge)  # at once
    await forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="alice")
    await settle(pw)
    assert not forge.pulls(REPO)
    assert not await pw.jobs("fix")
    assert any("paused" in b and "not started" in b for b in bot_comments(forge, issue.number))
    refused = [e for e in await pw.store.journal.query_audit(_q()) if e.action == "trigger.refused"]
    assert any("paused" in (e.reason or "") for e in refused)

    await forge.post_comment(REPO, issue.number, "@patchwarden resume", author="alice")
    # Deliveries are routed concurrently, in no promised order: the request that follows
    # the resume is sent once the resume has been handled.
    await settle(pw)
    assert await pw.store.repos.get_pause(REPO) is None
    assert "**Running.**" in dashboard_body(forge)
    await forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="alice")
    await settle(pw)
    assert len(forge.pulls(REPO)) == 1
    assert forge.pulls(REPO)[0].merged


async def test_global_pause_lets_nothing_start(story: Callable[..., Awaitable[Harness]]) -> None:
    pw = await story(paused=True)
    number = await fix_this(pw)
    await settle(pw)
    assert not pw.forge.pulls(REPO)
    assert any("PATCHWARDEN_PAUSED" in b for b in bot_comments(pw.forge, number))


async def test_the_canary_reverts_a_breaking_merge_once_and_never_the_revert(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story(smoke=True)
    forge = pw.forge
    await fix_this(pw)
    await settle(pw)
    # `smoke` runs on main after the merge and fails (smoke.py used util.os): the
    # culprit finder blames the merge, and its revert merges itself.
    pulls = forge.pulls(REPO)
    assert len(pulls) == 2, [p.head for p in pulls]
    fix, revert = pulls
    assert fix.merged
    body = forge.issue(REPO, revert.number).body or ""
    assert f"Reverts #{fix.number}" in body
    # the same evidence as a person's commit's revert: the runs, the last passing commit
    assert "bisect blamed its merge: the first commit on which" in body
    assert "The failure reproduced in" in body
    assert "test runs in all)." in body
    assert revert.merged, bot_comments(forge, revert.number)
    assert b"import os" in on_main(forge, "util.py")
    assert f"#{revert.number}" in "".join(bot_comments(forge, fix.number))
    tripped = [e for e in await pw.store.journal.query_audit(_q()) if e.action == "canary.tripped"]
    assert len(tripped) == 1
    assert "bisect blamed the merge" in (tripped[0].reason or "")

    # A person's failing commit next: its revert waits for a person, and neither
    # Patchwarden's revert nor anything else is reverted.
    broken = await forge.push(
        REPO, {"test_broken.py": "def test_no():\n    assert False\n"}, author="carol"
    )
    await settle(pw)
    pulls = forge.pulls(REPO)
    assert len(pulls) == 3
    theirs = pulls[2]
    assert not theirs.merged
    assert broken[:12] in (forge.issue(REPO, theirs.number).body or "")
    cleared = [e for e in await pw.store.journal.query_audit(_q()) if e.action == "canary.cleared"]
    assert cleared
    assert f"bisect blamed {broken[:12]}" in (cleared[-1].reason or "")

    # The outcome feeds back: the next change here carries the revert in its score, and
    # lint fixes, demoted by it (learn), wait for a person even under autonomy automerge.
    await forge.push(REPO, {"test_broken.py": None}, author="carol", message="Undo")
    await fix_this(pw)
    await settle(pw)
    newest = forge.pulls(REPO)[3]
    body = forge.issue(REPO, newest.number).body or ""
    assert "1 change Patchwarden merged here in the last 30 days was reverted" in body
    assert "lint fixes wait for a review here after a setback" in body
    assert not newest.merged
    got = await assert_metrics_match_the_store(pw)
    assert got[("patchwarden_reverts_total", ())] == 1  # the first fix only


async def test_a_persons_breaking_commit_is_blamed_and_the_merge_left_alone(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story()  # automerge: yet a revert of a person's commit waits for a person
    forge = pw.forge
    await fix_this(pw)
    await settle(pw)
    (fix,) = forge.pulls(REPO)
    assert fix.merged
    # carol's commit needs what the fix removed: it is the first failing commit.
    human = await forge.push(REPO, BREAKING, author="carol", message="Test util.os")
    await settle(pw)
    pulls = forge.pulls(REPO)
    assert len(pulls) == 2
    revert = pulls[1]
    body = forge.issue(REPO, revert.number).body or ""
    assert human in body or human[:12] in body
    assert f"Reverts #{fix.number}" not in body
    assert not revert.merged  # a person's commit: a person decides
    assert b"import os" not in on_main(forge, "util.py")  # Patchwarden's merge stands
    outcomes = await pw.store.learning.find_outcomes(repo=REPO, pr_number=fix.number)
    assert all(o.reverted_by_pr is None for o in outcomes)
    assert not [e for e in await pw.store.journal.query_audit(_q()) if e.action == "canary.tripped"]


# The "crash" here is in-process: the server is closed while a delivery and a session
# are in flight, and the interrupted connection's transport is collected unclosed (a
# process that dies closes its sockets). What the test proves is the story, not that.
@pytest.mark.filterwarnings("ignore:Exception ignored in:pytest.PytestUnraisableExceptionWarning")
async def test_every_delivery_twice_and_a_restart_mid_job_change_nothing(
    story: Callable[..., Awaitable[Harness]], make_pw: Callable[..., Awaitable[Harness]]
) -> None:
    """The whole story with every webhook delivered twice (a second id each time), and
    the server killed while the fix session runs: one PR, one merge, one revert."""
    pw = await story(smoke=True, drain_seconds=0)
    forge = pw.forge
    forge.hooks.echo_deliveries = True
    number = await fix_this(pw)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while not any("Working on it" in b for b in bot_comments(forge, number)):
        assert loop.time() < deadline, "the fix job did not start"
        await asyncio.sleep(0.05)
    # Mid-session: the workers stop first (drain 0: the job goes back to the queue),
    # then the web server (whose graceful shutdown would otherwise let the job finish).
    await pw.runtime.pool.stop()
    await pw.server.close()
    assert not forge.pulls(REPO)
    pw = await make_pw(workers=2, drain_seconds=0)
    await forge.hooks.redeliver_failed()  # what arrived while it was down
    await settle(pw)
    await forge.hooks.redeliver_failed()
    await settle(pw)
    pulls = forge.pulls(REPO)
    fix = pulls[0]
    assert fix.merged
    assert forge.issue(REPO, number).state == "closed"
    # smoke failed on the merge: one revert, once, whatever was delivered twice
    assert len(pulls) == 2
    assert [m.number for m in forge.merges(REPO)] == [fix.number, pulls[1].number]
    assert len(bot_comments(forge, number)) == 1
    assert len([b for b in bot_comments(forge, fix.number) if "patchwarden:merge" in b]) == 1
    outcomes = await pw.store.learning.find_outcomes(repo=REPO)
    assert sorted(o.kind for o in outcomes if o.pr_number) == ["fix", "revert"]
    (job,) = await pw.jobs("fix")  # the one job, run again after the restart
    assert job.state == JobState.SUCCEEDED


async def test_a_moved_base_is_carried_and_verified_again_before_merging(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story(autonomy="review")
    forge = pw.forge
    await fix_this(pw)
    await settle(pw)
    (pull,) = forge.pulls(REPO)
    first_head = pull.head_sha
    moved = await forge.push(REPO, {"CHANGES.md": "a person's change\n"}, author="carol")
    await forge.approve(REPO, pull.number, user="carol")
    await settle(pw)
    # The patch was carried onto the new base as a new head, scored and checked again;
    # the approval was for the old head, so it waits for a new one.
    assert not pull.merged
    assert pull.head_sha != first_head
    assert forge.repos[REPO].git.commit(pull.head_sha).parents == (moved,)
    assert "approval" in merge_said(forge, pull.number)
    await forge.approve(REPO, pull.number, user="carol")
    await settle(pw)
    assert pull.merged
    assert len(forge.pulls(REPO)) == 1


def _risk_line(body: str | None) -> str:
    found = [line for line in (body or "").splitlines() if "Patchwarden risk" in line]
    assert found, body
    return found[0]


async def test_a_rejected_patch_opens_nothing_and_the_issue_says_why(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story(extra="caps:\n  changed_lines: 1\n  files: 1\n  over: reject\n")
    # The lint fix removes one line; a second unused import makes it two: over the cap.
    await pw.forge.push(
        REPO,
        {"util.py": "import os\nimport sys\n\n\ndef greet(name):\n    return 'hello ' + name\n"},
        author="alice",
    )
    number = await fix_this(pw)
    await settle(pw)
    assert not pw.forge.pulls(REPO)
    assert not [b for b in pw.forge.repos[REPO].git.refs() if "patchwarden/" in b]  # no push
    (said,) = bot_comments(pw.forge, number)
    assert "rejected" in said
    assert "caps" in said
    assert "What a maintainer can do" in said
    (outcome,) = await pw.store.learning.find_outcomes(repo=REPO)
    assert outcome.status == "rejected"
    assert outcome.decision == "reject"


async def test_revert_on_request_by_a_writer_only(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story()
    forge = pw.forge
    await fix_this(pw)
    await settle(pw)
    (fix,) = forge.pulls(REPO)
    assert fix.merged
    await forge.post_comment(REPO, fix.number, "@patchwarden revert", author="bob")
    await settle(pw)
    assert len(forge.pulls(REPO)) == 1  # bob reads only
    assert any("needs more access" in b for b in bot_comments(forge, fix.number))
    await forge.post_comment(REPO, fix.number, "@patchwarden revert", author="carol")
    await forge.post_comment(REPO, fix.number, "@patchwarden revert", author="alice")
    await settle(pw)
    pulls = forge.pulls(REPO)
    assert len(pulls) == 2  # one revert per merge, however many ask
    revert = pulls[1]
    assert f"Reverts #{fix.number}" in (forge.issue(REPO, revert.number).body or "")
    assert revert.merged  # a clean revert of Patchwarden's own merge merges itself


async def test_a_persons_breaking_commit_gets_a_revert_pr_that_waits_for_a_person(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    """No Patchwarden merge to blame: the culprit finder bisects to the person's commit
    and proposes its revert, which never merges itself, even under autonomy automerge."""
    pw = await story()
    forge = pw.forge
    broken = {"util.py": "import os\n\n\ndef greet(name):\n    return 'hi ' + name\n"}
    culprit = await forge.push(REPO, broken, author="carol", message="Say hi")
    await settle(pw)
    (revert,) = forge.pulls(REPO)
    body = forge.issue(REPO, revert.number).body or ""
    assert culprit[:12] in body
    assert "reverts a person's commit" in body
    assert "risk:low" in forge.labels(REPO, revert.number)
    assert not revert.merged
    assert "approval" in merge_said(forge, revert.number)


@pytest.mark.parametrize(
    ("status", "message", "said"),
    [
        (409, "Head branch was modified. Review and try the merge again.", "409"),
        (405, "Pull Request is not mergeable", "405"),
    ],
)
async def test_a_refused_merge_is_audited_reported_and_not_retried(
    story: Callable[..., Awaitable[Harness]], status: int, message: str, said: str
) -> None:
    pw = await story()
    forge = pw.forge
    forge.fail("PUT", r"/pulls/\d+/merge$", status, message=message, times=1)
    await fix_this(pw)
    await settle(pw)
    (pull,) = forge.pulls(REPO)
    assert not pull.merged
    attempts = forge.calls("PUT", r"/pulls/\d+/merge$")
    assert len(attempts) == 1  # no blind retry: the next event that changes something does
    assert said in merge_said(forge, pull.number)
    refused = [e for e in await pw.store.journal.query_audit(_q()) if e.action == "merge.refused"]
    assert [str(status) in (e.reason or "") for e in refused] == [True]
    # A person asking again is a new decision on fresh facts: it merges.
    await forge.approve(REPO, pull.number, user="carol")
    await settle(pw)
    assert pull.merged


# The forge's installation tokens start ghs_; as git's Basic credential they are the
# base64 of "x-access-token:ghs_…", which starts with the second marker.
MARKERS = ("ghs_", base64.b64encode(b"x-access-token:ghs").decode())


@pytest.mark.serial  # reads every host process's argv for any installation token
async def test_the_token_never_reaches_argv_logs_or_github_text(
    story: Callable[..., Awaitable[Harness]], caplog: pytest.LogCaptureFixture
) -> None:
    """Fetching, pushing and publishing with the installation token: it is in no host
    process's argv (git gets it in its environment), no log line, and no text on GitHub."""
    pw = await story(autonomy="review")
    forge = pw.forge
    leaks: list[str] = []
    stop = threading.Event()

    def watch_argv() -> None:  # every process on the host, the whole story long
        while not stop.is_set():
            for marker in MARKERS:
                leaks.extend(running_with(marker))

    caplog.set_level(logging.DEBUG)
    watcher = threading.Thread(target=watch_argv, daemon=True)
    watcher.start()
    try:
        number = await fix_this(pw)
        await settle(pw)
    finally:
        stop.set()
        watcher.join()
    (pull,) = forge.pulls(REPO)
    pushes = [r for r in forge.requests if r.path.endswith("/git-receive-pack")]
    assert pushes  # the branch was pushed, authenticated
    assert all(r.auth_kind == "installation" and r.status == 200 for r in pushes)
    assert leaks == []
    tokens = list(forge.state.tokens)
    assert tokens
    text = [forge.issue(REPO, n).body or "" for n in (number, pull.number)]
    text += [c.body for n in (number, pull.number) for c in forge.comments(REPO, n)]
    text += [r.output.summary for r in forge.check_runs(REPO, pull.head_sha) if r.output]
    for token in tokens:
        assert token not in caplog.text
        assert not [t for t in text if token in t]


async def test_no_model_a_bug_report_gets_an_answer_and_nothing_opened(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story()  # autonomy automerge, no model configured
    forge = pw.forge
    issue = forge.open_issue(REPO, "greet() crashes on an empty name", author="bob")
    await forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="alice")
    await settle(pw)
    assert forge.pulls(REPO) == []  # no lint PR pretending to fix the bug
    assert forge.issue(REPO, issue.number).state == "open"
    (said,) = bot_comments(forge, issue.number)
    assert "No model is configured" in said
    # Answered before any session: no clone, no setup, no test run was spent on it.
    assert not (pw.runtime.settings.cache_dir / "mirrors" / f"{REPO}.git").exists()
    assert "`@patchwarden lint`" in said.replace("\u2060", "")  # quoted: it pings nobody
    assert "No pull request" in said


async def test_asked_for_lint_on_a_bug_the_pr_never_closes_the_bug(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story()  # automerge: the lint PR merges itself, the bug stays open
    forge = pw.forge
    issue = forge.open_issue(REPO, "greet() crashes on an empty name", author="bob")
    await forge.post_comment(REPO, issue.number, "@patchwarden lint", author="alice")
    await settle(pw)
    (pull,) = forge.pulls(REPO)
    body = forge.issue(REPO, pull.number).body or ""
    assert f"For #{issue.number}" in body
    assert f"Fixes #{issue.number}" not in body
    assert (forge.issue(REPO, pull.number).title or "").startswith("Fix lint: F401")
    assert pull.merged
    assert forge.issue(REPO, issue.number).state == "open"


async def test_asking_again_updates_the_open_pull_request(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story(autonomy="review")
    forge = pw.forge
    number = await fix_this(pw)
    await settle(pw)
    (first,) = forge.pulls(REPO)
    await forge.post_comment(REPO, number, "@patchwarden fix this again", author="carol")
    await settle(pw)
    pulls = forge.pulls(REPO)
    assert [p.number for p in pulls] == [first.number]  # updated, not a second one
    assert not pulls[0].merged


async def test_signed_commits_required_the_api_commit_is_carried_and_merges(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    """commit_signing: api on a branch that requires signed commits: GitHub makes (and
    signs) the patch commit, also when a moved base carries it; it merges."""
    pw = await story(autonomy="review", extra="commit_signing: api\n")
    forge = pw.forge
    forge.require_signed_commits(REPO)
    await fix_this(pw)
    await settle(pw)
    (pull,) = forge.pulls(REPO)
    repo = forge.repos[REPO]
    first = pull.head_sha
    assert first in repo.verified
    commit = repo.git.commit(first)
    assert commit.author.email == f"{forge.state.bot.id}+patchwarden[bot]@users.noreply.github.com"
    assert commit.committer.name == "GitHub"
    assert "import os" not in on_main_of(forge, first, "util.py")  # the scored patch
    # Nothing went by git push; the check run and the PR body name GitHub's commit.
    assert not [a for a in forge.state.arrivals if a.endswith("/git-receive-pack")]
    assert [r.name for r in forge.check_runs(REPO, first)].count("patchwarden") == 1
    assert first[:12] in (forge.issue(REPO, pull.number).body or "")

    moved = await forge.push(REPO, {"CHANGES.md": "a person's change\n"}, author="carol")
    await forge.approve(REPO, pull.number, user="carol")
    await settle(pw)
    assert not pull.merged  # carried onto the new base: a new head, a new approval
    assert pull.head_sha != first
    assert pull.head_sha in repo.verified
    assert repo.git.commit(pull.head_sha).parents == (moved,)
    await forge.approve(REPO, pull.number, user="carol")
    await settle(pw)
    assert pull.merged, merge_said(forge, pull.number)
    # The final body (rendered after the merge) names GitHub's commit, not the session's.
    assert pull.head_sha[:12] in (forge.issue(REPO, pull.number).body or "")


async def test_signed_commits_required_a_git_push_is_refused_with_the_setting_to_change(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story()  # automerge, commit_signing: git (the default)
    forge = pw.forge
    forge.require_signed_commits(REPO)
    await fix_this(pw)
    await settle(pw)
    (pull,) = forge.pulls(REPO)
    assert not pull.merged
    said = merge_said(forge, pull.number)
    assert "Commits must have verified signatures." in said
    assert "commit_signing: api" in said


def on_main_of(forge: LocalForge, sha: str, path: str) -> str:
    entry = forge.repos[REPO].git.entry(sha, path)
    assert entry is not None, f"{path} is not in {sha}"
    return (entry.content or b"").decode()


async def test_the_check_run_links_to_the_pull_requests_signed_audit_page(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story(public_url="https://pw.example.org/")
    forge = pw.forge
    await fix_this(pw)
    await settle(pw)
    (pull,) = forge.pulls(REPO)
    assert pull.merged
    (ours,) = [r for r in forge.check_runs(REPO, pull.head_sha) if r.name == "patchwarden"]
    link = ours.details_url or ""
    prefix = f"https://pw.example.org/audit/{REPO}/pull/{pull.number}?sig="
    assert link.startswith(prefix), link
    path = link.removeprefix("https://pw.example.org")

    async with pw.session.get(pw.url + path) as page:
        assert page.status == 200
        assert page.headers["Referrer-Policy"] == "no-referrer"
        assert "default-src 'none'" in page.headers["Content-Security-Policy"]
        text = await page.text()
    assert f"{REPO}#{pull.number}" in text
    for said in ("policy.decided", "pr.opened", "Score, factor by factor", "(auto)"):
        assert said in text, said
    assert (pull.merge_commit_sha or "") in text
    async with pw.session.get(pw.url + path + "&format=json") as answer:
        facts = await answer.json()
    (job,) = facts["jobs"]
    assert (job["decision"], job["merge_sha"]) == ("automerge", pull.merge_commit_sha)
    assert {e["action"] for e in facts["audit"]} >= {"policy.decided", "pr.merged"}

    # The signature opens this pull request's page and no other; none is a plain 404.
    sig = link.rsplit("=", 1)[1]
    for wrong in (
        path.replace(sig, "0" * len(sig)),
        path.replace(f"/pull/{pull.number}?", f"/pull/{pull.number + 1}?"),
        path.split("?")[0],
    ):
        async with pw.session.get(pw.url + wrong) as refused:
            assert refused.status == 404, wrong
            assert "check run" in (await refused.json())["error"]


async def test_a_bad_repository_config_is_answered_with_its_line_and_opens_nothing(
    story: Callable[..., Awaitable[Harness]],
) -> None:
    pw = await story()
    bad = "autonomy: automerge\nmerge:\n  methd: squash\n"  # a typo on line 3
    await pw.forge.push(REPO, {".github/patchwarden.yml": bad}, author="alice")
    number = await fix_this(pw)
    await settle(pw)
    assert not pw.forge.pulls(REPO)
    said = "\n".join(bot_comments(pw.forge, number))
    assert ".github/patchwarden.yml:3" in said, said
    assert "methd" in said
    assert "method" in said  # the suggestion
    assert "patchwarden validate" in said, said
