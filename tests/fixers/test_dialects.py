"""Tool calls as small models write them in their text: each dialect read, near-JSON
mended where only one reading is possible, the rest explained, and a call inside an
explanation marked as such (the agent questions a ``finish`` there)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.fixers.llm.agent.dialects import parse
from app.fixers.llm.agent.tools import TOOL_PARAMETERS

FENCE = "```"
READ = {"path": "src/dates.py"}
EDIT = {"path": "src/dates.py", "old": "return y % 4 == 0", "new": "return y % 4 == 0 and y"}


@pytest.mark.parametrize(
    ("answer", "name", "arguments", "dialect"),
    [
        pytest.param(
            '{"tool": "read_file", "arguments": {"path": "src/dates.py"}}',
            "read_file", READ, "json", id="json-bare",
        ),
        pytest.param(
            f'{FENCE}json\n{{"name": "read_file", '
            f'"arguments": {{"path": "src/dates.py"}}}}\n{FENCE}',
            "read_file", READ, "json-fenced", id="json-fenced-name",
        ),
        pytest.param(
            '{"tool": "read_file", "args": "{\\"path\\": \\"src/dates.py\\"}"}',
            "read_file", READ, "json", id="json-arguments-as-a-string",
        ),
        pytest.param(
            '{"tool": "finish", "summary": "Added the century rule."}',
            "finish", {"summary": "Added the century rule."}, "json", id="json-flat-finish",
        ),
        pytest.param(
            '{"type": "function", "function": {"name": "read_file", '
            '"arguments": "{\\"path\\": \\"src/dates.py\\"}"}}',
            "read_file", READ, "json", id="openai-shape-in-text",
        ),
        pytest.param(
            '{"path": "src/dates.py", "old": "return y % 4 == 0", '
            '"new": "return y % 4 == 0 and y"}',
            "edit", EDIT, "json", id="json-unnamed-edit-inferred",
        ),
        pytest.param(
            '<tool_call>\n{"name": "read_file", "arguments": {"path": "src/dates.py"}}\n'
            "</tool_call>",
            "read_file", READ, "hermes", id="hermes-qwen",
        ),
        pytest.param(
            "<tools><function name=\"finish\" arguments='{\"summary\": \"done\"}'/></tools>",
            "finish", {"summary": "done"}, "xml", id="xml-tools-function",
        ),
        pytest.param(
            '<function=read_file>{"path": "src/dates.py"}</function>',
            "read_file", READ, "function-tag", id="function-tag-json",
        ),
        pytest.param(
            "<function=read_file>\n<parameter=path>\nsrc/dates.py\n</parameter>\n"
            "<parameter=start>\n3\n</parameter>\n</function>",
            "read_file", {"path": "src/dates.py", "start": 3}, "function-tag",
            id="function-tag-parameters",
        ),
    ],
)  # fmt: skip
def test_each_dialect_is_read(
    answer: str, name: str, arguments: dict[str, Any], dialect: str
) -> None:
    parsed = parse(answer, TOOL_PARAMETERS)
    assert parsed.problem is None
    (call,) = parsed.calls
    assert (call.name, call.arguments, call.dialect) == (name, arguments, dialect)
    assert not call.in_prose


@pytest.mark.parametrize(
    ("answer", "arguments", "mended"),
    [
        pytest.param(
            '{"tool": "edit", "arguments": {"path": "a.py", "old": "x = 1\n", "new": "x = 2\n"}}',
            {"path": "a.py", "old": "x = 1\n", "new": "x = 2\n"},
            "raw newline in a string", id="raw-newlines-in-code",
        ),
        pytest.param(
            '{"tool": "run_tests", "arguments": {"selector": "tests/test_dates.py",},}',
            {"selector": "tests/test_dates.py"}, "trailing comma", id="trailing-commas",
        ),
        pytest.param(
            "{'tool': 'read_file', 'arguments': {'path': 'src/dates.py'}}",
            READ, "single quotes", id="python-quotes",
        ),
    ],
)  # fmt: skip
def test_near_json_is_mended_where_only_one_reading_is_possible(
    answer: str, arguments: dict[str, Any], mended: str
) -> None:
    (call,) = parse(answer, TOOL_PARAMETERS).calls
    assert call.arguments == arguments
    assert mended in call.repaired


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        pytest.param(
            '{"tool": "edit", "arguments": {"path": "a.py", "old": "x" "new": "y"}}',
            "Expecting ',' delimiter at line 1 column",
            id="missing-comma",
        ),
        pytest.param(
            '<tool_call>{"name": "read_file", "arguments": {"path": }</tool_call>',
            "<tool_call>: Expecting value",
            id="hermes-broken",
        ),
        pytest.param(
            '{"arguments": {"path": "src/dates.py", "pattern": "x", "content": "y"}}',
            "your JSON names no tool",
            id="no-tool-name",
        ),
    ],
)
def test_what_cannot_be_read_is_said_exactly(answer: str, said: str) -> None:
    parsed = parse(answer, TOOL_PARAMETERS)
    assert parsed.calls == []
    assert parsed.problem is not None
    assert said in parsed.problem


def test_prose_is_not_a_call_and_says_nothing_wrong() -> None:
    parsed = parse("The bug is in is_leap_year: it ignores the century rule.", TOOL_PARAMETERS)
    assert parsed.calls == []
    assert parsed.problem is None
    assert parse('Use a dict like {"a": 1} here.', TOOL_PARAMETERS).problem is None


def test_a_finish_inside_an_explanation_is_marked_as_in_prose() -> None:
    """Turn 1 of a real run: the model explained its plan, with a finish example."""
    answer = (
        "To fix this I will first read src/dates.py to find is_leap_year, then change the "
        "condition so that years divisible by 100 are not leap years unless divisible by "
        "400. When everything passes I will call finish like this:\n"
        f'{FENCE}json\n{{"tool": "finish", "summary": "Fixed the century rule."}}\n{FENCE}'
    )
    (call,) = parse(answer, TOOL_PARAMETERS).calls
    assert call.name == "finish"
    assert call.in_prose


def test_several_hermes_calls_come_in_order() -> None:
    answer = (
        '<tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}</tool_call>\n'
        '<tool_call>{"name": "run_tests", "arguments": {}}</tool_call>'
    )
    assert [c.name for c in parse(answer, TOOL_PARAMETERS).calls] == ["read_file", "run_tests"]


def test_an_ambiguous_unnamed_object_is_not_guessed() -> None:
    # {"path": ...} fits read_file and list_files alike: no guess.
    parsed = parse('{"path": "src"}', TOOL_PARAMETERS)
    assert parsed.calls == []


# -- answers a real model gave (recorded with scripts/record_dialects.py) -----------------
RECORDED = sorted((Path(__file__).parents[1] / "fixtures" / "llm").glob("*.json"))
REAL = [
    (f.stem, i, case) for f in RECORDED for i, case in enumerate(json.loads(f.read_text())["cases"])
]


def test_real_transcripts_are_recorded() -> None:
    assert REAL, "no recorded answers in tests/fixtures/llm/"
    dialects = {c["dialect"] for _, _, case in REAL for c in case["calls"]}
    assert "json-fenced" in dialects
    # The recording holds answers the reader must mend (Python's triple quotes).
    assert any('"""' in case["answer"] and case["calls"] for _, _, case in REAL)


@pytest.mark.parametrize(
    ("model", "index", "case"), REAL, ids=[f"{m}-{i}-{c['task']}" for m, i, c in REAL]
)
def test_a_real_models_answers_are_read_as_recorded(
    model: str, index: int, case: dict[str, Any]
) -> None:
    parsed = parse(case["answer"], TOOL_PARAMETERS)
    calls = [{"tool": c.name, "arguments": c.arguments, "dialect": c.dialect} for c in parsed.calls]
    assert calls == case["calls"]
    assert parsed.problem == case["problem"]


def test_triple_quotes_are_mended_as_a_value_and_left_alone_inside_a_string() -> None:
    """A real 1.5B model wrote a file's content as a Python triple-quoted string."""
    content = 'import pytest\n\ndef test_merge():\n    assert merge({"a": 1}, {}) == {"a": 1}\n'
    answer = (
        '```json\n{\n  "tool": "create_file",\n  "arguments": {\n    "path": "tests/t.py",\n'
        f'    "content": """\n{content}"""\n  }}\n}}\n```'
    )
    (call,) = parse(answer, TOOL_PARAMETERS).calls
    assert call.arguments == {"path": "tests/t.py", "content": "\n" + content}
    assert call.repaired == ("triple-quoted string",)
    # Raw newlines around a docstring inside a JSON string: only they needed mending.
    edit = (
        '{"tool": "edit", "arguments": {"path": "a.py", "old": "def f():\n    pass", '
        "\"new\": \"def f():\n    '''doc'''\n    pass\"}}"
    )
    (call,) = parse(edit, TOOL_PARAMETERS).calls
    assert call.arguments["new"] == "def f():\n    '''doc'''\n    pass"
