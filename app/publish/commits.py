"""``commit_signing: api``: the session's patch commit made again through GitHub's Git
Data API, so GitHub signs it and "Require signed commits" lets it merge.

A commit pushed with git carries no signature Patchwarden could make (it holds no key,
and the sandbox none either). A commit the App creates through ``POST /git/commits``,
with no author, committer or signature of its own, is signed by GitHub and shown as
verified, with the App's bot user as its author
(https://docs.github.com/en/authentication/managing-commit-signature-verification/about-commit-signature-verification#signature-verification-for-bots).

The steps: one blob per changed file (``POST /git/blobs``), one tree over the parent's
tree (``POST /git/trees``), the commit (``POST /git/commits``), then the branch created
or force-moved (``PATCH``/``POST /git/refs``). Git objects are content-addressed, so
each blob and the tree GitHub stores must have the very sha the session scored:
anything else stops the job before a branch moves (fail closed).
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass
from pathlib import Path

import gidgethub

from app.errors import PermanentJobError
from app.git import git_env, run_git
from app.github import GitHubClient

BLOB_CONCURRENCY = 4  # blobs uploaded at once
_TYPES = {"160000": "commit"}  # a submodule's gitlink; every other file mode is a blob


@dataclass(frozen=True)
class Change:
    path: str
    mode: str  # the new mode, or the old one for a deletion
    sha: str | None  # the new blob (or gitlink); None deletes the path
    upload: bool = False  # a blob GitHub may not have yet (not the parent's, mode aside)


async def _git(mirror: Path, home: Path, *args: str) -> bytes:
    done = await run_git(["--git-dir", str(mirror), *args], env=git_env(home))
    return done.stdout


async def changes(mirror: Path, home: Path, parent: str, head: str) -> list[Change]:
    """What ``head`` changes against ``parent``, file by file (no rename detection)."""
    raw = await _git(mirror, home, "diff-tree", "-r", "-z", "--no-renames", "--raw", parent, head)
    fields = raw.split(b"\0")
    found = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(b":"):
            continue
        old_mode, new_mode, old, new, status = meta[1:].decode().split(" ", 4)
        name = path.decode("utf-8", "surrogateescape")
        if status == "D":
            found.append(Change(name, old_mode, None))
        else:
            found.append(Change(name, new_mode, new, upload=new != old))
    return found


async def commit_through_api(
    gh: GitHubClient,
    url_vars: dict[str, str],
    *,
    mirror: Path,
    home: Path,
    head: str,
    branch: str,
) -> str:
    """Make ``head`` (in ``mirror``) again on GitHub through the Git Data API and point
    ``branch`` at it; the new commit's sha (GitHub's, signed)."""
    parents = (await _git(mirror, home, "rev-parse", f"{head}^@")).decode().split()
    if len(parents) != 1:
        raise PermanentJobError(
            f"the patch commit {head[:12]} has {len(parents)} parents; "
            "commit_signing: api makes commits with one"
        )
    parent = parents[0]
    tree, base_tree = (
        (await _git(mirror, home, "rev-parse", f"{head}^{{tree}}", f"{parent}^{{tree}}"))
        .decode()
        .split()
    )
    raw = await _git(mirror, home, "cat-file", "commit", head)
    message = raw.split(b"\n\n", 1)[1].decode("utf-8", "replace") if b"\n\n" in raw else ""
    entries = await _entries(gh, url_vars, mirror, home, await changes(mirror, home, parent, head))
    made = await gh.post(
        "/repos/{owner}/{repo}/git/trees", url_vars, data={"base_tree": base_tree, "tree": entries}
    )
    if made.get("sha") != tree:
        raise PermanentJobError(
            f"GitHub built tree {made.get('sha')} from the patch, not the scored {tree}; "
            "nothing was pushed"
        )
    commit = await gh.post(
        "/repos/{owner}/{repo}/git/commits",
        url_vars,
        data={"message": message, "tree": tree, "parents": [parent]},
    )
    sha = str(commit["sha"])
    await _point(gh, url_vars, branch, sha)
    return sha


async def _entries(
    gh: GitHubClient, url_vars: dict[str, str], mirror: Path, home: Path, found: list[Change]
) -> list[dict[str, str | None]]:
    limit = asyncio.Semaphore(BLOB_CONCURRENCY)

    async def entry(change: Change) -> dict[str, str | None]:
        kind = _TYPES.get(change.mode, "blob")
        if change.sha is not None and kind == "blob" and change.upload:
            async with limit:
                data = await _git(mirror, home, "cat-file", "blob", change.sha)
                blob = await gh.post(
                    "/repos/{owner}/{repo}/git/blobs",
                    url_vars,
                    data={"content": base64.b64encode(data).decode(), "encoding": "base64"},
                )
            if blob.get("sha") != change.sha:
                raise PermanentJobError(
                    f"GitHub stored {change.path!r} as blob {blob.get('sha')}, "
                    f"not the scored {change.sha}; nothing was pushed"
                )
        return {"path": change.path, "mode": change.mode, "type": kind, "sha": change.sha}

    return list(await asyncio.gather(*(entry(c) for c in found)))


async def _point(gh: GitHubClient, url_vars: dict[str, str], branch: str, sha: str) -> None:
    """Force-move ``branch`` to ``sha``, or create it (the branch is Patchwarden's own)."""
    try:
        await gh.patch(
            "/repos/{owner}/{repo}/git/refs/{+ref}",
            {**url_vars, "ref": f"heads/{branch}"},
            data={"sha": sha, "force": True},
        )
        return
    except gidgethub.BadRequest as exc:
        if exc.status_code != 422:  # 422: "Reference does not exist"
            raise
    await gh.post(
        "/repos/{owner}/{repo}/git/refs", url_vars, data={"ref": f"refs/heads/{branch}", "sha": sha}
    )
