"""What the issue says the code must raise, and whether a change does.

A small model's test checks one case of what an issue asks, and a change fit to it is
published as verified. parse-bool's issue asks that ``false``, ``0``, ``no`` and ``off``
be false and that "anything else should raise ValueError"; the model's tests checked
``false`` only, and in 6 runs of 9 a change that never raises was published, wrong.
When the issue says the code should raise an exception and the test that judges does
not name it, a change that names it nowhere (neither in its own lines nor in a function
of the repository it calls) does not do what was asked: it is dropped before it runs.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from app.fixers.llm.localize import Index

_MODAL = re.compile(r"\b(?:should|must|has to|have to|needs? to|ought to)\b", re.I)
_RAISE = re.compile(r"\brais(?:e|ing)\s+(?:an?\s+|the\s+)?`?([A-Za-z_][\w.]{0,99})`?")
_NEGATION = re.compile(r"\b(?:not|never|no longer|instead of|rather than)\b|n't", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
MAX_TEXT = 20_000  # characters of the issue read: its opening states what it asks
DROPPED = "does not raise what the issue asks"


def demanded(text: str) -> frozenset[str]:
    """The exception classes the text says the code should (must, has to) raise:
    "anything else should raise ValueError", "refuse …: raise `OutOfStock`". Not what it
    raises now ("raises `UnicodeDecodeError` instead"), nor what it should not raise."""
    names: set[str] = set()
    for sentence in _SENTENCE.split(text[:MAX_TEXT]):
        for match in _RAISE.finditer(sentence):
            modals = list(_MODAL.finditer(sentence, 0, match.start()))
            if not modals or _NEGATION.search(sentence, modals[-1].end(), match.start()):
                continue
            name = match[1].rstrip(".").rsplit(".", 1)[-1]
            if name[:1].isupper() and name.isidentifier():
                names.add(name)
    return frozenset(names)


def unmet(names: Iterable[str], units: Iterable[str], idx: Index) -> list[str]:
    """Of ``names``, those the change's units (its function and the constants it
    rewrites) mention nowhere, neither themselves nor in a function of the repository
    they call (``self._check(n)`` where ``_check`` raises it)."""
    texts = list(units)
    called = {name for text in texts for name in _calls(text)}
    helpers = [
        "\n".join(idx.lines(s)) for s in idx.symbols if s.name in called
    ]  # fmt: skip
    return sorted(n for n in names if not any(mentions(t, n) for t in [*texts, *helpers]))


def mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def _calls(text: str) -> set[str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return set()
    return {
        f.id if isinstance(f, ast.Name) else f.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(f := node.func, (ast.Name, ast.Attribute))
    }
