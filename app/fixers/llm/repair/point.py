"""A second look at a function whose rewrites all missed: the model points at the line
that is wrong, then writes only those lines again.

Asked for a whole function, a small model mostly writes it back as it was. Asked two
narrow questions, it has to commit to a place and to a change (as Agentless localises to
lines before it edits, and as infilling repairs a hole):

1. **Point** (one greedy answer): the function's one wrong line, copied. The copy is
   found among the function's lines (as written, else the closest, at least
   :data:`SAME_LINE` alike) and widened to its whole statement (a call over five lines,
   or only the header of an ``if``).
2. **Write those lines**: the statement, shown apart, is asked for again, corrected,
   and nothing else. Each answer is put in the statement's place (indented as it was)
   and read as a rewrite of the whole function would be (:mod:`candidates`: the votes,
   the unchanged dropped). An answer that writes the whole function anyway is read as
   one.
"""

from __future__ import annotations

import ast
import difflib
import re
import textwrap

from app.fixers.llm.answers import code_blocks, definitions

_COMMENT = re.compile(r"\s+#[^'\"]*$")
SAME_LINE = 0.8  # how alike (difflib's ratio) a quoted line must be to the one it names


def pointed(answer: str, function: str) -> tuple[int, int] | None:
    """The lines (first, last; 1-based, of ``function``) of the statement the answer
    quotes a line of, or None when it quotes none of the function's lines."""
    lines = function.splitlines()
    quoted = next((q.strip() for b in code_blocks(answer) for q in b.splitlines() if q.strip()), "")
    if not quoted:
        return None
    stripped = [line.strip() for line in lines]
    bare = _COMMENT.sub("", quoted)  # the quote annotated: `x = 1  # wrong`
    if quoted in stripped or bare in stripped:
        number = stripped.index(quoted if quoted in stripped else bare) + 1
    else:
        close = difflib.get_close_matches(quoted, stripped, n=1, cutoff=SAME_LINE)
        if not close or not close[0]:
            return None
        number = stripped.index(close[0]) + 1
    return statement_at(function, number)


def statement_at(function: str, number: int) -> tuple[int, int] | None:
    """The innermost statement of ``function`` on line ``number``: a simple one whole,
    a compound one (``if``, ``for``, ``def`` ...) by its header only."""
    try:
        tree = ast.parse(function)
    except SyntaxError:
        return None
    found: tuple[int, int] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        first, last = node.lineno, node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            last = max(first, _header_end(node, body[0]))
        if first <= number <= last and (found is None or last - first <= found[1] - found[0]):
            found = (first, last)
    return found


def _header_end(node: ast.stmt, first_inner: ast.stmt) -> int:
    """The last line of a compound statement's header: before its body (and before the
    body's decorators), never before the header's own first line."""
    start = first_inner.lineno
    decorators = getattr(first_inner, "decorator_list", [])
    if decorators:
        start = min(start, *(d.lineno for d in decorators))
    return start - 1 if start > node.lineno else node.lineno


def lines_of(function: str, span: tuple[int, int]) -> str:
    """The statement's lines, dedented: what the model is asked to write again."""
    first, last = span
    return textwrap.dedent("\n".join(function.splitlines()[first - 1 : last]))


def with_lines(function: str, span: tuple[int, int], answer: str, name: str) -> str | None:
    """The function with the answer's lines in the statement's place, indented as it
    was, as one fenced block (as a whole rewrite would come); the answer itself when it
    writes the function whole; None when it holds no code."""
    written = next((b for b in code_blocks(answer) if b.strip()), "")
    if not written:
        return None
    if definitions(answer, name).function is not None:
        return answer
    lines = function.splitlines()
    first, last = span
    indent = lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip())]
    new = [indent + line if line.strip() else "" for line in textwrap.dedent(written).split("\n")]
    return "```python\n" + "\n".join([*lines[: first - 1], *new, *lines[last:]]) + "\n```"


def point_ask(name: str) -> str:
    return (
        f"Which line of `{name}` is wrong? Copy that one line exactly as it is written "
        "above, in one ```python block, nothing else."
    )


def lines_ask(name: str, lines: str) -> str:
    return (
        f"These lines of `{name}` are wrong:\n```python\n{lines}\n```\n"
        "Write them corrected: only those lines, in one ```python block, nothing else."
    )
