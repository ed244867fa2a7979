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
   and nothing else. Each answer is put in the statement's place (its margin as it was)
   and read as a rewrite of the whole function would be (:mod:`candidates`: the votes,
   the unchanged dropped). An answer that writes the whole function anyway is read as
   one.
"""

from __future__ import annotations

import ast
import difflib
import re
import textwrap

from app.fixers.llm.answers import code_blocks, definitions, parse

_COMMENT = re.compile(r"\s+#[^'\"]*$")
SAME_LINE = 0.8  # how alike (difflib's ratio) a quoted line must be to the one it names


def pointed(answer: str, function: str) -> tuple[int, int] | None:
    """The lines (first, last; 1-based, of ``function``) of the statement the answer
    quotes a line of (of a line written twice, the first), or None when it quotes none
    of the function's lines."""
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
    a compound one (``if``, ``for``, ``def`` ...) by its header only; a clause's own
    line (``else:``, ``except X:``, a decorator) alone. None for a line outside the
    function or a function that does not parse."""
    tree = parse(function)
    if tree is None or not 1 <= number <= len(function.splitlines()):
        return None
    found: tuple[int, int] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.stmt, ast.excepthandler)):
            continue
        first, last = node.lineno, node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            last = max(first, _header_end(node, body[0]))
        if first <= number <= last and (found is None or last - first <= found[1] - found[0]):
            found = (first, last)
    return found or (number, number)


def _header_end(node: ast.AST, first_inner: ast.stmt) -> int:
    """The last line of a compound statement's header: before its body (and before the
    body's decorators), never before the header's own first line."""
    start = first_inner.lineno
    decorators = getattr(first_inner, "decorator_list", [])
    if decorators:
        start = min(start, *(d.lineno for d in decorators))
    line = getattr(node, "lineno", start)
    return start - 1 if start > line else line


def _margin(lines: list[str]) -> str:
    """The leading whitespace all of ``lines`` that are not blank share."""
    margins = [line[: len(line) - len(line.lstrip())] for line in lines if line.strip()]
    shared = min(margins, key=len) if margins else ""
    while any(not m.startswith(shared) for m in margins):
        shared = shared[:-1]
    return shared


def lines_of(function: str, span: tuple[int, int]) -> str:
    """The statement's lines without the margin they share: what the model is asked to
    write again (a string's lines at the left edge keep every line where it is)."""
    first, last = span
    lines = function.splitlines()[first - 1 : last]
    margin = _margin(lines)
    return "\n".join(line.removeprefix(margin) for line in lines)


def with_lines(function: str, span: tuple[int, int], answer: str, name: str) -> str | None:
    """The function with the answer's lines in the statement's place, their margin put
    back as :func:`lines_of` took it off, as one fenced block (as a whole rewrite would
    come); a header written again with a body of its own takes the place of the old
    header and its body. The answer itself when it writes the function whole; None when
    it holds no code. Of several blocks, the last counts (models correct themselves)."""
    written = next((b for b in reversed(code_blocks(answer)) if b.strip()), "")
    if not written:
        return None
    if definitions(answer, name).function is not None:
        return answer
    lines = function.splitlines()
    first, last = span
    margin = _margin(lines[first - 1 : last])
    new = written.split("\n")
    own = _margin(new)
    new = [margin + line.removeprefix(own) if line.strip() else "" for line in new]
    last = max(last, _replaced_body(function, first, "\n".join(new)))
    return "```python\n" + "\n".join([*lines[: first - 1], *new, *lines[last:]]) + "\n```"


def _replaced_body(function: str, first: int, written: str) -> int:
    """Where a compound statement at line ``first`` ends, when ``written`` is one with a
    body of its own (its header and body, or all its clauses), else 0."""
    answer, tree = parse(textwrap.dedent(written)), parse(function)
    if answer is None or not answer.body or tree is None:
        return 0
    inner = getattr(answer.body[0], "body", None)
    if not isinstance(inner, list) or not inner:
        return 0
    node = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n.lineno == first and
         isinstance(getattr(n, "body", None), list)),
        None,
    )  # fmt: skip
    if node is None:
        return 0
    clauses = any(getattr(answer.body[0], k, None) for k in ("orelse", "handlers", "finalbody"))
    whole = node.end_lineno or node.lineno
    body: list[ast.stmt] = getattr(node, "body", [])
    return whole if clauses or not body else (body[-1].end_lineno or whole)


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
