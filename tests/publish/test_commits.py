"""``commit_signing: api``: a patch commit made again through the Git Data API, on
LocalForge over real HTTP, with the kinds of change a real patch has — an edit, a
deletion, a binary file, an executable bit, a symlink, an odd file name — and GitHub's
tree checked against the scored one.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from app.errors import PermanentJobError
from app.git import git_env
from app.github.client import GitHubApp, GitHubClient
from app.github.repos import repo_vars
from app.localforge import LocalForge
from app.publish.commits import BranchMoved, commit_through_api
from tests.conftest import APP_ID, INSTALLATION, REPO


@pytest.fixture
async def gh(forge: LocalForge, app_keys: tuple[str, str]) -> AsyncIterator[GitHubClient]:
    async with aiohttp.ClientSession() as session:
        app = GitHubApp(app_id=APP_ID, private_key=app_keys[0], api_url=forge.url, session=session)
        yield app.installation(INSTALLATION)


def git(home: Path, *args: str) -> str:
    env = git_env(home) | {
        "GIT_AUTHOR_NAME": "Session",
        "GIT_AUTHOR_EMAIL": "s@example.invalid",
        "GIT_COMMITTER_NAME": "Session",
        "GIT_COMMITTER_EMAIL": "s@example.invalid",
    }
    done = subprocess.run(["git", *args], env=env, capture_output=True, check=True)
    return done.stdout.decode().strip()


@pytest.fixture
async def patched(forge: LocalForge, tmp_path: Path) -> tuple[Path, str]:
    """A mirror of the forge's repository holding a session-like patch commit on main."""
    await forge.push(
        REPO,
        {"src/app.py": "x = 1\n", "gone.txt": "bye\n", "run.sh": "echo hi\n"},
        author="alice",
    )
    mirror, work = tmp_path / "mirror.git", tmp_path / "work"
    git(tmp_path, "clone", "--quiet", "--bare", str(forge.repos[REPO].git.path), str(mirror))
    work.mkdir()
    gd = ["--git-dir", str(mirror), "--work-tree", str(work)]
    git(tmp_path, *gd, "checkout", "--quiet", "-f", "main")
    (work / "src" / "app.py").write_text("x = 2\n")
    (work / "gone.txt").unlink()
    (work / "logo.png").write_bytes(bytes(range(256)) * 4)
    (work / "run.sh").chmod(0o755)
    (work / "docs").mkdir()
    (work / "docs" / "naïve name.md").write_text("é\n")
    (work / "link").symlink_to("src/app.py")
    git(tmp_path, *gd, "add", "-A")
    git(tmp_path, *gd, "commit", "--quiet", "-m", "Fix: x is 2\n\nWhy, at length.")
    return mirror, git(tmp_path, "--git-dir", str(mirror), "rev-parse", "HEAD")


async def commit(
    gh: GitHubClient, mirror: Path, home: Path, head: str, branch: str, *, lease: str | None
) -> str:
    """``head`` made again through the Git Data API as ``branch`` (seen at ``lease``)."""
    return await commit_through_api(
        gh, repo_vars(REPO), mirror=mirror, home=home, head=head, branch=branch, lease=lease
    )


async def test_every_kind_of_change_arrives_exactly_and_signed(
    forge: LocalForge, gh: GitHubClient, patched: tuple[Path, str], tmp_path: Path
) -> None:
    mirror, head = patched
    sha = await commit(gh, mirror, tmp_path, head, "patchwarden/1-fix", lease=None)
    repo = forge.repos[REPO]
    assert sha != head  # GitHub's own commit...
    assert repo.git.resolve("refs/heads/patchwarden/1-fix") == sha
    assert sha in repo.verified  # ...which it signed
    ours = git(tmp_path, "--git-dir", str(mirror), "rev-parse", f"{head}^{{tree}}")
    theirs = repo.git.commit(sha)
    assert theirs.tree == ours  # the very tree the session scored, modes and all
    assert theirs.message == "Fix: x is 2\n\nWhy, at length."
    assert theirs.parents == (git(tmp_path, "--git-dir", str(mirror), "rev-parse", f"{head}^"),)
    # Text inline in the tree; only the binary logo.png went as a blob of its own.
    (blob,) = forge.calls("POST", r"/git/blobs$")
    assert blob.body["encoding"] == "base64"
    assert len(forge.calls("POST", r"/git/trees$")) == 1

    # Again (a retried job, its own head seen): moved to an equal commit, not refused.
    again = await commit(gh, mirror, tmp_path, head, "patchwarden/1-fix", lease=sha)
    assert repo.git.resolve("refs/heads/patchwarden/1-fix") == again
    assert repo.git.commit(again).tree == ours
    # Seen absent, created meanwhile by someone else: refused, and left as it is.
    with pytest.raises(BranchMoved, match="created by someone else"):
        await commit(gh, mirror, tmp_path, head, "patchwarden/1-fix", lease=None)
    assert repo.git.resolve("refs/heads/patchwarden/1-fix") == again


async def test_a_tree_built_otherwise_from_inline_text_is_sent_again_as_exact_blobs(
    forge: LocalForge, gh: GitHubClient, patched: tuple[Path, str], tmp_path: Path
) -> None:
    mirror, head = patched
    forge.fail("POST", r"/git/trees$", 201, message="not the tree you sent", times=1)
    sha = await commit(gh, mirror, tmp_path, head, "patchwarden/3-y", lease=None)
    ours = git(tmp_path, "--git-dir", str(mirror), "rev-parse", f"{head}^{{tree}}")
    assert forge.repos[REPO].git.commit(sha).tree == ours
    # logo.png on the first pass; then every new file's exact bytes (4) on the second
    assert len(forge.calls("POST", r"/git/blobs$")) == 1 + 4


async def test_a_tree_that_is_not_the_scored_one_moves_no_branch(
    forge: LocalForge, gh: GitHubClient, patched: tuple[Path, str], tmp_path: Path
) -> None:
    mirror, head = patched
    forge.fail("POST", r"/git/trees$", 201, message="a tree GitHub did not build", times=2)
    with pytest.raises(PermanentJobError, match="not the scored"):
        await commit(gh, mirror, tmp_path, head, "patchwarden/2-x", lease=None)
    assert forge.repos[REPO].git.resolve("refs/heads/patchwarden/2-x") is None
    assert not forge.calls("POST", r"/git/commits$")


async def test_a_file_name_that_is_not_utf8_is_refused_before_any_call(
    forge: LocalForge, gh: GitHubClient, tmp_path: Path
) -> None:
    await forge.push(REPO, {"a.txt": "a\n"}, author="alice")
    mirror, work = tmp_path / "mirror.git", tmp_path / "work"
    git(tmp_path, "clone", "--quiet", "--bare", str(forge.repos[REPO].git.path), str(mirror))
    work.mkdir()
    gd = ["--git-dir", str(mirror), "--work-tree", str(work)]
    git(tmp_path, *gd, "checkout", "--quiet", "-f", "main")
    (work / os.fsdecode(b"caf\xe9.txt")).write_text("latin-1 name\n")
    git(tmp_path, *gd, "add", "-A")
    git(tmp_path, *gd, "commit", "--quiet", "-m", "Add a file")
    head = git(tmp_path, "--git-dir", str(mirror), "rev-parse", "HEAD")
    with pytest.raises(PermanentJobError, match="not UTF-8"):
        await commit(gh, mirror, tmp_path, head, "patchwarden/4-z", lease=None)
    assert not forge.calls("POST", r"/git/")
