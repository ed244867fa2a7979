"""A check run, workflow run or commit status that failed on the default branch becomes
an ``alert`` job — unless the watch knows the check as flaky there.

One job per failing commit: several failed checks on the same head share it. Every
check run and final status on the default branch is also kept for the watch
(app/policy/watch_rules.py), which a ``watch`` job runs at the end of the window.
"""

from __future__ import annotations

import time

from gidgethub import sansio
from gidgethub.routing import Router

from app.contract.kinds import AlertJob, WatchJob
from app.contract.lifecycle_rules import watched_merges
from app.github import GitHubClient
from app.policy.watch_rules import FAILED, flaky_checks
from app.store import CheckRecord
from app.webhooks import triggers
from app.webhooks.context import HandlerContext
from app.webhooks.payloads import Envelope, typed

router = Router()
FLAKY_DAYS = 14.0


@router.register("check_run", action="completed")
@router.register("workflow_run", action="completed")
@router.register("status")
async def on_ci_completed(
    event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext, read: Envelope
) -> None:
    data = typed(Envelope, read)
    repo = data.repository.full_name if data.repository else None
    actor = data.sender.login if data.sender else None
    installation = data.installation.id if data.installation else None
    done = triggers.screen_check_done(read, bot_name=ctx.bot_name)
    if not isinstance(done, str):
        await _keep(ctx, done, installation=installation)
    failure = triggers.screen_ci_failure(read, bot_name=ctx.bot_name)
    if isinstance(failure, str):
        await ctx.audit("trigger.ignored", actor=actor, repo=repo, reason=failure)
        return
    flaky = await _only_flaky(ctx, failure, check_run=event.event == "check_run")
    if flaky:
        await ctx.audit(
            "trigger.ignored",
            actor=actor,
            repo=failure.repo,
            reason=f"{flaky} flaky here: each failed and passed on one commit lately (the "
            f"watch), and nothing else failed at {failure.sha[:12]}; a flaky check is not a "
            "bug to fix",
            details={"via": event.event, "sha": failure.sha},
        )
        return
    await ctx.audit(
        "trigger.accepted",
        actor=actor,
        repo=failure.repo,
        reason=f"{failure.name} {failure.conclusion} on {failure.branch} at {failure.sha[:12]}",
        details={"via": event.event, "sha": failure.sha},
    )
    alert = AlertJob(
        repo=failure.repo,
        source=event.event,
        fingerprint=f"ci:{failure.sha}",
        sha=failure.sha,
        branch=failure.branch,
        name=failure.name,
        conclusion=failure.conclusion,
        url=failure.url,
    )
    await ctx.enqueue(alert, installation_id=installation, actor=actor)


async def _keep(ctx: HandlerContext, done: CheckRecord, *, installation: int | None) -> None:
    """Keep the check for the watch, and run the watch at the end of the window."""
    if not await ctx.store.checks.record_check(done):
        return  # a redelivery
    window = int(time.time() // ctx.batch_seconds)
    watch = WatchJob(repo=done.repo, window=window)
    await ctx.enqueue(
        watch,
        installation_id=installation,
        actor=None,
        run_after=(window + 1) * ctx.batch_seconds,
    )


async def _only_flaky(
    ctx: HandlerContext, failure: triggers.CiFailure, *, check_run: bool
) -> str | None:
    """The flaky checks (``"unit is"``, ``"unit and e2e are"``) when every check that
    failed on the failing commit is flaky in the last FLAKY_DAYS (the default policy's
    ``watch.flaky_days``: a handler reads no repository file); None otherwise, and
    always while one of Patchwarden's merges is in its canary window (a flaky check may
    still be the one its merge broke: the canary decides). A workflow run's failure is
    judged by the failed check runs of its jobs on that commit."""
    now = time.time()
    records = await ctx.store.checks.check_history(failure.repo, since=now - FLAKY_DAYS * 86400)
    failed = {r.check for r in records if r.sha == failure.sha and r.conclusion in FAILED}
    if check_run:
        failed.add(failure.name)
    if not failed:
        return None
    flaky = flaky_checks(records, days=FLAKY_DAYS, now=now)
    if not failed <= set(flaky):
        return None
    if watched_merges(await ctx.store.learning.find_outcomes(repo=failure.repo), now=now):
        return None
    names = sorted(failed)
    return " and ".join(names) + (" is" if len(names) == 1 else " are")
