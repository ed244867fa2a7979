"""``security_alert``: the fix of a Dependabot or code scanning alert.

A Dependabot alert runs a session with the dependency fixer (no model,
:mod:`app.fixers.dependency`): the package raised past the advisory in every manifest,
the patched tree's own setup, the tests on both trees, the policy's score (the bump's
size, ``alerts.dependabot``), and a pull request that leads with the advisory. Nobody
waits on an issue thread: what happens is in the audit log and the pull request.

A code scanning alert runs the code scanning fixer (:mod:`app.fixers.scanning`): a
semgrep rule's own autofix at the alert's place only, checked by running the rule
again; a model's fix only where ``alerts.code_scanning.model`` lets it. A fixer that
cannot fix the alert says why (the audit log, the outcome) and nothing is opened. A
paused repository refuses either, as it refuses any job.

:func:`security_task` is the session's task the fixers will read: the advisory's or
the rule's text (sanitised at intake) as untrusted documents, fenced before any
prompt, and the alert's place in the code.
"""

from __future__ import annotations

from typing import Any

from app.contract.kinds import SecurityAlertJob
from app.fixers.choose import make_fixer
from app.fixers.dependency import DependencyFixer
from app.fixers.interface import Fixer
from app.fixers.scanning import ScanningFixer
from app.jobs.context import JobContext, Running
from app.jobs.report import Silent
from app.jobs.to_pull import PullOptions, session_to_pull
from app.policy.score import Trigger
from app.sessions.task import Advisory, Document, Place, ScanAlert, Task
from app.store import Job


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
    advisory, scan = None, None
    if alert.source == "code_scanning" and alert.path and alert.start_line:
        scan = ScanAlert(
            tool=alert.tool,
            rule=alert.rule,
            path=alert.path,
            start_line=alert.start_line,
            end_line=alert.end_line,
            number=alert.number,
        )
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
        kind="fix",  # tests judged as a fix's (an "alert" task is there to mend failing ones)
        documents=tuple(documents),
        places=places,
        advisory=advisory,
        scan=scan,
    )


async def security_alert_job(ctx: JobContext, job: Job) -> dict[str, Any]:
    run = Running.start(ctx, job, SecurityAlertJob)
    alert = run.kind
    outcome = await run.outcome(kind="security_alert", trigger=alert.source)
    refused = await run.refused_if_paused(outcome, Silent(), "Not started")
    if refused:
        return refused
    await run.audit("security_alert.fixing", reason=describe(alert), alert=alert.number)
    fixer: Fixer
    if alert.source == "dependabot":
        fixer, name = DependencyFixer(), "Dependabot alert"
    else:
        # A model writes a fix only where the policy lets it (`alerts.code_scanning.model`).
        model = None
        if alert.model and ctx.settings.llm_configured:
            model = make_fixer("llm", ctx.settings, ledger=ctx.store.repos, audit=run.audit)
        fixer, name = ScanningFixer(model=model), "code scanning alert"
    return await session_to_pull(
        run,
        outcome,
        task=security_task(alert),
        fixer=fixer,
        report=Silent(),
        options=PullOptions(
            trigger=Trigger("alert", alert=alert.source),
            # No `#`: GitHub would link (and mention) the repository's issue of that number.
            links=(f"Fixes [{name} {alert.number}]({alert.url})",),
        ),
    )
