"""A job that failed for good: tell the person who asked, where they asked."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.contract.kinds import FailureNotice, thread_of
from app.jobs.context import JobContext
from app.jobs.report import report_for
from app.publish.body import inline
from app.redact import redact
from app.store import Job
from app.words import plural


async def failure_notice_job(ctx: JobContext, job: Job) -> dict[str, Any]:
    """Edit the failed job's comment ("Working on it…") to say what failed and what to
    do; its outcome becomes ``failed``. Queued by the store with the failure."""
    notice = FailureNotice.of(job)
    failed = await ctx.store.queue.get_job(notice.job_id)
    if failed is None or failed.repo is None:
        return {"told": False, "why": "the failed job is gone"}
    number = thread_of(failed)
    if not number:
        return {"told": False, "why": "the job has no issue or pull request"}
    why = redact(failed.last_error or "an unknown error").splitlines()[0][:300]
    bot = ctx.bot
    again = {
        "fix": f"Ask again with `@{bot} fix this` (a new request starts a new job)",
        "merge": f"A new approval or `@{bot} ship it` checks it again",
        "revert": f"Ask again with `@{bot} revert`",
    }.get(failed.kind, "Ask again")
    report = report_for(ctx.publisher(failed), failed.kind, failed.id, number)
    await report.say(
        f"Stopped: this {failed.kind} job failed after {plural(failed.attempts, 'run')} and "
        f"will not go on by itself. What failed: {inline(why)}. {again}; if it keeps "
        f"failing, a maintainer can run `patchwarden audit --job {failed.id}`."
    )
    outcome = await ctx.store.learning.get_outcome(failed.id)
    if outcome is not None and outcome.status == "running":
        await ctx.store.learning.save_outcome(replace(outcome, status="failed"))
    await ctx.store.journal.audit(
        "job.failure_told", repo=failed.repo, job_id=failed.id, reason=why
    )
    return {"told": True, "job": failed.id, "on": number}
