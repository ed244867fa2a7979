"""LocalForge's REST handlers for checks and commit statuses."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from app.localforge.api_errors import ApiError
from app.localforge.check_events import check_run_changed, open_pulls_at, suite_for
from app.localforge.state import (
    CheckOutput,
    CheckRun,
    CommitStatus,
    Repo,
)

if TYPE_CHECKING:
    pass


from app.localforge.rest_call import Answer, Call, op, validation


# -- checks and statuses -----------------------------------------------------------
def _apply_run_fields(run: CheckRun, call: Call) -> None:
    status = call.field("status")
    conclusion = call.field("conclusion")
    if conclusion is not None:
        status = "completed"
    if status == "completed" and conclusion is None and run.conclusion is None:
        raise ApiError(422, 'Invalid request.\n\n"conclusion" wasn\'t supplied.')
    if status is not None:
        run.status = status
    if conclusion is not None:
        run.conclusion = conclusion
        run.completed_at = time.time()
    output = call.field("output")
    if isinstance(output, dict):
        run.output = CheckOutput(output.get("title"), output.get("summary"), output.get("text"))
    for name in ("details_url", "external_id", "name"):
        value = call.field(name)
        if value is not None:
            setattr(run, name, value)


@op("checks/create")
async def create_check_run(call: Call) -> Answer:
    repo = call.repo
    sha = call.field("head_sha")
    if repo.git.resolve(sha) != sha:
        raise validation("CheckRun", "head_sha")
    suite = suite_for(call.forge.hooks, repo, sha, call.forge.state.app_slug, None)
    run = CheckRun(
        call.forge.state.next_id(), call.field("name"), sha, suite, call.forge.state.app_slug
    )
    _apply_run_fields(run, call)
    repo.check_runs.append(run)
    suite.status = "in_progress" if run.status != "completed" else suite.status
    await check_run_changed(call.forge.hooks, repo, run, "created", call.bot)
    if run.status == "completed":
        await check_run_changed(call.forge.hooks, repo, run, "completed", call.bot)
    return Answer(201, call.forge.render.checks.check_run(repo, run, open_pulls_at(repo, sha)))


def _run(call: Call, repo: Repo) -> CheckRun:
    wanted = int(call.params["check_run_id"])
    for run in repo.check_runs:
        if run.id == wanted:
            return run
    raise ApiError(404, "Not Found")


@op("checks/get")
async def get_check_run(call: Call) -> Answer:
    repo = call.repo
    run = _run(call, repo)
    return Answer(
        200, call.forge.render.checks.check_run(repo, run, open_pulls_at(repo, run.head_sha))
    )


@op("checks/update")
async def update_check_run(call: Call) -> Answer:
    repo = call.repo
    run = _run(call, repo)
    if run.app_slug != call.forge.state.app_slug:
        raise ApiError(
            403,
            f"Invalid app_id `{call.forge.state.app_id}` - check run can only be modified by the "
            "GitHub App that created it.",
        )
    was_completed = run.status == "completed"
    _apply_run_fields(run, call)
    if run.status == "completed" and not was_completed:
        await check_run_changed(call.forge.hooks, repo, run, "completed", call.bot)
    return Answer(
        200, call.forge.render.checks.check_run(repo, run, open_pulls_at(repo, run.head_sha))
    )


@op("checks/list-for-ref")
async def list_check_runs(call: Call) -> Answer:
    repo = call.repo
    sha = call.sha(repo, call.params["ref"])
    runs = repo.runs_for(sha)
    name = call.query.get("check_name")
    status = call.query.get("status")
    if call.query.get("filter", "latest") == "latest":
        latest: dict[str, CheckRun] = {}
        for run in runs:
            latest[run.name] = run
        runs = list(latest.values())
    runs = [r for r in runs if (not name or r.name == name) and (not status or r.status == status)]
    chunk, headers = call.page(runs)
    pulls = open_pulls_at(repo, sha)
    return Answer(
        200,
        {
            "total_count": len(runs),
            "check_runs": [call.forge.render.checks.check_run(repo, r, pulls) for r in chunk],
        },
        headers,
    )


@op("checks/list-suites-for-ref")
async def list_check_suites(call: Call) -> Answer:
    repo = call.repo
    sha = call.sha(repo, call.params["ref"])
    suites = [s for s in repo.check_suites if s.head_sha == sha]
    chunk, headers = call.page(suites)
    pulls = open_pulls_at(repo, sha)
    head = repo.git.commit(sha)
    body = [
        call.forge.render.checks.check_suite(
            repo, s, sum(1 for r in repo.check_runs if r.suite is s), pulls, head_commit=head
        )
        for s in chunk
    ]
    return Answer(200, {"total_count": len(suites), "check_suites": body}, headers)


@op("repos/get-combined-status-for-ref")
async def combined_status(call: Call) -> Answer:
    repo = call.repo
    sha = repo.commit_of(call.params["ref"])
    if sha is None:
        raise ApiError(404, "Not Found")
    statuses = [s for s in repo.statuses if s.sha == sha]
    return Answer(200, call.forge.render.checks.combined_status(repo, sha, statuses))


@op("repos/create-commit-status")
async def create_status(call: Call) -> Answer:
    repo = call.repo
    sha = call.params["sha"]
    if repo.git.resolve(sha) != sha:
        raise validation("Status", "sha")
    status = CommitStatus(
        call.forge.state.next_id(),
        sha,
        call.field("state"),
        call.field("context") or "default",
        call.field("description"),
        call.field("target_url"),
        call.bot,
    )
    repo.statuses.append(status)
    return Answer(201, call.forge.render.checks.commit_status(repo, status))
