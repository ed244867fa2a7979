"""A model's reproduction test that contradicts the issue's own words.

A small model asked for a test of the issue's example copies the wrong value the issue
quotes as the expected one, or asserts a value the issue never gave
(``expected = ["b", "c", "a"]`` where the issue asks for ``['b', 'a', 'c']``): a test no
fix could pass. Such an assertion — read through the names the test assigns once,
``result = unique(...)``, ``expected = [...]`` — becomes ``pass``; the rest of the test
stays (app/fixers/llm/repair/examples.py reads the issue's examples).
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Sequence
from typing import Any

from app.fixers.llm.answers import parse
from app.fixers.llm.repair.examples import NOT_SAID, Example, last_name, same_value


def strip_contradictions(source: str, found: Sequence[Example]) -> tuple[str, int]:
    """The test without its assertions of what the issue calls the bug, or of another
    value than the issue asks for (each becomes ``pass``); and how many went."""
    module = parse(source)
    if module is None:
        return source, 0
    lines = source.splitlines()
    gone = 0
    for function, node in _asserts(module):
        test = _resolved(node.test, _assigned_once(function, before=node.lineno))
        if any(_contradicts(test, e) for e in found):
            indent = lines[node.lineno - 1][: node.col_offset]
            lines[node.lineno - 1] = f"{indent}pass"
            for n in range(node.lineno, node.end_lineno or node.lineno):
                lines[n] = ""
            gone += 1
    return ("\n".join(lines) + "\n" if gone else source), gone


def _asserts(module: ast.Module) -> list[tuple[ast.AST, ast.Assert]]:
    """Each assertion with the function it is in (the module, outside any)."""
    out: list[tuple[ast.AST, ast.Assert]] = []

    def visit(node: ast.AST, scope: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Assert):
                out.append((scope, child))
            inner = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            visit(child, child if inner else scope)

    visit(module, module)
    return out


def _assigned_once(scope: ast.AST, *, before: int) -> dict[str, ast.expr]:
    """Names the function binds exactly once, by ``name = value`` above line ``before``
    (``result = unique([...])``, ``expected = [...]``): a small model asserts through
    them. Not a name changed in place later (``expected.append(...)``, ``expected[0] =
    ...``, ``del expected``): its value is no longer what was assigned."""
    values: dict[str, ast.expr] = {}
    changed: set[str] = set()
    stores: Counter[str] = Counter()
    for node in ast.walk(scope):
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(node, ast.Assign) and isinstance(target, ast.Name) and node.lineno < before:
            values[target.id] = node.value
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] += 1
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.value, ast.Name):
            changed.add(node.value.id)  # a method call or an item: perhaps a change
    return {k: v for k, v in values.items() if stores[k] == 1 and k not in changed}


def _resolved(test: ast.expr, assigned: dict[str, ast.expr]) -> ast.expr:
    """``assert result == expected`` read as what the names hold, the call on the left
    (``assert [..] == f(x)`` as ``f(x) == [..]``)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return test

    def value(e: ast.expr) -> ast.expr:
        return assigned.get(e.id, e) if isinstance(e, ast.Name) else e

    left, right = value(test.left), value(test.comparators[0])
    if not isinstance(left, ast.Call) and isinstance(right, ast.Call):
        left, right = right, left
    return ast.Compare(left=left, ops=test.ops, comparators=[right])


def _contradicts(test: ast.expr, e: Example) -> bool:
    asserted: Any = NOT_SAID
    call: ast.expr = test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        call, asserted = test.operand, False
    elif (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Eq, ast.Is))
    ):
        call = test.left
        try:
            asserted = ast.literal_eval(test.comparators[0])
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return False
    elif isinstance(test, ast.Call):
        asserted = True
    listed = False
    if isinstance(call, ast.Call) and last_name(call) == "list" and call.args:
        call, listed = call.args[0], True
    if asserted is NOT_SAID or not isinstance(call, ast.Call) or last_name(call) != e.name:
        return False
    if tuple(ast.dump(a) for a in [*call.args, *call.keywords]) != e.args:
        return False
    if e.listed and not listed and isinstance(asserted, list):
        return True  # an iterator is never equal to a list: no fix could pass it
    if e.confirmed and not e.raises and same_value(asserted, e.now):
        return True
    if isinstance(test, ast.Compare) and e.wanted is not NOT_SAID:
        return not same_value(asserted, e.wanted)
    return isinstance(e.wanted, bool) and not same_value(asserted, e.wanted)
