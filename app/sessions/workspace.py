"""Workspaces: a fresh tree per session, made from the repository's mirror
(:mod:`app.sessions.mirrors`). Each session gets its own
git directory that borrows the mirror's objects (``objects/info/alternates``) and
two checkouts of the base commit: ``tree/`` (what the fixer edits; it becomes the
patch) and ``base/`` (the untouched base, for the setup phase, the base test run and
the base side of the linters).

The session's git directory lives *outside* the trees, so code running in the
sandbox never sees a ``.git`` it could plant hooks or config in; host-side git always
runs with ``--git-dir``/``--work-tree``, no system or global config, hooks and
fsmonitor off. A token for fetching goes in git's environment as an
``http.<url>.extraHeader`` (``GIT_CONFIG_COUNT``), never in a URL or argv.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from app.git import LOCAL_AUTHOR, Author, GitError, run_git
from app.policy.diff import TRUNCATION_MARK, parse_diff
from app.policy.secrets import scan_added
from app.redact import redact
from app.sessions.files import remove_confined
from app.sessions.result import Diff, FileStat

DIFF_CAP = 2 * 1024 * 1024  # bytes of unified diff kept in the SessionResult
FULL_SHA = re.compile(r"[0-9a-f]{40}\Z")
_TAG_VERSION = re.compile(r"(\d+(?:\.\d+)*)")
_DESCRIBE = re.compile(r"^(?P<tag>.+)-(?P<distance>\d+)-g(?P<sha>[0-9a-f]+)$")
_STATUS = {"A": "added", "M": "modified", "D": "removed", "R": "renamed", "T": "type-changed"}


class WorkspaceError(GitError):
    """A step of the workspace failed; the message names it and quotes git."""


@dataclass
class Workspace:
    repo: str
    base_sha: str
    branch: str
    root: Path
    mirror: Path
    env: dict[str, str]

    @property
    def git_dir(self) -> Path:
        return self.root / "git"

    @property
    def tree(self) -> Path:
        return self.root / "tree"

    @property
    def base_tree(self) -> Path:
        return self.root / "base"

    async def git(self, *args: str, check: bool = True, index: Path | None = None) -> str:
        env = dict(self.env)
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        done = await run_git(
            ["--git-dir", str(self.git_dir), "--work-tree", str(self.tree), *args],
            env=env,
            check=check,
        )
        return done.stdout.decode("utf-8", "replace")

    async def _init(self, *, with_base_copy: bool) -> None:
        await run_git(["init", "--quiet", "--bare", str(self.git_dir)], env=self.env)
        (self.git_dir / "objects" / "info" / "alternates").write_text(
            str(self.mirror / "objects") + "\n"
        )
        # Trees are written and read byte for byte: no end-of-line or ident conversion
        # and no filters, whatever the repository's .gitattributes say (info/attributes
        # wins over them). Otherwise a file stored with CRLF under `eol=crlf` or
        # `text=auto` is "changed" by every commit: the patch would rewrite it whole.
        (self.git_dir / "info").mkdir(exist_ok=True)
        (self.git_dir / "info" / "attributes").write_text(
            "* -text -eol -ident -filter -working-tree-encoding\n"
        )
        await self.git("config", "core.bare", "false")
        await self.git("update-ref", f"refs/heads/{self.branch}", self.base_sha)
        await self.git("symbolic-ref", "HEAD", f"refs/heads/{self.branch}")
        self.tree.mkdir()
        await self.git("read-tree", "--reset", "-u", "HEAD")
        if with_base_copy:
            await self.checkout_copy(self.base_sha, self.base_tree)

    async def commit_all(self, message: str, author: Author = LOCAL_AUTHOR) -> str | None:
        """Stage every change in ``tree/`` and commit it on the branch, by ``author``
        (the committer too); None if no change."""
        await self.git("add", "--all", "--", ".")
        done = await run_git(
            [
                "--git-dir",
                str(self.git_dir),
                "--work-tree",
                str(self.tree),
                "diff",
                "--cached",
                "--quiet",
                self.base_sha,
            ],
            env=self.env,
            check=False,
        )
        if done.returncode == 0:
            return None
        await self.git(
            "-c",
            f"user.name={author.name}",
            "-c",
            f"user.email={author.email}",
            "commit",
            "--quiet",
            "--no-verify",
            "--allow-empty-message",
            "-m",
            message,
        )
        return (await self.git("rev-parse", "HEAD")).strip()

    async def diff(
        self, head: str, *, known_secrets: Sequence[str] = (), allow: Sequence[str] = ()
    ) -> Diff:
        """The patch from the base to ``head``: unified text (capped) and per-file stats.

        ``allow``: the policy's ``secrets.allow`` patterns. Values they match are neither
        credentials in ``Diff.secrets`` nor masked in the text, so the policy, reading
        the stored diff again, sees them as the examples they are."""
        options = ["--no-color", "--no-ext-diff", "--no-textconv", "-M", "--no-abbrev"]
        text = await self.git("diff", "--binary", *options, self.base_sha, head)
        numstat = await self.git("diff", "--numstat", "-z", *options, self.base_sha, head)
        raw = await self.git("diff", "--raw", "-z", *options, self.base_sha, head)
        # Credentials are looked for before masking: the policy must see them, and a
        # masked `Authorization` value cannot tell a literal from a variable any more.
        # The fixer wrote these lines: a `pragma: allowlist secret` in them waives nothing.
        secrets = [
            hit
            for f in parse_diff(text).files
            for hit in scan_added(f.path, f.added_lines, allow=allow, pragma=False)
        ]
        truncated = len(text) > DIFF_CAP
        if truncated:
            text = text[:DIFF_CAP] + f"\n{TRUNCATION_MARK}\n"
        return Diff(
            unified=redact(text, known=known_secrets, allow=allow),
            truncated=truncated,
            files=_file_stats(raw, numstat),
            secrets=secrets,
        )

    async def scm_version(self, sha: str | None = None) -> str:
        """The version setuptools-scm or hatch-vcs would compute for ``sha`` (the base
        commit by default) from the repository's tags (the sandbox has no ``.git``)."""
        sha = sha or self.base_sha
        mirror = ["--git-dir", str(self.mirror)]  # the tags are the mirror's
        describe = ["describe", "--tags", "--long", "--match=*[0-9]*", sha]
        described = (await run_git([*mirror, *describe], env=self.env, check=False)).stdout
        counted = await run_git([*mirror, "rev-list", "--count", sha], env=self.env, check=False)
        commits = counted.stdout.decode().strip()
        return version_from_describe(
            described.decode("utf-8", "replace"),
            commits=int(commits) if commits.isdigit() else 0,
            sha=sha,
        )

    async def changed_between(self, a: str, b: str, pathspecs: Sequence[str]) -> list[str]:
        """Paths matching ``pathspecs`` that differ between commits ``a`` and ``b``."""
        out = await self.git("diff", "--name-only", "-z", "--no-renames", a, b, "--", *pathspecs)
        return [p for p in out.split("\0") if p]

    async def checkout_copy(self, sha: str, into: Path) -> None:
        """A plain checkout of ``sha`` at ``into`` (no git directory in it), from the
        session's own objects on the host."""
        await asyncio.to_thread(into.mkdir, parents=True)
        index = self.root / f"{into.name}.index"
        await run_git(
            [
                *("--git-dir", str(self.git_dir), "--work-tree", str(into)),
                *("read-tree", "--reset", "-u", sha),
            ],
            env={**self.env, "GIT_INDEX_FILE": str(index)},
        )

    def exclude(self, paths: Sequence[str]) -> None:
        """Leave ``paths`` out of every commit and of :meth:`changed_paths` (files the
        setup phase generated in the tree: they are not part of any patch)."""
        if not paths:
            return
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        # A name with a newline would add a line of its own: such a file stays out of
        # the exclusions (and, untracked, shows in the patch, where a person sees it).
        plain = [p for p in paths if "\n" not in p and "\r" not in p]
        lines = ["/" + re.sub(r"([\\*?\[\]!# ])", r"\\\1", p) for p in plain]
        with (info / "exclude").open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")

    async def keep_branch(self, head: str) -> None:
        """Store the patch commit in the mirror (``refs/patchwarden/<branch>``) for
        publishing; a later fetch --prune of branches and tags leaves it alone."""
        await run_git(
            [
                "--git-dir",
                str(self.git_dir),
                "push",
                "--quiet",
                "--no-verify",
                str(self.mirror),
                f"+{head}:refs/patchwarden/{self.branch}",
            ],
            env=self.env,
        )

    async def changed_paths(self) -> list[str]:
        """Paths of ``tree/`` that differ from the base commit, untracked ones included
        (ignored files are left out, as :meth:`commit_all` leaves them out)."""
        await self.git("add", "--all", "--", ".")
        out = await self.git("diff", "--cached", "--name-only", "-z", "--no-renames", self.base_sha)
        await self.git("read-tree", self.base_sha)  # the index back to the base
        return [p for p in out.split("\0") if p]

    async def restore(self, paths: Sequence[str]) -> None:
        """Put ``paths`` back as the base commit has them; paths it lacks are deleted."""
        tracked: list[str] = []
        for path in paths:
            done = await run_git(
                ["--git-dir", str(self.git_dir), "cat-file", "-e", f"{self.base_sha}:{path}"],
                env=self.env,
                check=False,
            )
            if done.returncode == 0:
                tracked.append(path)
            else:
                remove_confined(self.tree, path)
        if tracked:
            # git refuses to write through a symlinked leading directory, so a tree the
            # sandbox wrote cannot redirect this outside itself.
            await run_git(
                [
                    "--git-dir",
                    str(self.git_dir),
                    "--work-tree",
                    str(self.tree),
                    "checkout",
                    self.base_sha,
                    "--pathspec-from-file=-",
                    "--pathspec-file-nul",
                ],
                env=self.env,
                stdin="\0".join(tracked).encode(),
            )

    def remove(self) -> None:
        """Delete the session directory, including read-only files the sandbox made."""

        def unlock(func: object, path: str, _exc: object) -> None:
            with contextlib.suppress(OSError):
                os.chmod(os.path.dirname(path), stat.S_IRWXU)
                if os.path.isdir(path) and not os.path.islink(path):
                    os.chmod(path, stat.S_IRWXU)
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)

        shutil.rmtree(self.root, onerror=unlock)


def version_from_describe(described: str, *, commits: int, sha: str) -> str:
    """The version setuptools-scm's default scheme gives, from ``git describe --tags
    --long``: ``1.2.3`` on the tag itself, ``1.2.4.dev5+gabc1234`` five commits after
    it, ``0.1.devN+g…`` (N commits in all) with no usable tag."""
    short = sha[:7]
    m = _DESCRIBE.match(described.strip())
    number = _TAG_VERSION.search(m.group("tag")) if m else None
    if m is None or number is None:
        return f"0.1.dev{commits}+g{short}"
    parts = number.group(1).split(".")
    distance = int(m.group("distance"))
    if distance == 0:
        return ".".join(parts)
    parts[-1] = str(int(parts[-1]) + 1)
    return f"{'.'.join(parts)}.dev{distance}+g{short}"


def _file_stats(raw: str, numstat: str) -> list[FileStat]:
    counts: dict[str, tuple[int, int, bool]] = {}
    parts = numstat.split("\0")
    i = 0
    while i < len(parts) - 1:
        fields = parts[i].split("\t")
        if len(fields) < 3:
            break
        a, r, path = fields
        if path == "":  # a rename: old and new paths follow
            path = parts[i + 2]
            i += 3
        else:
            i += 1
        binary = a == "-"
        counts[path] = (0 if binary else int(a), 0 if binary else int(r), binary)
    stats: list[FileStat] = []
    items = raw.split("\0")
    i = 0
    while i < len(items) - 1:
        meta = items[i]
        if not meta.startswith(":"):
            i += 1
            continue
        old_mode, new_mode, _, _, status = meta[1:].split(" ")
        letter = status[0]
        if letter in ("R", "C"):
            old_path, path = items[i + 1], items[i + 2]
            i += 3
        else:
            old_path, path = None, items[i + 1]
            i += 2
        added, removed, binary = counts.get(path, (0, 0, False))
        stats.append(
            FileStat(
                path=path,
                old_path=old_path,
                status=_STATUS.get(letter, "modified"),  # type: ignore[arg-type]
                added=added,
                removed=removed,
                binary=binary,
                old_mode=None if old_mode == "000000" else old_mode,
                new_mode=None if new_mode == "000000" else new_mode,
            )
        )
    return stats


def slug(text: str, limit: int) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-")
    return slug or "session"


def branch_name(job_id: int | str | None, task: str) -> str:
    """``patchwarden/<job-id>-<slug>``: deterministic, so a retried job reuses it."""
    prefix = f"{job_id}-" if job_id is not None else ""
    return f"patchwarden/{prefix}{slug(task, 40)}"


def elapsed(started: float) -> float:
    return round(time.monotonic() - started, 4)
