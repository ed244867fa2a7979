"""``@patchwarden fix this`` (or ``/fix``) in a new comment on an issue."""

from __future__ import annotations

from gidgethub import sansio
from gidgethub.routing import Router

from app.github import GitHubClient
from app.webhooks import triggers
from app.webhooks.context import HandlerContext
from app.webhooks.fix_requests import FixRequest, request_fix
from app.webhooks.payloads import IssueCommentEvent, typed

router = Router()


@router.register("issue_comment", action="created")
async def on_comment_created(event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext) -> None:
    comment_id = typed(IssueCommentEvent, event.data).comment.id
    request = FixRequest(
        via="comment",
        ref=f"comment:{comment_id}",
        reaction_url="/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
        reaction_vars={"comment_id": comment_id},
        comment_id=comment_id,
    )
    screen = triggers.screen_issue_comment(event.data, bot_name=ctx.bot_name)
    await request_fix(event, gh, ctx, screen=screen, request=request)
