"""Putting a corrected function back where it was: by its line range, never by text.

A repair rewrites one function and, where it reads them, its module's constants and
calls them, its small helpers (:class:`Target`). Each piece of the answer is
re-indented to its original's column (a method stays in its class) and replaced by its
own lines from the bottom up, and the file must still parse. A candidate (and a helper
rewritten with it) must keep the original's parameters, by name and in order: callers
pass them by position and by keyword.
"""

from __future__ import annotations

import ast
import difflib
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from app.fixers.llm.answers import parse
from app.fixers.llm.localize import Index, Symbol


@dataclass(frozen=True)
class Target:
    """What a repair round may rewrite: a function, the module constants it reads, and
    the small functions of its module (methods of its class) it calls."""

    symbol: Symbol
    constants: tuple[tuple[str, int, int], ...]  # (name, first line, last line)
    joined: tuple[str, ...] = ()  # of those, the other suspects taken in with it


# A helper this long or shorter is shown whole and may be rewritten with the function:
# the bug may be in a one-line helper the function calls, and a model shown only
# `def parse(version: str): ...` cannot know it returns strings.
HELPER_LINES = 12
MAX_HELPERS = 3


TOGETHER_LINES = 40  # a suspect this long or shorter may be rewritten with another


def target_of(idx: Index, symbol: Symbol, together: Sequence[Symbol] = ()) -> Target | None:
    """The function and the module-level constants it reads (assigned once, at the top
    of its module), its short helpers, and the functions of ``together`` (other suspects)
    of its file that are short and named unlike the rest: a fix may change two."""
    module = parse(idx.sources.get(symbol.path, ""))
    if module is None:
        return None
    function = next(
        (
            n
            for n in ast.walk(module)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name == symbol.name
            and n.lineno >= symbol.start
            and (n.end_lineno or n.lineno) <= symbol.end
        ),
        None,
    )
    if function is None:
        return None
    read = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
    constants = []
    for node in module.body:
        names: set[str] = set()
        if isinstance(node, ast.Assign):
            names = {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = {node.target.id}
        for name in sorted(names & read):
            constants.append((name, node.lineno, node.end_lineno or node.lineno))
    pieces = tuple(constants) + _helpers(module, function, symbol)
    taken = {symbol.name, *(name for name, _, _ in pieces)}
    joined: tuple[str, ...] = ()
    for other in together:
        short = other.end - other.start < TOGETHER_LINES
        if other.path == symbol.path and short and other.name not in taken:
            pieces += ((other.name, other.start, other.end),)
            taken.add(other.name)
            joined += (other.name,)
    return Target(symbol, pieces, joined)


def _helpers(
    module: ast.Module, function: ast.FunctionDef | ast.AsyncFunctionDef, symbol: Symbol
) -> tuple[tuple[str, int, int], ...]:
    """The short functions of the module (methods of the class, for a method) that the
    function calls by name (``parse(x)``, ``self._refill()``)."""
    called = {
        n.func.id if isinstance(n.func, ast.Name) else n.func.attr
        for n in ast.walk(function)
        if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
    }
    scope: list[ast.stmt] = module.body
    if symbol.kind == "method":
        owner = symbol.qualname.split(".")[0]
        scope = next(
            (n.body for n in module.body if isinstance(n, ast.ClassDef) and n.name == owner), []
        )
    out = []
    for node in scope:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        end = node.end_lineno or node.lineno
        if node.name in called and node.name != symbol.name and end - start < HELPER_LINES:
            out.append((node.name, start, end))
    return tuple(out[:MAX_HELPERS])


def unit_sources(text: str, target: Target) -> dict[str, str]:
    """The target's pieces as the file has them: "" the function, else each constant."""
    lines = text.splitlines()
    s = target.symbol
    out = {"": "\n".join(dedent(lines[s.start - 1 : s.end]))}
    for name, start, end in target.constants:
        out[name] = "\n".join(dedent(lines[start - 1 : end]))
    return out


def splice(text: str, target: Target, function: str, constants: dict[str, str]) -> str | None:
    """The file with the function (and any rewritten constant) replaced by line range,
    re-indented as the original; None when the result does not parse."""
    lines = text.splitlines(keepends=True)
    s = target.symbol
    indent = re.match(r"[ \t]*", lines[s.start - 1]).group(0)  # type: ignore[union-attr]
    edits = [(s.start, s.end, _indented(function, indent))]
    for name, start, end in target.constants:
        if name in constants:
            margin = re.match(r"[ \t]*", lines[start - 1]).group(0)  # type: ignore[union-attr]
            edits.append((start, end, _indented(textwrap.dedent(constants[name]), margin)))
    for start, end, new in sorted(edits, reverse=True):
        lines[start - 1 : end] = [new]
    spliced = "".join(lines)
    if not text.endswith("\n"):
        spliced = spliced.rstrip("\n")
    return spliced if parse(spliced) is not None else None


def _indented(source: str, indent: str) -> str:
    """Every line that is not empty indented (a line of spaces too: inside a docstring
    it is part of the string, and the original's had the indent)."""
    return (
        "".join(
            (indent + line if line.strip("\r\n") else line)
            for line in source.splitlines(keepends=True)
        ).rstrip("\n")
        + "\n"
    )


def changed_lines(a: str, b: str) -> int:
    return sum(
        1
        for line in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


def header(idx: Index, symbol: Symbol) -> str:
    """The function's decorators and ``def`` line(s), up to the colon, at column 0."""
    out = []
    for line in dedent(idx.lines(symbol)):
        out.append(line)
        if not line.lstrip().startswith("@") and line.rstrip().endswith(":"):
            break
    return "\n".join(out)


def keeps_parameters(original: str, candidate: str) -> bool:
    """Whether the candidate takes the original's parameters, by name and in order (it
    may add new ones after them): callers pass them by position and by keyword."""

    def parameters(source: str) -> list[str] | None:
        module = parse(source)
        node = module.body[0] if module is not None and module.body else None
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        a = node.args
        names = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
        names += [f"*{a.vararg.arg}"] if a.vararg else []
        names += [f"**{a.kwarg.arg}"] if a.kwarg else []
        return names

    before, after = parameters(original), parameters(candidate)
    if before is None or after is None:
        return True  # not for this check to say
    return after[: len(before)] == before


def signature(lines: list[str]) -> str:
    out = []
    for line in dedent(lines):
        if line.lstrip().startswith("@"):
            continue
        out.append(line)
        if line.rstrip().endswith(":"):
            break
    return "\n".join(out)


def dedent(lines: list[str]) -> list[str]:
    indent = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return [x[indent:] for x in lines]


def first_function(source: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function ``source`` (dedented) opens with, parsed; None if it opens with
    something else or does not parse."""
    module = parse(textwrap.dedent(source))
    node = module.body[0] if module is not None and module.body else None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
