"""The issue's words on how its listed values may be written (any case, spaces around)
become twins of the reproduction's test functions (app/fixers/llm/modifiers.py)."""

from __future__ import annotations

import ast

from app.fixers.llm.modifiers import allowed, with_twins

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
        "true": " TRUE ",
        "1": " 1 ",
        "yes": " YES ",
        "on": " ON ",
    }  # not `FEATURE_X=false`, `settings.load()` or `env_flag`: other sentences


def test_each_modifier_alone_and_words_that_are_not_one() -> None:
    assert allowed(["Names like `admin` must match case-insensitively."]) == {"admin": "ADMIN"}
    assert allowed(["Codes `ab1` and `7` are accepted with leading and trailing spaces."]) == {
        "ab1": " ab1 ",
        "7": " 7 ",
    }
    # "in any case" is an idiom; a value that is not a word is left alone.
    assert allowed(["In any case `false` must be false."]) == {}
    assert allowed(["in any case, `x` fails"]) == {}
    assert allowed(["`a b` and `--flag` (any case) work"]) == {}
    # Elsewhere in the issue does not count: the sentence that lists them must say it.
    assert allowed(["`yes` is true. Any case works for the other flags."]) == {}


def test_a_twin_of_each_test_that_passes_a_listed_value_as_input() -> None:
    source, twins = with_twins(MODEL_TEST, allowed([PARSE_BOOL]))
    assert twins == 2
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
    assert with_twins(MODEL_TEST, {}) == (MODEL_TEST, 0)
    assert with_twins(MODEL_TEST, {"maybe": " MAYBE "}) == (MODEL_TEST, 0)
    assert with_twins("def test_x(:\n", {"false": " FALSE "}) == ("def test_x(:\n", 0)


def test_a_value_given_to_a_call_in_an_assertion_varies_its_expected_result_not() -> None:
    test = (
        "from flags import flag, words\n\n\n"
        "def test_false():\n    assert flag('no') is False\n\n\n"
        "def test_words():\n    assert words() == ['no', 'off']\n"
    )
    source, twins = with_twins(test, {"no": " NO ", "off": " OFF "})
    assert twins == 1
    assert source.endswith(
        "def test_false_any_case_spaces_around():\n    assert flag(' NO ') is False\n"
    )
