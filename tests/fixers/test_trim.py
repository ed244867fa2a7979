"""Which of a model's reproduction assertions may be taken out (app/fixers/llm/repair/trimmed.py),
read from real pytest output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from app.fixers.llm.repair.trimmed import failed_lines, without

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
    got = without(TEST, lines)
    assert got is not None
    trimmed, gone = got
    assert gone == 2
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


def _trimmed(source: str, lines: list[int]) -> tuple[str, int] | None:
    return without(source, lines)


def test_a_test_that_checks_nothing_but_a_call_stays() -> None:
    """A "does not crash" test holds no assertion; only the tests trimming empties go
    (a change that crashes on ``None`` must still fail it)."""
    source = (
        "def test_no_crash():\n    f(None)\n\n\n"
        "def test_wrong():\n    assert f(1) == 3\n\n\n"
        "def test_right():\n    assert f(2) == 2\n"
    )
    got = _trimmed(source, [6])
    assert got is not None
    assert "test_no_crash" in got[0]
    assert "test_wrong" not in got[0]


def test_an_assertion_that_stands_for_many_cases_is_never_taken_out() -> None:
    """In a loop, with a comprehension, in a parametrized test, beside another statement
    on its line, or in a helper: taking it out would drop more than one case."""
    loop = "def test_a():\n    for x in (1, 2):\n        assert f(x) == x\n"
    assert _trimmed(loop, [3]) is None
    many = "def test_a():\n    assert all(f(x) == x for x in (1, 2))\n    assert f(0) == 0\n"
    assert _trimmed(many, [2]) is None
    parametrized = (
        "import pytest\n\n\n@pytest.mark.parametrize('x', [1, 2, 3, 4])\n"
        "def test_a(x):\n    assert f(x) == x\n    assert f(0) == 0\n"
    )
    assert _trimmed(parametrized, [6]) is None
    one_line = "def test_a():\n    assert f(1) == 1; assert f(2) == 2\n    assert f(3) == 3\n"
    assert _trimmed(one_line, [2]) is None
    helper = "def check(x):\n    assert f(x) == x\n\n\ndef test_a():\n    check(1)\n    check(2)\n"
    assert _trimmed(helper, [2]) is None


def test_lines_are_counted_as_the_parser_counts_them_and_one_assertion_once() -> None:
    source = (
        "def test_a():\n    s = 'a\u2028b'\n    assert f(s) == (\n        2\n    )\n"
        "    assert f(1) == 1\n"
    )
    got = _trimmed(source, [3, 4])  # two lines of one statement
    assert got is not None
    assert got[1] == 1
    assert "assert f(1) == 1" in got[0]
    assert "'a\u2028b'" in got[0]
    compile(got[0], "t.py", "exec")


def test_only_the_reproductions_own_lines_are_read() -> None:
    output = (
        "othertests/test_words_issue.py:3: AssertionError\n"
        "./tests/test_words_issue.py:5: AssertionError\n"
        "src/textstats.py:2: TypeError\n"
    )
    assert failed_lines(output, "tests/test_words_issue.py") == [5]
