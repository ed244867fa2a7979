"""Checking a sender's access, and answering a request once.

The handlers write to GitHub only through :class:`~app.publish.github.Publisher`: its
marker comments (here, posted once) and reactions."""

from __future__ import annotations

import logging

import aiohttp
import gidgethub

from app.github import GitHubClient
from app.github.repos import role_for
from app.publish.github import Publisher, marker
from app.webhooks import triggers
from app.webhooks.context import HandlerContext

log = logging.getLogger(__name__)


async def check_write_access(gh: GitHubClient, *, repo: str, login: str) -> triggers.Decision:
    """Ask GitHub for the user's role on the repository; fail closed on any error."""
    role, error = await role_for(gh, repo=repo, login=login)
    return triggers.decide_permission(role, error=error)


def unchecked(login: str, why: str, *, so: str) -> str:
    """The answer when GitHub could not say what ``login`` may do: the request failed
    closed (``so``: what did not happen), and silence would read as "done"."""
    return (
        f"@{login}, I could not check your access to this repository just now ({why}), "
        f"so {so}. Please ask again in a few minutes."
    )


async def answer_once(
    gh: GitHubClient,
    ctx: HandlerContext,
    *,
    repo: str,
    number: int,
    kind: str,
    key: str,
    body: str,
) -> None:
    """Post ``body`` on issue or PR ``number`` once for ``key`` (say, ``comment:123``).

    Redeliveries of one request arrive as separate jobs that event workers run at the
    same time, in this process or another: a claim in the store lets one of them
    answer. The marker makes a retried job find its own earlier answer instead of
    posting twice; a failed post gives the claim back so the retry can answer.
    """
    mark = f"{kind} {key}"
    claim = f"{repo}#{number}:{marker(mark)}"
    if not await ctx.store.claim_once(claim):
        return
    try:
        await Publisher(gh, repo, bot_login=ctx.bot_login).post_once(number, mark, body)
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) in (404, 410):  # the issue is gone: nobody to answer
            log.warning("could not answer on %s#%s: %s", repo, number, exc)
            await ctx.audit("answer.skipped", repo=repo, reason=f"#{number} is gone: {exc}")
            return
        await ctx.store.release_once(claim)
        raise
    except BaseException:
        await ctx.store.release_once(claim)
        raise


async def answer_refusal(
    gh: GitHubClient,
    ctx: HandlerContext,
    *,
    repo: str,
    issue_number: int,
    login: str,
    decision: triggers.Decision,
    key: str,
) -> None:
    """Say once, politely, why nothing happens and who can make it happen."""
    body = (
        f"@{login}, thanks for asking. I can only start a fix when the request comes "
        f"from someone with write access to this repository ({decision.reason}). A "
        f"maintainer can comment `@{ctx.bot_name} fix this` on this issue or add the "
        f"`{triggers.FIX_LABEL}` label."
    )
    await answer_once(gh, ctx, repo=repo, number=issue_number, kind="refused", key=key, body=body)


async def react(
    gh: GitHubClient, ctx: HandlerContext, url: str, url_vars: dict[str, str | int], *, repo: str
) -> None:
    """Add 👀 so the requester sees they were heard. Best effort: the job is queued already,
    so a failed reaction (comment deleted, GitHub hiccup) is audited, not retried."""
    try:
        await Publisher(gh, repo, bot_login=ctx.bot_login).react(url, url_vars, "eyes")
    except (gidgethub.HTTPException, aiohttp.ClientError, TimeoutError) as exc:
        log.warning("could not react on %s: %s", repo, exc)
        await ctx.audit("reaction.failed", repo=repo, reason=f"{type(exc).__name__}: {exc}")
