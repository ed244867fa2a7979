"""Code out of a small model's answer, read the way it was meant.

A small model asked for "the corrected function in one fenced block" answers with prose
around it, a fence opened and then a ``path: x.py`` line and a second fence, a fence never
closed, the whole module instead of the function, the function inside its class, or only
the continuation of a ``def name(`` it was given to start from. Read naively, each of
these loses a right fix. :func:`code_blocks` finds the code however it was wrapped;
:func:`definitions` finds in it the function and the module constants asked for, by
parsing — never by matching text.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+.-]*)\s*$")
_PATH_LINE = re.compile(r"^\s*(?:#\s*)?(?:path|file(?:name)?)\s*:\s*\S+\s*$", re.IGNORECASE)


def code_blocks(answer: str) -> list[str]:
    """The code an answer holds: each fenced block (a block whose fence is never closed
    runs to the end), with stray ``path: x.py`` lines and empty fences dropped; the
    whole answer when it has no fence at all. Inside a block, a fence indented 4 spaces
    or more past the block's own is code (a docstring's ```` ```pycon ```` example)."""
    lines = answer.replace("\r\n", "\n").split("\n")
    blocks: list[list[str]] = []
    current: list[str] | None = None
    indent = 0  # the open block's fence's
    for line in lines:
        fence = _FENCE.match(line)
        margin = len(line) - len(line.lstrip())
        if fence and (current is None or margin < indent + 4):
            # A fence that names a language always opens a block (``` python after a
            # `path:` line inside a block is a second opening, not a close).
            if current is not None:
                blocks.append(current)
            current = [] if current is None or fence.group(2) else None
            indent = margin
            continue
        if current is not None and not _PATH_LINE.match(line):
            current.append(line)
    if current is not None:
        blocks.append(current)
    found = ["\n".join(b).strip("\n") for b in blocks]
    found = [b for b in found if b.strip()]
    if not found and not any(_FENCE.match(line) for line in lines):
        found = [answer.strip("\n")]
    return found


@dataclass(frozen=True)
class Definitions:
    """What an answer defines of what was asked: the function's source (dedented, at
    column 0) and the module constants it rewrote, by name."""

    function: str | None
    constants: dict[str, str] = field(default_factory=dict)
    problem: str = ""  # why there is no function: "unparseable", "renamed", "empty"


def parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def definitions(
    answer: str, name: str, *, constants: Sequence[str] = (), prefill: str = ""
) -> Definitions:
    """The function ``name`` (and any of ``constants``) the answer writes.

    ``prefill`` is the start of the answer the model was given to continue (the opening
    fence and ``def name(``): the answer is read with it put back, and as it is (a
    server that does not continue an assistant turn answers whole). Of several blocks,
    the last that defines ``name`` wins (models correct themselves); a function found
    only inside a class is taken from it."""
    readings = [prefill + answer, answer] if prefill else [answer]
    first: Definitions | None = None
    for text in readings:
        found = _read(code_blocks(text), name, constants)
        if found.function is not None:
            return found
        first = first or found
    assert first is not None
    return first


def _read(blocks: Sequence[str], name: str, constants: Sequence[str]) -> Definitions:
    if not any(b.strip() for b in blocks):
        return Definitions(None, problem="empty")
    parsed = [(src, m) for b in blocks if (m := parse(src := textwrap.dedent(b))) is not None]
    if not parsed:
        return Definitions(None, problem="unparseable")
    function: str | None = None
    found: dict[str, str] = {}
    other_defs = False
    for source, module in parsed:
        for node in _defs(module):
            if node.name == name:
                function = _segment(source, node)
            elif node.name in constants:  # a helper it calls, rewritten with it
                found[node.name] = _segment(source, node)
            else:
                other_defs = True
        for statement in module.body:
            for target in _assigned(statement) & set(constants):
                segment = ast.get_source_segment(source, statement)
                if segment:
                    found[target] = segment
    if function is None:
        return Definitions(None, found, problem="renamed" if other_defs else "no function")
    return Definitions(function.strip("\n") + "\n", found)


def _segment(source: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The function's lines, decorators included, at column 0."""
    lines = source.splitlines()
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    return textwrap.dedent("\n".join(lines[start : node.end_lineno or node.lineno]))


def _defs(module: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Functions at the top of the module, then those one class deep."""
    top = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    inner = [
        m
        for n in module.body
        if isinstance(n, ast.ClassDef)
        for m in n.body
        if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    return top + inner


def _assigned(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


class _Commuted(ast.NodeTransformer):
    """One order for what reads the same either way: ``isinstance`` checks joined by
    ``and``/``or`` (answers that write the same change with the checks in another order
    count as one change, so its votes are not split below a wrong change's), and the two
    sides of one ``==`` or ``!=``."""

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        checked = [
            ast.dump(v.args[0])
            for v in node.values
            if isinstance(v, ast.Call)
            and isinstance(v.func, ast.Name)
            and v.func.id == "isinstance"
            and v.args
        ]
        # Not when one checks part of another (`isinstance(v, list) and
        # isinstance(v[0], str)`: the first guards the second).
        apart = not any(a != b and a in b for a in checked for b in checked)
        if len(checked) == len(node.values) and apart:
            node.values = sorted(node.values, key=ast.dump)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            left, right = node.left, node.comparators[0]
            if ast.dump(left) > ast.dump(right):
                node.left, node.comparators = right, [left]
        return node


def normalised(source: str) -> str:
    """A form of Python source that two answers differing only in layout, comments,
    docstrings or the order of what commutes (:class:`_Commuted`) share: the dump of its
    syntax tree without positions or docstrings."""
    module = parse(textwrap.dedent(source))
    if module is None:
        return source
    for node in ast.walk(module):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module))
            and isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(_Commuted().visit(module), annotate_fields=False, include_attributes=False)
