"""``patchwarden run`` as a user runs it: a real process on a real repository, with the
real sandbox and tools; the llm fixer talks to a scripted model over HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.fixers.choose import LINT_ONLY, NO_MODEL, Choice, choose, is_about_lint
from app.fixers.llm.scripted import ScriptedModel, tool
from app.git import git_env
from app.sessions.result import SessionResult
from app.sessions.task import Task
from tests.conftest import CALC, CALC_TESTS, git_commit, make_project


def sandboxed(test: Any) -> Any:
    """A test that runs real sessions: slow, and needs bubblewrap."""
    test = pytest.mark.slow(test)
    no_bwrap = shutil.which("bwrap") is None
    return pytest.mark.skipif(no_bwrap, reason="bubblewrap is not installed")(test)


LINTY = 'import os\n\n\ndef greet():\n    return f"hello"\n'
LINTY_TESTS = "from greet import greet\n\n\ndef test_greet():\n    assert greet() == 'hello'\n"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHWARDEN_")}
    env["PATCHWARDEN_CACHE_DIR"] = str(tmp_path / "cache")
    env.update(extra)
    return env


async def run(tmp_path: Path, *args: str, **env: str) -> tuple[int, str, str]:
    """``patchwarden run ARGS`` in its own process; (exit code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app",
        "run",
        *args,
        env=_env(tmp_path, **env),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=300)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env=git_env(repo), capture_output=True, check=True
    )
    return done.stdout.decode()


ASKABLE = "can be asked for here (ask for llm, lint, revert)"


@pytest.mark.parametrize(
    ("kind", "llm", "on_alerts", "about_lint", "expected"),
    [
        ("fix", True, False, False, Choice(("llm",))),
        # A fixer asked for by its word (`@patchwarden lint`) is the one used.
        ("lint", True, True, False, Choice(("lint",))),
        ("revert", False, False, False, Choice(("revert",))),
        # ... when it can be asked for by name; another is answered, nothing runs.
        ("typo", True, False, False, Choice((), f"no fixer called `typo` {ASKABLE}")),
        ("dependency", True, False, False, Choice((), f"no fixer called `dependency` {ASKABLE}")),
        ("fix", True, False, True, Choice(("llm",))),
        # No model: a bug gets no fixer at all (an unrelated lint PR is not a fix) ...
        ("fix", False, False, False, Choice((), NO_MODEL)),
        ("fix", False, True, False, Choice((), NO_MODEL)),
        # ... and an issue about lint gets the lint fixer.
        ("fix", False, False, True, Choice(("lint",), LINT_ONLY)),
        ("alert", True, False, False, Choice(("revert",))),
        ("alert", True, True, False, Choice(("revert", "llm"))),
        ("alert", False, False, False, Choice(("revert",))),
    ],
)
def test_auto_chooses_by_job_kind_model_and_repo_config(
    kind: str, llm: bool, on_alerts: bool, about_lint: bool, expected: Choice
) -> None:
    asked = None if kind in ("fix", "alert") else kind
    got = choose(
        "fix" if asked else kind,  # type: ignore[arg-type]
        llm_configured=llm,
        llm_on_alerts=on_alerts,
        about_lint=about_lint,
        asked=asked,
    )
    assert got == expected


@pytest.mark.parametrize(
    ("title", "instructions", "lint"),
    [
        ("Fix the lint", "", True),
        ("ruff complains about app/x.py", "", True),
        ("Remove unused imports", "", True),
        ("F401 in utils", "", True),
        ("is_leap_year ignores the century rule", "", False),
        ("crash when parsing dates", "please fix", False),
        ("Wrong total", "the sum is off by one; splint the cast", False),
        ("date formatting is wrong in French", "", False),
        ("the unused config option is ignored", "", False),
        ("util.py imports os and never uses it", "", True),
    ],
)
def test_which_tasks_are_about_lint(title: str, instructions: str, lint: bool) -> None:
    assert is_about_lint(Task(title, instructions=instructions)) is lint


def test_alerts_allowed_the_llm_without_a_model_say_so() -> None:
    choice = choose("alert", llm_configured=False, llm_on_alerts=True)
    assert choice.fixers == ("revert",)
    assert choice.note is not None
    assert "no model is configured" in choice.note


@sandboxed
async def test_run_leaves_a_verified_branch_and_a_pr_body(tmp_path: Path) -> None:
    repo = make_project(tmp_path / "greet", {"greet.py": LINTY, "test_greet.py": LINTY_TESTS})
    head = git(repo, "rev-parse", "HEAD").strip()
    code, out, err = await run(tmp_path, "--repo", str(repo), "--task", "Fix the lint")

    assert code == 0, err
    # Without a model, a lint task gets the lint fixer, and says why.
    assert out.startswith(LINT_ONLY)
    assert "F401 (1), F541 (1)" in out
    lines = err.splitlines()
    assert re.match(r"\[ +\d+\.\ds\] workspace: local/greet at [0-9a-f]{40}$", lines[0])
    assert any("s] fix: the lint fixer" in line for line in lines)
    assert lines[-1].split("] ", 1)[1].startswith("verified patch ")
    # The user's repository: a new branch, HEAD and the work tree untouched.
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert git(repo, "status", "--porcelain") == ""
    assert (repo / "greet.py").read_text() == LINTY
    patched = git(repo, "show", "patchwarden/fix-the-lint:greet.py")
    assert "import os" not in patched
    assert 'return "hello"' in patched
    body = (repo / ".git" / "patchwarden" / "patchwarden-fix-the-lint.md").read_text()
    assert re.match(r"\*\*Patchwarden risk \d+/100 \(low\): needs a maintainer's approval", body)
    assert "| mechanical autofixes: ruff, semgrep, eslint | lint | +3 |" in body
    assert "**Verified:** tests 1 passed → 1 passed (0 fixed, 0 broken)" in body
    assert re.search(r"\] risk \d+/100 \(low\): review$", err, re.MULTILINE)
    assert "git push origin --delete patchwarden/fix-the-lint" in body


@sandboxed
async def test_run_again_never_moves_a_branch_a_person_committed_to(tmp_path: Path) -> None:
    """The branch is Patchwarden's to move only while its head is what Patchwarden left
    there: a second run moves it; after a person's commit on it, the next run leaves it
    alone and says where the patch went instead."""
    repo = make_project(tmp_path / "greet", {"greet.py": LINTY, "test_greet.py": LINTY_TESTS})
    args = ("--repo", str(repo), "--task", "Fix the lint", "--fixer", "lint")
    code, _, err = await run(tmp_path, *args)
    assert code == 0, err
    code, _, err = await run(tmp_path, *args)  # again: its own branch, moved
    assert code == 0, err
    assert "fix-the-lint-2" not in err
    assert "branch patchwarden/fix-the-lint in" in err

    # A person builds on the branch.
    git(repo, "checkout", "-q", "patchwarden/fix-the-lint")
    (repo / "NOTES.md").write_text("reviewed\n")
    git(repo, "add", "NOTES.md")
    git(repo, "-c", "user.name=Ann", "-c", "user.email=ann@example.com", "commit", "-qm", "notes")
    theirs = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-")
    code, _, err = await run(tmp_path, *args)
    assert code == 0, err
    assert git(repo, "rev-parse", "patchwarden/fix-the-lint").strip() == theirs  # kept
    assert (
        "patchwarden/fix-the-lint has commits Patchwarden did not make (or is checked out): "
        "left as it is; the patch is on patchwarden/fix-the-lint-2" in err
    )
    assert 'return "hello"' in git(repo, "show", "patchwarden/fix-the-lint-2:greet.py")
    body = (repo / ".git" / "patchwarden" / "patchwarden-fix-the-lint-2.md").read_text()
    assert "git push origin --delete patchwarden/fix-the-lint-2" in body

    # A branch of that name Patchwarden never left (made by hand) is not taken either.
    git(repo, "branch", "patchwarden/lint", "HEAD")
    code, _, err = await run(tmp_path, "--repo", str(repo), "--task", "lint", "--fixer", "lint")
    assert code == 0, err
    assert "the patch is on patchwarden/lint-2" in err
    assert (
        git(repo, "rev-parse", "patchwarden/lint").strip() == git(repo, "rev-parse", "HEAD").strip()
    )

    # Nor a branch checked out in another work tree (its files would no longer match).
    git(repo, "worktree", "add", "-q", str(tmp_path / "other"), "patchwarden/lint-2")
    code, _, err = await run(tmp_path, "--repo", str(repo), "--task", "lint", "--fixer", "lint")
    assert code == 0, err
    assert "the patch is on patchwarden/lint-3" in err
    assert git(tmp_path / "other", "status", "--porcelain") == ""


@sandboxed
async def test_a_test_already_failing_on_the_base_does_not_make_a_fix_unverified(
    tmp_path: Path,
) -> None:
    """toolz: one test failing on the base and the patch alike made a lint fix that broke
    nothing exit 1 with "the patch does not pass the tests". It is reported, not
    blamed: the fix is verified and says which test was already failing."""
    old = "\n\ndef test_old_bug():\n    assert greet() == 'hi'\n"
    repo = make_project(tmp_path / "greet", {"greet.py": LINTY, "test_greet.py": LINTY_TESTS + old})
    code, _, err = await run(tmp_path, "--repo", str(repo), "--task", "lint", "--fixer", "lint")
    assert code == 0, err
    verdict = err.splitlines()[-1].split("] ", 1)[1]
    assert verdict.startswith("verified patch "), verdict
    assert verdict.endswith(
        ": the tests pass but for 1 already failing on the base alike (test_greet::test_old_bug)"
    ), verdict
    body = (repo / ".git" / "patchwarden" / "patchwarden-lint.md").read_text()
    assert "1 passed, 1 failed → 1 passed, 1 failed (0 fixed, 0 broken, 1 already failing" in body
    assert (
        "Already failing on the base (and still, not because of this change): "
        "`test_greet::test_old_bug`" in body
    )
    assert "| 1 test fails on the base and on the patch alike, not because of it:" in body


@sandboxed
async def test_run_in_a_linked_worktree_keeps_its_work_tree_clean(tmp_path: Path) -> None:
    """In a worktree (or a submodule) .git is a file: the PR body goes to git's own
    directory for it, not into the work tree."""
    repo = make_project(tmp_path / "greet", {"greet.py": LINTY, "test_greet.py": LINTY_TESTS})
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(worktree))
    code, _, err = await run(tmp_path, "--repo", str(worktree), "--task", "lint", "--fixer", "lint")

    assert code == 0, err
    assert git(worktree, "status", "--porcelain", "--untracked-files=all") == ""
    body = repo / ".git" / "worktrees" / "wt" / "patchwarden" / "patchwarden-lint.md"
    assert body.read_text().startswith("**Patchwarden risk ")
    assert 'return "hello"' in git(repo, "show", "patchwarden/lint:greet.py")


@sandboxed
async def test_run_json_prints_the_session_result(tmp_path: Path) -> None:
    repo = make_project(tmp_path / "greet", {"greet.py": LINTY, "test_greet.py": LINTY_TESTS})
    body = tmp_path / "body.md"
    code, out, _ = await run(
        tmp_path,
        "--repo",
        str(repo),
        "--task",
        "lint",
        "--fixer",
        "lint",
        "--json",
        "--body",
        str(body),
    )
    assert code == 0
    result = SessionResult.load(json.loads(out))
    assert result.status == "patched"
    assert result.fix is not None
    assert result.fix.fixer == "lint"
    assert body.read_text().startswith("**Patchwarden risk ")


LONG_TASK = "add() in calc.py subtracts instead of adding, so tests/test_calc.py::test_add fails"


@sandboxed
async def test_run_with_a_model_fixes_the_bug(tmp_path: Path) -> None:
    repo = make_project(tmp_path / "calc", {"calc.py": CALC, "test_calc.py": CALC_TESTS})
    script = [
        tool("read_file", path="calc.py"),
        tool("edit", path="calc.py", old="return a - b", new="return a + b"),
        tool("run_tests"),
        tool("finish", summary="add() adds"),  # no new test: asked to name one
        tool("finish", summary="add() adds now"),
    ]
    async with ScriptedModel(script, api_key="sk-local-test-key-1234567890") as model:
        code, out, err = await run(
            tmp_path,
            "--repo",
            str(repo),
            "--task",
            LONG_TASK,
            "--strategy",
            "agent",
            PATCHWARDEN_LLM_MODEL="scripted",
            PATCHWARDEN_LLM_BASE_URL=model.base_url,
            PATCHWARDEN_LLM_API_KEY="sk-local-test-key-1234567890",
        )
    assert code == 0, err
    assert out.strip() == "add() adds now"
    assert any("fix: model turn 4 of at most 40" in line for line in err.splitlines())
    (branch,) = git(repo, "branch", "--list", "patchwarden/*", "--format=%(refname:short)").split()
    assert "return a + b" in git(repo, "show", f"{branch}:calc.py")
    # The whole title reaches the model; the commit's subject is cut at a word, not
    # mid-path, and its body keeps the whole title.
    assert LONG_TASK in json.dumps(model.requests[0].body["messages"][1]["content"])
    subject, _, body = git(repo, "log", "-1", "--format=%B", branch).partition("\n\n")
    assert subject.endswith("…")
    assert len(subject) <= 72
    assert LONG_TASK in body
    assert model.violations == []
    assert "sk-local-test-key" not in err


@sandboxed
async def test_run_revert_finds_the_commit_that_broke_head(tmp_path: Path) -> None:
    fixed = CALC.replace("a - b", "a + b")
    repo = make_project(tmp_path / "hist", {"calc.py": fixed, "test_calc.py": CALC_TESTS})
    (repo / "calc.py").write_text(fixed.replace("a + b", "a * b"))
    bad = git_commit(repo, "make add faster")
    (repo / "README").write_text("later\n")
    git_commit(repo, "docs")
    code, out, err = await run(
        tmp_path, "--repo", str(repo), "--task", "tests fail", "--alert", "--fixer", "auto"
    )
    assert code == 0, err
    assert out.startswith(f"Reverts {bad[:12]} (make add faster)")


@sandboxed
async def test_a_fixer_that_gives_up_exits_1(tmp_path: Path) -> None:
    repo = make_project(tmp_path / "js", {"index.js": "var x = 1\n"})
    code, _, err = await run(tmp_path, "--repo", str(repo), "--task", "lint", "--fixer", "lint")
    assert code == 1
    assert "no patch: no eslint configuration here" in err.splitlines()[-1]


@pytest.mark.slow  # six `patchwarden run` processes
async def test_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    repo = make_project(tmp_path / "calc", {"calc.py": CALC})
    plain = tmp_path / "plain"
    plain.mkdir()
    cases = [
        (["--repo", str(tmp_path / "missing"), "--task", "x"], "is not a directory"),
        (["--repo", str(plain), "--task", "x"], "is not a git repository"),
        (["--repo", str(repo), "--task", "  "], "--task is empty"),
        (["--repo", str(repo), "--task", "x", "--fixer", "llm"], "the llm fixer needs a model"),
        (
            ["--repo", str(repo), "--task", "x", "--fixer", "magic"],
            "--fixer magic: unknown fixer 'magic': choose one of auto, llm, lint, revert",
        ),
    ]
    for args, message in cases:
        code, out, err = await run(tmp_path, *args)
        assert code == 2, (args, err)
        assert message in err
        assert out == ""
    (repo / "calc.py").write_text("changed\n")
    code, _, err = await run(tmp_path, "--repo", str(repo), "--task", "x")
    assert code == 2
    assert err.strip() == (
        f"patchwarden run: {repo} has uncommitted changes (1 file): commit or stash them "
        "first; the session starts from HEAD and would not see them"
    )


@sandboxed
async def test_a_configuration_validate_refuses_is_a_usage_error(tmp_path: Path) -> None:
    """`test: [...]` failed `run` with exit 1, the code for "the fixer gave up"."""
    config = 'test: ["python", "-m", "pytest", "-q"]\n'
    repo = make_project(
        tmp_path / "greet",
        {"greet.py": LINTY, "test_greet.py": LINTY_TESTS, ".github/patchwarden.yml": config},
    )
    code, out, err = await run(tmp_path, "--repo", str(repo), "--task", "lint", "--fixer", "lint")
    assert code == 2, err
    assert out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("patchwarden run: .github/patchwarden.yml: `test` is one command line")
    assert last.endswith("(check it with: patchwarden validate)")
    assert err.count("only `setup` takes a list") == 1  # said once, not also as a log line


@sandboxed
async def test_setup_and_test_can_be_given_for_one_run_and_a_failure_shows_its_last_lines(
    tmp_path: Path,
) -> None:
    repo = make_project(tmp_path / "greet", {"greet.py": LINTY, "test_greet.py": LINTY_TESTS})
    failing = "python -c \"import sys; print('resolving deps'); sys.exit('boom: no index')\""
    code, out, err = await run(
        tmp_path, "--repo", str(repo), "--task", "Fix the lint", "--setup", failing
    )
    assert code == 1
    assert "no patch: setup failed" in err
    assert "boom: no index" in err  # the step's own last lines, without --json
    assert "(setup, exit 1) ended with:" in err

    # `pip` in a given setup is the session's environment, which has no pytest:
    code, out, err = await run(
        tmp_path,
        *("--repo", str(repo), "--task", "Fix the lint", "--json"),
        *("--setup", "pip --version", "--test", "python -m pytest -q test_greet.py"),
    )
    assert code == 1
    result = SessionResult.load(json.loads(out))
    assert result.tests is not None
    assert result.tests.command == ["python", "-m", "pytest", "-q", "test_greet.py"]
    setup = [s for s in result.steps if s.phase == "setup"]
    assert setup[-1].argv == ["pip", "--version"]
    assert "/env/" in setup[-1].output
    assert result.error is not None
    assert result.error.startswith("the test environment is broken: No module named pytest")
