"""Check suites and runs as GitHub announces them: the suite a run belongs to, and the
``check_run`` and ``check_suite`` deliveries when a run changes (the double's CI,
app/localforge/forge_ci.py, and the REST handlers both report through these)."""

from __future__ import annotations

import time

from app.localforge.deliveries import Outbox
from app.localforge.state import CheckRun, CheckSuite, Issue, Pull, Repo, User


def open_pulls_at(repo: Repo, sha: str) -> list[tuple[Pull, Issue]]:
    return [
        (p, repo.issues[p.number])
        for p in repo.pulls.values()
        if p.head_sha == sha and repo.issues[p.number].state == "open"
    ]


def suite_for(hooks: Outbox, repo: Repo, sha: str, app_slug: str, branch: str | None) -> CheckSuite:
    for suite in repo.check_suites:
        if suite.head_sha == sha and suite.app_slug == app_slug:
            return suite
    suite = CheckSuite(hooks.state.next_id(), sha, branch, app_slug, after=sha)
    repo.check_suites.append(suite)
    return suite


async def check_run_changed(
    hooks: Outbox, repo: Repo, run: CheckRun, action: str, sender: User
) -> None:
    """Send check_run (and, when its suite is done, check_suite) deliveries."""
    pulls = open_pulls_at(repo, run.head_sha)
    hooks.emit(
        "check_run",
        hooks.event(
            repo, action, sender, check_run=hooks.state.render.checks.check_run(repo, run, pulls)
        ),
    )
    suite = run.suite
    runs = [r for r in repo.check_runs if r.suite is suite]
    if action == "completed" and all(r.status == "completed" for r in runs):
        order = [
            "action_required",
            "cancelled",
            "timed_out",
            "failure",
            "neutral",
            "skipped",
            "success",
        ]
        suite.status = "completed"
        suite.conclusion = min((r.conclusion or "success" for r in runs), key=order.index)
        suite.updated_at = time.time()
        head = repo.git.commit(suite.head_sha)
        hooks.emit(
            "check_suite",
            hooks.event(
                repo,
                "completed",
                sender,
                check_suite=hooks.state.render.checks.check_suite(
                    repo, suite, len(runs), pulls, head_commit=head
                ),
            ),
        )
