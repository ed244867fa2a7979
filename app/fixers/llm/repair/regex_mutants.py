"""One token of a regular expression's pattern changed: the classic mutations of a
regex (a quantifier made another, one member left out of a character class), for the
mechanical round (:mod:`app.fixers.llm.repair.mutators`). The patterns are the string
literals a ``re`` function takes; the change is made in the literal's own text."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from app.fixers.llm.repair.spans import Edit, Source, code_nodes

_RE_FUNCTIONS = {
    "compile",
    "search",
    "match",
    "fullmatch",
    "sub",
    "subn",
    "split",
    "findall",
    "finditer",
}


def _patterns(src: Source) -> Iterator[ast.Constant]:
    """The string literals a ``re`` function takes as its pattern: its first argument,
    or the left side of a ``%`` that formats it."""
    for node in code_nodes(src):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _RE_FUNCTIONS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "re"
            and node.args
        ):
            continue
        first = node.args[0]
        if isinstance(first, ast.BinOp) and isinstance(first.op, ast.Mod):
            first = first.left
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            yield first


def regex_changes(written: str) -> Iterator[tuple[str, str]]:
    """(new literal, what changed) for each one-token change of a pattern's literal text,
    the classic mutations of a regular expression: a quantifier made another (``?`` as
    ``*``, ``*`` as ``+``, ``+`` as ``*``) and one member (a character, an escape, a
    range) left out of a character class that has more than one. An escape is one
    token; a lazy mark, the ``?`` of ``(?`` and a class's ``^`` are not quantifiers."""
    i = 0
    while i < len(written):
        c = written[i]
        if c == "\\":
            i += 2
        elif c == "[":
            end, members = _class_members(written, i)
            for a, b in members if len(members) > 1 else []:
                what = f"`{written[a:b]}` left out of `{written[i : end + 1]}`"
                yield written[:a] + written[b:], what
            i = end + 1
        else:
            if c in _OTHER_QUANTIFIER and i > 0 and written[i - 1] not in "(|?*+}":
                other = _OTHER_QUANTIFIER[c]
                what = f"`{c}` became `{other}` after `{written[max(0, i - 12) : i]}`"
                yield written[:i] + other + written[i + 1 :], what
            i += 1


_OTHER_QUANTIFIER = {"?": "*", "*": "+", "+": "*"}


def _class_members(written: str, start: int) -> tuple[int, list[tuple[int, int]]]:
    """Where the class opened at ``start`` closes, and its members' (start, end)."""
    i = start + 1 + (written[start + 1 : start + 2] == "^")
    members: list[tuple[int, int]] = []
    first = i
    while i < len(written) and (written[i] != "]" or i == first):
        width = 2 if written[i] == "\\" else 1
        if written[i + width : i + width + 1] == "-" and written[
            i + width + 1 : i + width + 2
        ] not in ("", "]"):
            width += 2 if written[i + width + 1] != "\\" else 3
        members.append((i, i + width))
        i += width
    return i, members


def regex_tokens(src: Source) -> Iterator[Edit]:
    """One token of a regular expression's pattern changed (:func:`regex_changes`)."""
    for node in _patterns(src):
        for new, what in regex_changes(src.text(node)):
            yield Edit(node, new, what)
