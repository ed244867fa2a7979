"""The dependency fixer on real projects (issue 34): each project's own manifest allows
a version of a dependency that a real advisory names; the alert GitHub would raise is
answered with the constraint raised in the project's own style, the patch's own setup
installs the fixed version (real pip, from the index, in bubblewrap's setup phase), and
the project's own tests run on both trees."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from app.fixers.dependency import DependencyFixer
from app.git import Remote
from app.policy.config import Policy
from app.policy.score import Trigger, score_session
from app.sessions.session import Advisory, SessionRunner, SessionSpec, Task
from tests.realworld.bumps import BUMPS, Bump
from tests.realworld.conftest import as_repository

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
