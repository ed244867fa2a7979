"""A rewritten function's dropped guard clauses, put back.

A small model asked for the whole corrected function often writes the fix and leaves
out a check at the top it did not think about: an answer ``return base.rstrip('/') +
'/' + path.lstrip('/')`` can be the fix and still, without the function's ``if not
path: return base``, break the test of an empty path and be thrown away, while few
answers hold that fix at all. When an answer breaks a test that passed before and
dropped one of the leading ``if ...: return``/``raise`` clauses of the code as it is,
the same answer with those clauses put back, word for word, is worth one more test
run: it changes less than the answer did, and it is judged like any other change.

A clause counts as dropped only when no condition of the answer reads a variable it
read (``if path:`` keeps ``if not path:``, and ``if len(xs) < 0`` keeps ``if len(xs)
<= 0``: an edited clause is the answer's fix, never undone); only the clauses before
the first one the answer kept are put back, at the top, so each runs where it ran
before. A change put back is judged by the repository's tests and the reproduction
alone: never by the weaker judges of a change that missed (no model wrote it).
"""

from __future__ import annotations

import ast
import builtins
import itertools
import textwrap
from collections import Counter

from app.fixers.llm.answers import parse
from app.fixers.llm.localize import Index
from app.fixers.llm.repair.candidates import Candidate, candidates_of
from app.fixers.llm.repair.splice import Target, unit_sources


def _function(source: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    tree = parse(textwrap.dedent(source))
    found = (
        [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        if tree
        else []
    )
    return found[0] if len(found) == 1 else None


def _first(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The index in the body of the first statement after the docstring."""
    return 0 if ast.get_docstring(fn, clean=False) is None else 1


def _leading_guards(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.If]:
    guards = []
    for st in fn.body[_first(fn) :]:
        if not (isinstance(st, ast.If) and not st.orelse):
            break
        if not isinstance(st.body[-1], ast.Return | ast.Raise):
            break
        guards.append(st)
    return guards


def _names(test: ast.AST) -> set[str]:
    """The variables a condition reads (builtins such as ``len`` aside)."""
    return {n.id for n in ast.walk(test) if isinstance(n, ast.Name) and not hasattr(builtins, n.id)}


def _kept(guard: ast.If, conditions: list[ast.expr]) -> bool:
    """Whether some condition of the answer tests what ``guard`` tested: the same
    variables (``if len(xs) < 0`` keeps ``if len(xs) <= 0``, rewritten: putting the old
    one back would undo the fix), or the same test when it reads none."""
    names = _names(guard.test)
    if names:
        return any(names & _names(c) for c in conditions)
    return any(ast.dump(c) == ast.dump(guard.test) for c in conditions)


def guards_put_back(original: str, answer: str) -> tuple[str, list[str]] | None:
    """``answer`` (a whole function) with the leading guard clauses of ``original`` it
    dropped put back after its docstring, in the answer's indentation; and each clause's
    condition. None when it dropped none (or the result would not compile)."""
    old, new = _function(original), _function(answer)
    if old is None or new is None or _first(new) >= len(new.body):
        return None
    conditions = [
        n.test for n in ast.walk(new) if isinstance(n, ast.If | ast.IfExp | ast.While | ast.Assert)
    ]
    # Only those before any it kept: they ran first in the code, and still do.
    dropped = list(itertools.takewhile(lambda g: not _kept(g, conditions), _leading_guards(old)))
    at = new.body[_first(new)]
    if not dropped or at.lineno == new.lineno:  # nothing dropped; `def f(x): return x`
        return None
    old_lines = textwrap.dedent(original).splitlines()
    new_lines = textwrap.dedent(answer).splitlines()
    top = min([at.lineno, *(d.lineno for d in getattr(at, "decorator_list", []))])
    indent = new_lines[top - 1][: at.col_offset]  # the answer's own (tabs stay tabs)
    clauses = [
        textwrap.indent(textwrap.dedent("\n".join(old_lines[g.lineno - 1 : g.end_lineno])), indent)
        for g in dropped
    ]
    lines = [*new_lines[: top - 1], *"\n".join(clauses).splitlines(), *new_lines[top - 1 :]]
    result = "\n".join(lines) + "\n"
    try:  # `await` in a clause of an async original, a `global` below it: no test run
        compile(result, "<answer>", "exec")
    except (SyntaxError, ValueError):
        return None
    return result, [f"if {ast.unparse(g.test)}:" for g in dropped]


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
