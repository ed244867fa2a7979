"""A request for a fix, however it arrived (a comment or a label): one flow.

screen (pure) → check the sender's role → audit → refuse once, or enqueue the
``fix`` job and react 👀. ``ref`` names the request uniquely (``comment:123`` or
``label:<delivery id>``): it keys both the job and the refusal marker, so a
redelivered or retried event starts nothing twice and answers nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gidgethub import sansio

from app.contract.kinds import FixJob
from app.github import GitHubClient
from app.webhooks import triggers
from app.webhooks.access import (
    answer_once,
    answer_refusal,
    check_write_access,
    react,
    unchecked,
)
from app.webhooks.context import HandlerContext
from app.webhooks.payloads import IssueCommentEvent, IssuesEvent, typed


@dataclass(frozen=True)
class FixRequest:
    via: Literal["comment", "label"]
    ref: str
    reaction_url: str  # where 👀 goes: the comment, or the issue for a label
    reaction_vars: dict[str, str | int] = field(default_factory=dict)
    comment_id: int | None = None


async def request_fix(
    event: sansio.Event,
    gh: GitHubClient,
    ctx: HandlerContext,
    *,
    screen: triggers.Screen,
    request: FixRequest,
) -> None:
    data: IssueCommentEvent | IssuesEvent = (
        typed(IssueCommentEvent, event.data)
        if request.via == "comment"
        else typed(IssuesEvent, event.data)
    )
    repo = data.repository.full_name
    login = data.sender.login if data.sender else None
    if screen.verdict == "ignore" or screen.command is None or not login:
        await ctx.audit("trigger.ignored", actor=login, repo=repo, reason=screen.reason)
        return
    number = data.issue.number
    decision = await check_write_access(gh, repo=repo, login=login)
    # A redelivered or retried request is decided again, but audited once.
    if await ctx.store.claim_once(f"audit:{repo}:{request.ref}:{decision.verdict}"):
        await ctx.audit(
            decision.audit_action,
            actor=login,
            repo=repo,
            reason=decision.reason,
            details={"issue": number, "via": request.via, "ref": request.ref},
        )
    if decision.verdict == "refuse":
        await answer_refusal(
            gh,
            ctx,
            repo=repo,
            issue_number=number,
            login=login,
            decision=decision,
            key=request.ref,
        )
    elif decision.verdict == "error":
        await answer_once(
            gh,
            ctx,
            repo=repo,
            number=number,
            kind="unchecked",
            key=request.ref,
            body=unchecked(login, decision.reason, so="nothing was started"),
        )
    if decision.verdict != "trigger":
        return
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
        instructions=screen.command.instructions,
        mode="lint" if screen.command.name == "lint" else "fix",
    )
    installation = data.installation.id if data.installation else None
    await ctx.enqueue(fix, installation_id=installation, actor=login)
    await react(gh, ctx, request.reaction_url, dict(request.reaction_vars), repo=repo)
