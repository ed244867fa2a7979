"""``revert``: undo one of Patchwarden's merges, by the canary or `@patchwarden revert`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.contract.kinds import RevertJob
from app.fixers.choose import make_fixer
from app.jobs.context import JobContext, Running
from app.jobs.report import report_for
from app.jobs.to_pull import PullOptions, session_to_pull
from app.policy.score import Trigger
from app.sessions.task import Task
from app.store import Job


async def revert_job(ctx: JobContext, job: Job) -> dict[str, Any]:
    run = Running.start(ctx, job, RevertJob)
    revert = run.kind
    store = ctx.store
    # The row that merged: a pull request updated onto a new base has several.
    merged = [
        o
        for o in await store.learning.find_outcomes(repo=run.repo, pr_number=revert.pr)
        if o.merge_sha
    ]
    outcome = await run.outcome(kind="revert", trigger=revert.trigger)
    outcome = replace(outcome, revert_of_pr=revert.pr)
    report = report_for(run.pub, job.kind, job.id, revert.pr)
    if not merged:
        await report.say("Nothing to revert: Patchwarden has not merged this pull request.")
        await store.learning.save_outcome(replace(outcome, status="refused"))
        return {"status": "refused", "reason": "not merged"}
    original = merged[-1]
    refused = await run.refused_if_paused(outcome, report, "Not reverting")
    if refused:
        return refused
    why = revert.why or f"@{revert.requested_by} asked for it"
    await report.say(f"Reverting #{original.pr_number} ({why}).")
    task = Task(
        title=f"Revert #{original.pr_number}: {original.title}"[:200],
        kind="alert",
        culprit=original.merge_sha,
        instructions=f"{why}: {revert.evidence}" if revert.evidence else why,
    )
    trigger = Trigger("canary" if revert.trigger == "canary" else "comment", reverts="bot")
    result = await session_to_pull(
        run,
        outcome,
        task=task,
        fixer=make_fixer("revert", ctx.settings),
        report=report,
        options=PullOptions(trigger=trigger, revert_of=original),
    )
    if result.get("pr"):
        latest = await store.learning.get_outcome(original.job_id)
        if latest is not None:
            await store.learning.save_outcome(replace(latest, reverted_by_pr=int(result["pr"])))
    return result
