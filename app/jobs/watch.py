"""``watch``: the default branch's check history read by rule, one issue per finding.

After the checks of a window complete on the default branch (app/webhooks/ci.py keeps
them), this job reads the repository's history and policy (``watch`` on the default
branch), asks the pure :func:`app.policy.watch_rules.watch`, and for each finding opens an
issue or edits the one it opened before (never a second: the store keeps the issue of
each finding's key). A finding a maintainer answered with ``@patchwarden ignore``, or
whose issue they closed, is left alone. :func:`render` is pure; the job gathers and
publishes.
"""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime
from typing import Any

from app.contract.kinds import WatchJob
from app.errors import RepoConfigError
from app.jobs.context import JobContext
from app.jobs.weekly import IssuesOff, keep_issue, update_weekly
from app.policy.policy_model import REPO_SOURCE, Policy, WatchRules
from app.policy.watch_rules import Finding, watch
from app.publish.body import _code, inert, inline
from app.publish.github import Publisher
from app.store import Job, WatchFinding

HISTORY_DAYS = 180  # the most history a run reads


def marker(finding: Finding) -> str:
    """The issue's marker: a hash of the key, since a check's name is the CI's text and
    could close the comment (``-->``)."""
    return f"<!-- patchwarden:watch={hashlib.sha256(finding.key.encode()).hexdigest()[:16]} -->"


def _day(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


_HEADLINE = {"flaky": "Flaky check:", "failure_rate": "Failing more often:", "duration": "Slower:"}
_WHAT_FIX_DOES = {
    "flaky": "a fixer looks for what makes it pass or fail at random (order, time, "
    "shared state, the network)",
    "failure_rate": "the culprit finder and the fixers look for the change behind it",
    "duration": "a fixer looks for what made it slower",
}


def render(finding: Finding, *, bot: str, first_seen: float, rules: WatchRules) -> str:
    """The finding's issue body: what was measured, what to answer."""
    lines = [
        marker(finding),
        f"@{bot}'s watch on the default branch noticed this in the check runs and commit "
        "statuses GitHub reports (a rule, no model). This issue is updated while it lasts; "
        "editing it changes nothing.",
        "",
        f"**{_HEADLINE[finding.kind]}** {_code(finding.check)}",
        "",
        *(f"- {inline(fact)}" for fact in finding.facts),  # our words and numbers
    ]
    if finding.shas:
        lines.append("- commits: " + ", ".join(f"`{sha[:12]}`" for sha in finding.shas))
    if finding.kind == "flaky":
        lines.append(
            "- its failures on the default branch are not handed to a fixer as a bug while "
            "it is flaky"
        )
    lines += [
        "",
        f"First noticed {_day(first_seen)}.",
        "",
        f"- `@{bot} fix this`: {_WHAT_FIX_DOES[finding.kind]}, and opens a pull request.",
        f"- `@{bot} ignore`: hear no more of this one.",
        "",
        f"Thresholds: `watch` in `{REPO_SOURCE}` (now: {rules.recent_runs} recent runs "
        f"against {rules.baseline_runs}, failure rate +{100 * rules.failure_rate_jump:.0f} "
        f"points, duration x{rules.duration_ratio:g}, flaky within {rules.flaky_days:g} days).",
    ]
    return "\n".join(lines) + "\n"


async def _gone(ctx: JobContext, pub: Any, old: WatchFinding, *, now: float) -> str:
    """A finding the watch no longer sees: its issue says so (once), and stays open for
    a person to close; if it comes back, the same issue is updated again."""
    text = (
        f"**No longer seen** by the watch as of {_day(now)}: {inert(old.title)} no longer "
        "meets its rule. Close this issue when you are satisfied; if it comes back, this "
        "issue is updated again.\n"
    )
    number, state = await pub.upsert_issue(
        old.issue_number, f"Patchwarden watch: {old.title}"[:200], text
    )
    await ctx.store.checks.save_finding(
        WatchFinding(
            repo=old.repo,
            key=old.key,
            issue_number=number,
            state="closed" if state == "closed" else "gone",
            title=old.title,
            first_seen=old.first_seen,
            last_seen=now,
            body_sha=hashlib.sha256(text.encode()).hexdigest(),
        ),
        audit="watch.gone",
    )
    return "gone"


async def _post(
    ctx: JobContext,
    pub: Publisher,
    repo: str,
    finding: Finding,
    old: WatchFinding | None,
    policy: Policy,
    now: float,
) -> str:
    """Open, update or leave the issue of one finding; what became of it."""
    if old is not None and old.state not in ("open", "gone"):
        return old.state  # ignored, or closed by a maintainer
    first = old.first_seen if old is not None else now
    body = render(finding, bot=ctx.bot, first_seen=first, rules=policy.watch)
    digest = hashlib.sha256(body.encode()).hexdigest()
    if old is not None and old.body_sha == digest:
        return "unchanged"
    found = WatchFinding(
        repo=repo,
        key=finding.key,
        issue_number=0,
        state="open",
        title=finding.title,
        first_seen=first,
        last_seen=now,
        body_sha=digest,
    )
    number = await keep_issue(
        ctx.store, pub, old, found, title=f"Patchwarden watch: {finding.title}"[:200], body=body,
        once=f"watch:{repo}:{finding.key}", audit="watch.opened",
    )  # fmt: skip
    if number is None:
        return "another worker opens it"
    return "opened" if old is None else f"updated #{number}"


async def watch_job(ctx: JobContext, job: Job) -> dict[str, Any]:
    kind = WatchJob.of(job)
    repo = kind.repo
    if await ctx.paused(repo):
        return {"status": "paused"}
    pub = ctx.publisher(job)
    try:
        policy = await ctx.default_branch_policy(pub)
    except RepoConfigError as exc:
        return {"status": "skipped", "reason": f"the policy does not load: {exc}"}
    if not policy.watch.enabled:
        return {"status": "off"}
    now = time.time()
    records = await ctx.store.checks.check_history(repo, since=now - HISTORY_DAYS * 86400)
    findings = watch(records, policy.watch, now=now)
    kept = {f.key: f for f in await ctx.store.checks.watch_findings(repo)}  # and the weekly reports
    said: dict[str, str] = {}
    for finding in findings:
        try:
            said[finding.key] = await _post(
                ctx, pub, repo, finding, kept.get(finding.key), policy, now
            )
        except IssuesOff as off:
            return {"status": "skipped", "reason": f"GitHub refused the issue ({off.status})"}
    found = {f.key for f in findings}
    for old in kept.values():
        if old.state == "open" and old.key not in found and not old.key.startswith("report:"):
            said[old.key] = await _gone(ctx, pub, old, now=now)
    weekly = None
    if policy.weekly_report:  # what the watch noticed is in this week's report
        weekly = await update_weekly(ctx.store, pub, repo=repo, bot=ctx.bot, now=now)
    return {"status": "watched", "runs": len(records), "findings": said, "weekly": weekly}
