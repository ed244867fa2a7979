"""The policy engine's pure building blocks (app/policy/): globs, diff parsing, secrets,
dependencies and features, on diffs shaped like real `git diff` output.

A table row ending in Bug("...") is a defect found while writing these tests: a strict
xfail asserting the right behaviour, so it turns into an XPASS failure once fixed.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.git import git_env
from app.policy.deps import dependency_changes
from app.policy.diff import TRUNCATION_MARK, ChangedFile, parse_diff
from app.policy.evidence import SecretFound
from app.policy.features import Features, extract
from app.policy.globs import GlobSet, compile_glob
from app.policy.policy_model import load_policy
from app.policy.secrets import scan_added, scan_line
from app.sessions.policyfile import default_policy_text

POLICY = load_policy(default_policy_text())


class Bug(str):
    """The last value of a table row: the row shows a known defect."""


def bug(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"BUG: {reason}")


def cases(table: dict[str, tuple[Any, ...]]) -> list[Any]:
    """``id -> arguments`` rows as pytest params; a row ending in a Bug is a strict xfail."""
    return [
        pytest.param(*row[:-1], id=key, marks=bug(row[-1]))
        if isinstance(row[-1], Bug)
        else pytest.param(*row, id=key)
        for key, row in table.items()
    ]


def hand_diff(path: str, body: str) -> str:
    """A one-hunk `git diff` of a modified file; ``body``'s lines start with ' ', '-' or '+'."""
    lines = body.split("\n")
    old, new = sum(x[:1] in " -" for x in lines), sum(x[:1] in " +" for x in lines)
    head = (
        f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}"
    )
    return f"{head}\n@@ -1,{old} +1,{new} @@\n{body}\n"


def features(text: str) -> Features:
    return extract(parse_diff(text), POLICY)


def git_diff(root: Path, before: dict[str, str | bytes], edit: Callable[[Path], None]) -> str:
    """Commit ``before``, apply ``edit``, commit; `git diff --binary -M` between the two."""
    env = git_env(root)  # no global config: git's defaults (core.quotePath on)
    root.mkdir(parents=True)

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
        return done.stdout.decode()

    def write(r: Path) -> None:
        for name, content in before.items():
            (r / name).parent.mkdir(parents=True, exist_ok=True)
            (r / name).write_bytes(content if isinstance(content, bytes) else content.encode())

    git("init", "-q", "-b", "main")
    for step in (write, edit):
        step(root)
        git("add", "-A")
        git("-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm", "x")
    return git("diff", "--binary", "-M", "--no-color", "HEAD~1", "HEAD")


def move(root: Path, old: str, new: str) -> None:
    (root / new).parent.mkdir(parents=True, exist_ok=True)
    (root / old).rename(root / new)


# --- globs ------------------------------------------------------------------------------

GLOBS = [
    ("Dockerfile*", "Dockerfile", True), ("Dockerfile*", "deploy/Dockerfile.prod", True),
    ("*.pem", "certs/prod/server.pem", True), ("docs/**", "docs/guide/intro.md", True),
    ("docs/**", "src/docs/intro.md", False), ("/Makefile", "sub/Makefile", False),
    ("src/*.py", "src/app.py", True), ("src/*.py", "src/pkg/app.py", False),
    ("test_?.py", "tests/test_a.py", True), ("test_?.py", "test_ab.py", False),
    ("**/auth/**", "auth/views.py", True), ("**/auth/**", "src/app/auth/token.py", True),
    ("**/auth/**", "src/authority/token.py", False), ("k8s/", "k8s/prod/deploy.yaml", True),
    ("k8s/", "k8s", False), ("*.test.[jt]s", "web/app.test.ts", True),
    ("*.test.[jt]s", "web/app.test.cs", False), ("*.[!p]y", "tool.py", False),
    (".env", ".envrc", False), ("*.md", "README.MD", False),
]  # fmt: skip


@pytest.mark.parametrize(("pattern", "path", "hit"), GLOBS, ids=[f"{p}~{s}" for p, s, _ in GLOBS])
def test_glob(pattern: str, path: str, hit: bool) -> None:
    assert bool(compile_glob(pattern).match(path)) is hit


def test_globset_says_which_pattern_matched_first() -> None:
    globs, paths = GlobSet(["*.md", "docs/**"]), ("docs/a.md", "docs/a.png", "a.py")
    assert [globs.match(p) for p in paths] == ["*.md", "docs/**", None]
    assert not GlobSet([])


# --- diff -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def git_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ChangedFile]:
    before: dict[str, str | bytes] = {
        "src/app.py": "a\nb\nc\n", "src/moved.py": "line1\nline2\nline3\nline4\nline5\n",
        "notes/plain.txt": "unchanged content here\n", "old.txt": "del\n",
        "logo.png": b"x\x00y\x01", "run.sh": "#!/bin/sh\necho hi\n",
    }  # fmt: skip

    def edit(r: Path) -> None:
        (r / "src/app.py").write_text("a\nB\nc\nd\n")
        move(r, "src/moved.py", "src/renamed.py")
        (r / "src/renamed.py").write_text("line1\nline2\nline3\nline4\nline5x\n")
        move(r, "notes/plain.txt", "notes/moved.txt")
        (r / "old.txt").unlink()
        (r / "logo.png").write_bytes(b"x\x00z\x02\x03")
        (r / "new.bin").write_bytes(b"\x89PNG\x00\x01")
        (r / "run.sh").chmod(0o755)
        (r / "new.sh").write_text("#!/bin/sh\n")
        (r / "new.sh").chmod(0o755)

    parsed = parse_diff(git_diff(tmp_path_factory.mktemp("d") / "repo", before, edit))
    assert parsed.error is None
    return {f.path: f for f in parsed.files}


# path: (status, old_path, binary, old_mode, new_mode, made_executable, added, removed)
GIT_CASES = {
    "src/app.py": ("modified", None, False, None, None, False, ((2, "B"), (4, "d")), ("b",)),
    "src/renamed.py": ("renamed", "src/moved.py", False, None, None, False, ((5, "line5x"),),
                       ("line5",)),
    "notes/moved.txt": ("renamed", "notes/plain.txt", False, None, None, False, (), ()),
    "old.txt": ("removed", None, False, "100644", None, False, (), ("del",)),
    "logo.png": ("modified", None, True, None, None, False, (), ()),
    "new.bin": ("added", None, True, None, "100644", False, (), ()),
    "run.sh": ("modified", None, False, "100644", "100755", True, (), ()),
    "new.sh": ("added", None, False, None, "100755", True, ((1, "#!/bin/sh"),), ()),
}  # fmt: skip


@pytest.mark.parametrize("path", GIT_CASES, ids=str)
def test_parse_real_git_diff(git_files: dict[str, ChangedFile], path: str) -> None:
    f = git_files[path]
    got = (f.status, f.old_path, f.binary, f.old_mode, f.new_mode, f.made_executable)
    assert (*got, f.added_lines, f.removed_lines) == GIT_CASES[path]


def test_parse_real_git_diff_files(git_files: dict[str, ChangedFile]) -> None:
    assert sorted(git_files) == sorted(GIT_CASES)
    assert git_files["notes/moved.txt"].paths == ("notes/plain.txt", "notes/moved.txt")


def test_parse_quoted_path(tmp_path: Path) -> None:
    text = git_diff(tmp_path / "r", {"café.txt": "x\n"}, lambda r: move(r, "café.txt", "naïve.txt"))
    (f,) = parse_diff(text).files
    assert (f.old_path, f.path) == ("café.txt", "naïve.txt")


SHORT_HUNK = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n"
GARBAGE = {
    "prose": ("This is not a diff\nat all\n",),
    "hunk-short": (SHORT_HUNK,),
    "hunk-without-file": ("@@ -1 +1 @@\n-a\n+b\n",),
    "bad-hunk-header": ("--- a/x\n+++ b/x\n@@ -a,b +c @@\n-x\n",),
}


@pytest.mark.parametrize("text", cases(GARBAGE))
def test_parse_garbage_sets_error(text: str) -> None:
    parsed = parse_diff(text)
    assert parsed.error is not None
    assert parsed.error.startswith("the diff does not parse")
    assert parsed.files == ()


def test_parse_truncation_mark() -> None:
    text = hand_diff("a.py", " x\n-y\n+z") + "\n" + TRUNCATION_MARK + "\n"
    parsed = parse_diff(text)
    assert (parsed.truncated, parsed.error) == (True, None)
    assert [f.path for f in parsed.files] == ["a.py"]
    # The same words inside a changed line are content, not the session's mark.
    quoted = parse_diff(hand_diff("a.py", f"+MARK = '{TRUNCATION_MARK}'"))
    assert (quoted.truncated, quoted.error) == (False, None)
    cut = parse_diff(SHORT_HUNK + TRUNCATION_MARK + "\n")  # cut inside a hunk
    assert (cut.truncated, cut.files) == (True, ())
    assert cut.error is not None


def _unidiff_lines(text: str) -> list[tuple[str, tuple[object, ...]]] | None:
    """Each file's path and lines as unidiff's full parse reads them (its Line objects),
    or None where it raises: the reading parse_diff's own hunk reader must agree with."""
    from unidiff import PatchSet

    try:
        patch = PatchSet(text)
    except Exception:
        return None
    out = []
    for p in patch:
        added, removed, context = [], [], []
        for hunk in p:
            context += [hunk.section_header] if hunk.section_header else []
            for line in hunk:
                value = line.value.rstrip("\n")
                if line.is_added:
                    added.append((line.target_line_no, value))
                elif line.is_removed:
                    removed.append(value)
                elif line.is_context:
                    context.append(value)
        out.append((p.path, (tuple(added), tuple(removed), tuple(context))))
    return out


def test_hunks_read_as_unidiff_reads_them(tmp_path: Path) -> None:
    """parse_diff reads hunk bodies itself (unidiff only checks the structure: a third of
    the cost); on a real diff with many hunks, CRLF lines, blank lines, a missing final
    newline, and 600 seeded mutations of it, it finds exactly the lines unidiff's full
    parse finds, or reports an error where unidiff cannot read the text."""
    import random

    body = "\n".join(f"line {n}" for n in range(1, 80)) + "\n"
    before: dict[str, str | bytes] = {
        "a.py": "def f():\n" + body, "b.txt": b"one\r\ntwo\r\n\r\nthree\r\n",
        "c.md": "x\n\n\ny\n", "d.txt": "no newline",
    }  # fmt: skip

    def edit(r: Path) -> None:
        (r / "a.py").write_text(
            "def f():\n" + body.replace("line 5\n", "five\n\n").replace("line 60\n", "")
        )
        (r / "b.txt").write_bytes(b"one\r\n2\r\n\r\nthree\r\nfour")
        (r / "c.md").write_text("x\n\n+\n\ny\n-\n")
        (r / "d.txt").write_text("no newline, still")

    text = git_diff(tmp_path / "r", before, edit)
    rng = random.Random(20261127)
    lines = text.split("\n")
    variants = [text]
    for _ in range(600):
        mutated = list(lines)
        at = rng.randrange(len(mutated))
        pick = rng.randrange(4)
        if pick == 0:
            del mutated[at]
        elif pick == 1:
            mutated.insert(
                at,
                rng.choice(
                    [
                        "+x",
                        "-y",
                        " z",
                        "",
                        "\\ No newline at end of file",
                        "@@ -1 +1 @@",
                        "\r",
                        "@@ -3,2 +3,2 @@ def",
                    ]
                ),
            )
        elif pick == 2:
            mutated[at] = mutated[at][:1] + "\r" + mutated[at][1:]
        else:
            mutated[at] = ""
        variants.append("\n".join(mutated))
    agreed = errors = 0
    for variant in variants:
        parsed, reference = parse_diff(variant), _unidiff_lines(variant)
        if reference is None or parsed.error is not None:
            # Never more lenient than unidiff: its error is ours (or one of our own).
            assert parsed.error is not None, variant
            errors += 1
            continue
        got = [(f.path, (f.added_lines, f.removed_lines, f.context)) for f in parsed.files]
        assert got == reference, variant
        agreed += 1
    assert agreed > 200  # the mutations reach both outcomes
    assert errors > 100


# --- secrets ----------------------------------------------------------------------------

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def rand(n: int, seed: int = 7) -> str:
    """A fixed random-looking string: tokens are built, not written into the source."""
    return "".join(ALNUM[(i * i * seed + 3 * i + seed) % 62] for i in range(n))


def b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


JWT = f"{b64({'alg': 'RS256'})}.{b64({'iss': '12345', 'exp': 1700000600})}.{rand(43)}"
STATELESS_GHS = "ghs_" + ".".join([rand(36, 3), rand(300, 5), rand(177, 11)])  # 520 chars
GH, HEA, PK = "github-token", "high-entropy-assignment", "private-key"

SECRETS = {
    **{p: (f"  token: {p}_{rand(36)}", {GH}) for p in ("ghp", "gho", "ghu", "ghr", "ghs")},
    "ghs-stateless": (f'GH = "{STATELESS_GHS}"', {GH}),
    "ghp-assigned": (f'GITHUB_TOKEN = "ghp_{rand(36)}"', {GH, HEA}),
    "github-pat": (f"pat: github_pat_11{rand(20)}_{rand(59, 5)}", {GH}),
    "aws": ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", {"aws-access-key"}),
    "pem-header": ("-----BEGIN RSA PRIVATE KEY-----", {PK}),
    "pem-material": (f'KEY = "-----BEGIN PRIVATE KEY-----\\nMIIEv{rand(40)}"', {PK}),
    "jwt": (f"  id_token: {JWT}", {"jwt"}),
    "jwt-bearer": (f"Authorization: Bearer {JWT}", {"jwt"}),
    "mask": ('push = "https://x:[REDACTED:github-token]@github.com/o/r"', {GH}),
    "api-key": (f'api_key = "{rand(32, 13)}"', {HEA}),
    "client-secret-json": ('"client_secret": "GOCSPX-1a2B3c4D5e6F7g8H9i0JkLmNoP",', {HEA}),
    "url-password": ('url = "https://deploy:Xq7vR2mK9pLw4TzB@example.com/r.git"', {"url-password"}),
    "base64-plus": ('api_key = "dGhpcyBpcyBh+c2VjcmV0IGtleQab"', {HEA}),
    "django-key": ('SECRET_KEY = "django-insecure-8f#k2$z!q@x9w&v7m^b3n*c1p(r5t)y0u"', {HEA}),
}  # fmt: skip


@pytest.mark.parametrize(("line", "kinds"), cases(SECRETS))
def test_secret_found(line: str, kinds: set[str]) -> None:
    assert set(scan_line(line)) == kinds


NOT_SECRETS = {
    "environ": ('password = os.environ["DB_PASSWORD"]',),
    "getenv": ('token = os.getenv("GITHUB_TOKEN")',),
    "process-env": ("const token = process.env.GITHUB_TOKEN;",),
    "fstring-bearer": ('headers = {"Authorization": f"Bearer {token}"}',),
    "concat-bearer": ('headers["Authorization"] = "Bearer " + token',),
    "shell-bearer": ('-H "Authorization: Bearer $TOKEN"',),
    "changeme": ('password = "changeme"',),
    "angle-placeholder": ('api_key = "<your-token>"',),
    "dollar-brace": ('token = "${TOKEN}"',),
    "your-prefix": ('secret_key = "your-secret-key-here"',),
    "actions-secret": ("API_KEY: ${{ secrets.API_KEY }}",),
    "pem-startswith": ('if text.startswith("-----BEGIN RSA PRIVATE KEY-----"):',),
    "test-name": ("def test_token_is_masked(self):",),
    "form-lookup": ('csrf_token = request.form["csrf_token"]',),
    "pem-constant": ('PEM_HEADER = "-----BEGIN RSA PRIVATE KEY-----"',),
    "token-url": ('token_url = "https://github.com/login/oauth/access_token"',),
    "token-path": ('TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount/token"',),
    "key-path": ('private_key_path = "config/keys/private_key.pem"',),
}  # fmt: skip


@pytest.mark.parametrize("line", cases(NOT_SECRETS))
def test_not_a_secret(line: str) -> None:
    assert scan_line(line) == []


def test_scan_added_lines_and_dedup() -> None:
    token = f"ghp_{rand(36)}"
    lines = [(3, f"t: {token}  # AKIAIOSFODNN7EXAMPLE"), (4, "DEBUG = 0"), (9, f"{token} {token}")]
    assert scan_added("app/settings.py", lines) == [
        SecretFound(path="app/settings.py", line=3, kind=GH),
        SecretFound(path="app/settings.py", line=3, kind="aws-access-key"),
        SecretFound(path="app/settings.py", line=9, kind=GH),
    ]


# --- deps -------------------------------------------------------------------------------


def dep_summary(path: str, body: str) -> list[str]:
    """``+name new`` added, ``-name old`` removed, ``name old -> new``; ``lock:`` indirect."""
    out = []
    (f,) = parse_diff(hand_diff(path, body)).files
    for d in dependency_changes(f):
        assert d.manifest == path
        text = {"added": f"+{d.name} {d.new}", "removed": f"-{d.name} {d.old}"}
        out.append(("" if d.direct else "lock:") + text.get(d.kind, f"{d.name} {d.old} -> {d.new}"))
    return [x.strip() for x in out]


HASHED = "+cryptography==42.0.5 \\\n+    --hash=sha256:" + "a" * 64 + "\n+    # via -r in.txt"
PYPROJECT = ' [project]\n-description = "Widgets."\n+description = "W."\n readme = "README.md"\n'
PYPROJECT += ' dependencies = [\n-    "httpx>=0.26",\n+    "httpx>=0.27",\n     "pyyaml>=6",\n ]'
GO_MOD = " module example.com/m\n-go 1.21\n+go 1.22\n-require github.com/pkg/errors v0.9.0\n"
GO_MOD += "+require github.com/pkg/errors v0.9.1\n require (\n-\tgolang.org/x/net v0.20.0\n"
GO_MOD += "+\tgolang.org/x/net v0.21.0\n+\tgithub.com/stretchr/testify v1.9.0 // indirect\n )"
PKG_JSON = ' "dependencies": {\n-  "react": "^18.2.0",\n+  "react": "^18.3.1",\n'
PKG_JSON += '+  "left-pad": "1.3.0",\n+  "@types/node": "^20.0.0",\n },'
PKG_META = ' "name": "web",\n-"version": "1.0.0",\n+"version": "1.1.0",\n "engines": {\n'
PKG_META += '-  "node": ">=16"\n+  "node": ">=18"\n },\n "scripts": {\n+  "build": "tsc -p .",'
NPM = '+ "node_modules/@babel/core": {\n+   "version": "7.24.0",\n'
NPM += '- "node_modules/left-pad": {\n-   "version": "1.3.0",'
GO_SUM = "-github.com/pkg/errors v0.9.0 h1:a=\n-github.com/pkg/errors v0.9.0/go.mod h1:b=\n"
GO_SUM += "+github.com/pkg/errors v0.9.1 h1:c=\n+github.com/pkg/errors v0.9.1/go.mod h1:d=\n"
GO_SUM += "+golang.org/x/text v0.14.0/go.mod h1:e="
YARN = '+"@babel/core@^7.0.0", "@babel/core@^7.24.0":\n+  version "7.24.0"\n'
YARN += '+  resolved "https://registry.yarnpkg.com/@babel/core/-/core-7.24.0.tgz"'

HOMEPAGE = '+"homepage": "https://github.com/o/web#readme",'
DEPS = {
    "requirements": ("requirements.txt", "-requests==2.31.0\n-flask>=2.0\n+requests==2.32.3\n"
                     "+httpx[http2]>=0.27,<1",
                     ["-flask >=2.0", "+httpx >=0.27,<1", "requests ==2.31.0 -> ==2.32.3"]),
    "req-comments-options": ("requirements-dev.txt", "+# for a CVE\n+-r base.txt\n"
                             "+--index-url https://x/simple\n+-c constraints.txt\n"
                             "+numpy==1.26.4  # pinned\n+attrs ; python_version>'3'",
                             ["+attrs", "+numpy ==1.26.4"]),
    "pep503-same": ("requirements.txt", "-Foo_Bar==1.0\n+foo-bar==1.0", []),
    "pep503-changed": ("requirements.txt", "-Foo_Bar==1.0\n+foo.bar==1.1",
                       ["foo-bar ==1.0 -> ==1.1"]),
    "req-dir": ("requirements/dev.txt", "+pytest==8.0", ["+pytest ==8.0"]),
    "req-hashes": ("requirements.txt", HASHED, ["+cryptography ==42.0.5"]),
    "pep621": ("pyproject.toml", ' dependencies = [\n-  "httpx>=0.26",\n+  "httpx>=0.27",\n'
               '+  "PyYAML>=6",\n+  "rich",\n ]',
               ["httpx >=0.26 -> >=0.27", "+pyyaml >=6", "+rich"]),
    "pep621-not-deps": ("pyproject.toml", ' name = "w"\n-version = "0.1.0"\n+version = "0.2.0"\n'
                        '+requires-python = ">=3.11"', []),
    "pep621-description": ("pyproject.toml", PYPROJECT, ["httpx >=0.26 -> >=0.27"],
                           Bug("any key in a pyproject hunk near `dependencies` is a dependency")),
    "package-json": ("package.json", PKG_JSON,
                     ["+@types/node ^20.0.0", "+left-pad 1.3.0", "react ^18.2.0 -> ^18.3.1"]),
    "package-json-version-engines": ("package.json", PKG_META, []),
    "package-json-homepage": ("package.json", HOMEPAGE, []),
    "go-mod": ("go.mod", GO_MOD, ["github.com/pkg/errors v0.9.0 -> v0.9.1",
                                  "+github.com/stretchr/testify v1.9.0",
                                  "golang.org/x/net v0.20.0 -> v0.21.0"]),
    "not-a-manifest": ("src/app.py", "+requests==2.0", []),
    "poetry-lock": ("poetry.lock", '+[[package]]\n+name = "Charset_Normalizer"\n+version = "3.3.2"',
                    ["lock:+charset-normalizer 3.3.2"]),
    "package-lock-v3": ("package-lock.json", NPM,
                        ["lock:+@babel/core 7.24.0", "lock:-left-pad 1.3.0"]),
    "go-sum": ("go.sum", GO_SUM, ["lock:github.com/pkg/errors v0.9.0 -> v0.9.1",
                                  "lock:+golang.org/x/text v0.14.0"]),
    "yarn-lock": ("yarn.lock", YARN, ["lock:+@babel/core 7.24.0"]),
    "poetry-bump": ("poetry.lock", ' [[package]]\n name = "requests"\n-version = "2.31.0"\n'
                    '+version = "2.32.3"', ["lock:requests 2.31.0 -> 2.32.3"]),
    "uv-bump": ("uv.lock", ' [[package]]\n name = "idna"\n-version = "3.6"\n+version = "3.7"\n'
                ' source = { registry = "https://pypi.org/simple" }\n [[package]]\n'
                ' name = "six"\n version = "1.16.0"', ["lock:idna 3.6 -> 3.7"]),
    # git matched the new entry's version line with the old one's: it shows as context
    "uv-bump-and-add": ("uv.lock", ' [[package]]\n name = "aaa"\n-version = "1.0"\n'
                        '+version = "1.1"\n+\n+[[package]]\n+name = "bbb"\n version = "1.0"',
                        ["lock:aaa 1.0 -> 1.1", "lock:+bbb 1.0"]),
    "npm-bump": ("package-lock.json", '  "node_modules/lodash": {\n-   "version": "4.17.20",\n'
                 '+   "version": "4.17.21",', ["lock:lodash 4.17.20 -> 4.17.21"]),
    "yarn-bump": ("yarn.lock", ' lodash@^4.17.20:\n-  version "4.17.20"\n+  version "4.17.21"',
                  ["lock:lodash 4.17.20 -> 4.17.21"]),
    # setup.py, setup.cfg and PEP 735 (issue 32: a typosquat in install_requires went unseen)
    "setup-py-inline": ("setup.py", '-    install_requires=["requests>=2"],\n'
                        '+    install_requires=["requests>=2", "reqeusts"],',
                        ["+reqeusts"]),
    "setup-py-list": ("setup.py", '     install_requires=[\n         "requests>=2",\n'
                      '+        "reqeusts",\n     ],\n-    version="1.0",\n+    version="1.1",',
                      ["+reqeusts"]),
    "setup-py-extras": ("setup.py", '+    extras_require={"test": ["pytest>=8", "pytset"]},',
                        ["+pytest >=8", "+pytset"]),
    "setup-py-not-deps": ("setup.py", '-    version="1.0",\n+    version="1.1",\n'
                          '+    packages=["widgets"],', []),
    "setup-cfg": ("setup.cfg", " [options]\n install_requires =\n     requests>=2\n"
                  "+    reqeusts\n-python_requires = >=3.8\n+python_requires = >=3.9",
                  ["+reqeusts"]),
    "setup-cfg-extras": ("setup.cfg", " [options.extras_require]\n-test = pytest>=7\n"
                         "+test = pytest>=8", ["pytest >=7 -> >=8"]),
    "pep735-group": ("pyproject.toml", "+[dependency-groups]\n+dev = [\n+    \"pytset\",\n+]",
                     ["+pytset"]),
    "requirements-in": ("requirements-dev.in", "+reqeusts", ["+reqeusts"]),
    "npm-nested": ("package-lock.json", '+ "node_modules/a/node_modules/b": {\n+   "version": "2",',
                   ["lock:+b 2"], Bug("nested node_modules/a/node_modules/b entries are skipped")),
}  # fmt: skip


@pytest.mark.parametrize(("path", "body", "expected"), cases(DEPS))
def test_dependency_changes(path: str, body: str, expected: list[str]) -> None:
    assert dep_summary(path, body) == expected


# --- features ---------------------------------------------------------------------------

# path: (category, the protected pattern it matches)
PATHS = {
    "docs/x.md": ("docs", None), "README.md": ("docs", None), "src/app.py": ("source", None),
    "tests/test_api.py": ("tests", None), "pkg/thing_test.go": ("tests", None),
    "web/__tests__/app.js": ("tests", None), "Makefile": ("build", None),
    "tests/auth/test_login.py": ("security", None), "src/app/auth/token.py": ("security", None),
    "requirements.txt": ("dependencies", None), "web/package.json": ("dependencies", None),
    ".github/dependabot.yml": ("ci", None), ".github/ISSUE_TEMPLATE/bug.md": ("ci", None),
    ".github/workflows/ci.yml": ("ci", ".github/workflows/**"),
    "deploy/Dockerfile.prod": ("infra", "Dockerfile*"), "CODEOWNERS": ("source", "CODEOWNERS"),
    "docs/CODEOWNERS": ("docs", "CODEOWNERS"), "config/.env.local": ("source", ".env.*"),
    ".envrc": ("source", None), "certs/server.pem": ("source", "*.pem"),
    "src/app/secrets/db.py": ("source", "**/secrets/**"), "src/secret_store.py": ("security", None),
    "policies/default.yml": ("source", "policies/**"), "src/policies/x.py": ("source", None),
}  # fmt: skip


@pytest.mark.parametrize(("path", "expected"), PATHS.items(), ids=list(PATHS))
def test_category_and_protected(path: str, expected: tuple[str, str | None]) -> None:
    (f,) = features(hand_diff(path, "+x")).files
    assert (f.category, f.protected_by) == expected


def test_protected_quoted_path(tmp_path: Path) -> None:
    new = ".github/workflows/dé.yml"
    text = git_diff(tmp_path / "r", {"a.md": "x\n"}, lambda r: move(r, "a.md", new))
    (f,) = features(text).files
    assert (f.path, f.protected_by) == (new, ".github/workflows/**")


TEST_API = "import pytest\n\n\ndef test_get():\n    assert 1\n\n\ndef test_post():\n    assert 2\n"
GO_TEST = "package pkg\n\nfunc TestAlpha(t *testing.T) {}\n\nfunc TestBeta(t *testing.T) {}\n"
JS_TEST = 'describe("app", () => {\n  it("renders", () => {});\n  it("clicks", () => {});\n});\n'
NEW_TEST = 'import unittest\n\n\nclass T(unittest.TestCase):\n    @unittest.skip("later")\n'


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Features:
    before: dict[str, str | bytes] = {
        "docs/x.md": "# Doc\n", "tests/auth/test_login.py": "def test_login():\n    assert True\n",
        "tests/test_util.py": "def test_util():\n    assert 'a long enough body to pair'\n",
        "tests/test_api.py": TEST_API, "pkg/thing_test.go": GO_TEST, "web/app.test.js": JS_TEST,
        ".github/workflows/ci.yml": "name: ci\non: push\n",
        "ci/deploy.yml": "name: deploy\non: workflow_dispatch\n",
    }  # fmt: skip

    def edit(r: Path) -> None:
        (r / "docs/x.md").write_text("# Doc\nmore\n")
        (r / "tests/auth/test_login.py").unlink()
        move(r, "tests/test_util.py", "src/util_check.py")  # out of tests/: a deleted test
        (r / "tests/test_api.py").write_text(TEST_API.split("\n\n\ndef test_post")[0] + "\n")
        (r / "pkg/thing_test.go").write_text(GO_TEST.split("\n\nfunc TestBeta")[0] + "\n")
        (r / "web/app.test.js").write_text(JS_TEST.replace('it("clicks"', 'xit("later"'))
        (r / "tests/test_new.py").write_text(NEW_TEST + "    def test_a(self):\n        pass\n")
        move(r, ".github/workflows/ci.yml", "ci-old.yml")  # renamed away: still protected
        move(r, "ci/deploy.yml", ".github/workflows/deploy.yml")

    return features(git_diff(tmp_path_factory.mktemp("f") / "r", before, edit))


SCENARIO = {
    "tests_added": ["tests/test_new.py"],
    "tests_modified": ["pkg/thing_test.go", "tests/test_api.py", "web/app.test.js"],
    "tests_deleted": ["tests/auth/test_login.py", "tests/test_util.py"],
    "test_functions_removed": ["pkg/thing_test.go::TestBeta", "tests/test_api.py::test_post",
                               "web/app.test.js::clicks"],
    "skips_added": ["tests/test_new.py:5", "web/app.test.js:3"],
}  # fmt: skip


@pytest.mark.parametrize(("attribute", "expected"), SCENARIO.items(), ids=list(SCENARIO))
def test_scenario_tests(scenario: Features, attribute: str, expected: list[str]) -> None:
    assert sorted(getattr(scenario, attribute)) == expected


def test_scenario_files(scenario: Features) -> None:
    by_path = {f.path: (f.status, f.category, f.protected_by) for f in scenario.files}
    assert by_path["ci-old.yml"] == ("renamed", "source", ".github/workflows/**")
    assert by_path[".github/workflows/deploy.yml"] == ("renamed", "ci", ".github/workflows/**")
    assert by_path["tests/auth/test_login.py"] == ("removed", "security", None)
    assert by_path["docs/x.md"] == ("modified", "docs", None)
    stats = {k: (v.files, v.added, v.removed) for k, v in scenario.categories.items()}
    assert stats == {
        "ci": (1, 0, 0), "docs": (1, 1, 0), "security": (1, 0, 2), "source": (2, 0, 0),
        "tests": (4, 8, 7),
    }  # fmt: skip


REMOVED_FNS = {
    "py-body-changed": (" def test_a():\n-    assert 1\n+    assert 2", []),
    "py-signature": ("-def test_a(tmp_path):\n+def test_a(tmp_path, capsys):", []),
    "py-renamed": ("-def test_old():\n+def test_new():", ["test_old"]),
    "py-async": ("-async def test_io():\n-    pass", ["test_io"]),
    "go": ("-func TestGone(t *testing.T) {}", ["TestGone"]),
    "js-it": ("-  it('renders', () => {});", ["renders"]),
    "js-test": ("-  test(`loads`, async () => {});", ["loads"]),
    "js-skipped": ('-  it("renders", () => {});\n+  it.skip("renders", () => {});', []),
}  # fmt: skip


@pytest.mark.parametrize(("body", "names"), cases(REMOVED_FNS))
def test_test_functions_removed(body: str, names: list[str]) -> None:
    got = features(hand_diff("tests/test_x.py", body)).test_functions_removed
    assert got == tuple(f"tests/test_x.py::{name}" for name in names)


SKIPS = {
    "mark-skip": ('+@pytest.mark.skip(reason="flaky")\n def test_a():', [1]),
    "skipif": ('+@pytest.mark.skipif(sys.platform == "win32", reason="x")', [1]),
    "mark-xfail": ("+@pytest.mark.xfail\n def test_a():", [1]),
    "pytest.skip": (' def test_a():\n+    pytest.skip("no network")', [2]),
    "unittest.skip": ('+    @unittest.skip("later")', [1]),
    "skipTest": ('+        self.skipTest("slow")', [1]),
    "it.skip": ('-  it("a", () => {});\n+  it.skip("a", () => {});', [1]),
    "xit": ('-  it("a", () => {});\n+  xit("a", () => {});', [1]),
    "describe.skip": ('+describe.skip("suite", () => {});', [1]),
    "go-t.Skip": ('+    t.Skip("needs docker")', [1]),
    "just-words": ("+# we used to skip this one\n+def test_skip_blank_lines():", []),
    "moved": ('-@pytest.mark.skip(reason="x")\n-def test_a():\n-    pass\n def test_b():\n'
              '     pass\n+@pytest.mark.skip(reason="x")\n+def test_a():\n+    pass', []),
    "moved-plus-one": ("-@pytest.mark.skip\n def test_a():\n+@pytest.mark.skip\n"
                       "+@pytest.mark.xfail", [3]),
}  # fmt: skip


@pytest.mark.parametrize(("body", "lines"), cases(SKIPS))
def test_skips_added(body: str, lines: list[int]) -> None:
    got = features(hand_diff("tests/test_x.py", body)).skips_added
    assert got == tuple(f"tests/test_x.py:{n}" for n in lines)
