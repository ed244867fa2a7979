"""Sandbox backends: where a session's untrusted commands run.

One small interface, :meth:`Sandbox.run`, three backends (docs/security.md explains the
model, docs/decisions/003-sandbox.md the choices):

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
import hashlib
import logging
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal, NamedTuple

from app.errors import PatchwardenError
from app.redact import find_secrets
from app.sessions.result import SandboxInfo, Usage

log = logging.getLogger(__name__)

Backend = Literal["bwrap", "docker", "unsafe-local"]
BACKENDS: tuple[Backend, ...] = ("bwrap", "docker", "unsafe-local")

WORKSPACE = "/workspace"  # where the session's tree appears inside the sandbox
SANDBOX_TMP = "/tmp"  # noqa: S108 - the sandbox's own private tmpfs, not the host's
MiB = 1024 * 1024

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
class Limits:
    """Resource caps for one command's whole process tree."""

    cpu_seconds: int = 900
    memory_bytes: int = 4096 * MiB  # address space per process (RLIMIT_AS)
    processes: int = 256  # RLIMIT_NPROC of the sandbox uid
    file_size_bytes: int = 1024 * MiB  # largest file a process may write
    output_bytes: int = 1 * MiB  # kept per stream (stdout, stderr); the rest is cut
    tmp_bytes: int = 512 * MiB  # the private /tmp

    def as_dict(self) -> dict[str, int]:
        return {
            "cpu_seconds": self.cpu_seconds,
            "memory_bytes": self.memory_bytes,
            "processes": self.processes,
            "file_size_bytes": self.file_size_bytes,
            "output_bytes": self.output_bytes,
            "tmp_bytes": self.tmp_bytes,
        }


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


class Wrapped(NamedTuple):
    """The host process that runs a :class:`Call`."""

    argv: list[str]
    env: dict[str, str]
    cwd: str | None = None
    on_timeout: tuple[tuple[str, ...], ...] = ()  # commands run at the timeout, before the kill
    stdin: bytes | None = None  # fed to the process first (bwrap's `--args 0`), then EOF


@dataclass(frozen=True)
class Completed:
    argv: list[str]  # the command as asked, without the sandbox's own wrapper
    exit_code: int | None  # None when the tree was killed (timeout)
    stdout: str
    stderr: str
    duration_seconds: float
    timed_out: bool = False
    killed_by: str | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    usage: Usage = field(default_factory=Usage)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def truncated(self) -> bool:
        return self.stdout_truncated or self.stderr_truncated


class _Capture:
    """Keeps the first and last ``cap/2`` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:  # trim rarely, not per chunk
                del self.tail[: len(self.tail) - self.tail_cap]

    @property
    def truncated(self) -> bool:
        return self.total > self.head_cap + self.tail_cap

    def text(self) -> str:
        tail = bytes(self.tail[-self.tail_cap :]) if self.tail_cap else b""
        if not self.truncated:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")
        cut = self.total - len(self.head) - len(tail)
        marker = f"\n[... {cut} bytes of output cut by Patchwarden ...]\n"
        return self.head.decode("utf-8", "replace") + marker + tail.decode("utf-8", "replace")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def run_captured(
    wrapped: Wrapped,
    *,
    shown: list[str],
    timeout: float,
    output_bytes: int,
    account: bool = True,
    stop: threading.Event | None = None,
) -> Completed:
    """Run ``wrapped`` in its own session; capture output; kill the group at ``timeout``
    or as soon as ``stop`` is set (the caller was cancelled). ``shown`` is the command as
    the caller asked for it (what the result reports).

    Blocking (call it through :func:`asyncio.to_thread`). The exit status and resource
    usage come from ``wait4``, so they cover every descendant the process waited for.
    """
    started = time.monotonic()
    proc = subprocess.Popen(  # noqa: S603 - argv list, no shell
        wrapped.argv,
        stdin=subprocess.DEVNULL if wrapped.stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=wrapped.env,
        cwd=wrapped.cwd,
        start_new_session=True,
        close_fds=True,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    if proc.stdin is not None:
        # bwrap reads its `--args 0` before anything runs; then the command sees EOF.
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(wrapped.stdin or b"")
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    out, err = _Capture(output_bytes), _Capture(output_bytes)
    done = threading.Event()
    timed_out = threading.Event()
    stop = stop or threading.Event()

    reason: list[str] = []

    def kill_at_deadline() -> None:
        cancelled = stop.wait(timeout)
        if done.is_set():
            return
        reason.append("cancelled" if cancelled else "timeout")
        timed_out.set()
        for extra in wrapped.on_timeout:
            subprocess.run(extra, capture_output=True, timeout=30, check=False)  # noqa: S603
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_at_deadline, daemon=True)
    killer.start()
    pump = threading.Thread(target=_pump, args=(proc.stdout, proc.stderr, out, err, done))
    pump.daemon = True
    pump.start()
    _, status, rusage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    # The tree is gone (bwrap) or detached; give the pipes a moment to reach EOF.
    done.set()
    stop.set()  # releases the killer thread
    pump.join(timeout=5)
    proc.stdout.close()
    proc.stderr.close()
    duration = time.monotonic() - started
    usage = Usage(wall_seconds=round(duration, 4))
    if account:
        usage = Usage(
            wall_seconds=round(duration, 4),
            cpu_seconds=round(rusage.ru_utime + rusage.ru_stime, 4),
            max_rss_kb=int(rusage.ru_maxrss),
        )
    killed_by: str | None = None
    exit_code: int | None = proc.returncode
    if timed_out.is_set():
        exit_code = None
        killed_by = reason[0]
    elif exit_code is not None and exit_code < 0:
        killed_by = _signal_name(-exit_code)
    elif exit_code is not None and exit_code > 128 and exit_code - 128 in _LIMIT_SIGNALS:
        # bwrap reports a child killed by signal N as exit status 128 + N.
        killed_by = _signal_name(exit_code - 128)
    return Completed(
        argv=shown,
        exit_code=exit_code,
        stdout=out.text(),
        stderr=err.text(),
        duration_seconds=round(duration, 4),
        timed_out=timed_out.is_set(),
        killed_by=killed_by,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        usage=usage,
    )


_LIMIT_SIGNALS = {signal.SIGKILL, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGSEGV}


def _pump(
    stdout: IO[bytes], stderr: IO[bytes], out: _Capture, err: _Capture, done: threading.Event
) -> None:
    sel = selectors.DefaultSelector()
    for stream, capture in ((stdout, out), (stderr, err)):
        os.set_blocking(stream.fileno(), False)
        sel.register(stream, selectors.EVENT_READ, capture)
    quiet_since: float | None = None
    while sel.get_map():
        events = sel.select(timeout=0.2)
        if not events and done.is_set():
            # The process exited; a detached grandchild may hold the pipe open.
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > 2.0:
                break
        for key, _ in events:
            try:
                chunk = os.read(key.fd, 65536)
            except BlockingIOError:
                continue
            if chunk:
                key.data.feed(chunk)
            else:
                sel.unregister(key.fileobj)
    sel.close()


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
            env={**BASE_ENV, **packages, "PATH": self.path_var(mounts), **check_env(env or {})},
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


def prlimit_argv(limits: Limits) -> list[str]:
    prlimit = shutil.which("prlimit") or "/usr/bin/prlimit"
    return [
        prlimit,
        f"--cpu={limits.cpu_seconds}",
        f"--as={limits.memory_bytes}",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_size_bytes}",
        "--core=0",
        "--",
    ]


class BwrapSandbox(Sandbox):
    backend: Backend = "bwrap"

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        toolchain: Toolchain | None = None,
        uid: int = 65534,
        state_dir: Path,
        bwrap: str | None = None,
    ) -> None:
        super().__init__(limits=limits, toolchain=toolchain, uid=uid)
        self.bwrap = bwrap or shutil.which("bwrap") or ""
        self.privileged = os.geteuid() == 0
        self.setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
        if not self.privileged:
            self.uid = 65534  # the user namespace maps the service user to this uid
        self.state_dir = state_dir
        self._etc = {net: self._build_etc(state_dir, network=net) for net in (False, True)}

    def _build_etc(self, state_dir: Path, *, network: bool) -> Path:
        """The sandbox's whole /etc, built once: the allowlisted host files plus a
        synthetic passwd/group. One bind instead of a dozen saves ~5 ms per start.

        The directory is named by what went into it, so a changed host file (or uid)
        makes a new one, and concurrent builders cannot see a half-built copy."""
        names = ETC_FILES + (ETC_NETWORK_FILES if network else ())
        material = [str(self.uid)]
        for name in names:
            with contextlib.suppress(OSError):
                st = os.stat(f"/etc/{name}")
                material.append(f"{name}:{st.st_mtime_ns}:{st.st_size}")
        digest = hashlib.sha256("\n".join(material).encode()).hexdigest()[:16]
        etc = state_dir / f"etc-{'net-' if network else ''}{digest}"
        uid = self.uid

        def fill(build: Path) -> None:
            for name in names:
                source, target = Path("/etc") / name, build / name
                with contextlib.suppress(OSError):
                    if source.is_dir():
                        shutil.copytree(source, target, symlinks=True)
                    elif source.exists():
                        shutil.copyfile(source, target)  # resolv.conf is often a link
            (build / "passwd").write_text(
                f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
                f"sandbox:x:{uid}:{uid}:Patchwarden sandbox:/tmp:/usr/sbin/nologin\n"
            )
            (build / "group").write_text(f"root:x:0:\nsandbox:x:{uid}:\n")

        return publish_folder(etc, fill)

    def check(self) -> str:
        if not self.bwrap:
            raise SandboxError(
                "bubblewrap is not installed: apt-get install bubblewrap "
                "(or set PATCHWARDEN_SANDBOX=docker)"
            )
        if self.privileged and not os.path.exists(self.setpriv):
            raise SandboxError("running as root needs setpriv (util-linux) to drop privileges")
        mode = (
            f"privileged bwrap, setpriv to uid {self.uid}"
            if self.privileged
            else "user namespace, uid 65534 inside"
        )
        return f"bwrap: no network, read-only system, {mode}, prlimit caps"

    def prepare_writable(self, path: Path) -> None:
        if self.privileged:
            chown_tree(path, self.uid)

    def _wrap(self, call: Call) -> Wrapped:
        if not self.bwrap:
            self.check()
        args: list[str] = [self.bwrap]
        if self.privileged:
            args += ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            args += ["--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534"]
            args += ["--disable-userns"]
        if self.privileged and not call.network:
            args.append("--unshare-net")
        elif not self.privileged and call.network:
            args.append("--share-net")
        args += ["--die-with-parent", "--new-session", "--hostname", "sandbox"]
        made: set[str] = {"/"}
        for d in SYSTEM_DIRS:
            if os.path.islink(d):
                args += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                args += ["--ro-bind", d, d]
            made.add(d)
        args += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--ro-bind",
            str(self._etc[call.network]),
            "/etc",
        ]
        args += ["--size", str(call.limits.tmp_bytes), "--perms", "1777", "--tmpfs", SANDBOX_TMP]
        made.add(SANDBOX_TMP)
        made.add("/etc")
        binds = [Mount(Path(p), p) for p in self.toolchain.paths] + list(call.mounts)
        for m in binds:
            # bwrap creates missing parents 0700; make them traversable for the uid.
            parent = str(Path(m.target).parent)
            chain: list[str] = []
            while parent not in made:
                chain.append(parent)
                parent = str(Path(parent).parent)
            for d in reversed(chain):
                args += ["--perms", "0755", "--dir", d]
                made.add(d)
            args += ["--bind" if m.writable else "--ro-bind", str(m.source), m.target]
            made.add(m.target)
        # The environment's values (an index's credentials among them) go through
        # stdin (`--args 0`), never argv, where any user of the host could read them.
        args += ["--chdir", call.cwd, "--clearenv", "--args", "0"]
        variables = [part for name, value in call.env.items() for part in ("--setenv", name, value)]
        if any("\0" in part for part in variables):
            raise SandboxError("a sandbox variable holds a NUL byte")
        blob = b"".join(part.encode() + b"\0" for part in variables)
        if self.privileged:
            args += [
                "--",
                self.setpriv,
                f"--reuid={self.uid}",
                f"--regid={self.uid}",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
                "--",
            ]
        else:
            args.append("--")
        host_env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        return Wrapped(prlimit_argv(call.limits) + args + call.argv, host_env, stdin=blob)


class DockerSandbox(Sandbox):
    """``docker run`` with the strictest flags; the image comes from sandbox/Dockerfile.

    The toolchain lives in the image (``/opt/patchwarden``), not on the host.
    """

    backend: Backend = "docker"

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        image: str = "patchwarden-sandbox:latest",
        docker: str | None = None,
        uid: int = 65534,
        cpus: float = 2.0,
    ) -> None:
        toolchain = Toolchain(
            python="/opt/patchwarden/bin/python",
            bin_dir="/opt/patchwarden/bin",
            base_python="/usr/local/bin/python3",
            paths=(),
        )
        super().__init__(limits=limits, toolchain=toolchain, uid=uid)
        self.image = image
        self.docker = docker or shutil.which("docker") or "docker"
        self.cpus = cpus

    def check(self) -> str:
        if not shutil.which(self.docker):
            raise SandboxError("docker is not installed (PATCHWARDEN_SANDBOX=docker)")
        return f"docker: image {self.image}, --network none, --read-only, --cap-drop ALL"

    def prepare_writable(self, path: Path) -> None:
        if os.geteuid() == 0:
            chown_tree(path, self.uid)

    def _wrap(self, call: Call) -> Wrapped:
        name = f"patchwarden-{uuid.uuid4().hex[:12]}"
        args = [self.docker, "run", "--rm", "--name", name, "--init"]
        args += ["--network", "bridge" if call.network else "none"]
        args += ["--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
        args += ["--pids-limit", str(call.limits.processes)]
        memory = str(call.limits.memory_bytes)
        args += ["--memory", memory, "--memory-swap", memory]
        args += ["--cpus", f"{self.cpus:g}"]
        args += ["--ulimit", f"cpu={call.limits.cpu_seconds}"]
        args += ["--ulimit", f"fsize={call.limits.file_size_bytes}"]
        args += ["--ulimit", "core=0"]
        args += ["--user", f"{self.uid}:{self.uid}"]
        args += ["--tmpfs", f"{SANDBOX_TMP}:rw,nosuid,nodev,size={call.limits.tmp_bytes}"]
        for m in call.mounts:
            mode = "rw" if m.writable else "ro"
            args += ["--mount", f"type=bind,source={m.source},target={m.target},{mode}"]
        args += ["--workdir", call.cwd]
        # `--env NAME` takes the value from docker's own environment: never in argv
        # (but PATH, HOME and LANG, which docker itself needs, are plain values).
        host_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        for key, value in call.env.items():
            if key in ("PATH", "HOME", "LANG"):
                args += ["--env", f"{key}={value}"]
            else:
                args += ["--env", key]
                host_env[key] = value
        args += [self.image, *call.argv]
        return Wrapped(args, host_env, on_timeout=((self.docker, "kill", name),))


class UnsafeLocalSandbox(Sandbox):
    """No isolation: commands run on the host as Patchwarden's own user.

    Mount targets are rewritten to their host paths in argv, cwd and env. Only for
    machines without bubblewrap, and only with an explicit flag; it warns every time.
    """

    backend: Backend = "unsafe-local"
    isolated = False
    accounts_usage = True

    def check(self) -> str:
        return "unsafe-local: NO ISOLATION (network, files and processes of the host)"

    def path_var(self, mounts: Sequence[Mount]) -> str:
        return _rewrite(super().path_var(mounts), mounts)

    def _private_tmp(self) -> contextlib.AbstractContextManager[str | None]:
        return tempfile.TemporaryDirectory(prefix="patchwarden-tmp-", ignore_cleanup_errors=True)

    def _wrap(self, call: Call) -> Wrapped:
        log.warning(
            "UNSAFE: running %s with no sandbox (PATCHWARDEN_SANDBOX=unsafe-local)", call.argv
        )
        host_argv = [_rewrite(a, call.mounts) for a in call.argv]
        host_env = {k: _rewrite(v, call.mounts) for k, v in call.env.items()}
        if call.tmp is not None:  # its "/tmp": a throwaway directory per command
            host_env.update(HOME=call.tmp, TMPDIR=call.tmp)
        return Wrapped(
            prlimit_argv(call.limits) + host_argv, host_env, _rewrite(call.cwd, call.mounts)
        )


def _rewrite(text: str, mounts: Sequence[Mount]) -> str:
    for m in sorted(mounts, key=lambda m: len(m.target), reverse=True):
        if text == m.target or text.startswith(m.target + "/"):
            return str(m.source) + text[len(m.target) :]
        text = text.replace(f":{m.target}/", f":{m.source}/")
    return text


def make_sandbox(
    backend: Backend,
    *,
    state_dir: Path,
    limits: Limits | None = None,
    uid: int = 65534,
    image: str = "patchwarden-sandbox:latest",
    allow_unsafe: bool = False,
) -> Sandbox:
    """The configured backend; ``unsafe-local`` only with ``allow_unsafe``."""
    if backend == "bwrap":
        return BwrapSandbox(limits=limits, uid=uid, state_dir=state_dir)
    if backend == "docker":
        return DockerSandbox(limits=limits, image=image, uid=uid)
    if backend == "unsafe-local":
        if not allow_unsafe:
            raise SandboxError(
                "PATCHWARDEN_SANDBOX=unsafe-local runs repository code with NO isolation; "
                "it also needs PATCHWARDEN_SANDBOX_ALLOW_UNSAFE=true to say you mean it"
            )
        log.warning("sandbox: unsafe-local — repository code runs with NO isolation")
        return UnsafeLocalSandbox(limits=limits, uid=os.geteuid())
    raise SandboxError(f"unknown sandbox backend {backend!r}; choose one of {', '.join(BACKENDS)}")


def chown_tree(path: Path, uid: int) -> None:
    """Give ``path`` and everything under it to ``uid`` (symlinks themselves, not targets)."""
    os.chown(path, uid, uid, follow_symlinks=False)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)
