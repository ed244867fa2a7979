"""The lint fixer on generated repositories: real ruff and semgrep, in the real sandbox."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from app.fixers.lint import AUTOFIX_RULES, LintFixer
from app.git import Remote
from app.sessions.session import SessionRunner
from app.sessions.task import SessionSpec, Task
from tests.conftest import git_commit, make_project

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

FIXTURES = Path(__file__).parents[1] / "fixtures" / "semgrep" / "autofix"
RUFF = '[lint]\nselect = ["E", "F"]\n'
SHAPES = (
    "import os\nimport sys\n\n\n"
    "def area(w, h):\n"
    '    label = f"area"\n'
    "    if w == None:\n"
    "        return 0\n"
    "    return w*h  # ruff format would add spaces here\n"
)
SHAPES_TESTS = (
    "import unittest\n\nfrom shapes import area\n\n\n"
    "class AreaTest(unittest.TestCase):\n"
    "    def test_area(self):\n"
    "        self.assertEquals(area(2, 3), 6)\n\n"
    "    def test_none(self):\n"
    "        self.assertEqual(area(None, 3), 0)\n"
)


def lint_project(tmp_path: Path, **extra: str) -> Path:
    files = {"ruff.toml": RUFF, "shapes.py": SHAPES, "test_shapes.py": SHAPES_TESTS, **extra}
    return make_project(tmp_path / "shapes", files)


def lint_spec(project: Path) -> SessionSpec:
    return SessionSpec(remote=Remote("octo/shapes", str(project)), task=Task("Fix the lint"))


async def test_lint_fixes_what_ruff_and_semgrep_can_and_the_tests_still_pass(
    runner: SessionRunner, tmp_path: Path
) -> None:
    result = await runner.run(lint_spec(lint_project(tmp_path)), LintFixer())

    assert result.status == "patched", result.error
    assert result.fix is not None
    assert result.fix.rules_fixed == {
        "F401": 2,
        "F541": 1,
        "patchwarden.autofix.unittest-assert-equals": 1,
    }
    diff = result.diff.unified
    assert "-import os\n-import sys\n" in diff
    assert '+    label = "area"' in diff
    assert "+        self.assertEqual(area(2, 3), 6)" in diff
    # E711 has only an unsafe fix, and the file was never ruff-formatted: both stay.
    changed = [ln for ln in diff.splitlines() if ln.startswith(("+", "-"))]
    assert not [ln for ln in changed if "== None" in ln or "w*h" in ln]
    summary = result.fix.summary
    assert "ruff fixed 3 problems: F401 (2), F541 (1)." in summary
    assert "semgrep fixed 1: patchwarden.autofix.unittest-assert-equals (1)." in summary
    assert "Left for a human (no safe automatic fix): E711 (1), F841 (1)." in summary
    assert "ruff format" not in summary
    assert result.tests is not None
    assert result.tests.head is not None
    assert result.tests.head.ok
    assert result.tests.broken == []
    assert {f.path for f in result.diff.files} == {"shapes.py", "test_shapes.py"}
    # The linters' JSON is parsed, not stored in the result.
    json_steps = [s for s in result.steps if s.name in ("ruff", "semgrep-autofix")]
    assert json_steps
    assert not [s.name for s in json_steps if '"code"' in s.output or '"results"' in s.output]


async def test_the_repository_opts_in_to_unsafe_fixes_and_formatting(
    runner: SessionRunner, tmp_path: Path
) -> None:
    config = "lint:\n  unsafe_fixes: true\n  format: true\n  semgrep: false\n"
    project = lint_project(tmp_path, **{".github/patchwarden.yml": config})
    result = await runner.run(lint_spec(project), LintFixer())

    assert result.status == "patched", result.error
    assert result.fix is not None
    assert result.fix.rules_fixed["E711"] == 1
    assert "patchwarden.autofix.unittest-assert-equals" not in result.fix.rules_fixed
    assert "+    if w is None:" in result.diff.unified
    assert "+    return w * h" in result.diff.unified
    assert "Formatted with ruff format" in result.fix.summary


async def test_a_clean_repository_is_left_alone(runner: SessionRunner, tmp_path: Path) -> None:
    clean = "def area(w, h):\n    return w * h\n"
    project = make_project(tmp_path / "clean", {"ruff.toml": RUFF, "shapes.py": clean})
    result = await runner.run(lint_spec(project), LintFixer())
    assert result.status == "no-change", result.error
    assert result.fix is not None
    assert result.fix.summary.startswith("Nothing to fix")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("lint:\n  unsafe: true\n", "`lint.unsafe`: unknown key"),
        ("lint:\n  format: sometimes\n", "`lint.format"),
        ("revert:\n  reruns: 0\n", "`revert.reruns`: Input should be greater than or equal to 1"),
    ],
)
async def test_a_bad_lint_config_stops_the_job_with_the_key_named(
    runner: SessionRunner, tmp_path: Path, config: str, message: str
) -> None:
    project = lint_project(tmp_path, **{".github/patchwarden.yml": config})
    result = await runner.run(lint_spec(project), LintFixer())
    assert result.status == "failed"
    assert result.error is not None
    # The file and the line of the key, as the policy's own errors say it.
    assert result.error.startswith(".github/patchwarden.yml:2: ")
    assert message in result.error


async def test_neither_python_nor_javascript_means_the_lint_fixer_says_it_cannot_help(
    runner: SessionRunner, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "go", {"main.go": "package main\n"})
    result = await runner.run(lint_spec(project), LintFixer())
    assert result.status == "failed"
    assert result.error is not None
    assert "no Python or JavaScript files here" in result.error


async def test_the_autofix_pack_turns_its_targets_into_the_fixed_file(
    runner: SessionRunner, tmp_path: Path
) -> None:
    """Every ``# ruleid:`` line of the pack's target is fixed and nothing else changes."""
    target = (FIXTURES / "python.py").read_text()
    expected = (FIXTURES / "python.fixed.py").read_text()
    project = make_project(tmp_path / "autofix", {"tests/test_target.py": target})
    # Only the semgrep pack: ruff is given nothing to select.
    (project / "ruff.toml").write_text("[lint]\nselect = []\n")
    git_commit(project, "no ruff rules")
    result = await runner.run(lint_spec(project), LintFixer())

    assert result.status == "patched", result.error
    marked = sum(1 for line in target.splitlines() if "# ruleid:" in line)
    assert result.fix is not None
    assert sum(result.fix.rules_fixed.values()) == marked == 8
    pack = yaml.safe_load((AUTOFIX_RULES / "python.yml").read_text())
    ids = {rule["id"] for rule in pack["rules"]}
    assert set(result.fix.rules_fixed) == ids
    patched = [f for f in result.diff.files if f.path == "tests/test_target.py"]
    assert patched
    assert patched[0].added == patched[0].removed == marked
    for line in expected.splitlines():
        if line not in target.splitlines():
            assert f"+{line}" in result.diff.unified


async def test_without_a_ruff_config_only_the_own_safe_selection_applies(
    runner: SessionRunner, tmp_path: Path
) -> None:
    # No ruff.toml: ruff's defaults would also touch `== None`-style code and more.
    project = make_project(
        tmp_path / "plain",
        {
            "shapes.py": "import os\n\n\ndef f(a):\n    l = 1\n    return a == None or l\n",
            "test_shapes.py": "from shapes import f\n\n\ndef test_f():\n    assert f(None)\n",
        },
    )
    result = await runner.run(
        SessionSpec(remote=Remote("octo/plain", str(project)), task=Task("Fix the lint")),
        LintFixer(),
    )
    assert result.status == "patched", result.error
    assert result.fix is not None
    assert result.fix.rules_fixed == {"F401": 1}
    assert "Patchwarden's own safe selection (F401, F541, F632, E713, E714)" in result.fix.summary
    assert "Scope: the whole repository (the task names no file)." in result.fix.summary
    assert "Left for a human" not in result.fix.summary  # E711 and E741 are not ours


async def test_a_task_that_names_a_file_fixes_only_that_file(
    runner: SessionRunner, tmp_path: Path
) -> None:
    project = make_project(
        tmp_path / "two",
        {
            "pkg/a.py": "import os\nimport sys\n\nX = 1\n",
            "pkg/b.py": "import json\n\nY = 2\n",
            "test_ab.py": "def test_x():\n    assert True\n",
        },
    )
    task = Task("unused imports", instructions="please clean up pkg/a.py")
    result = await runner.run(
        SessionSpec(remote=Remote("octo/two", str(project)), task=task), LintFixer()
    )
    assert result.status == "patched", result.error
    assert [f.path for f in result.diff.files] == ["pkg/a.py"]
    assert result.fix is not None
    assert result.fix.rules_fixed == {"F401": 2}
    assert "Scope: the files the task names (pkg/a.py)." in result.fix.summary


async def test_a_repository_with_fix_true_still_gets_an_honest_count(
    runner: SessionRunner, tmp_path: Path
) -> None:
    # `fix = true` makes every plain `ruff check` fix: the census must not.
    project = make_project(
        tmp_path / "fixtrue",
        {
            # Only tool configuration: nothing to install, nothing built.
            "pyproject.toml": '[tool.ruff]\nfix = true\n[tool.ruff.lint]\nselect = ["F"]\n',
            "mod.py": "import os\nimport sys\nimport json\nimport re\n\nX = 1\n",
            "test_mod.py": "def test_x():\n    assert True\n",
        },
    )
    result = await runner.run(
        SessionSpec(remote=Remote("octo/fixtrue", str(project)), task=Task("lint")),
        LintFixer(),
    )
    assert result.status == "patched", result.error
    assert result.fix is not None
    assert result.fix.rules_fixed == {"F401": 4}
    assert result.fix.summary.startswith("ruff fixed 4 problems: F401 (4).")
    assert "Rules: the repository's own ruff configuration." in result.fix.summary


@pytest.mark.parametrize(
    ("files", "said"),
    [
        # JavaScript and no eslint configuration: no rules of Patchwarden's choosing
        ({}, "no eslint configuration here (eslint.config.js, .eslintrc or package.json"),
        # a configuration, and eslint not among the packages setup installed
        (
            {"eslint.config.mjs": "export default [];\n"},
            "eslint is not among the packages setup installed: add it to package.json",
        ),
    ],
)
async def test_on_javascript_the_lint_fixer_says_what_it_needs_of_the_repository(
    runner: SessionRunner, tmp_path: Path, files: dict[str, str], said: str
) -> None:
    project = make_project(
        tmp_path / "web",
        {
            "package.json": '{"name": "web", "version": "1.0.0"}\n',
            "index.js": "var a = 1;\nmodule.exports = { a };\n",
            **files,
        },
    )
    result = await runner.run(lint_spec(project), LintFixer())
    assert result.status != "patched"
    assert result.fix is not None
    assert result.fix.reason is not None
    assert said in result.fix.reason
    assert result.diff.files == []
