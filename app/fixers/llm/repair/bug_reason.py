"""Why a test fails on the base: for the bug's reason (an assertion, an exception the
task names or the repository defines), or for another (it cannot import, it errors
before it runs, it compares with a function). A reproduction is kept only for the bug's reason."""

from __future__ import annotations

import re

from app.fixers.llm.localize import Index
from app.fixers.llm.repair.testruns import Tests, first_line
from app.sessions.task import Task

# Why a reproduction test is not kept: it did not fail for the reason the bug gives.
_WRONG_REASONS = (
    "ImportError",
    "ModuleNotFoundError",
    "SyntaxError",
    "IndentationError",
    "NameError",
    "fixture",
    "collect",
)


def reproduces(tests: Tests | None, task: Task, idx: Index, source: str = "") -> tuple[bool, str]:
    """Whether a reproduction test failed on the base for the bug's reason, and how: an
    assertion, an exception the task names, or one the repository's own code defines
    (``SignupError`` for "the form says the address is invalid") — raised where it should
    not be, or expected by ``pytest.raises`` and not raised ("should raise OutOfStock") —
    or one the test's own code raises and the code let through ("a function that fails
    twice and then succeeds still raises", when the test's function raises the first
    two times)."""
    if tests is None:
        return False, "did not run"
    outcomes = tests.run.outcomes
    if not outcomes:
        return False, "no test collected"
    if all(o == "passed" for o in outcomes.values()):
        return False, "passes on the base: it shows nothing"
    for test, outcome in outcomes.items():
        if outcome == "errored":
            return False, "errored before it ran (" + first_line(tests.failures.get(test, "")) + ")"
        if outcome != "failed":
            continue
        text = tests.failures.get(test, "")
        expected = _DID_NOT_RAISE.match(text.strip())
        if expected:  # pytest.raises(X) and the code did not raise: the bug, if X is meant
            name = expected.group(1).rsplit(".", 1)[-1]
            if name in task.words or name in idx.defines:
                return True, f"the code does not raise {name}: {first_line(text)[:120]}"
            return False, f"expects {name}, which the task does not name"
        kind = _exception(text)
        if kind in _WRONG_REASONS or any(w in text[:300] for w in _WRONG_REASONS[:5]):
            return False, f"fails with {kind}, not because of the bug"
        if kind == "AssertionError" and _FUNCTION_VALUE.search(text):
            # `== expected_result` where that is a fixture never requested: it compares
            # with a function, which no fix can equal: chosen, it would fail every answer
            return False, "compares with a function object, not a value: no fix could pass it"
        if kind == "AssertionError" or (kind and (kind in task.words or kind in idx.defines)):
            return True, f"{kind}: {first_line(text)[:120]}"
        if kind and re.search(rf"\braise\s+{re.escape(kind)}\b", source):
            return (
                True,
                f"{kind}, which the test itself raises, got through: {first_line(text)[:100]}",
            )
        return False, f"fails with {kind or 'an error'} the task does not name"
    return False, "no test failed"


# A function as a compared value in pytest's report of the assertion itself (not in its
# "+  where" lines): `assert 324.0 == <pytest_fixture(...)>`, `== <function f at 0x…>`,
# `assert 'test1' in [<function test_bug.<locals>.<lambda> …>]` (a string looked for
# among the handlers themselves).
_FUNCTION_VALUE = re.compile(
    r"^E\s+(?:AssertionError: )?assert .*(?:<pytest_fixture\(|<function \w|<bound method )",
    re.M,
)
_DID_NOT_RAISE = re.compile(r"Failed: DID NOT RAISE (?:<class ')?([A-Za-z_][\w.]*)")


def _exception(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    if first.startswith("assert") or "AssertionError" in first:
        return "AssertionError"
    m = re.match(r"([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt))\b", first)
    return m.group(1).rsplit(".", 1)[-1] if m else ""
