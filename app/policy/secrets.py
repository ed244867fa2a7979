"""Credentials in the lines a change adds.

The detectors are :mod:`app.credentials`' (detect-secrets' plugins and Patchwarden's
own patterns), the same ones that mask stored text. In added lines only:

- a token with a known format (GitHub, AWS, Slack, Stripe, Google, OpenAI, Anthropic,
  npm, PyPI, GitLab, private key blocks, JWTs, …): a credential on sight;
- an ``Authorization``/bearer value or a URL password that is a literal, not a
  variable or a template; a database URL's password whatever it looks like, unless it
  is a stand-in (the user name again, ``password``, ``changeme``, a template);
- a literal given to a secret-sounding name (``API_KEY: str = "…"``, an unquoted
  ``password: …`` in YAML, INI or ``.env``);
- a mask ``[REDACTED:kind]`` of a format that a session put where such a token was
  (the session's own scan, made before masking, is in ``Diff.secrets`` too).

Not counted: a value one of the policy's ``secrets.allow`` patterns matches whole (a
known example, like the key AWS's documentation uses), and a line that carries
detect-secrets' ``pragma: allowlist secret`` comment (or follows an added
``pragma: allowlist nextline secret`` line).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from app import credentials, fold
from app.credentials import random_looking
from app.policy.evidence import SecretFound

__all__ = ["STRONG", "WEAK", "scan_added", "scan_line"]

# Formats that are credentials on sight (and the mask of a secret the session knew).
STRONG = credentials.FORMAT_KINDS | {"secret"}
# Formats whose value may be code (`"Bearer " + token`): only a literal counts.
WEAK = credentials.LITERAL_KINDS

_DATABASES = re.compile(
    r"(?i)(?:postgres(?:ql)?|mysql|mariadb|mssql|sqlserver|oracle|mongodb(?:\+srv)?|redis|"
    r"rediss|amqps?|cockroachdb|clickhouse|couchdb|neo4j|cassandra)(?:\+[a-z0-9]+)?://"
    r"(?P<user>[^/\s:@\[\]]*):$"
)
# An Authorization header's value: a scheme and a token, or a token (RFC 9110 11.4).
_HEADER_VALUE = re.compile(
    r"(?:[A-Za-z][A-Za-z0-9_-]*[ \t]+)?(?P<credentials>[A-Za-z0-9\-._~+/]+=*)"
)
_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
# Default accounts' passwords in examples; the other stand-ins (`password`, `changeme`,
# `example` ...) are credentials.stand_in's placeholders.
_STAND_INS = frozenset(("pwd", "root", "admin", "guest"))


def _key_material(value: str) -> bool:
    """A key block header alone on its line, or followed by base64 key material."""
    header = re.match(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----", value)
    rest = value[header.end() :] if header else value
    rest = rest.strip()
    return rest == "" or bool(re.match(r"(?:\\n|\s)*[A-Za-z0-9+/=]{20,}", rest))


def _database_password(text: str, match: credentials.SecretMatch) -> bool:
    """The password of a database URL (``postgresql://user:PASSWORD@host/db``) is a literal
    (not a stand-in: the user name again, ``password``, a template, a NAME in capitals)."""
    scheme = _DATABASES.search(text, max(0, match.start - 80), match.start)
    if scheme is None:
        return False
    value = text[match.start : match.end]
    if not any(c.isalnum() for c in value):
        return False  # `***`, `…`
    if value.lower() in _STAND_INS or value == scheme.group("user") or _NAME.fullmatch(value):
        return False  # postgres://postgres:postgres@localhost, :password@
    return not credentials.stand_in(value)


def _counts(text: str, match: credentials.SecretMatch) -> bool:
    value = text[match.start : match.end]
    if match.family == "format":
        # Code that only names the header: `startswith("-----BEGIN ...")`.
        return match.kind != "private-key" or _key_material(value)
    if match.kind == "url-password" and _database_password(text, match):
        return True
    if match.kind == "authorization":
        header = _HEADER_VALUE.fullmatch(value.strip())  # `Basic dXNl…`, not `Optional[str]`
        return header is not None and random_looking(header.group("credentials"))
    return random_looking(value.strip())


def scan_line(
    text: str,
    *,
    path: str = "",
    allow: Sequence[str] = (),
    previous: str = "",
    pragma: bool = True,
    folding: bool = True,
) -> list[str]:
    """The kinds of credential on one added line of ``path`` (empty: none), read as it
    is and folded (``"ghp_" + "…"`` as one literal, base64 decoded: app/fold.py).

    ``allow``: the policy's ``secrets.allow`` patterns; ``previous``: the added line
    right before this one, for ``pragma: allowlist nextline secret``; ``pragma``: whether
    that comment counts (not in a change a fixer wrote: it would waive its own
    credential — an obeyed injection could add the comment)."""
    view, _ = fold.folded(text) if folding else ("", [])
    if view:
        return [
            kind
            for line in (text, view)
            for kind in scan_line(
                line, path=path, allow=allow, previous=previous, pragma=pragma, folding=False
            )
        ]
    lowered = text.lower()
    if not credentials.worth_a_look(text, lowered):
        return []
    if pragma and credentials.pragma(text, path=path, previous=previous):
        return []
    allowed = credentials.allow_list(tuple(allow))
    kinds: list[str] = []
    tokens = credentials.find(text, allow=allowed, with_assignments=False, lowered=lowered)
    for match in tokens:
        if _counts(text, match):
            kinds.append(match.kind)
    kinds += [m.group(1) for m in credentials.MASK.finditer(text) if m.group(1) in STRONG]
    code = credentials.is_code(path)
    for match in credentials.assignments(text, code=code, lowered=lowered):
        if credentials.allowed(text[match.start : match.end], allowed):
            continue
        quoted = match.start > 0 and text[match.start - 1] in "\"'`"
        if not quoted and any(t.start < match.end and match.start < t.end for t in tokens):
            continue  # `token: ghp_…` is a GitHub token, said once
        kinds.append(match.kind)
    return kinds


def scan_added(
    path: str,
    lines: Iterable[tuple[int, str]],
    *,
    allow: Sequence[str] = (),
    pragma: bool = True,
) -> list[SecretFound]:
    """Every credential in ``lines`` (line number, text) added to ``path``; values the
    policy's ``secrets.allow`` patterns match whole are examples, not credentials.
    ``pragma=False`` for a change a fixer wrote (see :func:`scan_line`)."""
    found: list[SecretFound] = []
    last, previous = -1, ""
    numbered = list(lines)
    for number, text in numbered:
        before = previous if number == last + 1 else ""
        kinds = scan_line(text, path=path, allow=allow, previous=before, pragma=pragma)
        for kind in dict.fromkeys(kinds):
            found.append(SecretFound(path=path, line=number, kind=kind))
        last, previous = number, text
    # A constant over several lines (`"ghp_" \` then `"…"`): the run, folded.
    texts = [t for _, t in numbered]
    for first, end in fold.chunks(texts):
        if numbered[end][0] - numbered[first][0] != end - first:
            continue  # not consecutive lines of the file
        view, _ = fold.folded("\n".join(texts[first : end + 1]))
        seen = {f.kind for f in found if numbered[first][0] <= f.line <= numbered[end][0]}
        kinds = (
            scan_line(view, path=path, allow=allow, pragma=pragma, folding=False) if view else []
        )
        for kind in dict.fromkeys(k for k in kinds if k not in seen):
            found.append(SecretFound(path=path, line=numbered[first][0], kind=kind))
    return found
