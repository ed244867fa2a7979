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

from collections.abc import Iterable, Sequence

from app import credentials
from app.credentials import SecretMatch, mask

__all__ = ["find_secrets", "mask", "redact"]

_MAX_PASSES = 8


def find_secrets(text: str, *, allow: Sequence[str] = ()) -> list[SecretMatch]:
    """Where credential-looking strings are in ``text`` (non-overlapping, in order);
    ``allow``: patterns of values that are known examples (the policy's ``secrets.allow``)."""
    return credentials.find(text, allow=credentials.allow_list(tuple(allow)))


def redact(text: str, *, known: Iterable[str] = (), allow: Sequence[str] = ()) -> str:
    """``text`` with every known secret and every credential-looking string masked.

    ``allow``: patterns of values left as they are (the policy's ``secrets.allow``), for
    the stored diff the policy scores again; everywhere else an example is masked too."""
    for secret in sorted({k for k in known if k and len(k) >= 4}, key=len, reverse=True):
        text = text.replace(secret, mask("secret"))
    # Overlapping matches are masked one per pass (a token inside a header), so repeat
    # until nothing changes: the result is then a fixed point, redact(redact(x)) == redact(x).
    for _ in range(_MAX_PASSES):
        masked = _mask_once(text, allow)
        if masked == text:
            break
        text = masked
    return text


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
