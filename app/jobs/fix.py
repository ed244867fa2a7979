"""``fix``: an issue's `@patchwarden fix this` (or the fix label) becomes a pull request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.fixers.choose import choose, is_about_lint, make_fixer
from app.jobs.context import JobContext, Running
from app.jobs.kinds import FixJob
from app.jobs.report import job_comment
from app.jobs.to_pull import PullOptions, ended, session_to_pull
from app.policy.score import Trigger
from app.sessions.session import Document, Task
from app.store import Job


async def fix_job(ctx: JobContext, job: Job) -> dict[str, Any]:
    run = Running.start(ctx, job, FixJob)
    fix = run.kind
    number = fix.issue_number
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
    )
    answer = choice.answer(ctx.bot)
    if answer is not None:
        return await ended(run, outcome, report, status="failed", why=answer)
    return await session_to_pull(
        run,
        outcome,
        task=task,
        fixer=make_fixer("auto", ctx.settings, ledger=ctx.store),
        report=report,
        options=PullOptions(
            trigger=Trigger(fix.trigger),
            closes=number,
            # A new request on an issue whose pull request is still open updates that one.
            branch=await _open_pull_branch(run, number),
        ),
    )


def fix_task(fix: FixJob, issue: Mapping[str, Any]) -> Task:
    """The session's task for a fix request: the issue as GitHub returns it (its title
    and body are someone else's words: untrusted data) and the requester's own words."""
    number = fix.issue_number
    documents = []
    if issue.get("body"):
        documents.append(Document(f"issue #{number} body", str(issue["body"])))
    return Task(
        title=str(issue.get("title") or fix.issue_title or f"issue #{number}")[:200],
        kind="lint" if fix.mode == "lint" else "fix",
        instructions=fix.instructions,
        documents=tuple(documents),
    )


async def _open_pull_branch(run: Running[FixJob], number: int) -> str | None:
    """The branch of an open Patchwarden pull request for issue ``number``, if any."""
    earlier = [
        o
        for o in await run.ctx.store.find_outcomes(repo=run.repo)
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
        # Only a branch still at the patch Patchwarden pushed: a person's commits
        # on it would be lost to the force-push.
        if (pull.get("head") or {}).get("sha") == outcome.head_sha:
            return outcome.branch
        return None
    return None
