"""What the issue says the code must raise, and whether a change does.

A small model's test checks one case of what an issue asks, and a change fit to it is
published as verified. An issue may ask that ``false``, ``0``, ``no`` and ``off`` be
false and that "anything else should raise ValueError" while the model's tests check
``false`` only: a change that never raises passes them, and is published, wrong.
When the issue says the code should raise an exception and the test that judges does
not name it, a change that names it nowhere (neither in its own lines nor in a function
of the repository it calls, nor as a subclass or an alias) while the function did not
either may not do what was asked: it is tried after the changes that name it. It is
never dropped before it runs: ``return int(text)`` raises ``ValueError`` without
naming it, and only running it shows that.

A demand misread reorders right fixes, so the reading is narrow and errs towards none:
the reporter's own prose only (no code blocks, no quotes: a pasted traceback's ``raise
ValueError`` asks for nothing), a sentence at a time, ``raise`` at most two words after
``should``/``must`` or opening what follows a colon; nothing in a question, a negated
sentence ("should not", "stop raising", "don't think it should") or a choice ("return
None or raise KeyError"); and only a name that is an exception: a builtin one, a class
of the repository, or a name ending in Error, Exception or Warning.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable, Iterator

from app.fixers.llm.localize import Index
from app.untrusted.markdown import visible_text

MAX_TEXT = 20_000  # characters of each text read: its opening states what it asks

_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n\s*\n")
_MODAL = re.compile(r"\b(?:should|must|has to|have to|needs? to)\s", re.I)
_DEMAND = re.compile(
    r"\b(?:should|must|has to|have to|needs? to)\s+(?:\w+\s+){0,2}?raise\s+|:\s*raise\s+",
    re.I,
)
_NAME = re.compile(r"(?:an?\s+|the\s+)?`?([A-Za-z_][\w.]{0,99})`?")
_NEGATION = re.compile(
    r"\b(?:not|never|no longer|instead of|rather than|stop|stops|avoid|prevent|without)\b"
    r"|n't\b",
    re.I,
)
_CHOICE = re.compile(r"\b(?:or|either|whether|if)\b", re.I)
_TOO_WIDE = {"Exception", "BaseException", "Error", "Warning"}


def demanded(texts: Iterable[str], known: Iterable[str] = ()) -> frozenset[str]:
    """The exception classes the texts (the title, the issue, each apart) say the code
    should raise: "anything else should raise ValueError", "refuse …: raise
    `OutOfStock`". ``known``: the names the repository defines (its classes)."""
    classes = set(known)
    names: set[str] = set()
    for sentence in own_sentences(texts):
        names |= _asked(sentence, classes)
    return frozenset(names)


def own_sentences(texts: Iterable[str]) -> Iterator[str]:
    """The reporter's own prose of each text (no code blocks, no quotes: a pasted
    traceback says nothing), a sentence at a time."""
    for text in texts:
        prose = visible_text(text[:MAX_TEXT], own_words=True)
        yield from (sentence.strip() for sentence in _SENTENCE.split(prose))


def _asked(sentence: str, classes: set[str]) -> set[str]:
    if sentence.endswith("?") or _NEGATION.search(sentence):
        return set()
    out: set[str] = set()
    modal = _MODAL.search(sentence)
    for verb in _DEMAND.finditer(sentence):
        match = _NAME.match(sentence, verb.end())
        if match is None or modal is None or modal.start() > verb.start():
            continue  # ": raise X" asks only after a "should" ("Repro: raise X" does not)
        after = sentence[match.end() : match.end() + 30]
        if _CHOICE.search(sentence, verb.start(), verb.end()) or _CHOICE.match(after.strip()):
            continue  # "should either return None or raise", "raise A or B"
        name = match[1].rstrip(".").rsplit(".", 1)[-1]
        if name.isidentifier() and name not in _TOO_WIDE and _exception(name, classes):
            out.add(name)
    return out


def _exception(name: str, classes: set[str]) -> bool:
    builtin = getattr(builtins, name, None)
    if isinstance(builtin, type) and issubclass(builtin, BaseException):
        return True
    return name in classes or name.endswith(("Error", "Exception", "Warning"))


def unmet(names: Iterable[str], units: Iterable[str], idx: Index, *, path: str = "") -> list[str]:
    """Of ``names``, those the change's units (its function and the constants it
    rewrites) name nowhere: not themselves, not in a function of the repository they
    call (``self._check(n)`` where ``_check`` raises it), not as a subclass the
    repository defines nor as the alias the module at ``path`` imports it under."""
    texts = list(units)
    called = {name for text in texts for name in _calls(text)}
    helpers = ["\n".join(idx.lines(s)) for s in idx.symbols if s.name in called]
    module = idx.sources.get(path, "")
    missing = []
    for name in names:
        aliases = {name, *_subclasses(idx, name)}
        aliases |= set(re.findall(rf"\b{re.escape(name)}\s+as\s+(\w+)", module))
        if not any(mentions(t, a) for t in [*texts, *helpers] for a in aliases):
            missing.append(name)
    return sorted(missing)


def mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def _subclasses(idx: Index, name: str) -> set[str]:
    """The repository's classes that derive from ``name``, two generations down."""
    found: set[str] = set()
    bases = {name}
    for _ in range(2):
        pattern = re.compile(
            rf"^\s*class\s+(\w+)\s*\([^)]*\b(?:{'|'.join(map(re.escape, bases))})\b", re.M
        )
        new = {m for text in idx.sources.values() for m in pattern.findall(text)} - found
        if not new:
            break
        found |= new
        bases = new
    return found


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
