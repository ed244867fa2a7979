"""Every ``@patchwarden …`` command in a new comment, through one router.

A comment is screened once (:func:`triggers.screen_comment`: the command, parsed in one
place, and whether it works where it was written: ``triggers.COMMANDS``); its sender's
access is checked, audited and a refusal answered once (:func:`access.allowed`); then
the command's own small handler runs (``HANDLERS``). ``fix`` and ``lint`` go on to
app/webhooks/fix_requests.py, as the fix label does.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

from gidgethub import sansio
from gidgethub.routing import Router

from app.contract.kinds import DashboardJob, RevertJob
from app.fixers.registry import KNOWN
from app.github import GitHubClient
from app.policy.policy_model import Policy, load_policy
from app.sessions.policyfile import default_policy_text
from app.store import TrustEvent
from app.webhooks import triggers
from app.webhooks.access import allowed, answer_once
from app.webhooks.context import HandlerContext
from app.webhooks.fix_requests import FixRequest, start_fix
from app.webhooks.lifecycle import enqueue_merge, installation_of, is_ours, record_once
from app.webhooks.payloads import Envelope, IssueCommentEvent, typed

router = Router()


@dataclass(frozen=True)
class Asked:
    """A command in a comment, from someone allowed to give it."""

    data: IssueCommentEvent
    command: triggers.Command
    login: str

    @property
    def repo(self) -> str:
        return self.data.repository.full_name

    @property
    def number(self) -> int:
        return self.data.issue.number

    @property
    def key(self) -> str:
        return f"comment:{self.data.comment.id}"


Handler = Callable[[GitHubClient, HandlerContext, Asked], Awaitable[None]]


@router.register("issue_comment", action="created")
async def on_comment(
    event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext, read: Envelope
) -> None:
    screen = triggers.screen_comment(typed(IssueCommentEvent, read), bot_name=ctx.bot_name)
    data = typed(IssueCommentEvent, read)
    login = data.sender.login if data.sender else None
    if screen.command is None or not login:
        reason = screen.reason
        await ctx.audit(
            "trigger.ignored", actor=login, repo=data.repository.full_name, reason=reason
        )
        return
    asked = Asked(data, screen.command, login)
    name = asked.command.name
    if await allowed(
        gh,
        ctx,
        repo=asked.repo,
        number=asked.number,
        login=login,
        name=name,
        ref=asked.key,
        via="comment",
    ):
        await HANDLERS[name](gh, ctx, asked)


async def _reply(gh: GitHubClient, ctx: HandlerContext, asked: Asked, text: str) -> None:
    await answer_once(
        gh, ctx, repo=asked.repo, number=asked.number, kind="reply", key=asked.key, body=text
    )


async def fix(gh: GitHubClient, ctx: HandlerContext, asked: Asked) -> None:
    """``fix this`` / ``lint`` on an issue: a coding session."""
    comment_id = asked.data.comment.id
    request = FixRequest(
        via="comment",
        ref=asked.key,
        reaction_url="/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
        reaction_vars={"comment_id": comment_id},
        comment_id=comment_id,
    )
    await start_fix(gh, ctx, asked.data, command=asked.command, login=asked.login, request=request)


async def ship(gh: GitHubClient, ctx: HandlerContext, asked: Asked) -> None:
    """``ship it`` on one of Patchwarden's pull requests: a merge job decides."""
    if await _ours(ctx, asked):
        await enqueue_merge(
            asked.data, ctx, repo=asked.repo, pr=asked.number, reason="ship-it", actor=asked.login
        )


async def revert(gh: GitHubClient, ctx: HandlerContext, asked: Asked) -> None:
    """``revert`` on one of Patchwarden's merged pull requests, unless paused."""
    if not await _ours(ctx, asked):
        return
    paused = await ctx.paused(asked.repo)
    if paused:
        await _reply(gh, ctx, asked, f"Not reverting: {paused}.")
        return
    job = RevertJob(repo=asked.repo, pr=asked.number, trigger="request", requested_by=asked.login)
    await ctx.enqueue(job, installation_id=installation_of(asked.data), actor=asked.login)


async def _ours(ctx: HandlerContext, asked: Asked) -> bool:
    if await is_ours(ctx, asked.repo, asked.number):
        return True
    why = f"#{asked.number} is not Patchwarden's"
    await ctx.audit("trigger.ignored", actor=asked.login, repo=asked.repo, reason=why)
    return False


async def pause(gh: GitHubClient, ctx: HandlerContext, asked: Asked) -> None:
    """``pause`` / ``resume``: nothing new starts or merges in the repository, or it does
    again; the dashboard says so at once."""
    login, paused = asked.login, asked.command.name == "pause"
    changed = await ctx.store.repos.set_pause(
        asked.repo, paused=paused, actor=login, reason=f"comment on #{asked.number}"
    )
    text = (
        f"Paused on this repository by @{login}: no new jobs start, and jobs already "
        f"running finish without merging. `@{ctx.bot_name} resume` starts it again."
        if paused
        else f"Resumed by @{login}: new jobs start again."
    )
    if not changed:
        text = f"Already {'paused' if paused else 'running'}; nothing changed."
    await _reply(gh, ctx, asked, text)
    if changed:  # the dashboard says paused or not: now, not after the next job
        now = DashboardJob(repo=asked.repo, window=int(time.time()), delivery=ctx.delivery_id)
        await ctx.enqueue(now, installation_id=installation_of(asked.data), actor=login)


async def trust(gh: GitHubClient, ctx: HandlerContext, asked: Asked) -> None:
    """``trust reset [kind]``: forget what every kind (or one) has earned here."""
    login, bot = asked.login, ctx.bot_name
    kind = triggers.parse_trust(asked.command.instructions)
    if kind is None:
        text = (
            f"@{login}, I did not understand that. `@{bot} trust reset` forgets what "
            f"every kind of change has earned here; `@{bot} trust reset lint` forgets "
            "one kind's (docs/policy.md#learning)."
        )
        await _reply(gh, ctx, asked, text)
        return
    known = await _known_kinds(ctx, asked.repo)
    if kind != "*" and kind not in known:
        text = (
            f"@{login}, `{kind}` is no kind of change Patchwarden knows here, so nothing was "
            f"reset. The kinds: {', '.join(f'`{k}`' for k in sorted(known))}."
        )
        await _reply(gh, ctx, asked, text)
        return
    event = TrustEvent(repo=asked.repo, what="reset", category=kind, at=time.time(), actor=login)
    await record_once(ctx, f"trust:{asked.key}", event)
    what = "every kind of change" if kind == "*" else f"`{kind}` changes"
    text = (
        f"Trust reset by @{login}: {what} start again from the repository's `autonomy`. "
        "What was earned and the setbacks alike are forgotten; only what happens from now "
        "on counts (`learn` in `.github/patchwarden.yml`)."
    )
    await _reply(gh, ctx, asked, text)


@functools.cache
def default_policy(path: Path) -> Policy:
    return load_policy(default_policy_text(path), fixers=KNOWN)


async def _known_kinds(ctx: HandlerContext, repo: str) -> set[str]:
    """Kinds of change a reset may name: the fixers', the default policy's categories
    and every kind recorded in the repository (its own categories)."""
    recorded = {o.category for o in await ctx.store.learning.find_outcomes(repo=repo) if o.category}
    return {*KNOWN.kinds, *default_policy(ctx.default_policy).categories, *recorded}


async def ignore(gh: GitHubClient, ctx: HandlerContext, asked: Asked) -> None:
    """``ignore`` on an issue of the watch: that finding is not raised again."""
    found = [
        f
        for f in await ctx.store.checks.watch_findings(asked.repo)
        if f.issue_number == asked.number and not f.key.startswith("report:")  # a report
    ]
    if not found:
        text = f"@{asked.login}, this is not an issue of Patchwarden's watch: nothing to ignore."
        await _reply(gh, ctx, asked, text)
        return
    for finding in found:
        if finding.state != "ignored":
            await ctx.store.checks.save_finding(
                replace(finding, state="ignored", last_seen=time.time()), audit="watch.ignored"
            )
    text = (
        f"Ignored by @{asked.login}: the watch will not raise this again (the issue stays as "
        "it is; close it when you like). The thresholds are `watch` in "
        "`.github/patchwarden.yml`."
    )
    await _reply(gh, ctx, asked, text)


HANDLERS: dict[str, Handler] = {
    "fix": fix,
    **dict.fromkeys(triggers.FIXER_WORDS, fix),
    "ship": ship,
    "revert": revert,
    "pause": pause,
    "resume": pause,
    "trust": trust,
    "ignore": ignore,
}
