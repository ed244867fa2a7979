"""Markdown as GitHub shows it on issues and pull requests, for LocalForge's view.

CommonMark with tables, and what GitHub adds that a reader of Patchwarden's bodies
notices: a few HTML tags work (``<details>`` folds, ``<summary>``, ``<sub>``, ``<kbd>``
…), HTML comments are hidden, ``#12``, commit shas and ``@user`` become links when they
name something, and ``- [ ]`` / ``- [x]`` items are task boxes. Every other tag is
shown as the text that was written (GitHub strips it; a test double that shows it
hides nothing from the person debugging), and no attribute but a few harmless ones
survives. Links go through markdown-it's own check (no ``javascript:``); a raw
``<a href>`` must be http(s), a path or a fragment.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

# Tags GitHub keeps in user content (a subset of its sanitizer's allow-list), and the
# attributes kept on them.
ALLOWED = frozenset({
    "a", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "ins", "kbd", "li", "ol", "p", "pre", "q",
    "s", "samp", "strike", "strong", "sub", "summary", "sup", "table", "tbody", "td",
    "tfoot", "th", "thead", "tr", "tt", "ul", "var",
})  # fmt: skip
_VOID = frozenset({"br", "hr"})
_ATTRIBUTES = {"a": {"href", "title"}, "details": {"open"}, "td": {"align"}, "th": {"align"}}
_HREF = re.compile(r"(https?://|/|#)[^\s\"'<>]*", re.I)

_ISSUE = r"(?<![\w/&#])#(?P<issue>[0-9]{1,9})\b"
_USER = r"(?<![\w@/.`])@(?P<user>[A-Za-z0-9](?:-?[A-Za-z0-9]){0,38}(?:\[bot\])?)"
_SHA = r"(?<![\w/@.-])(?P<sha>[0-9a-f]{7,40})\b(?![\w/-]|\.\w)"  # a sentence's full stop ends it
_REFERENCE = re.compile(f"{_ISSUE}|{_USER}|{_SHA}")
_TASK = re.compile(r"\[([ xX])\] ")


@dataclass(frozen=True)
class Links:
    """Where a reference points, or None when it names nothing (it stays text)."""

    issue: Callable[[int], str | None]
    commit: Callable[[str], str | None]
    user: Callable[[str], str | None]


NO_LINKS = Links(lambda n: None, lambda sha: None, lambda login: None)


def render(text: str | None, links: Links = NO_LINKS) -> str:
    """``text`` as GitHub would render it, as safe HTML; empty for no text."""
    return _MD.render(text, {"links": links, "in_link": 0}) if text else ""


# ---- raw HTML -------------------------------------------------------------------------


class _Clean(HTMLParser):
    """Allowed tags re-written with only their safe attributes; the rest as text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED:
            self.out.append(html.escape(self.get_starttag_text() or ""))
            return
        kept = []
        for name, value in attrs:
            if name not in _ATTRIBUTES.get(tag, ()):
                continue
            if name == "href" and not _HREF.fullmatch(value or ""):
                continue
            kept.append(f' {name}="{html.escape(value or "")}"' if value else f" {name}")
        self.out.append(f"<{tag}{''.join(kept)}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            self.out.append(f"<{tag}>")
        else:
            self.out.append(html.escape(self.get_starttag_text() or ""))

    def handle_endtag(self, tag: str) -> None:
        if tag not in ALLOWED:
            self.out.append(html.escape(f"</{tag}>"))
        elif tag not in _VOID:
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        self.out.append(html.escape(data))

    def handle_comment(self, data: str) -> None:
        pass  # GitHub hides HTML comments (Patchwarden's job markers among them)

    def unknown_decl(self, data: str) -> None:
        self.out.append(html.escape(f"<![{data}]>"))


def clean_html(raw: str) -> str:
    """A raw HTML fragment from Markdown, reduced to what GitHub would let through."""
    cleaner = _Clean()
    cleaner.feed(raw)
    cleaner.close()
    return "".join(cleaner.out)


# ---- references and task lists ----------------------------------------------------------


def _linked(text: str, links: Links) -> str:
    out, last = [], 0
    for m in _REFERENCE.finditer(text):
        if m["issue"]:
            href = links.issue(int(m["issue"]))
        elif m["user"]:
            href = links.user(m["user"])
        else:
            href = links.commit(m["sha"]) if re.search("[a-f]", m["sha"]) else None
        if href is None:
            continue
        shown = m[0] if not m["sha"] else m["sha"][:7]
        out += [html.escape(text[last : m.start()]), f'<a href="{html.escape(href)}">']
        out += [f"{'<code>' if m['sha'] else ''}{html.escape(shown)}"]
        out += [f"{'</code>' if m['sha'] else ''}</a>"]
        last = m.end()
    return "".join([*out, html.escape(text[last:])])


def _tasks(state: Any) -> None:
    """``- [ ] x`` and ``- [x] x`` items: the marker becomes a task box (core rule)."""
    tokens: list[Token] = state.tokens
    for i, token in enumerate(tokens[:-2]):
        inline = tokens[i + 2]
        if token.type != "list_item_open" or inline.type != "inline" or not inline.children:
            continue
        first = inline.children[0]
        if first.type == "text" and (m := _TASK.match(first.content)):
            first.content = first.content[m.end() :]
            first.meta["task"] = m[1] != " "
            token.attrSet("class", "task-list-item")


def _text(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    box = ""
    if "task" in token.meta:
        box = f'<input type="checkbox" disabled{" checked" if token.meta["task"] else ""}> '
    if env.get("in_link"):
        return box + html.escape(token.content)
    return box + _linked(token.content, env.get("links", NO_LINKS))


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    env["in_link"] = env.get("in_link", 0) + 1
    return str(self.renderToken(tokens, idx, options, env))


def _link_close(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    env["in_link"] = max(0, env.get("in_link", 0) - 1)
    return str(self.renderToken(tokens, idx, options, env))


def _raw(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return clean_html(tokens[idx].content)


_MD = MarkdownIt("commonmark", {"html": True}).enable("table")
_MD.core.ruler.push("task_lists", _tasks)
for _rule, _fn in {
    "text": _text,
    "link_open": _link_open,
    "link_close": _link_close,
    "html_block": _raw,
    "html_inline": _raw,
}.items():
    _MD.add_render_rule(_rule, _fn)
