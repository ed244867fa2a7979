"""Real projects, real tools: the lint fixer and the culprit finder on pinned sdists.

Each project (tests/realworld/projects.py: src and flat layouts, setuptools-scm and
hatch-vcs versions, a PEP 735 group, setup.py only) becomes a git repository, and:

- an injected unused import is removed by the lint fixer, which touches only that
  file, and the project's own tests run on both trees (a count above 0), none broken;
- a behaviour-breaking commit among 15 is found by the culprit finder.

The first session of a project builds its environment (network, the host's package
configuration); the later ones find it in the cache.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.fixers.culprit import RevertFixer
from app.fixers.lint import LintFixer
from app.fixers.registry import KNOWN
from app.git import Remote
from app.policy.policy_model import Policy
from app.policy.score import Trigger, score_session
from app.sessions.session import SessionRunner
from app.sessions.task import SessionSpec, Task
from tests.conftest import git_commit
from tests.realworld.conftest import (
    as_repository,
    breaking_history,
    by_project,
    inject_unused_import,
)
from tests.realworld.projects import PROJECTS, Project

pytestmark = [pytest.mark.slow, pytest.mark.realworld]


@pytest.mark.parametrize("project", by_project(PROJECTS))
async def test_the_lint_fixer_removes_an_injected_unused_import_and_nothing_else(
    project: Project, realworld_runner: SessionRunner, tmp_path: Path
) -> None:
    repo = tmp_path / project.name
    as_repository(project, repo)
    line = inject_unused_import(repo / project.lint_file)
    git_commit(repo, f"an unused import in {project.lint_file}")
    spec = SessionSpec(
        remote=Remote(f"real/{project.name}", str(repo)),
        task=Task(f"remove the unused import in {project.lint_file}", fixer="lint"),
    )
    result = await realworld_runner.run(spec, LintFixer())

    failed = [s.output[-1500:] for s in result.steps if s.exit_code not in (0, None)]
    assert result.status == "patched", (result.error, failed)
    assert [f.path for f in result.diff.files] == [project.lint_file]
    removed = [
        ln
        for ln in result.diff.unified.splitlines()
        if ln.startswith("-") and not ln.startswith("---")
    ]
    added = [
        ln
        for ln in result.diff.unified.splitlines()
        if ln.startswith("+") and not ln.startswith("+++")
    ]
    assert removed == [f"-{line}"]
    assert added == []
    tests = result.tests
    assert tests is not None
    assert tests.base is not None
    assert tests.head is not None
    assert tests.base.counts is not None, "no per-test report on the base"
    assert tests.head.counts is not None, "no per-test report on the patch"
    assert tests.base.counts.passed > 0
    assert tests.head.counts.passed == tests.base.counts.passed
    assert tests.broken == []
    assert tests.removed == []
    assert result.fix is not None
    assert result.fix.rules_fixed == {"F401": 1}


@pytest.mark.parametrize("project", by_project(PROJECTS))
async def test_the_culprit_finder_blames_the_breaking_commit(
    project: Project, realworld_runner: SessionRunner, tmp_path: Path
) -> None:
    repo = tmp_path / project.name
    shas = breaking_history(project, repo, commits=10, breaks_at=6)
    spec = SessionSpec(
        remote=Remote(f"real/{project.name}", str(repo)),
        task=Task("tests fail on main", kind="alert", check="tests"),
    )
    result = await realworld_runner.run(spec, RevertFixer())

    assert result.fix is not None
    assert result.fix.culprit is not None, (result.error, result.fix.reason)
    assert result.fix.culprit.sha == shas[6], result.fix.culprit.bisect_log
    assert result.status == "patched", result.error
    assert result.tests is not None
    assert result.tests.fixed, "the revert makes the failing tests pass"
    assert result.tests.broken == []
    assert [f.path for f in result.diff.files] == [project.breaks[0]]


@pytest.mark.xdist_group("humanize")
async def test_the_same_input_gets_the_same_decision_cold_or_cached(
    realworld_runner: SessionRunner, tmp_path: Path
) -> None:
    """humanize writes its version file during setup: the patched tree must have it
    too, whether setup just ran or its environment came from the cache."""
    project = next(p for p in PROJECTS if p.name == "humanize")
    repo = tmp_path / project.name
    as_repository(project, repo)
    inject_unused_import(repo / project.lint_file)
    git_commit(repo, "an unused import")
    decisions = []
    for cache in ("cold", "warm"):
        runner = SessionRunner(
            fixers=KNOWN,
            cache=type(realworld_runner.cache)(tmp_path / "cache"),
            sandbox=realworld_runner.sandbox,
        )
        spec = SessionSpec(
            remote=Remote("real/humanize-twice", str(repo)),
            task=Task(f"remove the unused import in {project.lint_file}", fixer="lint"),
        )
        result = await runner.run(spec, LintFixer())
        setup = [s for s in result.steps if s.phase == "setup"]
        assert all(s.cached for s in setup) == (cache == "warm"), cache
        assert result.policy is not None
        score = score_session(
            result, Policy.model_validate(result.policy), trigger=Trigger("manual")
        )
        assert result.tests is not None
        assert result.tests.head is not None
        decisions.append((score.decision, score.score, result.tests.head.counts))
    assert decisions[0] == decisions[1]
    assert decisions[0][2] is not None
    assert decisions[0][2].passed > 0
