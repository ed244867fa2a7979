"""A rewritten function's dropped guard clauses, put back.

A small model asked for the whole corrected function often writes the fix and leaves
out a check at the top it did not think about: url-join's answer ``return
base.rstrip('/') + '/' + path.lstrip('/')`` was the fix, but without the function's
``if not path: return base`` it broke the test of an empty path, and was thrown away
(1 answer in 18 held that fix). When an answer breaks a test that passed before and
dropped one of the leading ``if ...: return``/``raise`` clauses of the code as it is,
the same answer with those clauses put back, word for word, is worth one more test
run: it changes less than the answer did, and it is judged like any other change.

A clause counts as dropped only when no condition of the answer tests what it tested
(either way round: ``if path:`` keeps ``if not path:``); only the clauses before the
first one the answer kept are put back, at the top, so each runs where it ran before.
"""

from __future__ import annotations

import ast
import itertools
import textwrap
from collections import Counter

from app.fixers.llm.candidates import Candidate, candidates_of
from app.fixers.llm.localize import Index
from app.fixers.llm.splice import Target, unit_sources


def _function(source: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return None
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return found[0] if len(found) == 1 else None


def _first(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The index in the body of the first statement after the docstring."""
    body = fn.body
    doc = body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    return 1 if doc and isinstance(body[0].value.value, str) else 0  # type: ignore[attr-defined]


def _leading_guards(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.If]:
    guards = []
    for st in fn.body[_first(fn) :]:
        if not (isinstance(st, ast.If) and not st.orelse):
            break
        if not isinstance(st.body[-1], ast.Return | ast.Raise):
            break
        guards.append(st)
    return guards


def _core(test: ast.expr) -> str:
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return ast.dump(test)


def guards_put_back(original: str, answer: str) -> tuple[str, list[str]] | None:
    """``answer`` (a whole function) with the leading guard clauses of ``original`` it
    dropped put back after its docstring, in the answer's indentation; and the first
    line of each clause put back. None when it dropped none (or either does not
    parse)."""
    old, new = _function(original), _function(answer)
    if old is None or new is None or not new.body:
        return None
    tested = {
        _core(n.test)
        for n in ast.walk(new)
        if isinstance(n, ast.If | ast.IfExp | ast.While | ast.Assert)
    }
    # Only those before any it kept: they ran first in the code, and still do.
    dropped = list(itertools.takewhile(lambda g: _core(g.test) not in tested, _leading_guards(old)))
    if not dropped:
        return None
    old_lines = textwrap.dedent(original).splitlines()
    new_lines = textwrap.dedent(answer).splitlines()
    at = new.body[_first(new)] if _first(new) < len(new.body) else None
    if at is None:  # only a docstring: nothing to guard
        return None
    indent = " " * at.col_offset
    clauses: list[str] = []
    for guard in dropped:
        text = textwrap.dedent("\n".join(old_lines[guard.lineno - 1 : guard.end_lineno]))
        clauses.append(textwrap.indent(text, indent))
    # Decorators and comments above the first statement stay where they were.
    insert = at.lineno - 1
    lines = [*new_lines[:insert], *"\n".join(clauses).splitlines(), *new_lines[insert:]]
    result = "\n".join(lines) + "\n"
    if _function(result) is None:
        return None
    heads = [old_lines[g.lineno - 1].strip() for g in dropped]
    return result, heads


def restored(
    idx: Index, target: Target, parent: Candidate, demands: frozenset[str]
) -> Candidate | None:
    """``parent`` with the guard clauses it dropped put back (:func:`guards_put_back`),
    as a change of its own with the parent's votes; None when it dropped none."""
    original = unit_sources(idx.sources[target.symbol.path], target)[""]
    back = guards_put_back(original, parent.function)
    if back is None:
        return None
    function, heads = back
    answer = "```python\n" + "\n\n".join([*parent.constants.values(), function]) + "```\n"
    found = candidates_of(idx, target, [answer], "", Counter(), demands=demands)
    if len(found) != 1:
        return None
    found[0].votes, found[0].restored = parent.votes, tuple(heads)
    return found[0]
