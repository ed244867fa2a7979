"""A model's reproduction test, less the assertions a change many answers agree on
fails: a small model writes the issue's example right and then invents more cases, some
wrong (``count_words("hello  world") == 2`` right, then ``"  hello  " == 2``), and a right
change that many answers agree on fails only those.

Pure text work; :func:`~app.fixers.llm.repair.judges.trimmed_judge` runs it. Only an
assertion that checks one case may go: a statement of its own line, in a test function
that is not parametrized, outside any loop, with no comprehension in it (one such
assertion stands for many cases). Those the issue's own words made
(``test_issue_example_*``, app/fixers/llm/repair/examples.py) stay; the caller lets at most
half of the model's go. A test function left with nothing to check goes too.
"""

from __future__ import annotations

import ast
import re

from app.fixers.llm.answers import parse

OWN_EXAMPLE = "test_issue_example"  # the tests the issue's own words made: never trimmed
# pytest's long traceback names the line that failed: `tests/test_x_issue.py:7: AssertionError`
_FAILED_AT = re.compile(r"^(?P<path>[\w./-]+\.py):(?P<line>\d+): \w*(?:Error|Failed)\b", re.M)
_MANY = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def failed_lines(output: str, path: str) -> list[int]:
    """The lines of the test file at ``path`` where its assertions failed, per the
    test run's output (each once, in order)."""
    lines: list[int] = []
    for match in _FAILED_AT.finditer(output):
        line, where = int(match["line"]), match["path"].removeprefix("./")
        if (where == path or where.endswith("/" + path)) and line not in lines:
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


def evidence(source: str, lines: list[int]) -> set[str]:
    """The model's assertions at ``lines`` (where the test failed on the base), as
    written: what the test was kept for, which trimming must leave in place (a change
    that fails the very assertion that failed on the base has not fixed the bug, and
    with that assertion taken out, what is left may fail on the base at a nonsense one)."""
    return {
        ast.unparse(a)
        for a in model_asserts(source)
        if any(a.lineno <= line <= (a.end_lineno or a.lineno) for line in lines)
    }


def asserted(source: str) -> set[str]:
    """The model's assertions of a file, as written (to compare with :func:`evidence`)."""
    return {ast.unparse(a) for a in model_asserts(source)}


def _one_case(module: ast.Module) -> dict[int, ast.FunctionDef]:
    """The model's assertions that check one case each (by ``id``), with their test."""
    out: dict[int, ast.FunctionDef] = {}
    for test in module.body:
        if (
            not isinstance(test, ast.FunctionDef)
            or not test.name.startswith("test")
            or test.name.startswith(OWN_EXAMPLE)
            or test.decorator_list
        ):
            continue
        todo: list[ast.AST] = list(test.body)
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Assert):
                if not any(isinstance(n, _MANY) for n in ast.walk(node)):
                    out[id(node)] = test
            elif not isinstance(
                node, (*_MANY, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            ):
                todo.extend(ast.iter_child_nodes(node))
    return out


def without(source: str, lines: list[int]) -> tuple[str, int] | None:
    """``source`` without the model's assertions at ``lines`` (and the test functions
    they leave with nothing to check), and how many went; None when a line is not such
    an assertion (one that checks one case, alone on its lines)."""
    module = parse(source)
    if module is None:
        return None
    eligible = _one_case(module)
    asserts = [n for n in ast.walk(module) if isinstance(n, ast.Assert)]
    gone: dict[int, ast.Assert] = {}
    for line in lines:
        node = next((a for a in asserts if a.lineno <= line <= _end(a)), None)
        if node is None or id(node) not in eligible or _shares_lines(module, node):
            return None
        gone[id(node)] = node
    text = source.split("\n")  # as the parser counts lines (not splitlines: \x0c, \u2028)
    for node in sorted(gone.values(), key=lambda a: -a.lineno):
        text[node.lineno - 1 : _end(node)] = [" " * node.col_offset + "pass"]
    emptied = {eligible[key].name for key in gone}
    kept = _emptied_out("\n".join(text), emptied)
    return (kept, len(gone)) if kept is not None else None


def _end(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


def _shares_lines(module: ast.Module, node: ast.Assert) -> bool:
    """Whether another statement stands on the assertion's lines (``assert a; assert
    b``), not counting those that hold it."""
    holding = [s for s in ast.walk(module) if isinstance(s, ast.stmt) and node in ast.walk(s)]
    return any(
        isinstance(s, ast.stmt)
        and s is not node
        and not any(s is h for h in holding)
        and s.lineno <= _end(node)
        and _end(s) >= node.lineno
        for s in ast.walk(module)
    )


def _emptied_out(source: str, emptied: set[str]) -> str | None:
    """The file without those of the ``emptied`` test functions that check nothing any
    more (no assertion, no ``raises``); None when it is left with no test at all."""
    module = parse(source)
    if module is None:
        return None
    text = source.split("\n")
    empty = [
        node
        for node in module.body
        if isinstance(node, ast.FunctionDef)
        and node.name in emptied
        and not any(
            isinstance(n, ast.Assert) or (isinstance(n, ast.Attribute) and n.attr == "raises")
            for n in ast.walk(node)
        )
    ]
    for node in sorted(empty, key=lambda n: -n.lineno):
        text[node.lineno - 1 : _end(node)] = []
    kept = "\n".join(text)
    module = parse(kept)
    has_test = module is not None and any(
        isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in module.body
    )
    return kept if has_test else None
