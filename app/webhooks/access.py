"""Checking a sender's access, and answering a request once.

Every command, however it came (a comment or the fix label), passes :func:`allowed`: the
sender's role asked of GitHub, the decision audited once per request, and a refusal or a
failed check answered once, in the words written here. The handlers write to GitHub
only through :class:`~app.publish.github.Publisher`: its marker comments (here, posted
once) and reactions."""

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


async def allowed(
    gh: GitHubClient,
    ctx: HandlerContext,
    *,
    repo: str,
    number: int,
    login: str,
    name: str,
    ref: str,
    via: str,
) -> bool:
    """Whether ``login`` may give command ``name`` on ``repo`` (triggers.COMMANDS).

    GitHub is asked for their role; a failed lookup fails closed. ``ref`` names the
    request (``comment:123``, ``label:<delivery>``): a redelivered or retried one is
    decided again, audited once and answered once."""
    role, error = await role_for(gh, repo=repo, login=login)
    decision = triggers.decide(name, role, error=error)
    if await ctx.store.journal.claim_once(f"audit:{repo}:{ref}:{decision.verdict}"):
        await ctx.audit(
            decision.audit_action,
            actor=login,
            repo=repo,
            reason=f"{name}: {decision.reason}",
            details={"issue": number, "command": name, "via": via, "ref": ref},
        )
    if decision.verdict == "refuse":
        body = refusal(login, name, decision.reason, bot=ctx.bot_name)
        await answer_once(gh, ctx, repo=repo, number=number, kind="refused", key=ref, body=body)
    elif decision.verdict == "error":
        body = unchecked(login, decision.reason, so=f"`{name}` did nothing")
        await answer_once(gh, ctx, repo=repo, number=number, kind="unchecked", key=ref, body=body)
    return decision.verdict == "trigger"


def refusal(login: str, name: str, why: str, *, bot: str) -> str:
    """The answer when ``login`` may not give command ``name``: why, politely, and who
    can."""
    can = "admin or maintain" if triggers.COMMANDS[name].who == "maintain" else "write"
    ask = triggers.COMMANDS[name].ask.replace("{bot}", bot)
    return (
        f"@{login}, thanks for asking. `{name}` needs more access to this repository "
        f"({why}): someone with {can} access can {ask}."
    )


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
    if not await ctx.store.journal.claim_once(claim):
        return
    try:
        await Publisher(gh, repo, bot_login=ctx.bot_login).post_once(number, mark, body)
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) in (404, 410):  # the issue is gone: nobody to answer
            log.warning("could not answer on %s#%s: %s", repo, number, exc)
            await ctx.audit("answer.skipped", repo=repo, reason=f"#{number} is gone: {exc}")
            return
        await ctx.store.journal.release_once(claim)
        raise
    except BaseException:
        await ctx.store.journal.release_once(claim)
        raise


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
