"""How often the llm fixer really fixes a bug: a task set with hidden tests, on any model.

Run: ``make eval`` (the local model of ``make model`` when it runs, else the model that
``PATCHWARDEN_LLM_*`` configures), or ``.venv/bin/python bench/agent_eval.py [--tasks
leap-year,retry-count] [--report PATH] [--fresh]``; ``--scripted`` replays each task's
reference fix through the scripted model (the smoke version ``make test`` runs).

**Tasks** (``bench/agent_tasks/<name>/``, written for this project): ``repo/`` is a small
Python project with a bug, ``task.toml`` the issue a user filed about it (title, text,
difficulty, and ``kind``: an issue, or a CI failure that a visible test shows),
``hidden/`` a test that decides success and that the agent never sees, ``solution/``
the reference fix (tests/fixers/test_agent_eval.py checks that the hidden test fails on
the bug and passes on the fix).

**One task** goes through the real session, as ``@patchwarden fix this`` on the issue
would: the bubblewrap sandbox, the agent, verification, the risk score. The task is
**fixed** when the session made a patch and, on the patched tree with the task's own
tests put back as they were (editing a test to agree with the bug does not count) and
the hidden test added, every test passes — run in the sandbox too.

Reported per task: fixed, model turns, prompt and completion tokens, wall time, each
turn's time and prompt size, the tool-call dialects the model used, the decision and
score; in total: fix rate, tokens per fix, median time and turns per fix, and the
per-turn time curve (turn 10 against turn 1). Tasks run one at a time; the JSON report
is written after each, and a run picks up where the last one stopped (``--fresh``
starts over; a task run against another model or Patchwarden revision is run again).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import realbugs  # bench/realbugs: real bugs of real projects' histories
from procstat import log
from realbugs.build import fail_to_pass

from app.config import Settings, load_settings
from app.fixers.choose import budget_from, make_fixer
from app.fixers.llm.js_index import symbols_of
from app.fixers.llm.repair import switches
from app.fixers.llm.scripted import Reply, ScriptedModel, tool
from app.fixers.llm.scripted import text as said
from app.fixers.registry import KNOWN
from app.git import Remote, git_env
from app.policy.score import Trigger, score_session
from app.sessions.factory import runner_from
from app.sessions.files import remove_confined, write_confined
from app.sessions.repo_commands import detect
from app.sessions.result import SessionResult
from app.sessions.sandbox import WORKSPACE, Mount
from app.sessions.session import SessionRunner
from app.sessions.task import Document, SessionSpec, Task
from app.sessions.test_command import repo_test_command, tree_mounts

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # tests.realworld: the pinned sdists of the real-project tasks

from tests.realworld import sdists  # noqa: E402
from tests.realworld.projects import PROJECTS, Project  # noqa: E402

TASKS = HERE / "agent_tasks"
REAL_TASKS = HERE / "real_tasks"
JS_TASKS = HERE / "js_tasks"  # small npm projects (node's own test runner), each with its bug
DEFAULT_REPORT = ROOT / ".eval" / "agent_eval.json"
GIT = shutil.which("git") or "/usr/bin/git"
HIDDEN_TIMEOUT = 120.0
TARGET_FIX_RATE = 0.5
TARGET_MEDIAN_TURNS = 8
TARGET_TURN_GROWTH = 2.0  # turn 10's time at most this many times turn 1's


@dataclass(frozen=True)
class EvalTask:
    name: str
    title: str
    issue: str
    difficulty: str
    kind: str  # "issue" or "ci"
    folder: Path
    # A real-project task: the project (tests/realworld/projects.py) whose pinned sdist is
    # the repository, and the edits that put the bug in, (file, old text, new text).
    project: str | None = None
    bug: tuple[tuple[str, str, str], ...] = ()
    # A real bug of a real project's history (bench/realbugs), built from the clone of
    # its project under ``sources``.
    realbug: realbugs.RealBug | None = None
    sources: Path | None = None

    @property
    def set(self) -> str:
        """The task set: ``bench`` and ``real`` (the development set), ``realbugs:dev``
        or ``realbugs:test``."""
        if self.realbug is not None:
            return f"realbugs:{self.realbug.split}"
        if self.folder.parent == JS_TASKS:
            return "js"
        return "real" if self.project is not None else "bench"

    def files(self, part: str) -> dict[str, str]:
        top = self.folder / part
        return {
            p.relative_to(top).as_posix(): p.read_text()
            for p in sorted(top.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts
        }


def load_tasks(folder: Path = TASKS, names: list[str] | None = None) -> list[EvalTask]:
    tasks = []
    for d in sorted(p for p in folder.iterdir() if (p / "task.toml").is_file()):
        meta = tomllib.loads((d / "task.toml").read_text())
        tasks.append(
            EvalTask(
                name=d.name,
                title=meta["title"],
                issue=meta["issue"].strip(),
                difficulty=meta["difficulty"],
                kind=meta.get("kind", "issue"),
                folder=d,
                project=meta.get("project"),
                bug=tuple((b["file"], b["old"], b["new"]) for b in meta.get("bug", [])),
            )
        )
    if names:
        known = {t.name for t in tasks}
        unknown = sorted(set(names) - known)
        if unknown:
            raise SystemExit(f"unknown task(s): {', '.join(unknown)}; known: {', '.join(known)}")
        tasks = [t for t in tasks if t.name in names]
    return tasks


def load_realbugs(
    sources: Path,
    *,
    split: str,
    limit: int | None = None,
    kind: str = "all",
    manifest: Path = realbugs.MANIFEST,
) -> list[EvalTask]:
    """The verified real bugs of ``split`` (``dev``, ``test`` or ``all``) as tasks: a
    ``ci`` task each, and an ``issue`` task for those with an issue text (``kind``
    keeps one of the two). ``limit`` keeps the first bugs in a fixed order (a hash of
    the id), for a subset that does not change as the manifest grows."""
    bugs = [b for b in realbugs.load(manifest) if split == "all" or b.split == split]
    bugs = [b for b in bugs if kind == "all" or kind in b.kinds]
    bugs.sort(key=lambda b: realbugs.order_key(b.id))
    tasks = []
    for bug in bugs[:limit]:
        for kind_ in bug.kinds if kind == "all" else (kind,):
            title, text = realbugs.task_text(bug, kind_)
            tasks.append(
                EvalTask(
                    name=f"{bug.id}.{kind_}",
                    title=title,
                    issue=text,
                    difficulty=bug.project,
                    kind=kind_,
                    folder=sources / bug.project,
                    realbug=bug,
                    sources=sources,
                )
            )
    return tasks


def js_reference_fix(task: EvalTask) -> list[Reply]:
    """The repair strategy's answers for an npm task, as a model would give them: on an
    issue, the hidden test as the reproduction (each sample of it); then the reference
    fix's changed function (each sample of each round)."""
    repo = task.files("repo")
    changed = []
    for path, text in task.files("solution").items():
        before = {s.qualname: b for s, b in _js_functions(path, repo[path])}
        for symbol, after in _js_functions(path, text):
            if before.get(symbol.qualname) != after:
                changed.append(after)
    if not changed:
        raise SystemExit(f"{task.name}: its solution changes no function")
    (hidden,) = task.files("hidden").values()
    repro = [said(f"```javascript\n{hidden}```")] * 2 if task.kind == "issue" else []
    return [*repro, *[said(f"```javascript\n{changed[0]}\n```")] * 8]


def _js_functions(path: str, source: str) -> list[tuple[Any, str]]:
    data = source.encode()
    return [(s, data[sp.start : sp.end].decode()) for s, sp in symbols_of(path, data)]


def reference_fix(task: EvalTask) -> list[Reply]:
    """What the scripted model answers for ``task``, as the agent is asked to work: a
    test that reproduces the bug (the hidden test's text, under another name), run;
    the reference fix as whole-file edits; the tests; finish."""
    if task.realbug is not None:
        return _realbug_fix(task.realbug, task.sources or Path())
    base = task.files("repo") if task.project is None else {}
    (hidden,) = task.files("hidden").values()
    repro = f"tests/test_reproduce_{task.name.replace('-', '_')}.py"
    replies = [
        tool("list_files", path="."),
        tool("create_file", path=repro, content=hidden),
        tool("run_tests", selector=repro),
    ]
    for rel, old, new in task.bug:  # a real-project task: undo the bug's edits
        replies.append(tool("edit", path=rel, old=new, new=old))
    for path, text in task.files("solution").items():
        if path in base:
            replies.append(tool("edit", path=path, old=base[path], new=text))
        else:
            replies.append(tool("create_file", path=path, content=text))
    replies += [tool("run_tests"), tool("finish", summary=f"reference fix for {task.name}")]
    return replies


def _realbug_fix(bug: realbugs.RealBug, sources: Path) -> list[Reply]:
    """A real bug's reference answer: the fix commit's versions of the files it changes
    (no test of its own: on an ``issue`` task the policy holds such a change, so the
    harness check is the ``ci`` task)."""
    clone = realbugs.source_of(bug, sources)
    replies = [tool("list_files", path=".")]
    for path in bug.files:
        old = realbugs.file_at(clone, bug.buggy, path)
        new = realbugs.file_at(clone, bug.fixed, path)
        if new is None:
            continue  # the fix deletes it: the agent's tools do not
        if old is None:
            replies.append(tool("create_file", path=path, content=new.decode()))
        else:
            replies.append(tool("edit", path=path, old=old.decode(), new=new.decode()))
    return [*replies, tool("run_tests"), tool("finish", summary=f"the fix of {bug.id}")]


def _git(repo: Path, *args: str) -> bytes:
    done = subprocess.run(
        [GIT, *args], cwd=repo, env=git_env(repo), capture_output=True, check=True
    )
    return done.stdout


def make_repo(task: EvalTask, path: Path) -> Path:
    if task.realbug is not None:
        return realbugs.materialise(task.realbug, task.sources or Path(), path, kind=task.kind)  # type: ignore[arg-type]
    if task.project is not None:
        return make_real_repo(task, path)
    for rel, text in task.files("repo").items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    _git(path, "init", "-q", "-b", "main")
    _git(path, "add", "-A")
    _git(path, "-c", "user.name=Eval", "-c", "user.email=eval@example.com", "commit", "-qm", "init")
    return path


def project_of(task: EvalTask) -> Project:
    found = [p for p in PROJECTS if p.name == task.project]
    if not found:
        raise SystemExit(f"{task.name}: no project {task.project!r} in tests/realworld/projects.py")
    return found[0]


def make_real_repo(task: EvalTask, path: Path) -> Path:
    """The project's pinned sdist as a git repository (its release tagged), then one
    commit that puts the bug in."""
    sdists.as_repository(project_of(task), path)
    for rel, old, new in task.bug:
        text = (path / rel).read_text()
        if text.count(old) != 1:
            raise SystemExit(f"{task.name}: {old!r} is not in {rel} exactly once")
        (path / rel).write_text(text.replace(old, new))
    sdists.commit(path, f"{task.title} (the regression)", author="Dev <dev@example.com>")
    return path


def at_fault(task: EvalTask) -> set[str]:
    """The functions (qualified names) the bug is in: those the reference fix changes,
    or that read a module constant it changes; for a real-project task, those holding the
    bug's edit."""
    found: set[str] = set()
    if task.realbug is not None:
        return realbugs.changed_units(task.realbug, task.sources or Path())
    if task.project is not None:
        tree = Path(tempfile.mkdtemp(prefix="at-fault-"))
        try:
            sdists.unpack(project_of(task), tree / "p")
            for rel, old, _ in task.bug:
                text = (tree / "p" / rel).read_text()
                line = text[: text.index(old)].count("\n") + 1
                found |= {q for q, (a, b, _, _) in realbugs.units(text).items() if a <= line <= b}
        finally:
            shutil.rmtree(tree, ignore_errors=True)
        return found
    for fixed in (task.folder / "solution").rglob("*.py"):
        rel = fixed.relative_to(task.folder / "solution")
        before = realbugs.units((task.folder / "repo" / rel).read_text())
        after = realbugs.units(fixed.read_text())
        changed = {
            k
            for k in before.keys() | after.keys()
            if (before[k][2] if k in before else None) != (after[k][2] if k in after else None)
        }
        constants = {k[1:] for k in changed if k.startswith("=")}
        for name, (_, _, _, reads) in before.items():
            if not name.startswith("=") and (name in changed or reads & constants):
                found.add(name)
    return found


def spec_for(task: EvalTask, repo: Path, settings: Settings) -> SessionSpec:
    """The session ``@patchwarden fix this`` on the task's issue asks for; for a real
    bug's ``ci`` task, the one a red check on the default branch starts."""
    if task.kind == "ci" and (task.realbug is not None or task.set == "js"):
        return SessionSpec(
            remote=Remote(f"eval/{task.name}", str(repo)),
            task=Task(
                task.title,
                kind="alert",
                check="tests",
                documents=(Document(source="check alert", text=task.issue),),
            ),
            budget=budget_from(settings),
        )
    return SessionSpec(
        remote=Remote(f"eval/{task.name}", str(repo)),
        task=Task(
            task.title,
            instructions="fix this",
            documents=(Document(source="issue #1 body", text=task.issue),),
        ),
        budget=budget_from(settings),
    )


async def hidden_check(
    task: EvalTask, runner: SessionRunner, result: SessionResult, scratch: Path
) -> tuple[bool, str]:
    """Whether every test passes on the patch with the task's tests as they were and the
    hidden test added (in the sandbox); and the tail of the output."""
    if result.status != "patched" or not result.head_sha:
        return False, f"no patch ({result.status}: {result.error or 'no change'})"
    tree = scratch / "hidden-check"
    tree.mkdir()
    mirror = runner.cache.mirror_path(result.repo)
    archive = await asyncio.to_thread(
        _git, mirror, "--git-dir", str(mirror), "archive", "--format=tar", result.head_sha
    )
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tree, filter="data")
    if task.realbug is not None:
        return await _hidden_check_realbug(
            task.realbug, task.sources or Path(), runner, result, tree
        )
    if task.project is not None:
        return await _hidden_check_real(task, runner, result, tree)
    if task.set == "js":
        return await _hidden_check_js(task, runner, tree)
    for part in ("repo", "hidden"):
        for rel, text in task.files(part).items():
            if part == "hidden" or rel.startswith("tests/"):
                (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                (tree / rel).write_text(text)
    runner.sandbox.prepare_writable(tree)
    done = await runner.sandbox.run(
        ["python", "-m", "pytest", "-q", "tests"],
        mounts=[Mount(tree, WORKSPACE, writable=True)],
        env={"PYTEST_ADDOPTS": "-p no:cacheprovider", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        timeout=HIDDEN_TIMEOUT,
    )
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-12:])
    return done.exit_code == 0 and not done.timed_out, tail


async def run_task(
    task: EvalTask,
    settings: Settings,
    scratch: Path,
    *,
    replies: list[Reply] | None = None,
    transcripts: Path | None = None,
    strategy: str = "auto",
) -> dict[str, Any]:
    """One task through a session; ``replies``: the scripted model's answers instead of
    the configured model; the conversation is saved in ``transcripts``."""
    repo = make_repo(task, scratch / "repo")
    runner = runner_from(settings, fixers=KNOWN)
    model: ScriptedModel | None = None
    if replies is not None:
        model = ScriptedModel(replies)
        await model.start()
        settings = settings.model_copy(
            update={
                "llm_model": "scripted",
                "llm_base_url": model.base_url,
                "llm_tool_mode": "auto",
            }
        )
    fixer = make_fixer("llm", settings, strategy=strategy)  # type: ignore[arg-type]
    started = time.monotonic()
    try:
        result = await runner.run(spec_for(task, repo, settings), fixer)
    finally:
        await fixer.aclose()
        if model is not None:
            await model.stop()
    wall = time.monotonic() - started
    hidden_passes, tail = await hidden_check(task, runner, result, scratch)
    decision = score = automerging = None
    factors: dict[str, float] = {}
    if result.head_sha and result.policy is not None:
        scored = score_session(result, result.policy, trigger=Trigger("comment"))
        decision, score = scored.decision, scored.score
        factors = {c.factor: c.points for c in scored.contributions}
        # What the same change would get where the repository allows automerge.
        open_policy = result.policy.model_copy(update={"autonomy": "automerge"})
        automerging = score_session(result, open_policy, trigger=Trigger("comment")).decision
    # Fixed: the hidden test passes AND the session would publish the change (a patch the
    # guard rejects helps nobody, however right).
    published = result.status == "patched" and decision not in (None, "reject")
    fixed = hidden_passes and published
    usage = result.fix.usage if result.fix is not None else None
    stopped = None
    if result.fix is not None and not result.fix.ok:
        stopped = result.fix.reason
    if transcripts is not None and result.fix is not None:
        await asyncio.to_thread(save_transcript, transcripts / f"{task.name}.json", result)
    return {
        "task": task.name,
        "set": task.set,
        "project": task.realbug.project if task.realbug else task.project,
        "real": task.project is not None,
        "difficulty": task.difficulty,
        "kind": task.kind,
        "fixed": fixed,
        "status": result.status,
        "reproduced": list(result.tests.reproduced) if result.tests else [],
        "turns": usage.calls if usage else 0,
        "prompt_tokens": usage.prompt_tokens if usage else 0,
        "completion_tokens": usage.completion_tokens if usage else 0,
        "wall_seconds": round(wall, 1),
        "turn_seconds": list(getattr(usage, "turn_seconds", []) or []),
        "turn_prompt_tokens": list(getattr(usage, "turn_prompt_tokens", []) or []),
        "tools": _tool_counts(result),
        "dialects": dict(getattr(usage, "dialects", {}) or {}),
        "decision": decision,
        "score": score,
        "under_automerge": automerging,
        "factors": factors,
        # Places the change touches that the task does not explain (the scope)
        "outside_scope": [p.shown() for p in result.scope.outside] if result.scope else None,
        "implicated": result.scope.implicated if result.scope else None,
        "scope_note": result.scope.note if result.scope else None,
        "modules_failed": result.modules.failed if result.modules else None,
        # What containment added to the session: the module imports (both trees side by
        # side) and the tracing run of the tests that show the fix, when it ran.
        "contain_seconds": round(
            max(
                [s.duration_seconds for s in result.steps if s.name.startswith("module-values")]
                or [0.0]
            )
            + sum(s.duration_seconds for s in result.steps if s.name == "reach"),
            2,
        ),
        "stopped": stopped or result.error,
        "check": tail if not fixed else "",
        "broken": list(result.tests.broken) if result.tests else [],
        "published": published,
        "ending": ending_of(task, result, hidden_passes=hidden_passes, decision=decision),
        "repair": result.fix.repair.model_dump() if result.fix and result.fix.repair else None,
    }


async def _hidden_check_js(task: EvalTask, runner: SessionRunner, tree: Path) -> tuple[bool, str]:
    """An npm task's own tests as they were and its hidden test, with node's runner."""
    for part in ("repo", "hidden"):
        for rel, text in task.files(part).items():
            if part == "hidden" or rel.startswith("test/"):  # never through the patch's links
                remove_confined(tree, rel)
                write_confined(tree, rel, text.encode())
    runner.sandbox.prepare_writable(tree)
    done = await runner.sandbox.run(
        ["node", "--test"],
        mounts=[Mount(tree, WORKSPACE, writable=True)],
        timeout=HIDDEN_TIMEOUT,
    )
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-12:])
    return done.exit_code == 0 and not done.timed_out, tail


async def _hidden_check_real(
    task: EvalTask, runner: SessionRunner, result: SessionResult, tree: Path
) -> tuple[bool, str]:
    """A real project's hidden test, run with the project's environment (the one its
    session built, found in the cache by the same inputs); its own tests are the
    session's verification's (``broken`` must be empty)."""
    commands = detect(tree, base_python=runner.sandbox.toolchain.base_python, overrides={})
    env = await runner.environments.ensure(result.repo, commands, tree, steps=[], secrets=[])
    if env is not None:
        env.apply(tree)
    for rel, text in task.files("hidden").items():
        (tree / "patchwarden_hidden" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / "patchwarden_hidden" / rel).write_text(text)
    runner.sandbox.prepare_writable(tree)
    hidden = [f"patchwarden_hidden/{rel}" for rel in task.files("hidden")]
    env_dir = env.path if env is not None else None
    _, variables = repo_test_command(commands, env_dir)
    argv = ["python", "-m", "pytest", "-q", *hidden]  # the hidden test alone
    done = await runner.sandbox.run(
        argv, mounts=tree_mounts(tree, env_dir), env=variables, timeout=HIDDEN_TIMEOUT
    )
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-12:])
    broken = result.tests.broken if result.tests else []
    if broken:
        tail = f"the patch breaks {', '.join(broken[:5])}\n{tail}"
    return done.exit_code == 0 and not done.timed_out and not broken, tail


async def _hidden_check_realbug(
    bug: realbugs.RealBug, sources: Path, runner: SessionRunner, result: SessionResult, tree: Path
) -> tuple[bool, str]:
    """A real bug is fixed when, with the fix's versions of its test files put in, every
    test of those files that the fix's own tree passes passes too (as the manifest's
    verification ran them, in the sandbox), and the session broke none of the
    repository's tests."""
    for path, data in realbugs.hidden_tests(bug, sources).items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_bytes(data)
    commands = detect(tree, base_python=runner.sandbox.toolchain.base_python)
    runner.sandbox.prepare_writable(tree)
    env = await runner.environments.ensure(result.repo, commands, tree, steps=[], secrets=[])
    seen, output = await fail_to_pass(bug, tree, env, runner, tree.parent)
    tail = "\n".join(output.splitlines()[-12:])
    broken = result.tests.broken if result.tests else []
    if broken:
        tail = f"the patch breaks {', '.join(broken[:5])}\n{tail}"
    passed = seen["exit"] == 0 and not seen["failing"] and not seen.get("timed_out")
    return passed and seen["passing"] > 0 and not broken, tail


def ending_of(
    task: EvalTask, result: SessionResult, *, hidden_passes: bool, decision: str | None
) -> str:
    """How a task ended, in one of a few words: fixed, wrong but passing (published,
    and the hidden test fails), rejected, or why no patch came: no reproduction, no
    answer (a test shows the bug, but reproducing it spent the model call budget), wrong
    function (the one at fault was not among those tried), unparseable / unchanged /
    renamed (no answer was a usable change), test failed (candidates ran, none passed)."""
    if result.status == "patched":
        if decision == "reject":
            return "rejected"
        return "fixed" if hidden_passes else "wrong but passing"
    fix = result.fix
    report = fix.repair if fix is not None else None
    if report is None:
        return "no change" if result.status == "no-change" else "agent gave up"
    if report.samples == 0:
        if not report.suspects:
            return "nothing localised"
        return "no answer" if report.reproduction else "no reproduction"
    # The first of the localiser's first two the model can write back gets the round
    # (app/fixers/llm/repair/fixer.py's TARGETS).
    tried = {s.split(" (")[0] for s in report.suspects[:2]}
    if not {_bare(n) for n in tried} & {_bare(n) for n in at_fault(task)}:
        return "wrong function"
    if report.candidates == 0:
        dropped = {k: v for k, v in report.dropped.items() if k != "duplicate"}
        return max(dropped, key=lambda k: dropped[k]) if dropped else "unchanged"
    return "test failed"


def _bare(name: str) -> str:
    """A function's qualified name without the file it is in (``path:Class.f``)."""
    return name.rsplit(":", 1)[-1]


def save_transcript(path: Path, result: SessionResult) -> None:
    """The conversation as the fixer kept it (redacted, each entry capped)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [e.model_dump(exclude_none=True) for e in result.fix.transcript] if result.fix else []
    path.write_text(json.dumps(entries, indent=1))


def _tool_counts(result: SessionResult) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in result.fix.transcript if result.fix else []:
        if entry.role == "assistant" and entry.tool:
            counts[entry.tool] = counts.get(entry.tool, 0) + 1
    return counts


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    fixed = [r for r in rows if r["fixed"]]
    tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in rows)
    curve = turn_curve(rows)
    growth = None
    if len(curve) >= 10 and curve[0] > 0:
        growth = round(curve[9] / curve[0], 2)
    return {
        "tasks": len(rows),
        "fixed": len(fixed),
        "fix_rate": round(len(fixed) / len(rows), 3) if rows else 0.0,
        "tokens_per_fix": round(tokens / len(fixed)) if fixed else None,
        "median_seconds_per_fix": (
            round(statistics.median(r["wall_seconds"] for r in fixed), 1) if fixed else None
        ),
        "median_turns_per_fix": statistics.median(r["turns"] for r in fixed) if fixed else None,
        "turn_seconds_median_by_turn": curve,
        "turn10_over_turn1": growth,
        "by_difficulty": {
            d: f"{sum(r['fixed'] for r in rows if r['difficulty'] == d)}/"
            f"{sum(1 for r in rows if r['difficulty'] == d)}"
            for d in sorted({r["difficulty"] for r in rows})
        },
        "dialects": _sum_dicts(r.get("dialects", {}) for r in rows),
        "median_seconds_per_task": (
            round(statistics.median(r["wall_seconds"] for r in rows), 1) if rows else None
        ),
        "candidates_tried": sum((r.get("repair") or {}).get("candidates", 0) for r in rows),
        "answers_read": sum((r.get("repair") or {}).get("samples", 0) for r in rows),
        # Published, and the hidden test fails: what a reviewer would be asked to trust.
        "wrong_but_published": sum(1 for r in rows if r.get("ending") == "wrong but passing"),
        # Of the changes fixed: inside the task's scope, and merging themselves where the
        # repository allows automerge.
        "fixed_in_scope": sum(1 for r in fixed if r.get("outside_scope") == []),
        "fixed_would_automerge": sum(1 for r in fixed if r.get("under_automerge") == "automerge"),
        "endings": dict(Counter(r.get("ending", "?") for r in rows).most_common()),
        "mechanisms": mechanisms(rows),
    }


def mechanisms(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per narrow mechanism of the repair (app/fixers/llm/repair/switches.py): on how many tasks
    it acted, and how many published changes it brought, fixed and wrong. A mechanism
    that never acts, or acts and never brings a fix, is a candidate for deletion."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        repair = r.get("repair") or {}
        for name in repair.get("fired", {}):
            out.setdefault(name, {"acted": 0, "fixed": 0, "wrong": 0})["acted"] += 1
        won = repair.get("won_by")
        if won and r.get("published"):
            entry = out.setdefault(won, {"acted": 0, "fixed": 0, "wrong": 0})
            entry["fixed" if r["fixed"] else "wrong"] += 1
    return dict(sorted(out.items()))


def by_set(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals of each task set apart (the project's own tasks, the real-project ones,
    the real bugs' dev and test splits); a real-bug set's by kind and by project too."""
    sets: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        sets.setdefault(r.get("set") or ("real" if r.get("real") else "bench"), []).append(r)
    out = {}
    for name, chosen in sets.items():
        out[name] = totals(chosen)
        if name.startswith("realbugs"):
            for key in ("kind", "project"):
                out[name][f"by_{key}"] = {
                    value: _brief([r for r in chosen if r.get(key) == value])
                    for value in sorted({str(r.get(key)) for r in chosen})
                }
    return out


def _brief(rows: list[dict[str, Any]]) -> dict[str, Any]:
    fixed = sum(1 for r in rows if r["fixed"])
    return {
        "tasks": len(rows),
        "fixed": fixed,
        "fix_rate": round(fixed / len(rows), 3) if rows else 0.0,
        "wrong_but_published": sum(1 for r in rows if r.get("ending") == "wrong but passing"),
    }


def turn_curve(rows: list[dict[str, Any]]) -> list[float]:
    """The median time of turn n over every task that had a turn n."""
    longest = max((len(r["turn_seconds"]) for r in rows), default=0)
    return [
        round(
            statistics.median(r["turn_seconds"][n] for r in rows if len(r["turn_seconds"]) > n), 1
        )
        for n in range(longest)
    ]


def _sum_dicts(dicts: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


def report_text(doc: dict[str, Any]) -> str:
    lines = [
        f"llm fixer eval: {doc['model']}, strategy {doc.get('strategy', 'agent')} "
        f"(Patchwarden {doc['revision']})"
        + (f", without {doc['without']}" if doc.get("without") else ""),
        "",
    ]
    lines.append(
        "  task                        diff    fixed calls  prompt  compl  wall s  decision  ending"
    )
    for r in doc["rows"]:
        lines.append(
            f"  {r['task']:<27} {r['difficulty']:<7} {'yes' if r['fixed'] else 'no':<5} "
            f"{r['turns']:>5} {r['prompt_tokens']:>7} {r['completion_tokens']:>6} "
            f"{r['wall_seconds']:>7.1f}  {r['decision'] or '-'} {_or_blank(r['score'])}"
            f"  {r.get('ending', '')}"
        )
    for name, t in by_set(doc["rows"]).items():
        lines += [
            "",
            f"{name}: fixed {t['fixed']}/{t['tasks']} ({t['fix_rate']:.0%}); "
            f"by difficulty {t['by_difficulty']}; wrong but published: "
            f"{t['wrong_but_published']}",
            f"  tokens per fix {t['tokens_per_fix']}; median s per task "
            f"{t['median_seconds_per_task']}, per fix {t['median_seconds_per_fix']}; "
            f"answers read {t['answers_read']}, candidates tried {t['candidates_tried']}",
            f"  endings: {t['endings']}",
            f"  of the fixes: {t['fixed_in_scope']} inside the task's scope, "
            f"{t['fixed_would_automerge']} would merge themselves under `autonomy: automerge`",
        ]
        if t.get("mechanisms"):
            shown = ", ".join(
                f"{k} {v['acted']} acted/{v['fixed']} fixed/{v['wrong']} wrong"
                for k, v in t["mechanisms"].items()
            )
            lines.append(f"  mechanisms: {shown}")
        for key in ("by_kind", "by_project"):
            if key in t:
                shown = ", ".join(
                    f"{k} {v['fixed']}/{v['tasks']} ({v['wrong_but_published']} wrong)"
                    for k, v in t[key].items()
                )
                lines.append(f"  {key.replace('_', ' ')}: {shown}")
    return "\n".join(lines)


def same_model(label: str) -> str:
    """A run's model as runs are compared by: the name and the endpoint, without the
    port of a server on this machine (``make model`` takes a free one each start)."""
    return re.sub(r"(://(?:127\.0\.0\.1|localhost|\[::1\])):\d+", r"\1", label)


def summarise(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """The mean and the spread (lowest, highest) of each set's figures over whole runs
    of the same tasks on the same revision, model and strategy; reports that differ in
    any of those are refused (a stitched or cherry-picked figure is no figure)."""
    if not reports:
        raise SystemExit("--summarise needs the reports of the runs")
    same = {
        (same_model(d["model"]), d["revision"], d.get("strategy"), d.get("without", ""))
        for d in reports
    }
    if len(same) > 1:
        raise SystemExit(
            f"the runs differ in model, revision, strategy or switches: {sorted(same)}"
        )
    tasks = {tuple(sorted(r["task"] for r in d["rows"])) for d in reports}
    if len(tasks) > 1:
        raise SystemExit("the runs did not run the same tasks: finish each run first")
    out: dict[str, Any] = {"runs": len(reports), "sets": {}}
    for name in by_set(reports[0]["rows"]):
        groups = [by_set(d["rows"])[name] for d in reports]
        figures: dict[str, Any] = {}
        for key in ("fix_rate", "wrong_but_published", "median_seconds_per_task", "tokens_per_fix"):
            values = [g[key] for g in groups if g.get(key) is not None]
            figures[key] = _spread(values)
        for by in ("by_kind", "by_project"):
            if by in groups[0]:
                figures[by] = {
                    value: _spread([g[by][value]["fix_rate"] for g in groups if value in g[by]])
                    for value in groups[0][by]
                }
        figures["tasks"] = groups[0]["tasks"]
        out["sets"][name] = figures
    return out


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "mean": round(statistics.fmean(values), 3),
        "low": min(values),
        "high": max(values),
    }


def summary_text(summary: dict[str, Any]) -> str:
    def shown(f: dict[str, float] | None, percent: bool = False) -> str:
        if f is None:
            return "-"
        if percent:
            return f"{f['mean']:.0%} ({f['low']:.0%}-{f['high']:.0%})"
        return f"{f['mean']:g} ({f['low']:g}-{f['high']:g})"

    lines = [f"mean (lowest-highest) over {summary['runs']} runs"]
    for name, f in summary["sets"].items():
        lines.append(
            f"{name} ({f['tasks']} tasks): fixed {shown(f['fix_rate'], True)}; wrong but "
            f"published {shown(f['wrong_but_published'])}; median s per task "
            f"{shown(f['median_seconds_per_task'])}; tokens per fix {shown(f['tokens_per_fix'])}"
        )
        for by in ("by_kind", "by_project"):
            if by in f:
                parts = ", ".join(f"{k} {shown(v, True)}" for k, v in f[by].items())
                lines.append(f"  {by.replace('_', ' ')}: {parts}")
    return "\n".join(lines)


def _or_blank(value: object) -> str:
    return "" if value is None else str(value)


def revision() -> str:
    try:
        head = _git(ROOT, "rev-parse", "--short=12", "HEAD").decode().strip()
        dirty = _git(ROOT, "status", "--porcelain", "--untracked-files=no", "app").strip()
    except (subprocess.CalledProcessError, OSError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def settings_for(args: argparse.Namespace) -> Settings:
    """The model to evaluate: --scripted, the configured one, or ``make model``'s."""
    overrides: dict[str, Any] = {"llm_max_cost_usd": None}
    if args.max_steps is not None:  # else the product's default, as a user gets it
        overrides["llm_max_steps"] = args.max_steps
    if args.without:
        try:
            overrides["llm_repair_without"] = ",".join(sorted(switches.parse(args.without)))
        except ValueError as exc:
            raise SystemExit(f"--without: {exc}") from exc
    if args.scripted:
        return load_settings(llm_model="scripted", llm_base_url="http://127.0.0.1:9", **overrides)
    if not os.environ.get("PATCHWARDEN_LLM_MODEL"):
        sys.path.insert(0, str(ROOT / "scripts"))
        import model as local  # scripts/model.py

        state = local.running()
        if state is None:
            raise SystemExit(
                "no model: run `make model` (a local one), or set PATCHWARDEN_LLM_MODEL "
                "(and PATCHWARDEN_LLM_BASE_URL, PATCHWARDEN_LLM_API_KEY)"
            )
        for line in local.env_lines(state).splitlines():
            key, _, value = line.removeprefix("export ").partition("=")
            if key != "PATCHWARDEN_LLM_PRICES":
                overrides.setdefault(key.removeprefix("PATCHWARDEN_").lower(), value)
    return load_settings(**overrides)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--tasks", help="comma-separated task names (default: all)")
    p.add_argument(
        "--set",
        choices=("bench", "real", "all", "js", "realbugs"),
        default="all",
        help="the development set: the project's own tasks (bench/agent_tasks), the "
        "real-project ones (bench/real_tasks: pinned PyPI sdists), or both (default); the "
        "npm projects' tasks (bench/js_tasks); or real bugs of real projects' histories "
        "(bench/realbugs; needs --sources)",
    )
    p.add_argument("--sources", type=Path, help="realbugs: a folder with a clone of each project")
    p.add_argument(
        "--split",
        choices=("dev", "test", "all"),
        default="dev",
        help="realbugs: the dev split (default; tune on it) or the test split (report only)",
    )
    p.add_argument("--limit", type=int, help="realbugs: the first N bugs of the split")
    p.add_argument(
        "--kind",
        choices=("ci", "issue", "all"),
        default="all",
        help="realbugs: only the red-check tasks, only the issue tasks, or both (default)",
    )
    p.add_argument(
        "--summarise",
        nargs="+",
        type=Path,
        metavar="REPORT",
        help="print the mean and spread over the reports of whole runs, and stop",
    )
    p.add_argument("--report", type=Path, default=DEFAULT_REPORT, help="the JSON report")
    p.add_argument("--fresh", action="store_true", help="run every task again")
    p.add_argument("--scripted", action="store_true", help="replay the reference fixes")
    p.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="model calls per task (default: PATCHWARDEN_LLM_MAX_STEPS's default, 40)",
    )
    p.add_argument(
        "--strategy",
        choices=("repair", "agent", "auto"),
        default="auto",
        help="the llm fixer's strategy (default auto: repair, then the agent)",
    )
    p.add_argument(
        "--without",
        default="",
        metavar="NAMES",
        help="repair mechanisms turned off, comma-separated (an ablation run): "
        + ", ".join(switches.MECHANISMS),
    )
    p.add_argument("--quiet", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.summarise:
        print(summary_text(summarise([json.loads(p.read_text()) for p in args.summarise])))
        return 0
    names = [n for n in (args.tasks or "").split(",") if n.strip()] or None
    if args.set == "realbugs":
        if args.sources is None:
            raise SystemExit(
                "--set realbugs needs --sources DIR: a clone of each project (see "
                "bench/realbugs/README.md)"
            )
        tasks = load_realbugs(args.sources, split=args.split, limit=args.limit, kind=args.kind)
    else:
        folders = {
            "bench": [TASKS],
            "real": [REAL_TASKS],
            "all": [TASKS, REAL_TASKS],
            "js": [JS_TASKS],
        }[args.set]
        tasks = [t for folder in folders for t in load_tasks(folder)]
    if names:
        unknown = sorted(set(names) - {t.name for t in tasks})
        if unknown:
            raise SystemExit(f"unknown task(s): {', '.join(unknown)}")
        tasks = [t for t in tasks if t.name in names]
    settings = settings_for(args)
    model = "scripted" if args.scripted else f"{settings.llm_model} at {settings.llm_base_url}"
    rev = revision()
    strategy = "agent" if args.scripted and args.set != "js" else args.strategy
    doc: dict[str, Any] = {
        "bench": "agent_eval",
        "model": model,
        "revision": rev,
        "strategy": strategy,
        "without": settings.llm_repair_without,
        "rows": [],
    }
    if args.report.exists() and not args.fresh:
        old = json.loads(args.report.read_text())
        label = same_model(str(old.get("model")))
        same = (label, old.get("revision"), old.get("strategy"), old.get("without", ""))
        if same == (same_model(model), rev, strategy, settings.llm_repair_without):
            doc["rows"] = [r for r in old.get("rows", []) if r["task"] in {t.name for t in tasks}]
    done = {r["task"] for r in doc["rows"]}
    args.report.parent.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        if task.name in done:
            log(args, f"{task.name}: in the report already")
            continue
        with tempfile.TemporaryDirectory(prefix=f"patchwarden-eval-{task.name}-") as tmp:
            scratch = Path(tmp)
            run_settings = settings.model_copy(update={"cache_dir": scratch / "cache"})
            reference = js_reference_fix if task.set == "js" else reference_fix
            replies = reference(task) if args.scripted else None
            row = asyncio.run(
                run_task(
                    task,
                    run_settings,
                    scratch,
                    replies=replies,
                    transcripts=args.report.with_suffix(".transcripts"),
                    strategy=strategy,
                )
            )
        doc["rows"].append(row)
        doc["totals"] = by_set(doc["rows"])
        tmp_report = args.report.with_suffix(".tmp")
        tmp_report.write_text(json.dumps(doc, indent=2))
        tmp_report.replace(args.report)
        log(
            args,
            f"{task.name}: {'FIXED' if row['fixed'] else 'not fixed'} in {row['turns']} turns, "
            f"{row['wall_seconds']:.0f} s ({row['stopped'] or row['decision']})",
        )
    doc["totals"] = by_set(doc["rows"])
    args.report.write_text(json.dumps(doc, indent=2))
    print(report_text(doc))
    print(f"report: {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
