"""``@patchwarden fix this`` (or ``/fix``) in a new comment on an issue."""

from __future__ import annotations

from gidgethub import sansio
from gidgethub.routing import Router

from app.github import GitHubClient
from app.store import NewJob
from app.webhooks import triggers
from app.webhooks.access import answer_refusal, check_write_access, react, repo_vars
from app.webhooks.context import HandlerContext

router = Router()


@router.register("issue_comment", action="created")
async def on_comment_created(event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext) -> None:
    data = event.data
    repo = data["repository"]["full_name"]
    login = (data.get("sender") or {}).get("login")
    screen = triggers.screen_issue_comment(data, bot_name=ctx.bot_name)
    if screen.verdict == "ignore" or screen.command is None or not login:
        await ctx.audit("trigger.ignored", actor=login, repo=repo, reason=screen.reason)
        return
    decision = await check_write_access(gh, repo=repo, login=login)
    issue, comment = data["issue"], data["comment"]
    await ctx.audit(
        decision.audit_action,
        actor=login,
        repo=repo,
        reason=decision.reason,
        details={"issue": issue["number"], "comment_id": comment["id"], "via": "comment"},
    )
    if decision.verdict == "refuse":
        await answer_refusal(
            gh,
            ctx,
            repo=repo,
            issue_number=issue["number"],
            login=login,
            decision=decision,
            key=f"comment={comment['id']}",
        )
    if decision.verdict != "trigger":
        return
    await ctx.enqueue(
        NewJob(
            kind="fix",
            key=f"fix:{repo}#{issue['number']}:comment:{comment['id']}",
            repo=repo,
            installation_id=(data.get("installation") or {}).get("id"),
            delivery_id=event.delivery_id,
            payload={
                "repo": repo,
                "issue_number": issue["number"],
                "issue_title": issue.get("title", ""),
                "trigger": "comment",
                "comment_id": comment["id"],
                "requested_by": login,
                "instructions": screen.command.instructions,
            },
        ),
        actor=login,
    )
    # 👀 says "heard you". Reacting twice is harmless: GitHub answers 200 the second time.
    await react(
        gh,
        ctx,
        "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
        {**repo_vars(repo), "comment_id": comment["id"]},
        repo=repo,
    )
