"""``alert``: a check failing on the default branch, or a monitoring alert, with the canary.

An alert runs the culprit finder (or the llm fixer where the policy lets it). When
Patchwarden merged something the failing commit contains within the policy's window
(the *canary*), that merge is a suspect, not the culprit: only when bisect blames it is
its revert opened (a ``revert`` job, at most once per merge, never of a revert). When a
person's commit is to blame, its revert is opened as a pull request that waits for a
person, and Patchwarden's merge is left alone.
"""

from __future__ import annotations

import time
from typing import Any

from app.contract.kinds import AlertJob, RevertJob
from app.contract.lifecycle_rules import watched_merges
from app.fixers.choose import make_fixer
from app.jobs.context import JobContext, Running
from app.jobs.report import Silent
from app.jobs.to_pull import PullOptions, session_to_pull
from app.policy.score import Trigger
from app.sessions.result import SessionResult
from app.sessions.task import Document, Place, Task
from app.store import Job, Outcome


async def alert_job(ctx: JobContext, job: Job) -> dict[str, Any]:
    run = Running.start(ctx, job, AlertJob)
    alert = run.kind
    trigger = Trigger("alert" if alert.monitoring else "ci")
    outcome = await run.outcome(kind="alert", trigger=trigger.kind)
    refused = await run.refused_if_paused(outcome, Silent(), "Not started")
    if refused:
        return refused
    # Patchwarden's own merges the failing commit contains, within their canary
    # window: suspects, not culprits. The culprit finder decides (below).
    watching = await _watching(run, alert.sha) if alert.sha else []
    task = alert_task(alert)
    where = f"{alert.name or 'a check'} failed on {str(alert.sha)[:12]}"

    async def blame(result: SessionResult) -> dict[str, Any] | None:
        return await _canary(run, result, watching, where)

    return await session_to_pull(
        run,
        outcome,
        task=task,
        fixer=make_fixer("auto", ctx.settings, ledger=ctx.store.repos),
        report=Silent(),
        options=PullOptions(trigger=trigger, base=alert.sha, blame=blame if watching else None),
    )


def alert_task(alert: AlertJob) -> Task:
    """The session's task for an alert: its text is the sender's (untrusted data); a
    failing check's name and a stack trace's frames say where to look."""
    documents = []
    if alert.body:
        documents.append(Document(f"{alert.source} alert", alert.body))
    name = alert.name or "a check"
    return Task(
        title=(alert.title or f"{name} fails on {alert.branch or 'the default branch'}")[:200],
        kind="alert",
        documents=tuple(documents),
        check=alert.name,
        monitoring=alert.monitoring,
        places=tuple(Place(f.path, f.line, f.function) for f in alert.frames),
    )


async def _watching(run: Running[AlertJob], sha: str) -> list[Outcome]:
    """Patchwarden's merges within their window that ``sha`` contains, newest first."""
    outcomes = await run.ctx.store.learning.find_outcomes(repo=run.repo)
    watched = watched_merges(outcomes, now=time.time())
    if not watched:
        return []
    remote, _ = await run.remote()
    cache = run.ctx.runner.cache
    return [m for m in watched if await cache.contains(remote, sha, str(m.merge_sha))]


async def _canary(
    run: Running[AlertJob], result: SessionResult, watching: list[Outcome], where: str
) -> dict[str, Any] | None:
    """After the culprit finder: when it blamed one of Patchwarden's watched merges,
    the revert of that merge (a ``revert`` job, at most one per merge, never of a
    revert); None when a person's commit is to blame (its revert is published as
    any alert's, waiting for a person) — Patchwarden's merge is left alone."""
    culprit = result.fix.culprit if result.fix is not None else None
    merged = next((m for m in watching if culprit and m.merge_sha == culprit.sha), None)
    if merged is None:
        if culprit is not None:
            names = ", ".join(f"#{m.pr_number}" for m in watching)
            await run.audit(
                "canary.cleared", reason=f"{where}; bisect blamed {culprit.sha[:12]}, not {names}"
            )
        return None
    if merged.is_revert:
        await run.audit(
            "canary.ignored",
            reason=f"{where}; #{merged.pr_number} is a revert: a revert is never reverted",
        )
        return {"status": "ignored", "reason": "never revert a revert"}
    # One revert per merge: the revert job's key is the pull request's, for the
    # canary and `@patchwarden revert` alike, so a second one is never enqueued.
    revert = RevertJob(
        repo=run.repo,
        pr=int(merged.pr_number or 0),
        trigger="canary",
        why=f"{where}; bisect blamed its merge",
        evidence=culprit.evidence if culprit is not None else "",
    )
    if not await run.enqueue(revert):
        await run.audit(
            "canary.ignored", reason=f"{where}; #{merged.pr_number} is already being reverted"
        )
        return {"status": "ignored", "reason": "already reverted"}
    await run.audit(
        "canary.tripped",
        reason=f"{where}; bisect blamed the merge of #{merged.pr_number}",
        pr=merged.pr_number,
    )
    return {"status": "canary", "pr": merged.pr_number}
