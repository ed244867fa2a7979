"""Real JavaScript test runners from the npm registry (jest, vitest, mocha), installed
by a session's setup phase from a lock made at test time with their pinned versions,
each counting an npm project's tests one by one on the base and the patched tree.
Skipped, saying so, when the registry cannot be reached."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from app.git import Remote
from app.sessions.fix_context import FixContext
from app.sessions.result import FixOutcome
from app.sessions.session import SessionRunner
from app.sessions.task import SessionSpec, Task
from tests.conftest import git_commit, git_in

pytestmark = [
    pytest.mark.realworld,
    pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed"),
]

CJS = """\
const { add } = require('../calc');
describe('calc', () => {
  it('adds', () => { if (add(1, 2) !== 3) throw new Error('add(1, 2) is ' + add(1, 2)); });
});
it('stands alone', () => {});
"""
ESM = "import { describe, it } from 'vitest';\n" + CJS.replace(
    "const { add } = require('../calc');", "import { add } from '../calc.js';"
)
# runner: (package pinned, test script, test file, the module under test)
RUNNERS = {
    "jest": ("jest@29.7.0", "jest", CJS, "exports.add = (a, b) => a - b;\n"),
    "mocha": ("mocha@10.8.2", "mocha", CJS, "exports.add = (a, b) => a - b;\n"),
    "vitest": ("vitest@3.2.4", "vitest", ESM, "export const add = (a, b) => a - b;\n"),
}
EXPECTED_FIXED = {
    "jest": ["test/calc.test.js::calc > adds"],
    "mocha": ["calc::adds"],
    "vitest": ["test/calc.test.js::calc > adds"],
}


async def _locked(root: Path, package: str, *, dev: bool = True) -> None:
    """``package`` in package.json and the lock, as a user's ``npm install`` (``-D``)
    leaves them (nothing installed here: the session's setup does that)."""
    proc = await asyncio.create_subprocess_exec(
        "npm", "install", "--save-dev" if dev else "--save-prod", "--package-lock-only",
        "--ignore-scripts", "--no-audit", "--no-fund", package,
        cwd=root, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await proc.communicate()
    if proc.returncode != 0:
        pytest.skip(f"the npm registry could not be reached: {err.decode()[-300:]}")


@pytest.mark.parametrize("runner_name", sorted(RUNNERS))
async def test_a_real_runner_counts_an_npm_projects_tests_one_by_one(
    realworld_runner: SessionRunner, tmp_path: Path, runner_name: str
) -> None:
    package, script, tests, calc = RUNNERS[runner_name]
    root = tmp_path / "calc"
    (root / "test").mkdir(parents=True)
    manifest: dict[str, object] = {"name": "calc", "version": "1.0.0", "scripts": {"test": script}}
    if runner_name == "vitest":
        manifest["type"] = "module"
    (root / "package.json").write_text(json.dumps(manifest))
    (root / "calc.js").write_text(calc)
    (root / "test" / "calc.test.js").write_text(tests)
    await _locked(root, package)
    git_in(root, "init", "-q", "-b", "main")
    git_commit(root, f"an npm project tested with {runner_name}")

    async def fix(ctx: FixContext) -> FixOutcome:
        (ctx.tree / "calc.js").write_text(calc.replace("a - b", "a + b"))
        return FixOutcome(fixer="test", summary="add adds")

    remote = Remote("octo/calc", str(root))
    result = await realworld_runner.run(SessionSpec(remote=remote, task=Task("fix add")), fix)
    assert result.status == "patched", (result.error, [s.output[-800:] for s in result.steps])
    tests_run = result.tests
    assert tests_run is not None
    assert tests_run.command[0] == script
    said = [s.output[-1500:] for s in result.steps if s.name == "tests"]
    assert tests_run.fixed == EXPECTED_FIXED[runner_name], said
    assert tests_run.broken == []
    assert tests_run.head is not None
    assert tests_run.head.counts is not None
    assert (tests_run.head.counts.passed, tests_run.head.counts.failed) == (2, 0)
    assert [f.path for f in result.diff.files] == ["calc.js"]


ESLINT_CONFIG = """\
export default [
  {
    files: ["**/*.js"],
    languageOptions: { sourceType: "commonjs" },
    rules: { "prefer-const": "error", "no-var": "error", "eqeqeq": "error" },
  },
];
"""
LOOSE = """\
var total = 0;
let step = 2;
function grow(n) {
  if (n == null) return total;
  return total + n * step;
}
module.exports = { grow };
"""


@pytest.mark.parametrize("scoped", [True, False])
async def test_the_lint_fixer_applies_the_repository_s_own_eslint_fixes(
    realworld_runner: SessionRunner, tmp_path: Path, scoped: bool
) -> None:
    """eslint installed by the project (a pinned devDependency) and its own flat
    configuration: `--fix` turns `var` and a `let` never reassigned into `const`; `==`
    has no automatic fix and is left for a human, named. Scoped to the file the task
    names, the other file keeps its `var`."""
    from app.fixers.lint import LintFixer

    root = tmp_path / "loose"
    root.mkdir()
    manifest = {"name": "loose", "version": "1.0.0", "scripts": {"test": "node --test"}}
    (root / "package.json").write_text(json.dumps(manifest))
    (root / "eslint.config.mjs").write_text(ESLINT_CONFIG)
    (root / "grow.js").write_text(LOOSE)
    (root / "other.js").write_text("var kept = 1;\nmodule.exports = { kept };\n")
    await _locked(root, "eslint@9.39.1")
    git_in(root, "init", "-q", "-b", "main")
    git_commit(root, "a package eslint would tidy")

    title = "lint grow.js" if scoped else "lint"
    task = Task(title, fixer="lint", instructions=title)
    result = await realworld_runner.run(
        SessionSpec(remote=Remote("octo/loose", str(root)), task=task), LintFixer()
    )
    assert result.status == "patched", (result.error, result.fix)
    fix = result.fix
    assert fix is not None
    assert fix.rules_fixed == {"no-var": 1 if scoped else 2, "prefer-const": 1}
    changed = {f.path for f in result.diff.files}
    assert changed == ({"grow.js"} if scoped else {"grow.js", "other.js"})
    assert "+const total = 0;" in result.diff.unified
    assert "+const step = 2;" in result.diff.unified
    assert "Left for a human (no automatic fix): eqeqeq (1)." in fix.summary
    assert "Rules: the repository's own eslint configuration (eslint.config.mjs)." in fix.summary
    # verified as ruff is: the project's own eslint on both trees, what it fixed named
    (checked,) = [d for d in result.findings if d.tool == "eslint"]
    assert checked.ran, checked
    assert checked.error is None, checked
    assert {f.rule for f in checked.fixed} == {"no-var", "prefer-const"}
    assert checked.new == []
    assert [f.rule for f in checked.fixed if f.path == "other.js"] == ([] if scoped else ["no-var"])


async def test_a_real_npm_advisory_is_answered_with_the_range_raised_and_the_lock_moved(
    realworld_runner: SessionRunner, tmp_path: Path
) -> None:
    """GHSA-c2qf-rxjj-qqgw: semver before 7.5.2. package.json asks `^7.5.1` and the lock
    holds 7.5.1, as a user's `npm install semver@7.5.1` left them: the range is raised in
    its style to `^7.5.2`, npm moves the lock within it in the setup phase, the patch's
    own setup installs the fixed version and the tests run on both trees; no other
    package of the lock changes version."""
    from app.fixers.dependency import DependencyFixer
    from app.sessions.lockfiles import locked_npm, semver_key
    from app.sessions.task import Advisory

    root = tmp_path / "uses-semver"
    root.mkdir()
    manifest = {"name": "uses-semver", "version": "1.0.0", "scripts": {"test": "node --test"}}
    (root / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (root / "test").mkdir()
    (root / "test" / "ok.test.js").write_text(
        "const test = require('node:test');\ntest('semver loads', () => { require('semver'); });\n"
    )
    await _locked(root, "semver@7.5.1", dev=False)
    before = locked_npm((root / "package-lock.json").read_text())
    assert {v for v, _ in before["semver"]} == {"7.5.1"}
    git_in(root, "init", "-q", "-b", "main")
    git_commit(root, "a project with semver 7.5.1 locked")

    advisory = Advisory(
        package="semver",
        ecosystem="npm",
        manifest="package-lock.json",
        vulnerable_range="< 7.5.2",
        first_patched="7.5.2",
        id="GHSA-c2qf-rxjj-qqgw",
        cve="CVE-2022-25883",
        severity="medium",
    )
    task = Task(title="Bump semver past < 7.5.2 (GHSA-c2qf-rxjj-qqgw)", advisory=advisory)
    spec = SessionSpec(remote=Remote("octo/uses-semver", str(root)), task=task, job_id=1)
    result = await realworld_runner.run(spec, DependencyFixer())

    assert result.status == "patched", (result.error, [s.output[-800:] for s in result.steps])
    bump = result.fix.bump if result.fix else None
    assert bump is not None
    assert bump.locks == ["package-lock.json"]
    assert {f.path for f in result.diff.files} == {"package.json", "package-lock.json"}
    assert '-    "semver": "^7.5.1"' in result.diff.unified
    assert '+    "semver": "^7.5.2"' in result.diff.unified
    moved = [line for line in bump.locked if "→" in line]
    assert len(moved) == 1, bump.locked
    assert moved[0].startswith("`package-lock.json`: semver 7.5.1 → ")
    assert semver_key(moved[0].split("→ ")[1]) >= semver_key("7.5.2")
    # the patch's own setup installed it: the version npm put in node_modules
    assert bump.setup
    assert bump.version is not None
    assert semver_key(bump.version) >= semver_key("7.5.2")
    assert any(line.startswith("semver 7.5.1 → ") for line in bump.upgraded)
    assert result.tests is not None
    assert result.tests.broken == []


async def test_typescript_checks_the_patch_and_names_the_type_it_got_wrong(
    realworld_runner: SessionRunner, tmp_path: Path
) -> None:
    """A TypeScript project (its tsconfig.json, typescript a pinned devDependency): `tsc
    --noEmit` runs on both trees, and a change that passes a number where a string goes
    is a new finding, named by its code, at its place."""
    root = tmp_path / "typed"
    (root / "src").mkdir(parents=True)
    manifest = {"name": "typed", "version": "1.0.0", "scripts": {"test": "node --test"}}
    (root / "package.json").write_text(json.dumps(manifest))
    tsconfig = {"compilerOptions": {"strict": True, "target": "es2020", "module": "commonjs"}}
    (root / "tsconfig.json").write_text(json.dumps(tsconfig))
    (root / "src" / "greet.ts").write_text(
        "export function greet(name: string): string {\n  return 'hello ' + name;\n}\n"
    )
    await _locked(root, "typescript@5.6.3")
    git_in(root, "init", "-q", "-b", "main")
    git_commit(root, "a typed package")

    async def fix(ctx: FixContext) -> FixOutcome:
        (ctx.tree / "src" / "use.ts").write_text(
            "import { greet } from './greet';\nexport const said = greet(42);\n"
        )
        return FixOutcome(fixer="test", summary="use greet")

    remote = Remote("octo/typed", str(root))
    result = await realworld_runner.run(SessionSpec(remote=remote, task=Task("use it")), fix)
    assert result.status == "patched", (result.error, [s.output[-800:] for s in result.steps])
    (checked,) = [d for d in result.findings if d.tool == "tsc"]
    assert checked.error is None, checked
    assert [(f.rule, f.path, f.line) for f in checked.new] == [("TS2345", "src/use.ts", 2)]
    assert checked.fixed == []
