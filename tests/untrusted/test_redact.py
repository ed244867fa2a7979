"""app.redact: every credential shape masked, the text around it kept, nothing else touched.

Table-driven: each case is a realistic line (a log, a config file, a curl trace) and the
exact text that must come out. Hypothesis checks two properties over texts built from
the same pieces: masking twice changes nothing, and a known secret never survives.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from app.redact import find_secrets, mask, material, opaque_values, redact


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def compact_json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def stateless_installation_token() -> str:
    """A ``ghs_``-prefixed JWT of ~540 characters, as GitHub's new installation tokens are."""
    header = {"alg": "RS256", "typ": "JWT", "kid": "ghs-2026-05"}
    claims = {
        "iss": "Iv23li8kq",
        "sub": "installation:7",
        "iat": 1778800000,
        "exp": 1778803600,
        "inst": 7,
        "repo_ids": [123456789],
        "perms": {"contents": "write", "pull_requests": "write"},
    }
    signature = b"".join(hashlib.sha512(bytes([i])).digest() for i in range(3))
    parts = (compact_json(header), compact_json(claims), signature)
    return "ghs_" + ".".join(b64url(p) for p in parts)


BODY36 = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GHP, GHO, GHU, GHS, GHR = (f"{p}_{BODY36}" for p in ("ghp", "gho", "ghu", "ghs", "ghr"))
STATELESS = stateless_installation_token()
PAT = "github_pat_11ABCDEFG0123456789abc_" + "Zx9" * 19 + "Q0"  # 22 + "_" + 59
AKIA = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
BASIC = base64.b64encode(f"x-access-token:{GHS}".encode()).decode()


def pem(kind: str) -> str:
    label = f"{kind} PRIVATE KEY".strip()
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nVJTUt9Us8cKjMzEfYyjiWA4R4/M2bS1\n"
    return f"-----BEGIN {label}-----\n{body}-----END {label}-----"


GH = mask("github-token")


def test_the_token_fixtures_have_the_documented_shapes() -> None:
    assert len(BODY36) == 36
    assert 500 <= len(STATELESS) <= 560
    assert STATELESS.count(".") == 2
    assert "_" in STATELESS[4:]
    assert re.fullmatch(r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}", PAT)
    assert len(AWS_SECRET) == 40


MASKED = [
    pytest.param(f"token {GHP} in the log", f"token {GH} in the log", id="ghp"),
    pytest.param(f"oauth={GHO};", f"oauth={GH};", id="gho"),
    pytest.param(f"user token: {GHU}\n", f"user token: {GH}\n", id="ghu"),
    pytest.param(f"GITHUB_TOKEN={GHS} git fetch", f"GITHUB_TOKEN={GH} git fetch", id="ghs"),
    pytest.param(f"refresh ({GHR})", f"refresh ({GH})", id="ghr"),
    pytest.param(
        f"GITHUB_TOKEN={STATELESS}\nnext line", f"GITHUB_TOKEN={GH}\nnext line", id="ghs-stateless"
    ),
    pytest.param(
        json.dumps({"token": STATELESS, "expires_at": "2026-05-15T12:00:00Z"}),
        json.dumps({"token": GH, "expires_at": "2026-05-15T12:00:00Z"}),
        id="ghs-stateless-in-json",
    ),
    pytest.param(f"pat={PAT} ok", f"pat={GH} ok", id="github-pat"),
    pytest.param(
        f"aws_access_key_id = {AKIA}\nregion = eu-west-1",
        f"aws_access_key_id = {mask('aws-access-key')}\nregion = eu-west-1",
        id="aws-akia",
    ),
    pytest.param(
        "temporary key ASIAY34FZKBOKMUTVV7A, done",
        f"temporary key {mask('aws-access-key')}, done",
        id="aws-asia",
    ),
    pytest.param(
        f"[default]\naws_secret_access_key = {AWS_SECRET}\nregion = x",
        f"[default]\naws_secret_access_key = {mask('aws-secret-key')}\nregion = x",
        id="aws-secret-ini",
    ),
    pytest.param(
        f'export AWS_SECRET_ACCESS_KEY="{AWS_SECRET}"; make',
        f'export AWS_SECRET_ACCESS_KEY="{mask("aws-secret-key")}"; make',
        id="aws-secret-shell",
    ),
    pytest.param(
        f"AWS_SECRET_ACCESS_KEY: {AWS_SECRET}\n",
        f"AWS_SECRET_ACCESS_KEY: {mask('aws-secret-key')}\n",
        id="aws-secret-yaml",
    ),
    *(
        pytest.param(
            f"key file:\n{pem(kind)}\nafter",
            f"key file:\n{mask('private-key')}\nafter",
            id=f"pem-{kind}",
        )
        for kind in ("RSA", "EC", "OPENSSH", "", "ENCRYPTED", "DSA")
    ),
    pytest.param(
        "log line\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE",
        f"log line\n{mask('private-key')}",
        id="pem-cut-off",
    ),
    pytest.param(
        f"> GET /repo HTTP/1.1\n> Authorization: Basic {BASIC}\n> Host: github.com",
        f"> GET /repo HTTP/1.1\n> Authorization: {mask('authorization')}\n> Host: github.com",
        id="authorization-basic",
    ),
    pytest.param(
        "authorization: Bearer abc.def-ghi\r\nAccept: */*",
        f"authorization: {mask('authorization')}\r\nAccept: */*",
        id="authorization-lowercase",
    ),
    pytest.param(
        "AUTHORIZATION:token 0123456789abcdef\n",
        f"AUTHORIZATION:{mask('authorization')}\n",
        id="authorization-uppercase",
    ),
    pytest.param(
        "Proxy-Authorization: Basic Zm9vOmJhcg==\n",
        f"Proxy-Authorization: {mask('authorization')}\n",
        id="proxy-authorization",
    ),
    pytest.param(
        "sent Bearer abcdefgh.ijk-lmn_op~q+r/s== to the API",
        f"sent Bearer {mask('bearer')} to the API",
        id="bearer",
    ),
    pytest.param(
        "BEARER 0123456789abcdef, then", f"BEARER {mask('bearer')}, then", id="bearer-uppercase"
    ),
    pytest.param(
        "remote: https://x-access-token:s3cr3tT0k3nValue@github.com/o/r.git (fetch)",
        f"remote: https://x-access-token:{mask('url-password')}@github.com/o/r.git (fetch)",
        id="url-password",
    ),
    pytest.param(
        "DATABASE_URL=postgres://app:hunter2hunter2@db.internal:5432/app",
        f"DATABASE_URL=postgres://app:{mask('url-password')}@db.internal:5432/app",
        id="url-password-postgres",
    ),
    pytest.param(f"id_token={JWT}&state=1", f"id_token={mask('jwt')}&state=1", id="jwt"),
    pytest.param(
        f"step 1 ok\nclone with {GHP}\nAuthorization: Basic {BASIC}\nstep 2 ok {AKIA} done",
        f"step 1 ok\nclone with {GH}\nAuthorization: {mask('authorization')}\n"
        f"step 2 ok {mask('aws-access-key')} done",
        id="several",
    ),
]


@pytest.mark.parametrize(("text", "expected"), MASKED)
def test_credentials_are_masked_and_the_text_around_them_kept(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected  # a masked text is left alone


UNTOUCHED = [
    pytest.param("commit d74a54b0c6e1f2a3b4c5d6e7f8091a2b3c4d5e6f on main", id="git-sha"),
    pytest.param("short sha d74a54b", id="short-sha"),
    pytest.param("job 7c9e6679-7425-40de-944b-e07fc1f90ae7 queued", id="uuid"),
    pytest.param("ghost_writer = ghost_protocol", id="ghost_"),
    pytest.param("ghp_tooShort and gho_ and ghs_123", id="short-gh-prefixes"),
    pytest.param("github_pat_short", id="short-pat"),
    pytest.param("akiaiosfodnn7example and AKIAIOSFODNN7EXAMPL", id="not-aws-keys"),
    pytest.param("-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----", id="certificate"),
    pytest.param("-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----", id="public-key"),
    pytest.param("see https://github.com/octo-org/widgets/pull/12", id="url"),
    pytest.param("git@github.com:octo-org/widgets.git and ssh://git@github.com/o/r", id="ssh"),
    pytest.param("mail ops@example.com, http://localhost:8080/healthz", id="email-and-port"),
    pytest.param("the Authorization header is required", id="authorization-word"),
    pytest.param("Bearer abc", id="short-bearer"),
    pytest.param("aws_secret_access_key is not set", id="aws-secret-name"),
    pytest.param(
        "image@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", id="digest"
    ),
    pytest.param("eyJhbGciOiJIUzI1NiJ9 is only a header", id="jwt-header-only"),
    pytest.param("already [REDACTED:secret] and [REDACTED:github-token]", id="masks"),
    pytest.param("", id="empty"),
]


@pytest.mark.parametrize("text", UNTOUCHED)
def test_what_is_not_a_credential_is_left_alone(text: str) -> None:
    assert redact(text) == text
    assert find_secrets(text) == []


def test_find_secrets_points_at_the_secret_not_its_label() -> None:
    text = (
        f"Authorization:  Basic {BASIC}\n"
        f"https://x-access-token:pa55word@github.com {GHP} "
        f"aws_secret_access_key = '{AWS_SECRET}'"
    )
    found = find_secrets(text)
    assert [(m.kind, text[m.start : m.end]) for m in found] == [
        ("authorization", f"Basic {BASIC}"),
        ("url-password", "pa55word"),
        ("github-token", GHP),
        ("aws-secret-key", AWS_SECRET),
    ]


def test_known_secrets_are_masked_wherever_they_are() -> None:
    key = "sk-proj-Abc123_notAPatternAtAll"
    text = (
        f"llm key {key}\n"
        f'{{"api_key": "{key}"}}\n'
        f"https://api.example.com/?key={key}&x=1\n"
        f"glued{key}glued"
    )
    secret = mask("secret")
    assert redact(text, known=[key]) == (
        f"llm key {secret}\n"
        f'{{"api_key": "{secret}"}}\n'
        f"https://api.example.com/?key={secret}&x=1\n"
        f"glued{secret}glued"
    )


@pytest.mark.parametrize(
    ("text", "known", "expected"),
    [
        pytest.param(
            "a p@ss.w*rd(1)+ b pXss.wwrd1", ["p@ss.w*rd(1)+"], "a {s} b pXss.wwrd1", id="literal"
        ),
        pytest.param("x abcd1234 y abcd", ["abcd", "abcd1234"], "x {s} y {s}", id="longest-first"),
        pytest.param(f"t {GHS}", [GHS], "t {s}", id="known-wins-over-pattern"),
        pytest.param("pin abc and 12", ["abc", "12", ""], "pin abc and 12", id="too-short-ignored"),
        pytest.param("no secret here", [], "no secret here", id="none"),
    ],
)
def test_known_secret_edge_cases(text: str, known: list[str], expected: str) -> None:
    assert redact(text, known=known) == expected.format(s=mask("secret"))


# -- masks stay single, overlapping and quoted credentials are masked whole ------------

URL_USERS = [
    pytest.param(
        f"https://{GHP}@github.com/o/r.git",
        f"https://{GH}@github.com/o/r.git",
        [],
        id="token-as-url-user-twice",
    ),
    pytest.param(
        "remote https://s3cr3t-t0ken@example.com/x.git",
        f"remote https://{mask('secret')}@example.com/x.git",
        ["s3cr3t-t0ken"],
        id="known-secret-as-url-user",
    ),
]


@pytest.mark.parametrize(("text", "expected", "known"), URL_USERS)
def test_a_masked_url_user_stays_one_mask(text: str, expected: str, known: list[str]) -> None:
    assert redact(redact(text, known=known), known=known) == expected


def test_an_authorization_header_is_masked_whole() -> None:
    signature = "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024"
    header = (
        f"Authorization: AWS4-HMAC-SHA256 Credential={AKIA}/20260515/us-east-1/s3/aws4_request, "
        f"SignedHeaders=host;x-amz-date, Signature={signature}"
    )
    out = redact(header + "\nnext")
    assert signature not in out
    assert out.endswith("\nnext")


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        pytest.param(
            json.dumps({"aws_secret_access_key": AWS_SECRET, "region": "x"}),
            AWS_SECRET,
            id="aws-secret-in-json",
        ),
        pytest.param(
            repr({"Authorization": f"Basic {BASIC}", "Accept": "*/*"}),
            BASIC,
            id="authorization-in-a-headers-dict",
        ),
    ],
)
def test_credentials_under_quoted_keys_are_masked(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert "region" in out or "Accept" in out


def test_a_url_password_without_a_user_is_masked() -> None:
    text = "REDIS_URL=redis://:p4ssw0rd-redis@cache.internal:6379/0"
    assert redact(text) == f"REDIS_URL=redis://:{mask('url-password')}@cache.internal:6379/0"


# -- properties ----------------------------------------------------------------------

PEM_BLOCK = pem("RSA")
PIECES = [
    GHP,
    GHS,
    STATELESS,
    PAT,
    AKIA,
    AWS_SECRET,
    JWT,
    BASIC,
    PEM_BLOCK,
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNz",  # cut off
    "aws_secret_access_key =",
    "Bearer",
    "bearer",
    "postgres://app:hunter2@db:5432/x",
    "https://github.com/o/r",
    "ops@example.com",
    mask("secret"),
    mask("github-token"),
    "ghs_",
    "eyJ",
    "REDACTED",
]
# Shapes that once broke idempotence: a mask inside a URL's user or password part was
# masked again, and a header's value was masked again around an inner mask.
BUGGY_PIECES = [
    f"https://{GHP}@github.com/o/r",
    f"https://x-access-token:{GHP}@github.com/o/r",
    "Authorization:",
    "authorization: Basic",
]
SEPARATORS = [" ", "\n", "\t", ", ", "; ", " = ", ": ", '"', "'"]
PLAIN = st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")), max_size=8)


def texts(pieces: list[str]) -> st.SearchStrategy[str]:
    """Realistic-ish text: credential shapes and plain words, each followed by a separator."""
    piece = st.one_of(st.sampled_from(pieces), PLAIN)
    pairs = st.lists(st.tuples(piece, st.sampled_from(SEPARATORS)), max_size=12)
    return pairs.map(lambda items: "".join(p + s for p, s in items))


@pytest.mark.parametrize("end", ['"', "'", "`", ""])
def test_an_encoded_value_before_a_stray_quote_is_masked_at_once(end: str) -> None:
    """A bare configuration value that decodes to a credential is masked on the first
    pass even when a quote whose literal was cut off follows it (redact once is redact
    twice: nothing waits for a second pass)."""
    text = f"EXAMPLEKEY = {BASIC}{end}"
    assert redact(text) == f"EXAMPLEKEY = [REDACTED:github-token]{end}"


@given(texts(PIECES))
@example(f"x'KEY = {BASIC}\"")
def test_redact_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@given(texts(PIECES + BUGGY_PIECES))
@example(f"https://{GHP}@github.com/o/r ")
@example(f"Authorization: {GHP} and the rest\n")
def test_redact_is_idempotent_with_url_users_and_headers(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


MASK_TEXT = re.compile(r"\[REDACTED:[a-z-]+\]")


@given(
    before=texts(PIECES + BUGGY_PIECES),
    secret=st.text(min_size=4, max_size=40),
    after=texts(PIECES + BUGGY_PIECES),
)
def test_a_known_secret_never_survives(before: str, secret: str, after: str) -> None:
    out = redact(before + secret + after, known=[secret])
    # The masks' own words ("secret", "REDACTED", "token") are not the secret showing.
    assert all(secret not in piece for piece in MASK_TEXT.split(out))


GHP_BODY = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.mark.parametrize("depth", [1, 2])
def test_a_token_in_pieces_inside_a_json_string_is_masked(depth: int) -> None:
    """A tool call's arguments hold code as a JSON string: its quotes are escaped,
    and the pieces are read as the code reads them."""
    text = json.dumps({"content": f'T = "ghp_" + "{GHP_BODY}"\n'})
    for _ in range(depth - 1):
        text = json.dumps({"arguments": text})
    masked = redact(text)
    assert GHP_BODY not in masked
    assert "ghp_" not in masked
    assert "[REDACTED:github-token]" in masked
    assert masked.startswith('{"')  # the JSON around it kept


def test_opaque_values_are_masked_as_such_and_known_secrets_win() -> None:
    text = "k=abcdefghij1234 and s3cr3t-value here"
    assert redact(text, opaque=["abcdefghij1234"], known=["s3cr3t-value"]) == (
        "k=[REDACTED:opaque] and [REDACTED:secret] here"
    )


def test_material_is_every_literal_and_run_of_numbers_on_the_lines() -> None:
    lines = ["KEY = bytes([103, 104, 112, 95]).decode()", 'X = "ab" + "cd\\"ef"', "Y = 'zyxw'"]
    found = material(lines)
    assert "103, 104, 112, 95" in found
    assert 'cd\\"ef' in found  # as written, and as JSON writes that
    assert json.dumps('cd\\"ef')[1:-1] in found
    assert "zyxw" in found
    assert "ab" not in found  # too short to be material of anything


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '{"k": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"}',
            ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"],
        ),
        ("b = Zq8dW2kP0xV7nR4tL1mS", ["Zq8dW2kP0xV7nR4tL1mS"]),
        ('PARTS = ["ghp_", "Zq8dW2kP0xV7nR4tL1mS"]', ["Zq8dW2kP0xV7nR4tL1mS"]),
        ("CODES = [103, 104, 112, 95, 65, 49, 98, 50]", ["103, 104, 112, 95, 65, 49, 98, 50"]),
        ('name: "Patchwarden release notes"', []),
        ("timeout = 30", []),
        ("url: https://example.com/a/b/c/d/e", []),
        # base64 may start with "/": a key, though it starts as a path does
        (
            '{"k": "/gCRi5oj8qSMogCjxIKZKxZlRDey5MXO5wpAGqzz"}',
            ["/gCRi5oj8qSMogCjxIKZKxZlRDey5MXO5wpAGqzz"],
        ),
        ("cache: /tmp/pip-ephem-wheel-cache-h7fcqlhd/wheels/e2/2c", []),  # a path
        ("python = .venv/bin/python3.11", []),
    ],
)
def test_opaque_values_are_random_material_whatever_its_name(
    line: str, expected: list[str]
) -> None:
    assert opaque_values([line]) == expected
