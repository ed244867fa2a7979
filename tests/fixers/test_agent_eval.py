"""The agent eval (bench/agent_eval.py): its task set is sound, and its harness tells a
fix from a non-fix, end to end through real sessions with the scripted model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import agent_eval  # noqa: E402  (bench/ is not a package)

from app.fixers.llm.scripted import text, tool  # noqa: E402
from app.sessions.result import RepairReport  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]
TASKS = agent_eval.load_tasks()


def _pytest(tree: Path, target: str) -> int:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", target],
        cwd=tree,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    return done.returncode


def _trees(task: agent_eval.EvalTask, tmp_path: Path) -> tuple[Path, Path, Path]:
    """The task as its bug, its bug with the hidden test, and its reference fix with it."""
    bug, base, fixed = tmp_path / "bug", tmp_path / "base", tmp_path / "fixed"
    trees = {bug: ("repo",), base: ("repo", "hidden"), fixed: ("repo", "solution", "hidden")}
    for tree, parts in trees.items():
        for part in parts:
            shutil.copytree(task.folder / part, tree, dirs_exist_ok=True)
    return bug, base, fixed


def test_the_task_set_has_twenty_tasks_of_each_difficulty_and_kind() -> None:
    assert len(TASKS) >= 20
    assert {t.difficulty for t in TASKS} == {"easy", "medium", "hard"}
    assert {t.kind for t in TASKS} == {"issue", "ci"}
    for task in TASKS:
        assert task.title.strip(), task.name
        assert len(task.issue) > 40, task.name
        assert set(task.files("hidden")) == {"tests/test_patchwarden_hidden.py"}, task.name
        assert set(task.files("solution")) <= set(task.files("repo")), task.name


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_each_hidden_test_fails_on_the_bug_and_passes_on_the_reference_fix(
    task: agent_eval.EvalTask, tmp_path: Path
) -> None:
    bug, base, fixed = _trees(task, tmp_path)
    # An issue's bug is not caught by the repository's own tests; a CI failure's is.
    assert _pytest(bug, "tests") == (0 if task.kind == "issue" else 1)
    assert _pytest(base, "tests/test_patchwarden_hidden.py") == 1
    assert _pytest(fixed, "tests") == 0


def test_the_eval_runs_as_a_script_from_anywhere(tmp_path: Path) -> None:
    """``make eval`` runs the file, not the module: its imports must not need pytest's path."""
    done = subprocess.run(
        [sys.executable, str(BENCH / "agent_eval.py"), "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "--strategy" in done.stdout


async def test_the_reference_fix_counts_as_fixed_and_the_report_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "eval.json"
    argv = ["--scripted", "--tasks", "leap-year,slug-accents", "--report", str(report)]
    assert await _main(argv) == 0
    doc = json.loads(report.read_text())
    rows = {r["task"]: r for r in doc["rows"]}
    assert set(rows) == {"leap-year", "slug-accents"}
    for row in rows.values():
        assert row["fixed"] is True
        assert row["status"] == "patched"
        assert row["turns"] == 6
        assert row["prompt_tokens"] > 0
        assert len(row["turn_seconds"]) == 6
        assert row["dialects"] == {"native": 6}
        assert row["reproduced"]  # the session saw the new test fail on the base code
    # leap-year's fix is shown only by the agent's own test: a draft (model_tests_only);
    # slug-accents' by the repository's failing test
    assert {t: r["decision"] for t, r in rows.items()} == {
        "leap-year": "draft",
        "slug-accents": "review",
    }
    assert set(doc["totals"]) == {"bench"}  # no real-project task was asked for
    assert doc["totals"]["bench"]["fixed"] == 2
    assert doc["totals"]["bench"]["fix_rate"] == 1.0
    assert "fixed 2/2 (100%)" in capsys.readouterr().out

    # Run again: nothing is redone; --fresh starts over.
    stamp = report.stat().st_mtime_ns
    assert await _main([*argv[:2], "leap-year", *argv[3:]]) == 0
    again = json.loads(report.read_text())
    assert [r["task"] for r in again["rows"]] == ["leap-year"]
    assert again["rows"][0]["wall_seconds"] == rows["leap-year"]["wall_seconds"]
    assert report.stat().st_mtime_ns != stamp


async def test_editing_the_failing_test_or_giving_up_is_not_a_fix(tmp_path: Path) -> None:
    (task,) = agent_eval.load_tasks(names=["slug-accents"])
    settings = agent_eval.settings_for(agent_eval.build_parser().parse_args(["--scripted"]))
    settings = settings.model_copy(update={"cache_dir": tmp_path / "cache"})
    test = task.files("repo")["tests/test_slugs.py"]
    cheat = [
        tool(
            "edit",
            path="tests/test_slugs.py",
            old=test,
            new=test.replace('"creme-brulee"', '"cr-me-br-l-e"'),
        ),
        tool("finish", summary="updated the test"),
        tool("finish", summary="the test was wrong"),
    ]
    (tmp_path / "a").mkdir()
    row = await agent_eval.run_task(task, settings, tmp_path / "a", replies=cheat, strategy="agent")
    assert row["status"] == "patched"
    assert row["fixed"] is False
    assert "test_accents" in row["check"]

    (tmp_path / "b").mkdir()
    quits = [tool("finish", summary="cannot"), tool("finish", summary="cannot, really")]
    row = await agent_eval.run_task(task, settings, tmp_path / "b", replies=quits, strategy="agent")
    assert row["fixed"] is False
    assert row["status"] == "no-change"


async def _main(argv: list[str]) -> int:
    """agent_eval.main runs its own event loop: in a thread, away from the test's."""
    import asyncio

    return await asyncio.to_thread(agent_eval.main, argv)


REAL = agent_eval.load_tasks(agent_eval.REAL_TASKS)


def test_there_are_six_real_project_tasks_on_six_projects() -> None:
    assert len(REAL) >= 6
    assert len({t.project for t in REAL}) >= 6
    assert all(t.bug and t.files("hidden") for t in REAL)


@pytest.mark.realworld
@pytest.mark.parametrize("task", REAL, ids=lambda t: t.name)
def test_each_real_hidden_test_passes_on_the_release_and_fails_with_the_bug(
    task: agent_eval.EvalTask, tmp_path: Path
) -> None:
    from tests.realworld.conftest import unpack

    project = agent_eval.project_of(task)
    six = next(p for p in agent_eval.PROJECTS if p.name == "six")
    helper = unpack(six, tmp_path / "six")  # python-dateutil imports six
    for state in ("release", "bug"):
        tree = unpack(project, tmp_path / state)
        if state == "bug":
            for rel, old, new in task.bug:
                text = (tree / rel).read_text()
                assert text.count(old) == 1
                (tree / rel).write_text(text.replace(old, new))
        for rel, text in task.files("hidden").items():
            (tmp_path / f"hidden-{state}" / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / f"hidden-{state}" / rel).write_text(text)
        for dropped in project.drop:  # what setuptools-scm / hatch-vcs write at build
            if dropped.endswith("_version.py"):
                v = project.version
                (tree / dropped).write_text(
                    f"version = __version__ = {v!r}\nversion_tuple = __version_tuple__ = ()\n"
                )
        src = tree / "src" if (tree / "src").is_dir() else tree
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "."],
            cwd=tmp_path / f"hidden-{state}",
            capture_output=True,
            env={
                "PATH": "/usr/bin:/bin",
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                "PYTHONPATH": f"{src}:{helper}",
            },
        )
        assert done.returncode == (0 if state == "release" else 1), done.stdout[-1500:]


JS = agent_eval.load_tasks(agent_eval.JS_TASKS)


def _node_test(tree: Path) -> int:
    done = subprocess.run(
        ["node", "--test"], cwd=tree, capture_output=True, env={"PATH": "/usr/bin:/bin"}
    )
    return done.returncode


def test_there_are_six_npm_tasks_of_both_kinds() -> None:
    assert len(JS) >= 6
    assert {t.kind for t in JS} == {"issue", "ci"}
    assert {t.set for t in JS} == {"js"}
    for task in JS:
        assert len(task.issue) > 40, task.name
        assert [p for p in task.files("hidden") if "patchwarden-hidden.test" in p], task.name
        assert set(task.files("solution")) <= set(task.files("repo")), task.name


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize("task", JS, ids=[t.name for t in JS])
def test_each_npm_hidden_test_fails_on_the_bug_and_passes_on_the_reference_fix(
    task: agent_eval.EvalTask, tmp_path: Path
) -> None:
    bug, base, fixed = _trees(task, tmp_path)
    assert _node_test(bug) == (0 if task.kind == "issue" else 1)
    assert _node_test(base) == 1
    assert _node_test(fixed) == 0


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize("task", JS, ids=[t.name for t in JS])
async def test_the_repair_fixes_each_npm_task_through_the_scripted_model(
    task: agent_eval.EvalTask, tmp_path: Path
) -> None:
    """The llm fixer's repair on each npm task, the scripted model answering as the
    reference would (the hidden test as the reproduction of an issue, the reference
    fix's function): fixed by the hidden test's judgement, published."""
    settings = agent_eval.settings_for(agent_eval.build_parser().parse_args(["--scripted"]))
    settings = settings.model_copy(update={"cache_dir": tmp_path / "cache"})
    replies = agent_eval.js_reference_fix(task)
    row = await agent_eval.run_task(task, settings, tmp_path, replies=replies, strategy="repair")
    assert row["set"] == "js"
    assert row["status"] == "patched", row["stopped"]
    assert row["fixed"] is True, row["check"]
    assert row["decision"] in ("review", "draft")
    if task.kind == "issue":  # the reproduction shows it, checked on the base by the session
        assert row["reproduced"], row


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
async def test_an_answer_that_only_makes_the_visible_test_pass_is_not_fixed(
    tmp_path: Path,
) -> None:
    (task,) = [t for t in JS if t.name == "clamp-above"]
    settings = agent_eval.settings_for(agent_eval.build_parser().parse_args(["--scripted"]))
    settings = settings.model_copy(update={"cache_dir": tmp_path / "cache"})
    # Passes the visible tests (15 in [0, 10]), fails the hidden one (11 in [-3, 7]).
    narrow = (
        "function clamp(value, min, max) {\n"
        "  if (value < min) return min;\n  return Math.min(value, 10);\n}"
    )
    replies = [text(f"```js\n{narrow}\n```")] * 4
    row = await agent_eval.run_task(task, settings, tmp_path, replies=replies, strategy="repair")
    assert row["status"] == "patched", row["stopped"]
    assert row["fixed"] is False
    assert row["ending"] == "wrong but passing"


@pytest.mark.parametrize(
    ("repair", "ending"),
    [
        ({"suspects": [], "samples": 0}, "nothing localised"),
        ({"suspects": ["f (a.py:1-2)"], "samples": 0}, "no reproduction"),
        (
            {"suspects": ["f (a.py:1-2)"], "samples": 0, "reproduction": "tests/test_f_issue.py"},
            "no answer",
        ),
    ],
)
def test_a_task_that_read_no_answer_says_whether_a_test_showed_the_bug(
    repair: dict[str, object], ending: str
) -> None:
    """No answer read: either nothing showed the bug, or a test did and reproducing it
    spent the model call budget (not the same lesson)."""
    report = RepairReport(**repair)
    result = SimpleNamespace(status="failed", fix=SimpleNamespace(repair=report))
    task = SimpleNamespace(kind="issue")
    got = agent_eval.ending_of(task, result, hidden_passes=False, decision=None)  # type: ignore[arg-type]
    assert got == ending
