"""What the benchmarks share: announcing to the parent, dying with it, CPU readings, ranks."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def announce(obj: dict[str, Any]) -> None:
    """One JSON line on stdout: how a bench's child process talks to the bench."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: SIGTERM the child if the bench dies without cleaning up (e.g. SIGKILL)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def cpu_seconds(pid: int | None, *, children: bool = False) -> float | None:
    """User + system CPU seconds of a process (all its threads), with ``children`` also of
    the children it waited for; this process alone when ``pid`` is None. ``None`` off Linux."""
    if pid is None:
        t = os.times()
        return t.user + t.system
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11 : 15 if children else 13]) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float | None:
    """CPU seconds all cores spent busy since boot (Linux ``/proc/stat``)."""
    try:
        first = Path("/proc/stat").read_text(encoding="ascii").split("\n", 1)[0].split()
    except OSError:
        return None
    ticks = [int(v) for v in first[1:9]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def pct(sorted_values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile of already sorted values (nan when empty)."""
    if not sorted_values:
        return float("nan")
    rank = max(int(-(-q * len(sorted_values) // 1)) - 1, 0)
    return sorted_values[min(rank, len(sorted_values) - 1)]


def log(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(f"[bench] {message}", file=sys.stderr, flush=True)


def loadavg() -> list[float] | None:
    return [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None


NOISE_PERCENT = 25.0  # CPU of one core used by other processes that makes figures suspect


class OtherCpu:
    """CPU that processes outside this one's tree use meanwhile, sampled from ``/proc``.

    Sandboxed commands don't pass their rusage up (bwrap's reaper), so "the machine minus
    this process and its children" would count them as others. Instead a thread reads
    every process's CPU each ``interval`` seconds and keeps those that don't descend from
    this process. A process that lives less than an interval is missed, so it is a lower
    bound. Linux only; ``None`` elsewhere.
    """

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self.first: dict[tuple[int, int], int] = {}  # (pid, start time) -> ticks at first sight
        self.last: dict[tuple[int, int], int] = {}
        self.ok = os.path.isdir("/proc/self")
        self.started = time.monotonic()
        self.stopped: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="other-cpu", daemon=True)
        if self.ok:
            self._sample()
            self._thread.start()

    def _sample(self) -> None:
        procs: dict[int, tuple[int, int, int]] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", encoding="ascii") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            ticks = int(fields[11]) + int(fields[12])  # utime + stime
            procs[int(entry.name)] = (int(fields[1]), ticks, int(fields[19]))
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in procs.items():
            children.setdefault(ppid, []).append(pid)
        mine, todo = set(), [os.getpid()]
        while todo:
            pid = todo.pop()
            mine.add(pid)
            todo.extend(children.get(pid, ()))
        for pid, (_, ticks, start) in procs.items():
            if pid not in mine:
                self.first.setdefault((pid, start), ticks)
                self.last[(pid, start)] = ticks

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def stop(self) -> float | None:
        """Percent of one core the others used from start to now (a lower bound)."""
        if not self.ok:
            return None
        if self.stopped is None:
            self._stop.set()
            self._thread.join()
            self._sample()
            self.stopped = time.monotonic()
        ticks = sum(self.last[k] - self.first[k] for k in self.last)
        wall = max(self.stopped - self.started, 1e-9)
        return round(100 * ticks / os.sysconf("SC_CLK_TCK") / wall, 1)


def finish(doc: dict[str, Any], report: str, args: argparse.Namespace) -> int:
    """Print the report (and the JSON document with --json); exit 1 on a miss with --check."""
    if args.json:
        print(report, file=sys.stderr)
        print(json.dumps(doc, indent=2))
    else:
        print(report)
    return 1 if args.check and not doc["target"]["met"] else 0


def guarded(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a benchmark; a failure is one line and exit 2, an interrupt exit 130."""
    from app.errors import PatchwardenError

    try:
        return run(args)
    except KeyboardInterrupt:
        print("interrupted; the temporary folder is gone", file=sys.stderr)
        return 130
    except (RuntimeError, OSError, subprocess.SubprocessError, PatchwardenError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 2


def common_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """--json, --check and --quiet, as every session benchmark takes them."""
    parser.add_argument("--json", action="store_true", help="JSON on stdout, the report on stderr")
    parser.add_argument("--check", action="store_true", help="exit 1 if the target is missed")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def machine(load_before: list[float] | None, others: OtherCpu, **facts: Any) -> dict[str, Any]:
    """What the figures were measured on, and how busy it was meanwhile."""
    return {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "kernel": platform.release(),
        **facts,
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
        "other_cpu_percent": others.stop(),
    }


def noise_warning(doc: dict[str, Any]) -> list[str]:
    """A line saying the figures are noisy when other processes were busy."""
    other = doc["machine"]["other_cpu_percent"]
    if other is None or other <= NOISE_PERCENT:
        return []
    return [
        f"warning: other processes used {other:.0f}% of a core meanwhile; the figures are"
        " noisy, run again on a quiet machine"
    ]
