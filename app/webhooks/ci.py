"""A check run, workflow run or commit status that failed on the default branch becomes
an ``alert`` job.

One job per failing commit: several failed checks on the same head share it.
"""

from __future__ import annotations

from gidgethub import sansio
from gidgethub.routing import Router

from app.github import GitHubClient
from app.jobs.kinds import AlertJob
from app.webhooks import triggers
from app.webhooks.context import HandlerContext
from app.webhooks.payloads import Envelope, typed

router = Router()


@router.register("check_run", action="completed")
@router.register("workflow_run", action="completed")
@router.register("status")
async def on_ci_completed(event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext) -> None:
    data = typed(Envelope, event.data)
    repo = data.repository.full_name if data.repository else None
    actor = data.sender.login if data.sender else None
    failure = triggers.screen_ci_failure(event.event, event.data, bot_name=ctx.bot_name)
    if isinstance(failure, str):
        await ctx.audit("trigger.ignored", actor=actor, repo=repo, reason=failure)
        return
    await ctx.audit(
        "trigger.accepted",
        actor=actor,
        repo=failure.repo,
        reason=f"{failure.name} {failure.conclusion} on {failure.branch} at {failure.sha[:12]}",
        details={"via": event.event, "sha": failure.sha},
    )
    alert = AlertJob(
        repo=failure.repo,
        source=event.event,
        fingerprint=f"ci:{failure.sha}",
        sha=failure.sha,
        branch=failure.branch,
        name=failure.name,
        conclusion=failure.conclusion,
        url=failure.url,
    )
    installation = data.installation.id if data.installation else None
    await ctx.enqueue(alert, installation_id=installation, actor=actor)
