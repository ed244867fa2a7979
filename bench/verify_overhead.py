"""What a coding session costs beyond the repository's own tests, for a one-file change.

Run: ``.venv/bin/python bench/verify_overhead.py [--runs 3] [--modules 6] [--json] [--check]``.
bench/README.md says what it measures and how to read it.

A small Python repository is generated in a temporary folder (a package of ``--modules``
modules, a pytest file per module, ``pytest.ini``; no ``pyproject.toml``, so there is no
setup phase and the tests run with Patchwarden's own interpreter, as for any repository
with plain test files). Then the real session runs ``--runs`` times, after ``--warmup``
sessions that are not counted (the first one clones the mirror)::

    SessionRunner(cache=WorkspaceCache(tmp), sandbox=BwrapSandbox(state_dir=...))
        .run(SessionSpec(remote=Remote("bench/verify", path), task=...), fixer)

The fixer rewrites one function of one module (same behaviour, so every test still
passes). From ``result.steps`` come the durations of the tests (base and head tree) and
of ruff, bandit and semgrep; ``result.findings`` says whether semgrep ran. The bench also
times, in this process only, ``WorkspaceCache.create`` and the workspace's git steps (a
subclass) and the whole ``Verifier.linters`` call (wrapped while the bench runs).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from procstat import machine_busy_seconds
from sandbox_start import NOISE_PERCENT, OtherCpu

from app.errors import PatchwardenError
from app.sessions.result import FixReport, SessionResult
from app.sessions.sandbox import BwrapSandbox
from app.sessions.session import FixContext, SessionRunner, SessionSpec
from app.sessions.verify import DEFAULT_RULES, Verifier
from app.sessions.workspace import Remote, Workspace, WorkspaceCache, git_env

TARGET_SECONDS = 10.0  # verification beyond the repository's own tests
REPO = "bench/verify"
LINTERS = ("ruff", "bandit", "semgrep")
PACKAGE = "shop"

MODULE = '''"""Module {i} of the generated benchmark package."""

from __future__ import annotations


def total_{i}(prices: list[float], tax: float = 0.2) -> float:
    """The sum of ``prices`` with ``tax`` added, rounded to cents."""
    subtotal = sum(prices)
    return round(subtotal * (1 + tax), 2)


def slug_{i}(text: str) -> str:
    out = []
    for ch in text.lower():
        out.append(ch if ch.isalnum() else "-")
    return "-".join(part for part in "".join(out).split("-") if part)


def chunks_{i}(items: list[int], size: int) -> list[list[int]]:
    if size < 1:
        raise ValueError("size must be positive")
    return [items[k : k + size] for k in range(0, len(items), size)]


def merge_{i}(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    merged = dict(a)
    for key, value in b.items():
        merged[key] = merged.get(key, 0) + value
    return merged


def median_{i}(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
'''

TESTS = """import pytest

from {package}.mod_{i} import chunks_{i}, median_{i}, merge_{i}, slug_{i}, total_{i}


def test_total() -> None:
    assert total_{i}([1.0, 2.0], tax=0.5) == 4.5


def test_slug() -> None:
    assert slug_{i}("Hello, World!") == "hello-world"


def test_chunks() -> None:
    assert chunks_{i}([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
    with pytest.raises(ValueError, match="positive"):
        chunks_{i}([1], 0)


def test_merge() -> None:
    assert merge_{i}({{"a": 1}}, {{"a": 2, "b": 3}}) == {{"a": 3, "b": 3}}


@pytest.mark.parametrize(("values", "expected"), [([3, 1, 2], 2), ([4, 1, 3, 2], 2.5)])
def test_median(values: list[float], expected: float) -> None:
    assert median_{i}(values) == expected
"""

# The one-file change: slug_0 rewritten, same behaviour.
OLD_SLUG = """def slug_0(text: str) -> str:
    out = []
    for ch in text.lower():
        out.append(ch if ch.isalnum() else "-")
    return "-".join(part for part in "".join(out).split("-") if part)
"""
NEW_SLUG = '''def slug_0(text: str) -> str:
    """``text`` in lower case, runs of other characters turned into single dashes."""
    cleaned = "".join(ch if ch.isalnum() else " " for ch in text.lower())
    return "-".join(cleaned.split())
'''


def _log(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(f"[bench] {message}", file=sys.stderr, flush=True)


def _loadavg() -> list[float] | None:
    return [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None


def make_repo(path: Path, modules: int) -> None:
    """The generated repository, one commit on ``main``."""
    package = path / PACKAGE
    tests = path / "tests"
    package.mkdir(parents=True)
    tests.mkdir()
    (path / "README.md").write_text("# shop\n\nGenerated by bench/verify_overhead.py.\n")
    (path / "pytest.ini").write_text("[pytest]\npythonpath = .\ntestpaths = tests\n")
    (package / "__init__.py").write_text('"""The generated benchmark package."""\n')
    for i in range(modules):
        (package / f"mod_{i}.py").write_text(MODULE.format(i=i))
        (tests / f"test_mod_{i}.py").write_text(TESTS.format(package=PACKAGE, i=i))
    git = shutil.which("git")
    if git is None:
        raise RuntimeError("git is not installed")
    home = path.parent / "git-home"
    home.mkdir(exist_ok=True)
    env = git_env(home)
    for argv in (
        [git, "init", "--quiet", "--initial-branch=main"],
        [git, "add", "--all"],
        [git, "-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-qm", "v1"],
    ):
        done = subprocess.run(argv, cwd=path, env=env, capture_output=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[1]} failed: {done.stderr.decode(errors='replace')}")


async def fixer(ctx: FixContext) -> FixReport:
    """Edits one .py file of the tree, keeping its behaviour."""
    target = ctx.tree / PACKAGE / "mod_0.py"
    text = target.read_text()
    if OLD_SLUG not in text:
        return FixReport(fixer="bench", ok=False, reason="mod_0.py is not the generated one")
    target.write_text(text.replace(OLD_SLUG, NEW_SLUG))
    return FixReport(fixer="bench", summary="rewrite slug_0 (same behaviour)")


class Timings:
    """Wall times of the parts of a session the result does not time itself."""

    def __init__(self) -> None:
        self.spans: dict[str, float] = {}

    def clear(self) -> None:
        self.spans = {}

    def add(self, name: str, seconds: float) -> None:
        self.spans[name] = self.spans.get(name, 0.0) + seconds

    def wrap(self, name: str, func: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await func(*args, **kwargs)
            finally:
                self.add(name, time.perf_counter() - started)

        return timed


class TimedCache(WorkspaceCache):
    """A WorkspaceCache that times ``create`` and the workspace's git steps."""

    def __init__(self, root: Path, timings: Timings) -> None:
        super().__init__(root)
        self.timings = timings

    async def create(
        self, remote: Remote, *, base: str | None, branch: str, with_base_copy: bool = True
    ) -> Workspace:
        started = time.perf_counter()
        ws = await super().create(remote, base=base, branch=branch, with_base_copy=with_base_copy)
        self.timings.add("workspace", time.perf_counter() - started)
        t = self.timings
        # Instance attributes shadow the methods for this workspace only.
        ws.commit_all = t.wrap("commit", ws.commit_all)  # type: ignore[method-assign]
        ws.diff = t.wrap("diff", ws.diff)  # type: ignore[method-assign]
        ws.keep_branch = t.wrap("keep_branch", ws.keep_branch)  # type: ignore[method-assign]
        remove = ws.remove

        def timed_remove() -> None:
            started = time.perf_counter()
            remove()
            t.add("remove", time.perf_counter() - started)

        ws.remove = timed_remove  # type: ignore[method-assign]
        return ws


def _semgrep_rules(rules_dir: Path) -> int | None:
    if not rules_dir.is_dir():
        return None
    return sum(1 for p in rules_dir.rglob("*") if p.suffix in (".yml", ".yaml") and p.is_file())


def _run_summary(result: SessionResult, wall: float, timings: Timings) -> dict[str, Any]:
    steps = [
        {
            "name": s.name,
            "phase": s.phase,
            "tree": s.tree,
            "duration_s": s.duration_seconds,
            "exit_code": s.exit_code,
        }
        for s in result.steps
    ]
    tests = {s.tree or "?": s.duration_seconds for s in result.steps if s.name == "tests"}
    lint = [s.duration_seconds for s in result.steps if s.name in LINTERS]
    test_total = sum(tests.values())
    return {
        "status": result.status,
        "error": result.error,
        "session_wall_s": round(wall, 4),
        "result_wall_s": result.usage.wall_seconds,
        "steps": steps,
        "tests_base_s": tests.get("base"),
        "tests_head_s": tests.get("head"),
        "tests_total_s": round(test_total, 4),
        "linters_wall_s": round(timings.spans.get("linters", 0.0), 4),
        "linters_max_s": round(max(lint, default=0.0), 4),
        "linters_sum_s": round(sum(lint), 4),
        "beyond_tests_s": round(max(wall - test_total, 0.0), 4),
        "spans_s": {k: round(v, 4) for k, v in timings.spans.items()},
        "findings": [
            {"tool": f.tool, "ran": f.ran, "error": f.error, "files": f.files}
            for f in result.findings
        ],
        "test_counts": (
            result.tests.head.counts.model_dump()
            if result.tests and result.tests.head and result.tests.head.counts
            else None
        ),
    }


async def _sessions(args: argparse.Namespace, work: Path, source: Path) -> list[dict[str, Any]]:
    timings = Timings()
    sandbox = BwrapSandbox(state_dir=work / "sandbox")
    sandbox.check()
    runner = SessionRunner(
        cache=TimedCache(work / "cache", timings), sandbox=sandbox, rules_dir=args.rules
    )
    original = Verifier.linters
    Verifier.linters = timings.wrap("linters", original)  # type: ignore[method-assign]
    runs = []
    try:
        for i in range(args.warmup + args.runs):
            counted = i >= args.warmup
            _log(
                args,
                f"session {i + 1} of {args.warmup + args.runs}" + ("" if counted else " (warm-up)"),
            )
            timings.clear()
            spec = SessionSpec(remote=Remote(REPO, str(source)), task="bench", job_id=i + 1)
            busy = machine_busy_seconds()
            started = time.perf_counter()
            result = await runner.run(spec, fixer)
            wall = time.perf_counter() - started
            busy_after = machine_busy_seconds()
            if result.status != "patched":
                raise RuntimeError(f"session {i + 1} ended {result.status}: {result.error}")
            failed = [s for s in result.steps if s.name == "tests" and not s.ok]
            if failed:
                raise RuntimeError(f"the generated tests failed: {failed[0].output[-1500:]}")
            summary = _run_summary(result, wall, timings)
            if busy is not None and busy_after is not None:
                summary["cpu_busy_percent"] = round(
                    100 * (busy_after - busy) / (wall * (os.cpu_count() or 1)), 1
                )
            summary["counted"] = counted
            runs.append(summary)
    finally:
        Verifier.linters = original  # type: ignore[method-assign]
    return runs


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 4) if present else None


def _aggregate(runs: list[dict[str, Any]]) -> dict[str, Any]:
    counted = [r for r in runs if r["counted"]]
    keys = (
        "session_wall_s",
        "tests_base_s",
        "tests_head_s",
        "tests_total_s",
        "linters_wall_s",
        "linters_max_s",
        "linters_sum_s",
        "beyond_tests_s",
        "cpu_busy_percent",
    )
    medians = {k: _median([r.get(k) for r in counted]) for k in keys}
    steps: dict[str, list[float]] = {}
    for r in counted:
        for s in r["steps"]:
            steps.setdefault(f"{s['name']}|{s['tree'] or '-'}", []).append(s["duration_s"])
    spans: dict[str, list[float]] = {}
    for r in counted:
        for name, value in r["spans_s"].items():
            spans.setdefault(name, []).append(value)
    return {
        "medians": medians,
        "steps": {
            k: {"median_s": _median(v), "min_s": min(v), "max_s": max(v)} for k, v in steps.items()
        },
        "spans": {k: _median(v) for k, v in spans.items()},
    }


def _semgrep_status(runs: list[dict[str, Any]], rules: int | None) -> str:
    last = next((f for f in runs[-1]["findings"] if f["tool"] == "semgrep"), None)
    if last is None or not last["ran"]:
        return "skipped: no rules directory" if rules is None else "skipped"
    if last["error"]:
        return f"ERRORED ({rules} rule file(s) in the directory): {last['error'][:120]}"
    return f"ran with {rules} rule file(s) over {last['files']} file(s)"


def _report(doc: dict[str, Any]) -> str:
    agg, runs = doc["aggregate"], doc["runs"]
    med = agg["medians"]
    n = sum(1 for r in runs if r["counted"])
    out = [f"{'step':<10} {'tree':<5} {'median':>7} {'min':>7} {'max':>7}   (result.steps, s)"]
    out.append("-" * len(out[0]))
    for key, s in agg["steps"].items():
        name, tree = key.split("|")
        out.append(
            f"{name:<10} {tree:<5} {s['median_s']:>7.3f} {s['min_s']:>7.3f} {s['max_s']:>7.3f}"
        )
    spans = agg["spans"]
    out.append("")
    out.append(f"the session, medians of {n} run(s), seconds:")
    rows = [
        ("workspace (WorkspaceCache.create)", spans.get("workspace")),
        ("tests on base/ (while the fixer runs)", med["tests_base_s"]),
        ("commit + diff + keep_branch", _sum(spans, "commit", "diff", "keep_branch")),
        ("tests on tree/", med["tests_head_s"]),
        ("linters (Verifier.linters, with tree/ tests)", med["linters_wall_s"]),
        ("remove the session directory", spans.get("remove")),
        ("whole session", med["session_wall_s"]),
    ]
    for label, value in rows:
        out.append(f"  {label:<46} {_fmt(value)}")
    out.append(
        f"  linters: wall {_fmt(med['linters_wall_s'])}, longest step {_fmt(med['linters_max_s'])},"
        f" sum of the three {_fmt(med['linters_sum_s'])} (they run concurrently)"
    )
    out.append(
        f"  beyond the repository's tests: session {_fmt(med['session_wall_s'])} - tests"
        f" {_fmt(med['tests_total_s'])} (base + head) = {_fmt(med['beyond_tests_s'])}"
    )
    if med["cpu_busy_percent"] is not None:
        out.append(
            f"  the machine's CPUs were {med['cpu_busy_percent']:.0f}% busy during a session"
            " (everything on the machine)"
        )
    out.append(f"semgrep: {doc['semgrep']}")
    other = doc["machine"]["other_cpu_percent"]
    if other is not None and other > NOISE_PERCENT:
        out.append(
            f"warning: other processes used {other:.0f}% of a core meanwhile; the figures are"
            " noisy, run again on a quiet machine"
        )
    m = doc["machine"]
    out.append(
        f"machine: nproc {m['nproc']}, Python {m['python']}, {m['kernel']}, {m['tools']};"
        f" load average before {m['loadavg_before']}, after {m['loadavg_after']}"
    )
    t = doc["target"]
    out.append(
        f"target: {t['target']}: {'PASS' if t['met'] else 'MISS'}"
        f" (linters {_fmt(t['linters_wall_s'])}, session minus tests {_fmt(t['beyond_tests_s'])},"
        f" limit {t['limit_s']:g} s)"
        + ("" if t["semgrep_ran"] else "; semgrep did not scan, so this leaves its scan out")
    )
    return "\n".join(out)


def _sum(spans: dict[str, float | None], *names: str) -> float | None:
    values = [spans.get(n) for n in names]
    return round(sum(v for v in values if v is not None), 4) if any(values) else None


def _fmt(value: float | None) -> str:
    return "   n/a" if value is None else f"{value:6.3f} s"


def _tool_versions() -> str:
    """From the installed packages' metadata: no tool is started for it."""
    out = []
    for tool in ("pytest", *LINTERS):
        try:
            out.append(f"{tool} {importlib.metadata.version(tool)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{tool} ?")
    return ", ".join(out)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3, help="sessions measured (default 3)")
    p.add_argument("--warmup", type=int, default=1, help="sessions not counted (default 1)")
    p.add_argument("--modules", type=int, default=6, help="modules in the package (default 6)")
    p.add_argument(
        "--rules",
        type=Path,
        default=DEFAULT_RULES,
        help=f"semgrep rules directory (default {DEFAULT_RULES})",
    )
    p.add_argument("--json", action="store_true", help="JSON on stdout, the report on stderr")
    p.add_argument("--check", action="store_true", help="exit 1 if the target is missed")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


def run_bench(args: argparse.Namespace) -> int:
    if not shutil.which("bwrap"):
        raise RuntimeError("bubblewrap is not installed (apt-get install bubblewrap)")
    load_before = _loadavg()
    others = OtherCpu()
    rules = _semgrep_rules(args.rules)
    with tempfile.TemporaryDirectory(prefix="patchwarden-bench-") as tmp:
        work = Path(tmp)
        source = work / "repo"
        make_repo(source, args.modules)
        runs = asyncio.run(_sessions(args, work, source))
    agg = _aggregate(runs)
    med = agg["medians"]
    semgrep_ok = all(
        f["ran"] and not f["error"] for r in runs for f in r["findings"] if f["tool"] == "semgrep"
    ) and any(f["tool"] == "semgrep" and f["ran"] for f in runs[-1]["findings"])
    beyond = med["beyond_tests_s"] or 0.0
    linters = med["linters_wall_s"] or 0.0
    doc: dict[str, Any] = {
        "benchmark": "verify_overhead",
        "config": {
            "runs": args.runs,
            "warmup": args.warmup,
            "modules": args.modules,
            "rules_dir": str(args.rules),
            "rule_files": rules,
        },
        "runs": runs,
        "aggregate": agg,
        "semgrep": _semgrep_status(runs, rules),
        "target": {
            "target": f"verification beyond the repository's tests <= {TARGET_SECONDS:g} s",
            "met": beyond <= TARGET_SECONDS and linters <= TARGET_SECONDS,
            "linters_wall_s": linters,
            "beyond_tests_s": beyond,
            "limit_s": TARGET_SECONDS,
            "semgrep_ran": semgrep_ok,
        },
        "machine": {
            "nproc": os.cpu_count(),
            "python": platform.python_version(),
            "kernel": platform.release(),
            "tools": _tool_versions(),
            "loadavg_before": load_before,
            "loadavg_after": _loadavg(),
            "other_cpu_percent": others.stop(),
        },
    }
    report = _report(doc)
    if args.json:
        print(report, file=sys.stderr)
        print(json.dumps(doc, indent=2))
    else:
        print(report)
    return 1 if args.check and not doc["target"]["met"] else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.runs < 1 or args.warmup < 0 or args.modules < 1:
        print("--runs and --modules must be positive, --warmup not negative", file=sys.stderr)
        return 2
    try:
        return run_bench(args)
    except KeyboardInterrupt:
        print("interrupted; the temporary folder is gone", file=sys.stderr)
        return 130
    except (RuntimeError, OSError, subprocess.SubprocessError, PatchwardenError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
