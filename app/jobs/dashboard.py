"""The "Patchwarden dashboard" issue: a maintainer's view of Patchwarden, on GitHub.

One issue per repository (like Renovate's Dependency Dashboard), on by default
(``dashboard: false`` in ``.github/patchwarden.yml`` turns it off), edited in place
after the jobs there: paused or not, the open Patchwarden pull requests with their risk
and what they wait for, recent merges and reverts, failed jobs, today's model spend
against the budget, and the last 30 days as rates (app/store/outcomes.py: a revert is
not a merged change). :func:`render` is pure; the job gathers and publishes.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import gidgethub

from app.contract.kinds import DashboardJob
from app.errors import RepoConfigError
from app.jobs.context import JobContext
from app.jobs.weekly import update_weekly
from app.policy.policy_model import REPO_SOURCE
from app.publish.body import inert
from app.redact import redact
from app.store import Job, ModelSpend, Outcome
from app.store.outcomes import format_duration, reverted, summarise_outcomes
from app.words import plural

TITLE = "Patchwarden dashboard"
WINDOW_DAYS = 30
RECENT = 10  # merges, reverts and failures listed


@dataclass(frozen=True)
class View:
    """Everything the dashboard shows, gathered at ``now``."""

    repo: str
    bot: str
    now: float
    paused: str | None  # why, when paused
    open_pulls: Sequence[Mapping[str, Any]]  # GitHub's pull requests
    outcomes: Sequence[Outcome]  # the last WINDOW_DAYS, oldest first
    failed: Sequence[Job]  # failed jobs of the window, newest first
    spend: ModelSpend  # today's, for the installation
    daily_budget_usd: float | None
    secrets: Sequence[str] = ()  # values never shown (the App's own, from the settings)
    # alerts.<kind>.open_after_merge_hours: a fixed alert still open after these is listed
    alert_hours: Mapping[str, int] = field(
        default_factory=lambda: {"dependabot": 24, "code_scanning": 24}
    )


def _day(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f} %"


def render(view: View) -> str:
    """The issue's body, in Markdown: every line a reviewer can act on, section by
    section (``SECTIONS``)."""
    out = [line for section in SECTIONS for line in section(view)]
    return "\n".join(out).rstrip() + "\n"


def _state(view: View) -> list[str]:
    out = [
        f"This issue is kept up to date by @{view.bot} after its jobs here; editing it "
        "changes nothing. Turn it off with `dashboard: false` in "
        f"`{REPO_SOURCE}`.",
        "",
    ]
    if view.paused:
        return [*out, f"**Paused**: {inert(view.paused)}. `@{view.bot} resume` resumes.", ""]
    return [*out, f"**Running.** `@{view.bot} pause` stops new work here.", ""]


def _listed(title: str, lines: list[str], *, none: str = "None.") -> list[str]:
    """A section: its heading, then its lines (or ``none``), then a blank line."""
    return [title, "", *(lines or [none]), ""]


def _open_pulls(view: View) -> list[str]:
    by_pr = {o.pr_number: o for o in view.outcomes if o.pr_number is not None}
    lines = []
    for pull in view.open_pulls:
        number = int(pull["number"])
        outcome = by_pr.get(number)
        risk = (
            f"risk {outcome.risk or '?'} ({outcome.score}), {outcome.decision}"
            if outcome is not None and outcome.score is not None
            else "risk not recorded"
        )
        waits = (outcome.merge_said if outcome else None) or "waits for a maintainer's review"
        draft = " (draft)" if pull.get("draft") else ""
        title = inert(str(pull.get("title", "")))
        lines.append(f"- #{number}{draft} {title}: {risk}; {inert(waits)}")
    return _listed("## Open pull requests", lines)


def _merged(view: View) -> list[str]:
    merges = [o for o in view.outcomes if o.merged_at is not None and not o.is_revert]
    undone = {o.job_id for o in reverted(view.outcomes)}
    lines = []
    for o in sorted(merges, key=lambda o: o.merged_at or 0, reverse=True)[:RECENT]:
        how = {"auto": "merged itself", "approved": "approved and merged"}.get(
            o.merged_how or "", "merged by a person"
        )
        mark = f" — **reverted** by #{o.reverted_by_pr}" if o.job_id in undone else ""
        lines.append(
            f"- #{o.pr_number} {inert(o.title or o.kind)}: {how}, {_day(o.merged_at or 0)}{mark}"
        )
    return _listed(f"## Merged in the last {WINDOW_DAYS} days", lines)


def _reverts(view: View) -> list[str]:
    reverts = [o for o in view.outcomes if o.is_revert and o.pr_number is not None]
    lines = []
    for o in sorted(reverts, key=lambda o: o.created_at, reverse=True)[:RECENT]:
        state = f"merged {_day(o.merged_at)}" if o.merged_at else "waiting"
        of = f" of #{o.revert_of_pr}" if o.revert_of_pr else ""
        lines.append(f"- #{o.pr_number}{of}: {state}")
    return _listed("## Reverts", lines)


def _failed(view: View) -> list[str]:
    lines = []
    for job in view.failed[:RECENT]:
        error = redact(job.last_error or "no reason recorded", known=view.secrets)
        why = inert(error.splitlines()[0][:200])
        lines.append(
            f"- job {job.id} ({job.kind}), {_day(job.updated_at)}: {why} "
            f"(`patchwarden audit --job {job.id}`)"
        )
    return _listed("## Failed jobs", lines)


def _spend(view: View) -> list[str]:
    budget = (
        f" of the ${view.daily_budget_usd:.2f} daily budget"
        if view.daily_budget_usd is not None
        else " (no daily budget)"
    )
    return [
        "## Spend today",
        "",
        f"${view.spend.cost_usd:.2f}{budget}: {plural(view.spend.calls, 'model call')}, "
        f"{view.spend.prompt_tokens + view.spend.completion_tokens:,} tokens "
        "(the installation's, UTC day).",
        "",
    ]


def _window(view: View) -> list[str]:
    rows = summarise_outcomes(view.outcomes)
    if not rows:
        return _listed(f"## The last {WINDOW_DAYS} days", [], none="Nothing yet.")
    row = rows[0]
    cost = "-" if row["cost_per_merge"] is None else f"${row['cost_per_merge']:.2f}"
    return [
        f"## The last {WINDOW_DAYS} days",
        "",
        "| measure | value |",
        "|---|---|",
        f"| pull requests opened | {row['prs']} |",
        f"| accepted (merged) | {_pct(row['acceptance_rate'])} ({row['merged']}) |",
        f"| reverted after merging | {_pct(row['revert_rate'])} ({row['reverted']}) |",
        f"| median time to pull request | {format_duration(row['median_seconds_to_pr'])} |",
        f"| median time to merge | {format_duration(row['median_seconds_to_merge'])} |",
        f"| median time to recover | {format_duration(row['median_seconds_to_recover'])} |",
        f"| cost per merged change | {cost} |",
        "",
    ]


def _alerts_still_open(view: View) -> list[str]:
    """Security alerts whose fix merged but which GitHub has not closed in time: the
    manifest GitHub reads may not be the one changed (a lock file), or the analysis
    still finds the rule. Nothing when there are none."""
    late = []
    for o in view.outcomes:
        hours = view.alert_hours.get(o.trigger, 24)
        if o.kind != "security_alert" or o.merged_at is None or "alert_closed" in o.details:
            continue
        if view.now - o.merged_at >= hours * 3600:
            late.append((o, hours))
    if not late:
        return []
    out = ["## Security alerts still open after their fix merged", ""]
    for o, hours in sorted(late, key=lambda x: x[0].merged_at or 0):
        out.append(
            f"- #{o.pr_number} {inert(o.title or o.kind)}: merged {_day(o.merged_at or 0)}, "
            f"and GitHub has not closed the alert {hours} h later. Check that the file "
            "GitHub reads changed (a lock file?), or dismiss the alert with a reason."
        )
    return [*out, ""]


async def dashboard_job(ctx: JobContext, job: Job) -> dict[str, Any]:
    """Gather the view and edit (or open) the dashboard issue, unless turned off."""
    kind = DashboardJob.of(job)
    pub = ctx.publisher(job)
    try:
        policy = await ctx.default_branch_policy(pub)
    except RepoConfigError as exc:
        return {"status": "skipped", "reason": f"the policy does not load: {exc}"}
    weekly = None
    if policy.weekly_report:
        weekly = await update_weekly(ctx.store, pub, repo=kind.repo, bot=ctx.bot, now=time.time())
    if not policy.dashboard:
        return {"status": "off", "weekly": weekly}
    now = time.time()
    since = now - WINDOW_DAYS * 86400
    failed = [
        j
        for j in await ctx.store.queue.list_jobs(state="failed")
        if j.repo == kind.repo and j.updated_at >= since and j.kind != "dashboard"
    ]
    day = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")
    view = View(
        repo=kind.repo,
        bot=ctx.bot,
        now=now,
        paused=await ctx.paused(kind.repo),
        open_pulls=await pub.open_pulls(),
        outcomes=await ctx.store.learning.find_outcomes(repo=kind.repo, since=since),
        failed=sorted(failed, key=lambda j: j.updated_at, reverse=True),
        spend=await ctx.store.repos.model_spend(int(job.installation_id or 0), day=day),
        daily_budget_usd=ctx.settings.llm_daily_budget_usd,
        secrets=ctx.settings.secret_values(),
        alert_hours={
            "dependabot": policy.alerts.dependabot.open_after_merge_hours,
            "code_scanning": policy.alerts.code_scanning.open_after_merge_hours,
        },
    )
    body = render(view)
    digest = hashlib.sha256(body.encode()).hexdigest()
    number, last = await ctx.store.repos.dashboard_issue(kind.repo)
    if number is not None and last == digest:
        return {"status": "unchanged", "issue": number}
    if number is None and not await ctx.store.journal.claim_once(f"dashboard:{kind.repo}"):
        # another worker is opening it right now: its update carries the same news
        return {"status": "another worker opens it"}
    try:
        made = await pub.upsert_dashboard(number, TITLE, body)
    except gidgethub.BadRequest as exc:
        if number is None:
            await ctx.store.journal.release_once(f"dashboard:{kind.repo}")
        if exc.status_code in (403, 410):  # issues are turned off in this repository
            return {"status": "skipped", "reason": f"GitHub refused the issue ({exc.status_code})"}
        raise
    await ctx.store.repos.set_dashboard_issue(kind.repo, made, digest)
    return {"status": "updated", "issue": made}


# The dashboard's sections, in the order the issue shows them.
SECTIONS: tuple[Callable[[View], list[str]], ...] = (
    _state,
    _open_pulls,
    _merged,
    _alerts_still_open,
    _reverts,
    _failed,
    _spend,
    _window,
)
