"""``merge``: one event that may let a Patchwarden pull request merge.

Reads GitHub (the pull request, its checks and reviews, the base branch's tip), asks
the pure :func:`app.publish.merge_decision.decide`, and merges with the head-sha guard, or asks
for an update onto the moved base, or says on the pull request why it waits. Merges of
one repository run one at a time. A merge (by Patchwarden or a person) is recorded,
and the final PR body names the merge commit.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

from app.contract.kinds import MergeJob, UpdateJob
from app.github.repos import WRITE_ROLES, role_for
from app.jobs.context import JobContext, Running
from app.jobs.report import job_comment
from app.policy.learn import standing
from app.policy.policy_model import AUTONOMY_CEILING, LADDER, Decision, LearnRules
from app.policy.score import Score
from app.publish.body import render_body
from app.publish.github import MergeAnswer
from app.publish.merge_decision import (
    Facts,
    Verdict,
    approvers_of,
    checks_of,
    decide,
    what_to_change,
)
from app.store import Job, Outcome


async def merge_job(ctx: JobContext, job: Job) -> dict[str, Any]:
    run = Running.start(ctx, job, MergeJob)
    async with ctx.locks.setdefault(run.repo, asyncio.Lock()):
        return await _merge(run)


async def _merge(run: Running[MergeJob]) -> dict[str, Any]:
    ctx, pub, number = run.ctx, run.pub, run.kind.pr
    outcomes = await ctx.store.learning.find_outcomes(repo=run.repo, pr_number=number)
    if not outcomes:
        return {"status": "not-ours"}
    outcome = outcomes[-1]
    pull = await pub.get_pull(number)
    if await _merged_already(run, outcome, pull):
        return {"status": "merged"}
    outcome, approvers = await _approvers(run, outcome, pull)
    head = str(pull["head"]["sha"])
    runs, statuses = await pub.checks(head)
    # The branch's tip, not the PR's base.sha: GitHub does not refresh that reliably.
    base_tip = await pub.branch_sha(str(pull["base"]["ref"]))
    facts = Facts(
        decision=await _still_earned(run, outcome),
        state=str(pull.get("state")),
        merged=bool(pull.get("merged")),
        draft=bool(pull.get("draft")),
        head_sha=head,
        scored_sha=str(outcome.head_sha),
        base_moved=bool(outcome.base_sha) and base_tip != outcome.base_sha,
        checks=checks_of(runs, statuses, bot_slug=ctx.bot),
        approvers=approvers,
        requested_by=outcome.requested_by,
        two_person=outcome.two_person,
        paused=await ctx.paused(run.repo),
        bot=ctx.bot,
        refused_before=outcome.refused_why if outcome.refused_head == head else None,
        person_asked=run.kind.person_asked,
    )
    decided = decide(facts)
    if decided.action == "merge":
        return await _do_merge(run, outcome, pull, decided, approvers)
    if decided.action == "update":
        await _say(
            run,
            outcome,
            "The base branch moved since the session: carrying the patch onto it and "
            "verifying it again before merging.",
        )
        await run.enqueue(UpdateJob(repo=run.repo, pr=number, job=outcome.job_id, base=base_tip))
        return {"status": "updating"}
    if decided.action != "done":
        await _say(run, outcome, f"Not merged yet: {decided.reason}.")
        if decided.action == "refuse":
            await ctx.store.journal.audit(
                "merge.refused",
                repo=run.repo,
                job_id=outcome.job_id,
                reason=decided.reason,
                details={"pr": number},
            )
    return {"status": decided.action, "reason": decided.reason}


async def _still_earned(run: Running[MergeJob], outcome: Outcome) -> Decision:
    """The decision, unless its kind of change lost the autonomy to merge by itself since
    it was scored (a revert, rejections, a maintainer's ``trust reset``): then a person
    approves it (``review``). A revert of Patchwarden's own merge keeps its own rule."""
    decision = _decision(outcome.decision)
    bounds = outcome.details.get("learn")
    if decision != "automerge" or not outcome.category or outcome.reverts == "bot":
        return decision
    if not isinstance(bounds, dict):
        return decision  # scored before learning existed
    rules = LearnRules.model_validate(bounds.get("rules"))
    base = bounds.get("autonomy")
    if base not in AUTONOMY_CEILING:
        return "review"  # fail closed on a record that cannot be read
    history = await run.ctx.history(run.repo, window_days=rules.window_days)
    now = history.now if history.now is not None else time.time()
    held = standing(
        outcome.category, history.past, rules, base=base, now=now, resets=dict(history.resets)
    )
    if held.autonomy == "automerge":
        return decision
    await run.ctx.store.journal.audit(
        "merge.held",
        repo=run.repo,
        job_id=outcome.job_id,
        reason=f"scored to merge itself, but since then: {held.explain()}",
        details={"pr": outcome.pr_number, "category": outcome.category},
    )
    return "review"


async def _approvers(
    run: Running[MergeJob], outcome: Outcome, pull: dict[str, Any]
) -> tuple[Outcome, frozenset[str]]:
    """Writers who approved the current head: by review, or by `ship it` (kept in the
    outcome with the head it was said for; a new head needs a new one)."""
    head = str(pull["head"]["sha"])
    said = dict(outcome.ship_it)
    actor = run.kind.actor
    if run.kind.reason == "ship-it" and actor:
        said[actor] = head
        outcome = replace(outcome, ship_it=said)
        await run.ctx.store.learning.save_outcome(outcome)
    ship_it = {login for login, at in said.items() if at == head}
    reviews = await run.pub.reviews(pull["number"])
    logins = {str((r.get("user") or {}).get("login")) for r in reviews} | ship_it
    # A failed lookup is no role: its approval does not count (fail closed).
    roles = {
        login: (await role_for(run.pub.gh, repo=run.repo, login=login))[0]
        for login in sorted(logins)
        if login
    }
    by_review = approvers_of(reviews, head_sha=head, roles=roles)
    return outcome, by_review | {login for login in ship_it if roles.get(login) in WRITE_ROLES}


async def _do_merge(
    run: Running[MergeJob],
    outcome: Outcome,
    pull: dict[str, Any],
    decided: Verdict,
    approvers: frozenset[str],
) -> dict[str, Any]:
    pub, store = run.pub, run.ctx.store
    number = int(pull["number"])
    method = outcome.merge_method
    title = (
        f"Merge pull request #{number} from {pub.owner}/{pull['head']['ref']}"
        if method == "merge"
        else f"{pull['title']} (#{number})"
    )
    answer: MergeAnswer = await pub.merge(
        number, sha=str(outcome.head_sha), method=method, title=title
    )
    if answer.merged and answer.sha:
        by = ", ".join(sorted(approvers)) if decided.how == "approved" else None
        await _merged(run, outcome, sha=answer.sha, how=decided.how or "auto", by=by)
        return {"status": "merged", "sha": answer.sha}
    if answer.status == 409:
        scored = str(outcome.head_sha)[:12]
        reason = (
            f"GitHub refused the merge: the head moved since Patchwarden scored {scored} "
            "(409). Not retried."
        )
    else:
        if await _merged_already(run, outcome, await pub.get_pull(number)):
            return {"status": "merged"}
        reason = (
            f"GitHub refused the merge ({answer.status}: {answer.message}). Not retried "
            f"until a writer approves it or comments `@{run.ctx.bot} ship it`."
        )
        if hint := what_to_change(answer.message):
            reason += f" {hint}."
    await store.journal.audit(
        "merge.refused",
        repo=pub.repo,
        job_id=outcome.job_id,
        reason=reason,
        details={"pr": number, "status": answer.status},
    )
    latest = await store.learning.get_outcome(outcome.job_id) or outcome
    outcome = replace(
        latest, refused_head=str(outcome.head_sha), refused_why=f"{answer.status}: {answer.message}"
    )
    await store.learning.save_outcome(outcome)
    await _say(run, outcome, reason)
    return {"status": "refused", "reason": reason}


async def _merged_already(run: Running[MergeJob], outcome: Outcome, pull: dict[str, Any]) -> bool:
    """Whether ``pull`` is merged already (by a person, as far as Patchwarden knows);
    recorded once."""
    if not pull.get("merged"):
        return False
    if outcome.merged_at is None:
        by = (pull.get("merged_by") or {}).get("login")
        sha = str(pull.get("merge_commit_sha"))
        await _merged(run, outcome, sha=sha, how="manual", by=by)
    return True


async def _merged(
    run: Running[MergeJob], outcome: Outcome, *, sha: str, how: str, by: str | None
) -> None:
    ctx, pub = run.ctx, run.pub
    outcome = replace(outcome, merged_at=time.time(), merged_how=how, merged_by=by, merge_sha=sha)
    await ctx.store.learning.save_outcome(outcome)
    await ctx.store.journal.audit(
        "pr.merged",
        actor=by,
        repo=pub.repo,
        job_id=outcome.job_id,
        reason=f"#{outcome.pr_number} merged ({how}) as {sha[:12]}",
        details={"pr": outcome.pr_number, "sha": sha, "how": how},
    )
    number = int(outcome.pr_number or 0)
    result = await ctx.load_result(outcome.job_id)
    score_data = outcome.details.get("score")
    if result is not None and score_data:
        body = render_body(
            result,
            Score.model_validate(score_data),
            title=outcome.title,
            bot=ctx.bot,
            merge_sha=sha,
            merge_commit=outcome.merge_method == "merge",
            links=list(outcome.links),
        )
        await pub.update_body(number, body)
    window = outcome.canary_minutes
    watch = (
        f" Patchwarden watches the default branch for {window:g} minutes and opens "
        "the revert if a check fails."
        if window and not outcome.is_revert
        else ""
    )
    how_text = {
        "auto": "automatically: every check green",
        "approved": f"approved by {by}",
        "manual": f"by @{by}",
    }.get(how, how)
    await _say(run, outcome, f"Merged as {sha[:12]} ({how_text}).{watch}")
    if outcome.issue_number:
        await job_comment(pub, outcome.issue_number, outcome.job_id).say(
            f"#{number} merged ({how_text}) as {sha[:12]}. Undo: comment "
            f"`@{ctx.bot} revert` on #{number}."
        )


async def _say(run: Running[MergeJob], outcome: Outcome, text: str) -> None:
    """The pull request's one merge comment, edited only when what it says changes."""
    if outcome.merge_said == text:
        return
    await run.pub.upsert_comment(int(outcome.pr_number or 0), "merge", text)
    latest = await run.ctx.store.learning.get_outcome(outcome.job_id) or outcome
    await run.ctx.store.learning.save_outcome(replace(latest, merge_said=text))


def _decision(text: str | None) -> Decision:
    """The recorded decision; anything unreadable is a rejection (fail closed)."""
    return text if text in LADDER else "reject"
