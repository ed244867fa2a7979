"""What starting a command in Patchwarden's bubblewrap sandbox costs, against starting it bare.

Run: ``.venv/bin/python bench/sandbox_start.py [-n 50] [--warmup 5] [--json] [--check]``.
bench/README.md says what it measures and how to read it.

Three commands, each started three ways, round-robin (one of each per round, so a noisy
minute hits every way alike):

``bare``
    ``subprocess.run`` of the command itself, with the environment the sandbox would give
    it (the allowlist, ``PATH``, a temporary ``HOME``) and the workspace as its cwd.
``bwrap``
    ``subprocess.run`` of the host argv that ``BwrapSandbox.wrap`` builds (prlimit,
    bwrap, setpriv when root): the sandbox alone, without Patchwarden's runner.
``patchwarden``
    ``await BwrapSandbox(...).run(argv, mounts=[the workspace])``: what a session pays,
    with the runner (``asyncio.to_thread``, ``Popen`` in a new session, the output pump,
    the timeout timer, ``wait4``).

The commands: ``python -c pass`` with Patchwarden's own interpreter (what the tests and
the linters start with), ``python -S -c pass`` (the same without ``site``, to show what
the interpreter's start-up spends there) and ``/usr/bin/true`` (nothing to start: the pure
sandbox cost).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from procstat import (
    OtherCpu,
    common_options,
    finish,
    guarded,
    loadavg,
    log,
    machine,
    noise_warning,
    pct,
)

from app.sessions.backends import BwrapSandbox
from app.sessions.sandbox import BASE_ENV, WORKSPACE, Mount, Sandbox

TARGET_EXTRA_MS = 10.0  # sandboxed python -c pass, median, over the bare start
WAYS = ("bare", "bwrap", "patchwarden")


@dataclass
class Row:
    command: str
    way: str
    n: int
    median_ms: float
    p90_ms: float
    min_ms: float
    max_ms: float
    failures: int


def _version(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "?"
    return (done.stdout or done.stderr).strip().splitlines()[0] if done.returncode == 0 else "?"


@dataclass(frozen=True)
class Variant:
    label: str
    argv: list[str]


class Starter:
    """Starts one command the three ways and times each start, in milliseconds."""

    def __init__(self, sandbox: Sandbox, workspace: Path, home: Path) -> None:
        self.sandbox = sandbox
        self.workspace = workspace
        self.mounts = [Mount(workspace, WORKSPACE, writable=True)]
        self.bare_env = {**BASE_ENV, "PATH": sandbox.path_var(self.mounts), "HOME": str(home)}

    def bare(self, argv: list[str]) -> tuple[float, bool]:
        started = time.perf_counter()
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=self.bare_env,
            cwd=self.workspace,
            check=False,
        )
        return (time.perf_counter() - started) * 1000, done.returncode == 0

    def wrap(self, argv: list[str]) -> tuple[list[str], dict[str, str], str | None]:
        """The host argv, env and cwd the sandbox would run ``argv`` with."""
        wrapped = self.sandbox.wrap(argv, mounts=self.mounts, cwd=WORKSPACE)
        return wrapped.argv, wrapped.env, wrapped.cwd

    def raw(self, host_argv: list[str], env: dict[str, str], cwd: str | None) -> tuple[float, bool]:
        started = time.perf_counter()
        done = subprocess.run(
            host_argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            cwd=cwd,
            check=False,
        )
        return (time.perf_counter() - started) * 1000, done.returncode == 0

    def bwrap(self, argv: list[str]) -> tuple[float, bool]:
        return self.raw(*self.wrap(argv))

    async def patchwarden(self, argv: list[str]) -> tuple[float, bool]:
        started = time.perf_counter()
        done = await self.sandbox.run(argv, mounts=self.mounts, timeout=60)
        return (time.perf_counter() - started) * 1000, done.ok

    async def once(self, way: str, argv: list[str]) -> tuple[float, bool]:
        if way == "patchwarden":
            return await self.patchwarden(argv)
        return self.bwrap(argv) if way == "bwrap" else self.bare(argv)


def _commands(sandbox: Sandbox) -> dict[str, list[str]]:
    python = sandbox.toolchain.python
    return {
        "python -c pass": [python, "-c", "pass"],
        "python -S -c pass": [python, "-S", "-c", "pass"],
        "/usr/bin/true": ["/usr/bin/true"],
    }


async def _measure(
    args: argparse.Namespace, starter: Starter
) -> tuple[list[Row], dict[str, float]]:
    commands = _commands(starter.sandbox)
    plan = [(name, way) for name in commands for way in WAYS]
    # A first start of each, with its output, so a broken sandbox says why.
    for name, argv in commands.items():
        done = await starter.sandbox.run(argv, mounts=starter.mounts, timeout=60)
        if not done.ok:
            raise RuntimeError(
                f"sandboxed {name} failed (exit {done.exit_code}): {done.stderr.strip()[-500:]}"
            )
    log(args, f"warm-up: {args.warmup} round(s)")
    for _ in range(args.warmup):
        for name, way in plan:
            await starter.once(way, commands[name])
    log(args, f"measuring: {args.n} round(s) of {len(plan)} starts")
    times: dict[tuple[str, str], list[float]] = {key: [] for key in plan}
    failures: dict[tuple[str, str], int] = dict.fromkeys(plan, 0)
    gc.collect()
    gc.disable()
    try:
        for i in range(args.n):
            # Rotate the order each round so no way is always first after a pause.
            shift = i % len(plan)
            for name, way in plan[shift:] + plan[:shift]:
                ms, ok = await starter.once(way, commands[name])
                times[(name, way)].append(ms)
                failures[(name, way)] += 0 if ok else 1
    finally:
        gc.enable()
    rows = []
    for key in plan:
        values = sorted(times[key])
        rows.append(
            Row(
                command=key[0],
                way=key[1],
                n=len(values),
                median_ms=round(statistics.median(values), 2),
                p90_ms=round(pct(values, 0.90), 2),
                min_ms=round(values[0], 2),
                max_ms=round(values[-1], 2),
                failures=failures[key],
            )
        )
    # Per-round differences (patchwarden - bare in the same round): steadier than the
    # difference of two medians when the machine drifts during the run.
    paired = {
        name: round(
            statistics.median(
                p - b
                for p, b in zip(times[(name, "patchwarden")], times[(name, "bare")], strict=True)
            ),
            2,
        )
        for name in commands
    }
    return rows, paired


def _drop(
    argv: list[str], option: str, arity: int, *, only: Callable[[list[str]], bool] | None = None
) -> list[str]:
    """``argv`` without each ``option`` and its ``arity`` values (those ``only`` picks)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        values = argv[i + 1 : i + 1 + arity]
        if argv[i] == option and (only is None or only(values)):
            i += 1 + arity
            continue
        out.append(argv[i])
        i += 1
    return out


def _variants(sandbox: BwrapSandbox, full: list[str], command: list[str]) -> list[Variant]:
    """The sandbox's host argv for ``command`` with one part left out at a time."""
    core = full[full.index(sandbox.bwrap) :]
    toolchain = set(sandbox.toolchain.paths)
    out = [Variant("full sandbox (prlimit + bwrap + setpriv)", full)]
    out.append(Variant("without prlimit", core))
    if sandbox.setpriv in full:
        start = full.index(sandbox.setpriv)
        end = full.index("--", start)
        out.append(Variant("without setpriv", full[:start] + full[end + 1 :]))
    if "--unshare-net" in full:
        out.append(
            Variant("without the network namespace", [a for a in full if a != "--unshare-net"])
        )
    out.append(Variant("without the /etc binds", _drop(full, "--ro-bind-try", 2)))
    out.append(Variant("without --dev", _drop(full, "--dev", 1)))
    out.append(
        Variant(
            "without the toolchain binds",
            _drop(full, "--ro-bind", 2, only=lambda v: v[0] in toolchain),
        )
    )
    out.append(
        Variant("bwrap --ro-bind / / alone", [sandbox.bwrap, "--ro-bind", "/", "/", *command])
    )
    return out


def _breakdown(args: argparse.Namespace, starter: Starter) -> list[dict[str, Any]]:
    """Each part of the sandbox left out in turn, /usr/bin/true, raw argv, round-robin."""
    assert isinstance(starter.sandbox, BwrapSandbox)
    command = ["/usr/bin/true"]
    full, env, cwd = starter.wrap(command)
    variants = []
    for v in _variants(starter.sandbox, full, command):
        if starter.raw(v.argv, env, cwd)[1]:
            variants.append(v)
        else:
            log(args, f"breakdown: {v.label!r} does not run here; left out")
    log(args, f"breakdown: {args.n} round(s) of {len(variants)} variants")
    for _ in range(min(args.warmup, 2)):
        for v in variants:
            starter.raw(v.argv, env, cwd)
    times: dict[str, list[float]] = {v.label: [] for v in variants}
    gc.collect()
    gc.disable()
    try:
        for i in range(args.n):
            shift = i % len(variants)
            for v in variants[shift:] + variants[:shift]:
                times[v.label].append(starter.raw(v.argv, env, cwd)[0])
    finally:
        gc.enable()
    full_median = statistics.median(times[variants[0].label])
    out = []
    for v in variants:
        values = sorted(times[v.label])
        median = statistics.median(values)
        out.append(
            {
                "variant": v.label,
                "n": len(values),
                "median_ms": round(median, 2),
                "p90_ms": round(pct(values, 0.90), 2),
                "saves_ms": round(full_median - median, 2),
                "args": len(v.argv),
            }
        )
    return out


def _row(rows: list[Row], command: str, way: str) -> Row:
    return next(r for r in rows if r.command == command and r.way == way)


def _summary(rows: list[Row], paired: dict[str, float]) -> dict[str, Any]:
    split = {}
    for command in dict.fromkeys(r.command for r in rows):
        bare, bwrap, pw = (_row(rows, command, w) for w in WAYS)
        split[command] = {
            "extra_ms": round(pw.median_ms - bare.median_ms, 2),
            "extra_p90_ms": round(pw.p90_ms - bare.p90_ms, 2),
            "sandbox_ms": round(bwrap.median_ms - bare.median_ms, 2),
            "runner_ms": round(pw.median_ms - bwrap.median_ms, 2),
            "extra_paired_ms": paired[command],
        }
    python = split["python -c pass"]
    failures = sum(r.failures for r in rows)
    return {
        "split": split,
        "target": {
            "target": f"sandboxed python -c pass <= {TARGET_EXTRA_MS:g} ms over bare, median",
            "met": python["extra_ms"] <= TARGET_EXTRA_MS and failures == 0,
            "measured_ms": python["extra_ms"],
            "limit_ms": TARGET_EXTRA_MS,
            "failures": failures,
        },
    }


def _report(doc: dict[str, Any], rows: list[Row]) -> str:
    head = (
        f"{'command':<18} {'way':<12} {'n':>4} {'median':>8} {'p90':>8} {'min':>8} {'max':>8}"
        f" {'+bare med':>9}"
    )
    out = [head, "-" * len(head)]
    for r in rows:
        bare = _row(rows, r.command, "bare")
        extra = "" if r.way == "bare" else f"{r.median_ms - bare.median_ms:+9.2f}"
        fails = f"  ({r.failures} failed)" if r.failures else ""
        out.append(
            f"{r.command:<18} {r.way:<12} {r.n:>4} {r.median_ms:>8.2f} {r.p90_ms:>8.2f}"
            f" {r.min_ms:>8.2f} {r.max_ms:>8.2f} {extra:>9}{fails}"
        )
    out.append(
        "ms per start, from the call to the exit. bare = subprocess.run of the command;\n"
        "bwrap = subprocess.run of BwrapSandbox.wrap's argv; patchwarden = BwrapSandbox.run"
    )
    out.append("")
    out.append(
        "where the extra time goes (medians): sandbox = bwrap - bare, runner = patchwarden -"
        " bwrap;\nper-round = the median of (patchwarden - bare) within each round"
    )
    for command, s in doc["split"].items():
        out.append(
            f"  {command:<18} extra {s['extra_ms']:+6.2f} = sandbox {s['sandbox_ms']:+6.2f}"
            f" + runner {s['runner_ms']:+5.2f}   (p90 {s['extra_p90_ms']:+6.2f},"
            f" per-round {s['extra_paired_ms']:+6.2f})"
        )
    site = _row(rows, "python -c pass", "bare").median_ms
    no_site = _row(rows, "python -S -c pass", "bare").median_ms
    out.append(
        f"  python itself: {site:.1f} ms bare, {site - no_site:.1f} ms of it in site (the"
        " virtualenv's .pth files);\n  every Python tool a session starts pays it"
    )
    if doc["breakdown"]:
        out.append("")
        out.append("/usr/bin/true in the sandbox with one part left out (raw argv, median ms):")
        for b in doc["breakdown"]:
            saves = "" if b is doc["breakdown"][0] else f"  saves {b['saves_ms']:+6.2f}"
            out.append(
                f"  {b['variant']:<42} {b['median_ms']:7.2f} (p90 {b['p90_ms']:6.2f}){saves}"
            )
    out += noise_warning(doc)
    m = doc["machine"]
    out.append(
        f"machine: nproc {m['nproc']}, {m['kernel']}, {m['bwrap']}, {m['mode']},"
        f" Python {m['python']}; load average before {m['loadavg_before']},"
        f" after {m['loadavg_after']}"
    )
    t = doc["target"]
    verdict = "PASS" if t["met"] else "MISS"
    failed = f", {t['failures']} failed start(s)" if t["failures"] else ""
    out.append(
        f"target: {t['target']}: {verdict} ({t['measured_ms']:+.2f} ms vs"
        f" {t['limit_ms']:g} ms{failed})"
    )
    return "\n".join(out)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", "--n", type=int, default=50, help="measured rounds (default 50)")
    p.add_argument("--warmup", type=int, default=5, help="rounds not measured (default 5)")
    p.add_argument(
        "--no-breakdown",
        dest="breakdown",
        action="store_false",
        help="skip timing /usr/bin/true with each part of the sandbox left out",
    )
    return common_options(p)


def run_bench(args: argparse.Namespace) -> int:
    if not shutil.which("bwrap"):
        raise RuntimeError("bubblewrap is not installed (apt-get install bubblewrap)")
    load_before = loadavg()
    others = OtherCpu()
    with tempfile.TemporaryDirectory(prefix="patchwarden-bench-") as tmp:
        root = Path(tmp)
        workspace, home = root / "workspace", root / "home"
        workspace.mkdir()
        home.mkdir()
        (workspace / "README.md").write_text("bench\n", encoding="utf-8")
        sandbox = BwrapSandbox(state_dir=root / "sandbox")
        mode = sandbox.check()
        sandbox.prepare_writable(workspace)
        starter = Starter(sandbox, workspace, home)
        rows, paired = asyncio.run(_measure(args, starter))
        breakdown = _breakdown(args, starter) if args.breakdown else []
    doc: dict[str, Any] = {
        "benchmark": "sandbox_start",
        "config": {"n": args.n, "warmup": args.warmup},
        "results": [asdict(r) for r in rows],
        **_summary(rows, paired),
        "breakdown": breakdown,
        "machine": machine(
            load_before,
            others,
            bwrap=_version([sandbox.bwrap, "--version"]),
            mode=(
                f"privileged bwrap + setpriv to uid {sandbox.uid}"
                if sandbox.privileged
                else "user namespace, uid 65534 inside"
            ),
            check=mode,
            privileged=sandbox.privileged,
        ),
    }
    return finish(doc, _report(doc, rows), args)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.n < 1 or args.warmup < 0:
        print("-n must be positive and --warmup not negative", file=sys.stderr)
        return 2
    return guarded(run_bench, args)


if __name__ == "__main__":
    sys.exit(main())
