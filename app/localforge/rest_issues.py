"""LocalForge's REST handlers for issues: issues, comments, reactions, labels."""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from app.localforge.api_errors import ApiError, custom_error

if TYPE_CHECKING:
    pass


from app.localforge.rest_call import Answer, Call, op, validation


# -- issues, comments, reactions, labels ---------------------------------------------
@op("issues/create")
async def create_issue(call: Call) -> Answer:
    repo = call.repo
    labels = [_label_name(x) for x in call.field("labels") or []]
    issue = call.forge.open_issue(
        repo.full_name,
        call.field("title"),
        call.field("body") or "",
        author=call.bot.login,
        labels=labels,
    )
    call.forge.hooks.emit(
        "issues",
        call.forge.hooks.event(
            repo, "opened", call.bot, issue=call.forge.rules.issue_json(repo, issue)
        ),
    )
    return Answer(201, call.forge.rules.issue_json(repo, issue))


def _label_name(value: Any) -> str:
    return str(value["name"] if isinstance(value, dict) else value)


@op("issues/get")
async def get_issue(call: Call) -> Answer:
    repo = call.repo
    return Answer(200, call.forge.rules.issue_json(repo, call.issue(repo)))


@op("issues/update")
async def update_issue(call: Call) -> Answer:
    repo = call.repo
    issue = call.issue(repo)
    state = call.field("state")
    moving = state in {"open", "closed"} and state != issue.state
    if moving and issue.is_pull and repo.pulls[issue.number].merged:
        raise custom_error("Issue", "state cannot be changed. The pull request has been merged.")
    for name in ("title", "body"):
        value = call.field(name)
        if value is not None:
            setattr(issue, name, value)
    labels = call.field("labels")
    if labels is not None:
        issue.labels = [call.forge.rules.label(repo, _label_name(x)) for x in labels]
    issue.updated_at = time.time()
    if moving:
        reason = call.field("state_reason") or ("completed" if state == "closed" else "reopened")
        if state == "closed" and not issue.is_pull:
            call.forge.rules.close_issue(
                repo, issue, call.bot, reason=reason
            )  # sends issues.closed
        else:
            issue.state, issue.state_reason, issue.closed_by_pull = state, reason, None
            issue.closed_at = time.time() if state == "closed" else None
    return Answer(200, call.forge.rules.issue_json(repo, issue))


@op("issues/list-comments")
async def list_comments(call: Call) -> Answer:
    repo = call.repo
    issue = call.issue(repo)
    comments = issue.comments
    since = call.query.get("since")
    if since:
        try:
            cutoff = datetime.fromisoformat(since.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise ApiError(
                422, f"Invalid request.\n\n{since!r} is not a timestamp (ISO 8601)."
            ) from None
        comments = [c for c in comments if c.updated_at >= cutoff]
    chunk, headers = call.page(comments)
    return Answer(200, [call.forge.render.issues.comment(repo, c) for c in chunk], headers)


@op("issues/create-comment")
async def create_comment(call: Call) -> Answer:
    repo = call.repo
    issue = call.issue(repo)
    comment = call.forge.rules.new_comment(repo, issue, call.field("body"), call.bot, via_app=True)
    call.forge.emit_comment(repo, comment, "created", call.bot)
    return Answer(201, call.forge.render.issues.comment(repo, comment))


@op("issues/update-comment")
async def update_comment(call: Call) -> Answer:
    repo = call.repo
    comment = repo.comment(int(call.params["comment_id"]))
    if comment is None:
        raise ApiError(404, "Not Found")
    old = comment.body
    comment.body = call.field("body")
    comment.updated_at = time.time()
    if old != comment.body:
        call.forge.emit_comment(repo, comment, "edited", call.bot, changes={"body": {"from": old}})
    return Answer(200, call.forge.render.issues.comment(repo, comment))


@op("reactions/create-for-issue")
async def react_issue(call: Call) -> Answer:
    repo = call.repo
    issue = call.issue(repo)
    reaction, created = call.forge.rules.react(issue.reactions, call.field("content"), call.bot)
    return Answer(201 if created else 200, call.forge.render.issues.reaction(reaction))


@op("reactions/create-for-issue-comment")
async def react_comment(call: Call) -> Answer:
    repo = call.repo
    comment = repo.comment(int(call.params["comment_id"]))
    if comment is None:
        raise ApiError(404, "Not Found")
    reaction, created = call.forge.rules.react(comment.reactions, call.field("content"), call.bot)
    return Answer(201 if created else 200, call.forge.render.issues.reaction(reaction))


@op("issues/get-label")
async def get_label(call: Call) -> Answer:
    repo = call.repo
    label = repo.labels.get(call.params["name"].lower())
    if label is None:
        raise ApiError(404, "Not Found")
    return Answer(200, call.forge.render.issues.label(repo, label))


@op("issues/create-label")
async def create_label(call: Call) -> Answer:
    repo = call.repo
    name = call.field("name")
    if name.lower() in repo.labels:
        raise validation("Label", "name", "already_exists")
    label = call.forge.rules.label(repo, name)
    label.color = (call.field("color") or "ededed").lstrip("#")
    label.description = call.field("description")
    return Answer(201, call.forge.render.issues.label(repo, label))


@op("issues/add-labels")
async def add_labels(call: Call) -> Answer:
    repo = call.repo
    issue = call.issue(repo)
    body = call.body
    names = body if isinstance(body, list) else call.field("labels", [])
    if not isinstance(names, list) or not names:
        raise ApiError(422, "Invalid request.\n\nNo labels were given.")
    for name in [_label_name(x) for x in names]:
        label = call.forge.rules.label(repo, name)
        if label in issue.labels:
            continue
        issue.labels.append(label)
        if not issue.is_pull:
            call.forge.hooks.emit(
                "issues",
                call.forge.hooks.event(
                    repo,
                    "labeled",
                    call.bot,
                    issue=call.forge.rules.issue_json(repo, issue),
                    label=call.forge.render.issues.label(repo, label),
                ),
            )
    return Answer(200, [call.forge.render.issues.label(repo, x) for x in issue.labels])


@op("issues/remove-label")
async def remove_label(call: Call) -> Answer:
    repo = call.repo
    issue = call.issue(repo)
    name = call.params["name"].lower()
    kept = [x for x in issue.labels if x.name.lower() != name]
    if len(kept) == len(issue.labels):
        raise ApiError(404, "Label does not exist")
    issue.labels = kept
    return Answer(200, [call.forge.render.issues.label(repo, x) for x in issue.labels])
