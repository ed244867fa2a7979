"""The wheel as users get it: built from this checkout, installed into a new virtualenv
outside it with only what the GitHub Action installs (.github/action-requirements.txt),
then `patchwarden score` and the Action's own script run from it on a real repository.
A wheel that leaves out policies/ (the default policy, the semgrep packs) fails here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import git_commit

# One worker builds the wheel once for all three (make test spreads tests over workers).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]

ROOT = Path(__file__).resolve().parents[2]


def _run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False, **kw)  # type: ignore[call-overload, no-any-return]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv holding the wheel and the Action's requirements, nothing else."""
    where = tmp_path_factory.mktemp("wheel")
    # What a release builds from: the sources, without a build/ folder left by an
    # earlier build (which would hide a file the package data no longer lists).
    source = where / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, source / name)
    junk = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("app", "policies"):
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=junk)
    built = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(where / "dist"),
            str(source),
        ]
    )
    assert built.returncode == 0, built.stderr
    [wheel] = (where / "dist").glob("patchwarden-*.whl")
    venv = where / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    for step in (
        [*pip, "--no-deps", str(wheel)],
        [*pip, "-r", str(ROOT / ".github/action-requirements.txt")],
    ):
        done = _run(step)
        assert done.returncode == 0, done.stderr
    return venv


@pytest.fixture
def change(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository whose head commit edits a workflow and adds code: a scored change."""
    repo = tmp_path / "project"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "app.py").write_text("def f():\n    return 1\n")
    base = git_commit(repo, "base")
    (repo / "app.py").write_text("def f():\n    return 2\n")
    (repo / ".github/workflows").mkdir(parents=True)
    (repo / ".github/workflows/ci.yml").write_text("on: push\njobs: {}\n")
    head = git_commit(repo, "head")
    return repo, base, head


def _env(venv: Path, **extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "TMPDIR")}
    return keep | {"PATH": f"{venv / 'bin'}:/usr/bin:/bin"} | extra


def test_the_wheel_carries_the_policies_and_not_the_server(installed: Path) -> None:
    python = str(installed / "bin" / "python")
    where = _run(
        [
            python,
            "-c",
            "from app.config import SHIPPED_POLICIES as p; print(p);"
            " print(sorted(x.name for x in (p / 'semgrep').iterdir()))",
        ],
        cwd="/",
    )
    assert where.returncode == 0, where.stderr
    path, packs = where.stdout.splitlines()
    assert path.startswith(str(installed))
    assert not path.startswith(str(ROOT))
    assert "python-security.yml" in packs
    assert "secrets.yml" in packs
    assert _run([python, "-c", "import aiohttp"]).returncode != 0  # the Action skips it
    assert _run([python, "-c", "import openai"]).returncode != 0


def test_patchwarden_score_runs_from_the_wheel(
    installed: Path, change: tuple[Path, str, str], tmp_path: Path
) -> None:
    repo, base, head = change
    out = _run(
        [
            str(installed / "bin" / "patchwarden"),
            "score",
            "--repo",
            str(repo),
            "--base",
            base,
            "--head",
            head,
            "--format",
            "json",
        ],
        cwd=tmp_path,
        env=_env(installed),
    )
    assert out.returncode in (0, 1), out.stderr
    score = json.loads(out.stdout)
    assert {"score", "decision", "risk"} <= set(score)
    # the default policy, read from the wheel: CI files weigh 3, workflows are protected
    assert "category:ci" in [c["factor"] for c in score["contributions"]]
    assert [r["rule"] for r in score["rules"]] == ["protected_path"]


def test_the_action_s_script_runs_from_the_wheel(
    installed: Path, change: tuple[Path, str, str], tmp_path: Path
) -> None:
    repo, base, head = change
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    [step] = [s for s in action["runs"]["steps"] if s.get("id") == "score"]
    summary, output = tmp_path / "summary.md", tmp_path / "output.txt"
    summary.touch()
    output.touch()
    env = _env(
        installed,
        PW_FAIL_ON="never",
        PW_POLICY="",
        PW_BASE=base,
        PW_HEAD=head,
        GITHUB_STEP_SUMMARY=str(summary),
        GITHUB_OUTPUT=str(output),
        RUNNER_TEMP=str(tmp_path),
    )
    # as GitHub runs a composite step with `shell: bash`
    ran = _run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=repo, env=env
    )
    assert ran.returncode == 0, ran.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert set(outputs) == {"score", "decision", "risk"}
    assert outputs["decision"] in {"reject", "draft", "review", "automerge"}
    assert outputs["score"] in summary.read_text()
