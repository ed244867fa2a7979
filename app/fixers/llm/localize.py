"""Where the bug is, found without the model: a ranked short list of functions.

The repository's Python files are read (confined, never run) into a symbol index —
every function and method, with its docstring and line range (:func:`index`) — and
ranked against the task (:func:`localize`) by what points at each one: **frames** of a
stack trace in the repository (an alert's, a failing test's), innermost first; code
the task **names** (``is_leap_year(1900)``, ``Inventory.remove``) and files it names;
what a failing test **calls**, resolved through its imports; the **spectrum** (which
functions the failing tests run and the passing ones do not, :mod:`spectrum`); and
**words** (BM25 of the task's words against each function's name, docstring, body and
path: no embeddings service, it runs anywhere in milliseconds). Each suspect carries
its evidence, which the pull request shows; tests are never suspected themselves.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from app.fixers.interface import walk_files
from app.fixers.llm.bm25 import bm25, words
from app.fixers.llm.code_context import file_for, looks_like_test, names_in
from app.sessions.files import read_confined
from app.sessions.task import Place, Task

MAX_FILES = 3000  # Python files
MAX_FILE_BYTES = 512 * 1024
MAX_INDEX_BYTES = 32 * 1024 * 1024  # Python read in all, as meant.MAX_SCANNED_BYTES
MAX_SUSPECTS = 5
# Evidence, in points on top of the word score (which is at most 1).
FRAME = 3.0
INNERMOST = 1.0
NAMED = 2.5
QUALIFIED = 1.0  # the task names Class.method or module.function, not just the name
PATH = 1.0
TESTED = 1.5
SPECTRUM = 1.0  # times a function's Ochiai score: 1 when only and all failing tests run it

# A frame as pytest prints it (`src/pkg/mod.py:42: in parse`) or Python does
# (`File "/srv/app/pkg/mod.py", line 42, in parse`).
_PYTEST_FRAME = re.compile(r"^([\w./-]+\.py):(\d+): (?:in (\w+)|\w)", re.M)
_PYTHON_FRAME = re.compile(r'File "([^"\n]+\.py)", line (\d+)(?:, in (\w+))?')
_PATH = re.compile(r"\b([\w./-]+\.py)\b")


@dataclass(frozen=True)
class Symbol:
    """A function or method of the repository, by its lines (1-based, inclusive, decorators too)."""

    path: str
    qualname: str  # "parse", "Inventory.remove"
    start: int
    end: int
    kind: Literal["function", "method"]
    doc: str = ""
    calls: tuple[str, ...] = ()  # names it calls (``f(...)``, ``obj.f(...)``: "f")
    words: tuple[str, ...] = ()  # its name, docstring, identifiers and path, as words

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def where(self) -> str:
        return f"{self.path}:{self.start}-{self.end}"


@dataclass(frozen=True)
class Suspect:
    symbol: Symbol
    score: float
    evidence: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"{self.symbol.qualname} ({self.symbol.where}): " + "; ".join(self.evidence)


@dataclass
class Index:
    """The repository's functions, and its tests' (for what those call)."""

    symbols: list[Symbol] = field(default_factory=list)
    tests: list[Symbol] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # path -> text, as read
    # Names the repository's modules define at their top (functions, classes), and where.
    defines: dict[str, list[str]] = field(default_factory=dict)

    def lines(self, symbol: Symbol) -> list[str]:
        return self.sources[symbol.path].splitlines()[symbol.start - 1 : symbol.end]


def source_files(tree: Path, wanted: Callable[[str], bool]) -> Iterator[tuple[str, str]]:
    """(path, text) of the tree's files ``wanted`` by path, read confined (no link
    followed) and decoded strictly (a candidate is spliced into this text and written
    back whole), within :data:`MAX_FILES`, :data:`MAX_FILE_BYTES` a file and
    :data:`MAX_INDEX_BYTES` in all."""
    files = read = 0
    for rel, link in walk_files(tree, tree):
        if link or not wanted(rel):
            continue
        files += 1
        if files > MAX_FILES or read > MAX_INDEX_BYTES:
            break
        data = read_confined(tree, rel, limit=MAX_FILE_BYTES + 1)
        if data is None or len(data) > MAX_FILE_BYTES:
            continue
        read += len(data)
        try:
            yield rel, data.decode("utf-8")
        except UnicodeDecodeError:
            continue


def index(tree: Path) -> Index:
    """Every function and method of the tree's Python files (tests apart)."""
    out = Index()
    for rel, text in source_files(tree, lambda rel: rel.endswith(".py")):
        try:
            module = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        out.sources[rel] = text
        if not looks_like_test(rel):
            for node in module.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    out.defines.setdefault(node.name, []).append(rel)
        found = list(_symbols(module, rel))
        (out.tests if looks_like_test(rel) else out.symbols).extend(found)
    return out


def _symbols(module: ast.Module, path: str) -> Iterable[Symbol]:
    """The module's functions and methods; an ``@overload`` stub is not one (the
    implementation after it is)."""
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _overload(node):
            yield _symbol(node, path, node.name, "function")
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _overload(
                    item
                ):
                    yield _symbol(item, path, f"{node.name}.{item.name}", "method")


def _overload(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        (d.id if isinstance(d, ast.Name) else getattr(d, "attr", "")) == "overload"
        for d in node.decorator_list
    )


def _symbol(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    path: str,
    qualname: str,
    kind: Literal["function", "method"],
) -> Symbol:
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    doc = ast.get_docstring(node) or ""
    calls: list[str] = []
    idents: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if isinstance(name, str):
                calls.append(name)
        elif isinstance(sub, ast.Name):
            idents.append(sub.id)
        elif isinstance(sub, ast.Attribute):
            idents.append(sub.attr)
        elif isinstance(sub, ast.arg):
            idents.append(sub.arg)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and len(sub.value) <= 80:
            idents.append(sub.value)
    text = " ".join([qualname, qualname, doc, path.replace("/", " "), *idents])
    return Symbol(
        path=path,
        qualname=qualname,
        start=start,
        end=node.end_lineno or node.lineno,
        kind=kind,
        doc=doc,
        calls=tuple(dict.fromkeys(calls)),
        words=tuple(words(text)),
    )


def frames_in(text: str) -> list[Place]:
    """The stack frames a test's or a program's output shows, in the order printed
    (outermost first, as both pytest and Python print them)."""
    found = []
    for m in _PYTEST_FRAME.finditer(text):
        found.append((m.start(), Place(m.group(1), int(m.group(2)), m.group(3))))
    for m in _PYTHON_FRAME.finditer(text):
        found.append((m.start(), Place(m.group(1), int(m.group(2)), m.group(3))))
    return [p for _, p in sorted(found, key=lambda f: f[0])]


Called = Sequence[tuple[str, str | None]]  # names failing tests call, and from which module
Evidence = Iterator[tuple[Symbol, float, str]]


def _in_frames(idx: Index, task: Task, frames: Sequence[Place], called: Called) -> Evidence:
    """Frames: the task's (innermost first) and the failing tests' (innermost last)."""
    files = sorted(idx.sources)
    seen_frame = False
    for place in [*task.places, *reversed(frames)]:
        path = file_for(place.path, files)
        if path is None or looks_like_test(path) or not place.line:
            continue
        for s in idx.symbols:
            if s.path == path and s.start <= place.line <= s.end:
                bonus = INNERMOST if not seen_frame else 0.0
                yield s, FRAME + bonus, f"a stack frame is in it ({path}:{place.line})"
                seen_frame = True


def _named(idx: Index, task: Task, frames: Sequence[Place], called: Called) -> Evidence:
    """Names the task writes as code, and files it names."""
    text = task.words
    cited = _cited(text)
    for s in idx.symbols:
        module = s.path.removesuffix(".py").replace("/", ".")
        for name in cited:
            parts = name.split(".")
            if parts[-1] != s.name:
                continue
            qualified = ".".join(parts[-2:]) == s.qualname or (
                len(parts) > 1 and module.endswith(".".join(parts[:-1]))
            )
            yield s, NAMED + (QUALIFIED if qualified else 0.0), f"the task names `{name}`"
    for path in {p.removeprefix("./") for p in _PATH.findall(text)}:
        for s in idx.symbols:
            if s.path == path or s.path.endswith("/" + path):
                yield s, PATH, f"the task names {path}"


def _tested(idx: Index, task: Task, frames: Sequence[Place], called: Called) -> Evidence:
    """What the failing tests call: a name the test imports from a module (``from m import
    f``, ``m.f`` after ``import m``) is that module's function only; any other name (a
    method called on an object) every function of that name."""
    wanted = set(called)
    for s in idx.symbols:
        module = s.path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for name, where in wanted:
            if name == s.name and (where is None or _within(module, where)):
                yield s, TESTED, f"a failing test calls {s.name}()"
                break


# Each kind of evidence, in the order a suspect's reasons are listed; then words (BM25).
EVIDENCE = (_in_frames, _named, _tested)


def localize(
    idx: Index,
    task: Task,
    *,
    frames: Sequence[Place] = (),
    tests: Sequence[str] = (),
    spectrum: Mapping[Symbol, tuple[float, str]] | None = None,
    limit: int = MAX_SUSPECTS,
    calls: Called | None = None,
) -> list[Suspect]:
    """The functions most likely at fault, best first, each with its evidence. ``frames``:
    a failing test's traceback, innermost last; ``tests``: failing or reproducing tests'
    Python sources, or ``calls``: the names such tests call (and from which module);
    ``spectrum``: scores in [0, 1] and why (:func:`.spectrum.ochiai`)."""
    if not idx.symbols:
        return []
    called = list(calls) if calls is not None else [c for t in tests for c in _called_names(t)]
    points: dict[Symbol, float] = dict.fromkeys(idx.symbols, 0.0)
    evidence: dict[Symbol, list[str]] = {s: [] for s in idx.symbols}
    for kind in EVIDENCE:
        for symbol, amount, why in kind(idx, task, frames, called):
            points[symbol] += amount
            if why not in evidence[symbol]:
                evidence[symbol].append(why)
    for s, (score, why) in (spectrum or {}).items():
        points[s] += SPECTRUM * score
        evidence[s].append(why)
    for s, score in bm25(idx.symbols, words(task.words)).items():
        if score > 0:
            points[s] += score
    ranked = sorted(idx.symbols, key=lambda s: (-points[s], s.path, s.start))
    out = []
    for s in ranked[:limit]:
        if points[s] <= 0:
            break
        reasons = evidence[s] or ["its words match the task's"]
        out.append(Suspect(s, round(points[s], 3), tuple(reasons)))
    return out


def _cited(text: str) -> list[str]:
    """Dotted names the task writes as code or calls, whole (``dates.is_leap_year``)."""
    found: list[str] = []
    for pattern in (r"`([^`\n]{2,120})`", r"\b([A-Za-z_][\w.]{1,80})\("):
        for m in re.finditer(pattern, text):
            head = re.split(r"[(\s\[]", m.group(1).strip(), maxsplit=1)[0]
            dotted = ".".join(p for p in head.split(".") if p.isidentifier())
            if dotted and dotted not in found:
                found.append(dotted)
    for name in names_in(text):
        if name not in found:
            found.append(name)
    return found


def _called_names(source: str) -> list[tuple[str, str | None]]:
    """The names a test's source calls, each with the module the source imports it from
    (None when it does not say: a method called on an object, a builtin)."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    origin: dict[str, str] = {}  # a local name -> the module it was imported from
    modules: dict[str, str] = {}  # a local name bound to a module -> that module
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            origin.update({a.asname or a.name: node.module for a in node.names})
        elif isinstance(node, ast.Import):
            for a in node.names:
                local = a.asname or a.name.split(".")[0]
                modules[local] = a.name if a.asname else local
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(module):
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Name) and not func.id.startswith("assert"):
            out.append((func.id, origin.get(func.id)))
        elif isinstance(func, ast.Attribute) and not func.attr.startswith("assert"):
            first, _, rest = _dotted_name(func.value).partition(".")
            if first in modules:  # `m.f()` after `import m`, `import pkg.m as m`
                out.append((func.attr, ".".join(filter(None, (modules[first], rest)))))
            elif first in origin:  # `Class.f()`, `mod.f()` after `from pkg import …`
                out.append((func.attr, origin[first]))
            else:
                out.append((func.attr, None))
    return out


def _dotted_name(node: ast.expr) -> str:
    """``a.b.c`` of a chain of names and attributes, or "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted_name(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


def _within(module: str, imported: str) -> bool:
    """Whether the file's dotted module (``src.pkg.mod``) is the one imported, or a
    package it re-exports from (``pkg`` re-exports ``pkg.mod``'s names)."""
    return (
        module == imported
        or module.endswith("." + imported)
        or module.startswith(imported + ".")
        or f".{imported}." in f".{module}"
    )
