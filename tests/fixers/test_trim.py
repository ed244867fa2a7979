"""Which of a model's reproduction assertions may be taken out (app/fixers/llm/trim.py),
read from real pytest output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from app.fixers.llm.trim import failed_lines, without

TEST = """from textstats import count_words


def test_count_words():
    assert count_words("hello  world") == 2
    assert count_words("  hello  ") == 2, (
        "invented, and wrong"
    )


def test_only_wrong():
    assert count_words("  ") == 1


def test_issue_example_1():
    assert count_words("hello  world") != 3
"""
RIGHT = "def count_words(text):\n    return len(text.split())\n"


def _pytest(tmp_path: Path) -> str:
    (tmp_path / "textstats.py").write_text(RIGHT)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_words_issue.py").write_text(TEST)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout


def test_the_lines_that_failed_are_read_from_pytest_and_their_assertions_taken_out(
    tmp_path: Path,
) -> None:
    lines = failed_lines(_pytest(tmp_path), "tests/test_words_issue.py")
    assert lines == [6, 12]
    trimmed = without(TEST, lines)
    assert trimmed is not None
    assert 'assert count_words("hello  world") == 2' in trimmed
    assert "invented, and wrong" not in trimmed  # the whole statement, over its lines
    assert "test_only_wrong" not in trimmed  # nothing left to check: gone
    assert "test_issue_example_1" in trimmed
    compile(trimmed, "t.py", "exec")


def test_the_issues_own_example_and_other_lines_are_never_taken_out() -> None:
    assert without(TEST, [16]) is None  # test_issue_example_1's assertion
    assert without(TEST, [1]) is None  # the import: no assertion there
    assert without("def test_x(:\n", [1]) is None  # does not parse


def test_a_file_left_with_no_test_is_no_reproduction() -> None:
    assert without("def test_a():\n    assert 1 == 2\n", [2]) is None
