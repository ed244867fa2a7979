"""The sandbox: where a session's untrusted commands run.

One small interface, :meth:`Sandbox.run` (here, with the rules every backend shares:
mounts, the environment allowlist, the toolchain), three backends in
:mod:`app.sessions.backends`, and the process runner under them in
:mod:`app.sessions.process` (docs/security.md explains the model,
docs/decisions/003-sandbox.md the choices):

``bwrap`` (default on Linux)
    bubblewrap with every namespace unshared (no network unless the trusted setup phase
    asks for it), ``--die-with-parent``, ``--new-session``, the system mounted
    read-only, a synthetic ``/etc/passwd``, a private size-capped ``/tmp``, the
    environment cleared down to an allowlist, and the caller's mounts as the only
    writable places. Commands run as an unprivileged uid: when Patchwarden itself is
    root, bwrap runs in privileged mode and ``setpriv`` drops to ``sandbox_uid`` (a
    real, unprivileged uid, so ``RLIMIT_NPROC`` is enforced — it is not for root);
    otherwise a user namespace maps the service user to uid 65534 inside.
``docker``
    ``docker run --network none --read-only --cap-drop ALL --security-opt
    no-new-privileges`` with pids, memory and CPU limits, for servers with a Docker
    engine; the image is built from ``sandbox/Dockerfile``.
``unsafe-local``
    no isolation at all, only when asked for explicitly; it warns on every use.

Limits on wall time, CPU time, address space, processes and file size are set with
``prlimit`` on the sandbox's process tree; output is captured up to a cap (head and
tail kept, a marker in between) and the whole tree is killed at the timeout — bwrap's
``--die-with-parent`` takes the PID namespace down with it.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import functools
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.errors import PatchwardenError
from app.redact import find_secrets
from app.sessions.process import Completed, Limits, Wrapped, run_captured
from app.sessions.result import SandboxInfo

log = logging.getLogger(__name__)

Backend = Literal["bwrap", "docker", "unsafe-local"]
BACKENDS: tuple[Backend, ...] = ("bwrap", "docker", "unsafe-local")

WORKSPACE = "/workspace"  # where the session's tree appears inside the sandbox
SANDBOX_TMP = "/tmp"  # noqa: S108 - the sandbox's own private tmpfs, not the host's
SANDBOX_SHM = "/dev/shm"  # noqa: S108 - likewise: POSIX shared memory, private and capped

# The environment inside is this allowlist plus what the caller passes explicitly.
BASE_ENV = {
    "HOME": SANDBOX_TMP,
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "TERM": "dumb",
    "NO_COLOR": "1",
    "CI": "true",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_NO_INPUT": "1",
}
# The address space is capped (RLIMIT_AS): node's WebAssembly then checks bounds itself
# instead of reserving guard regions past the cap (vitest's parser is Wasm). Only where
# the host's node takes the flag (20.15 and later): an older one refuses to start at all.
NODE_WASM_OPTION = "--disable-wasm-trap-handler"


@functools.cache
def node_options() -> dict[str, str]:
    """``NODE_OPTIONS`` for every command: :data:`NODE_WASM_OPTION` where the host's node
    starts with it (asked once), nothing otherwise (or without node)."""
    node = shutil.which("node")
    if node is None:
        return {}
    try:
        done = subprocess.run(  # noqa: S603 - a fixed argument list, no shell
            [node, "-e", "0"],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NODE_OPTIONS": NODE_WASM_OPTION},
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return {"NODE_OPTIONS": NODE_WASM_OPTION} if done.returncode == 0 else {}


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
SECRET_NAME = re.compile(r"(?i)(token|secret|passw|private|credential|api_?key|auth)")

# /etc entries a toolchain needs; nothing else of the host's /etc is visible.
ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "nsswitch.conf",
    "hosts",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "mime.types",
)
ETC_NETWORK_FILES = ("resolv.conf", "gai.conf")
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


class SandboxError(PatchwardenError):
    """The sandbox cannot run as asked (missing tool, refused mount or variable)."""


@dataclass(frozen=True)
class Mount:
    """A host path made visible inside the sandbox at ``target``."""

    source: Path
    target: str
    writable: bool = False

    def __post_init__(self) -> None:
        # Checked here, once for every backend: a relative or `..` target could land
        # anywhere, and a comma or newline would inject options into `docker --mount`.
        if not self.target.startswith("/") or ".." in self.target.split("/"):
            raise SandboxError(f"mount target must be an absolute path: {self.target!r}")
        for text in (str(self.source), self.target):
            if any(ch in text for ch in ",\n\0"):
                raise SandboxError(f"mount path must not contain a comma or newline: {text!r}")


@dataclass(frozen=True)
class Call:
    """One command as a backend sees it: what to run, where, with what."""

    argv: list[str]
    mounts: tuple[Mount, ...]
    cwd: str
    env: dict[str, str]
    limits: Limits
    network: bool
    tmp: str | None = None  # a host directory standing in for /tmp (unsafe-local only)


def _check_name(name: str) -> bool:
    if not ENV_NAME.match(name):
        raise SandboxError(f"refusing sandbox variable {name!r}: not a valid name")
    return True


def check_env(env: Mapping[str, str]) -> dict[str, str]:
    """Refuse variables that could carry a credential into the sandbox (fail closed)."""
    for name, value in env.items():
        _check_name(name)
        if SECRET_NAME.search(name) or name.startswith("PATCHWARDEN_"):
            raise SandboxError(
                f"refusing to pass {name} into the sandbox: secrets never enter it "
                "(docs/security.md)"
            )
        if find_secrets(value):
            raise SandboxError(f"refusing to pass {name} into the sandbox: it holds a credential")
    return dict(env)


@dataclass(frozen=True)
class Toolchain:
    """Host directories every sandbox sees read-only at the same path.

    ``python`` is the interpreter that has pytest, ruff, semgrep and bandit (Patchwarden's
    own environment); ``base_python`` is what repository environments are built from.
    """

    python: str
    bin_dir: str
    base_python: str
    paths: tuple[str, ...]

    @classmethod
    def current(cls) -> Toolchain:
        # Normalised but not resolved: a venv's python is a symlink out of the venv, and
        # `../.venv/bin/python` leaves a `..` in sys.executable that means nothing in
        # the sandbox, where the directory it steps out of is not mounted.
        executable = os.path.normpath(os.path.abspath(sys.executable))
        prefix = os.path.normpath(os.path.abspath(sys.prefix))
        prefixes = {os.path.realpath(prefix), os.path.realpath(sys.base_prefix)}
        if prefix != os.path.realpath(prefix):
            prefixes.add(prefix)
        base = getattr(sys, "_base_executable", sys.executable)
        return cls(
            python=executable,
            bin_dir=str(Path(executable).parent),
            base_python=os.path.realpath(base),
            paths=tuple(sorted(p for p in prefixes if not _under_system(p))),
        )


def _under_system(path: str) -> bool:
    return any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRS)


class Sandbox(abc.ABC):
    """Runs argv lists somewhere isolated. Backends differ only in :meth:`_wrap`."""

    backend: Backend
    isolated: bool = True
    accounts_usage = False  # whether wait4's rusage reflects the command's own tree
    host_toolchain = True  # whether the toolchain's paths are the host's (not an image's)

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        toolchain: Toolchain | None = None,
        uid: int = 65534,
    ) -> None:
        self.limits = limits or Limits()
        self.toolchain = toolchain or Toolchain.current()
        self.uid = uid

    # -- the interface -------------------------------------------------------
    async def run(
        self,
        argv: Sequence[str],
        *,
        mounts: Sequence[Mount] = (),
        cwd: str = WORKSPACE,
        env: Mapping[str, str] | None = None,
        timeout: float = 600.0,  # noqa: ASYNC109 - enforced by killing the tree, not by cancelling
        limits: Limits | None = None,
        network: bool = False,
        package_env: Mapping[str, str] | None = None,
    ) -> Completed:
        """Run ``argv`` inside the sandbox and return what happened; never raises for
        a command that fails, only for one that cannot be started as asked.

        ``package_env`` is the host's package-client configuration
        (:mod:`app.sessions.pkgconfig`): only with ``network`` (the setup phase), and
        its values may hold an index's credentials, which the caller masks."""
        if not argv:
            raise SandboxError("empty command")
        for m in mounts:
            if not m.source.exists():
                raise SandboxError(f"mount source does not exist: {m.source}")
        limits = limits or self.limits
        log.debug("sandbox %s: %s", self.backend, argv)
        with self._private_tmp() as tmp:
            wrapped = self.wrap(
                argv,
                mounts=mounts,
                cwd=cwd,
                env=env,
                limits=limits,
                network=network,
                tmp=tmp,
                package_env=package_env,
            )
            stop = threading.Event()
            running = asyncio.ensure_future(
                asyncio.to_thread(
                    run_captured,
                    wrapped,
                    shown=list(argv),
                    timeout=timeout,
                    output_bytes=limits.output_bytes,
                    account=self.accounts_usage,
                    stop=stop,
                )
            )
            try:
                return await asyncio.shield(running)
            except asyncio.CancelledError:
                # A thread cannot be cancelled: kill the tree, wait for the thread.
                stop.set()
                await asyncio.gather(running, return_exceptions=True)
                raise

    def wrap(
        self,
        argv: Sequence[str],
        *,
        mounts: Sequence[Mount] = (),
        cwd: str = WORKSPACE,
        env: Mapping[str, str] | None = None,
        limits: Limits | None = None,
        network: bool = False,
        tmp: str | None = None,
        package_env: Mapping[str, str] | None = None,
    ) -> Wrapped:
        """The host command :meth:`run` would start (no process is started)."""
        if package_env and not network:
            raise SandboxError(
                "the package configuration goes to the setup phase only (the one with network)"
            )
        packages = {k: v for k, v in (package_env or {}).items() if _check_name(k)}
        call = Call(
            argv=list(argv),
            mounts=tuple(mounts),
            cwd=cwd,
            env={
                **BASE_ENV,
                **node_options(),
                **packages,
                "PATH": self.path_var(mounts),
                **check_env(env or {}),
            },
            limits=limits or self.limits,
            network=network,
            tmp=tmp,
        )
        return self._wrap(call)

    def _private_tmp(self) -> contextlib.AbstractContextManager[str | None]:
        """A host directory for the command's /tmp; the isolating backends make their own."""
        return contextlib.nullcontext()

    def info(self, *, network: bool = False) -> SandboxInfo:
        return SandboxInfo(
            backend=self.backend,
            isolated=self.isolated,
            network=network,
            uid=self.uid,
            limits=self.limits.as_dict(),
        )

    def path_var(self, mounts: Sequence[Mount]) -> str:
        dirs = [f"{m.target}/bin" for m in mounts if m.target == "/env"]
        dirs += [self.toolchain.bin_dir, "/usr/local/bin", "/usr/bin", "/bin"]
        # An npm project's own tools (its test runner), from the environment's packages or
        # its own committed ones: last, so none of them stands in for a system command.
        if any(m.target == WORKSPACE for m in mounts):
            dirs.append(f"{WORKSPACE}/node_modules/.bin")
        return ":".join(dict.fromkeys(dirs))

    def prepare_writable(self, path: Path) -> None:  # noqa: B027 - optional hook
        """Make ``path`` writable by the sandbox's uid (a no-op unless it must chown)."""

    def check(self) -> str:
        """A one-line description of what this backend enforces; raises if it cannot run."""
        return self.backend

    @abc.abstractmethod
    def _wrap(self, call: Call) -> Wrapped:
        """The host process that runs ``call`` isolated as this backend does it."""


def publish_folder(target: Path, fill: Callable[[Path], None]) -> Path:
    """``target``, made once: ``fill`` writes a temporary sibling, which is renamed into
    place, so nobody sees it half-made (when two make it at once, the first rename wins).
    A folder named by what goes into it is then never stale."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        fill(build)
        build.chmod(0o755)
        try:
            build.rename(target)
        except OSError:
            if not target.is_dir():
                raise
    finally:
        if build.exists():
            shutil.rmtree(build, ignore_errors=True)
    return target


def chown_tree(path: Path, uid: int) -> None:
    """Give ``path`` and everything under it to ``uid`` (symlinks themselves, not targets)."""
    os.chown(path, uid, uid, follow_symlinks=False)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)
