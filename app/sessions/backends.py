"""The sandbox backends (docs/security.md; app/sessions/sandbox.py has the interface):
``bwrap``, ``docker`` and ``unsafe-local``, and :func:`make_sandbox`, which picks the
configured one."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

from app.sessions.process import Limits, Wrapped, prlimit_argv
from app.sessions.sandbox import (
    BACKENDS,
    ETC_FILES,
    ETC_NETWORK_FILES,
    SANDBOX_SHM,
    SANDBOX_TMP,
    SYSTEM_DIRS,
    Backend,
    Call,
    Mount,
    Sandbox,
    SandboxError,
    Toolchain,
    chown_tree,
    publish_folder,
)

log = logging.getLogger(__name__)


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

    def _filesystem(self, call: Call) -> list[str]:
        """The sandbox's file system: the system read-only, /proc, /dev, the built /etc,
        private /tmp and /dev/shm, then the toolchain's and the call's mounts."""
        args: list[str] = []
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
        # POSIX shared memory and semaphores (multiprocessing's locks and queues,
        # concurrent.futures' process pools) live in /dev/shm: a private tmpfs as /tmp is,
        # within the same cap (Docker gives its containers one too).
        args += ["--size", str(call.limits.tmp_bytes), "--perms", "1777", "--tmpfs", SANDBOX_SHM]
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
        return args

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
        args += self._filesystem(call)
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
    host_toolchain = False

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
