"""GitHub's own security alerts: Dependabot alerts and code scanning alerts.

An alert that opens (``created``, ``reopened``, ``reintroduced``, ``auto_reopened``; for
code scanning also ``appeared_in_branch`` and ``reopened_by_user``) starts a
``security_alert`` job when the repository's policy (``alerts`` in
``.github/patchwarden.yml`` on the default branch) handles its kind and severity, and
a code scanning alert is on the default branch and names a place in the code (from
``most_recent_instance``, else ``instances``, the shape GitHub's own example has). An
alert that starts nothing is audited ``trigger.ignored`` with why and what would change
that. One job per opening of an alert: a redelivery, or ``created`` and
``appeared_in_branch`` of one alert, make one job, and an alert with work queued or
running starts no second one. An alert that closes (``dismissed``, ``fixed``,
``auto_dismissed``, ``closed_by_user``) cancels the work still queued for it. Every
decision is audited; :func:`screen` and :func:`job_for` are pure.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from gidgethub import sansio
from gidgethub.routing import Router

from app.contract.kinds import SecurityAlertJob
from app.errors import RepoConfigError
from app.fixers.registry import KNOWN
from app.github import GitHubClient
from app.policy.policy_model import REPO_SOURCE, SEVERITIES, AlertKindRules, Policy, load_policy
from app.publish.closing import close_with_comment
from app.publish.github import Publisher
from app.sessions.policyfile import default_policy_text
from app.store import JobState
from app.untrusted.sanitize import sanitize
from app.webhooks.context import HandlerContext
from app.webhooks.payloads import (
    CodeScanningAlertEvent,
    DependabotAlertEvent,
    Envelope,
    ScanInstance,
    ScanLocation,
    typed,
)
from app.words import plural

router = Router()

AlertEvent = DependabotAlertEvent | CodeScanningAlertEvent
MODELS: dict[str, type[AlertEvent]] = {
    "dependabot_alert": DependabotAlertEvent,
    "code_scanning_alert": CodeScanningAlertEvent,
}
# https://docs.github.com/en/webhooks/webhook-events-and-payloads#dependabot_alert and
# #code_scanning_alert: the actions that open an alert, and those that close it.
OPENS: dict[str, tuple[str, ...]] = {
    "dependabot_alert": ("created", "reopened", "reintroduced", "auto_reopened"),
    "code_scanning_alert": ("created", "reopened", "appeared_in_branch", "reopened_by_user"),
}
CLOSES: dict[str, tuple[str, ...]] = {
    "dependabot_alert": ("dismissed", "fixed", "auto_dismissed"),
    "code_scanning_alert": ("fixed", "closed_by_user"),
}
# What closed the alert, as its pull request's closing comment says it.
WORDS = {
    "dismissed": "dismissed",
    "auto_dismissed": "dismissed by an auto-triage rule",
    "closed_by_user": "dismissed",
    "fixed": "fixed",
}
BY_PEOPLE = ("dismissed", "closed_by_user")
FIRST = ("created", "appeared_in_branch")  # the alert's first opening: round 1
NAMES = {"dependabot_alert": "Dependabot alert", "code_scanning_alert": "code scanning alert"}
# A rule without a security severity (not a security query): its own level, mapped.
RULE_SEVERITY = {"error": "high", "warning": "medium", "note": "low", "none": "low"}
TEXT_LIMIT = 8000  # an advisory's description, a rule's help: the start says enough


def source_of(event: str) -> str:
    return "dependabot" if event == "dependabot_alert" else "code_scanning"


def severity_of(data: AlertEvent) -> str | None:
    """The alert's severity as the policy names them (low .. critical), or None."""
    if isinstance(data, DependabotAlertEvent):
        found = data.alert.security_advisory.severity or data.alert.security_vulnerability.severity
        found = "medium" if found == "moderate" else found  # the advisory database's older word
    else:
        rule = data.alert.rule
        found = rule.security_severity_level or RULE_SEVERITY.get(str(rule.severity), "")
    return found if found in SEVERITIES else None


def instance_of(data: CodeScanningAlertEvent) -> ScanInstance | None:
    """The alert's instance: its most recent one. A payload shaped as the published
    schema has it (``instances`` required, ``most_recent_instance`` optional: GitHub's
    own example ``created`` has only the list) gives the one on the event's ref, else
    the first."""
    alert = data.alert
    if alert.most_recent_instance is not None:
        return alert.most_recent_instance
    found = alert.instances or []
    on_ref = [i for i in found if data.ref and i.ref == data.ref]
    return next(iter(on_ref or found), None)


def place_of(data: CodeScanningAlertEvent) -> ScanLocation | None:
    """Where in the code the alert is (a file and a line), or None: nothing to fix at."""
    instance = instance_of(data)
    place = instance.location if instance is not None else None
    return place if place is not None and place.path and place.start_line else None


def branch_of(data: CodeScanningAlertEvent) -> str | None:
    """The ref the alert was found on (``refs/heads/main``): the event's, else its
    instance's; None when GitHub does not say (a person closed or reopened it)."""
    instance = instance_of(data)
    return data.ref or (instance.ref if instance is not None else None) or None


def screen(event: str, data: AlertEvent, rules: AlertKindRules) -> str | None:
    """Why an alert that opened starts no fix, and what would change that; None when
    it starts one."""
    key = f"alerts.{source_of(event)}"
    if rules.mode == "off":
        return (
            f"`{key}.mode` is off in `{REPO_SOURCE}`: set it to `review` there to have "
            "fixes proposed"
        )
    severity = severity_of(data)
    if severity is None and isinstance(data, CodeScanningAlertEvent):
        return (
            "its rule has no level and no security severity, so nothing to weigh it by: "
            "give the rule a level (error, warning or note) in the tool that reports it"
        )
    if severity is None:
        return "its severity is not one of low, medium, high, critical: nothing to weigh it by"
    if SEVERITIES.index(severity) < SEVERITIES.index(rules.min_severity):
        return (
            f"its severity {severity} is below `{key}.min_severity` ({rules.min_severity}): "
            f"set it to `{severity}` in `{REPO_SOURCE}` to have such alerts fixed"
        )
    if isinstance(data, CodeScanningAlertEvent):
        ref, default = branch_of(data), data.repository.default_branch
        if ref is not None and default is not None and ref != f"refs/heads/{default}":
            return (
                f"it is on {ref}, not on the default branch {default}, where fixes go: one "
                f"starts when the alert appears on {default}"
            )
        if place_of(data) is None:
            return (
                "it names no place in the code (a file and a line): nothing to fix; the "
                "tool that reports it must give one"
            )
    return None


def job_for(
    event: str, data: AlertEvent, *, rules: AlertKindRules, round: int, model: bool
) -> SecurityAlertJob:
    """The job for an alert that opened: what the fixer needs, texts sanitised."""
    common: dict[str, Any] = {
        "repo": data.repository.full_name,
        "source": source_of(event),
        "number": data.alert.number,
        "round": round,
        "action": data.action or "",
        "url": data.alert.html_url,
        "severity": severity_of(data) or "",
        "mode": "review" if rules.mode == "off" else rules.mode,
        "model": model,
    }
    if isinstance(data, DependabotAlertEvent):
        alert = data.alert
        advisory, vulnerable = alert.security_advisory, alert.security_vulnerability
        patched = vulnerable.first_patched_version
        return SecurityAlertJob(
            **common,
            summary=sanitize(advisory.summary, limit=500),
            description=sanitize(advisory.description or "", limit=TEXT_LIMIT),
            ecosystem=alert.dependency.package.ecosystem,
            package=alert.dependency.package.name,
            manifest=alert.dependency.manifest_path,
            vulnerable_range=vulnerable.vulnerable_version_range,
            first_patched=patched.identifier if patched is not None else None,
            advisory=advisory.ghsa_id,
            cve=advisory.cve_id,
        )
    scan = data.alert
    instance = instance_of(data)
    place = place_of(data)
    message = instance.message.text if instance and instance.message else None
    texts = [scan.rule.full_description or "", message or ""]
    return SecurityAlertJob(
        **common,
        summary=sanitize(scan.rule.description, limit=500),
        description=sanitize("\n\n".join(t for t in texts if t), limit=TEXT_LIMIT),
        tool=scan.tool.name,
        rule=scan.rule.id,
        path=place.path if place is not None else None,
        start_line=place.start_line if place is not None else None,
        end_line=place.end_line if place is not None else None,
    )


def _register() -> None:
    for event, actions in OPENS.items():
        for action in actions:
            router.add(on_alert_opened, event, action=action)
    for event, actions in CLOSES.items():
        for action in actions:
            router.add(on_alert_closed, event, action=action)


async def default_branch_policy(gh: GitHubClient, ctx: HandlerContext, repo: str) -> Policy:
    """The policy as the default branch has it; :class:`RepoConfigError` when it does
    not load (a handler reads the default under it, as app/webhooks/lifecycle.py): the
    operator's (``PATCHWARDEN_DEFAULT_POLICY``) where one is set, as sessions do."""
    text = await Publisher(gh, repo, bot_login=ctx.bot_login).default_branch_file(REPO_SOURCE)
    return load_policy(default_policy_text(ctx.default_policy), text, fixers=KNOWN)


async def on_alert_opened(
    event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext, read: Envelope
) -> None:
    data = typed(MODELS[event.event], read)
    repo, number, action = data.repository.full_name, data.alert.number, data.action or ""
    actor = data.sender.login if data.sender else None
    installation = data.installation.id if data.installation else None
    name = f"{NAMES[event.event]} #{number} {action}"
    details = {"via": event.event, "alert": number, "action": action}
    try:
        policy = await default_branch_policy(gh, ctx, repo)
    except RepoConfigError as exc:
        reason = f"{name}: the policy does not load ({exc}); no fix until it does"
        await ctx.audit("trigger.failed_closed", actor=actor, repo=repo, reason=reason)
        return
    source = source_of(event.event)
    rules = policy.alerts.dependabot if source == "dependabot" else policy.alerts.code_scanning
    why_not = screen(event.event, data, rules)
    if why_not is not None:
        reason = f"{name}: {why_not}; acknowledged, no fix"
        await ctx.audit("trigger.ignored", actor=actor, repo=repo, reason=reason, details=details)
        return
    prefix = SecurityAlertJob.prefix(repo, source, number)
    earlier = await ctx.store.queue.jobs_with_key(SecurityAlertJob.kind, prefix)
    live = [j for j in earlier if j.state in (JobState.QUEUED, JobState.RUNNING)]
    if live:
        reason = f"{name}: job {live[0].id} is on it already"
        await ctx.audit("trigger.ignored", actor=actor, repo=repo, reason=reason, details=details)
        return
    model = getattr(rules, "model", False)
    round_ = 1 if action in FIRST else len(earlier) + 1
    kind = job_for(event.event, data, rules=rules, round=round_, model=model)
    job, created = await ctx.enqueue(kind, installation_id=installation, actor=actor)
    if not created:
        reason = f"{name}: job {job.id} had it already"
        await ctx.audit("trigger.ignored", actor=actor, repo=repo, reason=reason, details=details)
        return
    reason = f"{name} ({kind.severity}): a fix is queued (`alerts.{source}.mode`: {rules.mode})"
    await ctx.audit("trigger.accepted", actor=actor, repo=repo, reason=reason, details=details)


async def on_alert_closed(
    event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext, read: Envelope
) -> None:
    data = typed(MODELS[event.event], read)
    repo, number, action = data.repository.full_name, data.alert.number, data.action or ""
    actor = data.sender.login if data.sender else None
    name = f"{NAMES[event.event]} #{number}"
    prefix = SecurityAlertJob.prefix(repo, source_of(event.event), number)
    cancelled = await ctx.store.queue.cancel_queued(
        SecurityAlertJob.kind, prefix, reason=f"{name} {action}", delivery_id=ctx.delivery_id
    )
    closed = await _close_pulls(gh, ctx, data, prefix=prefix, name=name)
    merged = await _closed_after_merge(ctx, prefix, action) if action == "fixed" else []
    said = [f"the merge of #{n} fixed it" for n in merged]
    if cancelled:
        ids = ", ".join(str(i) for i in cancelled)
        said.append(f"{plural(len(cancelled), 'queued job')} cancelled ({ids})")
    if closed:
        said.append("closed " + ", ".join(f"#{n}" for n in closed))
    await ctx.audit(
        "security_alert.closed",
        actor=actor,
        repo=repo,
        reason=f"{name} {action}: {'; '.join(said) or 'no work queued, no pull request open'}",
        details={"via": event.event, "alert": number, "action": action, "cancelled": cancelled},
    )


async def _closed_after_merge(ctx: HandlerContext, prefix: str, action: str) -> list[int]:
    """Patchwarden's merged fixes of the alert: GitHub closed it after they merged (the
    manifest no longer matches), which their outcomes record; their numbers."""
    merged = []
    for job in await ctx.store.queue.jobs_with_key(SecurityAlertJob.kind, prefix):
        outcome = await ctx.store.learning.get_outcome(job.id)
        if outcome is None or outcome.merged_at is None or outcome.pr_number is None:
            continue
        if "alert_closed" not in outcome.details:
            closed = {"action": action, "at": time.time(), "delivery": ctx.delivery_id}
            details = {**outcome.details, "alert_closed": closed}
            await ctx.store.learning.save_outcome(replace(outcome, details=details))
        merged.append(outcome.pr_number)
    return merged


async def _close_pulls(
    gh: GitHubClient, ctx: HandlerContext, data: AlertEvent, *, prefix: str, name: str
) -> list[int]:
    """Close Patchwarden's open pull requests for the alert (the outcome of each of its
    jobs names the pull request it opened), saying why on each; the numbers closed."""
    pub = Publisher(gh, data.repository.full_name, bot_login=ctx.bot_login)
    action = data.action or ""
    by = f" by @{data.sender.login}" if data.sender and action in BY_PEOPLE else ""
    body = (
        f"Closing: {name} ({data.alert.html_url}) was {WORDS.get(action, action)}{by}, so "
        "this change is no longer needed. Reopen it if you still want it."
    )
    closed = []
    for job in await ctx.store.queue.jobs_with_key(SecurityAlertJob.kind, prefix):
        outcome = await ctx.store.learning.get_outcome(job.id)
        if outcome is None or outcome.pr_number is None or outcome.merged_at is not None:
            continue
        key = f"alert-closed:{prefix}{job.id}"
        if await close_with_comment(pub, outcome.pr_number, key=key, body=body):
            closed.append(outcome.pr_number)
    return closed


_register()
