"""The ceiling bench's reading of a place (bench/realbugs/ceiling.py): a line widened to
its whole statement, the statement shown without its margin, an answer put back in its
place, and what an answer makes of the function."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench" / "realbugs"))

import ceiling  # bench/ is not a package

FUNCTION = '''def parse(text, sep=","):
    def clean(part):
        return part.strip()

    if not text or text.isspace():
        return []
    found = re.findall(r"""(?x)
        [^,]+
        """, text)
    return [clean(p) for p in found]
'''


@pytest.mark.parametrize(
    ("line", "span"),
    [(3, (3, 3)), (5, (5, 5)), (8, (7, 9)), (10, (10, 10)), (2, (2, 2))],
)
def test_a_line_is_widened_to_its_statement_and_a_header_stands_alone(
    line: int, span: tuple[int, int]
) -> None:
    assert ceiling.statement_at(FUNCTION, line) == span


@pytest.mark.parametrize(("line", "span"), [(4, (4, 4)), (6, (6, 6)), (8, (8, 8))])
def test_a_clause_or_a_decorator_line_is_a_statement_of_its_own(
    line: int, span: tuple[int, int]
) -> None:
    function = (
        "def f(x):\n"
        "    try:\n"
        "        y = int(x)\n"
        "    except ValueError:\n"
        "        return None\n"
        "    else:\n"
        "        return y\n"
        "    @staticmethod\n"
        "    def g():\n"
        "        pass\n"
    )
    assert ceiling.statement_at(function, line) == span
    assert ceiling.statement_at(function, 99) is None


def test_an_unparseable_function_has_no_statements() -> None:
    assert ceiling.statement_at("def f(:\n    pass\n", 1) is None


def test_a_statement_is_shown_dedented_and_put_back_indented_as_it_was() -> None:
    span = (7, 9)
    shown = ceiling.lines_of(FUNCTION, span)
    assert shown.splitlines()[0] == 'found = re.findall(r"""(?x)'
    fixed = shown.replace("[^,]+", "[^,;]+")
    whole = ceiling.spliced(FUNCTION, span, f"```python\n{fixed}\n```", "parse")
    assert whole == FUNCTION.replace("[^,]+", "[^,;]+")


def test_a_string_at_the_left_edge_keeps_its_lines_where_they_are() -> None:
    function = 'def query():\n    sql = """\nSELECT 1\n"""\n    return sql\n'
    span = ceiling.statement_at(function, 2)
    assert span == (2, 4)
    assert ceiling.lines_of(function, span) == '    sql = """\nSELECT 1\n"""'


def test_an_answer_is_the_fix_changed_unchanged_or_unreadable() -> None:
    """Compared with the fix's function by syntax, layout and docstring aside."""
    fix = ceiling.essence(FUNCTION.replace("[^,]+", "[^,;]+"))
    span = (7, 9)
    right = ceiling.lines_of(FUNCTION, span).replace("[^,]+", "[^,;]+")
    said = [
        f"```python\n{right}\n```",
        f"```python\n{ceiling.lines_of(FUNCTION, span)}\n```",
        "```python\nfound = text.split(sep)\n```",
        "The function is correct.",
    ]
    verdicts = [ceiling.verdict(a, FUNCTION, span, "parse", fix) for a in said]
    assert verdicts == ["the fix", "unchanged", "changed", "unreadable"]
