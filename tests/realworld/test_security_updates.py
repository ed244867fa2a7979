"""The dependency fixer on real projects (issue 34): each project's own manifest allows
a version of a dependency that a real advisory names; the alert GitHub would raise is
answered with the constraint raised in the project's own style, the patch's own setup
installs the fixed version (real pip, from the index, in bubblewrap's setup phase), and
the project's own tests run on both trees."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest
from packaging.version import Version
from uv import find_uv_bin

from app.fixers.dependency import DependencyFixer
from app.git import Remote
from app.policy.policy_model import Policy
from app.policy.score import Trigger, score_session
from app.sessions.session import SessionRunner
from app.sessions.task import Advisory, SessionSpec, Task
from tests.realworld.bumps import BUMPS, Bump
from tests.realworld.conftest import as_repository
from tests.realworld.sdists import commit

pytestmark = pytest.mark.slow


def alert(bump: Bump) -> Task:
    advisory = Advisory(
        package=bump.package,
        ecosystem="pip",
        manifest=bump.manifest,
        vulnerable_range=bump.vulnerable_range,
        first_patched=bump.fixed,
        id=bump.advisory,
        cve=bump.cve,
        severity="medium",
    )
    title = f"Bump {bump.package} past {bump.vulnerable_range} ({bump.advisory})"
    return Task(title=title, advisory=advisory)


@pytest.mark.parametrize(
    "bump",
    [
        pytest.param(b, id=b.project.id, marks=pytest.mark.xdist_group(b.project.name))
        for b in BUMPS
    ],
)
async def test_a_real_project_s_vulnerable_dependency_is_raised_installed_and_tested(
    realworld_runner: SessionRunner, tmp_path: Path, bump: Bump
) -> None:
    repo = tmp_path / bump.project.name
    as_repository(bump.project, repo)
    assert bump.before in (repo / bump.manifest).read_text()
    spec = SessionSpec(
        remote=Remote(f"real/{bump.project.name}", str(repo)), task=alert(bump), job_id=1
    )
    result = await realworld_runner.run(spec, DependencyFixer())

    assert result.status == "patched", (result.error, [s.output[-800:] for s in result.steps])
    assert result.fix is not None
    assert result.fix.bump is not None
    assert result.fix.bump.files == [bump.manifest]
    removed = [
        x[1:] for x in result.diff.unified.splitlines() if x.startswith("-") and x[1:2] != "-"
    ]
    added = [x[1:] for x in result.diff.unified.splitlines() if x.startswith("+") and x[1:2] != "+"]
    assert removed == [bump.before.rstrip("\n")]
    assert added == [bump.after.rstrip("\n")]
    # The patch's own setup ran (its inputs changed), and the session refused nothing:
    # the package it installed is the fixed version or later.
    assert result.fix.bump.setup
    assert {s.tree for s in result.steps if s.phase == "setup"} == {"base", "head"}
    assert result.fix.bump.version is not None
    assert Version(result.fix.bump.version) >= Version(bump.fixed)
    # The project's own tests ran on both trees, test by test alike: the bump breaks
    # none. (email-validator has one that fails with today's idna on both.)
    assert result.tests is not None
    assert result.tests.base is not None
    assert result.tests.head is not None
    assert result.tests.head.counts is not None
    assert result.tests.head.counts.passed > 100 or bump.project.name == "requests_file"
    assert result.tests.head.counts.passed > 0
    assert result.tests.head.outcomes == result.tests.base.outcomes
    assert result.tests.broken == []
    assert result.policy is not None
    score = score_session(
        result, Policy.model_validate(result.policy), trigger=Trigger("alert", alert="dependabot")
    )
    assert score.decision == "review", score.rules  # the shipped policy: a maintainer approves
    assert "security_update" in {c.factor for c in score.contributions} or (
        result.fix.bump.size == "patch"
    )


# How requests-file's maintainers could lock its tree with uv, idna at 3.6: the lock
# file, the commands that write it, and the command the fixer must name.
LOCKS = {
    "uv.lock": (
        [["lock", "-q"], ["lock", "-q", "--upgrade-package", "idna==3.6"]],
        "uv lock --upgrade-package idna==3.7",
    ),
    "requirements.txt": (
        [
            [
                "pip", "compile", "-q", "requirements.in", "--generate-hashes",
                "-o", "requirements.txt", "--upgrade-package", "idna==3.6",
            ]
        ],
        "uv pip compile requirements.in --generate-hashes -o requirements.txt "
        "--upgrade-package idna==3.7",
    ),
}  # fmt: skip


@pytest.mark.parametrize("lock", list(LOCKS), ids=["uv-lock", "uv-pip-compile"])
@pytest.mark.xdist_group("requests_file")
async def test_a_transitive_dependency_that_uv_locks_is_relocked_with_uv(
    realworld_runner: SessionRunner, tmp_path: Path, lock: str
) -> None:
    """requests-file's tree locked with uv, idna (requests' dependency, named in no
    manifest) at 3.6, which CVE-2024-3651 affects: the alert names the lock, and the
    patch is that lock regenerated by uv against the real index with idna at the fixed
    version, with PyPI's own hashes, and no other package moved."""
    project = BUMPS[0].project
    repo = tmp_path / project.name
    as_repository(project, repo)
    (repo / "requirements.in").write_text("requests\n")
    env = {**os.environ, "SETUPTOOLS_SCM_PRETEND_VERSION": project.version}
    uv = find_uv_bin()
    commands, shown = LOCKS[lock]
    for argv in commands:
        await asyncio.to_thread(subprocess.run, [uv, *argv], cwd=repo, env=env, check=True)
    before = (repo / lock).read_text()
    commit(repo, "Lock with uv")
    advisory = Advisory(
        package="idna",
        ecosystem="pip",
        manifest=lock,
        vulnerable_range="< 3.7",
        first_patched="3.7",
        id="GHSA-jjg7-2v4v-x38h",
        cve="CVE-2024-3651",
        severity="medium",
    )
    spec = SessionSpec(
        remote=Remote(f"real/{project.name}", str(repo)),
        task=Task(title="Bump idna past < 3.7 (GHSA-jjg7-2v4v-x38h)", advisory=advisory),
        job_id=1,
    )
    result = await realworld_runner.run(spec, DependencyFixer())

    assert result.status == "patched", (result.error, [s.output[-800:] for s in result.steps])
    assert result.fix is not None
    assert result.fix.bump is not None
    bump = result.fix.bump
    assert [f.path for f in result.diff.files] == [lock]
    assert bump.locked == [f"`{lock}`: idna 3.6 → 3.7"]
    assert (bump.old, bump.size) == ("3.6", "minor")
    assert bump.lock_commands == [shown]
    lock_steps = [s for s in result.steps if s.name == "lock"]
    assert [(s.phase, s.tree, s.exit_code) for s in lock_steps] == [("setup", "head", 0)]
    # The lock the patch holds: idna 3.7 with PyPI's own wheel hash, the header as it
    # was, and no line of any other package's entry touched.
    changed = [
        x[1:] for x in result.diff.unified.splitlines() if x[:1] in "+-" and x[1:2] not in "+-"
    ]
    assert any(
        "sha256:82fee1fc78add43492d3a1898bfa6d8a904cc97d8427f683ed8e798d07761aa0" in x
        for x in changed
    )
    assert not [x for x in changed if x.startswith("#")]
    others = {"requests", "urllib3", "certifi", "charset-normalizer"}
    assert all(o in before for o in others)
    assert not [x for x in changed if any(o in x for o in others)]
    # The patch's own environment has it too, and its tests ran on both trees.
    assert bump.version is not None
    assert Version(bump.version) >= Version("3.7")
    assert result.tests is not None
    assert result.tests.broken == []
