"""``commit_signing: api``: the session's patch commit made again through GitHub's Git
Data API, so GitHub signs it and "Require signed commits" lets it merge.

A commit pushed with git carries no signature Patchwarden could make (it holds no key,
and the sandbox none either). A commit the App creates through ``POST /git/commits``,
with no author, committer or signature of its own, is signed by GitHub and shown as
verified, with the App's bot user as its author
(https://docs.github.com/en/authentication/managing-commit-signature-verification/about-commit-signature-verification#signature-verification-for-bots).

The steps: one tree over the parent's tree with the changed text files inline (``POST
/git/trees``; a binary file is uploaded first as a blob, ``POST /git/blobs``), the
commit (``POST /git/commits``), then the branch force-moved or created (``PATCH``/``POST
/git/refs``). Git objects are content-addressed, so
each blob and the tree GitHub stores must have the very sha the session scored:
anything else stops the job before a branch moves (fail closed).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

import gidgethub

from app.errors import PatchwardenError, PermanentJobError
from app.git import git_env, run_git
from app.github import GitHubClient

_NO_MESSAGE = "Patchwarden patch\n"  # GitHub wants a message; a session always writes one
_TYPES = {"160000": "commit"}  # a submodule's gitlink; every other file mode is a blob


class BranchMoved(PatchwardenError):
    """The branch changed on GitHub between the check and the push: the job runs again
    (not a permanent error) and finds it (a person's commit is never overwritten)."""


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
        try:
            name = path.decode("utf-8")
        except UnicodeDecodeError:
            raise PermanentJobError(
                f"the patch changes a file whose name is not UTF-8 ({path!r}): GitHub's API "
                "cannot name it; use commit_signing: git for this repository"
            ) from None
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
    lease: str | None,
) -> str:
    """Make ``head`` (in ``mirror``) again on GitHub through the Git Data API and point
    ``branch`` at it (create it for ``lease`` None); the new commit's sha (GitHub's,
    signed)."""
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
    found = await changes(mirror, home, parent, head)
    made = None
    # Text goes inline in the tree (one call for every text file); should GitHub build a
    # different tree from it, every file goes again as a blob of exact bytes.
    for inline in (True, False):
        entries = await _entries(gh, url_vars, mirror, home, found, inline=inline)
        made = await gh.post(
            "/repos/{owner}/{repo}/git/trees",
            url_vars,
            data={"base_tree": base_tree, "tree": entries},
        )
        if made.get("sha") == tree or not any("content" in e for e in entries):
            break
    if made is None or made.get("sha") != tree:
        raise PermanentJobError(
            f"GitHub built tree {made.get('sha') if made else None} from the patch, not the "
            f"scored {tree}; nothing was pushed"
        )
    commit = await gh.post(
        "/repos/{owner}/{repo}/git/commits",
        url_vars,
        data={
            "message": message if message.strip() else _NO_MESSAGE,
            "tree": tree,
            "parents": [parent],
        },
    )
    sha = str(commit["sha"])
    await _point(gh, url_vars, branch, sha, lease)
    return sha


async def _entries(
    gh: GitHubClient,
    url_vars: dict[str, str],
    mirror: Path,
    home: Path,
    found: list[Change],
    *,
    inline: bool,
) -> list[dict[str, str | None]]:
    """The tree entries for ``found``: UTF-8 text inline (``inline``), other new content
    uploaded as blobs first, each checked against the scored sha."""
    entries: list[dict[str, str | None]] = []
    for change in found:  # one at a time: GitHub asks integrations not to write at once
        kind = _TYPES.get(change.mode, "blob")
        entry: dict[str, str | None] = {"path": change.path, "mode": change.mode, "type": kind}
        if change.sha is None or kind != "blob" or not change.upload:
            entries.append({**entry, "sha": change.sha})
            continue
        data = await _git(mirror, home, "cat-file", "blob", change.sha)
        if inline:
            try:
                entries.append({**entry, "content": data.decode("utf-8")})
                continue
            except UnicodeDecodeError:
                pass
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
        entries.append({**entry, "sha": change.sha})
    return entries


async def _point(
    gh: GitHubClient, url_vars: dict[str, str], branch: str, sha: str, lease: str | None
) -> None:
    """Create ``branch`` at ``sha`` when ``lease`` is None (GitHub refuses if it exists by
    now), else force-move it there: the Git Data API takes no expected old value, so the
    head was checked as late as it can be (app/jobs/branch.py)."""
    if lease is None:
        try:
            await gh.post(
                "/repos/{owner}/{repo}/git/refs",
                url_vars,
                data={"ref": f"refs/heads/{branch}", "sha": sha},
            )
            return
        except gidgethub.BadRequest as exc:
            if exc.status_code == 422 and "already exists" in str(exc):
                raise BranchMoved(f"{branch} was created by someone else meanwhile") from None
            raise
    try:
        await gh.patch(
            "/repos/{owner}/{repo}/git/refs/{+ref}",
            {**url_vars, "ref": f"heads/{branch}"},
            data={"sha": sha, "force": True},
        )
        return
    except gidgethub.BadRequest as exc:
        # Only a missing branch is created; any other refusal (a ruleset, a permission)
        # is GitHub's to say as it is.
        if exc.status_code != 422 or "does not exist" not in str(exc):
            raise
    await gh.post(
        "/repos/{owner}/{repo}/git/refs", url_vars, data={"ref": f"refs/heads/{branch}", "sha": sha}
    )
