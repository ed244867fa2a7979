"""The small mechanical changes :mod:`app.fixers.llm.repair.mutants` tries, one kind each.

Each mutator reads one unit (a function, a constant, a helper) and yields edits: a node
of its syntax tree and the text to put in its place, by position, so the rest keeps its
layout. Their order in :data:`MUTATORS` is the order they are tried in.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from app.fixers.llm.repair.regex_mutants import regex_tokens
from app.fixers.llm.repair.spans import Edit, Source, code_nodes

MAX_ELEMENTS = 8  # a literal this long or shorter may have an element moved

_SWAP = {
    ast.Lt: "<=",
    ast.LtE: "<",
    ast.Gt: ">=",
    ast.GtE: ">",
}
_SCALES = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv)  # `x op n` that may be `x`
_OPS = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}


def _boundaries(src: Source) -> Iterator[Edit]:
    """``<`` and ``<=`` (``>`` and ``>=``) for each other, one operator at a time."""
    for node in code_nodes(src):
        if not isinstance(node, ast.Compare):
            continue
        for i, op in enumerate(node.ops):
            if type(op) not in _SWAP:
                continue
            ops = [_OPS.get(type(o), "") for o in node.ops]
            if "" in ops:
                break
            was, ops[i] = ops[i], _SWAP[type(op)]
            parts = [src.operand(node.left, above=4)]
            for o, right in zip(ops, node.comparators, strict=True):
                parts += [o, src.operand(right, above=4)]
            yield Edit(node, " ".join(parts), f"`{was}` became `{ops[i]}`", kind=node)


def _off_by_one(src: Source) -> Iterator[Edit]:
    """An integer one more or one less; the stop of a ``range`` one more; ``x - 1``
    (``x / 1000``: an operation by a constant) as ``x``."""
    covered: set[int] = set()  # numbers another change here already covers
    for node in code_nodes(src):
        if isinstance(node, ast.BinOp) and isinstance(node.op, _SCALES):
            covered.update(id(n) for n in (node.left, node.right))  # `x - 1` as `x`
        elif isinstance(node, ast.Compare) and any(type(o) in _SWAP for o in node.ops):
            covered.update(id(n) for n in (node.left, *node.comparators))  # `< 17`, `<= 17`
    for node in code_nodes(src):
        if isinstance(node, ast.BinOp) and isinstance(node.op, _SCALES) and _is_number(node.right):
            left = src.text(node.left)
            yield Edit(node, left, f"`{src.text(node)}` became `{left}`", kind=node.left)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "range"
            and 1 <= len(node.args) <= 2
            and not _is_number(node.args[-1])  # a literal stop is one more already
        ):
            stop = node.args[-1]
            plus = ast.BinOp(left=stop, op=ast.Add(), right=ast.Constant(1))
            text = f"{src.operand(stop, above=9)} + 1"
            yield Edit(stop, text, f"the range stops one later ({src.text(node)})", kind=plus)
        elif _is_number(node) and id(node) not in covered:
            value = node.value  # type: ignore[attr-defined]
            if isinstance(value, int) and 0 <= value <= 1000:
                for new in (value + 1, value - 1):
                    if new >= 0:
                        yield Edit(node, str(new), f"`{value}` became `{new}`")


def _is_number(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    )


def _unused_parameters(src: Source) -> Iterator[Edit]:
    """A parameter the function takes and never reads, passed on: to a call it makes
    (``s.decode(encoding)`` with ``errors`` unused), or returned where it returns
    ``None`` (``default`` unused)."""
    fn = src.tree.body[0] if src.tree.body else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return
    a = fn.args
    params = [
        p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs] if p.arg not in ("self", "cls")
    ]
    read = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    unused = [p for p in params if p not in read]
    if not unused:
        return
    for node in code_nodes(src):
        if isinstance(node, ast.Return) and _is_none(node.value):
            for p in unused:
                yield Edit(node, f"return {p}", f"`return None` became `return {p}`")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)  # a method: not isinstance(), type()
            and not any(k.arg is None for k in node.keywords)
        ):
            passed = {k.arg for k in node.keywords}
            inner = src.text(node)
            if not inner.endswith(")"):
                continue
            head = inner[:-1].rstrip()
            sep = "" if head.endswith(("(", ",")) else ", "  # a trailing comma: one-per-line
            for p in unused:
                if p in passed:
                    continue
                to = f"the unused parameter `{p}` is passed on to `{src.text(node.func)}`"
                if not node.keywords:  # next in line (`s.decode(encoding, errors)`)
                    yield Edit(node, f"{head}{sep}{p})", to)
                yield Edit(node, f"{head}{sep}{p}={p})", to + " by name")


def _is_none(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _loop_over_copy(src: Source) -> Iterator[Edit]:
    """``for x in items:`` as ``for x in list(items):`` (the loop's body may change what
    it loops over: a handler that unsubscribes while an event is emitted)."""
    for node in code_nodes(src):
        if not isinstance(node, (ast.For, ast.AsyncFor)):
            continue
        it = node.iter
        if isinstance(it, ast.Call) and not (
            isinstance(it.func, ast.Attribute) and it.func.attr in ("items", "keys", "values")
        ):
            continue
        if isinstance(it, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
            what = f"the loop runs over a copy of `{src.text(it)}`"
            yield Edit(it, f"list({src.text(it)})", what)


def _orders(src: Source) -> Iterator[Edit]:
    """An element of a short literal list or tuple moved to its front or its end (the
    order of replacements: ``&`` must be escaped first). Not within a pair, or any
    entry of a table: ``("<", "&lt;")`` is a mapping, not an order."""
    entries = {
        id(e)
        for n in ast.walk(src.tree)
        if isinstance(n, (ast.List, ast.Tuple, ast.Set))
        for e in n.elts
    }
    for node in code_nodes(src):
        if not isinstance(node, (ast.List, ast.Tuple)) or id(node) in entries:
            continue
        if not 3 <= len(node.elts) <= MAX_ELEMENTS:
            continue
        if any(isinstance(e, ast.Starred) for e in node.elts):
            continue
        items = [src.text(e) for e in node.elts]
        for i in range(len(items)):
            for to in (0, len(items) - 1):
                if i == to:
                    continue
                moved = list(items)
                moved.insert(to, moved.pop(i))
                text = _literal(src, node, moved)
                if text is not None:
                    where = "first" if to == 0 else "last"
                    yield Edit(node, text, f"`{items[i]}` moved {where} in its list")


def _literal(src: Source, node: ast.List | ast.Tuple, items: list[str]) -> str | None:
    was = src.text(node)
    if isinstance(node, ast.List):
        return "[" + ", ".join(items) + "]"
    if not was.startswith("("):
        return None  # an unparenthesised tuple (a, b = ...): not a literal to reorder
    return "(" + ", ".join(items) + ")"


def _dropped_arguments(src: Source, *, text_only: bool = False) -> Iterator[Edit]:
    """A constant argument left out (``text.split(" ")`` as ``text.split()``); ``text_only``:
    a string only (not ``range(1, n)``'s start, a precision or a file mode)."""
    for node in code_nodes(src):
        if not isinstance(node, ast.Call) or node.keywords:
            continue
        for i, arg in enumerate(node.args):
            if isinstance(arg, ast.Constant) and (not text_only or isinstance(arg.value, str)):
                rest = [src.text(a) for j, a in enumerate(node.args) if j != i]
                new = f"{src.operand(node.func, above=13)}({', '.join(rest)})"
                yield Edit(node, new, f"`{src.text(node)}` became `{new}`")


def _logic(src: Source) -> Iterator[Edit]:
    """``and`` for ``or`` and the other way; a ``not`` taken away, but not from a guard
    that raises: `if not is_valid(x): raise` turned round rejects every input it took,
    and a test of the one input the issue names passes it (two model tests that agree
    can then publish a wrong change when the repository's own tests never call the
    function with a valid input)."""
    guards = {
        id(n.test)
        for n in ast.walk(src.tree)
        if isinstance(n, ast.If) and any(isinstance(b, ast.Raise) for b in n.body)
    }
    for node in code_nodes(src):
        if isinstance(node, ast.BoolOp):
            swapped = ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(), [])
            word = "or" if isinstance(swapped.op, ast.Or) else "and"
            tight = 1 if word == "or" else 2
            text = f" {word} ".join(src.operand(v, above=tight) for v in node.values)
            was = "and" if word == "or" else "or"
            yield Edit(node, text, f"`{was}` became `{word}`", kind=swapped)
        elif (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.Not)
            and id(node) not in guards
        ):
            what = f"`not` taken away from `{src.text(node)}`"
            yield Edit(node, src.text(node.operand), what, kind=node.operand)


Mutator = Callable[[Source], Iterator[Edit]]

MUTATORS: tuple[Mutator, ...] = (
    _boundaries,
    _off_by_one,
    _unused_parameters,
    _loop_over_copy,
    _orders,
    _dropped_arguments,
    _logic,
    regex_tokens,
)


def _dropped_text(src: Source) -> Iterator[Edit]:
    """A string argument left out (``text.split(" ")`` as ``text.split()``)."""
    return _dropped_arguments(src, text_only=True)


# The kinds a single model-written test may judge. A loop over a copy behaves as the loop
# did unless its body changes what it loops over, and a test that fails without the copy
# and passes with it shows the body did (a handler that unsubscribes itself mid-loop: a
# small model rarely writes the copy itself). An element moved and a string argument
# left out (``text.split(" ")`` as ``text.split()``) are rarely wrong when one test of the
# bug passes them; `not` taken away and an off-by-one often are, so they wait for a
# stronger judge. Not on one model test either: a number dropped (`range(1, n)` as
# `range(n)` is an off-by-one; a precision, a file mode) (the measurements:
# docs/decisions/013-repair-rules-history.md).
WEAK_JUDGE_MUTATORS: tuple[Mutator, ...] = (
    _loop_over_copy,
    _orders,
    _dropped_text,
)
