"""A unit of source (a function, a constant) with its syntax tree: the text of a node by
its position, and that node replaced by other text, parenthesised where its place needs
it. What :mod:`app.fixers.llm.repair.mutators` works on.

A node's position leaves its own brackets out (``(a - b) * 1000``: the left operand is
``a - b``), so text moved or rewritten is put back in brackets when Python would
otherwise read it another way (``c - (a - b) * 1000`` without ``* 1000`` is
``c - (a - b)``, not ``c - a - b``). Lines are split as Python's tokenizer splits them
(``\\n``, ``\\r\\n``, ``\\r``), not as :meth:`str.splitlines` does (a form feed or
``\\u2028`` in a string is not a line break to ``ast``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
ATOM = 14
_BINARY = {
    ast.BitOr: 5,
    ast.BitXor: 6,
    ast.BitAnd: 7,
    ast.LShift: 8,
    ast.RShift: 8,
    ast.Add: 9,
    ast.Sub: 9,
    ast.Mult: 10,
    ast.Div: 10,
    ast.FloorDiv: 10,
    ast.Mod: 10,
    ast.MatMult: 10,
    ast.Pow: 12,
}


@dataclass(frozen=True)
class Edit:
    """``node`` to be replaced by ``text``; ``kind``: the expression the text is (its
    precedence decides the brackets), None for text that needs none (a literal)."""

    node: ast.AST
    text: str
    what: str
    kind: ast.AST | None = None


def precedence(node: ast.AST | None, text: str = "") -> int:
    """How tightly an expression binds, as Python's grammar orders them (higher binds
    tighter); an atom (a name, a call, a literal) the most."""
    if isinstance(node, ast.NamedExpr):
        return -1
    if isinstance(node, ast.Tuple):
        return ATOM if text.startswith("(") else -1
    if isinstance(node, (ast.Lambda, ast.IfExp)):
        return 0
    if isinstance(node, ast.BoolOp):
        return 1 if isinstance(node.op, ast.Or) else 2
    if isinstance(node, ast.UnaryOp):
        return 3 if isinstance(node.op, ast.Not) else 11
    if isinstance(node, ast.Compare):
        return 4
    if isinstance(node, ast.BinOp):
        return _BINARY.get(type(node.op), 10)
    if isinstance(node, ast.Await):
        return 13
    return ATOM


class Source:
    """A unit's source with its syntax tree, and the text of a node by its position."""

    def __init__(self, source: str, tree: ast.Module) -> None:
        self.source = source
        self.tree = tree
        self.lines = [m.group(0).encode() for m in _LINES.finditer(source) if m.group(0)]
        self.parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}

    def text(self, node: ast.AST) -> str:
        (l1, c1), (l2, c2) = _span(node)
        if l1 == l2:
            return self.lines[l1 - 1][c1:c2].decode()
        middle = b"".join(self.lines[l1 : l2 - 1])
        return (self.lines[l1 - 1][c1:] + middle + self.lines[l2 - 1][:c2]).decode()

    def operand(self, node: ast.AST, *, above: int) -> str:
        """The node's text, bracketed unless it binds tighter than ``above``."""
        text = self.text(node)
        return text if precedence(node, text) > above else f"({text})"

    def replaced(self, edit: Edit) -> str:
        """The unit with the edit made, its text bracketed where its place needs it."""
        (l1, c1), (l2, c2) = _span(edit.node)
        head = b"".join(self.lines[: l1 - 1]) + self.lines[l1 - 1][:c1]
        tail = self.lines[l2 - 1][c2:] + b"".join(self.lines[l2:])
        text = edit.text
        bracketed = head.rstrip().endswith(b"(") and tail.lstrip().startswith(b")")
        if (
            edit.kind is not None
            and not bracketed
            and self._needs_brackets(edit.node, edit.kind, text)
        ):
            text = f"({text})"
        return (head + text.encode() + tail).decode()

    def _needs_brackets(self, node: ast.AST, kind: ast.AST, text: str) -> bool:
        parent = self.parents.get(id(node))
        mine = precedence(kind, text)
        if isinstance(parent, ast.BinOp):
            theirs = precedence(parent)
            return mine < theirs or (mine == theirs and node is parent.right)
        if isinstance(parent, (ast.UnaryOp, ast.BoolOp)):
            return mine < precedence(parent)
        if isinstance(parent, ast.Compare):
            return mine <= precedence(parent)
        if isinstance(parent, (ast.Attribute, ast.Subscript, ast.Await, ast.Starred)) or (
            isinstance(parent, ast.Call) and node is parent.func
        ):
            return mine < ATOM
        if isinstance(parent, ast.IfExp):
            return mine <= 0
        return mine < 0


def _span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    return (
        (node.lineno, node.col_offset),  # type: ignore[attr-defined]
        (node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
    )


def code_nodes(src: Source) -> Iterator[ast.AST]:
    """The nodes of the unit but its docstrings (and not the default values of its
    parameters: a default is the caller's contract)."""
    skip: set[int] = set()
    for node in ast.walk(src.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in [*node.args.defaults, *node.args.kw_defaults, *node.decorator_list]:
                if d is not None:
                    skip.update(id(n) for n in ast.walk(d))
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            skip.add(id(body[0].value))
    for node in ast.walk(src.tree):
        if id(node) not in skip:
            yield node
