"""The imports a small model forgets, found and written for it.

A small model writes ``raise OutOfStock(...)`` in a function whose module never imported
``OutOfStock``, ``unicodedata.normalize(...)`` without ``import unicodedata``, or
``pytest.raises(SignupError)`` in a test that imports only ``signup``; the change is
right and fails with a NameError the model does not understand. A forgotten name is
imported when there is one reading: a module of the standard library used as
``name.attr``, a well-known standard name (``date``, ``defaultdict``), or a name exactly
one module of the repository defines at its top. The lines go where Python reads
imports (after a shebang, an encoding line and the module's docstring).
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
from collections.abc import Callable

from app.fixers.llm.answers import parse
from app.fixers.llm.localize import Index

Defines = Callable[[str], list[str]]  # a name -> the modules that define it, as import paths

# A name's standard module, for names used without their module ("" for a module
# itself): `datetime.timedelta(...)` is the module, `datetime(...)` the class.
STDLIB = {
    **dict.fromkeys(["date", "datetime", "timedelta", "timezone"], "datetime"),
    "Decimal": "decimal",
    "Fraction": "fractions",
    **dict.fromkeys(
        ["OrderedDict", "defaultdict", "Counter", "deque", "namedtuple"], "collections"
    ),
    **dict.fromkeys(["partial", "wraps", "reduce"], "functools"),
    "Path": "pathlib",
    "mock": "unittest",
    **dict.fromkeys(
        [
            "math",
            "re",
            "os",
            "sys",
            "json",
            "time",
            "itertools",
            "functools",
            "collections",
            "string",
            "random",
            "io",
            "operator",
            "copy",
            "decimal",
            "textwrap",
            "unittest",
            "unicodedata",
        ],
        "",
    ),
}


def unbound(module: ast.Module) -> dict[str, frozenset[str]]:
    """Names the module reads but never binds (not builtins), each with the attributes
    it is used with (``name.attr``: a module, most likely). Coarse on purpose: a name
    bound anywhere in the module counts as bound everywhere."""
    bound = set(dir(builtins))
    used: dict[str, set[str]] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                used.setdefault(node.id, set())
            else:
                bound.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            used.setdefault(node.value.id, set()).add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return {name: frozenset(attrs) for name, attrs in used.items() if name not in bound}


def star_import(module: ast.Module) -> bool:
    """Whether the module imports ``*`` (any name may come from there)."""
    return any(
        isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
        for n in ast.walk(module)
    )


def standard_import(name: str, attrs: frozenset[str]) -> str | None:
    """The import of a standard name or module, where there is one reading: the module
    when it is used as ``module.attr`` (``datetime.timedelta``), the name from its
    module when it is used alone (``date(...)``, ``datetime.now()``)."""
    home = STDLIB.get(name)
    if home:
        return f"import {name}" if attrs & STDLIB.keys() else f"from {home} import {name}"
    if home == "" or (attrs and name in sys.stdlib_module_names):
        return f"import {name}"
    return None


def import_lines(names: dict[str, frozenset[str]], defined_in: Defines) -> list[str]:
    """One import line per name that has one reading: a standard module used as one,
    else the module of the repository that alone defines it (``defined_in``: the
    modules that define it, as import paths), else a well-known standard name. A name
    several modules define is left alone."""
    lines = []
    for name, attrs in sorted(names.items()):
        module_use = bool(attrs) and name in sys.stdlib_module_names and not STDLIB.get(name)
        where = [] if module_use else defined_in(name)
        if len(where) > 1:
            continue
        line = f"from {where[0]} import {name}" if where else standard_import(name, attrs)
        if line:
            lines.append(line)
    return lines


def forgotten(original: str, changed: str, defined_in: Defines) -> list[str]:
    """Import lines the changed module needs for names it reads and the original did
    not leave unbound (a name unbound before is the module's own business)."""
    before, after = parse(original), parse(changed)
    if before is None or after is None or star_import(after):
        return []
    was = unbound(before)
    return import_lines({k: v for k, v in unbound(after).items() if k not in was}, defined_in)


def with_import_lines(content: str, lines: list[str]) -> str:
    """``content`` with import ``lines`` added after its shebang, encoding line and
    docstring (and ``from __future__`` imports), where Python reads imports."""
    if not lines:
        return content
    at = 0
    # Lines as Python counts them (not str.splitlines, which also breaks at a form feed
    # or U+2028 inside a docstring).
    source = re.split(r"(?<=\n)", content)
    if source and source[-1] == "":
        source.pop()
    while at < len(source) and source[at].startswith(("#!", "# -*-", "# vim:", "# coding")):
        at += 1
    module = parse(content)
    for node in module.body if module is not None else []:
        docstring = (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and node is module.body[0]  # type: ignore[union-attr]
        )
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (docstring or future) or node.end_lineno is None:
            break
        at = max(at, node.end_lineno)
    added = "".join(f"{line}\n" for line in lines)
    if at and not source[at - 1].endswith("\n"):
        added = "\n" + added
    return "".join(source[:at]) + added + "".join(source[at:])


def module_name(path: str) -> str:
    """A file's import path (``src/`` layouts without their ``src``)."""
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if parts and parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    return ".".join(parts)


# Files that are no module of the project, whatever pytest's rootdir lets import.
_NOT_MODULES = frozenset({"setup", "noxfile", "conftest", "manage", "fabfile", "tasks"})
_NOT_PACKAGES = frozenset({"docs", "doc", "scripts", "examples", "bench", "benchmarks", "tools"})


def importable(module: str) -> bool:
    """Whether ``module`` is an import path of the project's own code: every part a
    name (not ``0001_initial``, ``build-docs``), not a script or an example."""
    parts = module.split(".")
    return (
        bool(module)
        and all(p.isidentifier() for p in parts)
        and parts[0] not in _NOT_PACKAGES
        and parts[-1] not in _NOT_MODULES
    )


def defined_by(idx: Index, name: str) -> list[str]:
    """The importable modules (as import paths) that define ``name`` at their top."""
    return [m for m in map(module_name, idx.defines.get(name, [])) if importable(m)]
