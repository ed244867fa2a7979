"""A job never vanishes silently: when it fails for good (its own errors, or a crash
loop of the workers that ran it), the person who asked is told on the issue, its
"Working on it" comment says what failed and what to do, and `patchwarden audit
--failed` lists it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from app.cli.audit import _audit_failed
from app.jobs.report import job_comment, report_for
from app.publish.github import Publisher
from app.store import Job, JobState, NewJob
from app.store.models import MAX_CRASHES
from tests.conftest import INSTALLATION, REPO, Harness


async def _crash_loop(pw: Harness, job: Job, *, say: Callable[[str], Awaitable[None]]) -> None:
    """Every worker that takes ``job`` says it is working on it, then dies."""
    for crash in range(MAX_CRASHES):
        claimed = None
        while claimed is None:
            claimed = await pw.store.queue.claim(
                queue="sessions",
                kinds=[job.kind],
                owner=f"doomed-{crash}",
                lease_seconds=0.01,
                crash_backoff_seconds=0.001,
            )
            await asyncio.sleep(0.005)
        await say("Working on it: setting up.")
        await asyncio.sleep(0.02)
    await pw.store.queue.claim(
        queue="sessions", kinds=[job.kind], owner="x", lease_seconds=1, crash_backoff_seconds=0.001
    )


async def test_a_crash_looping_revert_job_edits_the_revert_s_own_comment(pw: Harness) -> None:
    """A revert speaks on the pull request it reverts, through its own comment: the
    notice of its failure edits that one, it does not start a second."""
    pull = pw.forge.open_issue(REPO, "Add greet()", author="alice")  # stands for the PR
    job, _ = await pw.store.queue.enqueue(
        NewJob(
            kind="revert",
            key=f"revert:{REPO}#{pull.number}",
            repo=REPO,
            installation_id=INSTALLATION,
            payload={"repo": REPO, "pr": pull.number, "requested_by": "alice"},
        ),
        actor="alice",
    )
    pub = Publisher(
        pw.runtime.github.installation(INSTALLATION), REPO, bot_login="patchwarden[bot]"
    )
    await _crash_loop(pw, job, say=report_for(pub, job.kind, job.id, pull.number).say)
    await pw.settle(every_job=True)
    [notice] = await pw.jobs("failure_notice")
    assert notice.state == JobState.SUCCEEDED, notice.last_error
    bodies = [c.body for c in pw.forge.repos[REPO].issues[pull.number].comments]
    assert len(bodies) == 1, bodies  # the revert's comment, edited
    assert "Stopped: this revert job failed" in bodies[0]
    assert "@patchwarden revert" in bodies[0]


async def test_a_crash_looping_fix_job_ends_failed_and_its_requester_is_told(
    pw: Harness, capsys: object
) -> None:
    issue = pw.forge.open_issue(REPO, "Crash on start", author="alice")
    job, _ = await pw.store.queue.enqueue(
        NewJob(
            kind="fix",
            key=f"fix:{REPO}#{issue.number}:comment:1",
            repo=REPO,
            installation_id=INSTALLATION,
            payload={"repo": REPO, "issue_number": issue.number, "requested_by": "alice"},
        ),
        actor="alice",
    )
    pub = Publisher(
        pw.runtime.github.installation(INSTALLATION), REPO, bot_login="patchwarden[bot]"
    )
    # Every worker that takes the job says it is working on it, then dies.
    await _crash_loop(pw, job, say=job_comment(pub, issue.number, job.id).say)
    failed = await pw.store.queue.get_job(job.id)
    assert failed is not None
    assert failed.state == JobState.FAILED
    await pw.settle(every_job=True)
    [notice] = await pw.jobs("failure_notice")
    assert notice.state == JobState.SUCCEEDED, notice.last_error
    bodies = [c.body for c in pw.forge.repos[REPO].issues[issue.number].comments]
    [said] = [b for b in bodies if f"(job {job.id})" in b]
    assert "Working on it" not in said
    assert "Stopped: this fix job failed" in said
    assert "a crash loop" in said
    assert "@patchwarden fix this" in said
    assert len(bodies) == 1  # the same comment, edited: not a second one
    # and a maintainer finds it
    assert await _audit_failed(pw.runtime.settings, repo=REPO, since=None, as_json=False) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert f"job {job.id}" in out
    assert "crash loop" in out
    assert f"{REPO}#{issue.number}" in out


async def test_a_failed_permission_lookup_tells_the_commenter_to_ask_again(pw: Harness) -> None:
    pw.forge.add_user(REPO, "alice", "write")
    issue = pw.forge.open_issue(REPO, "Crash", author="alice")
    pw.forge.fail("GET", r"/collaborators/alice/permission$", 500, times=50)
    await pw.forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="alice")
    await pw.settle()
    assert await pw.jobs("fix") == []
    said = [
        c.body for c in pw.forge.repos[REPO].issues[issue.number].comments if c.user.type == "Bot"
    ]
    assert len(said) == 1, said
    assert "@alice, I could not check your access" in said[0]
    assert "ask again" in said[0]


async def test_a_failed_lookup_on_a_lifecycle_command_is_answered_and_does_nothing(
    pw: Harness,
) -> None:
    """`pause` (like `ship it` and `revert`) fails closed when GitHub cannot say who the
    commenter is, and says so: silence would read as done."""
    pw.forge.add_user(REPO, "alice", "admin")
    issue = pw.forge.open_issue(REPO, "Release week", author="alice")
    pw.forge.fail("GET", r"/collaborators/alice/permission$", 500, times=50)
    await pw.forge.post_comment(REPO, issue.number, "@patchwarden pause", author="alice")
    await pw.settle()
    assert await pw.store.repos.get_pause(REPO) is None
    said = [
        c.body for c in pw.forge.repos[REPO].issues[issue.number].comments if c.user.type == "Bot"
    ]
    assert len(said) == 1, said
    assert "@alice, I could not check your access" in said[0]
    assert "`pause` did nothing" in said[0]
