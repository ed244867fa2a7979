"""LocalForge's REST handlers for repositories: the repository, contents, branches,
permissions, refs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.localforge.api_errors import ApiError
from app.localforge.state import (
    ROLES,
)

if TYPE_CHECKING:
    pass


from app.localforge.rest_call import Answer, Call, op


# -- repositories, contents, refs ---------------------------------------------------
@op("repos/get")
async def get_repo(call: Call) -> Answer:
    return Answer(200, call.forge.hooks.repository_json(call.repo))


@op("repos/get-content")
async def get_content(call: Call) -> Answer:
    repo = call.repo
    ref = call.query.get("ref") or repo.default_branch
    sha = repo.commit_of(ref)
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
    user = call.forge.state.user(login)
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
    async with call.forge.rules.lock(repo):
        if not repo.git.create_ref(ref, sha):
            raise ApiError(422, "Reference already exists")
        await call.forge.rules.after_push(repo, {ref: (None, sha)}, call.bot)
    return Answer(201, call.forge.render.git.git_ref(repo, ref, sha))


@op("git/delete-ref")
async def delete_ref(call: Call) -> Answer:
    repo = call.repo
    ref = "refs/" + call.params["ref"]
    async with call.forge.rules.lock(repo):
        before = repo.git.refs().get(ref)
        if before is None or not repo.git.delete_ref(ref):
            raise ApiError(422, "Reference does not exist")
        await call.forge.rules.after_push(repo, {ref: (before, None)}, call.bot)
    return Answer(204)
