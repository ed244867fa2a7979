"""Cloze rounds: the function shown with one statement hidden, to be written anew.

A small model shown a whole function and the failure it gives mostly writes it back as it
is, the wrong line included; shown its signature alone, it writes a different function,
often wrong elsewhere. Between the two: the function as it is with one statement hidden,
as cloze-style repair does (AlphaRepair): the model cannot copy the line it does not see,
and the rest it is shown stays as it is. Which line is wrong the system does not know, so
each of the few statements that compute something gets its own prompt, one greedy answer
each, and the tests judge as for any answer.
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from app.fixers.llm.answers import parse
from app.fixers.llm.localize import Index
from app.fixers.llm.repair.splice import Target

MAX_MASKS = 4  # statements hidden in turn, one prompt each
MARK = "???"


class Mask(NamedTuple):
    """One statement hidden: its lines in the file, and the line shown in their place —
    its frame kept, what it computes hidden (``start = ???``, ``for attempt in ???:``):
    told only that a line is hidden, a small model may write a comment there."""

    first: int
    last: int
    shown: str


# What makes a statement worth hiding: it computes something a bug could get wrong.
_COMPUTES = (
    ast.BinOp,
    ast.Compare,
    ast.Call,
    ast.Subscript,
    ast.BoolOp,
    ast.UnaryOp,
    ast.comprehension,
    ast.Slice,
    ast.JoinedStr,
    ast.IfExp,
)


def masks(idx: Index, target: Target) -> list[Mask]:
    """The statements worth hiding, as (first, last) lines of the function's file: the
    function's, its helpers' and the module constants it reads (a bug may be in a helper
    the function calls, or in a pattern it uses; a constant counts even when it computes
    nothing, as a table of literals), the most computing first (at most
    :data:`MAX_MASKS`), in file order among equals. A compound statement is hidden by its
    header (``for ... in ...:``), never with its body; the docstring, ``pass``, a bare
    ``raise``, nested ``def`` lines and decorators are never hidden."""
    module = parse(idx.sources.get(target.symbol.path, ""))
    if module is None:
        return []
    units = [(target.symbol.start, target.symbol.end), *((a, b) for _, a, b in target.constants)]
    lines = idx.sources[target.symbol.path].splitlines()
    found: list[tuple[int, Mask]] = []
    for start, end in units:
        for statement in _unit(module, start, end):
            span, parts = _header(statement)
            if span is None or not _alone(statement, span, lines):
                continue
            weight = sum(isinstance(n, _COMPUTES) for part in parts for n in ast.walk(part))
            if isinstance(statement, ast.Raise):
                weight -= 2  # a guard's message is seldom the bug
            if statement in module.body:  # a constant, as a table of pairs
                weight = max(weight, 1)
            if weight > 0:
                found.append((weight, Mask(*span, _frame(statement, lines[span[0] - 1]))))
    found.sort(key=lambda w: (-w[0], w[1].first))
    return sorted(mask for _, mask in found[:MAX_MASKS])


def _alone(node: ast.stmt, span: tuple[int, int], lines: list[str]) -> bool:
    """Whether the statement has its lines to itself: not ``if x: return y`` (hiding the
    ``return`` would hide the ``if``), not ``a = f(); b = g()``."""
    before = lines[node.lineno - 1][: node.col_offset]
    after = "" if span[1] != (node.end_lineno or node.lineno) else lines[span[1] - 1]
    after = after[node.end_col_offset :].strip() if node.end_col_offset is not None else ""
    return not before.strip() and (not after or after.startswith("#"))


def _frame(node: ast.stmt, line: str) -> str:
    """The line shown for a hidden statement: its frame, with :data:`MARK` for what it
    computes (a bare :data:`MARK` where the frame is not plain)."""
    if isinstance(node, ast.Assign):
        return " = ".join([*(ast.unparse(t) for t in node.targets), MARK])
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return f"{ast.unparse(node.target)}: {ast.unparse(node.annotation)} = {MARK}"
    if isinstance(node, ast.AugAssign) and type(node.op) in _OPS:
        return f"{ast.unparse(node.target)} {_OPS[type(node.op)]}= {MARK}"
    if isinstance(node, ast.Return):
        return f"return {MARK}"
    if isinstance(node, (ast.For, ast.AsyncFor)):
        keyword = "async for" if isinstance(node, ast.AsyncFor) else "for"
        return f"{keyword} {ast.unparse(node.target)} in {MARK}:"
    if isinstance(node, ast.If):
        return f"{'elif' if line.lstrip().startswith('elif') else 'if'} {MARK}:"
    if isinstance(node, ast.While):
        return f"while {MARK}:"
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return f"{'async with' if isinstance(node, ast.AsyncWith) else 'with'} {MARK}:"
    return MARK


_OPS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.MatMult: "@",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
}


def _unit(module: ast.Module, start: int, end: int) -> list[ast.stmt]:
    """The statements of the function or the constant at lines ``start``-``end``."""
    for node in ast.walk(module):
        inside = (
            isinstance(node, ast.stmt)
            and start <= node.lineno <= end
            and (node.end_lineno or node.lineno) <= end
        )
        if not inside:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return _statements(node.body)
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            return [node]
    return []


def hide(lines: list[str], first: int, mask: Mask | None) -> list[str]:
    """``lines`` (a unit's, its first at file line ``first``) with the statement
    ``mask`` hides shown as its frame, at its indentation, if it is theirs."""
    if mask is None or not first <= mask.first <= mask.last < first + len(lines):
        return lines
    a, b = mask.first - first, mask.last - first
    indent = lines[a][: len(lines[a]) - len(lines[a].lstrip())]
    return [*lines[:a], f"{indent}{mask.shown}", *lines[b + 1 :]]


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Every statement under ``body``, nested ones included, the docstring left out."""
    out: list[ast.stmt] = []
    for i, node in enumerate(body):
        doc = (
            i == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        if doc:
            continue
        out.append(node)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                out += _statements(inner)
        for handler in getattr(node, "handlers", []) or []:
            out += _statements(handler.body)
    return out


def _header(node: ast.stmt) -> tuple[tuple[int, int] | None, list[ast.AST]]:
    """The lines a statement is hidden by, and the expressions they hold."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass, ast.Match)):
        return None, []
    if isinstance(node, ast.Raise) and node.exc is None:
        return None, []
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        if isinstance(node, ast.Try):
            return None, []
        first = body[0]
        decorators = getattr(first, "decorator_list", [])
        last = min([first.lineno, *(d.lineno for d in decorators)]) - 1
        if last < node.lineno:  # `if x: return y` on one line
            return None, []
        parts: list[ast.AST] = [
            getattr(node, name)
            for name in ("test", "target", "iter")
            if isinstance(getattr(node, name, None), ast.AST)
        ]
        parts += [item.context_expr for item in getattr(node, "items", [])]
        return (node.lineno, last), parts
    return (node.lineno, node.end_lineno or node.lineno), [node]
