"""Real projects' sdists from PyPI, pinned by sha256, as git repositories.

Downloaded once and cached (``$PATCHWARDEN_TEST_CACHE``, default
``~/.cache/patchwarden-tests``). Used by the real-world suite (tests/realworld/) and the
eval's real-project tasks (bench/agent_eval.py); nothing of the projects is kept in this
repository.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

from app.git import git_env
from tests.realworld.projects import Project

INDEX = os.environ.get("PATCHWARDEN_TEST_PYPI", "https://pypi.org/simple")
CACHE = Path(
    os.environ.get("PATCHWARDEN_TEST_CACHE") or Path.home() / ".cache" / "patchwarden-tests"
)


class Unavailable(Exception):
    """PyPI cannot be reached for the sdist."""


class Mismatch(Exception):
    """The file PyPI serves is not the pinned one."""


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
        raise Unavailable(
            f"PyPI cannot be reached for {project.id} ({exc}); the real-world suite needs it"
        ) from None
    if _sha256(partial) != project.sha256:
        partial.unlink()
        raise Mismatch(f"{project.id}: the sdist's sha256 is not the pinned one; refusing it")
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
        raise Unavailable(
            f"PyPI cannot be reached ({exc}); the real-world suite needs it"
        ) from None
    for entry in files:
        if entry.get("hashes", {}).get("sha256") == project.sha256:
            return str(entry["url"])
    raise Mismatch(f"PyPI lists no file of {project.id} with the pinned sha256")


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
    _git(path, "init", "-q", "-b", "main")
    sha = commit(path, f"{project.id} from its sdist")
    # The release tag, as the real repository has it: setuptools-scm and hatch-vcs
    # versions come from it (pytest needs iniconfig >= 1, not 0.1.dev1).
    _git(path, "tag", f"v{project.version}")
    return sha


def _git(path: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=path, env=git_env(path), check=True, capture_output=True
    )
    return done.stdout.decode()


def commit(path: Path, message: str, *, author: str = "T <t@example.com>") -> str:
    """Commit everything in the work tree at ``path``; the new sha."""
    name, email = author[: author.index(" <")], author[author.index("<") + 1 : -1]
    _git(path, "add", "-A")
    _git(path, "-c", f"user.name={name}", "-c", f"user.email={email}", "commit", "-qm", message)
    return _git(path, "rev-parse", "HEAD").strip()
