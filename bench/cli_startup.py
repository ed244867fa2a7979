"""How long `patchwarden --version` and `--help` take, start to exit (target: < 0.3 s).

Run: ``.venv/bin/python bench/cli_startup.py [--runs 20] [--json] [--check]``. Each
command runs ``--runs`` times as a new process (the console script next to this
interpreter); the report gives the median and the slowest wall time, and the CPU.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from procstat import OtherCpu, common_options, finish, guarded, loadavg, log, machine, noise_warning

PATCHWARDEN = str(Path(sys.executable).parent / "patchwarden")
COMMANDS = (["--version"], ["--help"], ["score", "--help"])
TARGET_SECONDS = 0.3


def _once(argv: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [PATCHWARDEN, *argv],
        stdout=subprocess.DEVNULL,
        check=True,
        env=os.environ | {"PYTHONDONTWRITEBYTECODE": "1"},
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(args: argparse.Namespace) -> int:
    load_before, others = loadavg(), OtherCpu()
    rows = []
    for argv in COMMANDS:
        _once(argv)  # warm the page cache and the bytecode
        walls, cpus = zip(*(_once(argv) for _ in range(args.runs)), strict=True)
        rows.append(
            {
                "command": "patchwarden " + " ".join(argv),
                "median_s": round(statistics.median(walls), 3),
                "max_s": round(max(walls), 3),
                "cpu_median_s": round(statistics.median(cpus), 3),
            }
        )
        log(args, f"{rows[-1]['command']}: {rows[-1]['median_s']} s")
    worst = max(r["median_s"] for r in rows)
    doc = {
        "benchmark": "cli_startup",
        "runs": args.runs,
        "results": rows,
        "target": {
            "what": f"median < {TARGET_SECONDS} s",
            "worst_median_s": worst,
            "met": worst < TARGET_SECONDS,
        },
        "machine": machine(load_before, others),
    }
    lines = [f"{'command':<28} {'median s':>9} {'max s':>7} {'cpu s':>7}"]
    lines += [
        f"{r['command']:<28} {r['median_s']:>9.3f} {r['max_s']:>7.3f} {r['cpu_median_s']:>7.3f}"
        for r in rows
    ]
    verdict = "MET" if doc["target"]["met"] else "MISSED"
    lines.append(f"target: median < {TARGET_SECONDS} s: {verdict} (worst {worst:.3f} s)")
    return finish(doc, "\n".join(lines + noise_warning(doc)), args)


def main() -> int:
    parser = common_options(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--runs", type=int, default=20)
    return guarded(run, parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
