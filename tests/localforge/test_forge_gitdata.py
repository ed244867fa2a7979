"""LocalForge's Git Data API, as ``commit_signing: api`` uses it: blobs, trees and
commits made by REST, branches moved by REST, and "Require signed commits" refusing a
merge of anything GitHub did not sign.

Every call goes through Patchwarden's own client and the forge's contract check.
"""

from __future__ import annotations

import base64
import hashlib

import gidgethub
import pytest

from app.github.client import GitHubClient
from app.localforge import LocalForge
from tests.conftest import REPO
from tests.localforge.test_forge import MERGE, R, open_pr

REF = "/repos/{owner}/{repo}/git/ref/{ref}"
REFS = "/repos/{owner}/{repo}/git/refs"
MOVE = "/repos/{owner}/{repo}/git/refs/{+ref}"
BLOBS = "/repos/{owner}/{repo}/git/blobs"
TREES = "/repos/{owner}/{repo}/git/trees"
COMMITS = "/repos/{owner}/{repo}/git/commits"


def git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


async def main_sha(gh: GitHubClient) -> str:
    ref = await gh.getitem(REF, {**R, "ref": "heads/main"})
    return str(ref["object"]["sha"])


async def commit_on_main(
    forge: LocalForge, gh: GitHubClient, files: dict[str, bytes | None], **extra: object
) -> dict[str, object]:
    """A commit on main's tip made through the API: blobs, a tree, the commit."""
    parent = await main_sha(gh)
    base_tree = forge.repos[REPO].git.commit(parent).tree
    entries = []
    for path, data in files.items():
        sha = None
        if data is not None:
            blob = await gh.post(
                BLOBS, R, data={"content": base64.b64encode(data).decode(), "encoding": "base64"}
            )
            assert blob["sha"] == git_blob_sha(data)  # content-addressed, as on GitHub
            sha = blob["sha"]
        entries.append({"path": path, "mode": "100644", "type": "blob", "sha": sha})
    tree = await gh.post(TREES, R, data={"base_tree": base_tree, "tree": entries})
    made: dict[str, object] = await gh.post(
        COMMITS,
        R,
        data={"message": "Fix it\n\nthe body\n", "tree": tree["sha"], "parents": [parent], **extra},
    )
    return made


async def test_a_commit_made_by_the_app_through_the_api_is_signed_by_github(
    forge: LocalForge, gh: GitHubClient
) -> None:
    await forge.push(REPO, {"old.txt": "bye\n", "keep.txt": "same\n"}, author="alice")
    parent = await main_sha(gh)
    made = await commit_on_main(forge, gh, {"docs/new.txt": b"hello\n", "old.txt": None})
    verification = made["verification"]
    assert isinstance(verification, dict)
    assert (verification["verified"], verification["reason"]) == (True, "valid")
    bot = forge.state.bot
    assert made["author"] == {
        "name": "patchwarden[bot]",
        "email": f"{bot.id}+patchwarden[bot]@users.noreply.github.com",
        "date": made["author"]["date"],  # type: ignore[index]
    }
    assert made["message"] == "Fix it\n\nthe body"
    git = forge.repos[REPO].git
    sha = str(made["sha"])
    assert git.commit(sha).parents == (parent,)
    assert git.entry(sha, "docs/new.txt").content == b"hello\n"  # type: ignore[union-attr]
    assert git.entry(sha, "old.txt") is None  # a null sha removes the path
    assert git.entry(sha, "keep.txt").content == b"same\n"  # type: ignore[union-attr]

    # A new branch by POST, moved by PATCH (force), each a push GitHub announces.
    await gh.post(REFS, R, data={"ref": "refs/heads/patchwarden/1-x", "sha": parent})
    moved = await gh.patch(
        MOVE, {**R, "ref": "heads/patchwarden/1-x"}, data={"sha": sha, "force": True}
    )
    assert moved["object"]["sha"] == sha
    assert git.resolve("refs/heads/patchwarden/1-x") == sha
    await forge.settle()
    pushes = [d.payload for d in forge.deliveries if d.event == "push"]
    assert pushes[-1]["ref"] == "refs/heads/patchwarden/1-x"
    assert pushes[-1]["after"] == sha


async def test_required_signatures_merge_only_what_github_signed(
    forge: LocalForge, gh: GitHubClient
) -> None:
    forge.require_signed_commits(REPO)
    branch = await gh.getitem("/repos/{owner}/{repo}/branches/{b}", {**R, "b": "main"})
    assert branch["protected"] is True
    parent = await main_sha(gh)
    # A commit naming its own author is not GitHub's to sign...
    theirs = await commit_on_main(
        forge, gh, {"a.txt": b"a\n"}, author={"name": "Someone", "email": "s@example.invalid"}
    )
    assert theirs["verification"]["verified"] is False  # type: ignore[index]
    await gh.post(REFS, R, data={"ref": "refs/heads/theirs", "sha": theirs["sha"]})
    await open_pr(gh, "theirs")
    # ...so a merge commit, which brings it onto main, is refused...
    with pytest.raises(gidgethub.BadRequest) as refused:
        await gh.put(MERGE, {**R, "number": 1}, data={"sha": theirs["sha"]})
    assert refused.value.status_code == 405
    assert "Commits must have verified signatures." in str(refused.value)
    # ...and so is a rebase: GitHub cannot sign the commits a rebase makes.
    with pytest.raises(gidgethub.BadRequest) as rebase:
        await gh.put(MERGE, {**R, "number": 1}, data={"merge_method": "rebase"})
    assert rebase.value.status_code == 405
    assert "Rebase merges cannot be automatically signed" in str(rebase.value)
    assert await main_sha(gh) == parent
    # A squash lands one new commit that GitHub signs, for the pull request's author
    # (the App opened it, the App merges it).
    squashed = await gh.put(MERGE, {**R, "number": 1}, data={"merge_method": "squash"})
    assert squashed["sha"] in forge.repos[REPO].verified

    ours = await commit_on_main(forge, gh, {"b.txt": b"b\n"})
    await gh.post(REFS, R, data={"ref": "refs/heads/ours", "sha": ours["sha"]})
    await open_pr(gh, "ours")
    merged = await gh.put(MERGE, {**R, "number": 2}, data={"sha": ours["sha"]})
    assert merged["merged"] is True
    assert merged["sha"] in forge.repos[REPO].verified  # the merge commit is GitHub's too


async def test_bad_git_data_is_refused_in_githubs_words(
    forge: LocalForge, gh: GitHubClient
) -> None:
    parent = await main_sha(gh)
    base_tree = forge.repos[REPO].git.commit(parent).tree
    refusals = [
        (TREES, {"base_tree": base_tree, "tree": [{"path": "../x", "mode": "100644",
                 "type": "blob", "sha": git_blob_sha(b"")}]}, "malformed path"),
        (TREES, {"tree": [{"path": "x", "mode": "100644", "type": "blob", "sha": "0" * 40}]},
         "not a valid blob"),
        (TREES, {"base_tree": "f" * 40, "tree": []}, "base_tree"),
        (COMMITS, {"message": "m", "tree": "f" * 40, "parents": [parent]}, "Tree SHA"),
        (COMMITS, {"message": "m", "tree": base_tree, "parents": ["f" * 40]}, "Parent SHA"),
    ]  # fmt: skip
    for url, data, said in refusals:
        with pytest.raises(gidgethub.BadRequest) as raised:
            await gh.post(url, R, data=data)
        assert raised.value.status_code == 422, data
        assert said in str(raised.value), (said, str(raised.value))

    # A branch that does not exist is not moved into being; a rewrite needs force.
    with pytest.raises(gidgethub.BadRequest) as missing:
        await gh.patch(MOVE, {**R, "ref": "heads/nope"}, data={"sha": parent, "force": True})
    assert (missing.value.status_code, "Reference does not exist") == (
        422,
        str(missing.value),
    )
    made = await commit_on_main(forge, gh, {"a.txt": b"a\n"})
    await gh.post(REFS, R, data={"ref": "refs/heads/side", "sha": made["sha"]})
    with pytest.raises(gidgethub.BadRequest) as rewrite:
        await gh.patch(MOVE, {**R, "ref": "heads/side"}, data={"sha": parent})
    assert "not a fast forward" in str(rewrite.value)
    assert forge.repos[REPO].git.resolve("refs/heads/side") == made["sha"]
