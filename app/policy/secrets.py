"""Credentials in the lines a change adds.

Three kinds of evidence, all in added lines only:

- a token with a known format (``app.redact``'s patterns: GitHub's ``ghp_``/``ghs_``/
  ``github_pat_`` tokens, the long stateless ``ghs_`` ones included, AWS keys, private
  key blocks, JWTs), and an ``Authorization``/bearer/URL password whose value is a literal,
  not a variable or a template;
- a mask ``[REDACTED:kind]`` that a session put where such a token was (the session's
  own scan, made before masking, is in ``Diff.secrets`` too);
- a generic assignment of a high-entropy literal to a name that says it is a secret
  (``api_key = "9f8e…"``), the way detect-secrets and gitleaks look for them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

from app.redact import find_secrets
from app.sessions.result import SecretFound

# Formats that are credentials on sight.
STRONG = {"private-key", "github-token", "aws-access-key", "aws-secret-key", "jwt", "secret"}
# Formats whose value may be code (`"Bearer " + token`): only a literal counts.
WEAK = {"authorization", "bearer", "url-password"}

_MASK = re.compile(r"\[REDACTED:([a-z-]+)\]")
_ASSIGNMENT = re.compile(
    r"""(?ix)
    (?P<name>(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key
        |private[_\-]?key|client[_\-]?secret|credentials?)[a-z0-9_.\-]*)
    ["']?\s*(?:=|:|:=|=>)\s*[rbuf]?["'](?P<value>[^"'\s]{16,})["']
    """
)
_PLACEHOLDER = re.compile(
    r"(?i)^(?:x+|\*+|\.+|<[^>]*>|\$\{[^}]*\}|\{\{[^}]*\}\}|%\(?[a-z_]*\)?s|"
    r"(?:change|replace)[-_]?me.*|your[-_].*|dummy.*|example.*|fake.*|test.*|placeholder.*)$"
)
_TEMPLATE = re.compile(
    r"\$\{|\$[A-Z_][A-Z0-9_]*\b|\{\{|%\(|%s\b|^<.*>$|\{[A-Za-z_][A-Za-z0-9_.]*\}"
    r"|\b(?:os\.environ|getenv|process\.env)\b"
)
# URLs, paths and names made of words (`X-Auth-Token`, `prod/db/credentials`): not keys.
_NOT_A_KEY = re.compile(r"^[a-z][a-z0-9+.-]*://|^[./~]|^[A-Za-z]+(?:[-_./: ][A-Za-z]+)*$")


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _random_looking(value: str) -> bool:
    if _PLACEHOLDER.match(value) or _TEMPLATE.search(value) or _NOT_A_KEY.search(value):
        return False
    classes = sum(
        bool(re.search(p, value)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]", r"[^A-Za-z0-9]")
    )
    return classes >= 2 and entropy(value) >= 3.5


_PEM_HEADER = re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----")


def _key_material(value: str) -> bool:
    """A key block header alone on its line, or followed by base64 key material."""
    header = _PEM_HEADER.match(value)
    rest = value[header.end() :] if header else value
    rest = rest.strip()
    return rest == "" or bool(re.match(r"(?:\\n|\s)*[A-Za-z0-9+/=]{20,}", rest))


# Every pattern above needs one of these (lower-cased): most lines have none, and a
# substring test is far cheaper than a dozen regular expressions.
_NEEDLES = (
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "akia", "asia", "agpa", "aida",
    "aroa", "anpa", "anva", "aipa", "aws_secret", "eyj", "authorization", "bearer", "://",
    "-----begin", "[redacted:", "passw", "pwd", "secret", "token", "key", "credential",
)  # fmt: skip


def scan_line(text: str) -> list[str]:
    """The kinds of credential on one added line (empty: none)."""
    lowered = text.lower()
    if not any(needle in lowered for needle in _NEEDLES):
        return []
    kinds: list[str] = []
    for match in find_secrets(text):
        value = text[match.start : match.end]
        if match.kind == "private-key" and not _key_material(value):
            continue  # code that only names the header: `startswith("-----BEGIN ...")`
        if match.kind in STRONG or (match.kind in WEAK and _random_looking(value.strip())):
            kinds.append(match.kind)
    kinds += [m.group(1) for m in _MASK.finditer(text) if m.group(1) in STRONG]
    for m in _ASSIGNMENT.finditer(text):
        if _random_looking(m.group("value")):
            kinds.append("high-entropy-assignment")
            break
    return kinds


def scan_added(path: str, lines: Iterable[tuple[int, str]]) -> list[SecretFound]:
    """Every credential in ``lines`` (line number, text) added to ``path``."""
    return [
        SecretFound(path=path, line=number, kind=kind)
        for number, text in lines
        for kind in dict.fromkeys(scan_line(text))
    ]
