"""The git layer of localforge, against real git: bare repos, merges, diffs, smart HTTP."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import random
import string
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from app.localforge.bare_repo import BareRepo, GitError, Person, git_env
from app.localforge.git_http import http_backend

ALICE = Person("Alice", "alice@example.com")
BOB = Person("Bob", "bob@example.com")
FORGE = Person("Forge", "forge@example.com")
TOKEN = "ghs_test-token"
OLD = "2001-02-03T04:05:06+02:00"
LINES = "".join(f"line {n}\n" for n in range(1, 21))

# git over HTTP against git http-backend processes
pytestmark = pytest.mark.slow


def cli(cwd: Path, *args: str, **extra_env: str) -> str:
    """The real git CLI, isolated like the module's own calls; Alice unless extra_env says."""
    env = git_env(cwd) | {"GIT_AUTHOR_NAME": "Alice", "GIT_AUTHOR_EMAIL": ALICE.email}
    env |= {"GIT_COMMITTER_NAME": "Alice", "GIT_COMMITTER_EMAIL": ALICE.email} | extra_env
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode().strip()


def files_at(repo: BareRepo, rev: str) -> dict[str, str]:
    names = cli(repo.path, "ls-tree", "-r", "--name-only", rev).splitlines()
    return {n: cli(repo.path, "cat-file", "blob", f"{rev}:{n}") for n in names}


def basic(token: str) -> str:
    return "Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


@pytest.fixture
def repo(tmp_path: Path) -> BareRepo:
    """octo/widgets under tmp_path/srv, from a plain directory."""
    source = tmp_path / "src-widgets"
    for path, text in {"README.md": "# widgets\n", "src/a.py": LINES, "src/b.py": "b\n"}.items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text(text)
    return BareRepo.from_directory(tmp_path / "srv" / "octo" / "widgets.git", source)


def odd_files(source: Path) -> Path:
    """An executable, a symlink and a nested .git directory (to be skipped)."""
    (source / "bin").mkdir(parents=True)
    (source / "bin" / "run").write_text("#!/bin/sh\n")
    (source / "bin" / "run").chmod(0o755)
    (source / "notes.txt").write_text("hi\n")
    (source / "link").symlink_to("notes.txt")
    (source / "vendored" / ".git").mkdir(parents=True)
    (source / "vendored" / ".git" / "config").write_text("[core]\n")
    return source


def test_from_plain_directory(tmp_path: Path) -> None:
    source = odd_files(tmp_path / "plain")
    repo = BareRepo.from_directory(tmp_path / "r.git", source, message="Import", author=ALICE)

    assert list(repo.refs()) == ["refs/heads/main"]
    assert cli(repo.path, "symbolic-ref", "HEAD") == "refs/heads/main"
    modes = cli(repo.path, "ls-tree", "-r", "main").splitlines()
    assert [(line.split()[0], line.split("\t")[1]) for line in modes] == [
        ("100755", "bin/run"), ("120000", "link"), ("100644", "notes.txt"),
    ]  # fmt: skip
    info = repo.commit("main")
    assert (info.parents, info.message, info.author) == ((), "Import", ALICE)
    assert info.added == ("bin/run", "link", "notes.txt")


def test_from_work_tree_keeps_branches_and_history(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    cli(work, "init", "-q", "-b", "master")
    for n in (1, 2):
        (work / "f.txt").write_text(f"v{n}\n")
        cli(work, "add", "f.txt")
        cli(work, "commit", "-qm", f"commit {n}")
    cli(work, "branch", "feature", "HEAD~1")
    repo = BareRepo.from_directory(tmp_path / "r.git", work)

    master = cli(work, "rev-parse", "master")
    assert repo.refs() == {
        "refs/heads/feature": cli(work, "rev-parse", "feature"),
        "refs/heads/main": master,
        "refs/heads/master": master,
    }
    assert [c.message for c in repo.commits_between(None, "main")] == ["commit 1", "commit 2"]


def test_entry_file_dir_root_and_missing(repo: BareRepo) -> None:
    file = repo.entry("main", "src/a.py")
    assert file is not None
    assert (file.kind, file.size, file.content) == ("file", len(LINES), LINES.encode())
    assert file.children == ()
    src = repo.entry("main", "/src/")
    assert src is not None
    assert (src.kind, src.content, src.size) == ("dir", None, 0)
    assert [(c.path, c.kind, c.content) for c in src.children] == [
        ("src/a.py", "file", None), ("src/b.py", "file", None),
    ]  # fmt: skip
    for root in ("", "/"):
        entry = repo.entry("main", root)
        assert entry is not None
        assert [c.path for c in entry.children] == ["README.md", "src"]
    assert repo.entry("main", "nope.txt") is None
    assert repo.entry("no-such-branch", "README.md") is None


def test_refs_compare_and_swap(repo: BareRepo) -> None:
    main = repo.resolve("main")
    assert main is not None
    second = repo.commit_files("main", {"x": "x\n"}, message="x", author=ALICE)
    assert repo.create_ref("refs/heads/topic", main)
    assert not repo.create_ref("refs/heads/topic", second)
    assert not repo.update_ref("refs/heads/topic", second, old=second)  # stale expectation
    assert repo.resolve("refs/heads/topic") == main
    assert repo.update_ref("refs/heads/topic", second, old=main)
    assert repo.update_ref("refs/heads/topic", main)  # unconditional
    assert repo.delete_ref("refs/heads/topic")
    assert not repo.delete_ref("refs/heads/topic")
    assert repo.resolve("--all") is None
    assert repo.resolve("refs/heads/topic") is None
    with pytest.raises(GitError, match="update-ref"):
        repo.update_ref("refs/heads/topic", "1" * 40)


def test_commit_files_adds_modifies_and_deletes(repo: BareRepo) -> None:
    sha = repo.commit_files(
        "main",
        {"src/a.py": "changed\n", "src/b.py": None, "docs/new.md": b"\x00bin"},
        message="Edit files",
        author=BOB,
    )
    info = repo.commit(sha)
    assert (info.added, info.removed, info.modified) == (
        ("docs/new.md",),
        ("src/b.py",),
        ("src/a.py",),
    )
    assert (info.author, info.committer, info.message) == (BOB, BOB, "Edit files")
    assert files_at(repo, sha) == {
        "README.md": "# widgets",
        "docs/new.md": "\x00bin",
        "src/a.py": "changed",
    }
    root = repo.commit_files("fresh", {"only.txt": "1\n"}, message="root", author=BOB)
    assert repo.commit(root).parents == ()
    with pytest.raises(ValueError, match="invalid paths"):
        repo.commit_files("main", {"../escape": "x"}, message="no", author=BOB)
    assert repo.resolve("main") == sha


def fork(repo: BareRepo, main: dict[str, str | None], feature: list[dict[str, str | None]]) -> None:
    """feature branches off main; then main gets one commit, feature one per dict (by Bob).

    The last feature commit is re-dated to OLD, for rebase to show it keeps author dates.
    """
    tip = repo.resolve("main")
    assert tip is not None
    repo.create_ref("refs/heads/feature", tip)
    repo.commit_files("main", main, message="main moves", author=ALICE)
    for n, files in enumerate(feature, 1):
        repo.commit_files("feature", files, message=f"feature {n}\n\nbody {n}", author=BOB)
    last, bob = repo.commit("feature"), {"GIT_AUTHOR_NAME": BOB.name, "GIT_AUTHOR_EMAIL": BOB.email}
    args = ("commit-tree", last.tree, "-p", last.parents[0], "-m", last.message)
    repo.update_ref("refs/heads/feature", cli(repo.path, *args, **bob, GIT_AUTHOR_DATE=OLD))


@pytest.mark.parametrize("method", ["merge", "squash", "rebase"])
def test_merge_methods(repo: BareRepo, method: str) -> None:
    undone = [
        {"src/a.py": "one\n" + LINES[7:], "tmp.txt": "t\n"},
        {"new.txt": "n\n", "tmp.txt": None},
    ]
    fork(repo, {"src/b.py": "b2\n"}, undone)  # a naive rebase would keep tmp.txt
    base, head = repo.resolve("main"), repo.resolve("feature")
    assert base is not None
    assert head is not None
    assert repo.mergeable("main", "feature")
    people = {"author": ALICE, "committer": FORGE}
    sha = repo.merge("main", "feature", method=method, message="Merge #1", **people)
    assert sha is not None
    assert files_at(repo, sha) == {
        "README.md": "# widgets", "new.txt": "n", "src/a.py": "one\n" + LINES[7:].strip(),
        "src/b.py": "b2",
    }  # fmt: skip
    info = repo.commit(sha)
    assert repo.resolve("main") == base  # no ref moved
    if method == "merge":
        assert (info.parents, info.message, info.committer) == ((base, head), "Merge #1", FORGE)
    elif method == "squash":
        assert (info.parents, info.author) == ((base,), ALICE)
    else:
        picks = repo.commits_between(base, sha)
        assert [(c.message, c.author, c.committer) for c in picks] == [
            ("feature 1\n\nbody 1", BOB, FORGE), ("feature 2\n\nbody 2", BOB, FORGE),
        ]  # fmt: skip
        assert picks[0].parents == (base,)
        assert picks[-1].authored_at == OLD
    assert repo.merge("feature", "main~1", method=method, message="m", **people) == head


@pytest.mark.parametrize("method", ["merge", "squash", "rebase"])
def test_conflict_is_not_mergeable(repo: BareRepo, method: str) -> None:
    fork(repo, {"src/a.py": "main's line\n" + LINES}, [{"src/a.py": "feature's line\n" + LINES}])
    assert not repo.mergeable("main", "feature")
    assert (
        repo.merge("main", "feature", method=method, message="m", author=BOB, committer=BOB) is None
    )


def test_diff_files_statuses_counts_and_patches(repo: BareRepo) -> None:
    fork(
        repo,
        {"late.txt": "only on main, after the fork\n"},
        [{"src/a.py": LINES.replace("line 3\n", "line three\nline 3b\n"), "README.md": None},
         {"src/b.py": None, "src/c.py": "b\n", "img.bin": b"\x00\x01\x02".decode()},
         {"lib/a.py": LINES, "src/a.py": None}],
    )  # fmt: skip
    changes = {c.filename: c for c in repo.diff_files("main", "feature")}
    assert {n: c.status for n, c in changes.items()} == {
        "README.md": "removed", "img.bin": "added", "lib/a.py": "renamed", "src/c.py": "renamed",
    }  # fmt: skip
    assert changes["lib/a.py"].previous_filename == "src/a.py"
    assert changes["src/c.py"].previous_filename == "src/b.py"
    assert changes["img.bin"].patch is None
    readme = changes["README.md"]
    assert (readme.additions, readme.deletions, readme.patch) == (0, 1, "@@ -1 +0,0 @@\n-# widgets")
    assert readme.sha == cli(repo.path, "rev-parse", "main:README.md")
    cli(repo.path, "update-ref", "refs/heads/feature2", "feature~1")
    edited = {c.filename: c for c in repo.diff_files("main", "feature2")}["src/a.py"]
    counts = (edited.status, edited.additions, edited.deletions, edited.changes)
    assert counts == ("modified", 2, 1, 3)
    assert edited.patch is not None
    assert edited.patch.startswith("@@ -1,6 +1,7 @@\n")
    assert "-line 3\n+line three\n+line 3b\n" in edited.patch
    assert edited.sha == cli(repo.path, "rev-parse", "feature2:src/a.py")


def test_commits_between(repo: BareRepo) -> None:
    start = repo.resolve("main")
    assert start is not None
    shas = [
        repo.commit_files("main", {"n": f"{n}\n"}, message=f"c{n}", author=ALICE) for n in range(22)
    ]
    assert [c.sha for c in repo.commits_between(shas[18], "main")] == shas[19:]
    assert [c.message for c in repo.commits_between(start, shas[1])] == ["c0", "c1"]
    capped = repo.commits_between(None, "main")
    assert [c.sha for c in capped] == shas[2:]
    assert capped[0].modified == ("n",)


def test_export_is_a_plain_copy(tmp_path: Path) -> None:
    repo = BareRepo.from_directory(tmp_path / "r.git", odd_files(tmp_path / "plain"))
    attrs = "* export-ignore eol=crlf\n"  # git archive would drop or rewrite every file
    repo.commit_files("main", {".gitattributes": attrs}, message="attrs", author=ALICE)
    dest = tmp_path / "out"
    repo.export("main", dest)
    got = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*"))
    assert got == [".gitattributes", "bin", "bin/run", "link", "notes.txt"]
    assert (dest / "notes.txt").read_bytes() == b"hi\n"
    assert os.readlink(dest / "link") == "notes.txt"
    assert os.access(dest / "bin" / "run", os.X_OK)
    assert not os.access(dest / "notes.txt", os.X_OK)
    with pytest.raises(FileExistsError):
        repo.export("main", dest)


# -- smart HTTP ----------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def serve(
    root: Path, *, auto_decompress: bool = True
) -> AsyncIterator[tuple[str, list[str]]]:
    """A tiny forge: Basic auth against TOKEN, then http_backend; yields (url, requests seen)."""
    seen: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != basic(TOKEN):
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="test"'})
        encodings = (request.headers.get(h, "-") for h in ("Content-Encoding", "Transfer-Encoding"))
        seen.append(" ".join(encodings))
        owner, name, rest = (request.match_info[k] for k in ("owner", "name", "rest"))
        repo = BareRepo(root / owner / f"{name}.git")
        return await http_backend(request, repo, path_info=f"/{rest}", remote_user="x-access-token")

    app = web.Application()
    app.router.add_route("*", "/{owner}/{name}.git/{rest:.*}", handle)
    runner = web.AppRunner(app, access_log=None, auto_decompress=auto_decompress)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}/octo/widgets.git", seen
    finally:
        await runner.cleanup()


async def client(cwd: Path, *args: str, token: str = TOKEN, check: bool = True) -> int:
    """The git client as Bob; the token goes in an extra header set in its environment only."""
    env = git_env(cwd.parent / "home") | {
        "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: {basic(token)}",
        "GIT_AUTHOR_NAME": "Bob", "GIT_AUTHOR_EMAIL": BOB.email,
        "GIT_COMMITTER_NAME": "Bob", "GIT_COMMITTER_EMAIL": BOB.email,
    }  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        "git", *args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await proc.communicate()
    assert token not in (out + err).decode()
    assert proc.returncode == 0 or not check, err.decode()
    return proc.returncode or 0


async def clone(url: str, tmp_path: Path) -> Path:
    await client(tmp_path, "clone", "-q", url, "work")
    return tmp_path / "work"


async def test_clone_push_and_fetch(repo: BareRepo, tmp_path: Path) -> None:
    async with serve(repo.path.parent.parent) as (url, _):
        work = await clone(url, tmp_path)
        (work / "src" / "a.py").write_text("pushed\n")
        await client(work, "checkout", "-q", "-b", "fix")
        await client(work, "commit", "-qam", "Fix it")
        await client(work, "push", "-q", "origin", "fix")
        assert repo.refs()["refs/heads/fix"] == cli(work, "rev-parse", "HEAD")
        assert repo.commit("fix").author == BOB

        server_side = repo.commit_files(
            "main", {"new.txt": "x\n"}, message="web edit", author=ALICE
        )
        await client(work, "fetch", "-q", "origin")
        assert cli(work, "rev-parse", "origin/main") == server_side


async def test_large_push_is_streamed(repo: BareRepo, tmp_path: Path) -> None:
    async with serve(repo.path.parent.parent) as (url, seen):
        work = await clone(url, tmp_path)
        rng, alphabet = random.Random(7), string.ascii_letters + string.digits + " "
        text = "\n".join("".join(rng.choices(alphabet, k=99)) for _ in range(20_000))  # 2 MB
        (work / "big.txt").write_text(text)
        await client(work, "add", "big.txt")
        await client(work, "commit", "-qm", "big")
        await client(work, "push", "-q", "origin", "HEAD:refs/heads/big")
        assert repo.refs()["refs/heads/big"] == cli(work, "rev-parse", "HEAD")
        assert any(s.endswith("chunked") for s in seen)  # over http.postBuffer: streamed


@pytest.mark.parametrize("auto_decompress", [True, False])
async def test_gzip_request_bodies(repo: BareRepo, tmp_path: Path, auto_decompress: bool) -> None:
    main = repo.resolve("main")
    assert main is not None
    for n in range(40):  # many wants make a negotiation request big enough for git to gzip
        repo.create_ref(f"refs/heads/b{n:02}", main)
        repo.commit_files(f"b{n:02}", {"f": f"{n}\n"}, message=str(n), author=ALICE)
    async with serve(repo.path.parent.parent, auto_decompress=auto_decompress) as (url, seen):
        work = await clone(url, tmp_path)
        assert any(s.startswith("gzip") for s in seen), seen
        assert cli(work, "rev-parse", "origin/b39") == repo.resolve("b39")


async def test_wrong_token_is_refused(repo: BareRepo, tmp_path: Path) -> None:
    async with serve(repo.path.parent.parent) as (url, seen):
        work = await clone(url, tmp_path)
        await client(work, "commit", "-q", "--allow-empty", "-m", "sneaky")
        before, served = repo.refs(), len(seen)
        assert await client(work, "push", "origin", "HEAD:sneaky", token="wrong", check=False)
        assert (repo.refs(), len(seen)) == (before, served)


async def test_every_backend_is_reaped_by_asyncio(
    repo: BareRepo, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A backend that answered exits on its own: killing it then raced asyncio's child
    watcher, which logged "Unknown child process pid N, will report returncode 255"."""
    caplog.set_level("WARNING", logger="asyncio")
    async with serve(repo.path.parent.parent) as (url, seen):
        for _ in range(30):
            await client(tmp_path, "ls-remote", "-q", url)
    assert len(seen) >= 12  # protocol v2: info/refs, then ls-refs
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
