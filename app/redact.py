r"""Masking of anything that looks like a credential, before text is stored or shown.

Every output a session keeps (steps, diffs, findings' snippets, the fixer's transcript)
goes through :func:`redact`. What counts as a credential is :mod:`app.credentials`' to
say — the detectors the policy rejects a change with (detect-secrets' plugins and
Patchwarden's own patterns: GitHub's tokens including the long stateless ``ghs_`` ones,
AWS, Slack, Stripe, Google, OpenAI, Anthropic, npm, PyPI, GitLab and more, private key
blocks, JWTs, ``Authorization`` headers, bearer tokens, passwords in URLs, and literals
given to secret-sounding names). Secrets the caller knows exactly (the installation
token in use, the LLM key) are passed as ``known`` and masked wherever they appear,
whatever they look like.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from app import credentials, fold
from app.credentials import SecretMatch, mask

__all__ = ["find_secrets", "mask", "redact"]

_MAX_PASSES = 8


def find_secrets(text: str, *, allow: Sequence[str] = ()) -> list[SecretMatch]:
    """Where credential-looking strings are in ``text`` (non-overlapping, in order);
    ``allow``: patterns of values that are known examples (the policy's ``secrets.allow``)."""
    return credentials.find(text, allow=credentials.allow_list(tuple(allow)))


def redact(
    text: str,
    *,
    known: Iterable[str] = (),
    allow: Sequence[str] = (),
    opaque: Iterable[str] = (),
) -> str:
    """``text`` with every known secret and every credential-looking string masked.

    ``allow``: patterns of values left as they are (the policy's ``secrets.allow``), for
    the stored diff the policy scores again; everywhere else an example is masked too.
    ``opaque``: values that are no known credential but are not to be stored either
    (random-looking values outside a change's scope), masked as ``opaque``."""
    for value, kind in sorted(
        {**{o: "opaque" for o in opaque if o and len(o) >= 4},
         **{k: "secret" for k in known if k and len(k) >= 4}}.items(),
        key=lambda vk: len(vk[0]),
        reverse=True,
    ):  # fmt: skip
        text = text.replace(value, mask(kind))
    text = _mask_folded(text, allow)  # first: the pieces whole, before any is masked
    # Overlapping matches are masked one per pass (a token inside a header), so repeat
    # until nothing changes: the result is then a fixed point, redact(redact(x)) == redact(x).
    for _ in range(_MAX_PASSES):
        masked = _mask_once(text, allow)
        if masked == text:
            break
        text = masked
    return text


def _mask_folded(text: str, allow: Sequence[str]) -> str:
    """Every piece of a credential written in pieces (``"ghp_" + "…"``, over lines too,
    or inside a string that holds code) or encoded (base64, hex) masked: what the
    detectors find in the folded text (app/fold.py)."""
    at = len(text) + 1
    for (start, end), kind in sorted(_folded_spans(text, allow).items(), reverse=True):
        if end <= at:  # overlapping spans (a run and its own line): masked once
            text, at = text[:start] + mask(kind) + text[end:], start
    return text


def _folded_spans(text: str, allow: Sequence[str], depth: int = 0) -> dict[tuple[int, int], str]:
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    runs = [(n, n) for n in range(len(lines))] + list(fold.chunks(lines))
    spans: dict[tuple[int, int], str] = {}
    for first, last in runs:
        view, pieces = fold.folded("\n".join(lines[first : last + 1]))
        for m in find_secrets(view, allow=allow) if pieces else []:
            for piece in pieces:
                if piece.start < m.end and m.start < piece.end:
                    for start, end in piece.sources:
                        spans[(starts[first] + start, starts[first] + end)] = m.kind
    if depth < 2:  # code inside a string: a tool call's arguments, JSON in a log line
        for n, line in enumerate(lines):
            nested = ("'" in line and '"' in line) or '\\"' in line
            if not nested or not fold.worth_folding(line):
                continue
            for where, body in fold.inner(line):
                for (start, end), kind in _folded_spans(body, allow, depth + 1).items():
                    spans[(starts[n] + where[start], starts[n] + where[end])] = kind
    return spans


def _mask_once(text: str, allow: Sequence[str]) -> str:
    matches = find_secrets(text, allow=allow)
    if not matches:
        return text
    parts: list[str] = []
    at = 0
    for m in matches:
        parts.append(text[at : m.start])
        parts.append(mask(m.kind))
        at = m.end
    parts.append(text[at:])
    return "".join(parts)


_NUMBERS = re.compile(r"\d+(?:\s*,\s*\d+){3,}")
_LONG_NUMBERS = re.compile(r"\d+(?:\s*,\s*\d+){7,}")
# A key and its value: `key: value`, `key = value`, `"key": "value"`, `KEY=value`.
_ENTRY = re.compile(
    r"""(?:^|[\s{,(])["']?[\w.-]+["']?\s*[:=]\s*(?:(["'])((?:\\.|(?!\1)[^\\\n])*)\1|([^\s,#;'"]+))"""
)


def material(lines: Iterable[str]) -> list[str]:
    """What a value could have been built from on these lines, to mask wherever it is
    stored: each quoted literal's body of four characters or more, and each run of four
    or more numbers (``103, 104, 112, 95``), as written and as JSON would write it."""
    found: dict[str, None] = {}
    for line in lines:
        for m in fold.LITERAL.finditer(line):
            if len(m.group(3)) >= 4:
                found[m.group(3)] = None
        for m in _NUMBERS.finditer(line):
            found[m.group()] = None
    for value in list(found):
        found[json.dumps(value)[1:-1]] = None
    return [v for v in found if len(v) >= 4]


def opaque_values(lines: Iterable[str]) -> list[str]:
    """The random-looking material on these lines, whatever names it goes by: values of
    key/value entries (a dict, YAML, JSON, INI or ``.env``) and quoted literals that
    look random, and runs of eight or more numbers (what ``bytes([...])`` or a list of
    ``chr`` codes builds from)."""
    found: dict[str, None] = {}
    for line in lines:
        values = [
            m.group(2) if m.group(2) is not None else m.group(3) for m in _ENTRY.finditer(line)
        ]
        values += [m.group(3) for m in fold.LITERAL.finditer(line)]
        for value in values:
            if value and len(value) >= 12 and credentials.random_looking(value):
                found[value] = None
        for m in _LONG_NUMBERS.finditer(line):
            found[m.group()] = None
    return list(found)
