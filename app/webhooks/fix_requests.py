"""A request for a fix, however it arrived (``@patchwarden fix this``/``lint`` in a
comment, or the fix label), once its sender is allowed (app/webhooks/access.py): one
flow. Paused: say so once. Else enqueue the ``fix`` job and react 👀.

``ref`` names the request uniquely (``comment:123`` or ``label:<delivery id>``): it keys
both the job and the answers, so a redelivered or retried event starts nothing twice
and answers nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from app.contract.kinds import FixJob
from app.github import GitHubClient
from app.webhooks import triggers
from app.webhooks.access import answer_once, react
from app.webhooks.context import HandlerContext
from app.webhooks.payloads import IssueCommentEvent, IssuesEvent


@dataclass(frozen=True)
class FixRequest:
    via: Literal["comment", "label"]
    ref: str
    reaction_url: str  # where 👀 goes: the comment, or the issue for a label
    reaction_vars: dict[str, str | int] = field(default_factory=dict)
    comment_id: int | None = None


async def start_fix(
    gh: GitHubClient,
    ctx: HandlerContext,
    data: IssueCommentEvent | IssuesEvent,
    *,
    command: triggers.Command,
    login: str,
    request: FixRequest,
) -> None:
    repo, number = data.repository.full_name, data.issue.number
    paused = await ctx.paused(repo)
    if paused:
        await ctx.audit("trigger.refused", actor=login, repo=repo, reason=paused)
        await answer_once(
            gh,
            ctx,
            repo=repo,
            number=number,
            kind="refused",
            key=request.ref,
            body=f"@{login}, not started: {paused}. Ask again once it is resumed.",
        )
        return
    fix = FixJob(
        repo=repo,
        issue_number=number,
        ref=request.ref,
        issue_title=data.issue.title,
        trigger=request.via,
        comment_id=request.comment_id,
        requested_by=login,
        instructions=command.instructions,
        mode=triggers.FIXER_WORDS.get(command.name, "fix"),
    )
    installation = data.installation.id if data.installation else None
    await ctx.enqueue(fix, installation_id=installation, actor=login)
    await react(gh, ctx, request.reaction_url, dict(request.reaction_vars), repo=repo)
