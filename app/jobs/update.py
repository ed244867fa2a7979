"""``update``: the base moved since the session; carry the scored patch onto the new
base and verify it again (the merge job asks for it before merging)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal, cast

from app.contract.kinds import UpdateJob
from app.errors import PermanentJobError
from app.fixers.carry import CarryFixer
from app.jobs.context import JobContext, Running
from app.jobs.report import report_for
from app.jobs.to_pull import PullOptions, session_to_pull
from app.policy.score import Trigger, TriggerKind
from app.sessions.task import Task
from app.store import Job, Outcome


async def update_job(ctx: JobContext, job: Job) -> dict[str, Any]:
    run = Running.start(ctx, job, UpdateJob)
    update = run.kind
    first = await ctx.store.learning.get_outcome(update.job)
    if first is None or first.head_sha is None or first.base_sha is None:
        raise PermanentJobError(f"job {update.job} has no published patch to carry")
    outcome = await run.outcome(kind=first.kind, trigger=first.trigger)
    outcome = replace(
        outcome,
        issue_number=first.issue_number,
        requested_by=first.requested_by,
        revert_of_pr=first.revert_of_pr,
    )
    report = report_for(run.pub, job.kind, job.id, int(first.pr_number or 0))
    refused = await run.refused_if_paused(outcome, report, "Not updated")
    if refused:
        return refused
    old = await ctx.load_result(first.job_id)
    carry = CarryFixer(first.head_sha, carried=old.fix if old is not None else None)
    reverts: Literal["bot", "human"] | None = (
        "bot" if first.reverts == "bot" else "human" if first.reverts == "human" else None
    )
    return await session_to_pull(
        run,
        outcome,
        task=Task(title=first.title or "update", kind="fix"),
        fixer=carry,
        report=report,
        options=PullOptions(
            trigger=Trigger(_trigger_kind(first.trigger), reverts=reverts, alert=_alert(first)),
            branch=first.branch,
            links=first.links,
        ),
    )


def _alert(first: Outcome) -> Literal["dependabot", "code_scanning"] | None:
    """The security alert the first change answered: its mode holds the update too."""
    if first.kind == "security_alert" and first.trigger in ("dependabot", "code_scanning"):
        return cast(Literal["dependabot", "code_scanning"], first.trigger)
    return None


def _trigger_kind(text: str) -> TriggerKind:
    known = ("comment", "label", "ci", "alert", "canary")
    return cast(TriggerKind, text) if text in known else "comment"
