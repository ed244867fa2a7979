"""After a pull request is open: approvals, checks, merges, reverts, pause and resume.

Handlers decide and enqueue: a ``merge`` job for every event that might let one of
Patchwarden's pull requests merge (a review approval, ``@patchwarden ship it``, a check
or status completing on its head, a merge by a person), and a ``revert`` job for
``@patchwarden revert`` on a merged one. The merge job re-reads everything from GitHub,
so an event arriving twice, late or out of order changes nothing.
"""

from __future__ import annotations

import functools
import time
from dataclasses import replace

from gidgethub import sansio
from gidgethub.routing import Router

from app.contract.kinds import DashboardJob, MergeJob, MergeReason, RevertJob
from app.github import GitHubClient
from app.github.repos import role_for
from app.policy.config import FIXER_CATEGORIES, Policy, load_policy
from app.sessions.policyfile import default_policy_text
from app.store import TrustEvent
from app.webhooks import triggers
from app.webhooks.access import answer_once, unchecked
from app.webhooks.context import HandlerContext
from app.webhooks.payloads import (
    CheckRunEvent,
    CheckSuiteEvent,
    Envelope,
    IssueCommentEvent,
    PullRequestEvent,
    PullRequestReviewEvent,
    StatusEvent,
    typed,
)

router = Router()


@functools.cache
def default_policy() -> Policy:
    return load_policy(default_policy_text())


async def _enqueue_merge(
    data: Envelope,
    ctx: HandlerContext,
    *,
    repo: str,
    pr: int,
    reason: MergeReason,
    actor: str | None,
) -> None:
    merge = MergeJob(repo=repo, pr=pr, reason=reason, actor=actor, ref=ctx.delivery_id)
    await ctx.enqueue(merge, installation_id=_installation(data), actor=actor)


def _installation(data: Envelope) -> int | None:
    return data.installation.id if data.installation else None


async def _ours(ctx: HandlerContext, repo: str, pr: int) -> bool:
    return bool(await ctx.store.find_outcomes(repo=repo, pr_number=pr))


async def _reply(
    gh: GitHubClient, ctx: HandlerContext, data: IssueCommentEvent, text: str, *, key: str
) -> None:
    repo, number = data.repository.full_name, data.issue.number
    await answer_once(gh, ctx, repo=repo, number=number, kind="reply", key=key, body=text)


@router.register("issue_comment", action="created")
async def on_command(event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext) -> None:
    screen = triggers.screen_lifecycle_comment(event.data, bot_name=ctx.bot_name)
    data = typed(IssueCommentEvent, event.data)
    repo = data.repository.full_name
    login = data.sender.login if data.sender else None
    if screen.command is None or not login:
        return  # the fix handler audits comments that are not commands
    name = screen.command.name
    number = data.issue.number
    key = f"comment:{data.comment.id}"
    role, error = await role_for(gh, repo=repo, login=login)
    decide = (
        triggers.decide_maintainer
        if name in triggers.MAINTAINER_COMMANDS
        else triggers.decide_permission
    )
    decision = decide(role, error=error)
    await ctx.audit(
        decision.audit_action,
        actor=login,
        repo=repo,
        reason=f"{name}: {decision.reason}",
        details={"issue": number, "command": name},
    )
    if decision.verdict == "refuse":
        text = f"@{login}, `{name}` needs more access ({decision.reason})."
        await _reply(gh, ctx, data, text, key=key)
    elif decision.verdict == "error":
        # Fail closed, and say so: silence would read as "done".
        text = unchecked(login, decision.reason, so=f"`{name}` did nothing")
        await _reply(gh, ctx, data, text, key=key)
    if decision.verdict != "trigger":
        return
    if name in ("pause", "resume"):
        changed = await ctx.store.set_pause(
            repo, paused=name == "pause", actor=login, reason=f"comment on #{number}"
        )
        text = (
            f"Paused on this repository by @{login}: no new jobs start, and jobs already "
            f"running finish without merging. `@{ctx.bot_name} resume` starts it again."
            if name == "pause"
            else f"Resumed by @{login}: new jobs start again."
        )
        if not changed:
            text = f"Already {'paused' if name == 'pause' else 'running'}; nothing changed."
        await _reply(gh, ctx, data, text, key=key)
        if changed:  # the dashboard says paused or not: now, not after the next job
            now = DashboardJob(repo=repo, window=int(time.time()), delivery=ctx.delivery_id)
            await ctx.enqueue(now, installation_id=_installation(data), actor=login)
        return
    if name == "trust":
        await _trust(gh, ctx, data, screen.command.instructions, login=login, key=key)
        return
    if name == "ignore":
        await _ignore(gh, ctx, data, login=login, key=key)
        return
    if not await _ours(ctx, repo, number):
        await ctx.audit(
            "trigger.ignored", actor=login, repo=repo, reason=f"#{number} is not Patchwarden's"
        )
        return
    if name == "ship":
        await _enqueue_merge(data, ctx, repo=repo, pr=number, reason="ship-it", actor=login)
        return
    paused = await ctx.paused(repo)
    if paused:
        await _reply(gh, ctx, data, f"Not reverting: {paused}.", key=key)
        return
    revert = RevertJob(repo=repo, pr=number, trigger="request", requested_by=login)
    await ctx.enqueue(revert, installation_id=_installation(data), actor=login)


async def _trust(
    gh: GitHubClient,
    ctx: HandlerContext,
    data: IssueCommentEvent,
    instructions: str,
    *,
    login: str,
    key: str,
) -> None:
    """``trust reset [kind]``: forget what every kind (or one) has earned here."""
    repo = data.repository.full_name
    kind = triggers.parse_trust(instructions)
    if kind is None:
        text = (
            f"@{login}, I did not understand that. `@{ctx.bot_name} trust reset` forgets what "
            f"every kind of change has earned here; `@{ctx.bot_name} trust reset lint` forgets "
            "one kind's (docs/policy.md#learning)."
        )
        await _reply(gh, ctx, data, text, key=key)
        return
    known = await _known_kinds(ctx, repo)
    if kind != "*" and kind not in known:
        text = (
            f"@{login}, `{kind}` is no kind of change Patchwarden knows here, so nothing was "
            f"reset. The kinds: {', '.join(f'`{k}`' for k in sorted(known))}."
        )
        await _reply(gh, ctx, data, text, key=key)
        return
    event = TrustEvent(repo=repo, what="reset", category=kind, at=time.time(), actor=login)
    await _record_once(ctx, f"trust:{key}", event)
    what = "every kind of change" if kind == "*" else f"`{kind}` changes"
    text = (
        f"Trust reset by @{login}: {what} start again from the repository's `autonomy`. "
        "What was earned and the setbacks alike are forgotten; only what happens from now "
        "on counts (`learn` in `.github/patchwarden.yml`)."
    )
    await _reply(gh, ctx, data, text, key=key)


@router.register("pull_request_review", action="submitted")
async def on_review(event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext) -> None:
    data = typed(PullRequestReviewEvent, event.data)
    repo = data.repository.full_name
    pr = data.pull_request.number
    login = data.review.user.login if data.review.user else None
    if data.review.state.lower() != "approved":
        await ctx.audit(
            "trigger.ignored", actor=login, repo=repo, reason="review is not an approval"
        )
        return
    if not await _ours(ctx, repo, pr):
        await ctx.audit("trigger.ignored", actor=login, repo=repo, reason=_not_ours(pr))
        return
    await _enqueue_merge(data, ctx, repo=repo, pr=pr, reason="approval", actor=login)


@router.register("pull_request", action="closed")
async def on_closed(event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext) -> None:
    data = typed(PullRequestEvent, event.data)
    repo = data.repository.full_name
    pr = data.pull_request.number
    actor = data.sender.login if data.sender else None
    merged = bool(data.pull_request.merged)
    if not merged:
        await _closed_unmerged(ctx, data, repo=repo, pr=pr, actor=actor)
        return
    if not await _ours(ctx, repo, pr):
        if not await _reverts_ours(ctx, data, repo=repo, pr=pr, actor=actor):
            await ctx.audit("trigger.ignored", actor=actor, repo=repo, reason=_not_ours(pr))
        return
    await _enqueue_merge(data, ctx, repo=repo, pr=pr, reason="merged", actor=actor)


async def _ignore(
    gh: GitHubClient, ctx: HandlerContext, data: IssueCommentEvent, *, login: str, key: str
) -> None:
    """``ignore`` on an issue of the watch: that finding is not raised again."""
    repo, number = data.repository.full_name, data.issue.number
    found = [
        f
        for f in await ctx.store.watch_findings(repo)
        if f.issue_number == number and not f.key.startswith("report:")  # a weekly report
    ]
    if not found:
        text = f"@{login}, this is not an issue of Patchwarden's watch: nothing to ignore."
        await _reply(gh, ctx, data, text, key=key)
        return
    for finding in found:
        if finding.state != "ignored":
            await ctx.store.save_finding(
                replace(finding, state="ignored", last_seen=time.time()), audit="watch.ignored"
            )
    text = (
        f"Ignored by @{login}: the watch will not raise this again (the issue stays as it "
        "is; close it when you like). The thresholds are `watch` in "
        "`.github/patchwarden.yml`."
    )
    await _reply(gh, ctx, data, text, key=key)


async def _known_kinds(ctx: HandlerContext, repo: str) -> set[str]:
    """Kinds of change a reset may name: the fixers', the default policy's categories
    and every kind recorded in the repository (its own categories)."""
    recorded = {o.category for o in await ctx.store.find_outcomes(repo=repo) if o.category}
    return {*FIXER_CATEGORIES, *default_policy().categories, *recorded}


async def _reverts_ours(
    ctx: HandlerContext, data: PullRequestEvent, *, repo: str, pr: int, actor: str | None
) -> bool:
    """A person's pull request made with GitHub's *Revert* button ("Reverts owner/name#N"),
    merged: when #N is Patchwarden's merged change, that counts against its kind as a
    revert Patchwarden opened would. True when it was one."""
    reverted = triggers.reverted_by_button(data.pull_request.body, repo=repo)
    if reverted is None:
        return False
    ours = await ctx.store.find_outcomes(repo=repo, pr_number=reverted)
    merged = [o for o in ours if o.merged_at is not None and o.category and not o.is_revert]
    if not merged:
        return False
    event = TrustEvent(
        repo=repo,
        what="reverted",
        category=str(merged[-1].category),
        at=time.time(),
        actor=actor,
        pr_number=reverted,
    )
    await _record_once(ctx, f"reverted:{repo}#{reverted}", event)
    return True


async def _record_once(ctx: HandlerContext, key: str, event: TrustEvent) -> None:
    """Record ``event`` once for ``key`` (a replayed delivery records nothing more); a
    failure lets a retry record it."""
    if not await ctx.store.claim_once(key):
        return
    try:
        await ctx.store.add_trust_event(event)
    except BaseException:
        await ctx.store.release_once(key)
        raise


async def _closed_unmerged(
    ctx: HandlerContext, data: PullRequestEvent, *, repo: str, pr: int, actor: str | None
) -> None:
    """A person closing one of Patchwarden's pull requests unmerged rejects it: that
    counts against its kind of change (earned autonomy). Patchwarden closing its own
    does not."""
    ours = await ctx.store.find_outcomes(repo=repo, pr_number=pr)
    latest = ours[-1] if ours else None
    category = latest.category if latest is not None and not latest.is_revert else None
    person = actor is not None and not triggers.is_bot(
        data.sender.model_dump() if data.sender else None
    )
    why = None
    if latest is None or category is None:
        why = f"#{pr} closed without a merge; {_not_ours(pr)}"
    elif not person:
        why = f"#{pr} closed without a merge by a bot: no rejection"
    elif latest.status != "published":
        # Patchwarden said the patch no longer stands (its update failed, or found
        # nothing left to change): closing it rejects nothing
        why = f"#{pr} closed without a merge after its update ended {latest.status}"
    if why is not None or category is None:
        await ctx.audit("trigger.ignored", actor=actor, repo=repo, reason=why)
        return
    event = TrustEvent(
        repo=repo, what="rejected", category=category, at=time.time(), actor=actor, pr_number=pr
    )
    # closed, reopened, closed again: one rejection
    await _record_once(ctx, f"rejected:{repo}#{pr}", event)


@router.register("check_run", action="completed")
@router.register("check_suite", action="completed")
@router.register("status")
async def on_check(event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext) -> None:
    data = typed(CHECK_EVENTS[event.event], event.data)
    repo = data.repository.full_name
    actor = data.sender.login if data.sender else None
    sha = _head_sha(data, bot=ctx.bot_name)
    waiting = [
        o
        for o in (
            await ctx.store.find_outcomes(repo=repo, head_sha=str(sha)) if repo and sha else []
        )
        if o.pr_number is not None and o.merged_at is None
    ]
    if not waiting:
        await ctx.audit(
            "trigger.ignored",
            actor=actor,
            repo=repo,
            reason=f"no open Patchwarden pull request waits on {event.event} at {str(sha)[:12]}",
        )
        return
    for outcome in waiting:
        assert outcome.pr_number is not None
        await _enqueue_merge(
            data, ctx, repo=outcome.repo, pr=outcome.pr_number, reason="checks", actor=None
        )


CHECK_EVENTS: dict[str, type[CheckRunEvent | CheckSuiteEvent | StatusEvent]] = {
    "check_run": CheckRunEvent,
    "check_suite": CheckSuiteEvent,
    "status": StatusEvent,
}


def _head_sha(data: CheckRunEvent | CheckSuiteEvent | StatusEvent, *, bot: str) -> str | None:
    """The commit a finished check or status is on; None for a pending status and for
    Patchwarden's own check (its conclusion is the score, not a check to wait for)."""
    if isinstance(data, StatusEvent):
        return data.sha if data.state != "pending" else None
    item = data.check_run if isinstance(data, CheckRunEvent) else data.check_suite
    own = item.app is not None and item.app.slug == bot
    return None if own else item.head_sha


def _not_ours(pr: int) -> str:
    return f"#{pr} is not a Patchwarden pull request"
