"""The changes a round's answers write to a JavaScript or TypeScript function: the
function found in each answer by its name and form (:func:`function_in`), answers
grouped by their tokens (the votes, :func:`changes_of`), and the winner spliced into
its file by byte range (:func:`splice`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tree_sitter import Node

from app.fixers.llm.answers import code_blocks
from app.fixers.llm.js_index import JsIndex, Span, symbols_of
from app.fixers.llm.localize import Symbol
from app.policy.js_syntax import parse


@dataclass
class Change:
    """A distinct change the answers write: the function's new text and its votes."""

    text: str
    votes: int = 1


def changes_of(js: JsIndex, symbol: Symbol, answers: Sequence[str], dropped: Any) -> list[Change]:
    """The distinct changes the answers write to ``symbol`` (votes counted by tokens);
    why each other answer was dropped is counted in ``dropped``."""
    span = js.spans[symbol]
    old = js.text(symbol)
    original = _tokens(symbol.path, old, span)
    found: dict[str, Change] = {}
    for answer in answers:
        text, problem = function_in(answer, symbol, span, old)
        if text is None:
            dropped[problem] += 1
            continue
        key = _tokens(symbol.path, text, span)
        if key == original:
            dropped["unchanged"] += 1
        elif key in found:
            found[key].votes += 1
        else:
            found[key] = Change(text)
    return list(found.values())


_DECLARATIONS = {"function_declaration", "generator_function_declaration"}
_WRAPS = {
    "statement": ("", ""),
    "class": ("class PatchwardenWrap {\n", "\n}"),
    "object": ("PatchwardenWrap = {\n", "\n};"),
}


def function_in(
    answer: str, symbol: Symbol, span: Span, original: str = ""
) -> tuple[str | None, str]:
    """The function ``symbol`` as an answer writes it, its text only (what else the
    answer wrote, such as the rest of its class, is left out), or None and why:
    "unparseable", "renamed" (no function of that name and form: ``exports.f = …``
    must assign to ``exports.f`` again) or "empty". A declaration written for a method
    (``function f() {}``) is that method, with the ``original``'s modifiers."""
    blocks = code_blocks(answer)
    if not blocks:
        return None, "empty"
    parsed = False
    for block in blocks:
        # As asked (a method alone), or whole (the method inside its class).
        for head, tail in dict.fromkeys([_WRAPS[span.wrap], ("", "")]):
            data = (head + block + tail).encode()
            if parse(symbol.path, data).root_node.has_error:
                continue
            parsed = True
            for found, where in symbols_of(symbol.path, data):
                if found.name != symbol.name:
                    continue
                text = data[where.start : where.end].decode()
                if span.fits(where):
                    return text, ""
                if span.form == "method_definition" and where.form in _DECLARATIONS:
                    return _as_method(text, original), ""
    return None, "renamed" if parsed else "unparseable"


def _as_method(declaration: str, original: str) -> str:
    """``async function* f(x) {…}`` as the method ``async *f(x) {…}``, with the
    original method's own modifiers (``static``, ``get``, ``set``) kept."""
    m = re.match(r"(async\s+)?function\s*(\*?)\s*", declaration)
    if m is None:
        return declaration
    kept = re.match(r"(?:(?:static|get|set)\s+)*", original)
    head = kept.group(0) if kept else ""
    return f"{head}{'async ' if m.group(1) else ''}{m.group(2)}{declaration[m.end() :]}"


def splice(source: str, span: Span, text: str, path: str = "a.js") -> str:
    """``source`` with the bytes of ``span`` replaced by ``text``, its lines after the
    first indented as the old text's first line was (but lines inside a template
    literal, whose spaces are its value), in the file's own line endings."""
    data = source.encode()
    line_start = data.rfind(b"\n", 0, span.start) + 1
    indent = re.match(rb"[ \t]*", data[line_start : span.start])
    margin = indent.group(0).decode() if indent else ""
    text = text.replace("\r\n", "\n")
    frozen = _template_lines(text, path, span)
    lines = dedent_js(text, frozen).split("\n")
    shown = "\n".join(
        [
            lines[0],
            *(
                line if i in frozen else (margin + line if line.strip() else "")
                for i, line in enumerate(lines[1:], start=1)
            ),
        ]
    )
    if b"\r\n" in data[span.start : span.end] or data.count(b"\r\n") * 2 > data.count(b"\n"):
        shown = shown.replace("\n", "\r\n")
    return (data[: span.start] + shown.encode() + data[span.end :]).decode()


def _template_lines(text: str, path: str, span: Span) -> set[int]:
    """The lines of ``text`` (0-based) that begin inside a template literal: their
    leading spaces belong to the string."""
    head, tail = _WRAPS[span.wrap]
    offset = head.count("\n")
    root = parse(path, (head + text + tail).encode()).root_node
    frozen: set[int] = set()
    stack: list[Node] = [root]
    while stack:
        node = stack.pop()
        if node.type == "template_string":
            first, last = node.start_point[0] - offset, node.end_point[0] - offset
            frozen.update(range(first + 1, last + 1))
            continue
        stack.extend(node.children)
    return frozen


def _tokens(path: str, text: str, span: Span) -> str:
    """The text's tokens, comments, layout and semicolons left out: two answers that
    differ only there are one change."""
    head, tail = _WRAPS[span.wrap]
    root = parse(path, (head + text + tail).encode()).root_node
    out: list[str] = []
    stack: list[Node] = [root]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            continue
        if node.child_count == 0 and node.type != ";":  # `;` or none (ASI): the same
            out.append(node.text.decode("utf-8", "replace") if node.text else "")
        stack.extend(reversed(node.children))
    return " ".join(out)


def dedent_js(text: str, frozen: set[int] | frozenset[int] = frozenset()) -> str:
    """Lines after the first dedented by their common margin (the first starts where
    the function did, its margin left on the line before); ``frozen`` lines (inside a
    template literal) neither count nor move."""
    lines = text.split("\n")
    rest = [line for i, line in enumerate(lines[1:], start=1) if line.strip() and i not in frozen]
    margin = min((len(line) - len(line.lstrip()) for line in rest), default=0)
    return "\n".join(
        [lines[0], *(line if i in frozen else line[margin:] for i, line in enumerate(lines[1:], 1))]
    )
