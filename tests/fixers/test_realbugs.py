"""The real-bug set's materialiser (bench/realbugs/) on a small history made here: a
project whose fix commit adds a failing test. The task it builds fails on the bug and
passes with the fix, in the sandbox; the split is fixed by the bug's id."""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import realbugs  # noqa: E402  (bench/ is not a package)
from realbugs import RealBug, build  # noqa: E402

from app.fixers.registry import KNOWN  # noqa: E402
from app.sessions.backends import BwrapSandbox  # noqa: E402
from app.sessions.mirrors import WorkspaceCache  # noqa: E402
from app.sessions.session import SessionRunner  # noqa: E402
from tests.conftest import git_commit, git_in  # noqa: E402

BUGGY_SRC = "def slug(text):\n    return text.lower().replace(' ', '_')\n"
FIXED_SRC = "def slug(text):\n    return text.strip().lower().replace(' ', '-')\n"
OLD_TEST = "from shop.names import slug\n\n\ndef test_lower():\n    assert slug('AB') == 'ab'\n"
NEW_TEST = OLD_TEST + "\n\ndef test_dashes():\n    assert slug(' a b ') == 'a-b'\n"


def history(clones: Path) -> RealBug:
    """A project clone under ``clones`` with a buggy commit and its fix (which adds the
    failing test), and the bug as the manifest would record it."""
    repo = clones / "shop"
    (repo / "shop").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "shop" / "__init__.py").write_text("")
    (repo / "shop" / "names.py").write_text(BUGGY_SRC)
    (repo / "tests" / "test_names.py").write_text(OLD_TEST)
    git_in(repo, "init", "-q", "-b", "main")
    buggy = git_commit(repo, "names")
    (repo / "shop" / "names.py").write_text(FIXED_SRC)
    (repo / "tests" / "test_names.py").write_text(NEW_TEST)
    (repo / "tests" / "data").mkdir()
    (repo / "tests" / "data" / "names.txt").write_text("a-b\n")  # the fix's test data
    fixed = git_commit(repo, "slug: dashes, and no spaces at the ends")
    return RealBug(
        id="shop-1",
        project="shop",
        repository="https://example.com/shop",
        buggy=buggy,
        fixed=fixed,
        test_files=("tests/test_names.py",),
        tests=("tests/test_names.py::test_dashes",),
        files=("shop/names.py",),
    )


def test_a_ci_task_is_the_bug_with_the_fix_s_failing_test_and_an_issue_task_without(
    tmp_path: Path,
) -> None:
    bug = history(tmp_path / "sources")
    ci = realbugs.materialise(bug, tmp_path / "sources", tmp_path / "ci", kind="ci")
    assert (ci / "shop" / "names.py").read_text() == BUGGY_SRC  # the bug, not the fix
    assert (ci / "tests" / "test_names.py").read_text() == NEW_TEST  # the red check's test
    config = yaml.safe_load((ci / ".github" / "patchwarden.yml").read_text())
    assert config["test"].endswith("tests/test_names.py")
    assert not (ci / ".git" / "refs" / "remotes").exists() or not any(
        (ci / ".git" / "refs" / "remotes").iterdir()
    )  # nothing of the project's history but the one commit
    issue = realbugs.materialise(bug, tmp_path / "sources", tmp_path / "issue", kind="issue")
    assert (issue / "tests" / "test_names.py").read_text() == OLD_TEST  # hidden stays hidden
    assert realbugs.hidden_tests(bug, tmp_path / "sources") == {
        "tests/data/names.txt": b"a-b\n",
        "tests/test_names.py": NEW_TEST.encode(),
    }
    assert (ci / "tests" / "data" / "names.txt").exists()  # the red check's data too
    assert not (issue / "tests" / "data").exists()


def test_a_missing_clone_says_how_to_make_it(tmp_path: Path) -> None:
    bug = history(tmp_path / "sources")
    with pytest.raises(realbugs.SourceMissing, match=r"git clone https://example\.com/shop"):
        realbugs.materialise(bug, tmp_path / "elsewhere", tmp_path / "t", kind="ci")


def test_the_split_is_a_third_by_a_fixed_hash() -> None:
    ids = [f"p-{n}" for n in range(300)]
    tests = [i for i in ids if realbugs.split_of(i) == "test"]
    assert 70 <= len(tests) <= 130
    assert [realbugs.split_of(i) for i in ids] == [realbugs.split_of(i) for i in ids]


def test_bugsinpy_test_names_become_pytest_node_ids() -> None:
    run = "python -m unittest -q test.test_utils.TestUtil.test_match_str\n"
    assert build.node_ids(run, ["test/data/x.json", "test/test_utils.py"]) == [
        "test/test_utils.py::TestUtil::test_match_str"
    ]
    run = "pytest tests/test_a.py::TestB::test_c\ntox tests/test_d.py::test_e\n"
    assert build.node_ids(run, ["tests/test_a.py"]) == [
        "tests/test_a.py::TestB::test_c",
        "tests/test_d.py::test_e",
    ]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
async def test_the_task_fails_on_the_bug_and_passes_with_the_fix_in_the_sandbox(
    tmp_path: Path,
) -> None:
    bug = history(tmp_path / "sources")
    runner = SessionRunner(
        fixers=KNOWN,
        cache=WorkspaceCache(tmp_path / "cache"),
        sandbox=BwrapSandbox(state_dir=tmp_path / "sb"),
    )
    seen = await build.verify_one(bug, tmp_path / "sources", runner, tmp_path / "work")
    assert seen["ok"], seen
    assert seen["buggy"]["failing"] == ["tests.test_names::test_dashes"]  # type: ignore[index]
    assert seen["fixed"]["exit"] == 0  # type: ignore[index]


def _report(revision: str, fixed: list[bool]) -> dict[str, object]:
    rows = [
        {
            "task": f"shop-{n}.ci",
            "set": "realbugs:dev",
            "kind": "ci",
            "project": "shop",
            "fixed": ok,
            "ending": "fixed" if ok else "test failed",
            "wall_seconds": 60.0 + n,
            "turns": 3,
            "prompt_tokens": 1000,
            "completion_tokens": 100,
            "turn_seconds": [1.0],
            "difficulty": "shop",
        }
        for n, ok in enumerate(fixed)
    ]
    return {"model": "m", "revision": revision, "strategy": "repair", "rows": rows}


def test_three_runs_give_the_mean_and_spread_and_mixed_runs_are_refused() -> None:
    import agent_eval

    runs = [_report("r1", f) for f in ([True, False], [True, True], [False, False])]
    figures = agent_eval.summarise(runs)["sets"]["realbugs:dev"]
    assert figures["fix_rate"] == {"mean": 0.5, "low": 0.0, "high": 1.0}
    assert figures["by_kind"]["ci"]["mean"] == 0.5
    assert "50% (0%-100%)" in agent_eval.summary_text(agent_eval.summarise(runs))
    with pytest.raises(SystemExit, match="differ in model, revision"):
        agent_eval.summarise([_report("r1", [True]), _report("r2", [True])])
    with pytest.raises(SystemExit, match="same tasks"):
        agent_eval.summarise([_report("r1", [True]), _report("r1", [True, True])])
    # the local model server restarted between runs (a new port): the same model
    local = [_report("r1", [True]), _report("r1", [False])]
    local[0]["model"], local[1]["model"] = (f"m at http://127.0.0.1:{p}/v1" for p in (36597, 50773))
    assert agent_eval.summarise(local)["sets"]["realbugs:dev"]["fix_rate"]["mean"] == 0.5
    local[1]["model"] = "m at http://10.0.0.2:50773/v1"  # another machine's server is not
    with pytest.raises(SystemExit, match="differ in model"):
        agent_eval.summarise(local)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
async def test_the_eval_counts_the_fix_commit_as_fixed_and_giving_up_as_not(
    tmp_path: Path,
) -> None:
    import agent_eval

    from app.fixers.llm.scripted import tool

    sources = tmp_path / "sources"
    bug = history(sources)
    manifest = tmp_path / "bugs.json"
    realbugs.save([replace(bug, verified={"ok": True})], manifest)
    (task,) = agent_eval.load_realbugs(sources, split="all", manifest=manifest)
    assert (task.name, task.kind, task.set) == ("shop-1.ci", "ci", f"realbugs:{bug.split}")
    settings = agent_eval.settings_for(agent_eval.build_parser().parse_args(["--scripted"]))

    def run(name: str, replies: list) -> dict:  # type: ignore[type-arg]
        (tmp_path / name).mkdir()
        return agent_eval.run_task(
            task,
            settings.model_copy(update={"cache_dir": tmp_path / name / "cache"}),
            tmp_path / name,
            replies=replies,
            strategy="agent",
        )

    row = await run("fix", agent_eval.reference_fix(task))
    assert row["fixed"] is True, row["check"]
    assert agent_eval.at_fault(task) == {"shop/names.py:slug"}
    quits = [tool("finish", summary="cannot"), tool("finish", summary="cannot, really")]
    row = await run("quit", quits)
    assert row["fixed"] is False
    assert row["status"] == "no-change"


def test_the_eval_counts_what_each_mechanism_did() -> None:
    import agent_eval

    rows = [
        {
            "fixed": True,
            "published": True,
            "repair": {"fired": {"mechanical-late": 1}, "won_by": "mechanical-late"},
        },
        {
            "fixed": False,
            "published": True,
            "repair": {"fired": {"mechanical-late": 2, "together": 1}, "won_by": "mechanical-late"},
        },
        {"fixed": False, "published": False, "repair": {"fired": {"together": 1}, "won_by": ""}},
        {"fixed": False, "published": False, "repair": None},
    ]
    assert agent_eval.mechanisms(rows) == {
        "mechanical-late": {"acted": 2, "fixed": 1, "wrong": 1},
        "together": {"acted": 2, "fixed": 0, "wrong": 0},  # acted, brought nothing published
    }
