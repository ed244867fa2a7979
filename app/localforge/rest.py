"""LocalForge's REST handlers, one per GitHub operation (by OpenAPI operationId).

The server has already matched the operation and checked the request against its
schema; a handler does what GitHub does and answers in GitHub's shapes. Refusals
raise :class:`ApiError` with GitHub's status and message.

Over ~400 lines on purpose: a table of small handlers, one per operation, registered in
``HANDLERS``; an operation is found by searching for its operationId.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

from aiohttp import web

from app.localforge.api_errors import ApiError, custom_error
from app.localforge.check_events import check_run_changed, open_pulls_at, suite_for
from app.localforge.contract import Operation
from app.localforge.state import (
    ROLES,
    CheckOutput,
    CheckRun,
    CommitStatus,
    Issue,
    Pull,
    Repo,
    User,
)

if TYPE_CHECKING:
    from app.localforge.world import World


@dataclass
class Auth:
    kind: str  # "installation" | "app" | "anonymous" (ANONYMOUS operations only)
    installation_id: int | None = None


@dataclass
class Answer:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[["Call"], Awaitable[Answer]]
HANDLERS: dict[str, Handler] = {}
T = TypeVar("T")


def op(op_id: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        HANDLERS[op_id] = handler
        return handler

    return register


@dataclass
class Call:
    forge: World
    op: Operation
    params: dict[str, str]
    query: Mapping[str, str]
    body: Any
    auth: Auth
    request: web.Request

    @property
    def repo(self) -> Repo:
        """The repository in the path, if this installation may see it (404 otherwise)."""
        repo = self.forge.repos.get(f"{self.params['owner']}/{self.params['repo']}")
        if self.auth.kind != "installation":
            raise ApiError(403, "Resource not accessible by integration")
        if repo is None or repo.installation_id != self.auth.installation_id:
            raise ApiError(404, "Not Found")
        return repo

    @property
    def bot(self) -> User:
        return self.forge.bot

    def field(self, name: str, default: Any = None) -> Any:
        return self.body.get(name, default) if isinstance(self.body, dict) else default

    def issue(self, repo: Repo, key: str = "issue_number") -> Issue:
        issue = repo.issues.get(int(self.params[key]))
        if issue is None:
            raise ApiError(404, "Not Found")
        return issue

    def pull(self, repo: Repo) -> Pull:
        pull = repo.pulls.get(int(self.params["pull_number"]))
        if pull is None:
            raise ApiError(404, "Not Found")
        return pull

    def page(self, items: Sequence[T]) -> tuple[list[T], dict[str, str]]:
        """One page of ``items`` (``per_page``, ``page``) and GitHub's Link header."""
        per_page = min(max(int(self.query.get("per_page", 30)), 1), 100)
        page = max(int(self.query.get("page", 1)), 1)
        chunk = list(items[(page - 1) * per_page : page * per_page])
        last = max((len(items) + per_page - 1) // per_page, 1)
        links = []
        base = f"{self.forge.url}{self.request.path}"
        for rel, number in (("next", page + 1), ("last", last), ("prev", page - 1), ("first", 1)):
            if (rel in {"next", "last"} and page < last) or (rel in {"prev", "first"} and page > 1):
                query = dict(self.query) | {"per_page": str(per_page), "page": str(number)}
                links.append(f'<{base}?{urlencode(query)}>; rel="{rel}"')
        return chunk, ({"Link": ", ".join(links)} if links else {})

    def sha(self, repo: Repo, ref: str) -> str:
        sha = self.forge.resolve(repo, ref)
        if sha is None:
            raise ApiError(422, f"No commit found for SHA: {ref}")
        return sha


def _validation(resource: str, field: str, code: str = "invalid") -> ApiError:
    return ApiError(
        422, "Validation Failed", errors=[{"resource": resource, "field": field, "code": code}]
    )


# -- apps ---------------------------------------------------------------------
def _require_app(call: Call) -> None:
    if call.auth.kind != "app":
        raise ApiError(401, "A JSON web token could not be decoded")


@op("apps/get-authenticated")
async def get_app(call: Call) -> Answer:
    _require_app(call)
    return Answer(200, call.forge.render.accounts.app())


@op("apps/list-installations")
async def list_installations(call: Call) -> Answer:
    _require_app(call)
    by_installation: dict[int, list[Repo]] = {}
    for repo in call.forge.repos.values():
        by_installation.setdefault(repo.installation_id, []).append(repo)
    found = [
        call.forge.render.accounts.listed_installation(iid, repos[0].owner, repos)
        for iid, repos in sorted(by_installation.items())
    ]
    for installation in found:
        if installation["id"] in call.forge.grants:
            granted, events = call.forge.grants[installation["id"]]
            installation |= {"permissions": dict(granted), "events": list(events)}
    return Answer(200, found)


@op("apps/create-from-manifest")
async def create_from_manifest(call: Call) -> Answer:
    """The code GitHub's redirect carried, exchanged (once, within an hour) for the new
    App's id, key and webhook secret. No authentication: the code is the credential."""
    created = call.forge.convert_manifest(call.params["code"])
    if created is None:
        raise ApiError(404, "Not Found")
    return Answer(201, call.forge.render.accounts.app() | created)


@op("users/get-by-username")
async def get_user(call: Call) -> Answer:
    login = call.params["username"]
    user = call.forge.users.get(login)
    if user is None and login == f"{call.forge.app_slug}[bot]":
        user = call.forge.bot  # an App's bot user exists from the App's creation
    if user is None:
        raise ApiError(404, "Not Found")
    return Answer(200, call.forge.render.accounts.public_user(user, created_at=call.forge.born))


@op("apps/create-installation-access-token")
async def create_token(call: Call) -> Answer:
    _require_app(call)
    installation_id = int(call.params["installation_id"])
    repos = [r for r in call.forge.repos.values() if r.installation_id == installation_id]
    if not repos:
        raise ApiError(404, "Not Found")
    token = call.forge.token_for(installation_id)
    expires = call.forge.tokens[token][1]
    return Answer(201, call.forge.render.repos.access_token(token, expires, repos))


@op("apps/get-repo-installation")
async def get_repo_installation(call: Call) -> Answer:
    _require_app(call)
    repo = call.forge.repos.get(f"{call.params['owner']}/{call.params['repo']}")
    if repo is None:
        raise ApiError(404, "Not Found")
    repos = [r for r in call.forge.repos.values() if r.installation_id == repo.installation_id]
    return Answer(
        200, call.forge.render.accounts.installation(repo.installation_id, repo.owner, repos)
    )


# -- repositories, contents, refs ---------------------------------------------------
@op("repos/get")
async def get_repo(call: Call) -> Answer:
    return Answer(200, call.forge.repository_json(call.repo))


@op("repos/get-content")
async def get_content(call: Call) -> Answer:
    repo = call.repo
    ref = call.query.get("ref") or repo.default_branch
    sha = call.forge.resolve(repo, ref)
    if sha is None:
        raise ApiError(404, f"No commit found for the ref {ref}")
    entry = repo.git.entry(sha, call.params["path"])
    if entry is None:
        raise ApiError(404, "Not Found")
    return Answer(200, call.forge.render.git.content(repo, entry, ref))


@op("repos/get-branch")
async def get_branch(call: Call) -> Answer:
    repo = call.repo
    name = call.params["branch"]
    sha = repo.git.resolve(f"refs/heads/{name}")
    if sha is None:
        raise ApiError(404, "Branch not found")
    protected = name == repo.default_branch and (
        any(c.required for c in repo.required_checks) or repo.signed_commits_required
    )
    return Answer(
        200, call.forge.render.git.branch(repo, name, repo.git.commit(sha), protected=protected)
    )


@op("repos/get-collaborator-permission-level")
async def get_permission(call: Call) -> Answer:
    repo = call.repo
    login = call.params["username"]
    role = repo.collaborators.get(login)
    if role is None:
        raise ApiError(404, f"{login} is not a user")
    user = call.forge.user(login)
    return Answer(
        200,
        {
            "permission": ROLES[role],
            "role_name": role,
            "user": call.forge.render.accounts.collaborator(user, role),
        },
    )


@op("git/get-ref")
async def get_ref(call: Call) -> Answer:
    repo = call.repo
    ref = "refs/" + call.params["ref"]
    sha = repo.git.refs().get(ref)
    if sha is None:
        raise ApiError(404, "Not Found")
    return Answer(200, call.forge.render.git.git_ref(repo, ref, sha))


@op("git/create-ref")
async def create_ref(call: Call) -> Answer:
    repo = call.repo
    ref, sha = call.field("ref"), call.field("sha")
    if not ref.startswith("refs/") or ref.count("/") < 2:
        raise ApiError(422, "Reference name must start with 'refs/' and have at least two slashes.")
    if repo.git.resolve(sha) != sha:
        raise ApiError(422, "Object does not exist")
    async with call.forge.lock(repo):
        if not repo.git.create_ref(ref, sha):
            raise ApiError(422, "Reference already exists")
        await call.forge.after_push(repo, {ref: (None, sha)}, call.bot)
    return Answer(201, call.forge.render.git.git_ref(repo, ref, sha))


@op("git/delete-ref")
async def delete_ref(call: Call) -> Answer:
    repo = call.repo
    ref = "refs/" + call.params["ref"]
    async with call.forge.lock(repo):
        before = repo.git.refs().get(ref)
        if before is None or not repo.git.delete_ref(ref):
            raise ApiError(422, "Reference does not exist")
        await call.forge.after_push(repo, {ref: (before, None)}, call.bot)
    return Answer(204)


# -- pull requests ---------------------------------------------------------------
def _head_branch(repo: Repo, head: str) -> str:
    owner, sep, branch = head.partition(":")
    if sep and owner != repo.owner.login:
        raise _validation("PullRequest", "head")
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
        raise _validation("PullRequest", "title", "missing_field")
    pull = await call.forge.create_pull(
        repo,
        _head_branch(repo, call.field("head")),
        call.field("base"),
        call.field("title"),
        call.field("body"),
        call.bot,
        draft=bool(call.field("draft", False)),
    )
    return Answer(201, call.forge.pull_json(repo, pull))


@op("pulls/get")
async def get_pull(call: Call) -> Answer:
    repo = call.repo
    pull = call.pull(repo)
    call.forge.refresh_pull(repo, pull)
    return Answer(200, call.forge.pull_json(repo, pull))


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
            raise _validation("PullRequest", "base")
        changes["base"] = {"ref": {"from": pull.base}, "sha": {"from": pull.base_sha}}
        pull.base = base
        call.forge.refresh_pull(repo, pull)
    issue.updated_at = time.time()
    state = call.field("state")
    if state == "closed" and issue.state == "open":
        await call.forge.close_pull(repo, pull, call.bot)
    elif state == "open" and issue.state == "closed" and not pull.merged:
        issue.state, issue.closed_at = "open", None
    if changes:
        call.forge.emit(
            "pull_request",
            call.forge.event(
                repo,
                "edited",
                call.bot,
                number=pull.number,
                changes=changes,
                pull_request=call.forge.pull_json(repo, pull),
            ),
        )
    return Answer(200, call.forge.pull_json(repo, pull))


@op("pulls/merge")
async def merge_pull(call: Call) -> Answer:
    repo = call.repo
    pull = call.pull(repo)
    method = call.field("merge_method", "merge")
    sha = await call.forge.merge_pull(
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
    call.forge.refresh_pull(repo, pull)
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
        raise _validation("PullRequestReview", "event")
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
    call.forge.request_reviewers(
        repo,
        pull,
        call.field("reviewers") or [],
        user=call.bot,
        teams=call.field("team_reviewers") or [],
    )
    return Answer(201, call.forge.render.pulls.pull_simple(repo, pull, repo.issues[pull.number]))


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
    call.forge.emit(
        "issues",
        call.forge.event(repo, "opened", call.bot, issue=call.forge.issue_json(repo, issue)),
    )
    return Answer(201, call.forge.issue_json(repo, issue))


def _label_name(value: Any) -> str:
    return str(value["name"] if isinstance(value, dict) else value)


@op("issues/get")
async def get_issue(call: Call) -> Answer:
    repo = call.repo
    return Answer(200, call.forge.issue_json(repo, call.issue(repo)))


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
        issue.labels = [call.forge.label(repo, _label_name(x)) for x in labels]
    issue.updated_at = time.time()
    if moving:
        reason = call.field("state_reason") or ("completed" if state == "closed" else "reopened")
        if state == "closed" and not issue.is_pull:
            call.forge.close_issue(repo, issue, call.bot, reason=reason)  # sends issues.closed
        else:
            issue.state, issue.state_reason, issue.closed_by_pull = state, reason, None
            issue.closed_at = time.time() if state == "closed" else None
    return Answer(200, call.forge.issue_json(repo, issue))


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
    comment = call.forge.new_comment(repo, issue, call.field("body"), call.bot, via_app=True)
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
    reaction, created = call.forge.react(issue.reactions, call.field("content"), call.bot)
    return Answer(201 if created else 200, call.forge.render.issues.reaction(reaction))


@op("reactions/create-for-issue-comment")
async def react_comment(call: Call) -> Answer:
    repo = call.repo
    comment = repo.comment(int(call.params["comment_id"]))
    if comment is None:
        raise ApiError(404, "Not Found")
    reaction, created = call.forge.react(comment.reactions, call.field("content"), call.bot)
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
        raise _validation("Label", "name", "already_exists")
    label = call.forge.label(repo, name)
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
        label = call.forge.label(repo, name)
        if label in issue.labels:
            continue
        issue.labels.append(label)
        if not issue.is_pull:
            call.forge.emit(
                "issues",
                call.forge.event(
                    repo,
                    "labeled",
                    call.bot,
                    issue=call.forge.issue_json(repo, issue),
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
        raise _validation("CheckRun", "head_sha")
    suite = suite_for(call.forge, repo, sha, call.forge.app_slug, None)
    run = CheckRun(call.forge.next_id(), call.field("name"), sha, suite, call.forge.app_slug)
    _apply_run_fields(run, call)
    repo.check_runs.append(run)
    suite.status = "in_progress" if run.status != "completed" else suite.status
    await check_run_changed(call.forge, repo, run, "created", call.bot)
    if run.status == "completed":
        await check_run_changed(call.forge, repo, run, "completed", call.bot)
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
    if run.app_slug != call.forge.app_slug:
        raise ApiError(
            403,
            f"Invalid app_id `{call.forge.app_id}` - check run can only be modified by the "
            "GitHub App that created it.",
        )
    was_completed = run.status == "completed"
    _apply_run_fields(run, call)
    if run.status == "completed" and not was_completed:
        await check_run_changed(call.forge, repo, run, "completed", call.bot)
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
    sha = call.forge.resolve(repo, call.params["ref"])
    if sha is None:
        raise ApiError(404, "Not Found")
    statuses = [s for s in repo.statuses if s.sha == sha]
    return Answer(200, call.forge.render.checks.combined_status(repo, sha, statuses))


@op("repos/create-commit-status")
async def create_status(call: Call) -> Answer:
    repo = call.repo
    sha = call.params["sha"]
    if repo.git.resolve(sha) != sha:
        raise _validation("Status", "sha")
    status = CommitStatus(
        call.forge.next_id(),
        sha,
        call.field("state"),
        call.field("context") or "default",
        call.field("description"),
        call.field("target_url"),
        call.bot,
    )
    repo.statuses.append(status)
    return Answer(201, call.forge.render.checks.commit_status(repo, status))
