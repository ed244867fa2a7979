"""``fix``: an issue's `@patchwarden fix this` (or the fix label) becomes a pull request."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from app.contract.kinds import FixJob
from app.fixers.choose import choose, is_about_lint, make_fixer
from app.jobs.context import JobContext, Running
from app.jobs.report import job_comment
from app.jobs.to_pull import PullOptions, ended, session_to_pull
from app.policy.score import Trigger
from app.sessions.task import Document, Task
from app.store import Job


async def fix_job(ctx: JobContext, job: Job) -> dict[str, Any]:
    run = Running.start(ctx, job, FixJob)
    fix = run.kind
    number = fix.issue_number
    coalesced = await _coalesced(run)
    if coalesced is not None:
        return coalesced
    outcome = await run.outcome(kind="fix", trigger=fix.trigger, issue_number=number)
    report = job_comment(run.pub, number, job.id)
    refused = await run.refused_if_paused(outcome, report, "Not started")
    if refused:
        return refused
    await report.say("Working on it: a coding session is setting up.")
    issue = await run.pub.gh.getitem(
        "/repos/{owner}/{repo}/issues/{number}", {**run.pub.vars, "number": number}
    )
    task = fix_task(fix, issue)
    # No fixer can answer it (no model, not about lint): say so before any setup,
    # network or test run is spent on it.
    choice = choose(
        task.kind,
        llm_configured=ctx.settings.llm_configured,
        llm_on_alerts=False,
        about_lint=is_about_lint(task),
        asked=task.fixer,
    )
    answer = choice.answer(ctx.bot)
    if answer is not None:
        return await ended(run, outcome, report, status="failed", why=answer)
    return await session_to_pull(
        run,
        outcome,
        task=task,
        fixer=make_fixer("auto", ctx.settings, ledger=ctx.store.repos),
        report=report,
        options=PullOptions(
            trigger=Trigger(fix.trigger),
            closes=number,
            # A new request on an issue whose pull request is still open updates that one.
            branch=await _open_pull_branch(run, number),
        ),
    )


# One session per intent: how long a request waits for an earlier one on the same
# issue to finish, between looks, and how many looks before it runs anyway.
WAIT_SECONDS = 30.0
MAX_WAITS = 60


async def _coalesced(run: Running[FixJob]) -> dict[str, Any] | None:
    """Repeated requests for one issue make one session. A request with a newer one
    queued for the same issue gives way to it
    (the latest words win; the audit keeps each). One that finds an earlier one still
    running waits for it (queued again, a little later). One that finds the pull
    request open, made for the same words, has nothing new to ask: it ends there."""
    fix, job, store = run.kind, run.job, run.ctx.store
    same = [
        j
        for state in ("queued", "running")
        for j in await store.queue.list_jobs(kind="fix", state=state)
        if j.id != job.id
        and j.repo == job.repo
        and j.payload.get("issue_number") == fix.issue_number
    ]
    newer = [j for j in same if j.id > job.id and j.state == "queued"]
    if newer:
        into = max(j.id for j in newer)
        await run.audit(
            "fix.coalesced",
            reason=f"a newer request for #{fix.issue_number} (job {into}) runs instead",
            into=into,
        )
        return {"status": "coalesced", "into": into}
    # Any other running: a request waiting out an earlier one is queued again with a
    # higher id, and a newer one may have started meanwhile.
    earlier = [j for j in same if j.state == "running"]
    waits = int(fix.ref.rsplit(":wait", 1)[1]) if ":wait" in fix.ref else 0
    asked_at = await _asked_at(run)
    if earlier and waits < MAX_WAITS:
        ref = f"{fix.ref.split(':wait')[0]}:wait{waits + 1}"
        later = fix.model_copy(update={"ref": ref, "asked_at": asked_at})
        await run.ctx.enqueue(
            later, installation_id=job.installation_id, run_after=time.time() + WAIT_SECONDS
        )
        await run.audit(
            "fix.waits",
            reason=f"job {earlier[0].id} works on #{fix.issue_number}: this request runs after it",
        )
        return {"status": "waiting", "for": earlier[0].id}
    return await _answered(run, asked_at)


async def _asked_at(run: Running[FixJob]) -> float:
    """When the request was made: GitHub's delivery of it reached Patchwarden (its
    job may have been queued later, behind other deliveries)."""
    if run.kind.asked_at is not None:
        return run.kind.asked_at
    delivery = (
        await run.ctx.store.journal.get_delivery(run.job.delivery_id)
        if run.job.delivery_id
        else None
    )
    return delivery.received_at if delivery is not None else run.job.created_at


async def _answered(run: Running[FixJob], asked_at: float) -> dict[str, Any] | None:
    """Whether an earlier request for the issue, in the same words and mode, already
    answers this one: it ran while this one was queued (whatever it found), or its
    pull request is open. Then this one ends, audited, with no session."""
    fix, store = run.kind, run.ctx.store
    for o in reversed(await store.learning.find_outcomes(repo=run.repo)):
        if o.kind != "fix" or o.issue_number != fix.issue_number or o.job_id == run.job.id:
            continue
        earlier = await store.queue.get_job(o.job_id) if o.job_id is not None else None
        asked = earlier.payload if earlier is not None else {}
        if (asked.get("instructions", ""), asked.get("mode", "fix")) != (
            fix.instructions,
            fix.mode,
        ):
            return None  # other words: a new session (it updates an open pull request)
        if (
            earlier is not None
            and earlier.state in ("succeeded", "failed")
            and run.job.created_at <= earlier.updated_at
        ):
            await run.audit(
                "fix.answered",
                reason=f"job {earlier.id} answered the same request meanwhile ({o.status})",
                by=earlier.id,
            )
            return {"status": "answered", "by": earlier.id}
        if o.pr_number is None or o.merged_at is not None or not o.branch:
            return None  # asked again after no pull request, or after a merge
        pull = await run.pub.find_pull(o.branch)
        if pull is None or pull.get("state") != "open":
            return None
        await run.audit(
            "fix.unchanged",
            reason=f"pull request #{o.pr_number} already answers this request",
            pull=o.pr_number,
        )
        return {"status": "unchanged", "pull": o.pr_number}
    return None


def fix_task(fix: FixJob, issue: Mapping[str, Any]) -> Task:
    """The session's task for a fix request: the issue as GitHub returns it (its title
    and body are someone else's words: untrusted data) and the requester's own words."""
    number = fix.issue_number
    documents = []
    if issue.get("body"):
        documents.append(Document(f"issue #{number} body", str(issue["body"])))
    return Task(
        title=str(issue.get("title") or fix.issue_title or f"issue #{number}")[:200],
        kind="fix",
        fixer=None if fix.mode == "fix" else fix.mode,
        instructions=fix.instructions,
        documents=tuple(documents),
    )


async def _open_pull_branch(run: Running[FixJob], number: int) -> str | None:
    """The branch of an open Patchwarden pull request for issue ``number``, if any."""
    earlier = [
        o
        for o in await run.ctx.store.learning.find_outcomes(repo=run.repo)
        if o.issue_number == number
        and o.kind == "fix"
        and o.job_id != run.job.id
        and o.pr_number is not None
        and o.branch
        and o.merged_at is None
    ]
    for outcome in reversed(earlier):
        assert outcome.branch is not None
        pull = await run.pub.find_pull(outcome.branch)
        if pull is None or pull.get("state") != "open":
            continue
        # Only a branch still at the patch Patchwarden pushed: a person's commits on
        # it are theirs (the push would go to a new branch: app/jobs/branch.py).
        if (pull.get("head") or {}).get("sha") == outcome.head_sha:
            return outcome.branch
        return None
    return None
