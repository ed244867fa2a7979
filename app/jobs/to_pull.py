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
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from app.contract.kinds import JobKind, MergeJob
from app.fixers.base import Fixer
from app.fixers.choose import budget_from, is_about_lint
from app.jobs.branch import push_patch
from app.jobs.context import Running
from app.jobs.report import Report, Silent, Ticker
from app.policy.score import Score, Trigger, score_session
from app.publish.body import inline, labels_for, render_body, verdict
from app.sessions.result import SessionResult
from app.sessions.session import SessionSpec, Task
from app.sessions.workspace import branch_name
from app.store import Outcome, TrustStanding

log = logging.getLogger(__name__)

MERGEABLE: frozenset[str] = frozenset({"automerge", "review"})
CONCLUSION = {"automerge": "success", "review": "success", "draft": "neutral"}

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


@dataclass(frozen=True)
class Draft:
    """The pull request to open or update."""

    title: str
    body: str
    links: tuple[str, ...]
    base: str


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
    ctx = run.ctx
    remote, repository = await run.remote()
    spec = SessionSpec(
        remote=remote,
        task=task,
        job_id=run.job.id,
        base=options.base,
        installation_id=run.job.installation_id,
        budget=budget_from(ctx.settings),
        branch=options.branch,
        author=await run.author(),
    )
    # A retried job (a worker restarted mid-job) whose pull request is already
    # merged or closed is done: running it again must not open a second one.
    earlier = await run.pub.find_pull(spec.branch or branch_name(run.job.id, task.title))
    if earlier is not None and earlier.get("state") != "open":
        await fixer.aclose()
        state = "merged" if earlier.get("merged_at") else "closed"
        await run.audit("job.done_before", reason=f"#{earlier['number']} is {state}")
        return {"status": state, "pr": int(earlier["number"])}
    ticker = Ticker(report, every=ctx.settings.progress_seconds)
    ticking = asyncio.create_task(ticker.run(), name=f"progress:{run.job.id}")
    try:
        result = await ctx.runner.run(spec, fixer, progress=ticker.hear)
    finally:
        ticking.cancel()
        await asyncio.gather(ticking, return_exceptions=True)
        await fixer.aclose()
    ctx.save_result(result)
    for step in result.steps:
        ctx.metrics.phases.labels(phase=step.phase).observe(step.duration_seconds)
    remaining = getattr(getattr(run.pub.gh, "rate_limit", None), "remaining", None)
    if remaining is not None:
        ctx.metrics.rate_limit.labels(installation=str(run.job.installation_id)).set(remaining)
    usage = result.fix.usage if result.fix is not None else None
    outcome = replace(
        outcome,
        tokens=usage.total_tokens if usage else 0,
        cost_usd=usage.cost_usd if usage else 0.0,
        branch=result.branch,
        base_sha=result.base_sha,
    )
    if result.status != "patched" or result.head_sha is None or result.policy is None:
        why = result.error or (result.fix.reason if result.fix else None) or "no change"
        if result.error_kind == "config":
            why += (
                ". Patchwarden reads the file on the base branch: `patchwarden validate` "
                "lists every problem in it at once (`patchwarden schema` gives editors its "
                "JSON Schema); ask again once it is fixed there"
            )
        return await ended(run, outcome, report, status=result.status, why=why)
    if options.blame is not None:
        done = await options.blame(result)
        if done is not None:
            await ctx.store.save_outcome(replace(outcome, status=str(done["status"])))
            return done
    trigger = await _whose(run, result, options.trigger)
    if trigger is None:
        why = "the culprit is Patchwarden's own revert, and a revert is never reverted"
        return await ended(run, outcome, Silent(), status="ignored", why=why)
    policy = result.policy
    score = score_session(
        result,
        policy,
        trigger=trigger,
        max_tokens=spec.budget.max_tokens,
        max_cost_usd=spec.budget.max_cost_usd,
        # A revert is not held back by the reverts before it.
        history=(
            await ctx.history(run.repo, window_days=policy.learn.window_days)
            if trigger.reverts is None
            else None
        ),
    )
    if score.learned is not None:
        learned = score.learned
        await ctx.store.set_standing(
            TrustStanding(
                repo=run.repo,
                category=learned.kind,
                autonomy=learned.autonomy,
                state=learned.state,
                explanation=learned.explanation,
                at=time.time(),
            ),
            job_id=run.job.id,
        )
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
        title=task.title,
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
    if score.decision == "reject":
        return await _rejected(run, outcome, report, score)
    # The branch first: with commit_signing: api GitHub makes (and signs) a new commit,
    # and that is the head the body, the check run and the merge guard name.
    branch, head = await push_patch(run, spec.remote, result, policy.commit_signing)
    if (branch, head) != (result.branch, result.head_sha):
        result = result.model_copy(update={"head_sha": head, "branch": branch})
        ctx.save_result(result)  # the merge job renders the final body from it
    outcome = replace(outcome, head_sha=head, branch=branch)
    links = options.links
    if links is None:
        # Merging closes the issue only when the patch is what the issue asked for:
        # a lint fix on a bug report, or a revert, is not.
        mergeable = score.decision in MERGEABLE and answers(task, result)
        links = body_links(closes=options.closes, revert_of=options.revert_of, mergeable=mergeable)
    title = _title(result, task, options.revert_of)
    draft = Draft(
        title=title,
        body=render_body(
            result,
            score,
            title=title,
            bot=ctx.bot,
            links=list(links),
            merge_commit=policy.merge.method == "merge",
        ),
        links=links,
        base=str(repository.get("default_branch") or "main"),
    )
    return await _publish(run, outcome, report, result, score, draft)


async def ended(
    run: Running[Any], outcome: Outcome, report: Report, *, status: str, why: str
) -> dict[str, Any]:
    """No patch to publish: say why where the request came from, and record it."""
    status = "no-change" if status == "patched" else status  # patched, yet nothing to push
    await report.say(f"No pull request: {inline(why)}")
    await run.ctx.store.save_outcome(replace(outcome, status=status))
    await run.audit("job.no_patch", reason=why)
    return {"status": status, "reason": why}


async def _whose(run: Running[Any], result: SessionResult, trigger: Trigger) -> Trigger | None:
    """For a revert the culprit finder chose: of Patchwarden's merge or a person's
    commit (``Trigger.reverts``); None when it is Patchwarden's own revert."""
    culprit = result.fix.culprit if result.fix is not None else None
    if culprit is None or trigger.reverts is not None:
        return trigger
    theirs = await run.ctx.store.find_outcomes(repo=run.repo, merge_sha=culprit.sha)
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
    await run.ctx.store.save_outcome(replace(outcome, status="rejected"))
    return {"status": "rejected", "score": score.score}


async def _publish(
    run: Running[JobKind],
    outcome: Outcome,
    report: Report,
    result: SessionResult,
    score: Score,
    draft: Draft,
) -> dict[str, Any]:
    """Branch, check run, pull request, labels, review request; then a merge check."""
    assert result.head_sha is not None
    head = result.head_sha
    pub, store = run.pub, run.ctx.store
    check = await pub.check_run(
        head, status="queued", title="Publishing", summary="", external_id=str(run.job.id)
    )
    await pub.check_run(
        head, status="in_progress", title="Opening the pull request", summary="", run_id=check
    )
    pull, created = await pub.upsert_pull(
        branch=result.branch,
        base=draft.base,
        title=draft.title,
        body=draft.body,
        draft=score.decision == "draft",
    )
    number = int(pull["number"])
    await pub.set_labels(number, labels_for(score), prefix="risk:")
    requested_by = outcome.requested_by
    if requested_by and created:
        refused = await pub.request_review(number, requested_by)
        if refused:
            log.info("review request for %s on #%s: %s", requested_by, number, refused)
    await pub.check_run(
        head,
        status="completed",
        conclusion=CONCLUSION[score.decision],
        title=f"Risk {score.score}/100 ({score.risk}): {score.decision}",
        summary=verdict(score),
        run_id=check,
        details_url=run.ctx.audit_url(pub.repo, number),
    )
    outcome = replace(
        outcome,
        status="published",
        pr_number=number,
        pr_opened_at=outcome.pr_opened_at or time.time(),
        pr_url=pull.get("html_url"),
        links=draft.links,
    )
    await store.save_outcome(outcome)
    await store.audit(
        "pr.opened" if created else "pr.updated",
        actor=requested_by,
        repo=pub.repo,
        job_id=run.job.id,
        reason=f"#{number}: {verdict(score)}",
        details={"pr": number, "head": head, "decision": score.decision},
    )
    what = "the revert, " if outcome.is_revert else ""
    await report.say(
        f"Opened {what}#{number}: risk {score.score}/100 ({score.risk}). {_next_step(score)}"
    )
    await run.enqueue(MergeJob(repo=pub.repo, pr=number, reason="opened", ref=head))
    return {"status": "published", "pr": number, "score": score.score, "decision": score.decision}


def _title(result: SessionResult, task: Task, revert_of: Outcome | None) -> str:
    if revert_of is not None:
        return f"Revert #{revert_of.pr_number}: {revert_of.title}"[:200]
    message = result.fix.commit_message if result.fix is not None else None
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    return (first or task.title)[:200]


def answers(task: Task, result: SessionResult) -> bool:
    """Whether the patch is what the issue asked for (so merging it may close it)."""
    fixer = result.fix.fixer if result.fix is not None else ""
    if fixer == "lint":
        return is_about_lint(task)
    return fixer != "revert"


def body_links(
    *, closes: int | None, revert_of: Outcome | None, mergeable: bool
) -> tuple[str, ...]:
    """Patchwarden's own lines in the body: the issue it fixes, the merge it reverts."""
    links = []
    if closes is not None:
        # A closing keyword only when the decision lets it merge: a draft must not close
        # the issue by being merged half-done.
        links.append(f"Fixes #{closes}" if mergeable else f"For #{closes}")
    if revert_of is not None:
        links.append(f"Reverts #{revert_of.pr_number} (merged as {str(revert_of.merge_sha)[:12]})")
    return tuple(links)


def _next_step(score: Score) -> str:
    return {
        "automerge": "It merges itself once every check on it passes.",
        "review": "It waits for a maintainer's approval (a review, or `ship it`).",
        "draft": "It is a draft: it needs a person's work before it can merge.",
    }.get(score.decision, "")
