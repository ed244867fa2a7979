"""A test written for the model up to its expectations (app/fixers/llm/repair/decorator_tests.py):
the model's answer gives the values, the test stays the one written for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.fixers.llm.localize import Index, Suspect, Symbol
from app.fixers.llm.repair.decorator_tests import Start, start_for
from app.fixers.llm.repair.repro_prompt import repro_prompt
from app.sessions.task import Document, Task
from tests.fixers.test_reproduction import RETRY

FIXED = RETRY.replace("range(1, attempts)", "range(1, attempts + 1)").replace(
    "attempts - 1", "attempts"
)
IDX = Index(sources={"retry.py": RETRY})
SUSPECTS = [Suspect(Symbol(path="retry.py", qualname="retry", start=1, end=11, kind="function"), 1)]
ISSUE = (
    "With `@retry(attempts=3)`, a function that fails twice and then succeeds still "
    "raises: it is called only twice."
)


def _start(said: str = ISSUE) -> Start:
    start = start_for(Task("retry", documents=(Document("issue #1 body", said),)), IDX, SUSPECTS)
    assert start is not None
    return start


def _answer(checks: str) -> str:
    """A model's test: the start as written, then its own checks."""
    body = _start().template.split("\n\n    result = flaky()")[0]
    return f"from retry import retry\nimport pytest\n\n{body}\n\n{checks}"


def _outcome(tmp_path: Path, code: str, test: str) -> int:
    (tmp_path / "retry.py").write_text(code)
    (tmp_path / "test_issue.py").write_text("import pytest\nfrom retry import retry\n\n" + test)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_issue.py"],
        cwd=tmp_path,
        capture_output=True,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    ).returncode


def test_the_answer_gives_values_and_the_test_written_for_it_takes_them(tmp_path: Path) -> None:
    """retry-count: the model called `flaky()` once bare and once in its assertion, so
    it expected a fourth call; read for its values, the test calls it once."""
    answer = _answer('    flaky()\n    assert flaky() == "ok"\n    assert len(calls) == 3\n')
    test = _start().filled(answer)
    assert test is not None
    assert test.endswith(
        "    result = flaky()\n    assert result == 'ok'\n    assert len(calls) == 3\n"
    )
    assert "    flaky()\n" not in test  # called once
    assert test.startswith("from retry import retry\n")  # what the prompt shows
    assert _outcome(tmp_path, RETRY, test) == 1  # shows the bug
    assert _outcome(tmp_path, FIXED, test) == 0  # passes on the fix


@pytest.mark.parametrize(
    "checks",
    [
        # retry-count, the greedy answer and one more: an error expected where the issue
        # says the function succeeds; no value for the result
        "    with pytest.raises(ValueError):\n        flaky()\n    assert len(calls) == 3\n",
        # a value that is a name, not a value
        "    result = flaky()\n    assert result == expected\n    assert len(calls) == 3\n",
        "    assert flaky() == 'ok'\n",  # no count
        "    assert flaky() != 'failed'\n    assert len(calls) == 3\n",  # not what is asked
    ],
)
def test_an_answer_that_leaves_a_value_out_makes_no_test(checks: str) -> None:
    assert _start().filled(_answer(checks)) is None


def test_where_the_issue_wants_the_error_through_only_the_count_is_asked() -> None:
    start = _start("With `@retry(2)` a function that fails 3 times should raise.")
    assert "    with pytest.raises(ValueError):\n        flaky()\n" in start.template
    test = start.filled("def test_x():\n    assert len(calls) == 2\n")
    assert test is not None
    assert test.endswith("        flaky()\n    assert len(calls) == 2\n")
    assert "@retry(2)" in test


def test_no_start_for_code_that_is_not_a_decorator_or_an_issue_that_writes_none() -> None:
    task = Task("retry", documents=(Document("issue #1 body", ISSUE),))
    plain = Index(sources={"retry.py": "def retry(attempts=3):\n    return attempts\n"})
    symbol = Symbol(path="retry.py", qualname="retry", start=1, end=2, kind="function")
    assert start_for(task, plain, [Suspect(symbol, 1)]) is None
    vague = Task("retry", documents=(Document("issue #1 body", "retry fails twice"),))
    assert start_for(vague, IDX, SUSPECTS) is None
    assert start_for(task, IDX, []) is None


def _test_written(prompt: str, fill: list[str]) -> str:
    """The test the prompt starts, its `...` filled in order, as a model would."""
    block = prompt.split("```python\n")[-1].split("\n```")[0]
    lines = block.splitlines()
    for i, line in enumerate(lines):
        if line.rstrip().endswith("..."):
            lines[i] = line.rstrip()[:-3] + fill.pop(0)
    assert not fill
    return "\n".join(lines) + "\n"


def test_the_issues_decorator_call_starts_a_test_that_fails_on_the_bug_and_passes_on_the_fix(
    tmp_path: Path,
) -> None:
    """bench task retry-count: told in words, nine tests in nine defined a function that
    could never succeed (``calls.index(x) < 2``, no ``return "ok"``). With the issue's
    `@retry(attempts=3)`, the prompt writes the test but for its expectations, and the
    test filled as the issue says shows the bug and passes on the fix."""
    idx = Index(sources={"retry.py": RETRY})
    symbol = Symbol(path="retry.py", qualname="retry", start=1, end=12, kind="function")
    task = Task(
        title="@retry(attempts=3) only tries twice",
        documents=(
            Document(
                "issue #1 body",
                "With `@retry(attempts=3)`, a function that fails twice and then succeeds "
                "still raises: it is called only twice.",
            ),
        ),
    )
    prompt = repro_prompt(task, idx, [Suspect(symbol, 1.0)])[-1]["content"]
    assert "    @retry(attempts=3)\n    def flaky():" in prompt
    assert "if len(calls) <= 2:" in prompt  # "fails twice"
    test = _test_written(prompt, ['"ok"', "3"])
    assert _outcome(tmp_path, RETRY, test) == 1  # shows the bug
    assert _outcome(tmp_path, FIXED, test) == 0  # passes on the fix


CACHED = """\
def cached(ttl=60):
    def wrap(fn):
        store = {}

        def inner(*args):
            if args not in store:
                store[args] = fn(*args)
            return store[args]

        return inner

    return wrap
"""


@pytest.mark.parametrize(
    "said",
    [
        "With `@cached(ttl=60)` the value never expires: after a minute it still returns the "
        "old one, and the error page shows stale data.",
        "`@cached(ttl=60)` raises nothing when ttl is negative; it should fail loudly.",
    ],
)
def test_an_issue_that_only_says_error_about_another_decorator_gets_no_failing_start(
    said: str,
) -> None:
    """A test of a function that fails N times then succeeds is the premise of a retry
    decorator's issue, not of every decorator whose issue says "error" or "fail"."""
    idx = Index(sources={"cache.py": CACHED})
    symbol = Symbol(path="cache.py", qualname="cached", start=1, end=12, kind="function")
    task = Task("cached", documents=(Document("issue #1 body", said),))
    assert start_for(task, idx, [Suspect(symbol, 1)]) is None
    prompt = repro_prompt(task, idx, [Suspect(symbol, 1.0)])[-1]["content"]
    assert "raises `ValueError`" not in prompt
    assert "define a small function decorated with `@cached`" in prompt
