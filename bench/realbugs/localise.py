"""Where localisation puts a real bug's function, with no model: the first measure of the
repair's first step on bugs nobody tuned for.

    .venv/bin/python bench/realbugs/localise.py --sources DIR [--split dev] [--limit N]
        [--report PATH]

For each verified bug of the split, its ``ci`` task (the buggy tree with the fix's
failing tests) is built from the project's clone, its test command runs in the sandbox
as a session's first step does, and the repair's localiser ranks the functions from
what that run shows (the failing tests' tracebacks, what they call, and with tracing
which functions the failing tests run and the passing ones do not) and the task's
words (``--untraced``: without the spectrum). A bug is **found at k** when one of the
functions its fix changes (:func:`realbugs.changed_units`) is among the first k
suspects. Prints the counts at 1, 3 and 5 and each bug's rank; writes them as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE.parent), str(ROOT)]

from app.fixers.llm.localize import frames_in, index, localize  # noqa: E402
from app.fixers.llm.repair.spectrum import ochiai  # noqa: E402
from app.fixers.llm.repair.testruns import reached_in, source_of_test  # noqa: E402
from app.fixers.registry import KNOWN  # noqa: E402
from app.sessions import junit  # noqa: E402
from app.sessions.backends import BwrapSandbox  # noqa: E402
from app.sessions.mirrors import WorkspaceCache  # noqa: E402
from app.sessions.repo_commands import detect  # noqa: E402
from app.sessions.sandbox import Mount  # noqa: E402
from app.sessions.selection import selecting  # noqa: E402
from app.sessions.session import SessionRunner  # noqa: E402
from app.sessions.task import Document, Task  # noqa: E402
from app.sessions.test_command import REPORTS_MOUNT  # noqa: E402
from app.sessions.verify import Verifier  # noqa: E402
from realbugs import RealBug, changed_units, load, materialise, order_key, task_text  # noqa: E402

DEFAULT_REPORT = ROOT / ".eval" / "realbugs-localise.json"


async def rank_of(
    bug: RealBug, sources: Path, runner: SessionRunner, work: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """The suspects of ``bug``'s ci task and the rank of the first function at fault."""
    tree = materialise(bug, sources, work / "tree", kind="ci")
    commands = detect(tree, base_python=runner.sandbox.toolchain.base_python)
    runner.sandbox.prepare_writable(tree)
    env = await runner.environments.ensure(
        f"realbugs/{bug.project}", commands, tree, steps=[], secrets=[]
    )
    if env is not None:
        env.apply(tree)
    reports, traces = work / "reports", work / "traces"
    for folder in (reports, traces):
        folder.mkdir()
        runner.sandbox.prepare_writable(folder)
    traced = selecting(None, traces, trace=not args.untraced)
    _, run = await Verifier(runner.sandbox, scratch=work).tests(
        tree,
        env.path if env else None,
        commands,
        label="base",
        addopts=traced.addopts,
        env=traced.env,
        mounts=[Mount(reports, REPORTS_MOUNT, writable=True), *traced.mounts],
    )
    xml = (reports / "junit.xml").read_bytes() if (reports / "junit.xml").is_file() else b""
    failures = junit.failures(xml) if xml else {}
    failing = sorted(t for t, o in run.outcomes.items() if o in ("failed", "errored"))
    idx = index(tree)
    frames = [f for t in failing for f in frames_in(failures.get(t, ""))]
    tests = [source_of_test(tree, t, idx, whole=False) for t in failing]
    title, text = task_text(bug, "ci")
    task = Task(title, kind="alert", check="tests", documents=(Document("check alert", text),))
    reached = reached_in(traces, traced.trace.name)
    ran = ochiai(idx, reached, set(failing))
    suspects = localize(idx, task, frames=frames, tests=[t for t in tests if t], spectrum=ran)
    names = [f"{s.symbol.path}:{s.symbol.qualname}" for s in suspects]
    fault = sorted(changed_units(bug, sources))
    ranks = [names.index(f) + 1 for f in fault if f in names]
    return {
        "bug": bug.id,
        "rank": min(ranks, default=None),
        "at_fault": fault,
        "suspects": names[:5],
        "failing": failing[:5],
        "traced": len(reached),
        "evidence": [s.describe() for s in suspects[:3]],
    }


async def main_async(args: argparse.Namespace) -> int:
    bugs = [b for b in load() if args.split == "all" or b.split == args.split]
    bugs = sorted(bugs, key=lambda b: order_key(b.id))[: args.limit]
    runner = SessionRunner(
        fixers=KNOWN,
        cache=WorkspaceCache(ROOT / ".eval" / "realbugs-cache"),
        sandbox=BwrapSandbox(state_dir=ROOT / ".eval" / "realbugs-sandbox"),
    )
    rows = []
    for bug in bugs:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"localise-{bug.id}-") as tmp:
            try:
                row = await rank_of(bug, args.sources, runner, Path(tmp), args)
            except (RuntimeError, OSError) as exc:
                row = {"bug": bug.id, "rank": None, "error": str(exc)[-300:]}
        row["seconds"] = round(time.monotonic() - started, 1)
        rows.append(row)
        print(f"[localise] {bug.id}: rank {row['rank']} {row.get('suspects', [])[:3]}")
    found = {k: sum(1 for r in rows if r["rank"] is not None and r["rank"] <= k) for k in (1, 3, 5)}
    doc = {"split": args.split, "bugs": len(rows), "found_at": found, "rows": rows}
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(doc, indent=1))
    print(f"found at 1: {found[1]}, at 3: {found[3]}, at 5: {found[5]} of {len(rows)} bugs")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, required=True, help="a clone per project")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--report", type=Path, default=DEFAULT_REPORT)
    parser.add_argument(
        "--untraced", action="store_true", help="no spectrum: the tests run untraced"
    )
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
