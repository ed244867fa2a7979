r"""Credentials written in pieces, read whole: the view the detectors also scan.

A change can write ``T = "ghp_" + "EY3e…"`` (a GitHub token in two pieces), which no
detector matches piece by piece. :func:`folded` rewrites a line the way Python would
read its constants —
literal concatenation (``+``, or side by side), ``"sep".join([...])`` of literals, an
f-string whose fields are literals — into one literal, and a literal that decodes as
base64 or hex to printable text into what it decodes to. The detectors run on the
folded line as well as on the line; :class:`Piece` says which spans of the line each
rewritten literal came from, so masking covers every piece of what was found.

The same view serves JSON, YAML, INI and ``.env`` values (quoted strings are quoted
strings). Only what is literal is folded: ``"Bearer " + token`` stays code.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from dataclasses import dataclass

# A quoted literal (optional Python prefix), its escapes kept: group 1 the prefix,
# group 2 the quote, group 3 the body.
LITERAL = re.compile(r"""(?i)(?:\b([rbuf]{1,2}))?(["'])((?:\\.|(?!\2)[^\\\n])*)\2""")
# What may stand between two pieces of one constant: `+`, nothing, a line break.
# (a line break may come between, after a `\\`, and a diff's `+` at the next line's start)
_JOINER = re.compile(r"\s*\+?\s*(?:\\?\n[+ ]?\s*\+?\s*)?")
_JOIN_CALL = re.compile(r"""\.join\(\s*[\[(]""")
_FIELD = re.compile(r"""\{\s*(["'])((?:\\.|(?!\1)[^\\\n{}])*)\1\s*\}""")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{20,}={0,2}")
# Where pieces meet: a quote and a `+`; two literals side by side (spaces, a line
# break or nothing between); an f-string's literal field. Three small expressions, each
# tried only when a cheap test says it could match: one of all three cost 3x as much.
_PLUS = re.compile(r"""["']\s*\+|\+\s*[rbfuRBFU]{0,2}["']""")
_SIDE = re.compile(r"""["'](?:[ \t]+|[ \t]*\\\n[+ ]?[ \t]*)?["']""")
_FIELDED = re.compile(r"""\b[fF][rR]?["'][^"'\n]*\{\s*["']""")
# An encoded value starts after a quote, an `=` or a `:`.
_ENCODED = re.compile(r"[\"'=:]\s*[A-Za-z0-9+/_-]{20}")
# (a stray closing quote after it, a literal's end cut off, still ends the value)
_BARE = re.compile(r"""[:=]\s*([A-Za-z0-9+/_-]{20,}={0,2})["'`]?\s*$""")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2}){12,}")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}

MAX_LINE = 4000  # a longer line (or run of lines) is data, not a constant in pieces


@dataclass(frozen=True)
class Piece:
    """A literal of the folded line at ``[start, end)``, and the spans of the original
    line it stands for (each piece's body; an encoded literal's whole body)."""

    start: int
    end: int
    sources: tuple[tuple[int, int], ...]


def worth_folding(line: str) -> bool:
    """Whether a line could hold a constant in pieces or an encoded one (most: no)."""
    if len(line) > MAX_LINE:
        return False
    if ('"' in line or "'" in line) and (
        ("+" in line and _PLUS.search(line))
        or ".join(" in line
        or ("{" in line and _FIELDED.search(line))
        or _SIDE.search(line)
    ):
        return True
    return bool(_ENCODED.search(line)) and _encoded(line)


MAX_CHUNK_LINES = 5


def chunks(lines: list[str]) -> Iterator[tuple[int, int]]:
    """Runs of lines (first, last index) that continue one expression over line breaks
    (``"ghp_" \\`` then ``"…"``, a ``+`` at either end, an open bracket): each a piece of
    text :func:`folded` reads whole. Runs of one line are left out."""
    # Each line's last and first characters, taken once (most files: thousands of lines).
    ends = [line.rstrip()[-1:] for line in lines]
    firsts = [line.lstrip()[:1] for line in lines]
    n = 0
    while n < len(lines):
        last = n
        while (
            last + 1 < len(lines)
            and last - n + 1 < MAX_CHUNK_LINES
            and _continues(ends[last], firsts[last + 1], lines[last + 1])
        ):
            last += 1
        if last > n:
            yield n, last
        n = last + 1


def _continues(end: str, first: str, following: str) -> bool:
    """Whether a line ending in ``end`` goes on in ``following`` (which starts ``first``)."""
    if end in _OPEN_ENDS or first in _CLOSE_STARTS:
        return True
    return end in _QUOTES and following.lstrip().lstrip("+-").lstrip()[:1] in _QUOTES


_OPEN_ENDS = frozenset(("\\", "+", "(", "[", ","))
_CLOSE_STARTS = frozenset(("+", ")", "]"))
_QUOTES = frozenset(("'", '"'))


def inner(text: str) -> Iterator[tuple[list[int], str]]:
    """The bodies of quoted literals that hold quoted literals themselves (code in a
    JSON string: a tool call's arguments), as that code reads: escaped quotes and
    backslashes (``\\"``, ``\\\\``) read once. With each, where each of its characters
    is in ``text``, and where the body ends (one more entry than characters)."""
    for m in LITERAL.finditer(text):
        body = m.group(3)
        if body.count("'") + body.count('"') >= 2:
            yield _unescaped_quotes(body, m.start(3))


def _unescaped_quotes(body: str, at: int) -> tuple[list[int], str]:
    where: list[int] = []
    out: list[str] = []
    n = 0
    while n < len(body):
        where.append(at + n)
        if body[n] == "\\" and n + 1 < len(body) and body[n + 1] in "\"'\\":
            out.append(body[n + 1])
            n += 2
        else:
            out.append(body[n])
            n += 1
    where.append(at + len(body))
    return where, "".join(out)


def _encoded(line: str) -> bool:
    """A run that could be base64 (letters of both cases: not a name like
    `test_the_right_candidate`; base64 of `AKIA…` may have no digit) or hex."""
    return bool(_HEX.search(line)) or any(
        re.search(r"[a-z]", m.group()) and re.search(r"[A-Z]", m.group())
        for m in _BASE64.finditer(line)
    )


def folded(line: str) -> tuple[str, list[Piece]]:
    """The line with each constant written in pieces as one literal, and each encoded
    literal decoded; and where the rewritten literals are. ``("", [])`` when nothing
    was rewritten."""
    if not worth_folding(line):
        return "", []
    out: list[str] = []
    pieces: list[Piece] = []
    at = 0
    for start, end, value, sources in _constants(line):
        out.append(line[at:start])
        begin = sum(len(p) for p in out)
        literal = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out.append(literal)
        pieces.append(Piece(begin + 1, begin + len(literal) - 1, sources))
        at = end
    if not pieces:
        return "", []
    out.append(line[at:])
    return "".join(out), pieces


def _constants(line: str) -> Iterator[tuple[int, int, str, tuple[tuple[int, int], ...]]]:
    """(start, end, value, body spans) of each constant worth rewriting: one made of
    several literals, or one that decodes to text."""
    literals = list(_literals(line))
    n = 0
    while n < len(literals):
        start, end = literals[n][0], literals[n][1]
        joined = _joined(line, literals, n)
        if joined is not None:  # "sep".join(["a", "b"])
            last, end = joined
            group = literals[n + 1 : last + 1]
            value = literals[n][2].join(g[2] for g in group)
            many, n = True, last + 1
        else:  # "a" + "b", "a" "b"
            group = [literals[n]]
            while n + 1 < len(literals) and _JOINER.fullmatch(line, end, literals[n + 1][0]):
                n += 1
                group.append(literals[n])
                end = literals[n][1]
            value = "".join(g[2] for g in group)
            many, n = len(group) > 1 or group[0][4], n + 1
        decoded = _decoded(value)
        if many or decoded is not None:
            yield start, end, decoded or value, tuple(g[3] for g in group)


def _joined(line: str, literals: list[_Literal], n: int) -> tuple[int, int] | None:
    """``"sep".join(["a", "b"])`` with literal ``n`` the separator: the index of the
    last literal joined, and where the call ends."""
    call = _JOIN_CALL.match(line, literals[n][1])
    if call is None:
        return None
    at, last = call.end(), None
    for m in range(n + 1, len(literals)):
        if not re.fullmatch(r"\s*,?\s*", line[at : literals[m][0]]):
            break
        last, at = m, literals[m][1]
    if last is None:
        return None
    close = re.compile(r"\s*,?\s*[\])]\s*\)").match(line, at)
    return last, close.end() if close else at


# (start, end, value, body span, whether it was folded from pieces: an f-string's fields)
_Literal = tuple[int, int, str, tuple[int, int], bool]


def _literals(line: str) -> Iterator[_Literal]:
    """Each quoted literal; an f-string only when every field of it is a literal;
    bytes and raw strings as written."""
    for m in LITERAL.finditer(line):
        prefix, body = (m.group(1) or "").lower(), m.group(3)
        fields = False
        if "f" in prefix:
            if re.search(r"\{(?!\{)", _FIELD.sub("", body)):
                continue  # a field that is code: not a constant
            fields = bool(_FIELD.search(body))
            body = _FIELD.sub(lambda f: f.group(2), body)
        value = body if "r" in prefix else _unescaped(body)
        yield m.start(), m.end(), value, (m.start(3), m.end(3)), fields
    # A configuration value written bare (`k: Z2hwX0…` in YAML, INI, .env): encoded only.
    bare = _BARE.search(line)
    if bare and not any(m.start(3) <= bare.start(1) < m.end(3) for m in LITERAL.finditer(line)):
        yield bare.start(1), bare.end(1), bare.group(1), (bare.start(1), bare.end(1)), False


def _unescaped(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), body)


def _decoded(value: str) -> str | None:
    """What ``value`` decodes to, as base64 or hex, when that is printable text."""
    raw: bytes | None = None
    if _HEX.fullmatch(value):
        raw = bytes.fromhex(value)
    elif _BASE64.fullmatch(value) and len(value.rstrip("=")) % 4 != 1:
        padded = value + "=" * (-len(value) % 4)
        try:
            raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        except (binascii.Error, ValueError):
            return None
    if not raw:
        return None
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return None
    printable = all(32 <= ord(c) < 127 for c in text)
    return text if printable and len(text) >= 8 else None
