"""Where the test suite's time goes, as tables (``make test-profile``).

    python scripts/test_profile.py                   # the whole suite, as make test runs it
    python scripts/test_profile.py tests/jobs -n 0   # any pytest arguments
    python scripts/test_profile.py --from profile.json

Runs pytest with ``--profile-json`` (tests/profiling.py) and prints: the time by folder
and by module, the fixtures whose setups cost most, the commands sessions ran in the
sandbox by tool, and the slowest tests. A test's time is its setup, call and teardown;
under pytest-xdist the times add up to more than the wall time (the workers overlap).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _table(title: str, header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    cells = [header, *[tuple(str(c) for c in r) for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = [f"## {title}", ""]
    lines.append("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells[1:]:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
    return "\n".join(lines) + "\n"


def report(data: dict[str, Any], *, top: int = 25, wall: float | None = None) -> str:
    tests: dict[str, dict[str, Any]] = data["tests"]
    total = {nodeid: sum(r["phases"].values()) for nodeid, r in tests.items()}
    whole = sum(total.values()) or 1.0
    out = [
        f"{len(tests)} tests, {whole:.0f} s of test time"
        + (f", {wall:.0f} s wall" if wall is not None else "")
        + "\n"
    ]

    def grouped(key: Any) -> list[tuple[Any, ...]]:
        groups: dict[str, list[str]] = defaultdict(list)
        for nodeid in tests:
            groups[key(nodeid)].append(nodeid)
        rows = []
        for name, ids in groups.items():
            seconds = sum(total[i] for i in ids)
            slowest = max(ids, key=lambda i: total[i])
            rows.append(
                (
                    name,
                    len(ids),
                    f"{seconds:.1f}",
                    f"{100 * seconds / whole:.1f}",
                    f"{total[slowest]:.1f} {slowest.split('::', 1)[1][:60]}",
                )
            )
        return sorted(rows, key=lambda r: -float(r[2]))

    header = ("", "tests", "s", "%", "slowest (s, test)")
    out.append(_table("By folder", ("folder", *header[1:]), grouped(_folder)))
    out.append(
        _table("By module", ("module", *header[1:]), grouped(lambda n: n.split("::")[0])[:top])
    )

    fixtures: dict[str, list[float]] = defaultdict(list)
    for r in tests.values():
        for name, seconds in r["fixtures"].items():
            fixtures[name].append(seconds)
    rows = sorted(
        ((n, len(v), f"{sum(v):.1f}", f"{max(v):.2f}") for n, v in fixtures.items()),
        key=lambda r: -float(r[2]),
    )
    out.append(_table("Fixture setups", ("fixture (scope)", "setups", "s", "max s"), rows[:top]))

    tools: dict[str, list[tuple[float, float | None]]] = defaultdict(list)
    for r in tests.values():
        for tool, seconds, cpu in r["commands"]:
            tools[tool].append((seconds, cpu))
    rows = []
    for tool, runs in tools.items():
        cpu = [c for _, c in runs if c is not None]
        rows.append(
            (
                tool,
                len(runs),
                f"{sum(s for s, _ in runs):.1f}",
                f"{sum(cpu):.1f}" if cpu else "-",
                f"{sum(s for s, _ in runs) / len(runs):.2f}",
            )
        )
    rows.sort(key=lambda r: -float(r[2]))
    out.append(
        _table(
            "Commands in the sandbox (in-process sessions)",
            ("tool", "runs", "s", "cpu s", "s per run"),
            rows,
        )
    )

    slow = sorted(tests, key=lambda i: -total[i])[:top]
    rows = [
        (
            f"{total[i]:.1f}",
            f"{tests[i]['phases'].get('setup', 0):.1f}",
            len(tests[i]["commands"]),
            i[:110],
        )
        for i in slow
    ]
    out.append(_table("Slowest tests", ("s", "setup s", "sandboxed", "test"), rows))
    return "\n".join(out)


def _folder(nodeid: str) -> str:
    parts = nodeid.split("::")[0].split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, help="print a saved profile")
    parser.add_argument("--save", type=Path, help="keep the profile's JSON here")
    parser.add_argument("--top", type=int, default=25, help="rows in the long tables")
    args, pytest_args = parser.parse_known_args(argv)
    if args.source:
        print(report(json.loads(args.source.read_text()), top=args.top))
        return 0
    with tempfile.TemporaryDirectory(prefix="pw-profile-") as scratch:
        target = args.save or Path(scratch) / "profile.json"
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", f"--profile-json={target}", *pytest_args],
            cwd=ROOT,
            check=False,
        )
        wall = time.monotonic() - started
        if not target.exists():
            print(f"pytest wrote no profile (exit {done.returncode})", file=sys.stderr)
            return done.returncode or 1
        print(report(json.loads(target.read_text()), top=args.top, wall=wall))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
