r"""Masking of anything that looks like a credential, before text is stored or shown.

Every output a session keeps (steps, diffs, findings' snippets) goes through
:func:`redact`. The patterns cover GitHub's token formats — classic ``ghp_``/``gho_``/
``ghu_``/``ghs_``/``ghr_`` tokens, the new stateless installation tokens (a ``ghs_``-prefixed
JWT of ~520 characters with dots; GitHub recommends matching ``ghs_[A-Za-z0-9\._]{36,}``,
https://github.blog/changelog/2026-05-15-github-app-installation-tokens-per-request-override-header/),
and fine-grained ``github_pat_`` tokens — AWS access keys, PEM private keys, JWTs,
``Authorization:`` headers, bearer tokens and passwords inside URLs. Secrets the caller
knows exactly (the installation token in use, the LLM key) are passed as ``known`` and
masked wherever they appear, whatever they look like.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# (kind, pattern). Order matters: PEM blocks first, so their bodies are not half-masked.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----"
            r"(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY-----|[\s\S]*\Z)"
        ),
    ),
    ("github-token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}")),
    ("github-token", re.compile(r"\bghs_[A-Za-z0-9._-]{36,}")),
    ("github-token", re.compile(r"\bgh[pour]_[A-Za-z0-9_]{36,255}")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b")),
    (
        "aws-secret-key",
        re.compile(r"(?i)(?<=aws_secret_access_key)([\"']?\s*[=:]\s*[\"']?)[A-Za-z0-9/+=]{40}"),
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("authorization", re.compile(r"(?im)(?<=authorization:)([ \t]*)[^\r\n]+")),
    ("authorization", re.compile(r"(?i)(?<=authorization)([\"']\s*[:=]\s*[\"'])[^\"'\r\n]+")),
    ("bearer", re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9\-._~+/]{8,}=*")),
    ("url-password", re.compile(r"(?<=://)([^/\s:@\[\]]*:)[^/\s@]+(?=@)")),
)


_MASKS = re.compile(r"\s*(?:\[REDACTED:[a-z-]+\]\s*)+")
_MAX_PASSES = 8


@dataclass(frozen=True)
class SecretMatch:
    kind: str
    start: int
    end: int


def mask(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def find_secrets(text: str) -> list[SecretMatch]:
    """Where credential-looking strings are in ``text`` (non-overlapping, in order)."""
    found: list[SecretMatch] = []
    for kind, pattern in PATTERNS:
        for m in pattern.finditer(text):
            # Keep a captured prefix (a header's spacing, a URL's user name) readable.
            start = m.end(1) if pattern.groups and m.group(1) is not None else m.start()
            if _MASKS.fullmatch(text, start, m.end()):
                continue  # already masked: masking again would garble it
            if start < m.end() and not any(s.start < m.end() and start < s.end for s in found):
                found.append(SecretMatch(kind, start, m.end()))
    return sorted(found, key=lambda s: s.start)


def redact(text: str, *, known: Iterable[str] = ()) -> str:
    """``text`` with every known secret and every credential-looking string masked."""
    for secret in sorted({k for k in known if k and len(k) >= 4}, key=len, reverse=True):
        text = text.replace(secret, mask("secret"))
    # Overlapping matches are masked one per pass (a token inside a header), so repeat
    # until nothing changes: the result is then a fixed point, redact(redact(x)) == redact(x).
    for _ in range(_MAX_PASSES):
        masked = _mask_once(text)
        if masked == text:
            break
        text = masked
    return text


def _mask_once(text: str) -> str:
    matches = find_secrets(text)
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
