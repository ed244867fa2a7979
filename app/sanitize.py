"""Untrusted text made safe to show a model: sanitised, then fenced as data.

Issue bodies, comments, alert payloads and failing-test output are written by people
(or programs) who may not be the maintainer who asked for the fix. Before any of it
reaches a prompt, :func:`sanitize` removes what a human reviewer would not see but a
model would read:

- HTML comments (``<!-- … -->``, also unterminated) and markdown comments
  (``[//]: # (…)``);
- images: ``![alt](url)``, reference images and ``<img …>`` become ``[image]`` — alt
  text is invisible on the page and a favourite place to hide instructions;
- hidden HTML: elements with ``hidden``, ``aria-hidden``, ``display:none``,
  ``visibility:hidden``, zero font size or opacity are removed with their content;
  every other tag is dropped but its text kept (attributes such as ``title`` go);
- invisible characters: zero-width characters and joiners, bidi controls and
  overrides, Unicode tag characters (``U+E0000`` to ``U+E007F``, "ASCII smuggling"),
  variation selectors, fillers, and C0/C1 controls other than newline and tab.

:func:`fence` then wraps the text in markers carrying a random nonce, so the text
cannot close its own fence; the system prompt says that fenced text is data about
the task and never instructions (:mod:`app.fixers.llm.prompt`).
"""

from __future__ import annotations

import re
import secrets
import unicodedata

MAX_CHARS = 20_000  # per document; the rest is cut with a marker
_MAX_PASSES = 8

_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
# [//]: # (hidden) / [comment]: <> (hidden) / [x]: # "hidden": link definitions
# that render as nothing.
_MD_COMMENT = re.compile(
    r"(?m)^ {0,3}\[[^\]\n]*\]:[ \t]*(?:#|<>)[ \t]*(?:\(.*\)|\".*\"|'.*')?[ \t]*$"
)
_MD_IMAGE = re.compile(r"!\[(?:[^\]\\]|\\.)*\](?:\((?:[^()\\]|\\.|\([^()]*\))*\)|\[[^\]]*\])?")
_HIDDEN_STYLE = (
    r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d]*[1-9])"
    r"|opacity\s*:\s*0(?![.\d]*[1-9])"
)
_HIDDEN_ATTR = re.compile(
    rf"""\s(?:hidden(?:\s|=|/?>|$)|aria-hidden\s*=\s*["']?true|style\s*=\s*["'][^"']*(?:{_HIDDEN_STYLE}))""",
    re.IGNORECASE,
)
_OPEN_TAG = re.compile(r"<([A-Za-z][A-Za-z0-9-]*)(\s[^<>]*)?/?>")
_IMG_TAG = re.compile(r"<img\b[^<>]*>", re.IGNORECASE)
_ANY_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_BLANK_RUNS = re.compile(r"\n{3,}")
_TRAILING_SPACE = re.compile(r"[ \t]+\n")

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


def _strip_invisible(text: str) -> str:
    text = _INVISIBLE.sub("", text)
    # Any other format character (Unicode category Cf) is invisible by definition.
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) != "Cf")


def _drop_hidden_elements(text: str) -> str:
    """Remove ``<tag hidden …>…</tag>`` (and styled-invisible elements) with their content."""
    out: list[str] = []
    at = 0
    for m in _OPEN_TAG.finditer(text):
        if m.start() < at:
            continue  # inside an element already removed
        attrs = m.group(2) or ""
        if not _HIDDEN_ATTR.search(attrs):
            continue
        out.append(text[at : m.start()])
        end = m.end()
        if not m.group(0).endswith("/>"):
            end = _closing(text, m.group(1).lower(), m.end())
        at = end
    out.append(text[at:])
    return "".join(out)


def _closing(text: str, tag: str, start: int) -> int:
    """Where the element opened just before ``start`` ends (nesting counted); the end
    of the text if it is never closed — unclosed hidden markup hides everything after."""
    pattern = re.compile(rf"<(/?){re.escape(tag)}\b[^<>]*>", re.IGNORECASE)
    depth = 1
    for m in pattern.finditer(text, start):
        depth += -1 if m.group(1) else (0 if m.group(0).endswith("/>") else 1)
        if depth == 0:
            return m.end()
    return len(text)


def sanitize(text: str, *, limit: int = MAX_CHARS) -> str:
    """``text`` without hidden content and invisible characters, at most ``limit`` chars."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _strip_invisible(text)  # first: invisible characters can split the markup below
    # Removing markup can join what is left into new markup (`<<b>b>` → `<b>`):
    # repeat until nothing changes.
    for _ in range(_MAX_PASSES):
        before = text
        text = _HTML_COMMENT.sub("", text)
        text = _MD_COMMENT.sub("", text)
        text = _MD_IMAGE.sub("[image]", text)
        text = _IMG_TAG.sub("[image]", text)
        text = _drop_hidden_elements(text)
        text = _ANY_TAG.sub("", text)
        if text == before:
            break
    text = _TRAILING_SPACE.sub("\n", text)
    text = _BLANK_RUNS.sub("\n\n", text).strip()
    if len(text) > limit:
        cut = len(text) - limit
        text = text[:limit] + f"\n[... {cut} characters cut by Patchwarden ...]"
    return text


def fence(text: str, *, source: str, nonce: str | None = None) -> str:
    """``text`` (sanitised) between markers it cannot forge: the nonce is random and
    any occurrence of it inside the text is removed."""
    nonce = nonce or secrets.token_hex(6)
    body = sanitize(text).replace(nonce, "")
    label = sanitize(source, limit=200).replace('"', "'").replace("\n", " ").replace(nonce, "")
    return f'<untrusted-data id="{nonce}" source="{label}">\n{body}\n</untrusted-data id="{nonce}">'
