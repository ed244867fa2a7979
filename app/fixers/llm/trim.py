"""A model's reproduction test, less the assertions a change many answers agree on
fails: a 1.5B model writes the issue's example right and then invents more cases, some
wrong (word-count: ``count_words("hello  world") == 2`` right, then ``"  hello  " == 2``
and ``"  hello  world" == 3``; two answers of four wrote ``len(text.split())``, which
failed only those two).

Pure text work; :func:`~app.fixers.llm.repair_job.trimmed_judge` runs it. Only the
model's own assertions go: those the issue's own words made (``test_issue_example_*``,
app/fixers/llm/examples.py) stay, and at most half of the model's go (a test that is
mostly wrong is no judge at all). A test function left with no assertion goes too.
"""

from __future__ import annotations

import ast
import re

from app.fixers.llm.answers import parse

OWN_EXAMPLE = "test_issue_example"  # the tests the issue's own words made: never trimmed
# pytest's long traceback names the line that failed: `tests/test_x_issue.py:7: AssertionError`
_FAILED_AT = re.compile(r"^(?P<path>[\w./-]+\.py):(?P<line>\d+): \w*(?:Error|Failed)\b", re.M)


def failed_lines(output: str, path: str) -> list[int]:
    """The lines of the test file at ``path`` where its assertions failed, per the
    test run's output (each once, in order)."""
    lines: list[int] = []
    for match in _FAILED_AT.finditer(output):
        line = int(match["line"])
        if match["path"].endswith(path) and line not in lines:
            lines.append(line)
    return lines


def model_asserts(source: str) -> list[ast.Assert]:
    """The assertions the model wrote: every ``assert`` of the file, but in the tests
    the issue's own words made."""
    module = parse(source)
    if module is None:
        return []
    own: set[int] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef) and node.name.startswith(OWN_EXAMPLE):
            own |= {id(n) for n in ast.walk(node)}
    return [n for n in ast.walk(module) if isinstance(n, ast.Assert) and id(n) not in own]


def without(source: str, lines: list[int]) -> str | None:
    """``source`` without the model's assertions at ``lines`` (and the test functions
    left with nothing to check), or None when a line is no such assertion."""
    asserts = model_asserts(source)
    gone: list[ast.Assert] = []
    for line in lines:
        node = min(
            (a for a in asserts if a.lineno <= line <= (a.end_lineno or a.lineno)),
            key=lambda a: (a.end_lineno or a.lineno) - a.lineno,
            default=None,
        )
        if node is None:
            return None
        gone.append(node)
    text = source.splitlines(keepends=True)
    for node in sorted(gone, key=lambda a: -a.lineno):
        indent = " " * node.col_offset
        text[node.lineno - 1 : node.end_lineno or node.lineno] = [f"{indent}pass\n"]
    return _empty_tests_out("".join(text))


def _empty_tests_out(source: str) -> str | None:
    """The file without its test functions that check nothing any more (no assertion,
    no ``pytest.raises``)."""
    module = parse(source)
    if module is None:
        return None
    text = source.splitlines(keepends=True)
    empty = [
        node
        for node in module.body
        if isinstance(node, ast.FunctionDef)
        and node.name.startswith("test")
        and not any(
            isinstance(n, ast.Assert) or (isinstance(n, ast.Attribute) and n.attr == "raises")
            for n in ast.walk(node)
        )
    ]
    for node in sorted(empty, key=lambda n: -n.lineno):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        text[first - 1 : node.end_lineno or node.lineno] = []
    kept = "".join(text)
    module = parse(kept)
    has_test = module is not None and any(
        isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in module.body
    )
    return kept if has_test else None
