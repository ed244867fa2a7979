"""The rooms of ``app/`` and which way their imports may point (docs/architecture.md).

Each room has a layer; a module may import its own room and rooms of lower layers only.
``localforge`` (the GitHub double) is for tests, the demo and the CLI's demo verbs:
nothing else imports it. Imports inside ``if TYPE_CHECKING:`` count too: a type is a
dependency.

Known exceptions are listed by file, with the issue that removes them; the test fails
on a new one, and on a listed one that is gone (so the list stays true).
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"

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
    # a coding session; the worker pool; the metrics (counts the store reads)
    "sessions": 2,
    "queue": 2,
    "metrics": 2,
    # what edits a tree; what writes to GitHub; the job kinds and lifecycle rules (the
    # contract between the intake and the jobs)
    "fixers": 3,
    "publish": 3,
    "jobs.kinds": 3,
    "jobs.rules": 3,
    # webhook routing and handlers: they queue typed jobs
    "webhooks": 4,
    # the jobs and the process wiring
    "jobs": 5,
    # the intake
    "server": 6,
    # the patchwarden command and its verbs (run, score, doctor, demo)
    "cli": 7,
    "__main__": 7,
    "localforge": 1,  # the double: errors, config, GitHub's signing and manifest
}
MAY_IMPORT_THE_DOUBLE = {"cli", "localforge"}

# (importing file, imported module): debt, each with the issue that removes it. Empty
# now: policy/ reads sessions through its own types (app/policy/evidence.py).
KNOWN: set[tuple[str, str]] = set()


def _room(module: str) -> str:
    """The room of ``app.x.y``: ``x``, or ``x.y`` where that module has a layer of its
    own (``jobs.kinds``: the handlers may import it, not the jobs)."""
    parts = module.split(".")
    if len(parts) > 2 and ".".join(parts[1:3]) in LAYERS:
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else "__init__"


def _is_room(name: str) -> bool:
    return (APP / name).is_dir() or (APP / f"{name}.py").is_file()


def _imports(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "app":  # from app import x: x is a room, or a name in app/
                found += [f"app.{a.name}" if _is_room(a.name) else "app" for a in node.names]
            else:
                found.append(node.module)
    return [m for m in found if m == "app" or m.startswith("app.")]


def _violations() -> set[tuple[str, str]]:
    wrong = set()
    for path in sorted(APP.rglob("*.py")):
        relative = path.relative_to(APP)
        room = _room("app." + ".".join(relative.with_suffix("").parts))
        for module in _imports(path):
            target = _room(module)
            if target == room:
                continue
            at_the_double = target == "localforge" and room not in MAY_IMPORT_THE_DOUBLE
            if at_the_double or LAYERS[target] > LAYERS[room]:
                wrong.add((relative.as_posix(), module))
    return wrong


def test_every_room_has_a_layer() -> None:
    rooms = {
        p.name.removesuffix(".py")
        for p in APP.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"
    }
    whole = {name for name in LAYERS if "." not in name}
    assert rooms - whole == set(), "a new room: give it a layer here and a row in docs"
    assert whole - rooms == set(), "a room is gone: drop it here"
    parts = {name for name in LAYERS if "." in name}
    assert {p for p in parts if not (APP / f"{p.replace('.', '/')}.py").is_file()} == set()


def test_imports_point_down_the_layers() -> None:
    wrong = _violations()
    assert wrong - KNOWN == set(), (
        "an import points up (or at the double); see docs/architecture.md"
    )
    assert KNOWN - wrong == set(), "a known exception is gone: take it off KNOWN"


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


def test_a_module_with_its_own_layer_is_its_own_room() -> None:
    """The job kinds sit below the webhook handlers; the jobs above them: the kinds
    importing a job would be an upward arrow, and the check says so."""
    assert _room("app.jobs.kinds") == "jobs.kinds"
    assert _room("app.jobs.fix") == "jobs"
    assert _room("app.jobs") == "jobs"
    assert LAYERS[_room("app.jobs.context")] > LAYERS["jobs.kinds"]
    assert LAYERS["webhooks"] > LAYERS["jobs.kinds"]
    assert LAYERS["webhooks"] < LAYERS["jobs"]


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
