"""Real projects from PyPI, as git repositories, for the real-world suite.

Sdists are downloaded once by pinned version and checked against PyPI's sha256, then
cached (``$PATCHWARDEN_TEST_CACHE``, default ``~/.cache/patchwarden-tests``). The
tests skip, saying so, only when PyPI cannot be reached.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from app.sessions.backends import BwrapSandbox
from app.sessions.mirrors import WorkspaceCache
from app.sessions.session import SessionRunner
from tests.conftest import git_commit, git_in
from tests.realworld.projects import Project

INDEX = os.environ.get("PATCHWARDEN_TEST_PYPI", "https://pypi.org/simple")
CACHE = Path(
    os.environ.get("PATCHWARDEN_TEST_CACHE") or Path.home() / ".cache" / "patchwarden-tests"
)


def sdist(project: Project) -> Path:
    """The project's sdist, from the cache or PyPI, checked against its sha256."""
    folder = CACHE / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    cached = folder / f"{project.id}.tar.gz"
    if cached.is_file() and _sha256(cached) == project.sha256:
        return cached
    url = _sdist_url(project)
    # Its own partial file: two test workers may fetch the same sdist at once.
    partial = cached.with_name(f".{cached.name}.{os.getpid()}.part")
    try:
        with urllib.request.urlopen(url, timeout=60) as answer, partial.open("wb") as out:  # noqa: S310 - https from the index
            shutil.copyfileobj(answer, out)
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        pytest.skip(
            f"PyPI cannot be reached for {project.id} ({exc}); the real-world suite needs it"
        )
    if _sha256(partial) != project.sha256:
        partial.unlink()
        pytest.fail(f"{project.id}: the sdist's sha256 is not the pinned one; refusing it")
    partial.replace(cached)
    return cached


def _sdist_url(project: Project) -> str:
    request = urllib.request.Request(  # noqa: S310 - https, the index is pinned above
        f"{INDEX}/{project.name.lower().replace('_', '-')}/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310
            files = json.load(answer)["files"]
    except (urllib.error.URLError, TimeoutError, OSError, ValueError, KeyError) as exc:
        pytest.skip(f"PyPI cannot be reached ({exc}); the real-world suite needs it")
    for entry in files:
        if entry.get("hashes", {}).get("sha256") == project.sha256:
            return str(entry["url"])
    pytest.fail(f"PyPI lists no file of {project.id} with the pinned sha256")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def unpack(project: Project, into: Path) -> Path:
    """The sdist's tree at ``into``, less the files a git checkout would not have."""
    with tarfile.open(sdist(project)) as tar:
        tar.extractall(into.parent / f".{into.name}-unpacked", filter="data")
    top = next((into.parent / f".{into.name}-unpacked").iterdir())
    for name in project.drop:
        target = top / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    top.rename(into)
    return into


def as_repository(project: Project, path: Path) -> str:
    """A git repository (branch main) of the project at ``path``: one commit, tagged
    ``v<version>``; its sha."""
    unpack(project, path)
    if project.config:
        (path / ".github").mkdir(exist_ok=True)
        (path / ".github" / "patchwarden.yml").write_text(project.config)
    git_in(path, "init", "-q", "-b", "main")
    sha = git_commit(path, f"{project.id} from its sdist")
    # The release tag, as the real repository has it: setuptools-scm and hatch-vcs
    # versions come from it (pytest needs iniconfig >= 1, not 0.1.dev1).
    git_in(path, "tag", f"v{project.version}")
    return sha


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
def realworld_runner(tmp_path_factory: pytest.TempPathFactory) -> SessionRunner:
    """One cache per test process (see :func:`by_project`)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    root = tmp_path_factory.mktemp("realworld")
    return SessionRunner(
        cache=WorkspaceCache(root / "cache"), sandbox=BwrapSandbox(state_dir=root / "sandbox")
    )
