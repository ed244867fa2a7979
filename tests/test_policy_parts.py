"""The policy engine's pure building blocks (app/policy/): globs, diff parsing, secrets,
dependencies and features, on diffs shaped like real `git diff` output.

Cases marked xfail(strict=True, reason="BUG: ...") assert the right behaviour for a
defect found while writing these tests; they start failing (XPASS) once it is fixed.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from app.policy.config import load_policy
from app.policy.deps import dependency_changes
from app.policy.diff import TRUNCATION_MARK, ChangedFile, parse_diff
from app.policy.features import Features, extract
from app.policy.globs import GlobSet, compile_glob
from app.policy.secrets import SecretHit, scan_added, scan_line
from app.sessions.policyfile import default_policy_text
from app.sessions.workspace import git_env

POLICY = load_policy(default_policy_text())


def bug(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"BUG: {reason}")


def hand_diff(path: str, *lines: str, header: str = "") -> str:
    """A one-hunk `git diff` of a modified file; each line starts with ' ', '-' or '+'."""
    old = sum(line[:1] in " -" for line in lines)
    new = sum(line[:1] in " +" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n"
        f"+++ b/{path}\n@@ -1,{old} +1,{new} @@{header}\n" + "\n".join(lines) + "\n"
    )


def changed(path: str, *lines: str, header: str = "") -> ChangedFile:
    parsed = parse_diff(hand_diff(path, *lines, header=header))
    assert parsed.error is None
    (f,) = parsed.files
    return f


def features(*diffs: str) -> Features:
    return extract(parse_diff("".join(diffs)), POLICY)


def git_diff(root: Path, before: dict[str, str | bytes], edit: Callable[[Path], None]) -> str:
    """Commit ``before``, apply ``edit``, commit; `git diff --binary -M` between the two."""
    env = git_env(root)
    root.mkdir(parents=True)

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
        return done.stdout.decode()

    def write(r: Path) -> None:
        for name, content in before.items():
            (r / name).parent.mkdir(parents=True, exist_ok=True)
            data = content if isinstance(content, bytes) else content.encode()
            (r / name).write_bytes(data)

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


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("Dockerfile*", "Dockerfile", True),
        ("Dockerfile*", "deploy/Dockerfile.prod", True),
        ("*.pem", "certs/prod/server.pem", True),
        ("docs/**", "docs/guide/intro.md", True),
        ("docs/**", "src/docs/intro.md", False),
        ("/Makefile", "sub/Makefile", False),
        ("src/*.py", "src/app.py", True),
        ("src/*.py", "src/pkg/app.py", False),
        ("test_?.py", "tests/test_a.py", True),
        ("test_?.py", "test_ab.py", False),
        ("**/auth/**", "auth/views.py", True),
        ("**/auth/**", "src/app/auth/token.py", True),
        ("**/auth/**", "src/authority/token.py", False),
        ("k8s/", "k8s/prod/deploy.yaml", True),
        ("k8s/", "k8s", False),
        ("*.test.[jt]s", "web/app.test.ts", True),
        ("*.test.[jt]s", "web/app.test.cs", False),
        ("*.[!p]y", "tool.py", False),
        (".env", ".envrc", False),
        ("*.md", "README.MD", False),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_glob(pattern: str, path: str, expected: bool) -> None:
    assert bool(compile_glob(pattern).match(path)) is expected


def test_globset_says_which_pattern_matched_first() -> None:
    globs = GlobSet(["*.md", "docs/**"])
    assert (globs.match("docs/a.md"), globs.match("docs/a.png"), globs.match("a.py")) == (
        "*.md",
        "docs/**",
        None,
    )
    assert not GlobSet([])


# --- diff -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def git_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ChangedFile]:
    before: dict[str, str | bytes] = {
        "src/app.py": "a\nb\nc\n",
        "src/moved.py": "line1\nline2\nline3\nline4\nline5\n",
        "notes/plain.txt": "unchanged content here\n",
        "old.txt": "del\n",
        "logo.png": b"x\x00y\x01",
        "run.sh": "#!/bin/sh\necho hi\n",
    }

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

    text = git_diff(tmp_path_factory.mktemp("d") / "repo", before, edit)
    parsed = parse_diff(text)
    assert parsed.error is None
    return {f.path: f for f in parsed.files}


# path: (status, old_path, binary, old_mode, new_mode, made_executable, added, removed)
GIT_CASES = {
    "src/app.py": ("modified", None, False, None, None, False, ((2, "B"), (4, "d")), ("b",)),
    "src/renamed.py": (
        "renamed", "src/moved.py", False, None, None, False, ((5, "line5x"),), ("line5",)
    ),
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


def test_parse_real_git_diff_has_exactly_the_changed_files(
    git_files: dict[str, ChangedFile],
) -> None:
    assert sorted(git_files) == sorted(GIT_CASES)
    assert git_files["notes/moved.txt"].paths == ("notes/plain.txt", "notes/moved.txt")


@bug("git quotes non-ASCII paths (core.quotePath, on by default); parse_diff keeps the quotes")
def test_parse_quoted_path(tmp_path: Path) -> None:
    text = git_diff(tmp_path / "r", {"café.txt": "x\n"}, lambda r: move(r, "café.txt", "naïve.txt"))
    (f,) = parse_diff(text).files
    assert (f.old_path, f.path) == ("café.txt", "naïve.txt")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("This is not a diff\nat all\n", marks=bug("plain text: no error"), id="prose"),
        pytest.param("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n", id="hunk-short"),
        pytest.param("@@ -1 +1 @@\n-a\n+b\n", id="hunk-without-file"),
        pytest.param(
            "--- a/x\n+++ b/x\n@@ -a,b +c @@\n-secret\n",
            marks=bug("an unreadable hunk header drops its lines, no error"),
            id="bad-hunk-header",
        ),
    ],
)
def test_parse_garbage_sets_error(text: str) -> None:
    parsed = parse_diff(text)
    assert parsed.error is not None
    assert parsed.error.startswith("the diff does not parse")
    assert parsed.files == ()


def test_parse_truncation_mark() -> None:
    first = hand_diff("a.py", " x", "-y", "+z")
    parsed = parse_diff(first + TRUNCATION_MARK + "\n" + hand_diff("b.py", "+w"))
    assert (parsed.truncated, parsed.error) == (True, None)
    assert [f.path for f in parsed.files] == ["a.py"]
    cut = parse_diff("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n" + TRUNCATION_MARK + "\n")
    assert cut.truncated and cut.error is not None


# --- secrets ----------------------------------------------------------------------------

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def rand(n: int, seed: int = 7) -> str:
    """A fixed random-looking string: tokens are built, not written into the source."""
    return "".join(ALNUM[(i * i * seed + 3 * i + seed) % 62] for i in range(n))


def b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


JWT = f"{b64({'alg': 'RS256', 'typ': 'JWT'})}.{b64({'iss': '12345', 'exp': 1700000600})}.{rand(43)}"
STATELESS_GHS = "ghs_" + ".".join([rand(36, 3), rand(300, 5), rand(177, 11)])
GH, HEA, PK = "github-token", "high-entropy-assignment", "private-key"


@pytest.mark.parametrize(
    ("line", "kinds"),
    [
        pytest.param(f"  token: ghp_{rand(36)}", {GH}, id="ghp"),
        pytest.param(f"  token: gho_{rand(36)}", {GH}, id="gho"),
        pytest.param(f"  token: ghu_{rand(36)}", {GH}, id="ghu"),
        pytest.param(f"  token: ghr_{rand(36)}", {GH}, id="ghr"),
        pytest.param(f"  token: ghs_{rand(36)}", {GH}, id="ghs-classic"),
        pytest.param(f'GH = "{STATELESS_GHS}"', {GH}, id="ghs-stateless-520"),
        pytest.param(f'GITHUB_TOKEN = "ghp_{rand(36)}"', {GH, HEA}, id="ghp-assigned"),
        pytest.param(f"pat: github_pat_11{rand(20)}_{rand(59, 5)}", {GH}, id="github-pat"),
        pytest.param("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", {"aws-access-key"}, id="aws"),
        pytest.param("-----BEGIN RSA PRIVATE KEY-----", {PK}, id="pem-header-alone"),
        pytest.param(f'KEY = "-----BEGIN PRIVATE KEY-----\\nMIIEv{rand(40)}"', {PK}, id="pem"),
        pytest.param(f"Authorization: Bearer {JWT}", {"jwt", "authorization"}, id="jwt-header"),
        pytest.param(f"  id_token: {JWT}", {"jwt"}, id="jwt"),
        pytest.param('push = "https://x:[REDACTED:github-token]@github.com/o/r"', {GH}, id="mask"),
        pytest.param(f'api_key = "{rand(32, 13)}"', {HEA}, id="api-key"),
        pytest.param('"client_secret": "GOCSPX-1a2B3c4D5e6F7g8H9i0JkLmNoP",', {HEA}, id="json"),
        pytest.param('url = "https://deploy:Xq7vR2mK9pLw4TzB@example.com/r.git"', {"url-password"}),
        pytest.param(
            'api_key = "dGhpcyBpcyBh+c2VjcmV0IGtleQab"',
            {HEA},
            marks=bug("a '+' inside a literal is read as concatenation: base64 secrets missed"),
            id="base64-plus",
        ),
        pytest.param(
            'SECRET_KEY = "django-insecure-8f#k2$z!q@x9w&v7m^b3n*c1p(r5t)y0u"',
            {HEA},
            marks=bug("$ ( ) in a literal read as a template: Django keys missed"),
            id="django-key",
        ),
    ],
)
def test_secret_found(line: str, kinds: set[str]) -> None:
    assert set(scan_line(line)) == kinds


@pytest.mark.parametrize(
    "line",
    [
        pytest.param('password = os.environ["DB_PASSWORD"]', id="environ"),
        pytest.param('token = os.getenv("GITHUB_TOKEN")', id="getenv"),
        pytest.param("const token = process.env.GITHUB_TOKEN;", id="process-env"),
        pytest.param('headers = {"Authorization": f"Bearer {token}"}', id="fstring-bearer"),
        pytest.param('headers["Authorization"] = "Bearer " + token', id="concat-bearer"),
        pytest.param('-H "Authorization: Bearer $TOKEN"', id="shell-bearer"),
        pytest.param('password = "changeme"', id="changeme"),
        pytest.param('api_key = "<your-token>"', id="angle-placeholder"),
        pytest.param('token = "${TOKEN}"', id="dollar-brace"),
        pytest.param('secret_key = "your-secret-key-here"', id="your-"),
        pytest.param("API_KEY: ${{ secrets.API_KEY }}", id="actions-secret"),
        pytest.param('if text.startswith("-----BEGIN RSA PRIVATE KEY-----"):', id="pem-startswith"),
        pytest.param("def test_token_is_masked(self):", id="test-name"),
        pytest.param('csrf_token = request.form["csrf_token"]', id="form-lookup"),
        pytest.param(
            'PEM_HEADER = "-----BEGIN RSA PRIVATE KEY-----"',
            marks=bug("a string holding only the PEM header is read as a key"),
            id="pem-constant",
        ),
        pytest.param(
            'token_url = "https://github.com/login/oauth/access_token"',
            marks=bug("a URL assigned to a *token* name is a high-entropy secret"),
            id="token-url",
        ),
        pytest.param(
            'TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount/token"',
            marks=bug("a file path assigned to a *token* name is a high-entropy secret"),
            id="token-path",
        ),
        pytest.param(
            'private_key_path = "config/keys/private_key.pem"',
            marks=bug("a file path assigned to a *private_key* name is a secret"),
            id="key-path",
        ),
    ],
)
def test_not_a_secret(line: str) -> None:
    assert scan_line(line) == []


def test_scan_added_lines_and_dedup() -> None:
    token = f"ghp_{rand(36)}"
    lines = [
        (3, f"t: {token}  # AKIAIOSFODNN7EXAMPLE"),
        (4, "DEBUG = False"),
        (9, f"{token} {token}"),
    ]
    assert scan_added("app/settings.py", lines) == [
        SecretHit("app/settings.py", 3, GH),
        SecretHit("app/settings.py", 3, "aws-access-key"),
        SecretHit("app/settings.py", 9, GH),
    ]


# --- deps -------------------------------------------------------------------------------

HASHED = ["+cryptography==42.0.5 \\", "+    --hash=sha256:" + "a" * 64, "+    # via -r in.txt"]
PYPROJECT = [" [project]", ' name = "widgets"', '-description = "Widgets."', '+description = "W."']
PYPROJECT += [' readme = "README.md"', " dependencies = [", '-    "httpx>=0.26",']
PYPROJECT += ['+    "httpx>=0.27",', '     "pyyaml>=6",', " ]"]


@pytest.mark.parametrize(
    ("path", "lines", "expected"),
    [
        pytest.param(
            "requirements.txt",
            ["-requests==2.31.0", "-flask>=2.0", "+requests==2.32.3", "+httpx[http2]>=0.27,<1"],
            [("flask", "removed", ">=2.0", None), ("httpx", "added", None, ">=0.27,<1"),
             ("requests", "changed", "==2.31.0", "==2.32.3")],
            id="requirements",
        ),
        pytest.param(
            "requirements-dev.txt",
            ["+# pinned for a CVE", "+-r requirements.txt", "+--index-url https://pypi.org/simple",
             "+-c constraints.txt", "+numpy==1.26.4  # pinned", "+attrs ; python_version>'3'"],
            [("attrs", "added", None, ""), ("numpy", "added", None, "==1.26.4")],
            id="requirements-comments-options",
        ),
        pytest.param("requirements.txt", ["-Foo_Bar==1.0", "+foo-bar==1.0"], [], id="pep503-same"),
        pytest.param(
            "requirements.txt", ["-Foo_Bar==1.0", "+foo.bar==1.1"],
            [("foo-bar", "changed", "==1.0", "==1.1")], id="pep503-changed",
        ),
        pytest.param(
            "requirements/dev.txt", ["+pytest==8.0"], [("pytest", "added", None, "==8.0")],
            marks=bug("requirements/*.txt (a default dependencies glob) is not read"), id="req-dir",
        ),
        pytest.param(
            "requirements.txt", HASHED, [("cryptography", "added", None, "==42.0.5")],
            marks=bug("pip-compile --generate-hashes lines (trailing '\\') are skipped"),
            id="hashes",
        ),
        pytest.param(
            "pyproject.toml",
            [" dependencies = [", '-    "httpx>=0.26",', '+    "httpx>=0.27",', '+    "PyYAML>=6",',
             '+    "rich",', " ]"],
            [("httpx", "changed", ">=0.26", ">=0.27"), ("pyyaml", "added", None, ">=6"),
             ("rich", "added", None, "")],
            id="pep621",
        ),
        pytest.param(
            "pyproject.toml",
            [' name = "widgets"', '-version = "0.1.0"', '+version = "0.2.0"',
             '-requires-python = ">=3.10"', '+requires-python = ">=3.11"'],
            [], id="pep621-not-deps",
        ),
        pytest.param(
            "pyproject.toml", PYPROJECT, [("httpx", "changed", ">=0.26", ">=0.27")],
            marks=bug("any [project] key in a hunk near `dependencies` is a dependency"),
            id="pep621-description",
        ),
        pytest.param(
            "package.json",
            ['   "dependencies": {', '-    "react": "^18.2.0",', '+    "react": "^18.3.1",',
             '+    "left-pad": "1.3.0",', '+    "@types/node": "^20.0.0",', "   },"],
            [("@types/node", "added", None, "^20.0.0"), ("left-pad", "added", None, "1.3.0"),
             ("react", "changed", "^18.2.0", "^18.3.1")],
            id="package-json",
        ),
        pytest.param(
            "package.json",
            ['   "name": "web",', '-  "version": "1.0.0",', '+  "version": "1.1.0",',
             '   "engines": {', '-    "node": ">=16"', '+    "node": ">=18"', "   },",
             '   "scripts": {', '+    "build": "tsc -p .",'],
            [], id="package-json-version-engines",
        ),
        pytest.param(
            "package.json",
            ['   "name": "web",', '+  "homepage": "https://github.com/o/web#readme",'], [],
            marks=bug("a URL-valued package.json field is a dependency"), id="package-json-homepage",
        ),
        pytest.param(
            "go.mod",
            [" module example.com/m", "-go 1.21", "+go 1.22",
             "-require github.com/pkg/errors v0.9.0", "+require github.com/pkg/errors v0.9.1",
             " require (", "-\tgolang.org/x/net v0.20.0", "+\tgolang.org/x/net v0.21.0",
             "+\tgithub.com/stretchr/testify v1.9.0 // indirect", " )"],
            [("github.com/pkg/errors", "changed", "v0.9.0", "v0.9.1"),
             ("github.com/stretchr/testify", "added", None, "v1.9.0"),
             ("golang.org/x/net", "changed", "v0.20.0", "v0.21.0")],
            id="go-mod",
        ),
        pytest.param("src/app.py", ["+requests==2.0"], [], id="not-a-manifest"),
    ],
)  # fmt: skip
def test_direct_dependencies(path: str, lines: list[str], expected: list[tuple]) -> None:
    deps = dependency_changes(changed(path, *lines))
    assert [(d.name, d.kind, d.old, d.new) for d in deps] == expected
    assert all(d.direct and d.manifest == path for d in deps)


@pytest.mark.parametrize(
    ("path", "lines", "expected"),
    [
        pytest.param(
            "poetry.lock",
            ["+[[package]]", '+name = "Charset_Normalizer"', '+version = "3.3.2"', '+description = ""'],
            [("charset-normalizer", "added", None, "3.3.2")], id="poetry-lock",
        ),
        pytest.param(
            "package-lock.json",
            ['+    "node_modules/@babel/core": {', '+      "version": "7.24.0",',
             '-    "node_modules/left-pad": {', '-      "version": "1.3.0",'],
            [("@babel/core", "added", None, "7.24.0"), ("left-pad", "removed", "1.3.0", None)],
            id="package-lock-v3",
        ),
        pytest.param(
            "go.sum",
            ["-github.com/pkg/errors v0.9.0 h1:abc=", "-github.com/pkg/errors v0.9.0/go.mod h1:d=",
             "+github.com/pkg/errors v0.9.1 h1:ghi=", "+github.com/pkg/errors v0.9.1/go.mod h1:j=",
             "+golang.org/x/text v0.14.0/go.mod h1:xyz="],
            [("github.com/pkg/errors", "changed", "v0.9.0", "v0.9.1"),
             ("golang.org/x/text", "added", None, "v0.14.0")],
            id="go-sum",
        ),
        pytest.param(
            "yarn.lock",
            ['+"@babel/core@^7.0.0", "@babel/core@^7.24.0":', '+  version "7.24.0"',
             '+  resolved "https://registry.yarnpkg.com/@babel/core/-/core-7.24.0.tgz"'],
            [("@babel/core", "added", None, "7.24.0")], id="yarn-lock",
        ),
        # A version bump as git prints it: the package's name line is unchanged context.
        pytest.param(
            "poetry.lock",
            [" [[package]]", ' name = "requests"', '-version = "2.31.0"', '+version = "2.32.3"'],
            [("requests", "changed", "2.31.0", "2.32.3")],
            marks=bug("lockfile bump: the name is a context line, never read"), id="poetry-bump",
        ),
        pytest.param(
            "package-lock.json",
            ['     "node_modules/lodash": {', '-      "version": "4.17.20",',
             '+      "version": "4.17.21",'],
            [("lodash", "changed", "4.17.20", "4.17.21")],
            marks=bug("lockfile bump: the name is a context line, never read"), id="npm-bump",
        ),
        pytest.param(
            "yarn.lock",
            [" lodash@^4.17.20:", '-  version "4.17.20"', '+  version "4.17.21"'],
            [("lodash", "changed", "4.17.20", "4.17.21")],
            marks=bug("lockfile bump: the name is a context line, never read"), id="yarn-bump",
        ),
        pytest.param(
            "package-lock.json",
            ['+    "node_modules/a/node_modules/b": {', '+      "version": "2.0.0",'],
            [("b", "added", None, "2.0.0")],
            marks=bug("nested node_modules/a/node_modules/b entries are skipped"), id="npm-nested",
        ),
    ],
)  # fmt: skip
def test_lockfile_dependencies(path: str, lines: list[str], expected: list[tuple]) -> None:
    deps = dependency_changes(changed(path, *lines))
    assert [(d.name, d.kind, d.old, d.new) for d in deps] == expected
    assert not any(d.direct for d in deps)


# --- features ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "category"),
    [
        ("docs/x.md", "docs"),
        ("README.md", "docs"),
        ("src/app.py", "source"),
        ("tests/test_api.py", "tests"),
        ("pkg/thing_test.go", "tests"),
        ("web/__tests__/app.js", "tests"),
        ("tests/auth/test_login.py", "security"),
        ("src/app/auth/token.py", "security"),
        ("Makefile", "build"),
        ("requirements.txt", "dependencies"),
        ("web/package.json", "dependencies"),
        (".github/dependabot.yml", "ci"),
        ("deploy/Dockerfile.prod", "infra"),
    ],
    ids=str,
)
def test_category(path: str, category: str) -> None:
    (f,) = features(hand_diff(path, "+x")).files
    assert f.category == category


@pytest.mark.parametrize(
    ("path", "protected_by"),
    [
        (".github/workflows/ci.yml", ".github/workflows/**"),
        ("CODEOWNERS", "CODEOWNERS"),
        ("docs/CODEOWNERS", "CODEOWNERS"),
        ("deploy/Dockerfile.prod", "Dockerfile*"),
        ("config/.env.local", ".env.*"),
        ("certs/server.pem", "*.pem"),
        ("src/app/secrets/db.py", "**/secrets/**"),
        ("policies/default.yml", "policies/**"),
        ("src/app.py", None),
        (".github/ISSUE_TEMPLATE/bug.md", None),
        (".envrc", None),
        ("src/policies/x.py", None),
    ],
    ids=str,
)
def test_protected(path: str, protected_by: str | None) -> None:
    (f,) = features(hand_diff(path, "+x")).files
    assert f.protected_by == protected_by


TEST_API = "import pytest\n\n\ndef test_get():\n    assert 1\n\n\ndef test_post():\n    assert 2\n"
GO_TEST = "package pkg\n\nfunc TestAlpha(t *testing.T) {}\n\nfunc TestBeta(t *testing.T) {}\n"
JS_TEST = 'describe("app", () => {\n  it("renders", () => {});\n  it("clicks", () => {});\n});\n'
NEW_TEST = 'import unittest\n\n\nclass T(unittest.TestCase):\n    @unittest.skip("later")\n'


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Features:
    before: dict[str, str | bytes] = {
        "docs/x.md": "# Doc\n",
        "tests/auth/test_login.py": "def test_login():\n    assert True\n",
        "tests/test_util.py": "def test_util():\n    assert 'a long enough body to pair'\n",
        "tests/test_api.py": TEST_API,
        "pkg/thing_test.go": GO_TEST,
        "web/app.test.js": JS_TEST,
        ".github/workflows/ci.yml": "name: ci\non: push\n",
        "ci/deploy.yml": "name: deploy\non: workflow_dispatch\n",
    }

    def edit(r: Path) -> None:
        (r / "docs/x.md").write_text("# Doc\nmore\n")
        (r / "tests/auth/test_login.py").unlink()
        move(r, "tests/test_util.py", "src/util_check.py")
        (r / "tests/test_api.py").write_text(TEST_API.split("\n\n\ndef test_post")[0] + "\n")
        (r / "pkg/thing_test.go").write_text(GO_TEST.split("\n\nfunc TestBeta")[0] + "\n")
        js = JS_TEST.replace('  it("clicks", () => {});\n', '  xit("later", () => {});\n')
        (r / "web/app.test.js").write_text(js)
        (r / "tests/test_new.py").write_text(NEW_TEST + "    def test_a(self):\n        pass\n")
        move(r, ".github/workflows/ci.yml", "ci-old.yml")
        move(r, "ci/deploy.yml", ".github/workflows/deploy.yml")

    return extract(parse_diff(git_diff(tmp_path_factory.mktemp("f") / "r", before, edit)), POLICY)


@pytest.mark.parametrize(
    ("attribute", "expected"),
    [
        ("tests_added", ("tests/test_new.py",)),
        ("tests_modified", ("pkg/thing_test.go", "tests/test_api.py", "web/app.test.js")),
        ("tests_deleted", ("tests/auth/test_login.py", "tests/test_util.py")),
        (
            "test_functions_removed",
            (
                "pkg/thing_test.go::TestBeta",
                "tests/test_api.py::test_post",
                "web/app.test.js::clicks",
            ),
        ),
        ("skips_added", ("tests/test_new.py:5", "web/app.test.js:3")),
    ],
    ids=str,
)
def test_scenario_tests(scenario: Features, attribute: str, expected: tuple[str, ...]) -> None:
    assert getattr(scenario, attribute) == expected


def test_scenario_files(scenario: Features) -> None:
    by_path = {f.path: (f.status, f.category, f.protected_by) for f in scenario.files}
    assert by_path["ci-old.yml"] == ("renamed", "source", ".github/workflows/**")
    assert by_path[".github/workflows/deploy.yml"] == ("renamed", "ci", ".github/workflows/**")
    assert by_path["tests/auth/test_login.py"] == ("removed", "security", None)
    assert by_path["docs/x.md"] == ("modified", "docs", None)
    assert {k: (v.files, v.added, v.removed) for k, v in scenario.categories.items()} == {
        "ci": (1, 0, 0),
        "docs": (1, 1, 0),
        "security": (1, 0, 2),
        "source": (2, 0, 0),
        "tests": (4, 9, 7),
    }


@pytest.mark.parametrize(
    ("lines", "removed"),
    [
        pytest.param(
            [" def test_a():", "-    assert 1", "+    assert 2"], (), id="py-body-changed"
        ),
        pytest.param(["-def test_a(tmp_path):", "+def test_a(tmp_path, capsys):"], (), id="py-sig"),
        pytest.param(["-def test_old():", "+def test_new():"], ("test_old",), id="py-renamed"),
        pytest.param(["-async def test_io():", "-    pass"], ("test_io",), id="py-async"),
        pytest.param(["-func TestGone(t *testing.T) {}"], ("TestGone",), id="go"),
        pytest.param(["-  it('renders', () => {});"], ("renders",), id="js-it"),
        pytest.param(["-  test(`loads`, async () => {});"], ("loads",), id="js-test"),
        pytest.param(
            ['-  it("renders", () => {});', '+  it.skip("renders", () => {});'],
            (),
            marks=bug("skipping a JS test also reports it as removed"),
            id="js-skipped-not-removed",
        ),
    ],
)
def test_test_functions_removed(lines: list[str], removed: tuple[str, ...]) -> None:
    got = features(hand_diff("tests/test_x.py", *lines)).test_functions_removed
    assert got == tuple(f"tests/test_x.py::{name}" for name in removed)


@pytest.mark.parametrize(
    ("lines", "skips"),
    [
        pytest.param(['+@pytest.mark.skip(reason="flaky")', " def test_a():"], (1,), id="mark-skip"),
        pytest.param(['+@pytest.mark.skipif(sys.platform == "win32", reason="x")'], (1,), id="skipif"),
        pytest.param(["+@pytest.mark.xfail", " def test_a():"], (1,), id="mark-xfail"),
        pytest.param([" def test_a():", '+    pytest.skip("no network")'], (2,), id="pytest.skip"),
        pytest.param(['+    @unittest.skip("later")'], (1,), id="unittest.skip"),
        pytest.param(['+        self.skipTest("slow")'], (1,), id="skipTest"),
        pytest.param(['-  it("a", () => {});', '+  it.skip("a", () => {});'], (1,), id="it.skip"),
        pytest.param(['-  it("a", () => {});', '+  xit("a", () => {});'], (1,), id="xit"),
        pytest.param(['+  describe.skip("suite", () => {});'], (1,), id="describe.skip"),
        pytest.param(['+    t.Skip("needs docker")'], (1,), id="go-t.Skip"),
        pytest.param(["+# we used to skip this one", "+def test_skip_blank_lines():"], (), id="words"),
        pytest.param(
            ['-@pytest.mark.skip(reason="flaky")', "-def test_a():", "-    pass", " def test_b():",
             "     pass", '+@pytest.mark.skip(reason="flaky")', "+def test_a():", "+    pass"],
            (), id="moved",
        ),
        pytest.param(
            ["-@pytest.mark.skip", " def test_a():", "+@pytest.mark.skip", "+@pytest.mark.xfail"],
            (3,), id="moved-plus-one",
        ),
    ],
)  # fmt: skip
def test_skips_added(lines: list[str], skips: tuple[int, ...]) -> None:
    got = features(hand_diff("tests/test_x.py", *lines)).skips_added
    assert got == tuple(f"tests/test_x.py:{n}" for n in skips)


@bug("git quotes non-ASCII paths; the quoted name escapes the protected globs")
def test_protected_quoted_path(tmp_path: Path) -> None:
    text = git_diff(
        tmp_path / "r",
        {"README.md": "x\n"},
        lambda r: move(r, "README.md", ".github/workflows/déploy.yml"),
    )
    (f,) = features(text).files
    assert (f.path, f.protected_by) == (".github/workflows/déploy.yml", ".github/workflows/**")
