"""What the fixers cost: model calls, tokens and time per solved task; bisect time.

Run: ``.venv/bin/python bench/fixers.py [--commits 30,300] [--json] [--check]``; against
a real endpoint: ``PATCHWARDEN_LLM_API_KEY=... bench/fixers.py --base-url URL --model M``
(the key is read from the environment only, never from argv). bench/README.md says
how to read the figures.

**Tasks.** Small generated Python repositories, each with one bug its tests catch and an
issue-like task text. Each goes through the real session (bubblewrap sandbox, real
verification) with the ``llm`` fixer. By default the model is the scripted one
(:mod:`app.fixers.llm.scripted`) replaying a solution over HTTP through the real
``openai`` client, so the figures are Patchwarden's own overhead per tool call; with
``--base-url``/``--model`` the same tasks go to a real model. A task is solved when
the session ends with a verified patch (its tests fixed, none broken).

**Bisect.** Generated histories of N commits (``--commits``), one of which, at 57 %,
breaks a test; the ``revert`` fixer finds and reverts it. Reported: the session's wall
time, the fix phase alone (reproduce, probe for a good commit, bisect, revert) and
how many test runs it took.

Target: every task solved, and bisect time growing with log N, not N: the
300-commit bisect within 3x the 30-commit one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procstat import OtherCpu, common_options, finish, guarded, loadavg, log, machine, noise_warning

from app.config import LlmProvider
from app.fixers.culprit import RevertFixer
from app.fixers.llm.agent.fixer import AgentFixer
from app.fixers.llm.model_client import ModelClient
from app.fixers.llm.scripted import Reply, ScriptedModel, tool
from app.fixers.registry import KNOWN
from app.git import Remote, git_env
from app.sessions.backends import BwrapSandbox
from app.sessions.mirrors import WorkspaceCache
from app.sessions.result import SessionResult
from app.sessions.session import SessionRunner
from app.sessions.task import Budget, SessionSpec, Task

GIT = shutil.which("git") or "/usr/bin/git"
GROWTH_LIMIT = 3.0  # bisect(largest N) / bisect(smallest N)


@dataclass(frozen=True)
class Case:
    name: str
    files: dict[str, str]
    task: str
    solution: list[Reply]  # what the scripted model answers


def _case(name: str, source: str, tests: str, task: str, path: str, old: str, new: str) -> Case:
    return Case(
        name=name,
        files={f"{name}.py": source, f"test_{name}.py": tests},
        task=task,
        solution=[
            tool("search", pattern=old.split("(")[0].strip()[:30] or old[:30]),
            tool("read_file", path=path),
            tool("edit", path=path, old=old, new=new),
            tool("run_tests", selector=f"test_{name}.py"),
            tool("finish", summary=f"fixed {name}"),  # no new test: asked to name one
            tool("finish", summary=f"fixed {name}; test_{name}.py shows it"),
        ],
    )


CASES = [
    _case(
        "calc",
        "def add(a, b):\n    return a - b\n",
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        "add(2, 3) returns -1 instead of 5.",
        "calc.py",
        "return a - b",
        "return a + b",
    ),
    _case(
        "slug",
        "def slugify(text):\n    return '-'.join(text.split())\n",
        "from slug import slugify\n\n\ndef test_slug():\n    assert slugify('Hello World') == "
        "'hello-world'\n",
        "slugify('Hello World') should give 'hello-world' (lower case).",
        "slug.py",
        "return '-'.join(text.split())",
        "return '-'.join(text.lower().split())",
    ),
    _case(
        "leap",
        "def is_leap(year):\n    return year % 4 == 0\n",
        "from leap import is_leap\n\n\ndef test_century():\n    assert not is_leap(1900)\n"
        "    assert is_leap(2000)\n    assert is_leap(2024)\n",
        "is_leap(1900) is True but 1900 was not a leap year.",
        "leap.py",
        "return year % 4 == 0",
        "return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)",
    ),
    _case(
        "stack",
        "class Stack:\n    def __init__(self):\n        self.items = []\n\n"
        "    def push(self, x):\n        self.items.append(x)\n\n"
        "    def pop(self):\n        return self.items.pop(0)\n",
        "from stack import Stack\n\n\ndef test_lifo():\n    s = Stack()\n    s.push(1)\n"
        "    s.push(2)\n    assert s.pop() == 2\n",
        "Stack.pop returns the oldest item; a stack must return the newest.",
        "stack.py",
        "return self.items.pop(0)",
        "return self.items.pop()",
    ),
]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--base-url", help="a real OpenAI-compatible endpoint instead of the script")
    p.add_argument("--model", help="the model name at --base-url")
    p.add_argument("--commits", default="30,300", help="history sizes to bisect (comma list)")
    p.add_argument("--no-tasks", action="store_true", help="only the bisect part")
    p.add_argument("--no-bisect", action="store_true", help="only the tasks")
    return common_options(p)


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(
        [GIT, *args], cwd=repo, env=git_env(repo), input=stdin, capture_output=True, check=True
    )
    return done.stdout.decode()


def make_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).write_text(text)
    _git(path, "init", "-q", "-b", "main")
    _git(path, "add", "-A")
    _git(path, "-c", "user.name=B", "-c", "user.email=b@example.com", "commit", "-qm", "init")
    return path


def make_history(path: Path, commits: int) -> tuple[Path, int]:
    """``commits`` commits through git fast-import; the one at 57 % breaks test_add."""
    breaks = max(2, int(commits * 0.57))
    good = "def add(a, b):\n    return a + b\n"
    bad = "def add(a, b):\n    return a + b + 1\n"
    tests = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    stream: list[str] = []

    def blob(text: str) -> str:
        data = text.encode()
        return f"data {len(data)}\n{text}"

    for n in range(1, commits + 1):
        stream.append("commit refs/heads/main")
        stream.append(f"committer B <b@example.com> {1_700_000_000 + n * 60} +0000")
        stream.append(blob(f"commit {n}\n"))
        if n == 1:
            stream.append("M 100644 inline calc.py")
            stream.append(blob(good))
            stream.append("M 100644 inline test_calc.py")
            stream.append(blob(tests))
        elif n == breaks:
            stream.append("M 100644 inline calc.py")
            stream.append(blob(bad))
        stream.append(f"M 100644 inline notes/{n}.txt")
        stream.append(blob(f"note {n}\n"))
        stream.append("")
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    _git(path, "fast-import", "--quiet", stdin="\n".join(stream).encode())
    _git(path, "reset", "-q", "--hard", "main")
    return path, breaks


def _solved(result: SessionResult) -> bool:
    tests = result.tests
    return (
        result.status == "patched"
        and tests is not None
        and tests.head is not None
        and tests.head.ok
        and not tests.broken
    )


async def run_tasks(
    args: argparse.Namespace, root: Path, runner: SessionRunner
) -> list[dict[str, Any]]:
    rows = []
    for case in CASES:
        repo = make_repo(root / "tasks" / case.name, case.files)
        spec = SessionSpec(
            remote=Remote(f"bench/{case.name}", str(repo)),
            task=Task(case.task.split(".")[0][:60], instructions=case.task),
            budget=Budget(max_steps=30, max_cost_usd=None, daily_usd=None),
        )
        model: ScriptedModel | None = None
        if args.base_url:
            key = os.environ.get("PATCHWARDEN_LLM_API_KEY")
            provider = LlmProvider.model_validate(
                {"model": args.model, "base_url": args.base_url, "api_key": key}
            )
        else:
            model = ScriptedModel(case.solution)
            await model.start()
            provider = LlmProvider(model="scripted", base_url=model.base_url)
        client = ModelClient([provider], timeout=300.0)
        started = time.monotonic()
        try:
            result = await runner.run(spec, AgentFixer(client))
        finally:
            await client.close()
            if model is not None:
                await model.stop()
        wall = time.monotonic() - started
        usage = result.fix.usage if result.fix is not None else None
        rows.append(
            {
                "task": case.name,
                "solved": _solved(result),
                "wall_seconds": round(wall, 2),
                "fix_seconds": round(
                    sum(s.duration_seconds for s in result.steps if s.phase == "fix"), 2
                ),
                "model_calls": usage.calls if usage else 0,
                "prompt_tokens": usage.prompt_tokens if usage else 0,
                "completion_tokens": usage.completion_tokens if usage else 0,
                "error": result.error,
            }
        )
        log(
            args,
            f"task {case.name}: {'solved' if rows[-1]['solved'] else 'NOT solved'} in {wall:.1f}s",
        )
    return rows


async def run_bisects(
    args: argparse.Namespace, root: Path, runner: SessionRunner
) -> list[dict[str, Any]]:
    rows = []
    for n in [int(v) for v in args.commits.split(",") if v.strip()]:
        repo, breaks = make_history(root / f"history-{n}", n)
        spec = SessionSpec(
            remote=Remote(f"bench/history-{n}", str(repo)),
            task=Task("tests fail on main", kind="alert", check="tests"),
        )
        started = time.monotonic()
        result = await runner.run(spec, RevertFixer())
        wall = time.monotonic() - started
        fix = [s for s in result.steps if s.phase == "fix"]
        culprit = result.fix.culprit if result.fix is not None else None
        expected = _git(repo, "rev-list", "--reverse", "main").split()[breaks - 1]
        rows.append(
            {
                "commits": n,
                "found": culprit is not None
                and culprit.sha == expected
                and result.status == "patched",
                "wall_seconds": round(wall, 2),
                "fix_seconds": round(sum(s.duration_seconds for s in fix), 2),
                "test_runs": culprit.tested if culprit else None,
                # The revert fixer bisects on the host, each probe a test run in the
                # sandbox named "bisect" (no `git bisect run` since it moved there).
                "bisect_seconds": round(
                    sum(s.duration_seconds for s in fix if s.name == "bisect"), 2
                ),
                "error": result.error,
            }
        )
        found = "found" if rows[-1]["found"] else "MISSED"
        log(args, f"bisect over {n} commits: {wall:.1f}s, culprit {found}")
    return rows


def _report(doc: dict[str, Any]) -> str:
    lines = ["fixers benchmark", ""]
    tasks = doc["tasks"]
    if tasks:
        lines.append(f"tasks ({doc['model']}):")
        lines.append("  task    solved  wall s  fix s  calls  prompt tok  completion tok")
        for r in tasks:
            lines.append(
                f"  {r['task']:<7} {'yes' if r['solved'] else 'NO':<7} {r['wall_seconds']:>6.1f} "
                f"{r['fix_seconds']:>6.1f} {r['model_calls']:>6} {r['prompt_tokens']:>11} "
                f"{r['completion_tokens']:>15}"
            )
        s = doc["per_solved_task"]
        if s:
            lines.append(
                f"  per solved task (median): {s['wall_seconds']:.1f} s, {s['model_calls']} calls, "
                f"{s['tokens']} tokens"
            )
        lines.append("")
    if doc["bisect"]:
        lines.append("bisect (revert fixer):")
        lines.append("  commits  found  session s  fix s  bisect probes s  test runs")
        for r in doc["bisect"]:
            found = "yes" if r["found"] else "NO"
            lines.append(
                f"  {r['commits']:>7}  {found:<5} {r['wall_seconds']:>9.1f} "
                f"{r['fix_seconds']:>6.1f} {r['bisect_seconds']:>16.1f} {r['test_runs']:>10}"
            )
        lines.append("")
    t = doc["target"]
    lines.append(f"target: {t['description']}: {'MET' if t['met'] else 'MISSED'}")
    lines += noise_warning(doc)
    return "\n".join(lines)


def run_bench(args: argparse.Namespace) -> int:
    load_before = loadavg()
    others = OtherCpu()
    with tempfile.TemporaryDirectory(prefix="patchwarden-bench-fixers-") as tmp:
        root = Path(tmp)
        runner = SessionRunner(
            fixers=KNOWN,
            cache=WorkspaceCache(root / "cache"),
            sandbox=BwrapSandbox(state_dir=root / "sandbox"),
        )
        tasks = [] if args.no_tasks else asyncio.run(run_tasks(args, root, runner))
        bisects = [] if args.no_bisect else asyncio.run(run_bisects(args, root, runner))
    solved = [r for r in tasks if r["solved"]]
    per_task = {}
    if solved:
        per_task = {
            "wall_seconds": round(statistics.median(r["wall_seconds"] for r in solved), 2),
            "model_calls": statistics.median(r["model_calls"] for r in solved),
            "tokens": statistics.median(
                r["prompt_tokens"] + r["completion_tokens"] for r in solved
            ),
        }
    all_solved = len(solved) == len(tasks)
    growth = None
    if len(bisects) >= 2:
        growth = bisects[-1]["fix_seconds"] / max(bisects[0]["fix_seconds"], 1e-9)
    bisect_ok = all(r["found"] for r in bisects) and (growth is None or growth <= GROWTH_LIMIT)
    sizes = (bisects[0]["commits"], bisects[-1]["commits"]) if bisects else ("n", "N")
    description = (
        f"every task solved; every culprit found; bisect({sizes[1]}) <= "
        f"{GROWTH_LIMIT:g}x bisect({sizes[0]})"
        + (f" (measured {growth:.2f}x)" if growth is not None else "")
    )
    doc = {
        "bench": "fixers",
        "model": f"{args.model} at {args.base_url}" if args.base_url else "scripted",
        "tasks": tasks,
        "per_solved_task": per_task,
        "bisect": bisects,
        "bisect_growth": None if growth is None else round(growth, 2),
        "target": {
            "description": description,
            "met": all_solved and bisect_ok,
        },
        "machine": machine(load_before, others),
    }
    return finish(doc, _report(doc), args)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.base_url and not args.model:
        print("--base-url needs --model", file=sys.stderr)
        return 2
    return guarded(run_bench, args)


if __name__ == "__main__":
    sys.exit(main())
