"""The rooms of ``app/`` and which way their imports may point (docs/architecture.md).

Each room has a layer. Above the foundations (layer 0, small modules that may use each
other), a module imports its own room and rooms of lower layers only: the floors point
down, never up or sideways, so no two rooms import each other. Inside a room, modules
import each other without a loop. ``localforge`` (the GitHub double) is for tests, the
demo and the CLI's demo verbs: nothing else imports it. Imports inside ``if
TYPE_CHECKING:`` and inside functions count too: a type is a dependency.

docs/architecture.md's layer table is checked against ``LAYERS``. Known exceptions are
listed by file, with the issue that removes them; the test fails on a new one, and on a
listed one that is gone (so the lists stay true).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"
DOCS = APP.parent / "docs" / "architecture.md"

LAYERS: dict[str, int] = {
    # foundations: no room of Patchwarden's below them
    "errors": 0,
    "__init__": 0,  # app/__init__.py: the version
    "logs": 0,
    "config": 0,
    "credentials": 0,
    "fold": 0,
    "words": 0,
    "redact": 0,
    "untrusted": 0,
    "git": 0,
    "alerts": 0,
    # the store, GitHub, and the policy engine (no I/O)
    "store": 1,
    "github": 1,
    "policy": 1,
    # a coding session; the worker pool; the metrics (counts the store reads); the
    # GitHub double (errors, config, GitHub's signing and manifest)
    "sessions": 2,
    "queue": 2,
    "metrics": 2,
    "localforge": 2,
    # what edits a tree; what writes to GitHub; the job kinds and lifecycle rules (the
    # contract between the intake, the handlers and the jobs)
    "fixers": 3,
    "publish": 3,
    "contract": 3,
    # webhook routing and handlers, which queue typed jobs; the jobs, which run them:
    # neither imports the other
    "webhooks": 4,
    "jobs": 4,
    # a process's wiring: deliveries to the handlers, every other kind to its job
    "runtime": 5,
    # the intake
    "server": 6,
    # the patchwarden command and its verbs (run, score, doctor, demo); the entry point
    "cli": 7,
    "__main__": 8,
}
MAY_IMPORT_THE_DOUBLE = {"cli", "localforge"}

# (importing file, imported module): debt, each with the issue that removes it. Empty
# now: policy/ reads sessions through its own types (app/policy/evidence.py).
KNOWN: set[tuple[str, str]] = set()

# Import loops between modules of one room, each with the issue that removes it. Empty
# now: LocalForge's rules, REST, CI and alerts no longer call each other in a circle.
KNOWN_LOOPS: set[frozenset[str]] = set()


def _room(module: str) -> str:
    """The room of ``app.x.y``: ``x`` (``__init__`` for ``app`` itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_module(dotted: str) -> bool:
    path = APP.parent / dotted.replace(".", "/")
    return path.is_dir() or path.with_suffix(".py").is_file()


def _imports(path: Path) -> list[str]:
    """The modules of ``app`` a file imports (``from app.x import y``: ``app.x.y`` when
    y is a module, else ``app.x``), anywhere in it."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                inner = f"{node.module}.{a.name}"
                found.append(inner if _is_module(inner) else node.module)
    return [m for m in found if m == "app" or m.startswith("app.")]


def _module(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _violations() -> set[tuple[str, str]]:
    """Imports that point up, sideways (another room on the same floor, above the
    foundations) or at the double."""
    wrong = set()
    for path in sorted(APP.rglob("*.py")):
        room = _room(_module(path))
        for module in _imports(path):
            target = _room(module)
            if target == room:
                continue
            at_the_double = target == "localforge" and room not in MAY_IMPORT_THE_DOUBLE
            sideways = LAYERS[target] == LAYERS[room] > 0
            if at_the_double or sideways or LAYERS[target] > LAYERS[room]:
                wrong.add((path.relative_to(APP).as_posix(), module))
    return wrong


def loops(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected parts of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part = set()
            while True:
                top = stack.pop()
                part.add(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(frozenset(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of ``app`` it imports (a package counts as its
    ``__init__``)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in sorted(APP.rglob("*.py")):
        here = _module(path)
        graph[here] |= {m for m in _imports(path) if m != here}
    return graph


def test_every_room_has_a_layer() -> None:
    rooms = {
        p.name.removesuffix(".py")
        for p in APP.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"
    }
    assert rooms - set(LAYERS) == set(), "a new room: give it a layer here and a row in docs"
    assert set(LAYERS) - rooms == set(), "a room is gone: drop it here"


def test_imports_point_down_the_layers() -> None:
    wrong = _violations()
    assert wrong - KNOWN == set(), (
        "an import points up or sideways (or at the double); see docs/architecture.md"
    )
    assert KNOWN - wrong == set(), "a known exception is gone: take it off KNOWN"


def test_no_import_loops() -> None:
    """No two rooms import each other (the floors); inside a room, no modules do."""
    graph = import_graph()
    rooms: dict[str, set[str]] = defaultdict(set)
    for module, imported in graph.items():
        rooms[_room(module)] |= {_room(m) for m in imported} - {_room(module)}
    assert loops(rooms) == []
    found = set(loops(graph))
    assert found - KNOWN_LOOPS == set(), "modules import each other: see docs/architecture.md"
    assert KNOWN_LOOPS - found == set(), "a known loop is gone: take it off KNOWN_LOOPS"


def test_the_loop_check_sees_a_loop() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert loops(graph) == [frozenset({"a", "b", "c"})]
    assert loops({"a": {"b"}, "b": set()}) == []


def _documented_layers() -> dict[str, int]:
    """docs/architecture.md's table "| layer | rooms |": each room in backticks."""
    text = DOCS.read_text(encoding="utf-8")
    table = text[text.index("| layer | rooms |") :].split("\n\n", 1)[0]
    found: dict[str, int] = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rooms = re.sub(r"\([^)]*\)", "", cells[1])  # what is said in brackets is not a room
        for name in re.findall(r"`([\w./]+)`", rooms):
            found[name.removeprefix("app/").removesuffix("/").removesuffix(".py")] = int(cells[0])
    return found


def test_the_documented_layers_are_the_checked_ones() -> None:
    """The table a newcomer reads is the one this test enforces."""
    assert _documented_layers() == LAYERS


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The parser behind the test finds the imports a room could hide an arrow in."""
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "import app.store\n"
        "from app import jobs\n"
        "if TYPE_CHECKING:\n"
        "    from app.publish.body import render\n"
        "def f():\n"
        "    from app.localforge import LocalForge\n"
        "from . import sibling\n"
    )
    assert _imports(source) == ["app.store", "app.jobs", "app.publish.body", "app.localforge"]


def test_the_handlers_and_the_jobs_meet_only_in_the_contract() -> None:
    """The job kinds sit below both the webhook handlers and the jobs; the runtime,
    which runs both, above them: a delivery goes intake -> queue -> runtime -> handlers
    -> a typed job in the queue -> runtime -> the job, every arrow pointing down."""
    assert LAYERS["contract"] < LAYERS["webhooks"] == LAYERS["jobs"] < LAYERS["runtime"]
    for path in (APP / "jobs").rglob("*.py"):
        assert not any(_room(m) == "webhooks" for m in _imports(path)), path
    for path in (APP / "webhooks").rglob("*.py"):
        assert not any(_room(m) == "jobs" for m in _imports(path)), path


WRITERS = {"publish", "github", "localforge"}  # the double is GitHub, not a client of it


def _github_writes(path: Path) -> list[int]:
    """Lines that write to GitHub through a gidgethub client (``gh.post(...)``,
    ``x.gh.patch(...)``): post, patch, put, delete."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        target = node.func.value
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "gh" and node.func.attr in ("post", "patch", "put", "delete"):
            found.append(node.lineno)
    return found


def test_only_publish_and_github_write_to_github() -> None:
    """The handlers' answers and reactions, and the jobs' comments, go through
    app/publish/github.py: one marker-comment mechanism, every write idempotent."""
    writes = [
        f"{path.relative_to(APP)}:{line}"
        for path in sorted(APP.rglob("*.py"))
        if path.relative_to(APP).parts[0].removesuffix(".py") not in WRITERS
        for line in _github_writes(path)
    ]
    assert writes == []


def test_the_write_check_sees_a_write(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "async def f(gh, pub):\n    await gh.post('/x')\n    await pub.gh.patch('/y')\n"
        "    await gh.getitem('/z')\n"
    )
    assert _github_writes(source) == [2, 3]


LONG = 400  # lines: a module longer than this says why at its top


def test_a_long_module_says_why_it_is_one_file() -> None:
    """A module over ~400 lines is split along its seams, or its docstring says why it
    is one file ("Over ~400 lines on purpose: ...")."""
    unexplained = []
    for path in sorted(APP.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= LONG:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if "Over ~400 lines on purpose:" not in doc:
            unexplained.append(f"{path.relative_to(APP)} ({text.count(chr(10))} lines)")
    assert unexplained == []


LONG_FUNCTION = 60  # lines, the signature and docstring included

# Functions that are declarations, not decisions: a table written as code (one entry
# per detector, per option). Each says why.
DECLARATIVE: dict[str, str] = {
    "credentials.py:_detectors": "one entry per credential detector, in the order they run",
    "cli/main.py:build_parser": "argparse: one block per verb and option",
}

# Long functions still to split, each with the issue that splits it. The test fails on
# a new one, and on a listed one that is gone or short now (so the list only shrinks).
# Empty since issue 33: a long function is split into named steps, not listed here.
KNOWN_LONG: set[str] = set()


def long_functions() -> dict[str, int]:
    """``path:name`` -> lines, for every function in app/ over ``LONG_FUNCTION``."""
    found = {}
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LONG_FUNCTION:
                    found[f"{path.relative_to(APP).as_posix()}:{node.name}"] = lines
    return found


def test_no_function_is_long() -> None:
    """A decision reads in one screen: a longer function is split into named steps
    (or a table), unless it is a declaration (``DECLARATIVE``)."""
    found = set(long_functions()) - set(DECLARATIVE)
    assert found - KNOWN_LONG == set(), "split it into named steps (docs/architecture.md)"
    assert KNOWN_LONG - found == set(), "a long function is gone: take it off KNOWN_LONG"
    assert set(DECLARATIVE) <= set(long_functions()), "a declaration is short now: drop it"


LONG_CLASS = 300  # lines
MANY_METHODS = 25

# Classes over either limit, each with its reason; the list only shrinks (the test fails
# on one that is back under both limits). Issue 57 item 4 splits the GitHub double's.
BIG_CLASSES: dict[str, str] = {
    "sessions/session.py:SessionRunner": "the session's phases in order, one method each",
    "fixers/culprit.py:_Search": "one bisect's state: reproduce, search, verify, revert",
    "publish/github.py:Publisher": "every write to GitHub, one method per call",
    "localforge/bare_repo.py:BareRepo": "the double's git: one method per git question",
    "localforge/rules.py:GitHubRules": "GitHub's rules call each other (a push refreshes pulls)",
    "localforge/world.py:World": "what a test says people do: one method each, over the parts",
}


def big_classes() -> dict[str, tuple[int, int]]:
    """``path:Class`` -> (lines, methods), for every class in app/ over a limit."""
    found = {}
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                methods = sum(
                    isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in node.body
                )
                if lines > LONG_CLASS or methods > MANY_METHODS:
                    found[f"{path.relative_to(APP).as_posix()}:{node.name}"] = (lines, methods)
    return found


def test_no_class_is_big_without_a_reason() -> None:
    """A class over 300 lines or 25 methods holds more than one concern: split it, or
    say why it is one (``BIG_CLASSES``)."""
    found = big_classes()
    assert set(found) - set(BIG_CLASSES) == set(), f"split it or say why: {found}"
    assert set(BIG_CLASSES) - set(found) == set(), "a big class is small now: drop it"


# Roots of hierarchies that are kinds, not parts: errors, data shapes, interfaces.
KIND_ROOTS = {"Exception", "BaseModel", "ABC", "Protocol"}
DEEPEST_CHAIN = 2  # a class and the one it extends


def class_chains() -> dict[str, list[str]]:
    """``path:Class`` -> its longest chain of app classes with behaviour (itself first),
    leaving out interfaces and every class of an error or data-shape hierarchy."""
    bases: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names = [
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                ]
                bases[node.name] = bases.get(node.name, []) + [n for n in names if n]
                where[node.name] = f"{path.relative_to(APP).as_posix()}:{node.name}"

    def roots(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        found = {b for b in bases.get(name, []) if b not in bases}
        for b in bases.get(name, []):
            if b in bases and b not in seen:
                found |= roots(b, seen | {name})
        return found

    def chain(name: str, seen: frozenset[str] = frozenset()) -> list[str]:
        parents = [b for b in bases.get(name, []) if b in bases and b not in seen]
        longest = max((chain(b, seen | {name}) for b in parents), key=len, default=[])
        interface = {"ABC", "Protocol"} & set(bases.get(name, []))
        return longest if interface else [name, *longest]

    kinds = {name for name in bases if roots(name) & (KIND_ROOTS - {"ABC", "Protocol"})}
    return {where[n]: chain(n) for n in bases if n not in kinds}


def test_classes_are_composed_not_stacked() -> None:
    """A class with behaviour extends at most one other of app/: deeper stacks hide
    where an attribute lives, so parts are composed instead (LocalForge's ``World``
    holds its state, outbox, CI, rules and alerts). Errors, pydantic shapes and
    interfaces are kinds, not parts, and are left out."""
    deep = {where: c for where, c in class_chains().items() if len(c) > DEEPEST_CHAIN}
    assert deep == {}, "compose the parts instead of stacking classes"
    assert len(class_chains()["localforge/forge_server.py:LocalForge"]) == 2


# File names two packages share because the modules play the same role in each
# (docs/architecture.md says so too).
SAME_ROLE: dict[str, set[str]] = {
    "__main__.py": {"__main__.py", "localforge/__main__.py"},  # `python -m` entry points
    "context.py": {"jobs/context.py", "webhooks/context.py"},  # what every job/handler gets
    "interface.py": {"fixers/interface.py", "store/interface.py"},  # the room's interface
    # each strategy of the llm fixer: its fixer and its prompt
    "fixer.py": {"fixers/llm/agent/fixer.py", "fixers/llm/repair/fixer.py"},
    "prompt.py": {"fixers/llm/agent/prompt.py", "fixers/llm/repair/prompt.py"},
}


def test_module_names_are_unique() -> None:
    """A name says which module it is: no two share a file name but for the same role
    in parallel packages."""
    by_name: dict[str, set[str]] = defaultdict(set)
    for path in APP.rglob("*.py"):
        if path.name != "__init__.py":
            by_name[path.name].add(path.relative_to(APP).as_posix())
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert shared == SAME_ROLE


def test_the_double_s_row_names_every_file() -> None:
    """A newcomer finds every file of LocalForge, the biggest room, in its row."""
    row = next(
        line for line in DOCS.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `app/localforge/` |")
    )  # fmt: skip
    files = {p.name for p in (APP / "localforge").glob("*.py") if p.name != "__init__.py"}
    assert {f for f in files if f"`{f}`" not in row} == set()
