"""``patchwarden score`` on real git repositories, the Action's script, and the policy a
session reads from the base branch."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from app.git import Remote
from app.policy.policy_model import Policy
from app.policy.score import score_session
from app.sessions.fix_context import FixContext
from app.sessions.result import FixOutcome, SessionResult
from app.sessions.session import SessionRunner
from app.sessions.task import SessionSpec, Task
from tests.conftest import CALC, CALC_TESTS, git_commit, make_project

ROOT = Path(__file__).resolve().parents[2]
PW = [sys.executable, "-m", "app"]
TOKEN = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
LOOSE = "autonomy: automerge\nunprotect: [.github/patchwarden.yml]\n"


pytestmark = pytest.mark.slow  # `patchwarden score` processes and sessions


def pw(
    *args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHWARDEN_")} | (env or {})
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [*PW, "score", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_project(
        tmp_path / "widgets",
        {
            "src/calc.py": CALC,
            "tests/test_calc.py": CALC_TESTS,
            ".github/patchwarden.yml": "thresholds:\n  automerge: 5\n",
        },
    )


def change(repo: Path, files: dict[str, str], message: str = "change") -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    return git_commit(repo, message)


def test_a_git_range_is_scored_with_the_base_policy_even_when_the_change_edits_it(
    repo: Path,
) -> None:
    base = _head(repo)
    change(
        repo,
        {
            "src/calc.py": CALC.replace("a - b", "a + b"),
            ".github/patchwarden.yml": "thresholds:\n  automerge: 100\n  review: 100\n",
        },
    )
    done = pw("--repo", str(repo), "--base", base, "--format", "json", cwd=repo)
    assert done.returncode == 0, done.stderr
    s = json.loads(done.stdout)
    # automerge: 5 from the base's file, not 100 from the change's.
    assert s["score"] > 5
    assert s["by_score"] == "review"
    assert any(
        r["rule"] == "protected_path" and ".github/patchwarden.yml" in r["reason"]
        for r in s["rules"]
    )


def test_a_credential_fails_the_step_and_says_where(repo: Path) -> None:
    base = _head(repo)
    change(repo, {"src/settings.py": f'TOKEN = "{TOKEN}"\n'})
    done = pw("--repo", str(repo), "--base", base, cwd=repo)
    assert done.returncode == 1
    assert (
        "**reject**: adds what looks like a credential (github-token) at `src/settings.py:1`"
        in done.stdout
    )
    assert TOKEN not in done.stdout


def test_fail_on_is_configurable(repo: Path) -> None:
    base = _head(repo)
    change(repo, {"src/calc.py": CALC + "\n".join(f"X{i} = {i}" for i in range(90)) + "\n"})
    assert pw("--repo", str(repo), "--base", base, cwd=repo).returncode == 0
    done = pw("--repo", str(repo), "--base", base, "--fail-on", "review", cwd=repo)
    assert done.returncode == 1
    # A person's change: words for it (Patchwarden merges none), not "may merge itself".
    assert "Patchwarden risk 14/100 (medium): worth a maintainer's review." in done.stdout
    assert "merge itself" not in done.stdout


def test_a_file_that_is_no_diff_is_a_usage_error(repo: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("these are my notes, not a patch\n")
    done = pw("--diff", str(notes), cwd=repo)
    assert done.returncode == 2
    assert done.stderr.startswith(f"patchwarden score: {notes} is not a diff")


def test_the_risk_word_says_when_a_rule_and_not_the_number_set_it(repo: Path) -> None:
    """A credential: 0-ish points, rejected by a rule: the word follows the rule, and says so."""
    base = _head(repo)
    change(repo, {"src/settings.py": f'TOKEN = "{TOKEN}"\n'})
    done = pw("--repo", str(repo), "--base", base, cwd=repo)
    first = done.stdout.splitlines()[0]
    assert re.match(r"\*\*Patchwarden risk \d+/100 \(high, by a rule below\): over what", first)


def test_a_diff_from_stdin_and_a_policy_file(repo: Path, tmp_path: Path) -> None:
    diff = (
        "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
        "@@ -1 +1 @@\n-teh\n+the\n"
    )
    done = pw("--diff", "-", "--format", "json", cwd=repo, stdin=diff)
    assert json.loads(done.stdout)["decision"] == "automerge"
    strict = tmp_path / "strict.yml"
    strict.write_text("thresholds:\n  automerge: 0\n")
    done = pw("--diff", "-", "--policy", str(strict), "--format", "json", cwd=repo, stdin=diff)
    assert json.loads(done.stdout)["decision"] == "review"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--repo", "{repo}"], "--repo needs --base"),
        (["--repo", "{repo}", "--base", "nope"], "git does not know 'nope'"),
        (["--diff", "{repo}/missing.diff"], "--diff {repo}/missing.diff: No such file"),
        (
            ["--repo", "{repo}", "--base", "HEAD", "--policy", "{repo}/bad.yml"],
            "the policy is invalid: {repo}/bad.yml:2: unknown key `autonmy`",
        ),
        (["--repo", "{repo}", "--base", "HEAD"], "the change is empty"),
        (
            ["--diff", "{repo}/one.diff", "--summary", "{repo}/no/such/dir/summary.md"],
            "--summary {repo}/no/such/dir/summary.md: No such file or directory",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(repo: Path, args: list[str], says: str) -> None:
    (repo / "bad.yml").write_text("autonomy: review\nautonmy: automerge\n")
    (repo / "one.diff").write_text(
        "diff --git a/x.md b/x.md\n--- a/x.md\n+++ b/x.md\n@@ -1 +1 @@\n-a\n+b\n"
    )
    done = pw(*[a.format(repo=repo) for a in args], cwd=repo)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert says.format(repo=repo) in done.stderr


def test_the_default_policy_comes_from_patchwarden_default_policy(
    repo: Path, tmp_path: Path
) -> None:
    diff = (
        "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
        "@@ -1 +1 @@\n-teh\n+the\n"
    )
    strict = tmp_path / "default.yml"
    shipped = (ROOT / "policies" / "default.yml").read_text()
    strict.write_text(shipped.replace("automerge: 20 ", "automerge: 0  "))
    env = {"PATCHWARDEN_DEFAULT_POLICY": str(strict)}
    done = pw("--diff", "-", "--format", "json", cwd=repo, stdin=diff, env=env)
    assert json.loads(done.stdout)["thresholds"]["automerge"] == 0
    assert json.loads(done.stdout)["decision"] == "review"

    env = {"PATCHWARDEN_DEFAULT_POLICY": str(tmp_path / "missing.yml")}
    done = pw("--diff", "-", cwd=repo, stdin=diff, env=env)
    assert done.returncode == 2
    assert f"the default policy {tmp_path / 'missing.yml'} cannot be read" in done.stderr


def test_an_invalid_policy_on_the_base_is_refused_not_ignored(repo: Path) -> None:
    change(repo, {".github/patchwarden.yml": "caps:\n  files: lots\n"})
    base = _head(repo)
    change(repo, {"src/calc.py": CALC.replace("a - b", "a + b")})
    done = pw("--repo", str(repo), "--base", base, cwd=repo)
    assert done.returncode == 2
    assert f".github/patchwarden.yml (at {base}):2: `caps.files`" in done.stderr


def test_the_action_writes_the_job_summary_and_outputs(repo: Path, tmp_path: Path) -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "score")
    base = _head(repo)
    change(repo, {".github/workflows/ci.yml": "on: push\n"})
    head = _head(repo)
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "patchwarden").write_text(
        f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m app "$@"\n'
    )
    (bin_dir / "patchwarden").chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(outputs),
        "RUNNER_TEMP": str(tmp_path),
        "PW_FAIL_ON": "review",
        "PW_POLICY": "",
        "PW_BASE": base,
        "PW_HEAD": head,
    }
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # A person's workflow change needs review, and fail-on: review fails the step.
    assert done.returncode == 1, done.stderr
    assert "changes `.github/workflows/ci.yml`, protected by" in summary.read_text()
    values = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert values["decision"] == "review"
    assert values["risk"] == "medium"
    assert int(values["score"]) > 0


def _head(repo: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


# -- the session reads the policy from the base ------------------------------------------


async def session(
    runner: SessionRunner, tmp_path: Path, policy_yaml: str, writes: dict[str, str]
) -> tuple[SessionResult, list[FixContext]]:
    """A session on calc with ``policy_yaml`` on its base, whose fixer writes ``writes``."""
    project = make_project(
        tmp_path / "calc",
        {"calc.py": CALC, "test_calc.py": CALC_TESTS, ".github/patchwarden.yml": policy_yaml},
    )
    called: list[FixContext] = []

    async def fixer(ctx: FixContext) -> FixOutcome:
        called.append(ctx)
        for name, text in writes.items():
            (ctx.tree / name).write_text(text)
        return FixOutcome(fixer="llm", summary=f"wrote {', '.join(writes)}")

    spec = SessionSpec(remote=Remote("octo/calc", str(project)), task=Task("Fix add()"))
    return await runner.run(spec, fixer), called


@pytest.mark.slow  # a real session: sandbox processes
async def test_a_session_judges_a_patch_by_the_base_policy_even_if_it_edits_it(
    runner: SessionRunner, tmp_path: Path
) -> None:
    result, _ = await session(
        runner,
        tmp_path,
        "autonomy: propose\n",
        {"calc.py": CALC.replace("a - b", "a + b"), ".github/patchwarden.yml": LOOSE},
    )
    assert result.status == "patched", result.error
    assert result.policy is not None
    policy = Policy.model_validate(result.policy)
    assert policy.autonomy == "propose"
    assert ".github/patchwarden.yml" in policy.protected_paths
    s = score_session(result, policy)
    assert s.decision == "reject"
    assert [r.reason for r in s.rules if r.rule == "protected_path"] == [
        "changes `.github/patchwarden.yml`, protected by `.github/patchwarden.yml` in the policy"
    ]


@pytest.mark.slow  # a real session: sandbox processes
async def test_an_invalid_base_policy_stops_the_session_before_the_fixer(
    runner: SessionRunner, tmp_path: Path
) -> None:
    result, called = await session(runner, tmp_path, "\nautonomy: yes\n", {})
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.startswith(".github/patchwarden.yml:2: `autonomy`: Input should be")
    assert called == []


@pytest.mark.slow  # a real session: sandbox processes
async def test_a_literal_credential_is_caught_before_the_diff_is_masked(
    runner: SessionRunner, tmp_path: Path
) -> None:
    # Masked, `"Authorization": "[REDACTED:authorization]"` could be a variable or a
    # literal; only the session's scan of the raw lines can tell, so it must make it.
    bearer = "Bearer abcDEF123ghiJKL456mnoPQR"
    fixed = CALC.replace("a - b", "a + b") + f'\nHEADERS = {{"Authorization": "{bearer}"}}\n'
    result, _ = await session(runner, tmp_path, "autonomy: automerge\n", {"calc.py": fixed})
    assert result.status == "patched", result.error
    assert bearer not in result.diff.unified
    assert [(s.path, s.kind) for s in result.diff.secrets] == [("calc.py", "authorization")]
    assert result.policy is not None
    s = score_session(result, Policy.model_validate(result.policy))
    assert s.decision == "reject"
    # HEADERS is new module-level code, outside the task's scope: held as well.
    assert [r.rule for r in s.rules] == ["secret", "outside_scope"]
