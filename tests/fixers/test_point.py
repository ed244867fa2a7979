"""The second look (app/fixers/llm/repair/point.py): the line a model quotes is found
in the function and widened to its statement, and the statement written again goes
back in its place, indented as it was."""

from __future__ import annotations

import pytest

from app.fixers.llm.repair.point import lines_of, pointed, statement_at, with_lines

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
    ("answer", "span"),
    [
        ("```python\n    return part.strip()\n```", (3, 3)),  # in a nested function
        ("```python\nif not text or text.isspace():\n```", (5, 5)),  # a header alone
        ("        [^,]+", (7, 9)),  # a line inside a statement: the statement
        ("```python\nreturn [clean(p) for p in found]  # here\n```", (10, 10)),  # close enough
        ("```python\nif not text or text.isspace() and x:\n```", (5, 5)),
    ],
)
def test_the_quoted_line_names_its_whole_statement(answer: str, span: tuple[int, int]) -> None:
    assert pointed(answer, FUNCTION) == span


@pytest.mark.parametrize(
    "answer", ["The function is correct.", "```python\nimport os\n```", "```python\n```"]
)
def test_an_answer_quoting_no_line_of_the_function_points_nowhere(answer: str) -> None:
    assert pointed(answer, FUNCTION) is None


def test_a_statement_is_shown_dedented_and_put_back_indented_as_it_was() -> None:
    span = statement_at(FUNCTION, 8)
    assert span == (7, 9)
    shown = lines_of(FUNCTION, span)
    assert shown.splitlines()[0] == 'found = re.findall(r"""(?x)'
    fixed = shown.replace("[^,]+", "[^,;]+")
    whole = with_lines(FUNCTION, span, f"```python\n{fixed}\n```", "parse")
    assert whole is not None
    assert whole.startswith("```python\ndef parse(")
    body = whole.removeprefix("```python\n").removesuffix("\n```")
    assert body.splitlines() == [line.replace("[^,]+", "[^,;]+") for line in FUNCTION.splitlines()]


def test_a_header_written_again_keeps_its_body_and_a_whole_function_is_read_as_one() -> None:
    span = statement_at(FUNCTION, 5)
    assert span == (5, 5)
    whole = with_lines(FUNCTION, span, "```python\nif not text:\n```", "parse")
    assert whole is not None
    assert "\n    if not text:\n        return []\n" in whole
    rewritten = "```python\ndef parse(text, sep=','):\n    return []\n```"
    assert with_lines(FUNCTION, span, rewritten, "parse") == rewritten
    assert with_lines(FUNCTION, span, "", "parse") is None


def test_an_unparseable_function_has_no_statements() -> None:
    assert statement_at("def f(:\n    pass\n", 1) is None


def test_a_string_at_the_left_edge_keeps_its_lines_where_they_are() -> None:
    function = 'def query():\n    sql = """\nSELECT 1\n"""\n    return sql\n'
    span = statement_at(function, 2)
    assert span == (2, 4)
    shown = lines_of(function, span)
    assert shown == '    sql = """\nSELECT 1\n"""'  # no margin to take off
    fixed = shown.replace("SELECT 1", "SELECT 2")
    whole = with_lines(function, span, f"```python\n{fixed}\n```", "query")
    assert whole == "```python\n" + function.replace("SELECT 1", "SELECT 2").rstrip("\n") + "\n```"


def test_a_header_written_with_a_body_replaces_the_old_body_too() -> None:
    span = statement_at(FUNCTION, 5)
    assert span == (5, 5)
    whole = with_lines(FUNCTION, span, "```python\nif not text:\n    return None\n```", "parse")
    assert whole is not None
    assert "    if not text:\n        return None\n    found = re.findall(" in whole
    assert "return []" not in whole


@pytest.mark.parametrize(
    ("line", "span"),
    [("    except ValueError:", (4, 4)), ("    else:", (6, 6)), ("    @staticmethod", (8, 8))],
)
def test_a_clause_or_a_decorator_line_is_a_statement_of_its_own(
    line: str, span: tuple[int, int]
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
    assert pointed(f"```python\n{line.strip()}\n```", function) == span
    assert statement_at(function, 99) is None
