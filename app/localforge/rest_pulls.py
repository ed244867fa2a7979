"""LocalForge's REST handlers for pull requests: list, open, update, merge, files,
reviews and review requests."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from app.localforge.api_errors import ApiError
from app.localforge.state import (
    Repo,
)

if TYPE_CHECKING:
    pass


from app.localforge.rest_call import Answer, Call, op, validation


# -- pull requests ---------------------------------------------------------------
def _head_branch(repo: Repo, head: str) -> str:
    owner, sep, branch = head.partition(":")
    if sep and owner != repo.owner.login:
        raise validation("PullRequest", "head")
    return branch if sep else head


@op("pulls/list")
async def list_pulls(call: Call) -> Answer:
    repo = call.repo
    state = call.query.get("state", "open")
    head = call.query.get("head")
    base = call.query.get("base")
    found = []
    for pull in sorted(repo.pulls.values(), key=lambda p: -p.number):
        issue = repo.issues[pull.number]
        if state != "all" and issue.state != state:
            continue
        if head and pull.head != _head_branch(repo, head):
            continue
        if base and pull.base != base:
            continue
        found.append((pull, issue))
    chunk, headers = call.page(found)
    return Answer(200, [call.forge.render.pulls.pull_simple(repo, p, i) for p, i in chunk], headers)


@op("pulls/create")
async def create_pull(call: Call) -> Answer:
    repo = call.repo
    if call.field("title") is None:
        raise validation("PullRequest", "title", "missing_field")
    pull = await call.forge.rules.create_pull(
        repo,
        _head_branch(repo, call.field("head")),
        call.field("base"),
        call.field("title"),
        call.field("body"),
        call.bot,
        draft=bool(call.field("draft", False)),
    )
    return Answer(201, call.forge.rules.pull_json(repo, pull))


@op("pulls/get")
async def get_pull(call: Call) -> Answer:
    repo = call.repo
    pull = call.pull(repo)
    call.forge.rules.refresh_pull(repo, pull)
    return Answer(200, call.forge.rules.pull_json(repo, pull))


@op("pulls/update")
async def update_pull(call: Call) -> Answer:
    repo = call.repo
    pull = call.pull(repo)
    issue = repo.issues[pull.number]
    changes: dict[str, Any] = {}
    for name in ("title", "body"):
        value = call.field(name)
        if value is not None and value != getattr(issue, name):
            changes[name] = {"from": getattr(issue, name) or ""}
            setattr(issue, name, value)
    base = call.field("base")
    if base is not None and base != pull.base:
        if repo.git.resolve(f"refs/heads/{base}") is None:
            raise validation("PullRequest", "base")
        changes["base"] = {"ref": {"from": pull.base}, "sha": {"from": pull.base_sha}}
        pull.base = base
        call.forge.rules.refresh_pull(repo, pull)
    issue.updated_at = time.time()
    state = call.field("state")
    if state == "closed" and issue.state == "open":
        await call.forge.rules.close_pull(repo, pull, call.bot)
    elif state == "open" and issue.state == "closed" and not pull.merged:
        issue.state, issue.closed_at = "open", None
    if changes:
        call.forge.hooks.emit(
            "pull_request",
            call.forge.hooks.event(
                repo,
                "edited",
                call.bot,
                number=pull.number,
                changes=changes,
                pull_request=call.forge.rules.pull_json(repo, pull),
            ),
        )
    return Answer(200, call.forge.rules.pull_json(repo, pull))


@op("pulls/merge")
async def merge_pull(call: Call) -> Answer:
    repo = call.repo
    pull = call.pull(repo)
    method = call.field("merge_method", "merge")
    sha = await call.forge.rules.merge_pull(
        repo,
        pull,
        sha=call.field("sha"),
        method=method,
        title=call.field("commit_title"),
        message=call.field("commit_message"),
        user=call.bot,
    )
    return Answer(200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"})


@op("pulls/list-files")
async def list_pull_files(call: Call) -> Answer:
    repo = call.repo
    pull = call.pull(repo)
    call.forge.rules.refresh_pull(repo, pull)
    base = pull.base_sha
    if pull.merged and pull.merge_commit_sha:
        base = repo.git.commit(pull.merge_commit_sha).parents[0]
    files = repo.git.diff_files(base, pull.head_sha)
    chunk, headers = call.page(files)
    return Answer(
        200, [call.forge.render.pulls.pull_file(repo, pull.head_sha, f) for f in chunk], headers
    )


@op("pulls/list-reviews")
async def list_reviews(call: Call) -> Answer:
    repo = call.repo
    pull = call.pull(repo)
    chunk, headers = call.page(pull.reviews)
    return Answer(200, [call.forge.render.pulls.review(repo, pull, r) for r in chunk], headers)


@op("pulls/create-review")
async def create_review(call: Call) -> Answer:
    repo = call.repo
    pull = call.pull(repo)
    event = call.field("event")
    states = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}
    if event is not None and event not in states:
        raise validation("PullRequestReview", "event")
    author = repo.issues[pull.number].user
    if event in {"APPROVE", "REQUEST_CHANGES"} and author.login == call.bot.login:
        verb = "approve" if event == "APPROVE" else "request changes on"
        raise ApiError(
            422, f"Unprocessable Entity: Can not {verb} your own pull request", errors=[]
        )
    body = call.field("body") or ""
    if event in {"REQUEST_CHANGES", "COMMENT"} and not body:
        raise ApiError(422, f"Unprocessable Entity: Body is required for {event}", errors=[])
    state = states.get(event or "", "PENDING")
    review = call.forge.submit_review(
        repo.full_name, pull.number, user=call.bot, state=state, body=body
    )
    return Answer(200, call.forge.render.pulls.review(repo, pull, review))


@op("pulls/request-reviewers")
async def request_reviewers(call: Call) -> Answer:
    repo = call.repo
    pull = call.pull(repo)
    call.forge.rules.request_reviewers(
        repo,
        pull,
        call.field("reviewers") or [],
        user=call.bot,
        teams=call.field("team_reviewers") or [],
    )
    return Answer(201, call.forge.render.pulls.pull_simple(repo, pull, repo.issues[pull.number]))
