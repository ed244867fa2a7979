"""The pull request a judged session opens or updates: its title, body and links
(``draft``), then the Check Run, the pull request, its labels and review request, the
outcome and the merge check that follows (``publish``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from typing import Any

from app.contract.kinds import JobKind, MergeJob
from app.fixers import registry
from app.fixers.choose import is_about_lint
from app.jobs.context import Running
from app.jobs.report import Report
from app.policy.score import Score
from app.publish.body import labels_for, render_body, verdict
from app.publish.github import Publisher
from app.sessions.result import SessionResult
from app.sessions.task import Task
from app.store import Outcome

log = logging.getLogger(__name__)

MERGEABLE: frozenset[str] = frozenset({"automerge", "review"})
CONCLUSION = {"automerge": "success", "review": "success", "draft": "neutral"}


@dataclass(frozen=True)
class Draft:
    """The pull request to open or update."""

    title: str
    body: str
    links: tuple[str, ...]
    base: str


def draft(
    bot: str,
    result: SessionResult,
    score: Score,
    *,
    task: Task,
    closes: int | None,
    revert_of: Outcome | None,
    links: tuple[str, ...] | None,
    base: str,
) -> Draft:
    """The pull request's title, body and links. Merging closes the issue only when the
    patch is what the issue asked for: a lint fix on a bug report, or a revert, is not."""
    if links is None:
        mergeable = score.decision in MERGEABLE and answers(task, result)
        links = body_links(closes=closes, revert_of=revert_of, mergeable=mergeable)
    title = _title(result, task, revert_of)
    policy = result.policy
    body = render_body(
        result,
        score,
        title=title,
        bot=bot,
        links=list(links),
        merge_commit=policy is not None and policy.merge.method == "merge",
    )
    return Draft(title=title, body=body, links=links, base=base)


async def publish(
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
    number, pull, created = await _open(pub, result, score, draft, outcome.requested_by)
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
    await store.learning.save_outcome(outcome)
    await store.journal.audit(
        "pr.opened" if created else "pr.updated",
        actor=outcome.requested_by,
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


async def _open(
    pub: Publisher, result: SessionResult, score: Score, draft: Draft, requested_by: str | None
) -> tuple[int, dict[str, Any], bool]:
    """Open (or update) the pull request, label its risk, and ask who asked to review
    a new one: its number, GitHub's pull request, and whether it is new."""
    pull, created = await pub.upsert_pull(
        branch=result.branch,
        base=draft.base,
        title=draft.title,
        body=draft.body,
        draft=score.decision == "draft",
    )
    number = int(pull["number"])
    await pub.set_labels(number, labels_for(score), prefix="risk:")
    if requested_by and created:
        refused = await pub.request_review(number, requested_by)
        if refused:
            log.info("review request for %s on #%s: %s", requested_by, number, refused)
    return number, pull, created


def _title(result: SessionResult, task: Task, revert_of: Outcome | None) -> str:
    if revert_of is not None:
        return f"Revert #{revert_of.pr_number}: {revert_of.title}"[:200]
    message = result.fix.commit_message if result.fix is not None else None
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    return (first or task.title)[:200]


def answers(task: Task, result: SessionResult) -> bool:
    """Whether the patch is what the issue asked for (so merging it may close it): its
    fixer's record says so, or it is a lint fix and the issue is about lint."""
    fix = result.fix
    record = registry.RECORDS.get(fix.fixer) if fix is not None else None
    if record is None or record.closes_issue:
        return True
    return record.category == "lint" and is_about_lint(task)


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
