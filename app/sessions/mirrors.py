"""The mirror cache: ``<cache>/mirrors/<owner>/<name>.git`` is cloned once (``git clone
--mirror``) and fetched after, under a per-repository lock, and only when the wanted
commit is not there yet — two sessions of one repository fetch once. A session's
workspace is made from its mirror (:meth:`WorkspaceCache.create`)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from app.git import Remote, git_env, run_git
from app.sessions.files import file_lock
from app.sessions.workspace import FULL_SHA, Workspace, WorkspaceError, slug


class WorkspaceCache:
    """Mirrors under ``root/mirrors``; session directories under ``root/sessions``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.mirrors = root / "mirrors"
        self.sessions = root / "sessions"
        self.home = root / "git-home"  # an empty HOME for host-side git
        for d in (self.mirrors, self.sessions, self.home):
            d.mkdir(parents=True, exist_ok=True)
        self._locks: dict[str, asyncio.Lock] = {}
        self.fetches: dict[str, int] = {}  # per repo: clones + fetches this process made
        self._fetched_at: dict[str, float] = {}

    def mirror_path(self, repo: str) -> Path:
        owner, name = repo.split("/")
        return self.mirrors / owner / f"{name}.git"

    async def mirror(self, remote: Remote, *, want: str | None = None) -> Path:
        """The repository's mirror, cloned or fetched so that ``want`` is present.

        With ``want=None`` (the default branch's tip) it always fetches.
        """
        path = self.mirror_path(remote.repo)
        asked_at = time.monotonic()
        lock = self._locks.setdefault(remote.repo, asyncio.Lock())
        async with lock, file_lock(path.with_suffix(".lock")):
            if want is None and self._fetched_at.get(remote.repo, -1.0) >= asked_at:
                return path  # a fetch that started after we asked has succeeded
            began = time.monotonic()
            env = git_env(self.home, remote=remote)
            secrets = [remote.token] if remote.token else []
            if not (path / "HEAD").exists():
                await self._clone(remote, path, env, secrets)
                self._fetched(remote.repo, began)
                if want is None or await self._has(path, want, env):
                    return path
            elif want is not None and await self._has(path, want, env):
                return path
            # From the remote as given now, not the URL the mirror was cloned from: a
            # repository that moved (a transfer, a new GHES host) is fetched where it is.
            refspecs = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
            await run_git(
                [
                    "--git-dir",
                    str(path),
                    "fetch",
                    "--prune",
                    "--quiet",
                    "--",
                    remote.url,
                    *refspecs,
                ],
                env=env,
                secrets=secrets,
            )
            self._fetched(remote.repo, began)
            if want is not None and not await self._has(path, want, env):
                # A commit no branch points at (a PR from a fork): ask for it by sha.
                await run_git(
                    ["--git-dir", str(path), "fetch", "--quiet", "--", remote.url, want],
                    env=env,
                    secrets=secrets,
                    check=False,
                )
                if not await self._has(path, want, env):
                    raise WorkspaceError(f"commit {want} is not in {remote.repo}")
            return path

    @staticmethod
    async def _clone(remote: Remote, path: Path, env: dict[str, str], secrets: list[str]) -> None:
        """Clone ``remote`` as a mirror at ``path``, whole or not at all."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
        try:
            await run_git(
                ["clone", "--mirror", "--quiet", "--", remote.url, str(tmp)],
                env=env,
                secrets=secrets,
            )
            # Only branches and tags: a mirror of GitHub would also take every
            # refs/pull/*; sessions fetch a missing commit by its sha instead.
            gd = ["--git-dir", str(tmp)]
            await run_git([*gd, "config", "--unset-all", "remote.origin.fetch"], env=env)
            for spec in ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"):
                await run_git([*gd, "config", "--add", "remote.origin.fetch", spec], env=env)
            await run_git([*gd, "config", "gc.auto", "0"], env=env)
            tmp.rename(path)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    async def contains(self, remote: Remote, commit: str, ancestor: str) -> bool:
        """Whether ``ancestor`` is in ``commit``'s history (``commit`` is fetched if the
        mirror lacks it): is a merge under a failing commit?"""
        mirror = await self.mirror(remote, want=commit)
        done = await run_git(
            ["--git-dir", str(mirror), "merge-base", "--is-ancestor", ancestor, commit],
            env=git_env(self.home),
            check=False,
        )
        return done.returncode == 0

    def _fetched(self, repo: str, began: float) -> None:
        """Count a successful clone or fetch; waiters who asked before ``began`` reuse it."""
        self.fetches[repo] = self.fetches.get(repo, 0) + 1
        self._fetched_at[repo] = began

    async def _has(self, mirror: Path, rev: str, env: Mapping[str, str]) -> bool:
        done = await run_git(
            ["--git-dir", str(mirror), "cat-file", "-e", f"{rev}^{{commit}}"], env=env, check=False
        )
        return done.returncode == 0

    async def create(
        self,
        remote: Remote,
        *,
        base: str | None,
        branch: str,
        with_base_copy: bool = True,
    ) -> Workspace:
        """A fresh session directory with ``tree/`` (and ``base/``) at the base commit."""
        rev = base or "HEAD"
        if rev.startswith("-") or any(ch.isspace() or ch == "\0" for ch in rev):
            raise WorkspaceError(f"{rev!r} is not a commit or ref name")
        mirror = await self.mirror(remote, want=base if base and FULL_SHA.match(base) else None)
        env = git_env(self.home)
        done = await run_git(
            ["--git-dir", str(mirror), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
            env=env,
            check=False,
        )
        if done.returncode != 0:
            raise WorkspaceError(f"{rev!r} is not a commit of {remote.repo}")
        base_sha = done.stdout.decode().strip()
        session_dir = Path(tempfile.mkdtemp(prefix=f"{slug(branch, 40)}-", dir=self.sessions))
        ws = Workspace(
            repo=remote.repo,
            base_sha=base_sha,
            branch=branch,
            root=session_dir,
            mirror=mirror,
            env=env,
        )
        try:
            await ws._init(with_base_copy=with_base_copy)
        except BaseException:
            ws.remove()
            raise
        return ws
