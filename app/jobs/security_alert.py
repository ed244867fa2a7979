"""``security_alert``: the fix of a Dependabot or code scanning alert (issue 34).

The fixers are not built yet: the dependency bump without a model (part 2 of the issue)
and the code scanning fixer (part 3). Until they are, the job ends honestly. A paused
repository refuses it as it refuses any job; otherwise it changes nothing and opens no
pull request, records its outcome as ``not-built`` and audits
``security_alert.not_built``, saying which alert it was and what will fix it. The job
succeeds: nothing is retried and nobody is told a job failed.

:func:`security_task` is the session's task the fixers will read: the advisory's or
the rule's text (sanitised at intake) as untrusted documents, fenced before any
prompt, and the alert's place in the code.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.jobs.context import JobContext, Running
from app.jobs.kinds import SecurityAlertJob
from app.jobs.report import Silent
from app.sessions.session import Document, Place, Task
from app.store import Job

NOT_BUILT = {
    "dependabot": "the dependency-update fixer is not built yet (issue 34, part 2)",
    "code_scanning": "the code scanning fixer is not built yet (issue 34, part 3)",
}


def describe(alert: SecurityAlertJob) -> str:
    """The alert in one line of Patchwarden's words (names and versions, not texts)."""
    if alert.source == "dependabot":
        where = f" in {alert.manifest}" if alert.manifest else ""
        fixed = f", fixed in {alert.first_patched}" if alert.first_patched else ", no fix yet"
        return (
            f"Dependabot alert #{alert.number} ({alert.severity}, {alert.advisory}): "
            f"{alert.ecosystem} package {alert.package}{where}, vulnerable {alert.vulnerable_range}"
            f"{fixed}"
        )
    at = f" at {alert.path}:{alert.start_line}" if alert.path and alert.start_line else ""
    return f"code scanning alert #{alert.number} ({alert.severity}): {alert.tool} {alert.rule}{at}"


def security_task(alert: SecurityAlertJob) -> Task:
    """The session's task for an alert: its texts are their authors' (untrusted data)."""
    if alert.source == "dependabot":
        title = f"Bump {alert.package} past {alert.vulnerable_range} ({alert.advisory})"
        source = f"advisory {alert.advisory}"
    else:
        title = f"Fix {alert.tool} {alert.rule} (code scanning alert #{alert.number})"
        source = f"{alert.tool} rule {alert.rule}"
    documents = [Document(f"{source}: summary", alert.summary)] if alert.summary else []
    if alert.description:
        documents.append(Document(f"{source}: description", alert.description))
    places = (Place(alert.path, alert.start_line),) if alert.path else ()
    return Task(title=title[:200], kind="alert", documents=tuple(documents), places=places)


async def security_alert_job(ctx: JobContext, job: Job) -> dict[str, Any]:
    run = Running.start(ctx, job, SecurityAlertJob)
    alert = run.kind
    outcome = await run.outcome(kind="security_alert", trigger=alert.source)
    refused = await run.refused_if_paused(outcome, Silent(), "Not started")
    if refused:
        return refused
    reason = f"{describe(alert)}: {NOT_BUILT[alert.source]}; nothing changed, no pull request"
    await ctx.store.save_outcome(
        replace(outcome, status="not-built", title=security_task(alert).title)
    )
    await run.audit("security_alert.not_built", reason=reason, alert=alert.number, url=alert.url)
    return {"status": "not-built", "reason": reason}
