"""The ``patchwarden:fix`` label added to an issue by someone with write access."""

from __future__ import annotations

from gidgethub import sansio
from gidgethub.routing import Router

from app.github import GitHubClient
from app.webhooks import triggers
from app.webhooks.access import allowed
from app.webhooks.context import HandlerContext
from app.webhooks.fix_requests import FixRequest, start_fix
from app.webhooks.payloads import Envelope, IssuesEvent, typed

router = Router()


@router.register("issues", action="labeled")
async def on_issue_labeled(
    event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext, read: Envelope
) -> None:
    data = typed(IssuesEvent, read)
    repo, number = data.repository.full_name, data.issue.number
    login = data.sender.login if data.sender else None
    screen = triggers.screen_issue_label(data)
    if screen.command is None or not login:
        await ctx.audit("trigger.ignored", actor=login, repo=repo, reason=screen.reason)
        return
    request = FixRequest(
        via="label",
        ref=f"label:{event.delivery_id}",
        reaction_url="/repos/{owner}/{repo}/issues/{number}/reactions",
        reaction_vars={"number": number},
    )
    if await allowed(
        gh, ctx, repo=repo, number=number, login=login, name="fix", ref=request.ref, via="label"
    ):
        await start_fix(gh, ctx, data, command=screen.command, login=login, request=request)
