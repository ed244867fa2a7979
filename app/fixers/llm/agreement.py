"""Which of the reproduction tests a small model wrote to believe: what each asserts of
each expression (``assert f(x) == y`` gives f(x) -> y), the majority's expectation where
they differ, and whether two of them agree at all (one test alone was wrong as often as
right: retry-count, paginate-offset).
"""

from __future__ import annotations

import ast
from collections import Counter

from app.fixers.llm.answers import parse


def expectations(source: str) -> dict[str, str]:
    """What a test asserts of each expression: ``assert f(x) == y`` gives f(x) -> y."""
    module = parse(source)
    out: dict[str, str] = {}
    if module is None:
        return out
    for node in ast.walk(module):
        if (
            isinstance(node, ast.Assert)
            and isinstance(node.test, ast.Compare)
            and len(node.test.ops) == 1
            and isinstance(node.test.ops[0], (ast.Eq, ast.Is))
        ):
            left = ast.dump(node.test.left, annotate_fields=False)
            out[left] = ast.dump(node.test.comparators[0], annotate_fields=False)
    return out


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
    otherwise: one test alone was wrong as often as right — retry-count expected three
    calls of a function that fails once)."""
    chosen = majority(kept)
    return chosen is not None and (
        sum(1 for s, _ in kept if expectations(s) == expectations(chosen[0])) > 1
    )
