"""A long docstring shown as its first line, and put back whole in the answer.

Real code documents itself at length: a function of 74 lines may have 39 of docstring.
A small model asked for the whole corrected function writes every line of it back, at a
few tokens a second on a small CPU, before the one line that matters, and every answer
and every call costs that again.

So where a function's docstring runs past :data:`DOC_LINES` lines, the prompts show it
as its first sentence line and `` ...`` (:func:`short_lines`), and the answer gets the
original docstring back, in place of whatever it wrote there or where it wrote none
(:func:`restored`): the change a pull request proposes is to the code, and the
documentation stays as its authors wrote it. A docstring that shares a line with
other code is shown as it is; an answer that cannot take the docstring back (its body
on the ``def`` line) is no change, else the pull request would shorten the docstring.
"""

from __future__ import annotations

import ast
import textwrap

from app.fixers.llm.answers import parse
from app.fixers.llm.repair.splice import first_function

DOC_LINES = 4  # a docstring this long or shorter is shown whole
MORE = "..."


def _function(source: str) -> tuple[list[str], ast.FunctionDef | ast.AsyncFunctionDef] | None:
    node = first_function(source)
    return (textwrap.dedent(source).splitlines(), node) if node is not None else None


def _docstring(node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Expr | None:
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first
    return None


def _place(source: str) -> tuple[list[str], int, int, int] | None:
    """The function's lines (dedented) and its docstring's first and last lines
    (1-based) and column, when it is on lines of its own; else None."""
    found = _function(source)
    if found is None:
        return None
    lines, node = found
    doc = _docstring(node)
    if doc is None or doc.end_lineno is None or doc.lineno == node.lineno:
        return None
    rest = node.body[1].lineno if len(node.body) > 1 else None
    if lines[doc.lineno - 1][: doc.col_offset].strip() or rest == doc.end_lineno:
        return None
    return lines, doc.lineno, doc.end_lineno, doc.col_offset


def span(source: str) -> tuple[int, int] | None:
    """The first and last lines (1-based, in ``source``: one function) of its docstring
    when it is longer than :data:`DOC_LINES` and on lines of its own; else None."""
    place = _place(source)
    if place is None or place[2] - place[1] + 1 <= DOC_LINES:
        return None
    return place[1], place[2]


def short_lines(lines: list[str], where: tuple[int, int] | None, first: int = 1) -> list[str]:
    """``lines`` (a function's, its first at line ``first``) with the docstring at
    ``where`` (:func:`span`, in the same numbering) shown as one line: its first words
    and `` ...``."""
    if where is None:
        return lines
    a, b = where[0] - first, where[1] - first
    if not 0 <= a <= b < len(lines):
        return lines
    text = "\n".join(lines[a : b + 1])
    indent = lines[a][: len(lines[a]) - len(lines[a].lstrip())]
    opening = lines[a].lstrip().lstrip("rRuUbB")
    quote = next((q for q in ('"""', "'''") if opening.startswith(q)), '"""')
    words = next((ln.strip() for ln in _body_of(text, quote).splitlines() if ln.strip()), "")
    words = words.replace(quote, "").replace("\\", "")
    return [*lines[:a], f"{indent}{quote}{words} {MORE}{quote}", *lines[b + 1 :]]


def _body_of(text: str, quote: str) -> str:
    start = text.find(quote)
    end = text.rfind(quote)
    return text[start + len(quote) : end] if 0 <= start < end else text


def restored(answer: str, original: str) -> str | None:
    """The answer's function (dedented source) with the original's long docstring in
    place of its own, or put in where it has none, word for word (its lines as the
    original has them: a line of spaces inside it stays one). The answer as it is when
    the original's docstring was shown whole or the answer is no function; None when
    the docstring was shown shortened and cannot go back (a body on the ``def`` line, a
    docstring sharing its line with code): such an answer would publish the shortened
    docstring."""
    theirs = _place(original)
    if theirs is None or theirs[2] - theirs[1] + 1 <= DOC_LINES:
        return answer  # shown whole (see :func:`span`)
    found = _function(answer)
    if found is None:
        return answer
    lines, node = found
    head = node.body[0]
    if head.lineno == node.lineno:
        return None  # `def f(): return x`: no line of its own to put it on
    o_lines, (_, a, b, column) = original.splitlines(), theirs
    # The first line at the answer's indent, the rest as they were: inside the string.
    if _docstring(node) is not None:
        mine = _place(answer)
        if mine is None:
            return None  # `"""doc"""; x = 1`: not on lines of its own
        first, last, at = mine[1], mine[2], lines[mine[1] - 1][: mine[3]]
    else:  # above the first statement, and above its decorators
        first = min([head.lineno, *(d.lineno for d in getattr(head, "decorator_list", []))])
        last, at = first - 1, lines[head.lineno - 1][: head.col_offset]
    put = [at + o_lines[a - 1][column:], *o_lines[a:b]]
    result = "\n".join([*lines[: first - 1], *put, *lines[last:]]) + "\n"
    return result if parse(result) is not None else None
