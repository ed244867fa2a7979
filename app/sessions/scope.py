"""Which lines of a change the task explains: the scope a model's change must stay in.

Detectors name the credentials they recognise; they cannot enumerate every way to build
a string. So a change a model wrote merges itself only when everything it changes is
explained by the task (docs/security.md#containment): lines inside the functions the
session **implicated** before the model changed anything, and Python test files. Every
other changed line is a place :func:`outside` names — a new or deleted file, a data or
configuration file, module- or class-level code, a new function, a function nothing
implicated — and the policy holds the change for a person (``scope.outside``).

A function is implicated (always one of the base tree's: a function the change adds
was never implicated by anything but the change itself) when

- the fixer's own localisation found it (``FixOutcome.implicated``);
- the task names it as code (`` `parse_date` ``, ``Inventory.remove(...)``);
- a test that shows the fix (fixed, or reproduced on the base) reaches it, run on
  the base tree (app/sessions/reach.py).

An import the change adds at the top of a module is explained when every name it binds
is used by a changed function that is in scope; one it removes, when the patched module
uses none of its names any more. A module constant that already existed (an assignment
to the same names at the top of the base) and that an implicated function reads is
explained when it is rewritten, if the module's values were computed and scanned
(``computed``: the session imported the patched module, app/sessions/contain.py) and
its new lines hold no random-looking material: what a constant holds is then known,
not guessed. A new constant never is.

Pure: texts in, places out; the session reads the files and runs the tests.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from app.policy.evidence import OutsidePlace
from app.redact import opaque_values

# Files no model's fix needs to change (configuration and data): named as such.
DATA_SUFFIXES = {
    ".yml": "YAML",
    ".yaml": "YAML",
    ".json": "JSON",
    ".toml": "TOML",
    ".ini": "INI",
    ".cfg": "INI",
    ".conf": "configuration",
    ".env": "dotenv",
    ".properties": "properties",
}
# Random-looking material that could carry a credential: a token's alphabet, or a run
# of numbers. A regular expression's text (brackets, anchors, escapes) is code, and the
# module values' scan reads what a compiled one holds.
_CARRIER = re.compile(r"[\w+/=.-]+|\d+(?:\s*,\s*\d+)+")
_CODE_CITE = re.compile(r"`([^`\n]{2,120})`")
_CALL_CITE = re.compile(r"\b([A-Za-z_][\w.]{1,80})\(")


def cited_names(text: str) -> list[str]:
    """Dotted names ``text`` writes as code or calls, whole and in order
    (`` `dates.is_leap_year(1900)` `` and ``Inventory.remove(x)``: ``dates.is_leap_year``,
    ``Inventory.remove``)."""
    found: list[str] = []
    for pattern in (_CODE_CITE, _CALL_CITE):
        for m in pattern.finditer(text):
            head = re.split(r"[(\s\[]", m.group(1).strip(), maxsplit=1)[0]
            dotted = ".".join(p for p in head.split(".") if p.isidentifier())
            if dotted and dotted not in found:
                found.append(dotted)
    return found


def data_kind(path: str) -> str | None:
    """What kind of data or configuration file ``path`` is (``YAML``), or None."""
    name = path.rsplit("/", 1)[-1].lower()
    if name == ".env" or name.startswith(".env."):
        return "dotenv"
    dot = name.rfind(".")
    return DATA_SUFFIXES.get(name[dot:]) if dot > 0 else None


@dataclass(frozen=True)
class Unit:
    """A place code lives: a function or method (decorators and the comments right
    above it included), a class body, or the module."""

    kind: Literal["function", "class", "module"]
    qualname: str  # "parse", "Inventory.remove", "Inventory" (a class body), "" (module)
    start: int = 0
    end: int = 0

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


@dataclass
class Module:
    """A Python file's units, its top-level imports and where each name is loaded."""

    lines: list[str]
    units: list[Unit] = field(default_factory=list)
    imports: list[tuple[int, int, frozenset[str]]] = field(default_factory=list)
    # Each top-level statement's lines and, for a plain assignment, the names it binds
    assigns: list[tuple[int, int, frozenset[str]]] = field(default_factory=list)
    loads: dict[str, set[int]] = field(default_factory=dict)  # name -> lines it is read on

    def unit_at(self, line: int) -> Unit:
        """The innermost function or class around ``line``; else the module."""
        best = Unit("module", "")
        for u in self.units:
            if u.start <= line <= u.end and (best.kind == "module" or u.start >= best.start):
                best = u
        return best


def read_module(text: str) -> Module | None:
    """``text``'s units, or None when it does not parse as Python."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = text.splitlines()
    module = Module(lines=lines)
    _units(tree.body, "", module)
    module.units.sort(key=lambda u: u.start)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound = frozenset((a.asname or a.name).split(".")[0] for a in node.names)
            module.imports.append((node.lineno, node.end_lineno or node.lineno, bound))
        # Every top-level statement: a constant's names, or none (anything else)
        names = _assigned(node)
        module.assigns.append((node.lineno, node.end_lineno or node.lineno, names))
    for name in ast.walk(tree):
        if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Load):
            module.loads.setdefault(name.id, set()).add(name.lineno)
    return module


def _assigned(node: ast.stmt) -> frozenset[str]:
    """The names a plain module-level assignment binds (``A = …``, ``A, B = …``,
    ``A: int = …``); empty for anything else."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets = [node.target]
    names: set[str] = set()
    for target in targets:
        parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        if not all(isinstance(p, ast.Name) for p in parts):
            return frozenset()
        names |= {p.id for p in parts if isinstance(p, ast.Name)}
    return frozenset(names)


def _units(body: Sequence[ast.stmt], prefix: str, module: Module) -> None:
    """Functions (a function nested in one is part of it) and class bodies, with the
    methods of classes at any depth of classes."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            while start > 1 and module.lines[start - 2].lstrip().startswith("#"):
                start -= 1  # a comment right above belongs to what it introduces
            end = node.end_lineno or node.lineno
            qualname = f"{prefix}{node.name}"
            if isinstance(node, ast.ClassDef):
                module.units.append(Unit("class", qualname, start, end))
                _units(node.body, f"{qualname}.", module)
            else:
                module.units.append(Unit("function", qualname, start, end))


def functions(module: Module) -> list[Unit]:
    return [u for u in module.units if u.kind == "function"]


def named_in(text: str, modules: Mapping[str, Module]) -> dict[str, set[str]]:
    """The functions of ``modules`` (path -> module) that ``text`` names as code: the
    name alone (``remove``) or qualified (``Inventory.remove``, ``stock.remove``)."""
    cited = [c.split(".") for c in cited_names(text)]
    found: dict[str, set[str]] = {}
    for path, module in modules.items():
        for unit in functions(module):
            parts = unit.qualname.split(".")
            for name in cited:
                if name[-1] == parts[-1] and (len(name) == 1 or _qualifies(name, parts, path)):
                    found.setdefault(path, set()).add(unit.qualname)
    return found


def _qualifies(name: list[str], parts: list[str], path: str) -> bool:
    """``Class.method``, ``instance.method`` or ``module.function``: the qualifier is
    the class (in any case: ``inventory.remove``) or a part of the module's path."""
    qualifier = name[-2].lower()
    folders = path.removesuffix(".py").lower().split("/")
    return qualifier in [p.lower() for p in parts[:-1]] or qualifier in folders


def changed_lines(base: list[str], head: list[str]) -> tuple[list[int], list[int]]:
    """(lines of ``head`` added or rewritten, lines of ``base`` removed or rewritten),
    1-based; lines that are only whitespace are left out."""
    added: list[int] = []
    removed: list[int] = []
    for new, old in hunks(base, head):
        added += new
        removed += old
    return added, removed


def hunks(base: list[str], head: list[str]) -> list[tuple[list[int], list[int]]]:
    """Each change as (its lines of ``head``, its lines of ``base``), as
    :func:`changed_lines` counts them."""
    out = []
    matcher = difflib.SequenceMatcher(None, base, head, autojunk=False)
    for op, b1, b2, h1, h2 in matcher.get_opcodes():
        if op != "equal":
            new = [n + 1 for n in range(h1, h2) if head[n].strip()]
            old = [n + 1 for n in range(b1, b2) if base[n].strip()]
            if new or old:
                out.append((new, old))
    return out


@dataclass(frozen=True)
class FileChange:
    """One changed file as the scope reads it: its status and both texts (None where a
    side does not exist, or is not text)."""

    path: str
    status: str  # "added", "modified", "removed", "renamed", "type-changed"
    base: str | None
    head: str | None
    old_path: str | None = None
    test: bool = False  # a test file by the policy's categories


def outside(
    change: FileChange, implicated: Iterable[str] = (), *, computed: bool = False
) -> tuple[list[OutsidePlace], list[str]]:
    """The places of one changed file that the task does not explain, and the
    base's functions the change touches that are implicated (``implicated``: the
    file's implicated functions by qualname; ``computed``: its module's values were
    scanned, so a rewritten constant an implicated function reads is explained)."""
    path = change.path
    kind = data_kind(path)
    if change.status == "removed":
        return [OutsidePlace(path=path, what="deletes the file")], []
    if change.status == "renamed" and change.old_path:
        return [OutsidePlace(path=path, what=f"renames `{change.old_path}`")], []
    if kind is not None:
        new = "a new " if change.status == "added" else "a "
        return [OutsidePlace(path=path, what=f"{new}{kind} data file")], []
    if not path.endswith(".py") or change.head is None:
        what = "a new file" if change.status == "added" else "a file that is not Python code"
        return [OutsidePlace(path=path, what=what)], []
    if change.test:
        return [], []
    if change.status == "added" or change.base is None:
        return [OutsidePlace(path=path, what="a new Python module")], []
    base, head = read_module(change.base), read_module(change.head)
    if base is None or head is None:
        return [OutsidePlace(path=path, what="does not parse as Python")], []
    return _places(path, base, head, set(implicated), computed=computed)


def _places(
    path: str, base: Module, head: Module, implicated: set[str], *, computed: bool
) -> tuple[list[OutsidePlace], list[str]]:
    changes = hunks(base.lines, head.lines)
    existing = {u.qualname for u in functions(base)}
    touched = {head.unit_at(n) for new, _ in changes for n in new}
    touched |= {base.unit_at(n) for _, old in changes for n in old}
    inside = {
        u.qualname
        for u in touched
        if u.kind == "function" and u.qualname in implicated and u.qualname in existing
    }
    used = _used_by(head, [u for u in functions(head) if u.qualname in inside])
    read = _used_by(head, [u for u in functions(head) if u.qualname in implicated & existing])
    constants = {n for _, _, names in base.assigns for n in names} & read if computed else set()
    added: dict[Unit, list[int]] = {}
    removed: dict[Unit, list[int]] = {}
    for new, old in changes:
        at_top = [n for n in new if head.unit_at(n).kind == "module"]
        for n in new:
            unit = head.unit_at(n)
            if unit.kind != "module" or not (
                _explained_import(head, n, used) or _rewritten_constant(head, n, constants)
            ):
                added.setdefault(unit, []).append(n)
        for n in old:
            unit = base.unit_at(n)
            if unit.kind == "module" and (at_top or _unused_import(base, n, head)):
                continue  # rewritten at the top: named once, where it now is
            removed.setdefault(unit, []).append(n)
    places: list[OutsidePlace] = []
    named: set[tuple[str, str]] = set()
    for group, removal in ((added, False), (removed, True)):
        for unit, lines in group.items():
            key = (unit.kind, unit.qualname)
            if unit.kind == "function" and unit.qualname in inside:
                continue
            if unit.kind != "module" and key in named:
                continue  # changed and removed lines of one function: named once
            named.add(key)
            places += _named(path, unit, sorted(lines), existing, removal=removal)
    return sorted(places, key=lambda p: p.line), sorted(inside)


def _used_by(module: Module, units: Sequence[Unit]) -> set[str]:
    return {
        name
        for name, lines in module.loads.items()
        if any(u.start <= n <= u.end for n in lines for u in units)
    }


def _explained_import(module: Module, line: int, used: set[str]) -> bool:
    return any(a <= line <= b and names <= used for a, b, names in module.imports)


def _rewritten_constant(module: Module, line: int, constants: set[str]) -> bool:
    """Every statement on ``line`` assigns constants of ``constants`` (one at least),
    and no random-looking material is written there (a value that is known, not a
    carrier: app/redact.py reads material as it masks it)."""
    on = [(a, b, names) for a, b, names in module.assigns if a <= line <= b]
    if not on or not all(names and names <= constants for _, _, names in on):
        return False
    lines = module.lines[min(a for a, _, _ in on) - 1 : max(b for _, b, _ in on)]
    return not any(_CARRIER.fullmatch(v) for v in opaque_values(lines))


def _unused_import(base: Module, line: int, head: Module) -> bool:
    return any(a <= line <= b and not (names & head.loads.keys()) for a, b, names in base.imports)


def _named(
    path: str, unit: Unit, lines: list[int], existing: set[str], *, removal: bool
) -> list[OutsidePlace]:
    """One place per unit (a run of lines per run at module level)."""
    if not lines:
        return []
    if unit.kind == "function":
        if unit.qualname not in existing and not removal:
            what = f"a new function `{unit.qualname}`"
        else:
            what = f"function `{unit.qualname}`, which nothing implicated"
        return [OutsidePlace(path=path, line=lines[0], what=what, removed=removal)]
    if unit.kind == "class":
        what = f"class-level code in `{unit.qualname}`"
        return [OutsidePlace(path=path, line=lines[0], what=what, removed=removal)]
    runs: list[list[int]] = []
    for n in lines:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return [
        OutsidePlace(path=path, line=run[0], what="module-level code", removed=removal)
        for run in runs
    ]
