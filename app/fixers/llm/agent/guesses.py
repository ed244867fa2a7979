"""What a small model plainly meant when it named something that is not there.

A small model misremembers paths (``tests/batching.py`` for ``tests/test_batching.py``),
edits at a path that does not exist with ``old`` copied from the right file, searches
for the issue's title as one phrase, runs a test by a name the file does not have, and
creates a test file that exists already. Answered only with an error, each of these
can make it repeat the same call until the loop stops it. The guesses here are taken
only where there is one reading (one file, clearly nearest), the answer always says what
was done instead, and they only read the confined tree, never follow a symlink.
"""

from __future__ import annotations

import ast
import difflib
import posixpath
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from app.fixers.interface import walk_files
from app.fixers.llm.code_context import looks_like_test
from app.fixers.llm.imports import module_name, unbound
from app.sessions.files import read_confined
from app.sessions.sandbox import WORKSPACE

MAX_FILE_BYTES = 1024 * 1024  # the most the tools read of one file
# What a guess may read; a larger repository gets no guess (or, listing files that
# have some words, a partial one).
MAX_SCANNED = 6000
MAX_SCANNED_BYTES = 32 * 1024 * 1024
MAX_WORDS = 12  # of a phrase, looked for in one pass


class _TooLarge(Exception):
    """The repository is larger than a guess may read."""


def _texts(tree: Path, *, python: bool = False) -> Iterator[tuple[str, str]]:
    """(path, text) of the repository's text files (``python``: its modules that are not
    tests), read confined; raises _TooLarge past MAX_SCANNED files or bytes."""
    read = 0
    for n, (rel, link) in enumerate(walk_files(tree, tree)):
        if n >= MAX_SCANNED or read > MAX_SCANNED_BYTES:
            raise _TooLarge
        if link or (python and (not rel.endswith(".py") or looks_like_test(rel))):
            continue
        data = read_confined(tree, rel, limit=MAX_FILE_BYTES)
        if data is None or b"\0" in data[:8192]:
            continue
        read += len(data)
        yield rel, data.decode("utf-8", "replace")


def _paths(tree: Path) -> list[str] | None:
    """The repository's files (no symlinks), or None past MAX_SCANNED of them."""
    found: list[str] = []
    for rel, link in walk_files(tree, tree):
        if len(found) >= MAX_SCANNED:
            return None
        if not link:
            found.append(rel)
    return found


def is_file(tree: Path, rel: str) -> bool:
    """Whether ``tree/rel`` is a regular file reached without any symlink."""
    return read_confined(tree, rel, limit=0) is not None


# Words of an issue's prose that say nothing about where the code is.
_COMMON = frozenset(
    re.findall(
        r"\w+",
        "that this with when from have does should must into than then them they what "
        "which while where there their were been being will would could make makes made "
        "fails fail error returns return wrong work works still only also like instead",
    )
)


def _is_test_module(rel: str) -> bool:
    name = posixpath.basename(rel)
    return name.endswith(".py") and looks_like_test(rel) and name != "conftest.py"


def _closer(rel: str, best: str, second: str) -> bool:
    """Whether ``best`` is clearly nearer ``rel`` than ``second``."""
    ratio = difflib.SequenceMatcher(None, rel, best).ratio()
    return ratio - difflib.SequenceMatcher(None, rel, second).ratio() > 0.1


def tests_in(tree: Path, output: str) -> str:
    """When pytest found no test by the name asked for (``ERROR: not found:
    /workspace/tests/t.py::test_x``), the tests that file has, as pytest selects them."""
    missing = re.search(r"ERROR: (?:file or directory )?not found: ([^\s:]+)", output)
    if not missing:
        return ""
    rel = missing.group(1).removeprefix(WORKSPACE + "/")
    data = read_confined(tree, rel, limit=MAX_FILE_BYTES)
    names = _test_ids(data.decode("utf-8", "replace")) if data is not None else []
    if names:
        listed = ", ".join(f"{rel}::{n}" for n in names)
        return f"\nThe tests in {rel} are: {listed[:1000]}"
    paths = _paths(tree) or []
    tests = [p for p in paths if _is_test_module(p)]
    if not tests:
        return ""
    what = "has no tests" if data is not None else "is not a file of the repository"
    return f"\n{rel} {what}. The test files are: {', '.join(tests[:10])}"


def _parse(text: str) -> ast.Module | None:
    """``text`` as Python's syntax tree (parsed, never run), or None."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _test_ids(text: str) -> list[str]:
    """``test_x`` and ``TestY::test_z`` of a test module, in order."""
    module = _parse(text)
    if module is None:
        return []
    ids = []
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("test"):
                ids.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            ids += [
                f"{node.name}::{m.name}"
                for m in node.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                and m.name.startswith("test")
            ]
    return ids


def files_with_words(tree: Path, phrase: str) -> str:
    """For a phrase of several words (a small model searches for the issue's title):
    the files that have most of its words, with the words they have."""
    words = list(dict.fromkeys(w.lower() for w in re.findall(r"[A-Za-z_]\w{3,}", phrase)))
    words = [w for w in words if w not in _COMMON][:MAX_WORDS]
    if len(words) < 2:
        return ""
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, words)) + ")", re.IGNORECASE)
    scored = []
    try:
        for rel, text in _texts(tree):
            has = sorted({m.lower() for m in pattern.findall(text)})
            if has:
                scored.append((-len(has), rel, has))
    except _TooLarge:
        pass  # the files read so far
    return ", ".join(f"{rel} ({', '.join(has)})" for _, rel, has in sorted(scored)[:5])


def file_holding(tree: Path, old: str) -> str:
    """The one text file of the repository that has ``old`` in it, or ''."""
    if len(old.strip()) < 8:
        return ""  # `x = 1` is in too many places to say which was meant
    try:
        found = [rel for rel, text in _texts(tree) if old in text]
    except _TooLarge:
        return ""
    return found[0] if len(found) == 1 else ""


def free_test_name(tree: Path, rel: str) -> str:
    """A name beside ``rel`` that pytest collects too and that does not exist yet."""
    stem, dot, ext = posixpath.basename(rel).rpartition(".")
    folder = posixpath.dirname(rel)
    for n in ["", *map(str, range(2, 100))]:
        if stem.startswith("test"):
            name = f"{stem}_issue{n}"
        elif stem.endswith("_test"):
            name = f"{stem.removesuffix('_test')}_issue{n}_test"
        else:  # conftest.py, or a test by its folder alone
            name = f"test_issue{n}"
        candidate = posixpath.join(folder, f"{name}{dot}{ext}")
        if not is_file(tree, candidate):
            return candidate
    return posixpath.join(folder, f"test_patchwarden{dot}{ext}")


def closest_file(tree: Path, rel: str) -> str:
    """The one file of the repository a path that is not there plainly means (the
    same name elsewhere, or a near spelling of the whole path), or ''."""
    files = _paths(tree)
    if files is None:
        return ""  # a large repository: not worth guessing
    name = posixpath.basename(rel)
    same = [p for p in files if posixpath.basename(p) == name]
    if len(same) == 1:
        return same[0]
    near = difflib.get_close_matches(rel, files, n=2, cutoff=0.8)
    if near and (len(near) == 1 or _closer(rel, near[0], near[1])):
        return near[0]
    return ""


def missing_imports(tree: Path, content: str) -> list[str]:
    """Import lines a new test file plainly lacks: a small model writes
    ``deep_merge(...)`` or ``unittest.TestCase`` and no import, and its test then fails
    with a NameError it does not understand. A name counts when the file never binds it
    and either one module of the repository defines it at top level, or it is a module
    of the standard library used as ``name.attr``."""
    module = _parse(content)
    if module is None:
        return []
    lines = []
    wanted = []
    for name, attrs in sorted(unbound(module).items()):
        if attrs and (name in sys.stdlib_module_names or name == "pytest"):
            lines.append(f"import {name}")
        else:
            wanted.append(name)
    where = _defined_in(tree, wanted[:MAX_WORDS]) if wanted else {}
    lines += [f"from {where[name]} import {name}" for name in wanted if name in where]
    return sorted(lines)


_DEFINED = re.compile(r"^(?:async\s+def|def|class)\s+(\w+)|^(\w+)\s*[:=]", re.M)


def _defined_in(tree: Path, names: list[str]) -> dict[str, str]:
    """For each of ``names`` that exactly one module of the repository (not a test)
    defines at top level: that module as an import path (``src/`` layouts without their
    ``src``). One pass over the repository."""
    wanted = set(names)
    found: dict[str, list[str]] = {}
    try:
        for rel, text in _texts(tree, python=True):
            for m in _DEFINED.finditer(text):
                name = m.group(1) or m.group(2)
                if name in wanted and rel not in found.setdefault(name, []):
                    found[name].append(rel)
    except _TooLarge:
        return {}
    modules = {}
    for name, where in found.items():
        if len(where) != 1:
            continue
        if module_name(where[0]):
            modules[name] = module_name(where[0])
    return modules
