"""The setup phase: a repository's environment, built once per set of inputs.

The setup commands (the base commit's own, or detected: :mod:`app.sessions.repo_commands`)
run in the sandbox with network and the host's package configuration
(:mod:`app.sessions.pkgconfig`), on a copy of the tree mounted at ``/workspace`` and
an empty environment at ``/env``. What they leave is cached under
``<cache>/envs/<owner>/<name>/<key>``, keyed by the commands, the interpreter and the
hashes of the files that decide what gets installed, and mounted read-only at ``/env``
for every later step. An environment's first command, when it is only ``python -m venv
/env`` as Patchwarden puts it first, is a copy of the empty environment that command
makes, made once per interpreter on an empty workspace and kept in the cache
(``empty-envs/``: :mod:`app.sessions.empty_env`).

**Every tree is tested the way the base is.** An editable install points at
``/workspace``, and builds write files into the tree they ran on: setuptools-scm's
``_version.py``, ``*.egg-info``, generated parsers. Those exist only in the tree setup
ran on — and not at all when the environment comes from the cache. So the files setup
*added* to the tree are kept with the environment (``/env/.generated/``) and put into
every tree that uses it (base, patch, every bisect probe) at ``/workspace``; the
session's git excludes them, so they never become part of a patch. Same input, same
trees, same decision — cached or not.

A repository versioned from git tags (setuptools-scm, hatch-vcs) has no ``.git`` in the
sandbox; setup gets ``SETUPTOOLS_SCM_PRETEND_VERSION`` with the version git would give
(:meth:`Workspace.scm_version <app.sessions.workspace.Workspace.scm_version>`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from app.errors import PatchwardenError
from app.sessions.empty_env import EMPTY, EmptyEnvironments
from app.sessions.files import file_lock, read_confined, write_confined
from app.sessions.lockfiles import semver_key
from app.sessions.pkgconfig import PackageConfig
from app.sessions.repo_commands import ENV_MOUNT, NODE_MODULES, RepoCommands
from app.sessions.result import Step, Tree
from app.sessions.sandbox import WORKSPACE, Mount, Sandbox
from app.sessions.verify import Timeouts, make_step

log = logging.getLogger(__name__)

GENERATED = ".generated"  # inside an environment: the files setup added to the tree
COMPLETE = ".complete"
MAX_GENERATED_BYTES = 64 * 1024 * 1024
MAX_GENERATED_FILES = 5000
MAX_PACKAGE_DEPTH = 32  # nested node_modules read for installed versions
# What setup leaves in a tree that no test needs: caches, and build output folders at
# the top (``build/``, ``dist/``) which can be large. ``*.egg-info`` is kept: a
# ``setup.py develop`` install finds its metadata there.
_SKIP_DIRS = frozenset(
    {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".nox", ".eggs"}
)
_SKIP_TOP = frozenset({"build", "dist", "node_modules", ".git"})

Progress = Callable[[str], None]


class SetupFailed(PatchwardenError):
    """A setup command failed; the message says which and how, and what to change."""


@dataclass(frozen=True)
class Environment:
    """A built environment: mounted at /env; ``generated`` goes into every tree."""

    path: Path
    key: str
    cached: bool
    generated: tuple[str, ...] = ()

    def apply(self, tree: Path) -> list[str]:
        """Put the files setup generated into ``tree`` where it has none (host side,
        never through a symlink); returns their paths."""
        return apply_generated(self.path, tree)


class EnvironmentBuilder:
    """Builds (or finds in the cache) the environment for a tree's setup inputs."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        root: Path,
        timeouts: Timeouts,
        packages: PackageConfig | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.root = root
        self.timeouts = timeouts
        self.packages = packages or PackageConfig()
        self.empty = EmptyEnvironments(sandbox, root=root.parent / EMPTY, timeout=timeouts.setup)

    def key(self, commands: RepoCommands) -> str:
        return commands.env_key(
            base_python=self.sandbox.toolchain.base_python, backend=self.sandbox.backend
        )

    async def ensure(
        self,
        repo: str,
        commands: RepoCommands,
        tree: Path,
        *,
        steps: list[Step],
        secrets: list[str],
        version: str | None = None,
        progress: Progress | None = None,
        label: Tree = "base",
    ) -> Environment | None:
        """The environment for ``commands`` (None when there is no setup), building it
        on ``tree`` — the base tree, which then has the generated files in place. Raises
        :class:`SetupFailed` with the failing command."""
        if not commands.setup:
            return None
        say = progress or (lambda _: None)
        key = self.key(commands)
        owner, name = repo.split("/")
        env_dir = self.root / owner / name / key
        shown = " && ".join(" ".join(c) for c in commands.setup)
        async with file_lock(env_dir.with_suffix(".lock")):
            if (env_dir / COMPLETE).exists():
                say(f"setup: environment {key[:12]} from the cache")
                steps.append(
                    Step(
                        name="setup",
                        phase="setup",
                        tree=label,
                        argv=[shown],
                        exit_code=0,
                        duration_seconds=0.0,
                        cached=True,
                        output=f"environment {key} from the cache",
                    )
                )
                return Environment(env_dir, key, cached=True, generated=_listed(env_dir))
            say(f"setup: {shown}")
            build = env_dir.with_name(f".{key}.{uuid.uuid4().hex[:8]}")
            build.mkdir(parents=True)
            self.sandbox.prepare_writable(build)
            try:
                before = set(_tree_files(tree))
                packages = tree / NODE_MODULES
                committed = packages.is_symlink() or packages.exists()
                await self._run(commands, tree, build, steps, secrets, version, label)
                if not committed:  # packages the repository keeps in git stay its own
                    await asyncio.to_thread(_keep_packages, tree, build)
                added = sorted(set(_tree_files(tree)) - before)
                _keep_generated(tree, added, build)
                _mark_complete(build, key)
                build.rename(env_dir)
            finally:
                if build.exists():
                    await asyncio.to_thread(shutil.rmtree, build, True)
        return Environment(env_dir, key, cached=False, generated=_listed(env_dir))

    async def _run(
        self,
        commands: RepoCommands,
        tree: Path,
        build: Path,
        steps: list[Step],
        secrets: list[str],
        version: str | None,
        label: Tree = "base",
    ) -> None:
        mounts = [
            Mount(tree, WORKSPACE, writable=True),
            Mount(build, ENV_MOUNT, writable=True),
            *self.packages.mounts,
        ]
        env = {"SETUPTOOLS_SCM_PRETEND_VERSION": version} if version else {}
        masked = [*secrets, *self.packages.secrets]
        # The setup commands with the network open, then the offline ones without it.
        steps_of = [(argv, True) for argv in commands.setup]
        steps_of += [(argv, False) for argv in commands.offline]
        for n, (argv, network) in enumerate(steps_of):
            try:
                copied = await self.empty.copy(argv, build, label) if n == 0 else None
            except OSError as exc:
                raise SetupFailed(
                    f"setup failed: the empty environment could not be copied from the cache: {exc}"
                ) from exc
            if copied is not None:
                steps.append(copied)
                continue
            done = await self.sandbox.run(
                argv,
                mounts=mounts,
                env=env,
                timeout=self.timeouts.setup,
                network=network,
                package_env=self.packages.env if network else None,
            )
            steps.append(make_step(done, name="setup", phase="setup", tree=label, secrets=masked))
            if not done.ok:
                how = "timed out" if done.timed_out else f"exited {done.exit_code}"
                raise SetupFailed(
                    f"setup failed: `{' '.join(argv)}` {how} (from {commands.setup_source}; "
                    "set `setup:` in .github/patchwarden.yml to change it)"
                )


def distributions(env: Environment | None) -> dict[str, str]:
    """The Python distributions installed in ``env`` (canonical name → version), read
    from their ``*.dist-info`` folders on the host; {} without an environment."""
    if env is None:
        return {}
    found: dict[str, str] = {}
    for info in sorted(env.path.glob("lib/python*/site-packages/*.dist-info")):
        name, _, version = info.name.removesuffix(".dist-info").partition("-")
        if name and version:
            found[canonicalize_name(name)] = version
    return found


def npm_packages(env: Environment | None) -> dict[str, str]:
    """The npm packages installed in ``env`` (name → its lowest version, nested copies
    counted), read from their ``package.json`` on the host, no link followed; {} without
    an environment or packages."""
    root = env.path / NODE_MODULES if env is not None else None
    found: dict[str, str] = {}
    if root is not None and root.is_dir() and not root.is_symlink():
        _visit_packages(root, found, depth=0)
    return found


def _visit_packages(folder: Path, found: dict[str, str], *, depth: int) -> None:
    if depth > MAX_PACKAGE_DEPTH:
        return
    for entry in sorted(folder.iterdir()):
        if entry.is_symlink() or not entry.is_dir() or entry.name.startswith("."):
            continue
        scoped = entry.name.startswith("@")
        for package in sorted(entry.iterdir()) if scoped else [entry]:
            if package.is_symlink() or not package.is_dir():
                continue
            name = f"{entry.name}/{package.name}" if scoped else package.name
            version = _version_of(package / "package.json")
            if version and (name not in found or semver_key(version) < semver_key(found[name])):
                found[name] = version
            inner = package / NODE_MODULES
            if inner.is_dir() and not inner.is_symlink():
                _visit_packages(inner, found, depth=depth + 1)


def _version_of(manifest: Path) -> str | None:
    if manifest.is_symlink() or not manifest.is_file():
        return None
    try:
        version = json.loads(manifest.read_text("utf-8")).get("version")
        semver_key(str(version))
    except (ValueError, OSError, AttributeError):
        return None
    return str(version)


def _tree_files(tree: Path) -> list[str]:
    """Files (and symlinks) under ``tree``, relative, skipping caches."""
    out: list[str] = []
    for root, dirs, files in os.walk(tree, followlinks=False):
        here = Path(root)
        top = here == tree
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not (top and d in _SKIP_TOP)]
        for d in dirs:
            if (here / d).is_symlink():
                out.append((here / d).relative_to(tree).as_posix())
        for f in files:
            if not f.endswith((".pyc", ".pyo")):
                out.append((here / f).relative_to(tree).as_posix())
    return out


def _keep_packages(tree: Path, env: Path) -> None:
    """An npm project's installed packages (``node_modules``, made by setup in the tree)
    moved into the environment, which every tree then mounts at that place
    (:func:`~app.sessions.verify.tree_mounts`): the cache holds them, no tree does. A
    symlink planted in their place, or at their destination in the environment, is
    removed, never followed."""
    found, kept = tree / NODE_MODULES, env / NODE_MODULES
    # Whatever setup left at the destination (a link to a host folder, say) goes first:
    # a move into a planted link would land in the folder it names.
    if kept.is_symlink() or kept.exists():
        _remove_planted(kept)
    if found.is_symlink():
        found.unlink()
    elif found.is_dir():
        shutil.move(found, kept)


def _keep_generated(tree: Path, added: list[str], env: Path) -> None:
    """Copy the files setup added to ``tree`` into ``env/.generated`` (regular files
    only, within the caps; symlinks are not kept). ``env`` was writable by the setup
    commands: whatever they left at ``.generated`` is removed first, and every write
    goes through :func:`write_confined` (no symlink followed), so nothing planted there
    can redirect a host write."""
    _remove_planted(env / GENERATED)
    os.mkdir(env / GENERATED, 0o755)
    total = 0
    kept = 0
    for relative in added:
        data = read_confined(tree, relative, limit=MAX_GENERATED_BYTES + 1)
        if data is None:
            continue  # not a regular file inside the tree
        if kept >= MAX_GENERATED_FILES or total + len(data) > MAX_GENERATED_BYTES:
            log.warning(
                "setup generated more than can be kept; %s and later are left out", relative
            )
            break
        mode = 0o755 if os.lstat(tree / relative).st_mode & 0o111 else 0o644
        write_confined(env, f"{GENERATED}/{relative}", data, mode=mode, exclusive=True)
        total += len(data)
        kept += 1


def _remove_planted(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)  # does not follow symlinks inside


def _mark_complete(env: Path, key: str) -> None:
    """``env/.complete``, created anew (a link planted there is removed, not followed)."""
    marker = env / COMPLETE
    _remove_planted(marker)
    fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, (key + "\n").encode())
    finally:
        os.close(fd)


def _listed(env_dir: Path) -> tuple[str, ...]:
    folder = env_dir / GENERATED
    if not folder.is_dir():
        return ()
    return tuple(sorted(_tree_files(folder)))


def apply_generated(env: Path, tree: Path) -> list[str]:
    """Copy every file of ``env/.generated`` into ``tree`` at the same relative path
    unless the tree has something there; returns every path it holds. Both sides are
    read and written without following a symlink."""
    folder = env / GENERATED
    if folder.is_symlink() or not folder.is_dir():
        return []
    paths = sorted(_tree_files(folder))
    for relative in paths:
        if os.path.lexists(tree / relative):
            continue
        data = read_confined(env, f"{GENERATED}/{relative}", limit=MAX_GENERATED_BYTES + 1)
        if data is None:
            continue
        try:
            write_confined(tree, relative, data, mode=0o644, exclusive=True)
        except OSError as exc:  # a symlinked folder on the way: leave it out
            log.warning("could not place generated file %s: %s", relative, exc)
    return paths
