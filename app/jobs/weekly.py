"""The weekly report (``weekly_report: true``): one issue per repository per ISO week.

Edited in place as the week goes (after the dashboard's window and after each watch):
what the watch noticed, what Patchwarden did (jobs, pull requests, merges, reverts,
rejections), what it learned (promotions, demotions, resets) and what it spent. The
store keeps each week's issue as it keeps the watch's (key ``report:<year>-W<week>``),
so a week never gets a second issue. :func:`render` is pure; :func:`update_weekly`
gathers and publishes.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import gidgethub

from app.policy.policy_model import REPO_SOURCE
from app.publish.body import inert
from app.publish.github import Publisher
from app.store import AuditEntry, AuditQuery, Outcome, Store, WatchFinding

LEARNED = {
    "trust.promoted": "promoted",
    "trust.demoted": "demoted",
    "trust.restored": "back to the repository's autonomy",
    "trust.reset": "trust reset",
}


def week_of(at: float) -> tuple[str, float, float]:
    """The ISO week holding ``at``: its label (``2026-W48``), start and end (UTC)."""
    day = datetime.fromtimestamp(at, UTC)
    year, week, weekday = day.isocalendar()
    start = (day - timedelta(days=weekday - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return f"{year}-W{week:02d}", start.timestamp(), (start + timedelta(days=7)).timestamp()


@dataclass(frozen=True)
class Week:
    """Everything one week's report shows."""

    repo: str
    bot: str
    label: str
    start: float
    now: float
    outcomes: Sequence[Outcome]  # created this week
    merged: Sequence[Outcome]  # merged this week (whenever created)
    learned: Sequence[AuditEntry]  # trust.* this week
    rejected: int  # pull requests closed unmerged by a person this week
    noticed: Sequence[WatchFinding]  # the watch's findings seen this week


def _day(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%a %d %b")


def render(week: Week) -> str:
    changes = [o for o in week.outcomes if not o.is_revert]
    merged = [o for o in week.merged if not o.is_revert]
    reverts = [o for o in week.merged if o.is_revert]
    cost = math.fsum(o.cost_usd for o in week.outcomes)
    out = [
        f"<!-- patchwarden:weekly={week.label} -->",
        f"What @{week.bot} noticed, did, learned and spent here in {week.label} (from "
        f"{_day(week.start)}, UTC), kept up to date through the week. Turn it off with "
        f"`weekly_report: false` in `{REPO_SOURCE}`.",
        "",
        "### Noticed",
        "",
    ]
    if week.noticed:
        out += [
            f"- {inert(f.title)} (#{f.issue_number}, {f.state})"
            for f in sorted(week.noticed, key=lambda f: f.key)
        ]
    else:
        out.append("Nothing new on the default branch.")
    out += [
        "",
        "### Did",
        "",
        f"- jobs: {len(week.outcomes)}",
        f"- pull requests opened: {sum(o.pr_number is not None for o in changes)}",
        f"- merged: {len(merged)} ({sum(o.merged_how == 'auto' for o in merged)} by "
        f"themselves, {sum(o.merged_how == 'approved' for o in merged)} approved, "
        f"{sum(o.merged_how == 'manual' for o in merged)} by hand)",
        f"- reverts merged: {len(reverts)}",
        f"- rejected by the policy: {sum(o.status == 'rejected' for o in week.outcomes)}",
        f"- closed unmerged by a person: {week.rejected}",
        "",
        "### Learned",
        "",
    ]
    learned = [e for e in week.learned if e.action in LEARNED]
    if learned:
        for e in learned:
            kind = str((e.details or {}).get("category") or "")
            out.append(
                f"- {_day(e.at)}: `{inert(kind)}` {LEARNED[e.action]}"
                + (f": {inert(e.reason)}" if e.reason else "")
            )
    else:
        out.append("No kind of change was promoted or demoted.")
    out += [
        "",
        "### Spent",
        "",
        f"- tokens: {sum(o.tokens for o in week.outcomes):,}",
        f"- model cost: ${cost:.2f}",
    ]
    return "\n".join(out) + "\n"


async def _week(
    store: Store, *, repo: str, bot: str, now: float
) -> tuple[Week, list[WatchFinding]]:
    """What this week's report says, read from the store, and the watch's findings."""
    label, start, _ = week_of(now)
    since = start - 90 * 86400  # merged this week, created before it
    outcomes = await store.learning.find_outcomes(repo=repo, since=since)
    trust = await store.journal.query_audit(
        AuditQuery(repo=repo, since=start, action_prefix="trust.", limit=10_000)
    )
    findings = await store.checks.watch_findings(repo)
    week = Week(
        repo=repo,
        bot=bot,
        label=label,
        start=start,
        now=now,
        outcomes=[o for o in outcomes if o.created_at >= start],
        merged=[o for o in outcomes if o.merged_at is not None and o.merged_at >= start],
        learned=trust,
        rejected=sum(e.action == "trust.rejected" for e in trust),
        # what the watch raised this week, and what it still sees
        noticed=[
            f
            for f in findings
            if not f.key.startswith("report:")
            and (f.first_seen >= start or (f.state == "open" and f.last_seen >= start - 7 * 86400))
        ],
    )
    return week, findings


class IssuesOff(Exception):
    """GitHub refused an issue: issues are turned off in the repository."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


async def keep_issue(
    store: Store,
    pub: Publisher,
    kept: WatchFinding | None,
    found: WatchFinding,
    *,
    title: str,
    body: str,
    once: str,
    audit: str,
) -> int | None:
    """Open the issue ``found`` is about (once across workers: ``once``) or update the one
    ``kept``, and keep ``found`` with its number and state (a new one audited as
    ``audit``); its number, or None when another worker opens it. Raises
    :class:`IssuesOff` when GitHub refuses issues here."""
    if kept is None and not await store.journal.claim_once(once):
        return None
    try:
        number, state = await pub.upsert_issue(
            kept.issue_number if kept is not None else None, title, body
        )
    except BaseException as exc:
        if kept is None:  # a retry may open it
            await store.journal.release_once(once)
        if isinstance(exc, gidgethub.BadRequest) and exc.status_code in (403, 410):
            raise IssuesOff(exc.status_code) from exc
        raise
    await store.checks.save_finding(
        replace(found, issue_number=number, state="closed" if state == "closed" else "open"),
        audit=audit if kept is None else None,
    )
    return number


async def update_weekly(
    store: Store, pub: Publisher, *, repo: str, bot: str, now: float
) -> dict[str, Any]:
    """Bring this week's report issue up to date (open it the first time)."""
    week, findings = await _week(store, repo=repo, bot=bot, now=now)
    label = week.label
    body = render(week)
    digest = hashlib.sha256(body.encode()).hexdigest()
    key = f"report:{label}"
    kept = next((f for f in findings if f.key == key), None)
    if kept is not None and kept.body_sha == digest:
        return {"status": "unchanged", "issue": kept.issue_number}
    title = f"Patchwarden weekly report: {label}"
    found = WatchFinding(
        repo=repo,
        key=key,
        issue_number=0,
        state="open",
        title=title,
        first_seen=kept.first_seen if kept is not None else now,
        last_seen=now,
        body_sha=digest,
    )
    try:
        number = await keep_issue(
            store, pub, kept, found, title=title, body=body, once=f"weekly:{repo}:{label}",
            audit="report.opened",
        )  # fmt: skip
    except IssuesOff as off:
        return {"status": "skipped", "reason": f"GitHub refused the issue ({off.status})"}
    if number is None:
        return {"status": "another worker opens it"}
    return {"status": "updated", "issue": number}
