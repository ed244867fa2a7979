"""LocalForge's Git Data API: blobs, trees, commits and moving a branch by REST.

What a client needs to make a commit without git (``commit_signing: api``): create the
changed files' blobs, a tree over the base commit's tree, a commit on the base, then
create or force-move the branch. As on GitHub, a commit made through this API by the
App, with no ``author``, ``committer`` or ``signature`` of its own, is signed by GitHub
and reported as verified; one that names an author is not
(https://docs.github.com/en/authentication/managing-commit-signature-verification/about-commit-signature-verification#signature-verification-for-bots).

Registered in ``rest.HANDLERS`` on import (``http.py`` imports this module).
"""

from __future__ import annotations

import base64
import binascii
import time
from datetime import UTC, datetime
from typing import Any

from app.localforge.api_errors import ApiError
from app.localforge.bare_repo import Person, _safe_path
from app.localforge.rest_call import Answer, Call, op, validation

# The committer GitHub writes on the commits it signs.
GITHUB_COMMITTER = Person("GitHub", "noreply@github.com")
_MODES = {"100644": "blob", "100755": "blob", "120000": "blob", "160000": "commit"}


@op("git/create-blob")
async def create_blob(call: Call) -> Answer:
    repo = call.repo
    content, encoding = call.field("content"), call.field("encoding", "utf-8")
    if encoding == "base64":
        try:
            data = base64.b64decode(content, validate=False)
        except (binascii.Error, ValueError):
            raise validation("Blob", "content") from None
    elif encoding in ("utf-8", "utf8"):
        data = str(content).encode()
    else:
        raise ApiError(422, f"encoding must be one of utf-8 or base64, not {encoding!r}")
    return Answer(201, call.forge.render.git.short_blob(repo, repo.git.write_blob(data)))


@op("git/create-tree")
async def create_tree(call: Call) -> Answer:
    repo = call.repo
    base = call.field("base_tree")
    if base is not None and repo.git.object_type(base) != "tree":
        raise ApiError(422, "base_tree is not a valid tree oid")
    entries: list[tuple[str, str, str | None]] = []
    for item in call.field("tree") or []:
        path, mode, kind = item.get("path", ""), item.get("mode"), item.get("type")
        if not _safe_path(path):
            raise ApiError(422, f"tree.path contains a malformed path component: {path!r}")
        if "content" in item:
            if item.get("sha") is not None:
                raise ApiError(422, "Must supply either tree.sha or tree.content, not both")
            sha: str | None = repo.git.write_blob(str(item["content"]).encode())
        else:
            sha = item.get("sha")
        if sha is not None:
            # LocalForge builds trees from files; a whole sub-tree entry is not modelled.
            if mode not in _MODES or kind != _MODES[mode]:
                raise ApiError(422, f"tree.mode {mode!r} does not suit tree.type {kind!r}")
            if kind == "blob" and repo.git.object_type(sha) != "blob":
                raise ApiError(422, f"tree.sha {sha} is not a valid blob")
        entries.append((path, str(mode), sha))
    tree = repo.git.write_tree(base, entries)
    return Answer(201, call.forge.render.git.git_tree(repo, tree, repo.git.tree_entries(tree)))


def _person(value: Any, default: Person) -> tuple[Person, str | None]:
    if not isinstance(value, dict):
        return default, None
    date = value.get("date")
    stamp = datetime.fromisoformat(date).isoformat() if isinstance(date, str) else None
    return Person(str(value["name"]), str(value["email"])), stamp


@op("git/create-commit")
async def create_commit(call: Call) -> Answer:
    repo = call.repo
    tree, parents = call.field("tree"), list(call.field("parents") or [])
    if repo.git.object_type(tree) != "tree":
        raise ApiError(422, "Tree SHA does not exist")
    for parent in parents:
        if repo.git.object_type(parent) != "commit":
            raise ApiError(422, "Parent SHA does not exist or is not a commit object")
    bot = call.bot
    me = Person(bot.login, f"{bot.id}+{bot.login}@users.noreply.github.com")
    author, author_date = _person(call.field("author"), me)
    committer, _ = _person(call.field("committer"), GITHUB_COMMITTER)
    now = datetime.fromtimestamp(time.time(), UTC).isoformat()
    sha = repo.git.write_commit(
        tree,
        parents,
        str(call.field("message")),
        author=author,
        committer=committer,
        author_date=author_date or now,
    )
    # GitHub signs it only when it writes the identity itself.
    if not any(call.field(k) for k in ("author", "committer", "signature")):
        repo.verified.add(sha)
    return Answer(201, call.forge.render.git.git_commit(repo, repo.git.commit(sha)))


@op("git/update-ref")
async def update_ref(call: Call) -> Answer:
    repo = call.repo
    ref = "refs/" + call.params["ref"]
    sha, force = call.field("sha"), bool(call.field("force", False))
    if repo.git.resolve(sha) != sha:
        raise ApiError(422, "Object does not exist")
    async with call.forge.rules.lock(repo):
        before = repo.git.refs().get(ref)
        if before is None:
            raise ApiError(422, "Reference does not exist")
        if not force and not repo.git.is_ancestor(before, sha):
            raise ApiError(422, "Update is not a fast forward")
        if not repo.git.update_ref(ref, sha, before):
            raise ApiError(409, "Reference cannot be updated")
        if before != sha:
            await call.forge.rules.after_push(repo, {ref: (before, sha)}, call.bot)
    return Answer(200, call.forge.render.git.git_ref(repo, ref, sha))
