"""The process runner under every sandbox backend: one host process tree, its output
captured up to a cap (head and tail kept, a marker between), killed as a group at the
timeout or when the caller is cancelled, its exit status and resource use read from
``wait4``; and the ``prlimit`` caps put on it (app/sessions/sandbox.py uses it)."""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, NamedTuple

from app.sessions.result import Usage

MiB = 1024 * 1024


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
    proc = _start(wrapped)
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err = _Capture(output_bytes), _Capture(output_bytes)
    done = threading.Event()
    stop = stop or threading.Event()
    deadline = _Deadline(proc.pid, wrapped.on_timeout, timeout, stop, done)
    pump = threading.Thread(target=_pump, args=(proc.stdout, proc.stderr, out, err, done))
    pump.daemon = True
    pump.start()
    _, status, rusage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    # The tree is gone (bwrap) or detached; give the pipes a moment to reach EOF.
    done.set()
    stop.set()  # releases the deadline's thread
    pump.join(timeout=5)
    proc.stdout.close()
    proc.stderr.close()
    duration = time.monotonic() - started
    timed_out = deadline.reason is not None
    exit_code: int | None = None if timed_out else proc.returncode
    return Completed(
        argv=shown,
        exit_code=exit_code,
        stdout=out.text(),
        stderr=err.text(),
        duration_seconds=round(duration, 4),
        timed_out=timed_out,
        killed_by=deadline.reason if timed_out else _killed_by(exit_code),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        usage=_usage(duration, rusage, account),
    )


_LIMIT_SIGNALS = {signal.SIGKILL, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGSEGV}


class _Deadline:
    """Kills the process group at ``timeout``, or as soon as ``stop`` is set, unless the
    run is ``done`` first (running ``on_timeout``'s commands before); ``reason`` says
    which ("timeout" or "cancelled"), or ``None``."""

    def __init__(
        self,
        pid: int,
        on_timeout: Sequence[Sequence[str]],
        timeout: float,
        stop: threading.Event,
        done: threading.Event,
    ) -> None:
        self.reason: str | None = None
        self._args = (pid, on_timeout, timeout, stop, done)
        threading.Thread(target=self._wait, daemon=True).start()

    def _wait(self) -> None:
        pid, on_timeout, timeout, stop, done = self._args
        cancelled = stop.wait(timeout)
        if done.is_set():
            return
        self.reason = "cancelled" if cancelled else "timeout"
        for extra in on_timeout:
            subprocess.run(extra, capture_output=True, timeout=30, check=False)  # noqa: S603
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


def _start(wrapped: Wrapped) -> subprocess.Popen[bytes]:
    """Start ``wrapped`` in its own session, its stdin written and closed."""
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
    if proc.stdin is not None:
        # bwrap reads its `--args 0` before anything runs; then the command sees EOF.
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(wrapped.stdin or b"")
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    return proc


def _usage(duration: float, rusage: resource.struct_rusage, account: bool) -> Usage:
    """What the run used; without ``account`` (a shared runner), its wall time only."""
    if not account:
        return Usage(wall_seconds=round(duration, 4))
    return Usage(
        wall_seconds=round(duration, 4),
        cpu_seconds=round(rusage.ru_utime + rusage.ru_stime, 4),
        max_rss_kb=int(rusage.ru_maxrss),
    )


def _killed_by(exit_code: int | None) -> str | None:
    """The signal that ended the run, by name, or ``None`` when it exited."""
    if exit_code is not None and exit_code < 0:
        return _signal_name(-exit_code)
    if exit_code is not None and exit_code > 128 and exit_code - 128 in _LIMIT_SIGNALS:
        # bwrap reports a child killed by signal N as exit status 128 + N.
        return _signal_name(exit_code - 128)
    return None


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
