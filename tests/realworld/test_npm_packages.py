"""Five real npm packages (minimist, function-bind, has-symbols, es-errors, gopd), each
as its registry tarball ships it, pinned by version and integrity
(tests/realworld/npm_packages.py), with its own tape tests run by its `test` script in
the sandbox and its own eslint configuration (@ljharb's): the lint fixer on each, the
culprit finder on two, and a real advisory's package held vulnerable in one's lock.
Skipped, saying so, only when the registry cannot be reached."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.fixers.culprit import RevertFixer
from app.fixers.dependency import DependencyFixer
from app.fixers.lint import LintFixer
from app.git import Remote
from app.sessions.lockfiles import locked_npm, semver_key
from app.sessions.session import SessionRunner
from app.sessions.task import Advisory, SessionSpec, Task
from tests.realworld import npm_packages
from tests.realworld.npm_packages import PACKAGES, NpmPackage
from tests.realworld.sdists import Mismatch, Unavailable, commit

pytestmark = [
    pytest.mark.realworld,
    pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed"),
]


def _repository(package: NpmPackage, path: Path, **pin: str) -> str:
    try:
        return npm_packages.as_repository(package, path, pin=pin)
    except Unavailable as exc:
        pytest.skip(str(exc))
    except Mismatch as exc:
        pytest.fail(str(exc))


def by_package(names: set[str] | None = None) -> list[object]:
    """The packages as parameters, each kept on one test worker (its environment built
    once there, found by its later sessions)."""
    return [
        pytest.param(p, id=p.id, marks=pytest.mark.xdist_group(f"npm-{p.name}"))
        for p in PACKAGES
        if names is None or p.name in names
    ]


def _said(result: object) -> list[str]:
    return [f"{s.name}: {s.output[-600:]}" for s in getattr(result, "steps", [])]


@pytest.mark.parametrize("package", by_package())
async def test_the_lint_fixer_takes_back_a_finding_put_into_each_package(
    package: NpmPackage, realworld_runner: SessionRunner, tmp_path: Path
) -> None:
    """A double-quoted `"use strict";` (the package's eslint configuration wants single
    quotes) committed on top of the release: the lint fixer, with the package's own
    eslint and configuration, puts it back, scoped to that file; the package's own tests
    pass on both trees and eslint counts the finding fixed."""
    repo = tmp_path / package.name
    _repository(package, repo)
    source = repo / package.lint_file
    text = source.read_text()
    assert text.startswith("'use strict';"), f"{package.id}: {package.lint_file}"
    source.write_text('"use strict";' + text[len("'use strict';") :])
    commit(repo, "a double-quoted directive")

    task = Task(f"lint {package.lint_file}", fixer="lint", instructions="lint")
    spec = SessionSpec(remote=Remote(f"npm/{package.name}", str(repo)), task=task)
    result = await realworld_runner.run(spec, LintFixer())

    assert result.status == "patched", (result.error, result.fix, _said(result))
    assert result.fix is not None
    assert result.fix.rules_fixed.get("quotes") == 1, result.fix.rules_fixed
    assert [f.path for f in result.diff.files] == [package.lint_file]
    assert "-\"use strict\";\n+'use strict';" in result.diff.unified
    (checked,) = [d for d in result.findings if d.tool == "eslint"]
    assert checked.ran, checked
    assert "quotes" in {f.rule for f in checked.fixed}, (checked, _said(result))
    assert checked.new == []
    tests = result.tests
    assert tests is not None
    assert tests.command == ["npm", "test", "--silent"]  # a glob: npm runs it
    assert tests.base is not None
    assert tests.head is not None
    assert (tests.base.exit_code, tests.head.exit_code) == (0, 0), _said(result)


@pytest.mark.parametrize("package", by_package({"minimist", "function-bind"}))
async def test_the_culprit_finder_names_a_breaking_commit_in_a_real_package(
    package: NpmPackage, realworld_runner: SessionRunner, tmp_path: Path
) -> None:
    """Six commits on the release, the fourth a behaviour-breaking edit of the
    package's own code: the red check's culprit finder bisects with the package's own
    tests and reverts that commit, and the revert makes them pass."""
    repo = tmp_path / package.name
    shas = {1: _repository(package, repo)}
    for n in range(2, 7):
        if n == 4:
            name, old, new = package.breaks
            content = (repo / name).read_text()
            assert old in content, f"{package.id}: {old!r} is not in {name}"
            (repo / name).write_text(content.replace(old, new, 1))
            shas[n] = commit(repo, f"commit {n}: tune {name}", author="Mallory <m@ex.org>")
        else:
            (repo / "NOTES.md").write_text(f"note {n}\n")
            shas[n] = commit(repo, f"commit {n}: notes")
    spec = SessionSpec(
        remote=Remote(f"npm/{package.name}", str(repo)),
        task=Task("tests fail on main", kind="alert", check="tests"),
    )
    result = await realworld_runner.run(spec, RevertFixer())

    assert result.fix is not None
    assert result.fix.culprit is not None, (result.error, result.fix.reason, _said(result))
    assert result.fix.culprit.sha == shas[4], result.fix.culprit.bisect_log
    assert result.status == "patched", result.error
    assert [f.path for f in result.diff.files] == [package.breaks[0]]
    assert result.tests is not None
    assert result.tests.head is not None
    assert result.tests.head.exit_code == 0, _said(result)


@pytest.mark.parametrize("package", by_package({"minimist"}))
async def test_a_real_advisory_on_a_package_deep_in_the_lock_moves_the_lock_alone(
    package: NpmPackage, realworld_runner: SessionRunner, tmp_path: Path
) -> None:
    """GHSA-v6h2-p8h4-qcjw (brace-expansion up to 1.1.11, fixed in 1.1.12), held at
    1.1.11 deep in minimist's lock (eslint's minimatch wants it; package.json does not
    name it): the dependency fixer leaves package.json alone, npm moves the lock within
    the range minimatch asks in the setup phase, no other package moves, the patch's own
    setup installs it and the package's tests pass on both trees."""
    repo = tmp_path / package.name
    _repository(package, repo, **{"brace-expansion": "1.1.11"})
    held = locked_npm((repo / "package-lock.json").read_text())
    assert {v for v, _ in held["brace-expansion"]} == {"1.1.11"}
    assert (
        "brace-expansion" not in json.loads((repo / "package.json").read_text())["devDependencies"]
    )
    advisory = Advisory(
        package="brace-expansion",
        ecosystem="npm",
        manifest="package-lock.json",
        vulnerable_range="<= 1.1.11",
        first_patched="1.1.12",
        id="GHSA-v6h2-p8h4-qcjw",
        cve="CVE-2025-5889",
        severity="low",
    )
    task = Task(
        title="Bump brace-expansion past <= 1.1.11 (GHSA-v6h2-p8h4-qcjw)", advisory=advisory
    )
    spec = SessionSpec(remote=Remote(f"npm/{package.name}", str(repo)), task=task, job_id=1)
    result = await realworld_runner.run(spec, DependencyFixer())

    assert result.status == "patched", (result.error, result.fix, _said(result))
    bump = result.fix.bump if result.fix else None
    assert bump is not None
    assert [f.path for f in result.diff.files] == ["package-lock.json"]
    moved = [line for line in bump.locked if "→" in line]
    assert len(moved) == 1, bump.locked
    assert moved[0].startswith("`package-lock.json`: brace-expansion 1.1.11 → ")
    assert semver_key(moved[0].split("→ ")[1]) >= semver_key("1.1.12")
    assert bump.setup
    assert bump.version is not None
    assert semver_key(bump.version) >= semver_key("1.1.12")
    assert result.tests is not None
    assert result.tests.broken == []
    assert result.tests.head is not None
    assert result.tests.head.exit_code == 0, _said(result)
