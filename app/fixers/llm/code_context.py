"""The code a task names, found before the model's first turn.

A small model spends its first turns (and often all of them) looking in the wrong place:
it reads the tests, never the function the issue named, and "fixes" the test. So the first
message shows the definitions the task's words name — functions, classes and methods
written as code (```is_leap_year(1900)```, ``calendar_utils.dates.is_leap_year``,
``Inventory.remove``) — and the files it names by path, each as a window of numbered
lines, within a line budget.

Only the repository's own Python files are searched, on the host, through confined reads
(no symlink is followed); the task's words only choose what to show, never what runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from app.fixers.interface import walk_files
from app.sessions.files import read_confined
from app.sessions.task import Place

MAX_FILES = 2000  # Python files searched at most
MAX_FILE_BYTES = 256 * 1024
MAX_NAMES = 6
MAX_LINES = 120  # lines shown in all
WINDOW = 40  # lines shown at most per definition
SMALL_FILE = 60  # a file this short is shown whole

_CODE = re.compile(r"`([^`\n]{2,120})`")
_CALL = re.compile(r"\b([A-Za-z_][\w.]{2,80})\(")
_IDENT = re.compile(r"[A-Za-z_]\w{2,}")
_PATH = re.compile(r"\b([\w./-]+\.py)\b")
_IMPORT = re.compile(r"^from\s+[\w.]+\s+import\s+\(?([\w ,]+)\)?\s*$")
_COMMON = frozenset(
    {"self", "None", "True", "False", "print", "assert", "return", "import", "from", "with",
     "list", "dict", "str", "int", "float", "bool", "len", "range", "set", "tuple", "open",
     "pytest", "test", "tests", "raise", "def", "class", "lambda", "not", "and"}
)  # fmt: skip


@dataclass(frozen=True)
class Shown:
    path: str
    start: int  # first line shown (from 1)
    lines: list[str]
    why: str = ""  # a stack frame that points here: "line 42, in parse"

    def render(self) -> str:
        width = len(str(self.start + len(self.lines) - 1))
        body = "\n".join(f"{n:>{width}}| {t}" for n, t in enumerate(self.lines, self.start))
        where = f" (the stack trace: {self.why})" if self.why else ""
        return f"{self.path}{where}:\n{body}"


def _frame(place: Place) -> str:
    """``line 42, in parse``: the frame's own words are data, so only its line number and
    a function name that is an identifier are repeated."""
    line = f"line {place.line}" if place.line else "this file"
    function = place.function if place.function and place.function.isidentifier() else None
    return line + (f", in {function}" if function else "")


def names_in(words: str) -> list[str]:
    """Identifiers the task writes as code or calls, most specific part first
    (``calendar_utils.dates.is_leap_year`` -> ``is_leap_year``), in order, once each."""
    found: list[str] = []
    for match in [*_CODE.finditer(words), *_CALL.finditer(words)]:
        text = match.group(1)
        idents = [i for i in _IDENT.findall(text.split("(")[0]) if i not in _COMMON]
        if idents and idents[-1] not in found:
            found.append(idents[-1])
    return found[:MAX_NAMES]


def file_for(place: str, files: Sequence[str]) -> str | None:
    """The one repository file a stack frame's path means: the file whose path shares
    the longest tail with it (``/srv/app/src/pkg/mod.py`` and ``pkg/mod.py`` both mean
    ``src/pkg/mod.py``), at least its file name; None when two files share it."""
    parts = [p for p in place.replace("\\", "/").split("/") if p and p != "."]
    if not parts:
        return None
    best, found = 0, []
    for path in files:
        mine = path.split("/")
        n = 0
        while n < min(len(mine), len(parts)) and mine[-1 - n] == parts[-1 - n]:
            n += 1
        if n > best:
            best, found = n, [path]
        elif n == best and n:
            found.append(path)
    return found[0] if best and len(found) == 1 else None


def relevant_code(tree: Path, words: str, places: Sequence[Place] = ()) -> list[Shown]:
    """Windows of the tree's Python files around the places a stack trace names (first),
    then those that define what ``words`` name, or that it names by path, within
    :data:`MAX_LINES` lines in all."""
    names = names_in(words)
    paths = [p.removeprefix("./") for p in _PATH.findall(words)]
    if not names and not paths and not places:
        return []
    files = [p for p, link in walk_files(tree, tree) if not link and p.endswith(".py")]
    files = sorted(files[:MAX_FILES], key=looks_like_test)  # the code before its tests
    shown: list[Shown] = []
    budget = MAX_LINES
    texts: dict[str, list[str]] = {}

    def lines_of(path: str) -> list[str]:
        if path not in texts:
            data = read_confined(tree, path, limit=MAX_FILE_BYTES + 1)
            ok = data is not None and len(data) <= MAX_FILE_BYTES and b"\0" not in data
            texts[path] = data.decode("utf-8", "replace").splitlines() if ok and data else []
        return texts[path]

    def add(path: str, start: int, stop: int, why: str = "") -> None:
        nonlocal budget
        whole = lines_of(path)
        if len(whole) <= SMALL_FILE:
            start, stop = 0, len(whole)  # a small file whole: its constants matter too
        if budget <= 0 or any(s.path == path and s.start <= start + 1 < s.start + len(s.lines)
                              for s in shown):  # fmt: skip
            return
        lines = whole[start:stop][:budget]
        if lines:
            shown.append(Shown(path, start + 1, lines, why))
            budget -= len(lines)

    for place in places[:MAX_NAMES]:
        path = file_for(place.path, files)
        if path is not None:
            at = (place.line or 1) - 1
            add(path, max(0, at - WINDOW // 2), at + WINDOW // 2, why=_frame(place))
    for path in paths:
        if path in files and looks_like_test(path):
            # A failing test names the code it tests in its imports.
            for line in lines_of(path):
                imported = _IMPORT.match(line)
                if imported:
                    more = [n.strip().split(" as ")[0] for n in imported.group(1).split(",")]
                    names += [n for n in more if n.isidentifier() and n not in names]
    for name in names[: MAX_NAMES * 2]:
        pattern = re.compile(rf"^\s*(?:async\s+def|def|class)\s+{re.escape(name)}\b")
        for path in files:
            lines = lines_of(path)
            for i, line in enumerate(lines):
                if pattern.match(line):
                    add(path, i, i + _extent(lines, i))
    for path in paths:
        if path in files and all(s.path != path for s in shown):
            add(path, 0, WINDOW)
    return shown


def example_path(tree: Path) -> str:
    """A real file of the tree to show in the prompt's examples: its first Python file
    that is not a test, else its first file (a small model copies an example path as it
    is, and then one that exists is the better copy)."""
    files = [p for p, link in walk_files(tree, tree) if not link][:MAX_FILES]
    code = [p for p in files if p.endswith(".py") and not looks_like_test(p)]
    return (code or files or ["README.md"])[0]


def looks_like_test(path: str) -> bool:
    """A test file by its path, as the default policy's ``tests`` category reads one."""
    parts = path.split("/")
    name = parts[-1]
    return (
        any(p in ("tests", "test", "__tests__", "spec") for p in parts[:-1])
        or name.startswith("test_")
        or name == "conftest.py"
        or bool(re.search(r"(_test|\.test|\.spec|_spec)\.\w+$", name))
    )


def _extent(lines: list[str], at: int) -> int:
    """How many lines the definition at ``at`` spans (its signature, however many lines
    it takes, then the lines indented more than it), at most :data:`WINDOW`."""
    indent = len(lines[at]) - len(lines[at].lstrip())
    depth = lines[at].count("(") - lines[at].count(")")
    header = depth > 0 or not lines[at].rstrip().endswith(":")
    n = 1
    while at + n < len(lines) and n < WINDOW:
        line = lines[at + n]
        if header:
            depth += line.count("(") - line.count(")")
            header = depth > 0 or not line.rstrip().endswith(":")
        elif line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        n += 1
    while n > 1 and not lines[at + n - 1].strip():
        n -= 1
    return n
