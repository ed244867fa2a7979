"""The secret detector against a corpus: every credential rejected and masked, ordinary
code left alone, known examples allowed only where a repository says so.

The corpus is generated here from a seeded RNG in each vendor's format: the values are
shaped like credentials and work nowhere, and none is written into this file (secret
scanners that read repositories would stop at a realistic literal). Each value is put
in the places credentials end up: a Python assignment, YAML, ``.env``, JSON, INI, a
shell export and a command line (a header or a URL).

Every entry must be (1) found by ``scan_line`` and ``scan_added``, (2) a ``secret``
rule rejecting the change in the full score of a diff that adds it, and (3) gone from
what ``redact`` leaves of the text. Then: no false alarm on this repository's own code
or on the real projects' sdists the real-world suite caches; AWS's documented example
key is rejected by default and passes with an allow rule or the inline pragma; and a
session whose model writes a Slack token is rejected before anything is pushed, with
the token in no stored or shown text.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import random
import shutil
import string
import sys
import tarfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import credentials
from app.cli.demo import SAMPLE
from app.fixers.llm.scripted import ScriptedModel, tool
from app.git import Remote
from app.localforge import LocalForge
from app.policy.evidence import SecretFound
from app.policy.policy_model import PolicyError
from app.policy.score import score_diff, score_session
from app.policy.secrets import scan_added, scan_line
from app.redact import find_secrets, redact
from app.sessions.fix_context import FixContext
from app.sessions.result import FixOutcome
from app.sessions.session import SessionRunner
from app.sessions.task import SessionSpec, Task
from app.store import AuditQuery
from tests.conftest import CALC, CALC_TESTS, INSTALLATION, REPO, Harness, make_project
from tests.policy_helpers import default_policy, gdiff, policy_with, result_for

ROOT = Path(__file__).resolve().parents[2]
AWS_EXAMPLE = "AKIAIOSFODNN7EXAMPLE"  # AWS's documentation uses it: not a credential
SEED = 20261123

UPPER, LOWER, DIGITS = string.ascii_uppercase, string.ascii_lowercase, string.digits
ALNUM = UPPER + LOWER + DIGITS
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choices(alphabet, k=n))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(rng: random.Random, prefix: str = "") -> str:
    header = {"alg": "RS256", "typ": "JWT", "kid": pick(rng, HEX, 8)}
    claims = {"iss": pick(rng, ALNUM, 10), "sub": f"user:{rng.randint(1, 10**6)}"}
    claims |= {"exp": rng.randint(1_700_000_000, 1_900_000_000), "scope": "repo"}
    parts = [json.dumps(header).encode(), json.dumps(claims).encode(), rng.randbytes(64)]
    return prefix + ".".join(b64url(p) for p in parts)


def pem(rng: random.Random, label: str) -> str:
    body = base64.b64encode(rng.randbytes(180)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])


def pgp(rng: random.Random) -> str:
    body = base64.b64encode(rng.randbytes(180)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "\n".join(
        [
            "-----BEGIN PGP PRIVATE KEY BLOCK-----",
            "",
            *lines,
            "=" + pick(rng, ALNUM, 4),
            "-----END PGP PRIVATE KEY BLOCK-----",
        ]
    )


@dataclass(frozen=True)
class Vendor:
    """A credential format: what the scan must call it, how to make one, its usual name."""

    name: str
    kinds: frozenset[str]  # any of these is the right answer
    make: Callable[[random.Random], str]
    env_name: str
    # The part that must not survive redaction (default: the whole value).
    secret: Callable[[str], str] = lambda value: value


def k(*kinds: str) -> frozenset[str]:
    return frozenset(kinds)


def _digits(rng: random.Random, n: int) -> str:
    return str(rng.randint(1, 9)) + pick(rng, DIGITS, n - 1)


TOKENS = [
    Vendor(
        "github-classic",
        k("github-token"),
        lambda r: f"{r.choice(['ghp', 'gho', 'ghu', 'ghs', 'ghr'])}_{pick(r, ALNUM, 36)}",
        "GITHUB_TOKEN",
    ),
    Vendor(
        "github-fine-grained",
        k("github-token"),
        lambda r: f"github_pat_11{pick(r, UPPER + DIGITS, 20)}_{pick(r, ALNUM, 59)}",
        "GH_PAT",
    ),
    Vendor("github-stateless", k("github-token"), lambda r: jwt(r, "ghs_"), "GH_INSTALL_TOKEN"),
    Vendor(
        "aws-access-key",
        k("aws-access-key"),
        lambda r: r.choice(["AKIA", "ASIA"]) + pick(r, UPPER + DIGITS, 16),
        "AWS_ACCESS_KEY_ID",
    ),
    Vendor(
        "aws-secret-key",
        k("aws-secret-key"),
        lambda r: pick(r, ALNUM + "+/", 40),
        "AWS_SECRET_ACCESS_KEY",
    ),
    Vendor(
        "slack-bot",
        k("slack-token"),
        lambda r: f"xoxb-{_digits(r, 12)}-{_digits(r, 13)}-{pick(r, ALNUM, 24)}",
        "SLACK_BOT_TOKEN",
    ),
    Vendor(
        "slack-user",
        k("slack-token"),
        lambda r: f"xoxp-{_digits(r, 12)}-{_digits(r, 12)}-{_digits(r, 13)}-{pick(r, HEX, 32)}",
        "SLACK_USER_TOKEN",
    ),
    Vendor(
        "slack-app",
        k("slack-token"),
        lambda r: f"xapp-1-A{pick(r, UPPER + DIGITS, 10)}-{_digits(r, 13)}-{pick(r, HEX, 64)}",
        "SLACK_APP_TOKEN",
    ),
    Vendor(
        "slack-webhook",
        k("slack-webhook"),
        lambda r: (
            f"https://hooks.slack.com/services/T{pick(r, UPPER + DIGITS, 8)}"
            f"/B{pick(r, UPPER + DIGITS, 10)}/{pick(r, ALNUM, 24)}"
        ),
        "SLACK_WEBHOOK_URL",
        secret=lambda url: url.rsplit("/", 1)[1],
    ),
    Vendor(
        "stripe",
        k("stripe-key"),
        lambda r: f"{r.choice(['sk', 'rk'])}_live_{pick(r, ALNUM, r.choice([24, 99]))}",
        "STRIPE_SECRET_KEY",
    ),
    Vendor(
        "google", k("google-api-key"), lambda r: "AIza" + pick(r, URLSAFE, 35), "GOOGLE_API_KEY"
    ),
    Vendor(
        "openai-legacy",
        k("openai-key"),
        lambda r: f"sk-{pick(r, ALNUM, 20)}T3BlbkFJ{pick(r, ALNUM, 20)}",
        "OPENAI_API_KEY",
    ),
    Vendor(
        "openai-project",
        k("openai-key"),
        lambda r: f"sk-proj-{pick(r, URLSAFE, 74)}T3BlbkFJ{pick(r, URLSAFE, 74)}",
        "OPENAI_API_KEY",
    ),
    Vendor(
        "anthropic",
        k("anthropic-key"),
        lambda r: f"sk-ant-api03-{pick(r, URLSAFE, 93)}AA",
        "ANTHROPIC_API_KEY",
    ),
    Vendor("npm", k("npm-token"), lambda r: "npm_" + pick(r, ALNUM, 36), "NPM_TOKEN"),
    Vendor(
        "pypi",
        k("pypi-token"),
        lambda r: "pypi-AgEIcHlwaS5vcmc" + pick(r, URLSAFE, 150),
        "PYPI_API_TOKEN",
    ),
    Vendor(  # a short tail (issue 32): under the 70 characters detect-secrets asks for
        "pypi-short",
        k("pypi-token"),
        lambda r: "pypi-AgEIcHlwaS5vcmc" + pick(r, URLSAFE, 40),
        "TWINE_PASSWORD",
    ),
    Vendor("gitlab", k("gitlab-token"), lambda r: "glpat-" + pick(r, URLSAFE, 20), "GITLAB_TOKEN"),
    Vendor(
        "sendgrid",
        k("sendgrid-key"),
        lambda r: f"SG.{pick(r, URLSAFE, 22)}.{pick(r, URLSAFE, 43)}",
        "SENDGRID_API_KEY",
    ),
    Vendor(
        "twilio",
        k("twilio-key"),
        lambda r: r.choice(["AC", "SK"]) + pick(r, HEX, 32),
        "TWILIO_SID",
    ),
    Vendor(
        "digitalocean",
        k("digitalocean-token"),
        lambda r: f"{r.choice(['dop', 'doo', 'dor'])}_v1_{pick(r, HEX, 64)}",
        "DIGITALOCEAN_TOKEN",
    ),
    Vendor(
        "shopify",
        k("shopify-token"),
        lambda r: f"{r.choice(['shpat', 'shpss', 'shpca', 'shppa'])}_{pick(r, HEX, 32)}",
        "SHOPIFY_ACCESS_TOKEN",
    ),
    Vendor(
        "discord",
        k("discord-token"),
        lambda r: (
            f"{r.choice('MNO')}{pick(r, ALNUM, 23)}.{pick(r, ALNUM, 6)}.{pick(r, ALNUM + '_-', 27)}"
        ),
        "DISCORD_BOT_TOKEN",
    ),
    Vendor(
        "telegram",
        k("telegram-token"),
        lambda r: f"{_digits(r, 10)}:AA{pick(r, URLSAFE, 33)}",
        "TELEGRAM_BOT_TOKEN",
    ),
    Vendor(
        "azure-storage",
        k("azure-storage-key"),
        lambda r: (
            f"DefaultEndpointsProtocol=https;AccountName={pick(r, LOWER, 10)};"
            f"AccountKey={base64.b64encode(r.randbytes(64)).decode()};"
            "EndpointSuffix=core.windows.net"
        ),
        "AZURE_STORAGE_CONNECTION_STRING",
        secret=lambda s: s.split("AccountKey=")[1].split(";")[0],
    ),
    Vendor(
        "mailchimp",
        k("mailchimp-key"),
        lambda r: f"{pick(r, HEX, 32)}-us{r.randint(1, 21)}",
        "MAILCHIMP_API_KEY",
    ),
    Vendor(
        "square",
        k("square-token"),
        lambda r: r.choice([f"sq0csp-{pick(r, URLSAFE, 43)}", f"sq0atp-{pick(r, URLSAFE, 22)}"]),
        "SQUARE_SECRET",
    ),
    Vendor(
        "huggingface",
        k("huggingface-token"),
        lambda r: "hf_" + pick(r, UPPER + LOWER, 34),
        "HF_TOKEN",
    ),
    Vendor(
        "artifactory",
        k("artifactory-token"),
        lambda r: "AKCp" + pick(r, ALNUM, 69),
        "ARTIFACTORY_API_KEY",
    ),
    Vendor("jwt", k("jwt"), jwt, "ID_TOKEN"),
    Vendor(
        "database-url",
        k("url-password"),
        lambda r: (
            f"{r.choice(['postgresql', 'mysql', 'mongodb+srv', 'redis', 'amqp'])}://"
            f"{r.choice(['admin', 'app', 'svc'])}:{pick(r, ALNUM, r.randint(10, 24))}"
            f"@{r.choice(['db', 'db.internal', 'cluster0.example.net'])}/prod"
        ),
        "DATABASE_URL",
        secret=lambda url: url.split("://")[1].split(":")[1].split("@")[0],
    ),
    Vendor(
        "password",
        k("password"),
        lambda r: (
            r.choice(["hunter", "Summer", "orange", "Kx"])
            + f"{r.randint(2, 99)}-{pick(r, LOWER, 5)}"
        ),
        "DB_PASSWORD",
    ),
    Vendor(
        "api-key",
        k("high-entropy-assignment"),
        lambda r: pick(r, ALNUM, 32),
        "API_KEY",
    ),
]


@dataclass(frozen=True)
class Entry:
    vendor: str
    context: str
    kinds: frozenset[str]
    path: str
    text: str  # the added text (one or more lines)
    secret: str  # what must not survive redaction

    @property
    def id(self) -> str:
        return f"{self.vendor}-{self.context}"


def contexts(name: str, value: str) -> dict[str, tuple[str, str]]:
    """Where a credential ends up: (path, text) by context."""
    key = name.lower()
    return {
        "python": ("src/app/settings.py", f'{name} = "{value}"'),
        "yaml": ("deploy/values.yml", f"env:\n  {key}: {value}"),
        "dotenv": ("deploy/app.env", f"{name}={value}"),
        "json": ("config/app.json", f'{{\n  "{key}": "{value}",\n  "debug": false\n}}'),
        "ini": ("config/app.ini", f"[service]\n{key} = {value}"),
        "shell": ("scripts/deploy.sh", f"export {name}='{value}'"),
        "command": ("docs/usage.md", f"curl -H 'X-Api-Key: {value}' https://api.example.com/v1"),
    }


def build_corpus(seed: int = SEED) -> list[Entry]:
    rng = random.Random(seed)
    entries = []
    for vendor in TOKENS:
        for context, (path, _) in contexts(vendor.env_name, "").items():
            if context == "command" and vendor.name in ("aws-secret-key", "password"):
                continue  # only their names say what they are
            value = vendor.make(rng)  # a new value for each place
            _, text = contexts(vendor.env_name, value)[context]
            entries.append(
                Entry(vendor.name, context, vendor.kinds, path, text, vendor.secret(value))
            )
    # Annotated, as the issue found it passing.
    value = pick(rng, ALNUM, 40)
    entries.append(
        Entry(
            "api-key",
            "annotated",
            k("high-entropy-assignment"),
            "src/app/config.py",
            f'API_KEY: str = "{value}"',
            value,
        )
    )
    # Private keys: multi-line blocks in a Python string, a YAML block and escaped in JSON.
    for label in ("RSA PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "PRIVATE KEY", "PGP"):
        for context in ("python", "yaml", "json"):
            block = pgp(rng) if label == "PGP" else pem(rng, label)
            body = block.splitlines()[2]  # a line of key material
            if context == "python":
                path, text = "src/app/keys.py", f'KEY = """\n{block}\n"""'
            elif context == "yaml":
                indented = "\n".join("    " + line for line in block.splitlines())
                path, text = "deploy/values.yml", f"tls:\n  private_key: |\n{indented}"
            else:
                path, text = "config/app.json", json.dumps({"private_key": block + "\n"})
            vendor = "pgp-private-key" if label == "PGP" else "pem-private-key"
            entries.append(
                Entry(
                    vendor,
                    f"{label.split()[0].lower()}-{context}",
                    k("private-key"),
                    path,
                    text,
                    body,
                )
            )
    # The issue's own examples.
    entries += [
        Entry("database-url", "issue", k("url-password"), "config/app.ini",
              "[db]\nurl = postgresql://admin:pw@db/prod", "admin:pw@"),
        Entry("password", "issue-yaml", k("password"), "deploy/values.yml",
              "db:\n  password: hunter2-ish-value", "hunter2-ish-value"),
        Entry("password", "issue-ini", k("password"), "config/app.ini",
              "[smtp]\npassword = Tr0ub4dor-3", "Tr0ub4dor-3"),
    ]  # fmt: skip
    # Authorization headers with a literal value.
    for i in range(3):
        basic = base64.b64encode(f"deploy:{pick(rng, ALNUM, 20)}".encode()).decode()
        bearer = pick(rng, URLSAFE, 40)
        entries += [
            Entry("authorization", f"python-{i}", k("authorization"), "src/app/client.py",
                  f'HEADERS = {{"Authorization": "Basic {basic}"}}', basic),
            Entry("authorization", f"curl-{i}", k("authorization", "bearer"), "scripts/call.sh",
                  f'curl -H "Authorization: Bearer {bearer}" https://api.example.com', bearer),
        ]  # fmt: skip
    return entries + folded_entries(rng)


# Formats written in pieces or encoded, under neutral names (issue 32: `T = "ghp_" + "…"`
# merged itself): the scan folds the pieces and decodes before it looks.
FOLDED_VENDORS = [
    "github-classic",
    "github-fine-grained",
    "aws-access-key",
    "slack-bot",
    "stripe",
    "google",
    "openai-project",
    "anthropic",
    "npm",
    "pypi",
    "gitlab",
    "huggingface",
    "sendgrid",
]


def folded_entries(rng: random.Random) -> list[Entry]:
    out = []
    for vendor in [v for v in TOKENS if v.name in FOLDED_VENDORS]:
        for form in ("plus", "side-by-side", "join", "fstring", "lines"):
            value = vendor.make(rng)
            cut = max(4, len(value) // 3)
            a, b = value[:cut], value[cut:]
            text = {
                "plus": f'T = "{a}" + "{b}"',
                "side-by-side": f'T = ("{a}" "{b}")',
                "join": f'T = "".join(["{a}", "{b}"])',
                "fstring": f"T = f\"{a}{{'{b}'}}\"",
                "lines": f'T = "{a}" \\\n    "{b}"',
            }[form]
            out.append(Entry(vendor.name, f"folded-{form}", vendor.kinds, "src/tokens.py", text, b))
        for form in ("base64", "hex"):
            for context in ("python", "json", "yaml", "ini", "dotenv"):
                value = vendor.make(rng)
                raw = value.encode()
                encoded = base64.b64encode(raw).decode() if form == "base64" else raw.hex()
                text = {
                    "python": f'T = "{encoded}"',
                    "json": f'{{\n  "k": "{encoded}"\n}}',
                    "yaml": f"data:\n  k: {encoded}",
                    "ini": f"[x]\nk = {encoded}",
                    "dotenv": f"K={encoded}",
                }[context]
                path = {"python": "src/t.py", "json": "c.json", "yaml": "v.yml", "ini": "c.ini"}
                out.append(
                    Entry(
                        vendor.name,
                        f"{form}-{context}",
                        vendor.kinds,
                        path.get(context, "app.env"),
                        text,
                        encoded,
                    )
                )
    return out


CORPUS = build_corpus()


def test_the_corpus_is_large_and_varied() -> None:
    assert len(CORPUS) >= 150
    assert len({e.vendor for e in CORPUS}) >= 20
    assert len({e.id for e in CORPUS}) == len(CORPUS)
    assert build_corpus() == CORPUS  # seeded: the same values every run


def added(entry: Entry) -> list[tuple[int, str]]:
    return list(enumerate(entry.text.splitlines(), 1))


@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e.id)
def test_every_credential_is_found(entry: Entry) -> None:
    hits = scan_added(entry.path, added(entry))
    assert {h.kind for h in hits} & entry.kinds, hits
    if entry.context == "folded-lines":
        return  # no line alone holds it: the run of lines does (above)
    # One line alone, path unknown, says so too.
    kinds = {kind for _, line in added(entry) for kind in scan_line(line)}
    assert kinds & entry.kinds, kinds


@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e.id)
def test_every_credential_rejects_the_change(entry: Entry) -> None:
    s = score_diff(gdiff(entry.path, entry.text.splitlines(), new=True), default_policy())
    assert s.decision == "reject"
    assert "secret" in {r.rule for r in s.rules}


@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e.id)
def test_every_credential_is_masked(entry: Entry) -> None:
    masked = redact(entry.text)
    assert entry.secret not in masked
    assert redact(masked) == masked
    # And in the diff a session stores (what the policy reads again) it still rejects.
    unified = redact(gdiff(entry.path, entry.text.splitlines(), new=True))
    assert entry.secret not in unified


PIECES = [e.text for e in CORPUS[::7]] + ["password", "token:", "=", "Bearer", "://", "x@y"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from([" ", "\n", '"', ": "]))))
def test_masking_mixed_credentials_twice_changes_nothing(parts: list[tuple[str, str]]) -> None:
    text = "".join(p + sep for p, sep in parts)
    once = redact(text)
    assert redact(once) == once


def test_the_detectors_are_the_library_s_and_the_kinds_are_all_known() -> None:
    from detect_secrets.plugins.keyword import DENYLIST
    from detect_secrets.plugins.slack import SlackDetector

    detectors = credentials._detectors()
    words = credentials._assignment().pattern
    assert all(w.replace("_?", r"[_.\-]?") in words for w in DENYLIST)  # its keyword list
    assert any(d.pattern is SlackDetector.denylist[0] for d in detectors)
    kinds = {d.kind for d in detectors}
    assert kinds == credentials.FORMAT_KINDS | credentials.LITERAL_KINDS
    assert {e.vendor for e in CORPUS} >= {"slack-bot", "stripe", "google", "openai-legacy"}
    found = {h.kind for e in CORPUS for h in scan_added(e.path, added(e))}
    assert found >= credentials.FORMAT_KINDS  # every format detector is exercised


# -- what is not a credential ---------------------------------------------------------

NOT_CREDENTIALS = [
    'password = os.environ["DB_PASSWORD"]',
    "token = get_token()",
    "password: ${{ secrets.DB_PASSWORD }}",
    "  password: changeme",
    'api_key = "<your-key>"',
    "API_KEY=xxxxxxxxxxxxxxxx",
    "password: str",
    "def connect(host: str, password: str | None = None) -> None:",
    "    token: Optional[str] = None",
    "api_key: SecretStr = Field(default=...)",
    "self.password = password",
    "password_hash = make_password(raw)",
    'TOKEN_URL = "https://github.com/login/oauth/access_token"',
    "max_tokens = 4096",
    'tokenizer = "google-bert/bert-base-uncased"',
    'next_page_token = "CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA0ZHBmZjdmEgJpZA"',
    'csrf_token = "a8f5f167f44f4964e6c998dee827110c"',
    "secret_name: my-app-secret",
    "password_min_length: 12",
    "PASSWORD=$DB_PASSWORD",
    "export TOKEN=$(cat /run/secrets/token)",
    "password: !vault |",
    'DATABASE_URL = "postgresql://postgres:postgres@localhost:5432/test"',
    'url = f"postgresql://{user}:{password}@{host}/{db}"',
    "url: postgresql://user:PASSWORD@host/db",
    'headers = {"Authorization": f"Bearer {token}"}',
    'headers["Authorization"] = "Bearer " + token',
    "authorization: Optional[str] = None",
    'sha = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"',
    "digest = sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    'job = "7c9e6679-7425-40de-944b-e07fc1f90ae7"',
    'ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"',
]


@pytest.mark.parametrize("line", NOT_CREDENTIALS)
def test_code_templates_and_placeholders_are_not_credentials(line: str) -> None:
    for path in ("src/app/settings.py", "deploy/values.yml", ""):
        assert scan_line(line, path=path) == [], path


def test_a_bare_word_is_a_variable_in_code_and_a_value_in_config() -> None:
    line = "password = Tr0ub4dor-3"
    assert scan_line(line, path="src/app/settings.py") == []  # a variable named so
    assert scan_line(line, path="config/app.ini") == ["password"]
    assert scan_line(line, path="deploy/app.env") == ["password"]


# Files of this repository that hold fake credentials on purpose (tests of the detector,
# the redaction, the sandbox's refusals, fixtures for semgrep's secret rules, and the
# docs that show what is caught and how to allow AWS's example key).
ON_PURPOSE = {
    "docs/policy.md",
    "docs/decisions/008-secret-detection.md",
    "tests/policy/test_secret_corpus.py",
    "tests/untrusted/test_redact.py",
    "tests/policy/test_policy.py",
    "tests/policy/test_policy_parts.py",
    "tests/sessions/test_sandbox.py",
    "tests/cli/test_score_command.py",
    "tests/cli/test_cli.py",
    "tests/intake/test_alerts.py",
    "tests/fixers/test_fixer_llm.py",
    "tests/cli/test_run_command.py",
    # tokens written in pieces so that scanners pass them by: folded, they are tokens
    "tests/publish/test_audit_page.py",
    "tests/policy/test_learn.py",
    "tests/sessions/test_pkgconfig.py",
    "tests/fixtures/semgrep/secrets.env",
    "tests/fixtures/semgrep/secrets.keys.pem",
    "tests/fixtures/semgrep/secrets.strings.py",
}


def _flagged(files: dict[str, str]) -> dict[str, list[SecretFound]]:
    out = {}
    for path, text in files.items():
        hits = scan_added(path, enumerate(text.splitlines(), 1))
        if hits:
            out[path] = hits
    return out


def test_no_false_alarm_on_this_repository() -> None:
    files = {}
    for folder in ("app", "tests", "bench", "docs"):
        for p in sorted((ROOT / folder).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
                try:
                    files[str(p.relative_to(ROOT))] = p.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    continue
    assert len(files) > 100
    flagged = _flagged(files)
    assert set(flagged) <= ON_PURPOSE, {p: flagged[p] for p in set(flagged) - ON_PURPOSE}


@pytest.mark.realworld
def test_no_false_alarm_on_real_projects() -> None:
    from tests.realworld.conftest import sdist
    from tests.realworld.projects import PROJECTS

    files = {}
    for project in PROJECTS:
        with tarfile.open(sdist(project)) as tar:
            for member in tar.getmembers():
                handle = tar.extractfile(member) if member.isfile() else None
                if handle is not None:
                    try:
                        files[member.name] = handle.read().decode("utf-8")
                    except UnicodeDecodeError:
                        continue
    assert sum(len(t.splitlines()) for t in files.values()) > 30_000
    assert _flagged(files) == {}


# -- known examples: the allow list and the pragma ------------------------------------

EXAMPLE_DIFF = gdiff("tests/test_s3.py", [f'KEY_ID = "{AWS_EXAMPLE}"'], new=True)
ALLOW_EXAMPLE = f"secrets:\n  allow:\n    - {AWS_EXAMPLE}\n"


def _secret_rules(diff: str, yaml: str | None = None) -> list[str]:
    policy = default_policy() if yaml is None else policy_with(yaml)
    return [r.reason for r in score_diff(diff, policy).rules if r.rule == "secret"]


def test_aws_s_example_key_is_rejected_by_default_and_passes_with_an_allow_rule() -> None:
    assert _secret_rules(EXAMPLE_DIFF) == [
        "adds what looks like a credential (aws-access-key) at `tests/test_s3.py:1`"
    ]
    assert _secret_rules(EXAMPLE_DIFF, ALLOW_EXAMPLE) == []
    # The pattern must match the whole value: a prefix allows nothing.
    assert _secret_rules(EXAMPLE_DIFF, "secrets:\n  allow: [AKIA]\n") != []
    assert _secret_rules(EXAMPLE_DIFF, "secrets:\n  allow: ['AKIA[A-Z0-9]{9}EXAMPLE']\n") == []


def test_an_allow_rule_does_not_hide_a_real_key_beside_the_example() -> None:
    real = "AKIA" + pick(random.Random(SEED), UPPER + DIGITS, 16)
    diff = gdiff("tests/test_s3.py", [f'KEYS = ["{AWS_EXAMPLE}", "{real}"]'], new=True)
    assert len(_secret_rules(diff, ALLOW_EXAMPLE)) == 1


def test_a_bad_allow_pattern_is_refused_with_its_line() -> None:
    with pytest.raises(PolicyError) as err:
        policy_with("autonomy: review\nsecrets:\n  allow:\n    - ok\n    - '[unclosed'\n")
    assert err.value.source == ".github/patchwarden.yml"
    assert err.value.line == 5
    assert "is not a regular expression" in err.value.problem


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param([f'KEY_ID = "{AWS_EXAMPLE}"  # pragma: allowlist secret'], id="python"),
        pytest.param([f'const keyId = "{AWS_EXAMPLE}"; // pragma: allowlist secret'], id="js"),
        pytest.param([f"key_id: {AWS_EXAMPLE}  # pragma: whitelist secret"], id="old-spelling"),
        pytest.param(
            ["# pragma: allowlist nextline secret", f"KEY_ID = '{AWS_EXAMPLE}'"], id="next"
        ),
    ],
)
def test_the_inline_pragma_allows_a_line(lines: list[str]) -> None:
    path = "src/app/keys.js" if "const" in lines[0] else "src/app/keys.py"
    assert scan_added(path, list(enumerate(lines, 1))) == []
    assert _secret_rules(gdiff(path, lines, new=True)) == []


def test_the_pragma_allows_its_own_line_only() -> None:
    lines = [f'KEY_ID = "{AWS_EXAMPLE}"  # pragma: allowlist secret', f'OTHER = "{AWS_EXAMPLE}"']
    assert [h.line for h in scan_added("keys.py", list(enumerate(lines, 1)))] == [2]
    # nextline counts only on the line right before, alone.
    lines = ["X = 1  # pragma: allowlist nextline secret", f'KEY_ID = "{AWS_EXAMPLE}"']
    assert [h.line for h in scan_added("keys.py", list(enumerate(lines, 1)))] == [2]


@pytest.mark.parametrize(
    "line",
    [
        "headers: {authorization: 'Basic dXNlcjpwYXNzd29yZA=='}",  # a quote after the colon
        '{"authorization": "Basic dXNlcjpwYXNzd29yZA=="}',
    ],
)
def test_a_quoted_authorization_value_is_masked_and_found(line: str) -> None:
    assert "dXNlcjpwYXNzd29yZA" not in redact(line)
    assert scan_line(line, path="client.yml") == ["authorization"]


def test_a_fixer_s_own_pragma_waives_nothing() -> None:
    """The comment is a person's word about their own line. In a change a fixer wrote
    (an obeyed injection could add it), the credential still rejects the change; a
    person's diff scored with ``patchwarden score`` keeps the pragma."""
    token = "ghp_" + "Zq8" * 12
    lines = [f'TOKEN = "{token}"  # pragma: allowlist secret']
    diff = gdiff("app/client.py", lines)
    assert [h.kind for h in scan_added("app/client.py", [(1, lines[0])], pragma=False)] == [
        "github-token"
    ]
    fixed = score_session(result_for(diff, fixer="llm"), default_policy())
    assert fixed.decision == "reject"
    assert [r.rule for r in fixed.rules if r.rule == "secret"] == ["secret"]
    assert _secret_rules(diff) == []  # a person's change: the pragma counts


def test_redaction_masks_an_example_unless_told_it_is_one() -> None:
    text = f"key id {AWS_EXAMPLE} in the fixture"
    assert AWS_EXAMPLE not in redact(text)
    assert redact(text, allow=[AWS_EXAMPLE]) == text
    assert find_secrets(text, allow=["AKIA.*"]) == []


def test_a_stored_diff_with_an_allowed_example_scores_like_the_raw_one() -> None:
    """The session stores its diff masked; with the policy's allow list the example stays,
    so scoring the stored diff again does not find a mask where the example was."""
    policy = policy_with(ALLOW_EXAMPLE)
    stored = result_for(redact(EXAMPLE_DIFF, allow=policy.secrets.allow), policy=policy)
    assert AWS_EXAMPLE in stored.diff.unified
    assert "secret" not in {r.rule for r in score_session(stored, policy).rules}


# -- end to end: a session whose fixer writes a credential ------------------------------

SLACK = "xoxb-" + "-".join(
    [_digits(random.Random(SEED), 12), _digits(random.Random(SEED + 1), 13)]
) + "-" + pick(random.Random(SEED + 2), ALNUM, 24)  # fmt: skip


def sandboxed(test: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    test = pytest.mark.slow(test)
    no_bwrap = sys.platform != "linux" or shutil.which("bwrap") is None
    return pytest.mark.skipif(no_bwrap, reason="needs bubblewrap")(test)


@sandboxed
async def test_a_session_that_writes_a_token_is_rejected_and_the_token_stored_nowhere(
    runner: SessionRunner, tmp_path: Path
) -> None:
    project = make_project(
        tmp_path / "calc",
        {"calc.py": CALC, "test_calc.py": CALC_TESTS, ".github/patchwarden.yml": ALLOW_EXAMPLE},
    )

    async def fixer(ctx: FixContext) -> FixOutcome:
        fixed = CALC.replace("a - b", "a + b")
        (ctx.tree / "calc.py").write_text(f'{fixed}\nSLACK = "{SLACK}"\nKEY = "{AWS_EXAMPLE}"\n')
        return FixOutcome(fixer="llm", summary=f"fixed add() and set SLACK to {SLACK}")

    spec = SessionSpec(remote=Remote("octo/calc", str(project)), task=Task("Fix add()"))
    result = await runner.run(spec, fixer)
    assert result.status == "patched", result.error
    assert [(s.path, s.kind) for s in result.diff.secrets] == [("calc.py", "slack-token")]
    stored = json.dumps(result.to_json())
    assert SLACK not in stored
    assert "[REDACTED:slack-token]" in result.diff.unified
    assert AWS_EXAMPLE in result.diff.unified  # allowed by the base's policy: kept
    assert result.policy is not None
    s = score_session(result, policy_with(ALLOW_EXAMPLE))
    assert s.decision == "reject"
    assert [r.reason for r in s.rules if r.rule == "secret"] == [
        "adds what looks like a credential (slack-token) at `calc.py:8`"
    ]


@sandboxed
@pytest.mark.parametrize("split", [False, True], ids=["whole", "in-two-pieces"])
async def test_a_model_that_writes_a_slack_token_gets_no_pull_request_and_leaves_no_trace(
    make_pw: Callable[..., Awaitable[Harness]],
    forge: LocalForge,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    split: bool,
) -> None:
    """The whole pipeline: an issue, ``fix this``, a model that writes a Slack token into
    the code (and says it in its summary). Under autonomy automerge nothing is pushed or
    opened, the issue says why, and the token is in no stored or shown text. In two
    pieces (`'xoxb-…' + '…'`, issue 32: a GitHub token so written merged itself) too."""
    caplog.set_level(logging.DEBUG)
    config = "autonomy: automerge\nfixers:\n  llm:\n    strategy: agent\n"  # the script's
    await forge.push(REPO, {**SAMPLE, ".github/patchwarden.yml": config}, author="alice")
    forge.add_user(REPO, "alice", "maintain")
    old = "    return 'hello ' + name\n"
    written = f"'{SLACK[:10]}' + '{SLACK[10:]}'" if split else f"'{SLACK}'"
    script = [
        tool("edit", path="util.py", old=old, new=f"{old}\n\nSLACK_TOKEN = {written}\n"),
        tool("finish", summary=f"greet() can post to Slack now, with {written}"),
        tool("finish", summary=f"greet() can post to Slack now, with {written}"),  # again
    ]
    key = "sk-local-test-key-0123456789"
    async with ScriptedModel(script, api_key=key) as model:
        pw = await make_pw(
            workers=1, llm_model="scripted", llm_base_url=model.base_url, llm_api_key=key
        )
        await forge.install(INSTALLATION, by="alice")
        issue = forge.open_issue(REPO, "greet() should tell the team channel", author="alice")
        await forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="alice")
        await pw.settle(within=180, every_job=True)
    assert model.violations == []
    assert not forge.pulls(REPO)
    assert not [b for b in forge.repos[REPO].git.refs() if "patchwarden/" in b]  # no push
    said = [c.body for c in forge.comments(REPO, issue.number)]
    assert any("rejected" in c and "(slack-token) at `util.py:8`" in c for c in said), said
    (outcome,) = await pw.store.learning.find_outcomes(repo=REPO)
    assert (outcome.status, outcome.decision) == ("rejected", "reject")
    kept = await pw.store.queue.load_result(outcome.job_id)
    assert kept is not None
    stored = kept[1]
    assert "[REDACTED:slack-token]" in stored  # the diff and the summary, masked
    audit = [
        dataclasses.asdict(e) for e in await pw.store.journal.query_audit(AuditQuery(repo=REPO))
    ]
    texts = {
        "session result": stored,
        "audit log": json.dumps(audit),
        "comments": "\n".join(said),
        "issue": forge.issue(REPO, issue.number).body or "",
        "logs": caplog.text,
        "outcome": json.dumps(dataclasses.asdict(outcome)),
    }
    assert [name for name, text in texts.items() if SLACK in text] == []
    assert [name for name, text in texts.items() if SLACK[10:] in text] == []  # no piece


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_folded_and_encoded_credentials_are_found_whatever_the_values(seed: int) -> None:
    """The folded corpus is seeded; other seeds make other values (a base64 of an
    `AKIA…` id with no digit in it slipped past a first gate): every one is found and
    masked, in a diff too."""
    missed = []
    for entry in folded_entries(random.Random(seed)):
        kinds = {h.kind for h in scan_added(entry.path, added(entry))}
        if not kinds & entry.kinds or entry.secret in redact(entry.text):
            missed.append(entry.id)
    assert missed == []
