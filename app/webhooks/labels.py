"""The ``patchwarden:fix`` label added to an issue by someone with write access."""

from __future__ import annotations

from gidgethub import sansio
from gidgethub.routing import Router

from app.github import GitHubClient
from app.webhooks import triggers
from app.webhooks.context import HandlerContext
from app.webhooks.fix_requests import FixRequest, request_fix
from app.webhooks.payloads import IssuesEvent, typed

router = Router()


@router.register("issues", action="labeled")
async def on_issue_labeled(event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext) -> None:
    request = FixRequest(
        via="label",
        ref=f"label:{event.delivery_id}",
        reaction_url="/repos/{owner}/{repo}/issues/{number}/reactions",
        reaction_vars={"number": typed(IssuesEvent, event.data).issue.number},
    )
    screen = triggers.screen_issue_label(event.data)
    await request_fix(event, gh, ctx, screen=screen, request=request)
