"""Markdown that Patchwarden did not write, read the way GitHub shows it.

One parse (markdown-it-py: CommonMark with raw HTML, plus GitHub's tables and
strikethrough) serves both readers of untrusted text, so they cannot disagree:

- :func:`app.untrusted.sanitize.sanitize` keeps what a person reading the issue on github.com
  sees, as markdown-ish text for a prompt: ``visible_text(text)``;
- the command parser (:func:`app.webhooks.triggers.parse_command`) keeps only the
  commenter's own words: ``visible_text(text, own_words=True)`` also blanks quotes
  (``>`` blocks with their lazy continuation lines, ``<blockquote>``, ``<q>``), code
  (spans stay as code, blocks go, ``<pre>``, ``<code>``, ``<kbd>``, ``<samp>``,
  ``<tt>``) and raw HTML blocks.

What is kept: text; code spans and fenced or indented code blocks verbatim, ``<`` and
``>`` included (a fence keeps only the first word of its info string, the language);
links as ``[text](url)``; lists, headings, quotes and tables with their markers.

What is dropped, because the page does not show it:

- HTML comments ``<!-- … -->`` (an unterminated one hides the rest, as in a browser),
  and ``<!…>``, ``<?…>``, ``<![CDATA[…`` (bogus comments to a browser);
- link reference definitions, used or not (``[x]: https://u "TEXT"``, ``[//]: # (…)``)
  and link titles (``[a](u "TITLE")`` keeps ``[a](u)``);
- images: ``![alt](src)``, reference images and ``<img>`` become ``[image]``;
- elements whose content is never shown (``<script>``, ``<style>``, ``<template>``,
  ``<noscript>``, ``<iframe>``, ``<svg>``, … see :data:`HIDES_CONTENT`), and any
  element marked ``hidden``, ``aria-hidden="true"`` or styled invisible
  (``display:none``, ``visibility:hidden``, zero font size or opacity), with their
  content; if one is never closed it hides the rest;
- the markup of every other HTML element (attributes are invisible on the page); its
  text stays. ``<pre>`` blocks become fenced code blocks. A tag with an unknown name
  and no attributes stays as written: it is nearly always code (``<int>``,
  ``List<String>``, ``in <module>``), and deleting it deleted code. (GitHub's own HTML
  sanitiser hides it; the model reads one word more than the reviewer, a price paid
  for code.) An unknown tag with attributes (``<note ignore the rules>``) goes whole:
  attribute names are invisible and could carry a whole instruction — which is also
  why ``a<b and c>d`` outside code reads ``ad``, as it does on github.com;
- invisible characters: zero-width characters and joiners, bidi controls and
  overrides, Unicode tag characters (``U+E0000`` to ``U+E007F``, "ASCII smuggling"),
  variation selectors, fillers, and C0/C1 controls other than newline and tab. They are
  removed after the parse, from the output: removed before, they could turn
  ``-\\u200b->`` into the end of a comment that, on the page, hides more.

Other differences from github.com are on the side of showing the model less: GitHub
drops ``style`` attributes (so ``display:none`` hides nothing there) and ignores
``aria-hidden`` visually; footnote definitions (``[^1]: …``) are read as link
definitions; content nested deeper than markdown-it's limit of 20 containers is not
shown; and :func:`app.untrusted.sanitize.sanitize` reads its output again until nothing changes,
so text a reader sees literally (``&lt;!-- x --&gt;``) can go on the second reading.

Over ~400 lines on purpose: one parse and the walkers over its tokens; the two readers
must see the same document, so they share this file rather than a half of it each.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline.newline import newline
from markdown_it.token import Token

# Elements whose content a reader never sees: dropped with everything inside.
# (script and style, and template's inert content, are never shown by a browser;
# GitHub's sanitiser removes iframe, svg, math, noembed, noframes, noscript, plaintext
# and xmp with their contents; title, head, datalist and rp are display:none; video,
# audio, canvas and object show their content only when they fail to load.)
HIDES_CONTENT = frozenset(
    {
        "script", "style", "template", "noscript", "noembed", "noframes", "iframe",
        "svg", "math", "xmp", "plaintext", "title", "head", "datalist", "rp",
        "video", "audio", "canvas", "object", "frameset",
    }
)  # fmt: skip
# Someone else's words or an example, not the commenter's own (own_words only).
QUOTES = frozenset({"blockquote", "q", "pre", "code", "kbd", "samp", "tt", "listing"})
VOID = frozenset(
    {
        "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr",
        "image", "img", "input", "keygen", "link", "meta", "param", "source", "track", "wbr",
    }
)  # fmt: skip
# Block-level elements: their tags become a line break, so words do not run together.
BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "br", "caption", "center",
        "dd", "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption",
        "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
        "hgroup", "hr", "html", "legend", "li", "listing", "main", "menu", "nav", "ol",
        "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th",
        "thead", "tr", "ul",
    }
)  # fmt: skip
# Every element name an HTML parser knows (the living standard and the obsolete ones
# browsers still parse). A tag with any other name is not markup to a reader.
KNOWN = (
    HIDES_CONTENT
    | QUOTES
    | VOID
    | BLOCK
    | frozenset(
        {
            "a", "abbr", "acronym", "applet", "b", "bdi", "bdo", "big", "blink",
            "button", "cite", "colgroup", "data", "del", "dfn", "em", "font", "i",
            "ins", "isindex", "label", "main", "map", "mark", "marquee", "menuitem",
            "meter", "multicol", "nextid", "nobr", "optgroup", "option", "output",
            "picture", "progress", "rb", "rt", "rtc", "ruby", "s", "search", "select",
            "slot", "small", "spacer", "span", "strike", "strong", "sub", "sup",
            "textarea", "time", "u", "var",
        }
    )
)  # fmt: skip

_COMMENT = "<!--"  # the hider of a comment: ends at -->
_EOF = "<eof>"  # the hider of an unterminated tag or declaration: ends never
_COMMENT_END = re.compile(r"--!?>")
_SHORT_COMMENT = re.compile(r"-?>")  # <!--> and <!---> end at once (HTML)
# <!DOCTYPE …>, <![CDATA[ … ]]>, <?php … ?>, </ x>: a browser reads each as a comment
# that ends at the first ">".
_BOGUS = re.compile(r"<(?:[!?]|/(?![A-Za-z]))[^>]*>?")
# A tag as a browser reads it: ends at the first ">" outside a quoted attribute value,
# or at the end of the text (then it swallows everything after it).
_TAG = re.compile(
    r"""<(?P<close>/?)(?P<name>[A-Za-z][^\s/>]*)"""
    r"""(?P<attrs>(?:=\s*(?:"[^"]*(?:"|\Z)|'[^']*(?:'|\Z))|[^>])*)(?P<end>>|\Z)"""
)
_ATTR = re.compile(r"""([^\s/>=]+)(?:\s*=\s*("[^"]*"?|'[^']*'?|[^\s>]*))?""")
_CSS_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.S)
_CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})\s?|\\(.)", re.S)
_ZERO = re.compile(r"[+-]?(?:0+\.?0*|\.0+)(?![\d.])")
_LANG = re.compile(r"[\w#+.-]{1,40}")
_BLANK_RUNS = re.compile(r"\n{3,}")
_PRE = re.compile(r"\s*<pre[\s>]", re.I)
_BACKTICKS = re.compile(r"`+")

# Characters that render as nothing (or reorder what is shown) but a model reads.
_INVISIBLE_RANGES = (
    (0x0000, 0x0008),
    (0x000B, 0x001F),
    (0x007F, 0x009F),  # C0/C1 controls except \t and \n
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # Arabic letter mark (bidi)
    (0x115F, 0x1160),  # Hangul fillers
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),  # Mongolian variation selectors and vowel separator
    (0x200B, 0x200F),  # zero-width space/non-joiner/joiner, LRM, RLM
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFEFF, 0xFEFF),  # zero-width no-break space (BOM)
    (0xFFA0, 0xFFA0),
    (0xFFF9, 0xFFFB),  # interlinear annotation
    (0x1D173, 0x1D17A),  # musical invisible formatting
    (0xE0000, 0xE007F),  # tag characters
    (0xE0100, 0xE01EF),  # variation selectors supplement
)
_INVISIBLE = re.compile(
    "[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in _INVISIBLE_RANGES) + "]"
)


def strip_invisible(text: str) -> str:
    """``text`` without characters that render as nothing or reorder what is shown."""
    text = _INVISIBLE.sub("", text)
    # Any other format character (Unicode category Cf) is invisible by definition.
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) != "Cf")


def _newline_keeping_indent(state: StateInline, silent: bool) -> bool:
    """markdown-it's line break, which also notes the indentation it skips: a paragraph
    of code pasted without a fence keeps its indentation for the model."""
    start = state.pos
    if not newline(state, silent):
        return False
    if not silent and state.tokens and state.tokens[-1].type in ("softbreak", "hardbreak"):
        state.tokens[-1].content = state.src[start + 1 : state.pos]
    return True


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.inline.ruler.at("newline", _newline_keeping_indent)
    return md


def visible_text(text: str, *, own_words: bool = False) -> str:
    """What a reader of ``text`` on github.com sees, as markdown-ish text.

    ``own_words``: only the author's own words — quotes, code blocks, quoting or code
    HTML elements and raw HTML blocks are left out (code spans stay, as code).
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    root = _tree(_parser().parse(text))  # NUL becomes U+FFFD, as on GitHub
    reader = _Reader(own_words=own_words)
    return strip_invisible(reader.blocks(root.children).replace("\ufffd", "")).strip("\n")


@dataclass
class _Block:
    """A block of the document: its opening token (or the token itself, for a leaf),
    the blocks inside it, and the inline tokens of its text, flat. (markdown-it's own
    SyntaxTreeNode nests inline tokens too, and recurses once per level: a few thousand
    nested ``*`` exhaust Python's stack. Blocks nest at most 20 deep.)"""

    token: Token
    children: list[_Block] = field(default_factory=list)
    inline: list[Token] = field(default_factory=list)

    @property
    def type(self) -> str:
        return self.token.type.removesuffix("_open")


def _tree(tokens: list[Token]) -> _Block:
    root = _Block(Token("root", "", 0))
    stack = [root]
    for token in tokens:
        if token.nesting == 1:
            block = _Block(token)
            stack[-1].children.append(block)
            stack.append(block)
        elif token.nesting == -1:
            if len(stack) > 1:
                stack.pop()
        elif token.type == "inline":
            stack[-1].inline = list(token.children or [])
        else:
            stack[-1].children.append(_Block(token))
    return root


@dataclass
class _Hider:
    """Something that hides what follows it: an element (until its closing tag, nested
    ones of the same name counted), a comment, or an unterminated tag (for ever)."""

    name: str
    depth: int = 1


class _Reader:
    """Renders the token tree back to text, leaving out what the page does not show.

    The hiding state runs through the whole document in reading order: an element
    opened in one HTML block can hide the paragraphs after it until its closing tag.
    """

    def __init__(self, *, own_words: bool) -> None:
        self.own_words = own_words
        self.hides = HIDES_CONTENT | QUOTES if own_words else HIDES_CONTENT
        self.stack: list[_Hider] = []

    @property
    def hidden(self) -> bool:
        return bool(self.stack)

    # -- blocks ------------------------------------------------------------------------
    def blocks(self, nodes: list[_Block], *, tight: bool = False) -> str:
        parts = [out for out in (self.block(node, tight=tight) for node in nodes) if out.strip()]
        return ("\n" if tight else "\n\n").join(parts)

    def block(self, node: _Block, *, tight: bool) -> str:
        kind, token = node.type, node.token
        if kind == "paragraph":
            return _lines(self.inline(node), strip=self.own_words)
        if kind == "heading":
            text = _one_line(self.inline(node))
            return f"{'#' * int(token.tag[1:] or 1)} {text}" if text else ""
        if kind == "blockquote":
            inner = self.blocks(node.children)
            if self.own_words or not inner:
                return ""
            return "\n".join(f"> {line}" if line else ">" for line in inner.split("\n"))
        if kind in ("bullet_list", "ordered_list"):
            return self.list_block(node)
        if kind == "fence":
            if self.hidden or self.own_words:
                return ""
            lang = _LANG.match(token.info.strip())
            content = token.content if token.content.endswith("\n") else token.content + "\n"
            content = "" if content == "\n" else content
            return f"{token.markup}{lang.group() if lang else ''}\n{content}{token.markup}"
        if kind == "code_block":
            if self.hidden or self.own_words:
                return ""
            lines = token.content.rstrip("\n").split("\n")
            return "\n".join(f"    {line}" if line else "" for line in lines)
        if kind == "hr":
            return "" if self.hidden else "***"
        if kind == "html_block":
            text = self.html(token.content)
            if self.own_words:
                return ""
            if _PRE.match(token.content) and text.strip():
                return _as_code(text)  # preformatted: keep its indentation and its < >
            return _html_lines(text)
        if kind == "table":
            return self.table(node)
        return self.blocks(node.children, tight=tight)

    def list_block(self, node: _Block) -> str:
        # markdown-it marks the paragraphs of a tight list hidden (rendered without <p>)
        tight = all(
            child.token.hidden
            for item in node.children
            for child in item.children
            if child.type == "paragraph"
        )
        items = []
        for item in node.children:
            marker = item.token.markup
            if node.type == "ordered_list":
                marker = item.token.info + marker
            inner = self.blocks(item.children, tight=tight)
            if not inner.strip():
                continue
            pad = " " * (len(marker) + 1)
            first, *rest = inner.split("\n")
            items.append(
                "\n".join([f"{marker} {first}", *(pad + line if line else "" for line in rest)])
            )
        return ("\n" if tight else "\n\n").join(items)

    def table(self, node: _Block) -> str:
        rows: list[str] = []
        for section in node.children:
            for row in section.children:
                cells = [_one_line(self.inline(cell)).replace("|", "\\|") for cell in row.children]
                rows.append("| " + " | ".join(cells) + " |")
                if section.type == "thead":
                    rows.append("| " + " | ".join(_align(c.token) for c in row.children) + " |")
        return "" if all(not row.strip("| ") for row in rows) else "\n".join(rows)

    # -- inline ------------------------------------------------------------------------
    def inline(self, node: _Block) -> str:
        """The text of a leaf block (paragraph, heading, table cell), read token by
        token: links and emphasis open and close around what lies between."""
        out: list[str] = []
        opened: list[tuple[str, int]] = []  # (what closes it, where its opening went)
        for token in node.inline:
            kind = token.type
            if kind.endswith("_open"):
                opened.append((self.opening(token, out), len(out)))
            elif kind.endswith("_close"):
                closing, at = opened.pop() if opened else ("", len(out))
                if closing and self.hidden:
                    closing = ""
                if kind != "link_close" and closing and not "".join(out[at:]).strip():
                    del out[at - 1 :]  # emphasis around nothing: no markers either
                else:
                    out.append(closing)
            else:
                out.append(self.span(token))
        return "".join(out)

    def opening(self, token: Token, out: list[str]) -> str:
        """Writes what opens a link or emphasis; returns what will close it."""
        if self.hidden:
            out.append("")
            return ""
        if token.type == "link_open":
            if token.markup == "autolink":
                out.append("<")
                return ">"
            out.append("[")
            return f"]({_destination(str(token.attrs.get('href', '')))})"
        out.append(token.markup)
        return token.markup

    def span(self, token: Token) -> str:
        kind = token.type
        if kind == "text":
            return self.text(token.content)
        if kind in ("softbreak", "hardbreak"):
            return "" if self.hidden else "\n" + ("" if self.own_words else token.content)
        if kind == "code_inline":
            return "" if self.hidden else _code_span(token.markup, token.content)
        if kind == "html_inline":
            return self.html(token.content)
        if kind == "image":
            # alt text is invisible on the page, and its markup is not markup to a
            # browser: the children are never read.
            return "" if self.hidden else "[image]"
        return "" if self.hidden else token.content

    def text(self, text: str) -> str:
        """Literal text. ``<!--`` here (unterminated, or made of entities) still starts
        a comment: a browser would hide what follows it."""
        out: list[str] = []
        at = 0
        while at < len(text):
            top = self.stack[-1] if self.stack else None
            if top is not None and top.name == _COMMENT:
                at = self.comment_end(text, at)
                continue
            start = text.find("<!--", at)
            if start == -1:
                start = len(text)
            if top is None:
                out.append(text[at:start])
            at = start
            if at < len(text):
                at = self.comment(text, at + 4)
        return "".join(out)

    def comment_end(self, text: str, at: int) -> int:
        """Inside a comment: after its end (the comment closed), or the end of the text
        (it goes on into whatever comes next)."""
        end = _COMMENT_END.search(text, at)
        if end is None:
            return len(text)
        self.stack.pop()
        return end.end()

    def comment(self, text: str, at: int) -> int:
        """After ``<!--`` at ``at``: where reading goes on."""
        short = _SHORT_COMMENT.match(text, at)
        if short is not None:
            return short.end()
        self.stack.append(_Hider(_COMMENT))
        return at

    def html(self, text: str) -> str:
        """Raw HTML (an HTML block, or one inline tag): its text, without what hides."""
        out: list[str] = []
        at = 0
        while at < len(text):
            top = self.stack[-1] if self.stack else None
            if top is not None and top.name == _EOF:
                break
            if top is not None and top.name == _COMMENT:
                at = self.comment_end(text, at)
                continue
            lt = text.find("<", at)
            if lt == -1:
                lt = len(text)
            if lt > at:
                if top is None:
                    out.append(html.unescape(text[at:lt]))
                at = lt
                continue
            if text.startswith("<!--", at):
                at = self.comment(text, at + 4)
                continue
            bogus = _BOGUS.match(text, at)
            if bogus is not None:
                if not bogus.group().endswith(">"):
                    self.stack.append(_Hider(_EOF))
                at = bogus.end()
                continue
            tag = _TAG.match(text, at)
            if tag is None:  # a "<" that starts nothing
                if top is None:
                    out.append("<")
                at += 1
                continue
            at = tag.end()
            out.append(self.tag(tag))
        return "".join(out)

    def tag(self, tag: re.Match[str]) -> str:
        """What one tag shows: nothing, a line break, ``[image]``, or itself (a tag no
        reader takes for markup)."""
        name, attrs, closing = tag["name"].lower(), tag["attrs"], bool(tag["close"])
        if not tag["end"]:  # never closed: the rest of the text is inside the tag
            self.stack.append(_Hider(_EOF))
            return ""
        if self.stack:  # hidden: only the hiding element's own tags count
            top = self.stack[-1]
            if name == top.name:
                top.depth += -1 if closing else 1
                if top.depth == 0:
                    self.stack.pop()
            return ""
        bare = not attrs.strip().strip("/").strip()
        if closing:
            if name in KNOWN:
                return "\n" if name in BLOCK else ""
            return tag.group() if bare else ""
        if name not in VOID and (name in self.hides or _hides(name, attrs)):
            self.stack.append(_Hider(name))
            return ""
        if name in ("img", "image"):
            return "[image]"
        if name in KNOWN:
            return "\n" if name in BLOCK else ""
        return tag.group() if bare else ""


def _hides(name: str, attrs: str) -> bool:
    """Whether an element's attributes hide it (and its content) from a reader."""
    found: dict[str, str] = {}
    for match in _ATTR.finditer(attrs):
        value = html.unescape((match.group(2) or "").strip("\"'")).strip().lower()
        found.setdefault(match.group(1).lower(), value)
    if name == "dialog" and "open" not in found:
        return True
    return (
        "hidden" in found
        or found.get("aria-hidden") == "true"
        or _invisible_style(found.get("style", ""))
    )


def _invisible_style(css: str) -> bool:
    """``display:none``, ``visibility:hidden``, zero font size or opacity, transparent
    colour — also written with CSS comments or escapes."""
    css = _CSS_COMMENT.sub("", css)
    css = _CSS_ESCAPE.sub(_css_unescape, css).lower()
    for declaration in css.split(";"):
        prop, _, value = declaration.partition(":")
        prop, value = prop.strip(), value.replace("!important", "").strip()
        first = value.split()[0] if value.split() else ""
        if (
            (prop == "display" and first == "none")
            or (prop in ("visibility", "content-visibility") and first in ("hidden", "collapse"))
            or (prop in ("font-size", "opacity") and _ZERO.match(first) is not None)
            or (prop == "color" and first == "transparent")
        ):
            return True
    return False


def _css_unescape(match: re.Match[str]) -> str:
    if match.group(1) is None:
        return match.group(2)
    point = int(match.group(1), 16)
    return chr(point) if 0 < point <= 0x10FFFF and not 0xD800 <= point <= 0xDFFF else "\ufffd"


def _code_span(markup: str, content: str) -> str:
    """A code span written back: the same backticks, padded where CommonMark strips."""
    if (
        content.startswith("`")
        or content.endswith("`")
        or (content.startswith(" ") and content.endswith(" ") and content.strip())
    ):
        content = f" {content} "
    return f"{markup}{content}{markup}"


def _destination(href: str) -> str:
    """A link destination written back (markdown-it has percent-encoded it)."""
    return f"<{href}>" if any(ch in href for ch in " ()<>") else href


def _align(cell: Token) -> str:
    style = str(cell.attrs.get("style", ""))
    return {
        "text-align:left": ":---",
        "text-align:right": "---:",
        "text-align:center": ":---:",
    }.get(style, "---")


def _lines(text: str, *, strip: bool) -> str:
    """A paragraph's lines without trailing spaces (and the first, or with ``strip``
    every one, without leading ones); lines that held only hidden content go."""
    lines = text.lstrip().split("\n")
    return "\n".join(line.strip() if strip else line.rstrip() for line in lines if line.strip())


def _one_line(text: str) -> str:
    """A heading's or a table cell's text on one line."""
    return " ".join(line.strip() for line in text.split("\n") if line.strip())


def _as_code(text: str) -> str:
    """Preformatted text as a fenced code block whose fence it cannot close."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = "\n".join(line.rstrip() for line in text.strip("\n").split("\n"))
    return f"{fence}\n{body}\n{fence}"


def _html_lines(text: str) -> str:
    """The text of an HTML block: trailing spaces and runs of blank lines tidied."""
    lines = [line.rstrip() for line in text.split("\n")]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip("\n")
