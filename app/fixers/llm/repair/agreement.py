"""Which of the reproduction tests a small model wrote to believe: what each asserts of
each expression (``assert f(x) == y`` gives f(x) -> y), the majority's expectation where
they differ, and whether two of them agree at all (one such test alone is wrong about as
often as it is right).
"""

from __future__ import annotations

import ast
import copy
from collections import Counter

from app.fixers.llm.answers import parse

MAX_VALUE_NODES = 60  # a longer value stays a name
MAX_READS = 50


def expectations(source: str) -> dict[str, str]:
    """What a test asserts of each expression: ``assert f(x) == y`` gives f(x) -> y,
    with the names a test function sets once read as what they were set to (two tests
    that assert ``f(items, page) == expected`` of different values and expect different
    results would agree, read as written, and a wrong one would judge alone)."""
    module = parse(source)
    out: dict[str, str] = {}
    if module is None:
        return out
    scopes = [n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in [module, *scopes]:
        names = _set_once(scope)
        for node in _own_nodes(scope):
            if (
                isinstance(node, ast.Assert)
                and isinstance(node.test, ast.Compare)
                and len(node.test.ops) == 1
                and isinstance(node.test.ops[0], (ast.Eq, ast.Is))
            ):
                try:
                    left = _dump(node.test.left, names)
                    out[left] = _dump(node.test.comparators[0], names)
                except RecursionError:  # a model's expression too deep to read as values
                    left = ast.dump(node.test.left, annotate_fields=False)
                    out[left] = ast.dump(node.test.comparators[0], annotate_fields=False)
    return out


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a function (or module), but those of the functions inside it."""
    nodes: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        nodes.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return nodes


def _set_once(scope: ast.AST) -> dict[str, ast.expr]:
    """The names a scope assigns exactly once, by a plain ``name = value``."""
    counts: Counter[str] = Counter()
    values: dict[str, ast.expr] = {}
    for node in _own_nodes(scope):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] += 1
        if isinstance(node, ast.ExceptHandler) and node.name:
            counts[node.name] += 1
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            values[node.targets[0].id] = node.value
    return {
        name: value
        for name, value in values.items()
        if counts[name] == 1
        and sum(1 for _ in ast.walk(value)) <= MAX_VALUE_NODES
        and not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(value))
    }


class _Read(ast.NodeTransformer):
    """Names read as their values: at most :data:`MAX_READS` of them, three deep (`a =
    b; b = a` cannot loop for ever, nor a value that names another thirty times)."""

    def __init__(self, names: dict[str, ast.expr]) -> None:
        self.names, self.depth, self.reads = names, 0, 0

    def visit_Name(self, node: ast.Name) -> ast.AST:
        value = self.names.get(node.id)
        if value is None or self.depth > 3 or self.reads >= MAX_READS:
            return node
        self.depth, self.reads = self.depth + 1, self.reads + 1
        try:
            read: ast.AST = self.visit(copy.deepcopy(value))
            return read
        finally:
            self.depth -= 1


def _dump(node: ast.expr, names: dict[str, ast.expr]) -> str:
    return ast.dump(_Read(names).visit(copy.deepcopy(node)), annotate_fields=False)


def majority(kept: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The reproduction to keep: where kept tests expect different results of the same
    call, the tests of the majority's expectation; the first of those (the greedy one,
    when it is there)."""
    if not kept:
        return None
    votes: dict[str, Counter[str]] = {}
    for source, _ in kept:
        for left, right in expectations(source).items():
            votes.setdefault(left, Counter())[right] += 1
    best = {left: c.most_common(1)[0] for left, c in votes.items()}

    def agrees(source: str) -> int:
        return sum(
            1 for left, right in expectations(source).items() if best[left][0] == right
        ) - sum(1 for left, right in expectations(source).items() if best[left][0] != right)

    return max(kept, key=lambda pair: (agrees(pair[0]), -kept.index(pair)))


def agreed(kept: list[tuple[str, str]]) -> bool:
    """Whether two kept tests agree on what the code should do (a second batch is drawn
    otherwise: one test alone is wrong about as often as it is right, e.g. it builds an
    input that cannot show the bug)."""
    chosen = majority(kept)
    return chosen is not None and (
        sum(1 for s, _ in kept if expectations(s) == expectations(chosen[0])) > 1
    )
