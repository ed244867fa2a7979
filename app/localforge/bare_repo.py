"""The git layer of the local GitHub double: bare repositories driven by the git CLI
(served over HTTP by :mod:`~app.localforge.git_http`).

Every git process gets an isolated environment (no system or user config, no prompts,
``HOME`` = the repository) and a timeout. Nothing here needs a work tree: commits are
built with a temporary index, merges with ``git merge-tree --write-tree``.

Over ~400 lines on purpose: one class, the double's whole use of git (bare repositories,
commits without a work tree, merges) behind one hardened runner.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from app.errors import PatchwardenError

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# A new branch's push lists its 20 latest commits, as the Events API's PushEvent does
# (https://docs.github.com/en/rest/using-the-rest-api/github-event-types#pushevent);
# push webhooks now allow up to 2048, a change callers may want to mirror.
PUSH_COMMITS_CAP = 20
_STATUS = {"A": "added", "D": "removed", "M": "modified", "T": "modified", "R": "renamed"}
_DIFF_OPTIONS = ("-M", "--no-color", "--no-ext-diff", "--no-textconv", "--no-abbrev")
_KINDS = {"040000": "dir", "120000": "symlink", "160000": "submodule"}


class GitError(PatchwardenError):
    """A git command failed; the message names the command and quotes its stderr."""

    def __init__(self, argv: Sequence[str], stderr: str) -> None:
        self.argv, self.stderr = list(argv), stderr.strip()
        super().__init__(f"`{shlex.join(self.argv)}` failed: {self.stderr or '(no stderr)'}")


@dataclass(frozen=True)
class Person:
    name: str
    email: str


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    tree: str
    parents: tuple[str, ...]
    message: str
    author: Person
    authored_at: str
    committer: Person
    committed_at: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    modified: tuple[str, ...]


@dataclass(frozen=True)
class FileChange:
    filename: str
    status: str
    additions: int
    deletions: int
    changes: int
    patch: str | None  # None when there is no text hunk (binary, empty, mode-only)
    # as in https://docs.github.com/en/rest/pulls/pulls#list-pull-requests-files
    sha: str
    previous_filename: str | None


@dataclass(frozen=True)
class Entry:
    path: str
    kind: str
    sha: str
    size: int
    content: bytes | None
    children: tuple[Entry, ...]


def git_env(home: Path) -> dict[str, str]:
    """The whole environment of a git process: nothing inherited but PATH."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_LITERAL_PATHSPECS": "1",
        "LC_ALL": "C",
    }


def _ident(person: Person, role: str, date: str | None = None) -> dict[str, str]:
    env = {f"GIT_{role}_NAME": person.name, f"GIT_{role}_EMAIL": person.email}
    if date:
        env[f"GIT_{role}_DATE"] = date
    return env


def _safe_path(path: str) -> bool:
    parts = path.split("/")
    return "\0" not in path and all(p not in ("", ".", "..") and p.lower() != ".git" for p in parts)


class BareRepo:
    """One bare repository on disk."""

    def __init__(self, path: Path, *, timeout: float = 60.0) -> None:
        self.path = path
        self.timeout = timeout

    # -- plumbing ----------------------------------------------------------------------
    def _git(
        self,
        *args: str,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        ok: tuple[int, ...] = (0,),
    ) -> subprocess.CompletedProcess[bytes]:
        argv = ["git", f"--git-dir={self.path}", *args]
        full_env = git_env(self.path) | dict(env or {})
        try:
            proc = subprocess.run(  # noqa: S603 - argv list, no shell, isolated env
                argv,
                input=input,
                env=full_env,
                capture_output=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise GitError(argv, f"timed out after {self.timeout} s") from exc
        if proc.returncode not in ok:
            raise GitError(argv, proc.stderr.decode(errors="replace"))
        return proc

    def _out(self, *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None,
             ok: tuple[int, ...] = (0,)) -> str:  # fmt: skip
        return self._git(*args, input=input, env=env, ok=ok).stdout.decode(errors="replace").strip()

    def _commit_tree(
        self,
        tree: str,
        parents: Sequence[str],
        message: bytes | str,
        author: Person,
        committer: Person,
        author_date: str | None = None,
    ) -> str:
        if isinstance(message, str):
            message = message.encode() + (b"" if message.endswith("\n") else b"\n")
        env = _ident(author, "AUTHOR", author_date) | _ident(committer, "COMMITTER")
        args = [a for p in parents for a in ("-p", p)]
        return self._out("commit-tree", tree, *args, input=message, env=env)

    def _stage(self, tmp: Path, items: Mapping[str, tuple[str, Path | bytes] | None]) -> str:
        """Apply {path: (mode, file or bytes) | None} to the index in tmp; return the tree."""
        writes = {p: v for p, v in items.items() if v is not None}
        files = [str(_spill(tmp / f"blob{n}", data)) for n, (_, data) in enumerate(writes.values())]
        shas: list[str] = []
        for i in range(0, len(files), 500):  # bounded argv
            shas += self._out(
                "hash-object", "-w", "--no-filters", "--", *files[i : i + 500]
            ).split()
        sha_of = dict(zip(writes, shas, strict=True))
        info = "".join(
            f"{v[0]} {sha_of[p]}\t{p}\0" if v else f"0 {'0' * 40}\t{p}\0" for p, v in items.items()
        )  # mode 0 removes the path
        env = {"GIT_INDEX_FILE": str(tmp / "index")}
        self._git("update-index", "-z", "--index-info", input=os.fsencode(info), env=env)
        return self._out("write-tree", env=env)

    # -- creation ----------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path, *, default_branch: str = "main") -> BareRepo:
        """``git init --bare`` with HEAD on default_branch; pushes over HTTP allowed."""
        path.mkdir(parents=True)
        repo = cls(path)
        repo._git("init", "--quiet", "--bare", "--template=", str(path))
        repo._git("symbolic-ref", "HEAD", f"refs/heads/{default_branch}")
        for key, value in [
            ("http.receivepack", "true"),
            ("receive.denyNonFastForwards", "false"),
            ("receive.fsckObjects", "true"),
        ]:
            repo._git("config", key, value)
        return repo

    @classmethod
    def from_directory(
        cls,
        path: Path,
        source: Path,
        *,
        default_branch: str = "main",
        author: Person = Person("Forge", "forge@localforge.invalid"),
        message: str = "Initial commit",
    ) -> BareRepo:
        """A repo from a git work tree (all local branches) or a plain directory (one commit)."""
        repo = cls.create(path, default_branch=default_branch)
        branch = f"refs/heads/{default_branch}"
        if (source / ".git").exists():
            # Fetch into the bare repo: no hook or config of the source runs on our side.
            src_head = "refs/localforge/source-head"
            repo._git("fetch", "--quiet", "--no-tags", str(source.resolve()),
                      "refs/heads/*:refs/heads/*", f"HEAD:{src_head}")  # fmt: skip
            head = repo.resolve(src_head)
            repo.delete_ref(src_head)
            if head and repo.resolve(branch) is None:
                repo.create_ref(branch, head)
            return repo
        with tempfile.TemporaryDirectory(prefix="localforge-") as tmp:
            tree = repo._stage(Path(tmp), dict(_scan(source)))
            repo.create_ref(branch, repo._commit_tree(tree, [], message, author, author))
        return repo

    # -- refs --------------------------------------------------------------------------
    def refs(self) -> dict[str, str]:
        """Every ref and the object it points at."""
        out = self._out("for-each-ref", "--format=%(objectname) %(refname)")
        return {ref: sha for sha, ref in (line.split(" ", 1) for line in out.splitlines())}

    def resolve(self, rev: str) -> str | None:
        """The commit sha rev names, or None."""
        if not rev or rev.startswith("-"):
            return None
        sha = self._out("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", ok=(0, 1, 128))
        return sha or None

    def update_ref(self, ref: str, new: str, old: str | None = None) -> bool:
        """Point ref at new; with old (``""`` = must not exist) only if ref is at old now."""
        args = [] if old is None else [old]
        proc = self._git("update-ref", ref, new, *args, ok=(0, 1, 128))
        if proc.returncode and b"cannot lock ref" not in proc.stderr:
            raise GitError(["git", "update-ref", ref, new, *args], proc.stderr.decode())
        return proc.returncode == 0

    def create_ref(self, ref: str, sha: str) -> bool:
        """Create ref at sha; False if it already exists."""
        return self.update_ref(ref, sha, "")

    def delete_ref(self, ref: str) -> bool:
        """Delete ref; False if it did not exist."""
        current = self.refs().get(ref)
        if current is None:
            return False
        proc = self._git("update-ref", "-d", ref, current, ok=(0, 1, 128))
        return proc.returncode == 0

    # -- reading -----------------------------------------------------------------------
    def entry(self, rev: str, path: str) -> Entry | None:
        """The file, dir, symlink or submodule at path in rev; None when either is missing."""
        commit, path = self.resolve(rev), path.strip("/")
        if commit is None or (path and not _safe_path(path)):
            return None
        if not path:
            return self._with_children(Entry("", "dir", self._tree(commit), 0, None, ()))
        found = [e for _, e in self._ls_tree(commit, path) if e.path == path]
        if not found:
            return None
        e = found[0]
        if e.kind == "dir":
            return self._with_children(e)
        if e.kind in ("file", "symlink"):
            content = self._git("cat-file", "blob", e.sha).stdout
            return Entry(e.path, e.kind, e.sha, e.size, content, ())
        return e

    def _ls_tree(
        self, treeish: str, *paths: str, recursive: bool = False
    ) -> Iterator[tuple[str, Entry]]:
        """(mode, entry without content) for each entry of treeish, or of paths in it."""
        args = ["-r"] if recursive else []
        out = self._git("ls-tree", "-z", "-l", "--full-tree", *args, treeish, "--", *paths).stdout
        for record in filter(None, out.split(b"\0")):
            meta, name = record.split(b"\t", 1)
            mode, _, sha, size = meta.decode().split()
            kind, path = _KINDS.get(mode, "file"), os.fsdecode(name)
            yield mode, Entry(path, kind, sha, 0 if size == "-" else int(size), None, ())

    def _with_children(self, d: Entry) -> Entry:
        prefix = f"{d.path}/" if d.path else ""
        kids = tuple(
            Entry(prefix + c.path, c.kind, c.sha, c.size, None, ()) for _, c in self._ls_tree(d.sha)
        )
        return Entry(d.path, "dir", d.sha, 0, None, kids)

    def merge_base(self, a: str, b: str) -> str | None:
        ca, cb = self.resolve(a), self.resolve(b)
        if ca is None or cb is None:
            return None
        return self._out("merge-base", ca, cb, ok=(0, 1)) or None

    def is_ancestor(self, a: str, b: str) -> bool:
        ca, cb = self.resolve(a), self.resolve(b)
        if ca is None or cb is None:
            return False
        return self._git("merge-base", "--is-ancestor", ca, cb, ok=(0, 1)).returncode == 0

    def _header(self, sha: str) -> list[str]:
        fmt = "%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B"
        raw = self._git("show", "-s", f"--format={fmt}", sha).stdout.decode(errors="replace")
        return raw.removesuffix("\n").split("\0", 9)

    def commit(self, sha: str) -> CommitInfo:
        """One commit, with the paths it added, removed and modified vs its first parent."""
        commit = self.resolve(sha)
        if commit is None:
            raise GitError(["git", "rev-parse", sha], f"no commit {sha!r}")
        h, tree, parents, an, ae, ad, cn, ce, cd, msg = self._header(commit)
        parent = parents.split()[0] if parents else EMPTY_TREE
        out = self._git("diff-tree", "-r", "-z", "--no-renames", "--name-status", parent, h)
        fields = out.stdout.decode(errors="surrogateescape").split("\0")
        changed: dict[str, list[str]] = {"A": [], "D": [], "M": [], "T": []}
        for status, path in zip(fields[0::2], fields[1::2], strict=False):
            changed.setdefault(status, []).append(path)
        return CommitInfo(
            sha=h, tree=tree, parents=tuple(parents.split()), message=msg.rstrip("\n"),
            author=Person(an, ae), authored_at=ad, committer=Person(cn, ce), committed_at=cd,
            added=tuple(changed["A"]), removed=tuple(changed["D"]),
            modified=tuple(changed["M"] + changed["T"]),
        )  # fmt: skip

    def commits_between(self, old: str | None, new: str) -> list[CommitInfo]:
        """old..new, oldest first; without old, the 20 most recent commits of new."""
        args = ["--max-count", str(PUSH_COMMITS_CAP)] if old is None else [f"^{old}"]
        new_sha = self.resolve(new)
        if new_sha is None or (old is not None and self.resolve(old) is None):
            raise GitError(["git", "rev-list", f"{old}..{new}"], "unknown revision")
        shas = self._out("rev-list", "--reverse", "--topo-order", new_sha, *args).split()
        return [self.commit(s) for s in shas]

    # -- the Git Data API ----------------------------------------------------------
    def object_type(self, sha: str) -> str | None:
        """ "blob", "tree", "commit" or "tag"; None if there is no such object."""
        if not re.fullmatch(r"[0-9a-f]{40}", sha or ""):
            return None
        out = self._out("cat-file", "-t", sha, ok=(0, 1, 128))
        return out or None

    def write_blob(self, data: bytes) -> str:
        """Store ``data`` as a blob; its sha."""
        return self._out("hash-object", "-w", "--no-filters", "--stdin", input=data)

    def write_tree(
        self, base_tree: str | None, entries: Sequence[tuple[str, str, str | None]]
    ) -> str:
        """The tree ``base_tree`` (or an empty one) with ``entries`` applied: (path, mode,
        sha), a None sha removing the path. Objects must exist (the caller checks)."""
        info = "".join(
            f"{mode} {sha}\t{path}\0" if sha else f"0 {'0' * 40}\t{path}\0"
            for path, mode, sha in entries
        )
        with tempfile.TemporaryDirectory(prefix="localforge-tree-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            if base_tree:
                self._git("read-tree", base_tree, env=env)
            self._git("update-index", "-z", "--index-info", input=os.fsencode(info), env=env)
            return self._out("write-tree", env=env)

    def tree_entries(self, tree: str) -> list[tuple[str, Entry]]:
        """(mode, entry) for each top-level entry of ``tree``."""
        return list(self._ls_tree(tree))

    def write_commit(
        self,
        tree: str,
        parents: Sequence[str],
        message: str,
        *,
        author: Person,
        committer: Person,
        author_date: str | None = None,
    ) -> str:
        """A commit object (no ref moves); the message is kept byte for byte."""
        return self._commit_tree(tree, parents, message.encode(), author, committer, author_date)

    # -- merging -----------------------------------------------------------------------
    def _tree(self, commit: str) -> str:
        return self._out("rev-parse", f"{commit}^{{tree}}")

    def _merge_tree(self, ours: str, theirs: str) -> str | None:
        proc = self._git("merge-tree", "--write-tree", ours, theirs, ok=(0, 1))
        return proc.stdout.decode().split("\n", 1)[0] if proc.returncode == 0 else None

    def mergeable(self, base: str, head: str) -> bool:
        """Whether head merges into base without conflicts."""
        if self.merge_base(base, head) is None:
            return False
        return self._merge_tree(base, head) is not None

    def merge(
        self, base: str, head: str, *, method: str, message: str, author: Person, committer: Person
    ) -> str | None:
        """The commit a "merge", "squash" or "rebase" of head into base makes (no ref moves).

        None on conflicts. Returns base itself when head is already in it.
        """
        b, h = self.resolve(base), self.resolve(head)
        if b is None or h is None or (mb := self.merge_base(b, h)) is None:
            raise GitError(["git", "merge-base", base, head], "no common history")
        if self.is_ancestor(h, b):
            return b
        if method == "rebase":
            return self._rebase(b, h, mb, committer)
        if method not in ("merge", "squash"):
            raise ValueError(f"unknown merge method {method!r}")
        tree = self._merge_tree(b, h)
        if tree is None:
            return None
        parents = [b, h] if method == "merge" else [b]
        return self._commit_tree(tree, parents, message, author, committer)

    def _rebase(self, onto: str, head: str, mb: str, committer: Person) -> str | None:
        # git 2.39's merge-tree has no --merge-base, so each pick merges two throwaway
        # commits whose only common ancestor carries the picked commit's parent tree.
        forge = Person("localforge", "localforge@localforge.invalid")
        picks = self._out("rev-list", "--reverse", "--topo-order", "--no-merges", f"^{mb}", head)
        for sha in picks.split():
            h, tree, parents, an, ae, ad, *_ = self._header(sha)
            base_tree = self._tree(parents.split()[0]) if parents else EMPTY_TREE
            p = self._commit_tree(base_tree, [], "pick base", forge, forge)
            ours = self._commit_tree(self._tree(onto), [p], "onto", forge, forge)
            picked = self._merge_tree(ours, self._commit_tree(tree, [p], "pick", forge, forge))
            if picked is None:
                return None
            raw = self._git("cat-file", "commit", h).stdout.split(b"\n\n", 1)[1]
            onto = self._commit_tree(picked, [onto], raw, Person(an, ae), committer, author_date=ad)
        return onto

    # -- diffs -------------------------------------------------------------------------
    def diff_files(self, base: str, head: str) -> list[FileChange]:
        """The files of a pull request: merge-base(base, head)..head, renames detected."""
        mb, h = self.merge_base(base, head), self.resolve(head)
        if mb is None or h is None:
            raise GitError(["git", "merge-base", base, head], "no common history")
        common = [*_DIFF_OPTIONS, mb, h]
        raw = self._git("diff", "--raw", "-z", *common).stdout.decode(errors="surrogateescape")
        patch = self._git("diff", "--patch", *common).stdout.decode(errors="replace")
        sections = re.split(r"^diff --git ", patch, flags=re.M)[1:]
        entries = list(_raw_entries(raw))
        if len(sections) != len(entries):
            raise GitError(["git", "diff", *common], "raw and patch output disagree")
        changes = []
        for (status, old_sha, new_sha, src, dst), section in zip(entries, sections, strict=True):
            hunks = section[m.start() :] if (m := re.search(r"^@@", section, re.M)) else None
            lines = hunks.splitlines() if hunks else []
            adds = sum(1 for line in lines if line.startswith("+"))
            dels = sum(1 for line in lines if line.startswith("-"))
            changes.append(FileChange(
                dst, _STATUS.get(status, "modified"), adds, dels, adds + dels,
                hunks.removesuffix("\n") if hunks else None,
                old_sha if status == "D" else new_sha, src if status == "R" else None,
            ))  # fmt: skip
        return sorted(changes, key=lambda c: c.filename)

    # -- writing -----------------------------------------------------------------------
    def commit_files(
        self, branch: str, files: Mapping[str, str | bytes | None], *, message: str, author: Person
    ) -> str:
        """Commit writes (str/bytes) and deletions (None) on top of branch; return the sha."""
        if bad := [p for p in files if not _safe_path(p)]:
            raise ValueError(f"invalid paths: {bad!r}")
        ref = f"refs/heads/{branch}"
        old = self.resolve(ref)
        keep = {e.path for m, e in self._ls_tree(old, *files) if m == "100755"} if old else set()
        with tempfile.TemporaryDirectory(prefix="localforge-") as tmp:
            if old:
                self._git("read-tree", old, env={"GIT_INDEX_FILE": str(Path(tmp) / "index")})
            items = {
                p: None if c is None else
                ("100755" if p in keep else "100644", c.encode() if isinstance(c, str) else c)
                for p, c in files.items()
            }  # fmt: skip
            tree = self._stage(Path(tmp), items)
        sha = self._commit_tree(tree, [old] if old else [], message, author, author)
        if not self.update_ref(ref, sha, old or ""):
            raise GitError(["git", "update-ref", ref, sha, old or ""], f"{ref} moved concurrently")
        return sha

    def export(self, rev: str, dest: Path) -> None:
        """Write the files of rev into dest, as stored: no attributes, filters or .git."""
        commit = self.resolve(rev)
        if commit is None:
            raise GitError(["git", "rev-parse", rev], f"no commit {rev!r}")
        entries = list(self._ls_tree(commit, recursive=True))
        blobs = [e for _, e in entries if e.kind in ("file", "symlink")]
        batch = self._git(
            "cat-file", "--batch", input="".join(f"{e.sha}\n" for e in blobs).encode()
        )
        contents: dict[str, bytes] = {}
        pos = 0
        for e in blobs:  # each answer is "<sha> <type> <size>\n<content>\n"
            start = batch.stdout.index(b"\n", pos) + 1
            contents[e.path], pos = batch.stdout[start : start + e.size], start + e.size + 1
        dest.mkdir(parents=True, exist_ok=True)
        if any(dest.iterdir()):
            raise FileExistsError(f"{dest} is not empty")
        links: set[str] = set()
        for mode, e in entries:
            if not _safe_path(e.path) or any(e.path.startswith(f"{ln}/") for ln in links):
                raise GitError(["git", "ls-tree", "-r", commit], f"unsafe path {e.path!r} in tree")
            target = dest / e.path
            target.parent.mkdir(parents=True, exist_ok=True)
            if e.kind == "submodule":
                target.mkdir()
            elif e.kind == "symlink":
                links.add(e.path)
                target.symlink_to(contents[e.path].decode(errors="surrogateescape"))
            else:
                target.write_bytes(contents[e.path])
                target.chmod(0o755 if mode == "100755" else 0o644)


def _raw_entries(raw: str) -> Iterator[tuple[str, str, str, str, str]]:
    """(status letter, old sha, new sha, old path, new path) from ``git diff --raw -z``."""
    fields = iter(raw.split("\0"))
    for meta in fields:
        if not meta:
            continue
        _, _, old_sha, new_sha, status = meta.lstrip(":").split()
        src = next(fields)
        dst = next(fields) if status[0] in "RC" else src
        yield status[0], old_sha, new_sha, src, dst


def _spill(path: Path, data: Path | bytes) -> Path:
    """data itself when it is a file, else a file at path holding it."""
    if isinstance(data, bytes):
        path.write_bytes(data)
        return path
    return data


def _scan(source: Path) -> Iterator[tuple[str, tuple[str, Path | bytes]]]:
    """(path, (mode, file or link target)) for every file and symlink under source."""
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = sorted(d for d in dirnames if d.lower() != ".git")
        here = Path(dirpath)
        names = [*filenames, *(d for d in dirnames if (here / d).is_symlink())]
        for name in (n for n in names if n.lower() != ".git"):
            full = here / name
            rel = full.relative_to(source).as_posix()
            if full.is_symlink():
                yield rel, ("120000", os.readlink(full).encode())
            elif full.is_file():
                yield rel, ("100755" if os.access(full, os.X_OK) else "100644", full)


# -- smart HTTP ------------------------------------------------------------------------
