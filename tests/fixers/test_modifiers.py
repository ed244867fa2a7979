"""The issue's words on how its listed values may be written (any case, spaces around)
become twins of the reproduction's test functions (app/fixers/llm/repair/modifiers.py)."""

from __future__ import annotations

import ast

from app.fixers.llm.repair.modifiers import allowed, with_twins

# parse-bool's issue (bench/agent_tasks): the model's tests tried "false" alone, and a
# change that lower-cased but did not strip was published (repair38).
PARSE_BOOL = (
    "Setting `FEATURE_X=false` in the environment *enables* the feature. `settings.load()` "
    "reads\nflags with `env_flag`, and every non-empty value seems to count as true. `false`, "
    "`0`, `no` and\n`off` (any case, with spaces around) must be false; `true`, `1`, `yes`, "
    "`on` true; anything else\nshould raise ValueError naming the variable, so typos are caught."
)
MODEL_TEST = """import pytest
from app_settings.settings import load


def test_load_correct(monkeypatch):
    monkeypatch.setenv("FEATURE_X", "false")  # the issue's example
    assert load().feature_x == False


@pytest.mark.parametrize("value", ["no", "off"])
def test_words(monkeypatch, value):
    monkeypatch.setenv("FEATURE_X", value)
    assert load().feature_x is False


def test_message():
    assert str(False).lower() == "false"
"""


def test_the_values_of_the_sentence_that_says_how_they_may_be_written() -> None:
    assert allowed(["FEATURE_X=false turns the feature on", PARSE_BOOL]) == {
        "false": " FALSE ",
        "0": " 0 ",
        "no": " NO ",
        "off": " OFF ",
    }  # not `FEATURE_X=false` or `env_flag` (other sentences), nor the true words (after
    # the `;`: another clause, which says nothing of how they are written)


def test_each_modifier_alone_and_words_that_are_not_one() -> None:
    assert allowed(["Names like `admin` must match case-insensitively."]) == {"admin": "ADMIN"}
    assert allowed(["Codes `ab1` and `7` are accepted with leading and trailing spaces."]) == {
        "ab1": " ab1 ",
        "7": " 7 ",
    }
    assert allowed(["`on` or `off` in any case"]) == {"on": "ON", "off": "OFF"}
    assert allowed(["upper or lower case: `ab`"]) == {"ab": "AB"}
    assert allowed(["regardless of case, e.g. `yes`, `no`"]) == {"yes": "YES", "no": "NO"}
    # Idioms; values that are not words or are names in code; hidden text.
    assert allowed(["In any case `false` must be false."]) == {}
    assert allowed(["in any case, `x` fails"]) == {}
    assert allowed(["handle any case where `value` is `None`"]) == {}
    assert allowed(["`a b` and `--flag` (any case) work"]) == {}
    assert allowed(["`parse_bool` should accept `off` regardless of case"]) == {"off": "OFF"}
    assert allowed(["<!-- `admin` regardless of case -->Login fails."]) == {}
    # Elsewhere in the issue does not count: the clause that lists them must say it.
    assert allowed(["`yes` is true. Any case works for the other flags."]) == {}
    assert allowed(["- `true`, `yes` are true\n- `false` is false (any case)"]) == {
        "false": "FALSE"
    }


def test_a_clause_that_says_what_must_not_be_allows_nothing() -> None:
    assert allowed(["`yes` with leading and trailing spaces must raise ValueError."]) == {}
    assert allowed(["`foo` is written with no spaces around it"]) == {}
    assert allowed(["`Admin` must not be case-insensitive"]) == {}
    assert allowed(["`root` in any case is rejected"]) == {}


def test_a_twin_of_each_test_that_passes_a_listed_value_as_input() -> None:
    source, used = with_twins(MODEL_TEST, allowed([PARSE_BOOL]))
    assert used == ["false", "no", "off"]
    assert source.startswith(MODEL_TEST.rstrip("\n"))  # the model's test as it was
    module = ast.parse(source)
    names = [n.name for n in module.body if isinstance(n, ast.FunctionDef)]
    assert names == [
        "test_load_correct",
        "test_words",
        "test_message",
        "test_load_correct_any_case_spaces_around",
        "test_words_any_case_spaces_around",
    ]
    twin = ast.get_source_segment(source, module.body[-2]) or ""
    assert "monkeypatch.setenv('FEATURE_X', ' FALSE ')" in twin
    assert "== False" in twin
    # The parametrize names stay, its values vary; an assertion's values never do.
    assert (
        "@pytest.mark.parametrize('value', [' NO ', ' OFF '])\n"
        "def test_words_any_case_spaces_around(monkeypatch, value):\n"
    ) in source
    assert "test_message_" not in source


def test_nothing_allowed_or_nothing_to_vary_leaves_the_test_alone() -> None:
    assert with_twins(MODEL_TEST, {}) == (MODEL_TEST, [])
    assert with_twins(MODEL_TEST, {"maybe": " MAYBE "}) == (MODEL_TEST, [])
    assert with_twins("def test_x(:\n", {"false": " FALSE "}) == ("def test_x(:\n", [])


def test_only_inputs_vary_never_what_a_test_expects() -> None:
    test = (
        "import os\nimport pytest\nfrom flags import flag, words, check, normalise\n\n\n"
        "def test_false():\n    assert flag('no') is False\n\n\n"
        "def test_words():\n    assert words() == ['no', 'off']\n\n\n"
        "def test_expected_in_a_name():\n    raw = 'no'\n    assert normalise(' NO ') == raw\n\n\n"
        "def test_pair():\n    assert check('NO', 'no')\n\n\n"
        "@pytest.mark.parametrize('raw,expected', [('NO', 'no')])\n"
        "def test_rows(raw, expected):\n    assert normalise(raw) == expected\n\n\n"
        "def test_env():\n    os.environ['FLAG'] = 'off'\n    assert flag() is False\n"
    )
    source, used = with_twins(test, {"no": " NO ", "off": " OFF "})
    assert used == ["no", "off"]
    added = source[len(test.rstrip("\n")) :]
    assert added == (
        "\n\n\ndef test_false_any_case_spaces_around():\n    assert flag(' NO ') is False\n"
        "\n\ndef test_env_any_case_spaces_around():\n    os.environ['FLAG'] = ' OFF '\n"
        "    assert flag() is False\n"
    )
