"""The code scanning fixer through a real session (issue 34, part 3): a semgrep rule's
own autofix, run by the real semgrep in bubblewrap, applied at the alert's place only
and checked by running the rule again; and what it will not do, said."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from app.fixers.llm.scripted import tool
from app.fixers.scanning import ScanningFixer, apply_edits, find_rule, is_semgrep
from app.git import Remote
from app.sessions.session import SessionRunner
from app.sessions.task import Document, Place, ScanAlert, SessionSpec, Task
from tests.conftest import make_project
from tests.fixers.test_fixer_llm import (  # noqa: F401 (fixtures)
    MakeFixer,
    MakeModel,
    fixer_for,
    make_client,
    make_model,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap sessions")

RULES = """\
rules:
  - id: no-assert-equals
    languages: [python]
    severity: WARNING
    message: assertEquals() was removed in Python 3.12
    pattern: $SELF.assertEquals(...)
    fix-regex:
      regex: '\\.assertEquals\\('
      replacement: '.assertEqual('
  - id: todo-marker
    languages: [generic]
    severity: INFO
    message: a TODO marker
    pattern-regex: TODO
    fix-regex:
      regex: TODO
      replacement: NOTE
  - id: no-print
    languages: [python]
    severity: INFO
    message: print() in library code
    pattern: print(...)
"""
TESTS = """\
import unittest  # TODO: pytest


class T(unittest.TestCase):
    def test_one(self):
        self.assertEquals(1, 1)

    def test_two(self):
        self.assertEquals(2, 2)
        print("done")
"""


def alert(rule: str, line: int, *, tool: str = "semgrep") -> Task:
    scan = ScanAlert(tool=tool, rule=rule, path="tests/test_t.py", start_line=line, number=7)
    return Task(title=f"Fix {tool} {rule}", scan=scan)


def project(tmp_path: Path) -> Remote:
    files = {".semgrep.yml": RULES, "tests/test_t.py": TESTS, "pytest.ini": "[pytest]\n"}
    return Remote("octo/scan", str(make_project(tmp_path / "scan", files)))


async def test_the_rule_s_autofix_is_applied_at_the_alert_s_place_and_nowhere_else(
    runner: SessionRunner, tmp_path: Path
) -> None:
    # semgrep reports the rule by its file's path, as a SARIF upload of `.semgrep.yml` does.
    spec = SessionSpec(remote=project(tmp_path), task=alert("semgrep.no-assert-equals", 9))
    result = await runner.run(spec, ScanningFixer())

    assert result.status == "patched", result.error
    assert result.fix is not None
    assert [f.path for f in result.diff.files] == ["tests/test_t.py"]
    removed = [line for line in result.diff.unified.splitlines() if line.startswith("-    ")]
    added = [line for line in result.diff.unified.splitlines() if line.startswith("+    ")]
    assert removed == ["-        self.assertEquals(2, 2)"]  # line 9; line 6 is left
    assert added == ["+        self.assertEqual(2, 2)"]
    assert result.fix.fixer == "scanning"
    assert result.fix.summary.startswith(
        "Applied semgrep rule `no-assert-equals`'s own autofix at `tests/test_t.py:9` "
        "(code scanning alert #7), and nothing else. Its 1 other match(es) in the file are "
        "left as they are. The rule was run again on the patched `tests/test_t.py`: it no "
        "longer matches at line 9."
    )
    assert result.tests is not None
    assert result.tests.head is not None
    assert result.tests.head.ok


@pytest.mark.parametrize(
    ("task", "says"),
    [
        (
            alert("py/code-injection", 9, tool="CodeQL"),
            "CodeQL cannot run here and has no autofix Patchwarden applies, and no model may "
            "write the fix (`alerts.code_scanning.model` is false, or no model is "
            "configured): nothing changed",
        ),
        (alert("no-print", 10), "the semgrep rule `no-print` (.semgrep.yml) has no autofix"),
        (
            # semgrep computes no `fix` for a fix-regex on a pattern-regex rule
            alert("todo-marker", 1),
            "semgrep computes no fix for `todo-marker` at `tests/test_t.py:1`",
        ),
        (alert("someone.elses-rule", 9), "the semgrep rule `someone.elses-rule` is not in"),
        (
            alert("no-assert-equals", 3),
            "`no-assert-equals` does not match at `tests/test_t.py:3` on the base (it matches "
            "at [6, 9]): the alert may be out of date; nothing changed",
        ),
    ],
    ids=["codeql", "no-autofix", "no-computed-fix", "unknown-rule", "out-of-date"],
)
async def test_what_it_cannot_fix_it_says_and_changes_nothing(
    runner: SessionRunner, tmp_path: Path, task: Task, says: str
) -> None:
    result = await runner.run(SessionSpec(remote=project(tmp_path), task=task), ScanningFixer())
    assert result.status == "failed"
    assert result.head_sha is None
    assert result.fix is not None
    assert result.fix.reason is not None
    assert says in result.fix.reason, result.fix.reason
    assert result.fix.final


def test_patchwarden_s_own_rules_are_found_by_their_reported_id(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    rule, where = find_rule(
        tree,
        Path(__file__).parents[2] / "policies" / "semgrep",
        "policies.semgrep.autofix.patchwarden.autofix.yaml-load-without-loader",
    )
    assert rule is not None
    assert rule["id"] == "patchwarden.autofix.yaml-load-without-loader"
    assert where == "Patchwarden's python.yml"
    (tree / ".semgrep").mkdir()
    (tree / ".semgrep" / "ours.yaml").write_text(RULES)
    assert find_rule(tree, tmp_path / "none", "no-print")[1] == ".semgrep/ours.yaml"


async def test_codeql_s_alert_goes_to_the_model_where_allowed_and_says_it_was_not_rechecked(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    fixer_for: MakeFixer,  # noqa: F811
) -> None:
    files = {
        "calc.py": "def parse(text):\n    return eval(text)\n",
        "test_calc.py": (
            "from calc import parse\n\n\ndef test_parse():\n    assert parse('2') == 2\n"
        ),
    }
    remote = Remote("octo/calc", str(make_project(tmp_path / "calc", files)))
    model = await make_model(
        tool("edit", path="calc.py", old="return eval(text)", new="return int(text)"),
        tool("finish", summary="parse() no longer evaluates its input; test_parse passes."),
        tool("finish", summary="parse() no longer evaluates its input (no test shows it)."),
        tool("finish", summary="parse() no longer evaluates its input (no test shows it)."),
    )
    scan = ScanAlert(tool="CodeQL", rule="py/code-injection", path="calc.py", start_line=2)
    task = Task(
        title="Fix CodeQL py/code-injection (code scanning alert #3)",
        documents=(Document("CodeQL rule py/code-injection: summary", "Code injection"),),
        places=(Place("calc.py", 2),),
        scan=scan,
    )
    result = await runner.run(
        SessionSpec(remote=remote, task=task), ScanningFixer(model=fixer_for(model))
    )
    assert result.status == "patched", result.error
    assert result.fix is not None
    assert result.fix.fixer == "llm"  # scored as any model's change
    assert result.fix.summary.endswith(
        "The finding was not checked again: CodeQL cannot run here and has no autofix "
        "Patchwarden applies. A new analysis on the default branch after the merge says "
        "whether it is gone."
    )
    assert "+    return int(text)" in result.diff.unified


async def test_a_rule_semgrep_cannot_run_is_an_error_not_an_out_of_date_alert(
    runner: SessionRunner, tmp_path: Path
) -> None:
    broken = RULES.replace(
        "    pattern: $SELF.assertEquals(...)", "    pattern: $SELF.assertEquals(("
    )
    files = {".semgrep.yml": broken, "tests/test_t.py": TESTS}
    remote = Remote("octo/scan", str(make_project(tmp_path / "scan", files)))
    result = await runner.run(
        SessionSpec(remote=remote, task=alert("no-assert-equals", 9)), ScanningFixer()
    )
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.startswith("semgrep failed on `tests/test_t.py` (exit code ")


async def test_a_file_too_big_to_write_back_whole_is_not_edited(
    runner: SessionRunner, tmp_path: Path
) -> None:
    big = TESTS + "# " + "x" * (4 * 1024 * 1024) + "\n"
    files = {".semgrep.yml": RULES, "tests/test_t.py": big}
    remote = Remote("octo/scan", str(make_project(tmp_path / "scan", files)))
    result = await runner.run(
        SessionSpec(remote=remote, task=alert("no-assert-equals", 9)), ScanningFixer()
    )
    assert result.status == "failed"
    assert result.fix is not None
    assert result.fix.reason == "`tests/test_t.py` is over 4 MiB: not edited here"


@pytest.mark.parametrize(
    ("tool", "semgrep"),
    [
        ("Semgrep OSS", True),  # semgrep's own SARIF driver name, as GitHub shows it
        ("Semgrep Pro", True),
        ("semgrep", True),
        ("Semgrep", True),
        ("CodeQL", False),
        ("semgrep-rules-linter", False),
        ("Semgrep OSS fork of something else", False),
        ("", False),
    ],
)
def test_the_tool_names_semgrep_goes_by(tool: str, semgrep: bool) -> None:
    assert is_semgrep(tool) is semgrep


# -- ruff: its own safe fix of the one finding at the alert's place --------------------

PKG = (
    "import os\n"
    "import sys\n"
    "import json\n"
    "\n\n"
    "def argv():\n"
    "    return sys.argv  # a line long enough for E501 when the line length is tiny\n"
)
PKG_TESTS = "from pkg import argv\n\n\ndef test_argv():\n    assert argv()\n"


def ruff_alert(rule: str, line: int) -> Task:
    scan = ScanAlert(tool="ruff", rule=rule, path="pkg.py", start_line=line, number=4)
    return Task(title=f"Fix ruff {rule}", scan=scan)


def ruff_project(tmp_path: Path) -> Remote:
    files = {"pkg.py": PKG, "test_pkg.py": PKG_TESTS, "ruff.toml": "line-length = 40\n"}
    return Remote("octo/pkg", str(make_project(tmp_path / "pkg", files)))


async def test_ruff_s_safe_fix_is_applied_at_the_alert_s_place_and_nowhere_else(
    runner: SessionRunner, tmp_path: Path
) -> None:
    spec = SessionSpec(remote=ruff_project(tmp_path), task=ruff_alert("F401", 3))
    result = await runner.run(spec, ScanningFixer())

    assert result.status == "patched", result.error
    assert result.fix is not None
    assert [f.path for f in result.diff.files] == ["pkg.py"]
    changed = [line for line in result.diff.unified.splitlines() if line[:1] in "+-"]
    assert changed[2:] == ["-import json"]  # after the ---/+++ header; `os` is left
    assert (result.fix.fixer, result.fix.category, result.fix.model) == ("scanning", "lint", False)
    assert result.fix.summary == (
        "Applied ruff's own safe fix for `F401` at `pkg.py:3` (code scanning alert #4), and "
        "nothing else. Its 1 other finding(s) in the file are left as they are. ruff was run "
        "again on the patched `pkg.py`: the finding is gone."
    )
    assert result.fix.rules_fixed == {"F401": 1}


@pytest.mark.parametrize(
    ("task", "says"),
    [
        (ruff_alert("E501", 7), "ruff has no safe fix for `E501` at `pkg.py:7`"),
        (
            ruff_alert("F401", 6),
            "ruff does not report `F401` at `pkg.py:6` on the base (it reports it at [1, 3]): "
            "the alert may be out of date; nothing changed",
        ),
        (ruff_alert("--config=x", 1), "`--config=x` is not a ruff rule code"),
    ],
    ids=["no-fix", "out-of-date", "not-a-code"],
)
async def test_what_ruff_cannot_fix_it_says_and_changes_nothing(
    runner: SessionRunner, tmp_path: Path, task: Task, says: str
) -> None:
    spec = SessionSpec(remote=ruff_project(tmp_path), task=task)
    result = await runner.run(spec, ScanningFixer())
    assert result.status == "failed"
    assert result.fix is not None
    assert result.fix.reason is not None
    assert says in result.fix.reason, result.fix.reason


def _edit(row: int, column: int, end_row: int, end_column: int, content: str) -> dict[str, Any]:
    return {
        "location": {"row": row, "column": column},
        "end_location": {"row": end_row, "column": end_column},
        "content": content,
    }


@pytest.mark.parametrize(
    ("text", "edits", "after"),
    [
        ("import os\nimport sys\n", [_edit(1, 1, 2, 1, "")], "import sys\n"),
        # columns count characters, not bytes
        ('x = "ééé"; import os\n', [_edit(1, 12, 1, 21, "")], 'x = "ééé"; \n'),
        # a form feed does not end a line for ruff
        ("a\fb\nc = 1\n", [_edit(2, 1, 2, 2, "d")], "a\fb\nd = 1\n"),
        ("a\n", [_edit(5, 1, 5, 2, "z")], None),  # no such line
        ("ab\ncd\n", [_edit(1, 1, 1, 9, "")], None),  # past the line's end
        ("abc\n", [_edit(1, 1, 1, 3, "x"), _edit(1, 2, 1, 4, "y")], None),  # overlapping
        ("abc\n", [{"content": "x"}], None),  # not ruff's shape
    ],
)
def test_ruff_s_edits_are_applied_by_row_and_column(
    text: str, edits: list[Any], after: str | None
) -> None:
    assert apply_edits(text, edits) == after
