"""Real bugs from real projects' histories: the manifest, the split and the materialiser.

A bug is a pair of commits of a public project — the one before a fix (buggy) and the
fix — with the fix's fail-to-pass tests and the files it changed, as BugsInPy
(soarsmu/BugsInPy) records them for youtube-dl, black, luigi, cookiecutter, httpie,
fastapi, sanic, tornado and scrapy (the other BugsInPy projects are kept for an
independent measurement). ``bugs.json`` holds only facts about each bug (ids, commits,
paths, test ids, what setup installs, an issue's text): no code of the projects is in
this repository. The trees are read from a clone of each project that the user makes
(``git clone https://github.com/ytdl-org/youtube-dl SOURCES/youtube-dl``): the eval
takes ``--sources SOURCES``.

**Two kinds of task** per bug (:func:`materialise`):

- ``ci``: the buggy tree with the fix's versions of the failing tests' files, as a red
  check on the default branch shows the bug (every bug);
- ``issue``: the buggy tree as it was, and the text of the issue the fix answers (the
  project's own, where the fix names one and its text is known; else written as a user
  would from the test: what was called, what came back, what was expected).

Either way the hidden test (:func:`hidden_tests`) is the fix's versions of the test
files, run on the patched tree in the sandbox.

**The split** (:func:`split_of`): a fixed hash of the bug's id sends a third of the bugs
to ``test`` (run only to report, never studied) and the rest to ``dev``.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import re
import shlex
import shutil
import subprocess
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import yaml

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "bugs.json"
ISSUES = HERE / "issues.json"  # the issue texts, apart: written by hand, merged on load
Kind = Literal["ci", "issue"]
Split = Literal["dev", "test"]
TEST_SHARE = 3  # one bug in three goes to the test split
TEST_COMMAND = "python -m pytest -q -p no:cacheprovider"
_TEST_SIDE = re.compile(r"(?:^|/)tests?/")
AUTHOR = ("Maintainer", "maintainer@example.com")
GIT = shutil.which("git") or "/usr/bin/git"


_FROM_ISSUES = frozenset(("kinds", "issue_title", "issue_text", "issue_source"))


class SourceMissing(SystemExit):
    """No clone of a bug's project under the sources folder."""


@dataclass(frozen=True)
class RealBug:
    """One bug of a real project's history, as ``bugs.json`` records it."""

    id: str  # "youtube-dl-1": the project and BugsInPy's number
    project: str
    repository: str  # the project's public repository
    buggy: str  # the commit before the fix
    fixed: str  # the fix
    test_files: tuple[str, ...]  # the files of the fail-to-pass tests
    tests: tuple[str, ...]  # the fail-to-pass tests, as pytest node ids
    files: tuple[str, ...] = ()  # the non-test files the fix changes
    setup: tuple[str, ...] = ()  # setup's command lines, for Python 3.11 (verified)
    kinds: tuple[Kind, ...] = ("ci",)
    issue_title: str = ""
    issue_text: str = ""
    issue_source: str = ""  # "ytdl-org/youtube-dl#1234", or "written from the test"
    verified: dict[str, Any] = field(default_factory=dict)  # how the fail-to-pass was seen

    @property
    def split(self) -> Split:
        return split_of(self.id)

    def to_json(self) -> dict[str, Any]:
        """The manifest's entry: the issue's text and the kinds live in issues.json."""
        data = {k: v for k, v in self.__dict__.items() if k not in _FROM_ISSUES}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}

    @classmethod
    def of(cls, data: dict[str, Any]) -> RealBug:
        tuples = {k: tuple(v) for k, v in data.items() if isinstance(v, list)}
        return cls(**{**data, **tuples})


def split_of(bug_id: str) -> Split:
    """``test`` for a third of the bugs, by a fixed hash of the id; ``dev`` for the rest."""
    digest = int(hashlib.sha256(bug_id.encode()).hexdigest(), 16)
    return "test" if digest % TEST_SHARE == 0 else "dev"


def order_key(bug_id: str) -> str:
    """A fixed order of bugs that mixes the projects (a hash of the id): the first n
    bugs of a split are the same n whatever else the manifest holds."""
    return hashlib.sha256(f"order:{bug_id}".encode()).hexdigest()


def load(
    path: Path = MANIFEST, *, verified_only: bool = True, issues: Path | None = None
) -> list[RealBug]:
    """The bugs of the manifest (only those verified on Python 3.11, by default), each
    with its issue text where ``issues.json`` has one (an ``issue`` task then too)."""
    bugs = [RealBug.of(item) for item in json.loads(path.read_text())["bugs"]]
    texts = issue_texts(issues or path.parent / ISSUES.name)
    bugs = [_with_issue(b, texts[b.id]) if b.id in texts else b for b in bugs]
    return [b for b in bugs if b.verified.get("ok")] if verified_only else bugs


def issue_texts(path: Path = ISSUES) -> dict[str, dict[str, str]]:
    """``issues.json``: by bug id, the issue a user filed (``title``, ``text``, and its
    ``source``: the project's own issue, or "written from the test")."""
    if not path.exists():
        return {}
    return {k: v for k, v in json.loads(path.read_text())["issues"].items()}


def _with_issue(bug: RealBug, issue: dict[str, str]) -> RealBug:
    kinds: tuple[Kind, ...] = ("ci", "issue")
    return replace(
        bug,
        kinds=kinds,
        issue_title=issue["title"],
        issue_text=issue["text"],
        issue_source=issue["source"],
    )


def save(bugs: Sequence[RealBug], path: Path = MANIFEST) -> None:
    doc = {
        "about": "Real bugs from real projects' histories (bench/realbugs/README.md).",
        "bugs": [b.to_json() for b in sorted(bugs, key=_order)],
    }
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def _order(bug: RealBug) -> tuple[str, int]:
    project, _, number = bug.id.rpartition("-")
    return project, int(number) if number.isdigit() else 0


# -- a project's clone ---------------------------------------------------------------------


def source_of(bug: RealBug, sources: Path) -> Path:
    """The clone of ``bug``'s project under ``sources`` (a work tree or a bare one)."""
    clone = sources / bug.project
    if not (clone / ".git").exists() and not (clone / "HEAD").is_file():
        raise SourceMissing(
            f"no clone of {bug.project} at {clone}: git clone {bug.repository} {clone}"
        )
    return clone


def _git(clone: Path, *args: str, data: bytes | None = None) -> bytes:
    done = subprocess.run(
        [GIT, "-C", str(clone), *args], input=data, capture_output=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {clone}: {done.stderr.decode()[-300:]}")
    return done.stdout


def file_at(clone: Path, commit: str, path: str) -> bytes | None:
    """``path`` as ``commit`` has it, or None when it does not exist there."""
    try:
        return _git(clone, "show", f"{commit}:{path}")
    except RuntimeError:
        return None


def extract(clone: Path, commit: str, dest: Path) -> None:
    """The tree of ``commit`` written to ``dest`` (no git directory): ``git archive``."""
    archive = _git(clone, "archive", "--format=tar", commit)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")


# -- tasks ---------------------------------------------------------------------------------


def config_of(bug: RealBug) -> str:
    """The task repository's ``.github/patchwarden.yml``: setup and the test command, as
    a maintainer would write them (the bug's test files: a project's whole suite reaches
    the network)."""
    doc: dict[str, Any] = {"test": f"{TEST_COMMAND} {shlex.join(bug.test_files)}"}
    if bug.setup:
        doc["setup"] = list(bug.setup)
    return yaml.safe_dump(doc, sort_keys=False)


def materialise(bug: RealBug, sources: Path, dest: Path, *, kind: Kind) -> Path:
    """A git repository at ``dest`` whose one commit is the buggy tree — for ``ci``,
    with the fix's versions of the failing tests' files — and its configuration."""
    clone = source_of(bug, sources)
    dest.mkdir(parents=True)
    extract(clone, bug.buggy, dest)
    if kind == "ci":
        for path, text in hidden_tests(bug, sources).items():
            (dest / path).parent.mkdir(parents=True, exist_ok=True)
            (dest / path).write_bytes(text)
    config = dest / ".github" / "patchwarden.yml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(config_of(bug))
    name, email = AUTHOR
    identity = ["-c", f"user.name={name}", "-c", f"user.email={email}"]
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        [*identity, "commit", "-q", "--no-verify", "-m", f"{bug.project} at {bug.buggy[:12]}"],
    ):
        _git(dest, *args)
    return dest


def hidden_tests(bug: RealBug, sources: Path) -> dict[str, bytes]:
    """The fix's versions of the failing tests' files, and of every file the fix adds or
    changes under a test folder (the data its tests read): what decides whether a
    change fixed the bug."""
    clone = source_of(bug, sources)
    changed = _git(clone, "diff", "--name-only", "--diff-filter=AM", bug.buggy, bug.fixed)
    side = [p for p in changed.decode().splitlines() if _TEST_SIDE.search(p)]
    found = {}
    for path in sorted({*bug.test_files, *side}):
        text = file_at(clone, bug.fixed, path)
        if text is None:
            raise RuntimeError(f"{bug.id}: {path} is not in the fix {bug.fixed[:12]}")
        found[path] = text
    return found


def task_text(bug: RealBug, kind: Kind) -> tuple[str, str]:
    """(title, text) of the task a session is given: a red check, or the issue."""
    if kind == "issue":
        return bug.issue_title, bug.issue_text
    shown = ", ".join(f"`{t}`" for t in bug.tests[:5])
    return (
        f"CI is red on main: {bug.tests[0].rsplit('::', 1)[-1]} fails",
        f"The check `tests` fails on the default branch: {shown}.",
    )


def changed_units(bug: RealBug, sources: Path) -> set[str]:
    """The functions and methods (``path:Class.f``) and module constants (``path:=NAME``)
    that the fix changes: where the bug is."""
    clone = source_of(bug, sources)
    found: set[str] = set()
    for path in bug.files:
        if not path.endswith(".py"):
            continue
        texts = [file_at(clone, c, path) for c in (bug.buggy, bug.fixed)]
        try:
            before, after = (units(t.decode()) if t else {} for t in texts)
        except SyntaxError:
            continue
        found |= {
            f"{path}:{k}"
            for k in before.keys() | after.keys()
            if (before[k][2] if k in before else None) != (after[k][2] if k in after else None)
        }
    return found


def units(text: str) -> dict[str, tuple[int, int, str, set[str]]]:
    """Functions and methods of a module (first line, last line, syntax dump, names it
    reads), and its top-level assignments under "=name"."""
    out: dict[str, tuple[int, int, str, set[str]]] = {}
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            items = [(node.name, node)]
        elif isinstance(node, ast.ClassDef):
            items = [
                (f"{node.name}.{m.name}", m)
                for m in node.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
        else:
            items = []
        for name, fn in items:
            reads = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
            out[name] = (fn.lineno, fn.end_lineno or fn.lineno, ast.dump(fn), reads)
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    end = node.end_lineno or node.lineno
                    out[f"={t.id}"] = (node.lineno, end, ast.dump(node), set())
    return out
