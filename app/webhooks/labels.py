"""The ``patchwarden:fix`` label added to an issue by someone with write access."""

from __future__ import annotations

from gidgethub import sansio
from gidgethub.routing import Router

from app.github import GitHubClient
from app.store import NewJob
from app.webhooks import triggers
from app.webhooks.access import answer_refusal, check_write_access, react, repo_vars
from app.webhooks.context import HandlerContext

router = Router()


@router.register("issues", action="labeled")
async def on_issue_labeled(event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext) -> None:
    data = event.data
    repo = data["repository"]["full_name"]
    login = (data.get("sender") or {}).get("login")
    screen = triggers.screen_issue_label(data, bot_name=ctx.bot_name)
    if screen.verdict == "ignore" or not login:
        await ctx.audit("trigger.ignored", actor=login, repo=repo, reason=screen.reason)
        return
    issue = data["issue"]
    decision = await check_write_access(gh, repo=repo, login=login)
    await ctx.audit(
        decision.audit_action,
        actor=login,
        repo=repo,
        reason=decision.reason,
        details={"issue": issue["number"], "via": "label"},
    )
    if decision.verdict == "refuse":
        await answer_refusal(
            gh,
            ctx,
            repo=repo,
            issue_number=issue["number"],
            login=login,
            decision=decision,
            key=f"label={event.delivery_id}",
        )
    if decision.verdict != "trigger":
        return
    await ctx.enqueue(
        NewJob(
            kind="fix",
            key=f"fix:{repo}#{issue['number']}:label:{event.delivery_id}",
            repo=repo,
            installation_id=(data.get("installation") or {}).get("id"),
            delivery_id=event.delivery_id,
            payload={
                "repo": repo,
                "issue_number": issue["number"],
                "issue_title": issue.get("title", ""),
                "trigger": "label",
                "comment_id": None,
                "requested_by": login,
                "instructions": "",
            },
        ),
        actor=login,
    )
    await react(
        gh,
        ctx,
        "/repos/{owner}/{repo}/issues/{number}/reactions",
        {**repo_vars(repo), "number": issue["number"]},
        repo=repo,
    )
