"""Session → judgement → publish: what every session job (fix, alert, revert, update)
does once it knows its task and its fixer.

The session runs in the sandbox; the policy from the base branch scores its result; a
rejected change is explained where the request came from, anything else is pushed and
opened (or updated) as a pull request with its Check Run, labels and review request,
and a ``merge`` job is queued to see whether it may merge. The outcome is recorded at
every step, and the decision audited.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from app.fixers.choose import budget_from
from app.fixers.interface import Fixer
from app.jobs import pull_request
from app.jobs.branch import push_patch
from app.jobs.context import Running
from app.jobs.report import Report, Silent, Ticker
from app.policy.policy_model import Policy
from app.policy.score import Learned, Score, Trigger, score_session
from app.publish.body import inline, verdict
from app.sessions.result import SessionResult
from app.sessions.task import SessionSpec, Task
from app.sessions.workspace import branch_name
from app.store import Outcome, TrustStanding

Blame = Callable[[SessionResult], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True)
class PullOptions:
    """What differs between the job kinds on the way from a session to a pull request."""

    trigger: Trigger
    closes: int | None = None  # fix: the issue a mergeable fix closes
    base: str | None = None  # alert: the failing commit the session starts from
    revert_of: Outcome | None = None  # revert: the merge it undoes
    branch: str | None = None  # update, or a second request: the open PR's branch
    links: tuple[str, ...] | None = None  # update: the lines the first publish wrote
    blame: Blame | None = None  # alert: hears the result first; may end the job (canary)


async def session_to_pull(
    run: Running[Any],
    outcome: Outcome,
    *,
    task: Task,
    fixer: Fixer,
    report: Report,
    options: PullOptions,
) -> dict[str, Any]:
    """Session → score → reject (the issue says why) or publish, recording the outcome."""
    remote, repository = await run.remote()
    spec = SessionSpec(
        remote=remote,
        task=task,
        job_id=run.job.id,
        base=options.base,
        installation_id=run.job.installation_id,
        budget=budget_from(run.ctx.settings),
        branch=options.branch,
        author=await run.author(),
    )
    done = await _done_before(run, spec, fixer)
    if done is not None:
        return done
    result = await _session(run, spec, fixer, report)
    outcome = _spent(outcome, result)
    if result.status != "patched" or result.head_sha is None or result.policy is None:
        return await ended(run, outcome, report, status=result.status, why=_why_not(result))
    if options.blame is not None:
        done = await options.blame(result)
        if done is not None:
            await run.ctx.store.learning.save_outcome(replace(outcome, status=str(done["status"])))
            return done
    trigger = await _whose(run, result, options.trigger)
    if trigger is None:
        why = "the culprit is Patchwarden's own revert, and a revert is never reverted"
        return await ended(run, outcome, Silent(), status="ignored", why=why)
    score, outcome = await _judged(run, spec, result, result.policy, trigger, outcome)
    if score.decision == "reject":
        return await _rejected(run, outcome, report, score)
    # The branch first: with commit_signing: api GitHub makes (and signs) a new commit,
    # and that is the head the body, the check run and the merge guard name.
    branch, head = await push_patch(run, spec.remote, result, result.policy.commit_signing)
    if (branch, head) != (result.branch, result.head_sha):
        result = result.model_copy(update={"head_sha": head, "branch": branch})
        await run.ctx.save_result(result)  # the merge job renders the final body from it
    outcome = replace(outcome, head_sha=head, branch=branch)
    base = str(repository.get("default_branch") or "main")
    draft = pull_request.draft(
        run.ctx.bot,
        result,
        score,
        task=task,
        closes=options.closes,
        revert_of=options.revert_of,
        links=options.links,
        base=base,
    )
    return await pull_request.publish(run, outcome, report, result, score, draft)


async def _done_before(run: Running[Any], spec: SessionSpec, fixer: Fixer) -> dict[str, Any] | None:
    """A retried job (a worker restarted mid-job) whose pull request is already merged
    or closed is done: running it again must not open a second one."""
    earlier = await run.pub.find_pull(spec.branch or branch_name(run.job.id, spec.task.title))
    if earlier is None or earlier.get("state") == "open":
        return None
    await fixer.aclose()
    state = "merged" if earlier.get("merged_at") else "closed"
    await run.audit("job.done_before", reason=f"#{earlier['number']} is {state}")
    return {"status": state, "pr": int(earlier["number"])}


async def _session(
    run: Running[Any], spec: SessionSpec, fixer: Fixer, report: Report
) -> SessionResult:
    """The session, its progress ticking where the request came from; its result saved
    and its phases and the rate limit left counted."""
    ctx = run.ctx
    ticker = Ticker(report, every=ctx.settings.progress_seconds)
    ticking = asyncio.create_task(ticker.run(), name=f"progress:{run.job.id}")
    try:
        result = await ctx.runner.run(spec, fixer, progress=ticker.hear)
    finally:
        ticking.cancel()
        await asyncio.gather(ticking, return_exceptions=True)
        await fixer.aclose()
    await ctx.save_result(result)
    for step in result.steps:
        ctx.metrics.phases.labels(phase=step.phase).observe(step.duration_seconds)
    remaining = getattr(getattr(run.pub.gh, "rate_limit", None), "remaining", None)
    if remaining is not None:
        ctx.metrics.rate_limit.labels(installation=str(run.job.installation_id)).set(remaining)
    return result


def _spent(outcome: Outcome, result: SessionResult) -> Outcome:
    """The outcome with what the session spent and where it left its patch."""
    usage = result.fix.usage if result.fix is not None else None
    return replace(
        outcome,
        tokens=usage.total_tokens if usage else 0,
        cost_usd=usage.cost_usd if usage else 0.0,
        branch=result.branch,
        base_sha=result.base_sha,
    )


def _why_not(result: SessionResult) -> str:
    """Why a session gave nothing to publish, and for a bad policy file what to do."""
    why = result.error or (result.fix.reason if result.fix else None) or "no change"
    if result.error_kind == "config":
        why += (
            ". Patchwarden reads the file on the base branch: `patchwarden validate` "
            "lists every problem in it at once (`patchwarden schema` gives editors its "
            "JSON Schema); ask again once it is fixed there"
        )
    return why


async def _judged(
    run: Running[Any],
    spec: SessionSpec,
    result: SessionResult,
    policy: Policy,
    trigger: Trigger,
    outcome: Outcome,
) -> tuple[Score, Outcome]:
    """The score from the base branch's policy (a revert is not held back by the
    reverts before it), the kind's standing kept, the outcome filled in, and the
    decision audited."""
    ctx = run.ctx
    history = (
        await ctx.history(run.repo, window_days=policy.learn.window_days)
        if trigger.reverts is None
        else None
    )
    score = score_session(
        result,
        policy,
        trigger=trigger,
        max_tokens=spec.budget.max_tokens,
        max_cost_usd=spec.budget.max_cost_usd,
        history=history,
    )
    if score.learned is not None:
        await _keep_standing(run, score.learned)
    outcome = replace(
        outcome,
        decision=score.decision,
        score=score.score,
        risk=score.risk,
        head_sha=result.head_sha,
        details={
            **outcome.details,
            "score": score.to_json(),
            # what the merge job checks the kind's standing against again before it
            # merges by itself (a demotion or a reset since then holds it)
            "learn": {"rules": policy.learn.model_dump(mode="json"), "autonomy": policy.autonomy},
        },
        title=spec.task.title,
        reverts=trigger.reverts,
        merge_method=policy.merge.method,
        two_person=policy.merge.two_person,
        canary_minutes=policy.merge.canary_minutes,
        category=score.kind,
    )
    await run.audit(
        "policy.decided",
        reason=verdict(score),
        score=score.score,
        decision=score.decision,
        rules=[r.reason for r in score.rules],
        kind=score.kind,
        autonomy=score.autonomy,
    )
    return score, outcome


async def ended(
    run: Running[Any], outcome: Outcome, report: Report, *, status: str, why: str
) -> dict[str, Any]:
    """No patch to publish: say why where the request came from, and record it."""
    status = "no-change" if status == "patched" else status  # patched, yet nothing to push
    await report.say(f"No pull request: {inline(why)}")
    await run.ctx.store.learning.save_outcome(replace(outcome, status=status))
    await run.audit("job.no_patch", reason=why)
    return {"status": status, "reason": why}


async def _whose(run: Running[Any], result: SessionResult, trigger: Trigger) -> Trigger | None:
    """For a revert the culprit finder chose: of Patchwarden's merge or a person's
    commit (``Trigger.reverts``); None when it is Patchwarden's own revert."""
    culprit = result.fix.culprit if result.fix is not None else None
    if culprit is None or trigger.reverts is not None:
        return trigger
    theirs = await run.ctx.store.learning.find_outcomes(repo=run.repo, merge_sha=culprit.sha)
    if any(o.is_revert for o in theirs):
        return None
    return replace(trigger, reverts="bot" if theirs else "human")


async def _rejected(
    run: Running[Any], outcome: Outcome, report: Report, score: Score
) -> dict[str, Any]:
    # Rule reasons quote paths from the patch: kept inert like the PR body's.
    reasons = "\n".join(f"- {inline(r.reason)}" for r in score.rules)
    await report.say(
        f"The patch was **rejected** by the policy (risk {score.score}/100), so no pull "
        f"request was opened:\n\n{reasons}\n\nWhat a maintainer can do: fix it by hand, "
        f"give clearer instructions with `@{run.ctx.bot} fix this …`, or "
        "change the policy in `.github/patchwarden.yml` on the default branch "
        "(docs/policy.md)."
    )
    await run.ctx.store.learning.save_outcome(replace(outcome, status="rejected"))
    return {"status": "rejected", "score": score.score}


async def _keep_standing(run: Running[Any], learned: Learned) -> None:
    """What the change's kind has earned here, as this score read it."""
    standing = TrustStanding(
        repo=run.repo,
        category=learned.kind,
        autonomy=learned.autonomy,
        state=learned.state,
        explanation=learned.explanation,
        at=time.time(),
    )
    await run.ctx.store.learning.set_standing(standing, job_id=run.job.id)
