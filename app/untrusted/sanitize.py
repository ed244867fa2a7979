"""Untrusted text made safe to show a model: sanitised, then fenced as data.

Issue titles and bodies, comments, alert payloads and failing-test output are written
by people (or programs) who may not be the maintainer who asked for the fix. Before
any of it reaches a prompt, :func:`sanitize` keeps what a human reviewer sees on
github.com and nothing else: the text is parsed as markdown and written back without
what the page does not show — HTML comments, link reference definitions and link
titles, image alt text, ``<script>``/``<style>``/``<template>``/``<noscript>`` and
hidden elements with their content, zero-width, bidi and tag characters — while code
spans and blocks are kept verbatim and text that merely looks like a tag
(``expected <int> got <str>``, ``List<String>``, ``in <module>``) stays as written.
The rules are in :mod:`app.untrusted.markdown`, shared with the command parser so the two never
disagree about what a comment says.

:func:`fence` then wraps the text in markers carrying a random nonce, so the text
cannot close its own fence; the system prompt says that fenced text is data about
the task and never instructions (:mod:`app.fixers.llm.agent.prompt`).
"""

from __future__ import annotations

import secrets

from app.untrusted.markdown import strip_invisible, visible_text

MAX_CHARS = 20_000  # per document; the rest is cut with a marker
# Removing markup can join what is left into new markup (`<<b>b>` → `<b>`), and text
# a reader sees literally can read as markup once written back (`&lt;!-- x --&gt;`):
# the text is read again until nothing changes. Each pass only takes away, so stopping
# early never shows the model more than a reader sees.
_MAX_PASSES = 8


def sanitize(text: str, *, limit: int = MAX_CHARS) -> str:
    """``text`` as a reader sees it: no hidden content, no invisible characters, code
    kept verbatim; at most ``limit`` characters (then a marker says how many were cut)."""
    for _ in range(_MAX_PASSES):
        before, text = text, visible_text(text)
        if text == before:
            break
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    if len(text) > limit:
        cut = len(text) - limit
        text = text[:limit] + f"\n[... {cut} characters cut by Patchwarden ...]"
    return text


def fence(
    text: str,
    *,
    source: str,
    nonce: str | None = None,
    limit: int = MAX_CHARS,
    verbatim: bool = False,
) -> str:
    """``text`` (sanitised) between markers it cannot forge: the nonce is random and
    any occurrence of it inside the text is removed. ``verbatim``: what a program
    printed (test output, a value's repr) is not markdown, and no page hides any of it:
    only invisible characters go (read as markdown, ``'&amp;lt;b&amp;gt;'`` — a value an
    escaping function's test compares — becomes an empty string)."""
    nonce = nonce or secrets.token_hex(6)
    body = _cut(strip_invisible(text), limit) if verbatim else sanitize(text, limit=limit)
    body = body.replace(nonce, "")
    label = sanitize(source, limit=200).replace('"', "'").replace("\n", " ").replace(nonce, "")
    return f'<untrusted-data id="{nonce}" source="{label}">\n{body}\n</untrusted-data id="{nonce}">'
