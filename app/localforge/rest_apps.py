"""LocalForge's REST handlers for Apps: the App itself, its installations and tokens,
and the users GitHub shows it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.localforge.api_errors import ApiError
from app.localforge.state import (
    Repo,
)

if TYPE_CHECKING:
    pass


from app.localforge.rest_call import Answer, Call, op


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
        if installation["id"] in call.forge.state.grants:
            granted, events = call.forge.state.grants[installation["id"]]
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
    user = call.forge.state.users.get(login)
    if user is None and login == f"{call.forge.state.app_slug}[bot]":
        user = call.forge.state.bot  # an App's bot user exists from the App's creation
    if user is None:
        raise ApiError(404, "Not Found")
    return Answer(
        200, call.forge.render.accounts.public_user(user, created_at=call.forge.state.born)
    )


@op("apps/create-installation-access-token")
async def create_token(call: Call) -> Answer:
    _require_app(call)
    installation_id = int(call.params["installation_id"])
    repos = [r for r in call.forge.repos.values() if r.installation_id == installation_id]
    if not repos:
        raise ApiError(404, "Not Found")
    token = call.forge.token_for(installation_id)
    expires = call.forge.state.tokens[token][1]
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
