"""What the benchmarks share: announcing to the parent, dying with it, CPU readings, ranks."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Sequence
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
