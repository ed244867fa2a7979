"""The empty environment every Python setup starts from: what ``<base python> -m venv
/env`` makes, made once per interpreter and copied for each new environment.

``python -m venv`` takes seconds (it installs pip from the wheels it carries); a copy a
fraction of one. The environment is made by its own sandboxed run on an empty workspace,
so no repository's files (a ``venv.py`` of its own, which ``python -m venv`` in its tree
would import) have a say in what every later environment starts from, and it is then
the service's files, not the sandbox user's. It is kept in the cache
(``<cache>/empty-envs/<digest>``), named by the interpreter (its path, size and
modification time) and the pip wheels ``venv`` installs, so a new interpreter or pip
gets a new one. Where the interpreter is an image's (docker) none is made.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import shutil
import time
import uuid
from pathlib import Path

from app.sessions.files import file_lock
from app.sessions.repo_commands import ENV_MOUNT, VENV_COMMAND
from app.sessions.result import Step, Tree
from app.sessions.sandbox import WORKSPACE, Mount, Sandbox, SandboxError, chown_tree

log = logging.getLogger(__name__)

EMPTY = "empty-envs"  # in the cache, beside envs/
# Empty environments this process could not make: not tried again (each session would
# pay for the attempt and then for the command itself).
_UNMADE: set[Path] = set()


class EmptyEnvironments:
    """The empty environments of one cache folder (``root``)."""

    def __init__(self, sandbox: Sandbox, *, root: Path, timeout: float) -> None:
        self.sandbox = sandbox
        self.root = root
        self.timeout = timeout

    async def copy(self, argv: list[str], build: Path, label: Tree) -> Step | None:
        """``argv``'s empty environment copied into ``build``, as the setup step that
        made it; None when ``argv`` is not the command Patchwarden puts first or none
        could be made (the command then runs as it is). Raises ``OSError`` when the
        copy fails."""
        fresh = await self._fresh(argv)
        return await self._copy_fresh(fresh, build, argv, label) if fresh is not None else None

    async def _fresh(self, argv: list[str]) -> Path | None:
        """The empty environment ``argv`` makes, from the cache, when ``argv`` is the
        command Patchwarden puts first (``<base python> -m venv /env``), else None. It is
        made once per interpreter (its path, size and modification time, and the pip
        wheels ``venv`` installs from) by its own sandboxed run on an empty workspace: no
        repository's files (a ``venv.py`` of its own) have a say in what every later
        environment starts from; then it is the service's, not the sandbox user's. None
        where the interpreter is not the host's (an image's), or when it cannot be made
        (the command then runs as it is; a failure is not tried again by this process)."""
        base = self.sandbox.toolchain.base_python
        if argv != [base, "-m", VENV_COMMAND, ENV_MOUNT] or not self.sandbox.host_toolchain:
            return None
        try:
            stat = os.stat(base)
        except OSError:
            return None
        wheels = sorted(w.name for d in _wheel_folders(base) for w in d.glob("*.whl"))
        made_by = "\0".join([base, str(stat.st_size), str(stat.st_mtime_ns), *wheels])
        fresh = self.root / hashlib.sha256(made_by.encode()).hexdigest()[:24]
        if fresh.is_dir() or fresh in _UNMADE:
            return fresh if fresh.is_dir() else None
        try:
            return await self._make_fresh(argv, fresh)
        except (OSError, SandboxError) as exc:
            log.warning("no empty environment kept (%s): %s", " ".join(argv), exc)
            _UNMADE.add(fresh)
            return None

    async def _make_fresh(self, argv: list[str], fresh: Path) -> Path | None:
        """:meth:`_fresh`'s environment made, under a lock (a second maker waits and
        finds it)."""
        fresh.parent.mkdir(parents=True, exist_ok=True)
        async with file_lock(fresh.with_suffix(".lock")):
            if await asyncio.to_thread(fresh.is_dir):
                return fresh
            build = fresh.with_name(f".{fresh.name}.{uuid.uuid4().hex[:8]}")
            empty = build.with_name(build.name + ".workspace")
            try:
                for folder in (build, empty):
                    folder.mkdir()
                    self.sandbox.prepare_writable(folder)
                mounts = [Mount(empty, WORKSPACE), Mount(build, ENV_MOUNT, writable=True)]
                done = await self.sandbox.run(argv, mounts=mounts, timeout=self.timeout)
                if not done.ok:
                    log.warning(
                        "no empty environment kept: `%s` failed: %s",
                        " ".join(argv),
                        (done.stdout + done.stderr)[-500:],
                    )
                    _UNMADE.add(fresh)
                    return None
                if os.geteuid() == 0:  # the sandbox user's until now
                    chown_tree(build, os.getuid())
                build.rename(fresh)
            finally:
                for folder in (build, empty):
                    await asyncio.to_thread(shutil.rmtree, folder, True)
        return fresh

    async def _copy_fresh(self, fresh: Path, build: Path, argv: list[str], label: Tree) -> Step:
        """The empty environment ``fresh`` copied into ``build`` (its links kept: they
        point where the interpreter is, in and out of the sandbox) and made the
        sandbox's to write: ``python -m venv`` takes seconds (it installs pip), a copy
        a fraction of one."""
        started = time.monotonic()
        await asyncio.to_thread(shutil.copytree, fresh, build, symlinks=True, dirs_exist_ok=True)
        self.sandbox.prepare_writable(build)
        return Step(
            name="setup",
            phase="setup",
            tree=label,
            argv=argv,
            exit_code=0,
            duration_seconds=round(time.monotonic() - started, 3),
            cached=True,
            output=f"the empty environment this command makes, from the cache ({fresh.name[:12]})",
        )


def _wheel_folders(base_python: str) -> list[Path]:
    """Where ``venv`` finds the pip it installs: the interpreter's own ``ensurepip``
    wheels, or a distribution's shared ones (Debian's ``/usr/share/python-wheels``)."""
    prefix = Path(base_python).parent.parent
    found = list(prefix.glob("lib/python3*/ensurepip/_bundled"))
    shared = Path("/usr/share/python-wheels")
    return [*found, shared] if shared.is_dir() else found
