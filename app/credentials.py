r"""What looks like a credential: the one set of detectors masking and the policy share.

:mod:`app.redact` masks every match in every text Patchwarden stores or shows;
:mod:`app.policy.secrets` rejects a change whose added lines hold one. Both ask this
module, so whatever the policy rejects is also masked.

Three families, in the order they claim text that two of them match:

- **formats**: a token whose shape is a credential on sight. Most of the regular
  expressions are detect-secrets' own (its plugin classes' ``denylist``, used in-process,
  kept current by its maintainers): AWS, Slack tokens and webhooks, Stripe, SendGrid,
  Twilio, GitLab, PyPI, npm, OpenAI, Discord, Telegram, Mailchimp, Square. Patchwarden's
  own cover what it lacks or matches too narrowly: GitHub's tokens (the ~520-character
  stateless ``ghs_`` ones and ``github_pat_``), private key blocks (PGP's too) masked
  whole, JWTs, Google API keys, Anthropic keys, OpenAI project keys, DigitalOcean,
  Shopify, Hugging Face, bare ``npm_`` tokens, Azure storage account keys, Slack app
  tokens, Artifactory.
- **literals**: ``Authorization`` headers, bearer tokens and passwords in URLs. Always
  masked; the policy counts them only when the value is a literal and not code
  (``"Bearer " + token``) — app/policy/secrets.py decides.
- **assignments**: a secret-sounding name (detect-secrets' keyword list and a few more)
  given a literal value: ``API_KEY: str = "…"``, ``password: hunter2-ish`` in YAML, INI
  or ``.env``, ``"client_secret": "…"`` in JSON. Not code (``os.environ[…]``,
  ``get_token()``, ``self.password``), templates (``${{ secrets.X }}``), placeholders
  (``changeme``, ``xxx``, ``<your-key>``) or type annotations. In source code only a
  quoted value counts: a bare word there is a variable.

Left out on purpose: detect-secrets' high-entropy string plugins, which flag hashes and
base64 test data in ordinary code (docs/decisions/008-secret-detection.md).

detect-secrets is imported on first use, not at import time: its package pulls in
``requests``, which the rest of Patchwarden does not need.

Over ~400 lines on purpose: a table of detectors and the one ordering that decides
which claims a span; split, the order between the families would be implicit.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal, cast

Family = Literal["format", "literal", "assignment"]

# A secret-sounding name with a random-looking value (a password-sounding name with a
# value that could be a password is "password").
HIGH_ENTROPY = "high-entropy-assignment"

# The kinds each family reports (a test checks them against the detectors).
_FORMAT_KINDS = """\
private-key github-token aws-access-key aws-secret-key slack-token slack-webhook
stripe-key sendgrid-key twilio-key gitlab-token pypi-token npm-token openai-key
anthropic-key google-api-key digitalocean-token shopify-token huggingface-token
azure-storage-key artifactory-token discord-token telegram-token mailchimp-key
square-token jwt"""
FORMAT_KINDS = frozenset(_FORMAT_KINDS.split())
LITERAL_KINDS = frozenset({"authorization", "bearer", "url-password"})

# What a masked credential becomes: ``[REDACTED:<kind>]``. Spelled here only.
MASK_PREFIX = "[REDACTED:"
MASK = re.compile(re.escape(MASK_PREFIX) + r"([a-z-]+)\]")


def mask(kind: str) -> str:
    """The mask that stands where a credential of ``kind`` was."""
    return f"{MASK_PREFIX}{kind}]"


@dataclass(frozen=True)
class SecretMatch:
    """A credential at ``text[start:end]`` (the value alone, never its label)."""

    kind: str
    start: int
    end: int
    family: Family = "format"


@dataclass(frozen=True)
class _Detector:
    kind: str
    pattern: re.Pattern[str]
    # Lower-case substrings every match contains: a text with none of them is not tried.
    # Empty: always tried.
    needles: tuple[str, ...] = ()
    family: Family = "format"
    # A match right after (``before``) or right before (``after``) one of these characters
    # is part of a longer string, not this token.
    before: str = ""
    after: str = ""
    # The rest of a token the pattern stops short of (Stripe's keys grew longer).
    tail: re.Pattern[str] | None = None
    # The whole match is the secret, whatever groups the pattern has (GitLab's
    # ``glcbt-`` pattern groups an optional prefix, not the token).
    whole: bool = False


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_DIGITS = "0123456789"
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]*")
_GITLAB = ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941", "glcbt-", "glimt-",
           "glptt-", "glagent-", "gloas-")  # fmt: skip
_ALNUM_TAIL = re.compile(r"[A-Za-z0-9]*")


def _library() -> dict[str, tuple[re.Pattern[str], ...]]:
    """detect-secrets' regular expressions, by the plugin they come from."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    plugins = {
        "aws": AWSKeyDetector,
        "discord": DiscordBotTokenDetector,
        "gitlab": GitLabTokenDetector,
        "mailchimp": MailchimpDetector,
        "npm": NpmDetector,
        "openai": OpenAIDetector,
        "pypi": PypiTokenDetector,
        "sendgrid": SendGridDetector,
        "slack": SlackDetector,
        "square": SquareOAuthDetector,
        "stripe": StripeDetector,
        "telegram": TelegramBotTokenDetector,
        "twilio": TwilioKeyDetector,
    }
    # `denylist` is a class attribute of each plugin (an abstract property on the base).
    return {
        name: tuple(cast("Iterable[re.Pattern[str]]", plugin.denylist))
        for name, plugin in plugins.items()
    }


@functools.cache
def _detectors() -> tuple[_Detector, ...]:
    lib = _library()
    d = _Detector
    A, D = _ALNUM, _DIGITS
    return (
        # Whole blocks first, so their bodies are not half-masked. An unterminated block
        # (output cut off) is masked to the end of the text.
        d(
            "private-key",
            re.compile(
                r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
                r"(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)"
            ),
            ("-----begin",),
        ),
        # GitHub (ours: detect-secrets knows only the 36-character classic tokens).
        # Stateless installation tokens are ghs_-prefixed JWTs of ~520 characters;
        # GitHub recommends matching ghs_[A-Za-z0-9\._]{36,}:
        # https://github.blog/changelog/2026-05-15-github-app-installation-tokens-per-request-override-header/
        d("github-token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}"), ("github_pat_",)),
        d("github-token", re.compile(r"\bghs_[A-Za-z0-9._-]{36,}"), ("ghs_",)),
        d(
            "github-token",
            re.compile(r"\bgh[pour]_[A-Za-z0-9_]{36,255}"),
            ("ghp_", "gho_", "ghu_", "ghr_"),
        ),
        # AWS: detect-secrets' key id prefixes, then ours (IAM user, role, group ids).
        d(
            "aws-access-key",
            lib["aws"][0],
            ("a3t", "abia", "acca", "akia", "asia"),
            before=A,
            after=A,
        ),
        d(
            "aws-access-key",
            re.compile(r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}"),
            ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
            before=A,
            after=A,
        ),
        d(
            "aws-secret-key",
            re.compile(
                r"(?i)(?<=aws_secret_access_key)[\"']?\s*[=:]\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{40})"
            ),
            ("aws_secret_access_key",),
        ),
        d("aws-secret-key", lib["aws"][1], ("aws",)),
        # Slack: bot/user/legacy tokens, incoming webhooks (detect-secrets), app tokens.
        d("slack-token", lib["slack"][0], ("xox",), before=A),
        d("slack-webhook", lib["slack"][1], ("hooks.slack.com",)),
        d("slack-token", re.compile(r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+"), ("xapp-",), before=A),
        # Stripe live secret and restricted keys; today's are longer than the 24
        # characters detect-secrets asks for, so the rest of the token goes too.
        d("stripe-key", lib["stripe"][0], ("k_live_",), before=A, tail=_ALNUM_TAIL),
        d("sendgrid-key", lib["sendgrid"][0], ("sg.",), before=A, after=A),
        *(d("twilio-key", p, (), before=A, after=A) for p in lib["twilio"]),
        *(
            d("gitlab-token", p, _GITLAB, before=A, tail=_TOKEN_TAIL, whole=True)
            for p in lib["gitlab"]
        ),
        *(d("pypi-token", p, ("pypi-ag",), before=A) for p in lib["pypi"]),
        # Ours: any macaroon PyPI (or TestPyPI) issues starts `pypi-AgE`; detect-secrets
        # asks for 70 more characters, and a token cut shorter went through.
        d("pypi-token", re.compile(r"pypi-AgE[A-Za-z0-9_-]{24,}"), ("pypi-ag",), before=A),
        d("npm-token", re.compile(r"npm_[A-Za-z0-9]{36}"), ("npm_",), before=A, after=A),
        d("npm-token", lib["npm"][0], ("_authtoken",)),
        # OpenAI: detect-secrets' pattern (the T3BlbkFJ marker), then project, service
        # account and admin keys without it; Anthropic's API and admin keys.
        d("openai-key", lib["openai"][0], ("t3blbkfj",), before=A, tail=_TOKEN_TAIL),
        d(
            "openai-key",
            re.compile(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{32,}"),
            ("sk-proj-", "sk-svcacct-", "sk-admin-"),
            before=A,
        ),
        d(
            "anthropic-key",
            re.compile(r"sk-ant-(?:api|admin|oat|sid)\d{2}-[A-Za-z0-9_\-]{32,}"),
            ("sk-ant-",),
            before=A,
        ),
        d("google-api-key", re.compile(r"AIza[0-9A-Za-z_\-]{35}"), ("aiza",), before=A, after=A),
        d(
            "digitalocean-token",
            re.compile(r"do[opr]_v1_[a-f0-9]{64}"),
            ("_v1_",),
            before=A,
            after=A,
        ),
        d(
            "shopify-token",
            re.compile(r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
            ("shpat_", "shpca_", "shppa_", "shpss_"),
            before=A,
            after=A,
        ),
        d("huggingface-token", re.compile(r"hf_[A-Za-z]{34}"), ("hf_",), before=A, after=A),
        d(
            "azure-storage-key",
            re.compile(r"AccountKey=(?P<secret>[A-Za-z0-9+/]{86}==)"),
            ("accountkey=",),
        ),
        d("artifactory-token", re.compile(r"AKC[a-zA-Z0-9]{10,}"), ("akc",), before=A, after=A),
        # No needle for these: the shapes alone are cheap enough to look for.
        d("discord-token", lib["discord"][0], (), before=A, after=A),
        d("telegram-token", lib["telegram"][0], (), before=D, after=A),
        d("mailchimp-key", lib["mailchimp"][0], ("-us",), before=A, after=A),
        d("square-token", lib["square"][0], ("sq0csp-",), before=A),
        d("square-token", re.compile(r"sq0atp-[0-9A-Za-z\-_]{22}"), ("sq0atp-",), before=A),
        d(
            "jwt",
            re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
            ("eyj",),
        ),
        # Literals: masked always; app/policy/secrets.py counts only literal values.
        d(
            "authorization",
            # The value after `Authorization:` (a header, YAML) or `"authorization": "`
            # (JSON, a dict), quoted or not, to the end of the line or a quote. It starts
            # with a non-space: a quote after the colon must not leave the value unread.
            re.compile(
                r"(?i)(?<=authorization)(?:[\"']\s*[:=]|:)[ \t]*[\"'`]?"
                r"(?P<secret>[^\s\"'`][^\r\n\"'`]*)"
            ),
            ("authorization",),
            family="literal",
        ),
        d(
            "bearer",
            re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9\-._~+/]{8,}=*"),
            ("bearer",),
            family="literal",
        ),
        d(
            "url-password",
            re.compile(r"(?<=://)[^/\s:@\[\]]*:(?P<secret>[^/\s@]+)(?=@)"),
            ("://",),
            family="literal",
        ),
    )


def _span(m: re.Match[str]) -> tuple[int, int]:
    """Where the secret is in a match: the ``secret`` group, or detect-secrets' way (the
    first group that matched), or the whole match."""
    if "secret" in m.re.groupindex:
        return m.span("secret")
    for group in range(1, (m.re.groups or 0) + 1):
        if m.group(group):
            return m.span(group)
    return m.span()


def formats(text: str, *, lowered: str | None = None) -> list[SecretMatch]:
    """Format and literal matches in ``text``, in detector order (overlaps included)."""
    lowered = text.lower() if lowered is None else lowered
    by_needle = _by_needle()
    tried = {i for needle, ids in by_needle.items() if needle in lowered for i in ids}
    found: list[SecretMatch] = []
    for i, det in enumerate(_detectors()):
        if det.needles and i not in tried:
            continue
        for m in det.pattern.finditer(text):
            start, end = m.span() if det.whole else _span(m)
            if start >= end:
                continue
            if det.before and start > 0 and text[start - 1] in det.before:
                continue
            if det.after and end < len(text) and text[end] in det.after:
                continue
            tail = det.tail.match(text, end) if det.tail is not None else None
            end = tail.end() if tail else end
            found.append(SecretMatch(det.kind, start, end, det.family))
    return found


@functools.cache
def _by_needle() -> dict[str, tuple[int, ...]]:
    """For each needle, the detectors (by index) that need it."""
    out: dict[str, list[int]] = {}
    for i, det in enumerate(_detectors()):
        for needle in det.needles:
            out.setdefault(needle, []).append(i)
    return {needle: tuple(ids) for needle, ids in out.items()}


# -- assignments --------------------------------------------------------------------------

# Names detect-secrets' keyword plugin looks for (its DENYLIST: `api_?key`, `password`,
# `secret`, ...), and ours: tokens, access keys, client secrets, credentials.
_OUR_WORDS = ("token", "access_?key", "client_?secret", "credentials?", "passphrase", "apikey")
_PASSWORD_WORDS = re.compile(r"(?i)pass|pwd|contrase")


@functools.cache
def _assignment() -> re.Pattern[str]:
    from detect_secrets.plugins.keyword import DENYLIST

    words = "|".join(w.replace("_?", r"[_.\-]?") for w in (*DENYLIST, *_OUR_WORDS))
    return re.compile(
        rf"""
        (?P<word>(?i:{words}))s?(?![a-z])           # a secret-sounding word, not `tokenizer`
        (?P<rest>[A-Za-z0-9_.\-]*)                  # the rest of the name: _V2, Hash, _path
        (?:\\?["'`])?\]?                            # a key's closing quote or bracket
        [ \t]*
        (?:
            :[ \t]*[A-Za-z_][\w.\[\], |]*?[ \t]*=(?![=>~])   # annotated: API_KEY: str = "…"
          | :=|=>|=(?![=>~])|:(?![:=/])                       # = : := =>, not == :: or ://
        )
        [ \t]*
        (?:
            [rbufRBUF]{{0,2}}(?P<quote>\\?["'`])(?P<quoted>(?:(?!(?P=quote))[^\r\n])*)(?P=quote)
          | (?P<bare>[^\s"'`,;&\\]+)
        )
        """,
        re.VERBOSE,
    )


_ASSIGNMENT_NEEDLES = ("pass", "pwd", "secret", "token", "key", "credential", "contras")

# Names whose last part says the value is about a secret, not the secret: `token_url`,
# `password_hash`, `api_key_id`, `secretName`, `SECRET_KEY_PATH`.
_INERT_ENDS = """\
id ids name names path paths file files filename dir url urls uri endpoint env var
variable header field fields type types kind len length min max count size ttl timeout
expiry expires expiration lifetime hash hashed digest prompt label policy regex re
pattern format mode source ref version command cmd provider manager class flag enabled
required limit index attr param prefix suffix schema location help description doc
placeholder hint message msg error text title validator rule rules char chars bits
algorithm alg scheme method backend handler factory setting settings option options
store storage config"""
_INERT_AFTER = frozenset(_INERT_ENDS.split())
# Names whose part before the word says it is not a credential: pagination and CSRF tokens,
# lexer tokens, flags (`has_password`), counters (`max_tokens`), test doubles.
_INERT_STARTS = """\
next page pagination continuation csrf xsrf sync cancel cancellation resume
idempotency cursor lexer parser eof max min num n is has use no skip show hide verify
check validate forgot reset require allow disable enable with without get set fetch
load read parse mask redact fake dummy mock test example sample"""
_INERT_BEFORE = frozenset(_INERT_STARTS.split())
_NAME_CHARS = frozenset(_ALNUM + "_.-")
_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")

_PLACEHOLDER = re.compile(
    r"(?i)^(?:x+|\*+|\.+|•+|-+|_+|<[^>]*>|\[[^\]]*\]|\$\{[^}]*\}|\{\{[^}]*\}\}|%\(?[a-z_]*\)?s"
    r"|(?:change|replace)[-_]?me.*|your[-_].*|dummy.*|example.*|fake.*|test.*|placeholder.*"
    r"|sample.*|mock.*|redacted|(?:secret|pass(?:word|wd)?|passw0rd|token|key)\d*|todo|tbd|fixme"
    r"|none|null|nil"
    r"|.*[-_](?:here|example|placeholder|changeme))$"
)
_TEMPLATE = re.compile(
    r"\$\{|\$[A-Z_][A-Z0-9_]*\b|\{\{|%\(|%s\b|^<.*>$|\{[A-Za-z_][^{}]*\}"
    r"|\b(?:os\.environ|getenv|process\.env|ENV\[)"
)
# URLs, paths and names made of words (`X-Auth-Token`, `prod/db/credentials`): not keys.
_NOT_A_KEY = re.compile(r"^[a-z][a-z0-9+.-]*://|^[A-Za-z]+(?:[-_./: ][A-Za-z]+)*$")
_PATH_START = re.compile(r"^[./~]")
KEY_RUN = 20  # a path's part this long and random is a key (base64 may start with "/")
# Bare values that are code, YAML syntax or a reference, not a literal.
_BARE_CODE = re.compile(r"[()\[\]{}<>]|^[$!&*|@%]")
_DOTTED = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$")
_UUID = re.compile(r"[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}", re.I)

# Source code: a bare word after `password =` is a variable there, only a quoted value
# can be a literal. Everything else (YAML, INI, TOML, .env, shell, docs) takes both.
_CODE_SUFFIXES = """\
.py .pyi .pyx .js .mjs .cjs .jsx .ts .tsx .mts .go .java .kt .kts .scala .groovy .rb
.rs .php .cs .c .h .cc .cpp .cxx .hpp .m .mm .swift .lua .pl .pm .r .jl .dart .ex .exs
.erl .hs .ml .clj .vue .svelte .cls .tf"""
CODE_SUFFIXES = frozenset(_CODE_SUFFIXES.split())


@functools.lru_cache(maxsize=4096)
def is_code(path: str) -> bool:
    """``path`` is source code (by its suffix)."""
    return PurePosixPath(path).suffix.lower() in CODE_SUFFIXES


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _classes(value: str) -> int:
    """How many of lower case, upper case, digits and other characters ``value`` has."""
    return sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )


def random_looking(value: str) -> bool:
    """A literal that could be a key: not a placeholder, template, URL, path or words,
    mixed characters, and high entropy."""
    if _PLACEHOLDER.match(value) or _TEMPLATE.search(value) or _NOT_A_KEY.search(value):
        return False
    if _path(value):
        return False
    return _classes(value) >= 2 and entropy(value) >= 3.5


def _path(value: str) -> bool:
    """A path (``/usr/lib/x``, ``./out.txt``, ``~/.config``): it starts as one, and none
    of its parts is a long random run — base64 keys may start with ``/`` too."""
    if not _PATH_START.match(value):
        return False
    return not any(
        len(part) >= KEY_RUN and _classes(part) >= 2 and entropy(part) >= 3.5
        for part in re.split(r"[/\\]", value)
    )


def stand_in(value: str) -> bool:
    """A mask, a placeholder (`changeme`, `<password>`) or a template (`${DB_PASSWORD}`)."""
    return bool(MASK_PREFIX in value or _PLACEHOLDER.match(value) or _TEMPLATE.search(value))


def _literal(value: str, *, bare: bool) -> bool:
    """A value that could be a credential, not code, a template or a stand-in."""
    from detect_secrets.filters.heuristic import is_sequential_string

    if MASK_PREFIX in value or not any(c.isalpha() for c in value):
        return False  # masked already; or digits and symbols only (`3600`, `*****`)
    if any(c.isspace() for c in value):
        return False  # a phrase or a message, not a key
    if _PLACEHOLDER.match(value) or _TEMPLATE.search(value) or _NOT_A_KEY.search(value):
        return False
    if _path(value):
        return False
    if bare and (_BARE_CODE.search(value) or _DOTTED.match(value)):
        return False  # `get_token()`, `os.environ["X"]`, `self.password`, `!vault`, `*alias`
    return not (is_sequential_string(value) or _UUID.search(value))


def _name_parts(text: str, start: int, rest: str) -> tuple[str, str]:
    """The parts of the name right before and right after its secret word (at ``start``)."""
    i = start
    while i > 0 and text[i - 1] in _NAME_CHARS and start - i < 64:
        i -= 1
    before = _PARTS.findall(text[i:start])
    after = _PARTS.findall(rest)
    return (before[-1].lower() if before else "", after[-1].lower() if after else "")


def _assignment_kind(m: re.Match[str], text: str, *, code: bool) -> str | None:
    bare = m.group("bare") is not None
    if bare and code:
        return None
    value = m.group("bare") if bare else m.group("quoted")
    before, after = _name_parts(text, m.start(), m.group("rest"))
    if after in _INERT_AFTER or before in _INERT_BEFORE:
        return None
    if not _literal(value, bare=bare):
        return None
    if _PASSWORD_WORDS.search(m.group("word")):
        # A password need not look random (`hunter2-ish`): long enough and not one
        # kind of character (`Password`, `postgres`).
        letters = any(c.isalpha() for c in value)
        others = any(not c.isalpha() for c in value)
        return "password" if len(value) >= 6 and letters and others else None
    return HIGH_ENTROPY if len(value) >= 16 and random_looking(value) else None


def assignments(text: str, *, code: bool = False, lowered: str | None = None) -> list[SecretMatch]:
    """Literal values given to secret-sounding names in ``text`` (``code``: quoted only)."""
    lowered = text.lower() if lowered is None else lowered
    if len(lowered) != len(text):
        lowered = text  # lower-casing moved the offsets (`İ`): look at every line
    found = []
    end = -1
    # Only the lines that hold a needle: the full expression is slow to try everywhere.
    for needle in _assignment_gate().finditer(lowered):
        if needle.start() < end:
            continue  # this line was read already
        start = text.rfind("\n", 0, needle.start()) + 1
        end = text.find("\n", needle.end())
        end = len(text) if end < 0 else end
        for m in _assignment().finditer(text, start, end):
            kind = _assignment_kind(m, text, code=code)
            if kind is not None:
                group = "bare" if m.group("bare") is not None else "quoted"
                found.append(SecretMatch(kind, m.start(group), m.end(group), "assignment"))
    return found


@functools.cache
def _assignment_gate() -> re.Pattern[str]:
    return re.compile(_trie(_ASSIGNMENT_NEEDLES), re.IGNORECASE)


# -- what a repository allows ----------------------------------------------------------


@functools.lru_cache(maxsize=64)
def allow_list(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    """The policy's ``secrets.allow`` compiled (validated when the policy was loaded)."""
    return tuple(re.compile(p) for p in patterns)


def allowed(value: str, allow: Sequence[re.Pattern[str]]) -> bool:
    """A known example, not a credential: one of ``allow`` matches the whole value."""
    return any(p.fullmatch(value) for p in allow)


def pragma(line: str, *, path: str = "", previous: str = "") -> bool:
    """The line says it holds no secret: detect-secrets' ``pragma: allowlist secret``
    comment on it, or ``pragma: allowlist nextline secret`` alone on ``previous``."""
    if "pragma" not in line and "pragma" not in previous:
        return False
    from detect_secrets.filters.allowlist import is_line_allowlisted
    from detect_secrets.util.code_snippet import CodeSnippet

    return bool(is_line_allowlisted(path, line, CodeSnippet([previous, line], 0, 1)))


# -- everything ---------------------------------------------------------------------------


def find(
    text: str,
    *,
    allow: Sequence[re.Pattern[str]] = (),
    with_assignments: bool = True,
    lowered: str | None = None,
) -> list[SecretMatch]:
    """Every credential in ``text``, non-overlapping (the first family in order wins),
    sorted; values ``allow`` matches whole are left out. Read as configuration: an
    unquoted value counts as an assignment (``assignments(code=True)`` for source)."""
    lowered = text.lower() if lowered is None else lowered
    candidates = formats(text, lowered=lowered)
    if with_assignments:
        candidates += assignments(text, lowered=lowered)
    found: list[SecretMatch] = []
    for m in candidates:
        if _MASKS.fullmatch(text, m.start, m.end):
            continue  # already masked: masking again would garble it
        if allow and allowed(text[m.start : m.end], allow):
            continue
        if not any(s.start < m.end and m.start < s.end for s in found):
            found.append(m)
    return sorted(found, key=lambda s: s.start)


_MASKS = re.compile(r"\s*(?:" + MASK.pattern + r"\s*)+")


@functools.cache
def _gates() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Two cheap tests a text must pass for any detector to find something in it: one of
    the needles (in the lower-cased text), or the shape of a token without one."""
    words = {n for det in _detectors() for n in det.needles} | {
        *_ASSIGNMENT_NEEDLES,
        MASK_PREFIX.lower(),
    }
    needles = re.compile(_trie(words))
    shapes = re.compile("|".join(f"(?:{d.pattern.pattern})" for d in _detectors() if not d.needles))
    return needles, shapes


def _trie(words: Iterable[str]) -> str:
    """A regular expression that finds any of ``words``, written as a trie (``a(?:ws|kia)``):
    three times faster than the plain alternation, which tries every word at every place."""
    root: dict[str, dict[str, Any]] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def branch(node: dict[str, Any]) -> str:
        if "" in node:
            return ""  # a word ends here: finding it is enough
        alts = [re.escape(ch) + branch(sub) for ch, sub in sorted(node.items())]
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return branch(root)


def worth_a_look(text: str, lowered: str) -> bool:
    """Whether any detector could match in ``text`` (most lines of code: no)."""
    needles, shapes = _gates()
    return bool(needles.search(lowered) or shapes.search(text))
