"""``security_alert``: the fix of a Dependabot or code scanning alert (issue 34).

A Dependabot alert runs a session with the dependency fixer (no model,
:mod:`app.fixers.dependency`): the package raised past the advisory in every manifest,
the patched tree's own setup, the tests on both trees, the policy's score (the bump's
size, ``alerts.dependabot``), and a pull request that leads with the advisory. Nobody
waits on an issue thread: what happens is in the audit log and the pull request.

The code scanning fixer (part 3 of the issue) is not built yet: such a job ends
honestly, changing nothing and opening no pull request; its outcome is ``not-built``
and ``security_alert.not_built`` is audited, saying which alert it was. The job
succeeds: nothing is retried and nobody is told a job failed. A paused repository
refuses either, as it refuses any job.

:func:`security_task` is the session's task the fixers will read: the advisory's or
the rule's text (sanitised at intake) as untrusted documents, fenced before any
prompt, and the alert's place in the code.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.fixers.dependency import DependencyFixer
from app.jobs.context import JobContext, Running
from app.jobs.kinds import SecurityAlertJob
from app.jobs.report import Silent
from app.jobs.to_pull import PullOptions, session_to_pull
from app.policy.score import Trigger
from app.sessions.session import Advisory, Document, Place, Task
from app.store import Job

NOT_BUILT = "the code scanning fixer is not built yet (issue 34, part 3)"


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
    advisory = None
    if alert.source == "dependabot":
        advisory = Advisory(
            package=alert.package,
            ecosystem=alert.ecosystem,
            manifest=alert.manifest,
            vulnerable_range=alert.vulnerable_range,
            first_patched=alert.first_patched,
            id=alert.advisory,
            cve=alert.cve,
            severity=alert.severity,
            url=alert.url,
            summary=alert.summary,
        )
    return Task(
        title=title[:200],
        kind="alert",
        documents=tuple(documents),
        places=places,
        advisory=advisory,
    )


async def security_alert_job(ctx: JobContext, job: Job) -> dict[str, Any]:
    run = Running.start(ctx, job, SecurityAlertJob)
    alert = run.kind
    outcome = await run.outcome(kind="security_alert", trigger=alert.source)
    refused = await run.refused_if_paused(outcome, Silent(), "Not started")
    if refused:
        return refused
    if alert.source == "dependabot":
        await run.audit("security_alert.fixing", reason=describe(alert), alert=alert.number)
        return await session_to_pull(
            run,
            outcome,
            task=security_task(alert),
            fixer=DependencyFixer(),
            report=Silent(),
            options=PullOptions(
                trigger=Trigger("alert"),
                links=(f"Fixes Dependabot alert #{alert.number}: {alert.url}",),
            ),
        )
    reason = f"{describe(alert)}: {NOT_BUILT}; nothing changed, no pull request"
    await ctx.store.save_outcome(
        replace(outcome, status="not-built", title=security_task(alert).title)
    )
    await run.audit("security_alert.not_built", reason=reason, alert=alert.number, url=alert.url)
    return {"status": "not-built", "reason": reason}
