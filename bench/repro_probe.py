"""How often the repair strategy's reproduction prompt gives a right test, per task.

Run (with ``make model`` running, or ``PATCHWARDEN_LLM_*`` set)::

    .venv/bin/python bench/repro_probe.py --tasks retry-count,email-plus -n 9

For each of the project's tasks (``bench/agent_tasks``) the reproduction prompt is built
as the fixer builds it (the index, the localiser's first suspect, the same words; the
issue's example calls are not run on the base here, so their lines are missing from
the prompt), and ``n`` tests are drawn from the model: the first greedy, the rest at the
fixer's temperature with new seeds. Each test, read as the fixer reads it (the imports
it forgot added), runs in the bubblewrap sandbox on the task's buggy tree and on its
reference solution. A test is **right** when it fails on the bug and passes on the fix.
The other outcomes: it fails on both (a wrong expectation, or a test no fix could
pass), passes on the bug (it shows nothing), errors before running (an import, a
syntax error), or the answer holds no test.

This isolates the one step the session cannot check: whether the model's test says
what the issue says. The whole session is measured by ``bench/agent_eval.py``.

It also reads the tests as the fixer chooses among them: the tests that fail on the bug
count as kept (the fixer's own filter is stricter), drawn in batches of
``REPRO_SAMPLES``. After each whole batch, the row says which test the majority backs
(its kind) and whether another kept test agrees with it, so that rules for when to stop
drawing can be compared (``chosen``: ``{batches: [kind of the chosen test, agreed]}``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from agent_eval import TASKS, EvalTask, load_tasks, settings_for
from openai import AsyncOpenAI

from app.fixers.llm.localize import index, localize
from app.fixers.llm.repair.agreement import expectations, majority
from app.fixers.llm.repair.job import HOT
from app.fixers.llm.repair.repro_prompt import repro_prompt
from app.fixers.llm.repair.reproduction import REPRO_SAMPLES, test_in_answer
from app.fixers.llm.repair.testruns import with_imports
from app.sessions.backends import BwrapSandbox
from app.sessions.sandbox import WORKSPACE, Mount
from app.sessions.task import Document, Task

TEST = "tests/test_patchwarden_probe.py"


def _task(t: EvalTask) -> Task:
    issue = Document(source="issue #1 body", text=t.issue)
    return Task(t.title, instructions="fix this", documents=(issue,))


async def _outcome(sandbox: BwrapSandbox, tree: Path, test: str) -> str:
    """ "failed", "passed" or "error" for ``test`` run alone on a copy of ``tree``."""
    with tempfile.TemporaryDirectory(prefix="patchwarden-probe-") as tmp:
        copy = Path(tmp) / "tree"
        shutil.copytree(tree, copy)
        (copy / TEST).parent.mkdir(parents=True, exist_ok=True)
        (copy / TEST).write_text(test)
        sandbox.prepare_writable(copy)
        done = await sandbox.run(
            ["python", "-m", "pytest", "-q", TEST],
            mounts=[Mount(copy, WORKSPACE, writable=True)],
            env={"PYTEST_ADDOPTS": "-p no:cacheprovider", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            timeout=60,
        )
    return {0: "passed", 1: "failed"}.get(done.exit_code, "error")


def _kind(on_bug: str, on_fix: str) -> str:
    if on_bug == "failed" and on_fix == "passed":
        return "right"
    if on_bug == "passed":
        return "passes on the bug"
    if "error" in (on_bug, on_fix):
        return "errors"
    return "fails on both"


async def probe(t: EvalTask, n: int, client: AsyncOpenAI, model: str, work: Path) -> dict[str, Any]:
    bug = t.folder / "repo"
    fix = work / t.name / "fix"
    shutil.copytree(bug, fix)
    shutil.copytree(t.folder / "solution", fix, dirs_exist_ok=True)
    task = _task(t)
    idx = index(bug)
    suspects = localize(idx, task)
    messages = repro_prompt(task, idx, suspects)
    sandbox = BwrapSandbox(state_dir=work / "sandbox")
    kinds: Counter[str] = Counter()
    kept: list[tuple[str, str]] = []  # (test, its kind), in the order drawn
    chosen: dict[int, list[Any]] = {}
    for i in range(n):
        answer = await client.chat.completions.create(
            model=model,
            messages=messages,  # type: ignore[arg-type]
            temperature=0.0 if i == 0 else HOT,
            seed=i,
            max_tokens=1024,
        )
        test = test_in_answer(answer.choices[0].message.content or "")
        if test is None:
            kinds["no test"] += 1
        else:
            test = with_imports(test, idx)
            on_bug = await _outcome(sandbox, bug, test)
            kind = _kind(on_bug, await _outcome(sandbox, fix, test))
            kinds[kind] += 1
            if on_bug == "failed":
                kept.append((test, kind))
        if (i + 1) % REPRO_SAMPLES == 0:
            chosen[(i + 1) // REPRO_SAMPLES] = choice(kept)
    row = {"task": t.name, "samples": n, "right": kinds["right"], "kinds": dict(kinds)}
    return row | {"chosen": chosen}


def choice(kept: list[tuple[str, str]]) -> list[Any]:
    """The kind of the test the majority backs, and whether another kept test agrees."""
    best = majority(kept)
    if best is None:
        return ["none kept", False]
    same = sum(1 for s, _ in kept if expectations(s) == expectations(best[0]))
    return [best[1], same > 1]


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    settings = settings_for(argparse.Namespace(max_steps=None, scripted=False))
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else "none"
    tasks = load_tasks(TASKS, args.tasks.split(",") if args.tasks else None)
    rows = []
    async with AsyncOpenAI(base_url=settings.llm_base_url, api_key=key, timeout=600) as client:
        with tempfile.TemporaryDirectory(prefix="patchwarden-probe-") as tmp:
            for t in tasks:
                row = await probe(t, args.n, client, settings.llm_model or "", Path(tmp))
                right = f"{row['right']}/{row['samples']} right"
                print(f"{t.name:24} {right}  {row['kinds']}  chosen: {row['chosen']}", flush=True)
                rows.append(row)
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--tasks", help="comma-separated task names (default: all)")
    p.add_argument("-n", type=int, default=9, help="tests drawn per task")
    p.add_argument("--report", type=Path, help="write the rows as JSON here")
    args = p.parse_args()
    if args.n < 1:
        p.error("-n must be at least 1")
    rows = asyncio.run(main_async(args))
    if args.report:
        args.report.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
