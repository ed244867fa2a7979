"""How long a session waits for its workspace: a cold clone against Patchwarden's mirror cache.

Run: ``.venv/bin/python bench/workspace_prep.py [--commits 3000] [--files 200] [--runs 5]
[--json] [--check]``. bench/README.md says what it measures and how to read it.

A repository with a long history is generated in a temporary folder (a ``git fast-import``
stream: thousands of commits in a second or two, not thousands of ``git commit`` calls),
then a session's workspace is prepared from it two ways, each ``--runs`` times:

``cold``
    ``git clone --no-local`` of the whole repository into a new folder, checkout
    included: what a bot without a cache does for every job (here without the network,
    so the figure is a floor).
``cached``
    ``WorkspaceCache(root).create(Remote(...), base=<tip sha>, branch=...)`` with the
    mirror already there: a git directory borrowing the mirror's objects and two
    checkouts, ``tree/`` and ``base/``. Also with ``with_base_copy=False`` (``tree/``
    only), for reference. The first call, which clones the mirror, is timed apart.

Every git here runs with a throwaway environment: ``HOME`` in the temporary folder,
``GIT_CONFIG_NOSYSTEM=1``, ``GIT_CONFIG_GLOBAL=/dev/null``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
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

from app.git import Remote, git_env
from app.sessions.mirrors import WorkspaceCache

TARGET_RATIO = 0.05  # cached median <= 5 % of the cold median
REPO = "bench/repo"
BRANCH = "patchwarden/1-bench"
WORDS = (
    *("value", "result", "items", "config", "parser", "record", "buffer", "offset", "token"),
    *("handler", "request", "response", "payload", "window", "cursor", "status", "counter"),
    *("limit", "source", "target"),
)


class Git:
    """The git CLI with a throwaway environment (no system or global config)."""

    def __init__(self, home: Path) -> None:
        exe = shutil.which("git")
        if exe is None:
            raise RuntimeError("git is not installed")
        self.exe = exe
        self.env = git_env(home)

    def __call__(
        self, *args: str, cwd: Path | None = None, stdin: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        done = subprocess.run(
            [self.exe, *args],
            cwd=cwd,
            env=self.env,
            input=stdin,
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            err = done.stderr.decode("utf-8", "replace").strip()[-1000:]
            raise RuntimeError(f"git {' '.join(args[:3])} failed: {err}")
        return done

    def out(self, *args: str, cwd: Path | None = None) -> str:
        return self(*args, cwd=cwd).stdout.decode().strip()


# --------------------------------------------------------------------------------------
# The repository: a fast-import stream of Python-looking files, a few edited per commit.
# --------------------------------------------------------------------------------------
def _line(rng: random.Random) -> str:
    a, b, c = rng.sample(WORDS, 3)
    kind = rng.randrange(4)
    if kind == 0:
        return f"    {a} = {b}.{c}({rng.randrange(1000)})"
    if kind == 1:
        return f"    if {a} > {rng.randrange(100)}:\n        return {b}_{c}"
    if kind == 2:
        return f"    # {a} {b} {c}: keep in step with the {rng.choice(WORDS)} table"
    return f"    {a}_{b} = [{c} for {c} in {a} if {c}]"


def _file(rng: random.Random, index: int, functions: int) -> list[str]:
    lines = [f'"""Module {index}: generated for the workspace benchmark."""', ""]
    for f in range(functions):
        lines += ["", f"def {rng.choice(WORDS)}_{index}_{f}({rng.choice(WORDS)}):"]
        lines += [_line(rng) for _ in range(rng.randrange(4, 12))]
        lines.append(f"    return {rng.choice(WORDS)}")
    return lines


def _data(text: str) -> bytes:
    raw = text.encode()
    return b"data %d\n%s\n" % (len(raw), raw)


def fast_import_stream(*, commits: int, files: int, seed: int = 1) -> tuple[bytes, int]:
    """A ``git fast-import`` stream for ``main`` and the bytes of its last tree."""
    rng = random.Random(seed)
    paths = []
    for i in range(files):
        package = f"pkg{i % 10}" if i % 4 else f"pkg{i % 10}/sub{i % 3}"
        paths.append(f"src/{package}/mod_{i:03d}.py")
    contents = {p: _file(rng, i, rng.randrange(3, 9)) for i, p in enumerate(paths)}
    contents["README.md"] = ["# generated", "", "A repository for bench/workspace_prep.py."]
    chunks: list[bytes] = []
    when = 1_700_000_000
    for n in range(1, commits + 1):
        when += rng.randrange(60, 7200)
        if n == 1:
            changed = list(contents)
            message = "initial import"
        else:
            changed = rng.sample(paths, rng.randrange(1, 4))
            for path in changed:
                lines = contents[path]
                at = rng.randrange(2, len(lines))
                if rng.random() < 0.3 and len(lines) > 40:
                    del lines[at]
                else:
                    lines[at:at] = [_line(rng)]
            message = f"change {len(changed)} file(s) in {changed[0].split('/')[1]} (#{n})"
        chunks.append(b"commit refs/heads/main\n")
        chunks.append(b"mark :%d\n" % n)
        chunks.append(b"committer Bench <bench@example.com> %d +0000\n" % when)
        chunks.append(_data(message))
        for path in changed:
            chunks.append(b"M 100644 inline %s\n" % path.encode())
            chunks.append(_data("\n".join(contents[path]) + "\n"))
        chunks.append(b"\n")
    chunks.append(b"done\n")
    tree_bytes = sum(len("\n".join(c)) + 1 for c in contents.values())
    return b"".join(chunks), tree_bytes


def make_repo(git: Git, path: Path, args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    stream, tree_bytes = fast_import_stream(commits=args.commits, files=args.files)
    generated = time.monotonic()
    git("init", "--quiet", "--bare", "--initial-branch=main", str(path))
    git("fast-import", "--quiet", "--done", cwd=path, stdin=stream)
    imported = time.monotonic()
    if args.repack:
        # Packed the way a hosted repository is (deltas computed afresh, newest versions
        # whole): fast-import's own pack leaves every tip blob at the end of a chain of
        # up to 50 deltas, which slows both ways' checkouts.
        git("repack", "-a", "-d", "-f", "-q", cwd=path)
    repacked = time.monotonic()
    tip = git.out("rev-parse", "refs/heads/main", cwd=path)
    pack_bytes = sum(p.stat().st_size for p in (path / "objects" / "pack").glob("*.pack"))
    objects = git.out("count-objects", "-v", cwd=path)
    count = sum(
        int(line.split(": ")[1])
        for line in objects.splitlines()
        if line.startswith(("count:", "in-pack:"))
    )
    return {
        "commits": args.commits,
        "files": args.files + 1,
        "tree_bytes": tree_bytes,
        "objects": count,
        "pack_bytes": pack_bytes,
        "stream_bytes": len(stream),
        "tip": tip,
        "seconds": {
            "generate": round(generated - started, 3),
            "fast_import": round(imported - generated, 3),
            "repack": round(repacked - imported, 3) if args.repack else None,
        },
    }


# --------------------------------------------------------------------------------------
# The two ways.
# --------------------------------------------------------------------------------------
def cold(git: Git, source: Path, work: Path, runs: int) -> list[float]:
    times = []
    for i in range(runs):
        dest = work / f"cold-{i}"
        started = time.perf_counter()
        git("clone", "--no-local", "--quiet", str(source), str(dest))
        times.append(time.perf_counter() - started)
        shutil.rmtree(dest)
    return times


async def cached(
    root: Path, source: Path, tip: str, runs: int, *, with_base_copy: bool, prime: bool
) -> tuple[float | None, list[float], list[float]]:
    """(first call if ``prime``, then ``runs`` timed calls, and each ``remove()``)."""
    cache = WorkspaceCache(root)
    remote = Remote(REPO, str(source))
    first = None
    if prime:
        started = time.perf_counter()
        ws = await cache.create(remote, base=tip, branch=BRANCH, with_base_copy=with_base_copy)
        first = time.perf_counter() - started
        ws.remove()
    times, removes = [], []
    for _ in range(runs):
        started = time.perf_counter()
        ws = await cache.create(remote, base=tip, branch=BRANCH, with_base_copy=with_base_copy)
        times.append(time.perf_counter() - started)
        if ws.base_sha != tip or not (ws.tree / "README.md").is_file():
            raise RuntimeError(f"the workspace is not at {tip}: {ws.root}")
        started = time.perf_counter()
        ws.remove()
        removes.append(time.perf_counter() - started)
    if cache.fetches.get(REPO, 0) != (1 if prime else 0):
        raise RuntimeError(f"the cache fetched {cache.fetches} times; expected one clone")
    return first, times, removes


def _describe(args: Sequence[str]) -> str:
    """``read-tree -u base/`` from run_git's argv: the subcommand, paths left out."""
    rest = list(args)
    work_tree = ""
    while rest and rest[0] in ("--git-dir", "--work-tree"):
        if rest[0] == "--work-tree":
            work_tree = Path(rest[1]).name + "/"
        rest = rest[2:]
    words = [a for a in rest[:3] if not a.startswith("/") and len(a) < 30]
    label = " ".join(words[:2])
    return f"{label} {work_tree}" if rest and rest[0] == "read-tree" else label


async def traced(root: Path, source: Path, tip: str, runs: int) -> list[dict[str, Any]]:
    """Cached creates with each host-side git call timed (``run_git`` wrapped here only)."""
    from app.sessions import workspace

    original = workspace.run_git
    calls: list[tuple[str, float]] = []

    async def timed(args: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        started = time.perf_counter()
        try:
            return await original(args, **kwargs)
        finally:
            calls.append((_describe(args), time.perf_counter() - started))

    cache = WorkspaceCache(root)
    remote = Remote(REPO, str(source))
    per_run: list[list[tuple[str, float]]] = []
    totals: list[float] = []
    workspace.run_git = timed  # type: ignore[assignment]
    try:
        for _ in range(runs):
            calls.clear()
            started = time.perf_counter()
            ws = await cache.create(remote, base=tip, branch=BRANCH)
            totals.append(time.perf_counter() - started)
            ws.remove()
            per_run.append(list(calls))
    finally:
        workspace.run_git = original
    steps = []
    for i, (label, _) in enumerate(per_run[0]):
        values = [run[i][1] for run in per_run if len(run) > i]
        steps.append({"git": label, "median_s": round(statistics.median(values), 4)})
    git_total = sum(s["median_s"] for s in steps)
    steps.append(
        {
            "git": "(not git: Python, threads)",
            "median_s": round(statistics.median(totals) - git_total, 4),
        }
    )
    return steps


def _stats(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "n": len(values),
        "median_s": round(statistics.median(ordered), 4),
        "p90_s": round(pct(ordered, 0.90), 4),
        "min_s": round(ordered[0], 4),
        "max_s": round(ordered[-1], 4),
        "all_s": [round(v, 4) for v in values],
    }


def _git_version(git: Git) -> str:
    return git.out("--version").removeprefix("git version ")


def _report(doc: dict[str, Any]) -> str:
    repo, r = doc["repository"], doc["results"]
    secs = repo["seconds"]
    repack = f", repack {secs['repack']:.2f} s" if secs["repack"] is not None else ""
    out = [
        f"repository: {repo['commits']} commits, {repo['files']} files"
        f" ({repo['tree_bytes'] / 1024:.0f} KiB checked out), {repo['objects']} objects,"
        f" pack {repo['pack_bytes'] / 1024 / 1024:.1f} MiB; made in"
        f" {secs['generate']:.2f} s (stream) + {secs['fast_import']:.2f} s (fast-import){repack}",
        "",
        f"{'way':<40} {'n':>3} {'median':>8} {'p90':>8} {'min':>8} {'max':>8} {'vs cold':>8}",
    ]
    out.append("-" * len(out[-1]))
    cold_median = r["cold"]["median_s"]
    labels = {
        "cold": "cold: git clone --no-local",
        "cached": "cached: WorkspaceCache.create",
        "cached_tree_only": "cached, with_base_copy=False",
        "remove": "  ws.remove() after a cached create",
    }
    for key, label in labels.items():
        s = r[key]
        ratio = f"{100 * s['median_s'] / cold_median:7.1f}%" if key != "cold" else ""
        out.append(
            f"{label:<40} {s['n']:>3} {s['median_s']:>8.3f} {s['p90_s']:>8.3f}"
            f" {s['min_s']:>8.3f} {s['max_s']:>8.3f} {ratio:>8}"
        )
    out.append(
        f"seconds; the first cached call, which clones the mirror (git clone --mirror of a"
        f" local path),\ntook {r['prime_s']:.3f} s and is not in the cached rows"
    )
    out.append("")
    out.append("where a cached create spends its time (median of 3 traced calls, seconds):")
    for step in r["cached_git_steps"]:
        out.append(f"  {step['git']:<38} {step['median_s']:.3f}")
    out += noise_warning(doc)
    m = doc["machine"]
    out.append(
        f"machine: nproc {m['nproc']}, git {m['git']}, Python {m['python']}, {m['kernel']};"
        f" temp on {m['tmp_fs']}; load average before {m['loadavg_before']},"
        f" after {m['loadavg_after']}"
    )
    t = doc["target"]
    out.append(
        f"target: {t['target']}: {'PASS' if t['met'] else 'MISS'}"
        f" ({100 * t['measured_ratio']:.1f}% = {t['cached_s']:.3f} s of {t['cold_s']:.3f} s)"
    )
    return "\n".join(out)


def _fs_type(path: Path) -> str:
    best, kind = "", "?"
    try:
        mounts = Path("/proc/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return kind
    resolved = str(path.resolve())
    for line in mounts:
        fields = line.split()
        if len(fields) > 2 and resolved.startswith(fields[1]) and len(fields[1]) > len(best):
            best, kind = fields[1], fields[2]
    return kind


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--commits", type=int, default=3000, help="commits to generate (3000)")
    p.add_argument("--files", type=int, default=200, help="Python files in the tree (200)")
    p.add_argument("--runs", type=int, default=5, help="timed runs of each way (5)")
    p.add_argument(
        "--no-repack",
        dest="repack",
        action="store_false",
        help="leave fast-import's pack as it is (no git repack -a -d -f)",
    )
    p.add_argument(
        "--work-dir",
        default=None,
        help="where the temporary folder goes (default: the system's; try /dev/shm to see"
        " what the disk costs)",
    )
    return common_options(p)


def run_bench(args: argparse.Namespace) -> int:
    load_before = loadavg()
    others = OtherCpu()
    with tempfile.TemporaryDirectory(prefix="patchwarden-bench-", dir=args.work_dir) as tmp:
        work = Path(tmp)
        home = work / "home"
        home.mkdir()
        git = Git(home)
        source = work / "source.git"
        log(args, f"generating {args.commits} commits over {args.files} files")
        repo = make_repo(git, source, args)
        tip = repo["tip"]
        log(args, f"cold: {args.runs} x git clone --no-local")
        cold_times = cold(git, source, work, args.runs)
        log(args, f"cached: priming the mirror, then {args.runs} x WorkspaceCache.create")
        prime, cached_times, removes = asyncio.run(
            cached(work / "cache", source, tip, args.runs, with_base_copy=True, prime=True)
        )
        _, tree_only, _ = asyncio.run(
            cached(work / "cache", source, tip, args.runs, with_base_copy=False, prime=False)
        )
        log(args, "cached: 3 more creates with each git call timed")
        steps = asyncio.run(traced(work / "cache", source, tip, 3))
        tmp_fs = _fs_type(work)
        git_version = _git_version(git)
    results = {
        "cold": _stats(cold_times),
        "cached": _stats(cached_times),
        "cached_tree_only": _stats(tree_only),
        "remove": _stats(removes),
        "prime_s": round(prime or 0.0, 4),
        "cached_git_steps": steps,
    }
    ratio = results["cached"]["median_s"] / results["cold"]["median_s"]
    doc: dict[str, Any] = {
        "benchmark": "workspace_prep",
        "config": {
            "commits": args.commits,
            "files": args.files,
            "runs": args.runs,
            "repack": args.repack,
            "work_dir": args.work_dir or tempfile.gettempdir(),
        },
        "repository": repo,
        "results": results,
        "target": {
            "target": f"cached <= {100 * TARGET_RATIO:g}% of cold, medians",
            "met": ratio <= TARGET_RATIO,
            "measured_ratio": round(ratio, 4),
            "cached_s": results["cached"]["median_s"],
            "cold_s": results["cold"]["median_s"],
        },
        "machine": machine(
            load_before,
            others,
            git=git_version,
            tmp_fs=tmp_fs,
        ),
    }
    return finish(doc, _report(doc), args)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.commits < 1 or args.files < 1 or args.runs < 1:
        print("--commits, --files and --runs must be positive", file=sys.stderr)
        return 2
    return guarded(run_bench, args)


if __name__ == "__main__":
    sys.exit(main())
