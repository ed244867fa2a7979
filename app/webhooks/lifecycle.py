"""After a pull request is open: approvals, checks, merges by hand, closing unmerged.

Handlers decide and enqueue: a ``merge`` job for every event that might let one of
Patchwarden's pull requests merge (a review approval, a check or status completing on
its head, a merge by a person; ``@patchwarden ship it`` is a command,
app/webhooks/commands.py, which uses :func:`enqueue_merge` too). The merge job re-reads
everything from GitHub, so an event arriving twice, late or out of order changes
nothing. A person's revert or rejection of Patchwarden's change counts against its kind.
"""

from __future__ import annotations

import time

from gidgethub import sansio
from gidgethub.routing import Router

from app.contract.kinds import MergeJob, MergeReason
from app.github import GitHubClient
from app.store import TrustEvent
from app.webhooks import triggers
from app.webhooks.context import HandlerContext
from app.webhooks.payloads import (
    CheckRunEvent,
    CheckSuiteEvent,
    Envelope,
    PullRequestEvent,
    PullRequestReviewEvent,
    StatusEvent,
    typed,
)

router = Router()


async def enqueue_merge(
    data: Envelope,
    ctx: HandlerContext,
    *,
    repo: str,
    pr: int,
    reason: MergeReason,
    actor: str | None,
) -> None:
    merge = MergeJob(repo=repo, pr=pr, reason=reason, actor=actor, ref=ctx.delivery_id)
    await ctx.enqueue(merge, installation_id=installation_of(data), actor=actor)


def installation_of(data: Envelope) -> int | None:
    return data.installation.id if data.installation else None


async def is_ours(ctx: HandlerContext, repo: str, pr: int) -> bool:
    return bool(await ctx.store.learning.find_outcomes(repo=repo, pr_number=pr))


@router.register("pull_request_review", action="submitted")
async def on_review(
    event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext, read: Envelope
) -> None:
    data = typed(PullRequestReviewEvent, read)
    repo = data.repository.full_name
    pr = data.pull_request.number
    login = data.review.user.login if data.review.user else None
    if data.review.state.lower() != "approved":
        await ctx.audit(
            "trigger.ignored", actor=login, repo=repo, reason="review is not an approval"
        )
        return
    if not await is_ours(ctx, repo, pr):
        await ctx.audit("trigger.ignored", actor=login, repo=repo, reason=_not_ours(pr))
        return
    await enqueue_merge(data, ctx, repo=repo, pr=pr, reason="approval", actor=login)


@router.register("pull_request", action="closed")
async def on_closed(
    event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext, read: Envelope
) -> None:
    data = typed(PullRequestEvent, read)
    repo = data.repository.full_name
    pr = data.pull_request.number
    actor = data.sender.login if data.sender else None
    merged = bool(data.pull_request.merged)
    if not merged:
        await _closed_unmerged(ctx, data, repo=repo, pr=pr, actor=actor)
        return
    if not await is_ours(ctx, repo, pr):
        if not await _reverts_ours(ctx, data, repo=repo, pr=pr, actor=actor):
            await ctx.audit("trigger.ignored", actor=actor, repo=repo, reason=_not_ours(pr))
        return
    await enqueue_merge(data, ctx, repo=repo, pr=pr, reason="merged", actor=actor)


async def _reverts_ours(
    ctx: HandlerContext, data: PullRequestEvent, *, repo: str, pr: int, actor: str | None
) -> bool:
    """A person's pull request made with GitHub's *Revert* button ("Reverts owner/name#N"),
    merged: when #N is Patchwarden's merged change, that counts against its kind as a
    revert Patchwarden opened would. True when it was one."""
    reverted = triggers.reverted_by_button(data.pull_request.body, repo=repo)
    if reverted is None:
        return False
    ours = await ctx.store.learning.find_outcomes(repo=repo, pr_number=reverted)
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
    await record_once(ctx, f"reverted:{repo}#{reverted}", event)
    return True


async def record_once(ctx: HandlerContext, key: str, event: TrustEvent) -> None:
    """Record ``event`` once for ``key`` (a replayed delivery records nothing more); a
    failure lets a retry record it."""
    if not await ctx.store.journal.claim_once(key):
        return
    try:
        await ctx.store.learning.add_trust_event(event)
    except BaseException:
        await ctx.store.journal.release_once(key)
        raise


async def _closed_unmerged(
    ctx: HandlerContext, data: PullRequestEvent, *, repo: str, pr: int, actor: str | None
) -> None:
    """A person closing one of Patchwarden's pull requests unmerged rejects it: that
    counts against its kind of change (earned autonomy). Patchwarden closing its own
    does not."""
    ours = await ctx.store.learning.find_outcomes(repo=repo, pr_number=pr)
    latest = ours[-1] if ours else None
    category = latest.category if latest is not None and not latest.is_revert else None
    person = actor is not None and not triggers.is_bot(data.sender)
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
    await record_once(ctx, f"rejected:{repo}#{pr}", event)


@router.register("check_run", action="completed")
@router.register("check_suite", action="completed")
@router.register("status")
async def on_check(
    event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext, read: Envelope
) -> None:
    data = typed(CHECK_EVENTS[event.event], read)
    repo = data.repository.full_name
    actor = data.sender.login if data.sender else None
    sha = _head_sha(data, bot=ctx.bot_name)
    waiting = [
        o
        for o in (
            await ctx.store.learning.find_outcomes(repo=repo, head_sha=str(sha))
            if repo and sha
            else []
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
        await enqueue_merge(
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
