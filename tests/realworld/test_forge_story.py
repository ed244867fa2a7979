"""A fix request on a real project, end to end on LocalForge: the App, its workers,
a session on the pinned sdist (pushed with its release tag), and the pull request a
reviewer reads. No model is configured: the issue is about lint, so the lint fixer
answers it, touching only the file the issue names.

Two projects of different kinds go the whole way: humanize (src layout, a hatch-vcs
version from the pushed tag, a test extra) and toolz (flat, setup.py with versioneer,
its tests inside the package). What differs from project to project is the session,
and tests/realworld/test_projects.py runs that on every project: the same lint fix,
the tests on both trees, nothing broken, only the named file changed."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from app.localforge import LocalForge
from tests.conftest import INSTALLATION, REPO, Harness
from tests.realworld.conftest import inject_unused_import, unpack
from tests.realworld.projects import PROJECTS, Project

pytestmark = [pytest.mark.slow, pytest.mark.realworld]


WHOLE_WAY = [p for p in PROJECTS if p.name in ("humanize", "toolz")]


@pytest.mark.parametrize("project", WHOLE_WAY, ids=[p.id for p in WHOLE_WAY])
async def test_a_fix_request_on_a_real_project_opens_a_verified_pull_request(
    project: Project,
    make_pw: Callable[..., Awaitable[Harness]],
    forge: LocalForge,
    tmp_path: Path,
) -> None:
    tree = unpack(project, tmp_path / "tree")
    line = inject_unused_import(tree / project.lint_file)
    files: dict[str, str | bytes | None] = {
        p.relative_to(tree).as_posix(): p.read_bytes()
        for p in sorted(tree.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }
    if project.config:
        files[".github/patchwarden.yml"] = project.config
    sha = await forge.push(REPO, files, author="alice", message=f"{project.id}")
    forge.repos[REPO].git.create_ref(f"refs/tags/v{project.version}", sha)
    forge.add_user(REPO, "alice", "maintain")
    pw = await make_pw(workers=1)
    await forge.install(INSTALLATION, by="alice")
    issue = forge.open_issue(REPO, f"ruff: `{line}` is unused in {project.lint_file}", author="bob")
    await forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="alice")
    await pw.settle(within=600, every_job=True)

    said = [c.body for c in forge.comments(REPO, issue.number) if c.user.type == "Bot"]
    pulls = forge.pulls(REPO)
    assert len(pulls) == 1, said
    pull = pulls[0]
    body = forge.issue(REPO, pull.number).body or ""
    assert f"Fixes #{issue.number}" in body, body[:2500]  # what the issue asked for
    verified = re.search(r"\*\*Verified:\*\* tests (\d+) passed[^→]*→ (\d+) passed", body)
    assert verified is not None, body[:1500]
    assert int(verified.group(1)) > 0
    assert verified.group(1) == verified.group(2)
    assert "0 broken" in body
    changed = forge.repos[REPO].git.diff_files(sha, pull.head_sha)
    assert [c.filename for c in changed] == [project.lint_file]
