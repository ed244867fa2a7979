"""What a coding session costs an npm project beyond its own tests, on five real
packages, and what its setup costs cold and cached.

Run: ``.venv/bin/python bench/npm_overhead.py [--runs 3] [--json]``. bench/README.md
says how to read it.

Each package of tests/realworld/npm_packages.py (the registry's tarball, pinned by
integrity; its tests, tape, and its eslint configuration; a lock npm made for them) is
made a git repository in a temporary folder, and the real session runs on it with a
fixer that adds one comment line to one source file (so every test still passes): first
with nothing cached — ``npm ci --ignore-scripts`` then ``npm rebuild`` in the setup
phase, from npm's own download cache — then ``--runs`` times with the environment
cached. From ``result.steps`` come the setup's and the tests' durations (base and
head); what the session took beyond the tests is its wall time less both test runs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from procstat import common_options, finish, guarded, loadavg, log

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests.realworld: the pinned packages

from app.fixers.registry import KNOWN  # noqa: E402
from app.git import Remote  # noqa: E402
from app.sessions.backends import BwrapSandbox  # noqa: E402
from app.sessions.fix_context import FixContext  # noqa: E402
from app.sessions.mirrors import WorkspaceCache  # noqa: E402
from app.sessions.result import FixOutcome, SessionResult  # noqa: E402
from app.sessions.session import SessionRunner  # noqa: E402
from app.sessions.task import SessionSpec, Task  # noqa: E402
from tests.realworld.npm_packages import PACKAGES, NpmPackage, as_repository  # noqa: E402

TARGET_BEYOND_TESTS_S = 2.0  # as for Python (bench/verify_overhead.py)


def _fixer(package: NpmPackage) -> Any:
    async def fix(ctx: FixContext) -> FixOutcome:
        path = ctx.tree / package.lint_file
        path.write_text(path.read_text() + "// patchwarden bench\n")
        return FixOutcome(fixer="bench", summary="a comment line")

    return fix


def _summary(result: SessionResult, wall: float) -> dict[str, Any]:
    tests = sum(s.duration_seconds for s in result.steps if s.name == "tests")
    setup = sum(s.duration_seconds for s in result.steps if s.phase == "setup")
    return {
        "wall_s": round(wall, 3),
        "setup_s": round(setup, 3),
        "tests_s": round(tests, 3),
        "beyond_tests_s": round(max(wall - tests, 0.0), 3),
        "steps": [(s.name, s.tree, round(s.duration_seconds, 3)) for s in result.steps],
    }


async def _package(args: argparse.Namespace, package: NpmPackage, work: Path) -> dict[str, Any]:
    repo = work / package.name
    as_repository(package, repo)
    runner = SessionRunner(
        fixers=KNOWN,
        cache=WorkspaceCache(work / f"cache-{package.name}"),
        sandbox=BwrapSandbox(state_dir=work / f"sandbox-{package.name}"),
    )
    runs = []
    for i in range(1 + args.runs):
        spec = SessionSpec(
            remote=Remote(f"bench/{package.name}", str(repo)), task=Task("bench"), job_id=i + 1
        )
        started = time.perf_counter()
        result = await runner.run(spec, _fixer(package))
        wall = time.perf_counter() - started
        if result.status != "patched" or result.tests is None or result.tests.broken:
            raise RuntimeError(
                f"{package.id}: session {i + 1} ended {result.status}: {result.error}"
            )
        runs.append(_summary(result, wall))
        log(args, f"{package.id}: session {i + 1}: {runs[-1]}")
    cached = runs[1:]
    return {
        "package": package.id,
        "npm_ci_cold_s": runs[0]["setup_s"],
        "cold_wall_s": runs[0]["wall_s"],
        "cached_setup_s": statistics.median(r["setup_s"] for r in cached),
        "cached_wall_s": statistics.median(r["wall_s"] for r in cached),
        "tests_s": statistics.median(r["tests_s"] for r in cached),
        "beyond_tests_s": statistics.median(r["beyond_tests_s"] for r in cached),
        "runs": runs,
    }


def _report(doc: dict[str, Any]) -> str:
    lines = [
        f"npm session overhead ({doc['runs']} cached runs per package, median; target beyond "
        f"tests <= {TARGET_BEYOND_TESTS_S} s)",
        "",
        "| package | npm ci cold s | cached setup s | cached wall s | tests s | beyond tests s |",
        "|---|---|---|---|---|---|",
    ]
    for p in doc["packages"]:
        lines.append(
            f"| {p['package']} | {p['npm_ci_cold_s']} | {p['cached_setup_s']} | "
            f"{p['cached_wall_s']} | {p['tests_s']} | {p['beyond_tests_s']} |"
        )
    lines.append("")
    lines.append(f"median beyond tests over the packages: {doc['beyond_tests_median_s']} s")
    return "\n".join(lines)


def run_bench(args: argparse.Namespace) -> int:
    load = loadavg()
    with tempfile.TemporaryDirectory(prefix="pw-npm-bench-") as tmp:
        packages = [asyncio.run(_package(args, p, Path(tmp))) for p in PACKAGES]
    doc = {
        "bench": "npm_overhead",
        "runs": args.runs,
        "load_before": load,
        "packages": packages,
        "beyond_tests_median_s": statistics.median(p["beyond_tests_s"] for p in packages),
    }
    met = doc["beyond_tests_median_s"] <= TARGET_BEYOND_TESTS_S
    doc["target"] = {"beyond_tests_s": TARGET_BEYOND_TESTS_S, "met": met}
    return finish(doc, _report(doc), args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="cached sessions per package")
    common_options(parser)
    args = parser.parse_args(argv)
    return guarded(run_bench, args)


if __name__ == "__main__":
    sys.exit(main())
