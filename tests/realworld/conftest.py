"""Real projects from PyPI, as git repositories, for the real-world suite.

Sdists are downloaded once by pinned version and checked against PyPI's sha256, then
cached (tests/realworld/sdists.py, which bench/agent_eval.py uses too). The tests skip,
saying so, only when PyPI cannot be reached.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from app.fixers.registry import KNOWN
from app.sessions.backends import BwrapSandbox
from app.sessions.session import SessionRunner
from tests.conftest import cache_at, git_commit
from tests.realworld import sdists
from tests.realworld.projects import Project


def sdist(project: Project) -> Path:
    """The project's sdist (tests/realworld/sdists.py); the test is skipped, saying so,
    when PyPI cannot be reached, and fails when the file is not the pinned one."""
    try:
        return sdists.sdist(project)
    except sdists.Unavailable as exc:
        pytest.skip(str(exc))
    except sdists.Mismatch as exc:
        pytest.fail(str(exc))


def unpack(project: Project, into: Path) -> Path:
    sdist(project)
    return sdists.unpack(project, into)


def as_repository(project: Project, path: Path) -> str:
    sdist(project)
    return sdists.as_repository(project, path)


def inject_unused_import(path: Path) -> str:
    """Insert ``import colorsys`` before the module's first import (after any
    ``from __future__``); returns the line."""
    lines = path.read_text().splitlines(keepends=True)
    at = next(
        (
            i
            for i, line in enumerate(lines)
            if line.startswith(("import ", "from ")) and not line.startswith("from __future__")
        ),
        len(lines),
    )
    lines.insert(at, "import colorsys\n")
    path.write_text("".join(lines))
    return "import colorsys"


def breaking_history(
    project: Project, path: Path, *, commits: int, breaks_at: int
) -> dict[int, str]:
    """The project's repository with ``commits`` commits: notes, and at ``breaks_at``
    the project's behaviour-breaking edit. Returns shas by number (1 is the import)."""
    repo = path
    shas = {1: as_repository(project, path)}
    for n in range(2, commits + 1):
        if n == breaks_at:
            name, text, replacement = project.breaks
            source = repo / name
            content = source.read_text()
            assert text in content, f"{project.id}: {text!r} is not in {name}"
            source.write_text(content.replace(text, replacement, 1))
            shas[n] = git_commit(repo, f"commit {n}: tune {name}", author="Mallory <m@ex.org>")
        else:
            (repo / "NOTES.txt").write_text(f"note {n}\n")
            shas[n] = git_commit(repo, f"commit {n}: notes")
    return shas


def by_project(projects: Sequence[Project]) -> list[Any]:
    """``projects`` as parameters, each project's tests kept on one test worker
    (``make test`` runs them with ``--dist loadgroup``): there the environment its first
    session builds is the one its later sessions find, and no two workers fetch into
    the same mirror at once."""
    return [pytest.param(p, id=p.id, marks=pytest.mark.xdist_group(p.name)) for p in projects]


@pytest.fixture(scope="session")
def realworld_runner(
    tmp_path_factory: pytest.TempPathFactory, empty_environments: Path
) -> SessionRunner:
    """One cache per test process (see :func:`by_project`)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    root = tmp_path_factory.mktemp("realworld")
    return SessionRunner(
        fixers=KNOWN,
        cache=cache_at(root / "cache", empty_environments),
        sandbox=BwrapSandbox(state_dir=root / "sandbox"),
    )
