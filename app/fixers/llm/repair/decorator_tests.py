"""The start of a reproduction test, written by Patchwarden, not by the model.

Told in words how to build what a test needs, a small model can get the building wrong
more often than the expectation: a test of a retry decorator may define a function that
can never succeed (``calls.index(x) < 2``, no ``return "ok"``). When the issue itself
writes the decorator's call (`@retry(attempts=3)`), the test is written here up to its
expectations, and the model replaces each ``...`` with what the issue says should happen.
What the model sends back is read for those values only, and the test is the one written
here with them (:meth:`Start.filled`): a model asked to fill values may still rewrite the
rest, and two answers that agree on a test no fix could pass would judge every fix.

No such start is written for a class that takes a clock (a fake clock, the object built
as the issue builds it): it does not make a small model's tests right, because what it
gets wrong there is what to do and expect, not how to build the object.

The issue's call becomes code only rebuilt from its literal arguments, as the issue's
examples do (app/fixers/llm/repair/examples.py): untrusted words never reach a test as written.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from app.fixers.llm.answers import parse
from app.fixers.llm.imports import module_name
from app.fixers.llm.localize import Index, Suspect
from app.fixers.llm.repair.examples import literal
from app.fixers.llm.repair.splice import is_decorator
from app.sessions.task import Task

MAX_CALL = 120  # characters of the call written into a test

# "a function that fails twice and then succeeds": how often the function fails.
_TIMES = re.compile(
    r"(?i)\b(?:fail|rais|throw|error)\w*\s+(once|twice|two times|three times|four times|"
    r"five times|\d+ times)\b"
)
# The premise of the test written here: the decorated function fails, and the decorator
# is about surviving that (retries, attempts) — not any issue that says "error": a
# `@cached(ttl=60)` issue that reports an error is not about a function that fails.
# Retrying as behaviour ("retried", "after three attempts") or as code (`@retry`,
# `retry(`, `attempts=`); not the noun in "the retry button" or "my first attempt".
_RETRIES = re.compile(
    r"(?i)\b(?:retr(?:ies|ied|ying)|attempts)\b|@\w*retry|"
    r"\b\w*retr(?:y|ies)\w*\s*[(=]|\b\w*attempts?\w*\s*="
)


def failing(task: Task) -> bool:
    """Whether the issue is about a decorated function that fails a number of times or
    is retried: the premise of the test written here."""
    return bool(_TIMES.search(task.words) or _RETRIES.search(task.words))


_COUNT = {"once": 1, "twice": 2, "two": 2, "three": 3, "four": 4, "five": 5}

# "... should raise", "must still fail": the issue wants the error through.
_SHOULD_RAISE = re.compile(
    r"(?i)\b(?:should|must|is expected to|ought to)\s+(?:still\s+)?"
    r"(?:raise|fail|throw|propagate)"
)


def failures(task: Task) -> int:
    """How often the issue's function fails before it works: 2 for "fails twice"
    (told "the first times", a small model writes a function that fails once, which
    misses a bug that shows only from the second failure); 2 when unsaid."""
    m = _TIMES.search(task.words)
    if m is None:
        return 2
    said = m.group(1).lower().split()[0]
    return _COUNT.get(said) or int(said)


def times(n: int) -> str:
    """3 as "the first three times"."""
    if n == 1:
        return "the first time"
    word = {v: k for k, v in _COUNT.items()}.get(n, str(n))
    return f"the first {word} times"


def decorator_call(task: Task, name: str) -> ast.Call | ast.Name | None:
    """The issue's own use of the decorator ``name``: `@retry`, or a call with literal
    arguments only (`retry(attempts=3)`, `resilience.retry(3)`), rebuilt without its
    module; None when the issue writes none."""
    for m in re.finditer(r"`(@?)([^`\n]{1,200})`", task.words):
        try:
            node = ast.parse(m.group(2).strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if m.group(1) and isinstance(node, ast.Name) and node.id == name:
            return node
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if called != name or not all(literal(a) for a in [*node.args, *node.keywords]):
            continue
        rebuilt = ast.Call(func=ast.Name(id=name), args=node.args, keywords=node.keywords)
        if "`" not in ast.unparse(rebuilt) and len(ast.unparse(rebuilt)) <= MAX_CALL:
            return rebuilt
    return None


FLAKY_TEST = """\
def test_issue():
    calls = []

    @{decorator}
    def flaky():
        calls.append(1)
        if len(calls) <= {failures}:
            raise ValueError("failed")
        return "ok"

{check}"""
RETURNS = """\
    result = flaky()
    assert result == ...
    assert len(calls) == ..."""
RAISES = """\
    with pytest.raises(ValueError):
        flaky()
    assert len(calls) == ..."""


@dataclass(frozen=True)
class Start:
    """A test written for the model up to its expectations: what the prompt says, and
    the test with a ``...`` for each value the model gives."""

    prompt: str
    template: str
    header: str = ""  # the import of the code under test, above the filled test

    def filled(self, answer: str) -> str | None:
        """The test written for the model with the values the answer's test asserts in
        place of each ``...``, or None when it asserts none for one of them. The model
        writes values, not the test: a small model may keep the decorated function but
        replace `result = flaky()` by `pytest.raises(ValueError)` around the call (a
        test no fix could pass, and two answers that agree on it are a strong judge), or
        call `flaky()` twice."""
        module = parse(answer)
        if module is None:
            return None
        said: dict[str, str] = {}
        for node in ast.walk(module):
            if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)):
                continue
            test = node.test
            if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
                continue
            left = _SAME.get(ast.unparse(test.left), ast.unparse(test.left))
            if left in _FILLED and left not in said and literal(test.comparators[0]):
                said[left] = ast.unparse(test.comparators[0])
        lines = []
        for line in self.template.splitlines():
            head, dots, _ = line.partition(" == ...")
            if dots:
                left = head.strip().removeprefix("assert ")
                if left not in said:
                    return None
                line = f"{head} == {said[left]}"
            lines.append(line)
        return self.header + "\n".join(lines) + "\n"


# What the template asserts, and what else an answer may assert it as.
_FILLED = frozenset({"result", "len(calls)"})
_SAME = {"flaky()": "result"}


def flaky_test(name: str, task: Task) -> Start | None:
    """For a decorator the issue writes (`@retry(attempts=3)`) and says fails: a test
    of a function it decorates that raises as often as the issue says, then returns
    "ok", counting its calls; the model fills in what it should return (or that it
    raises, where the issue says it should) and how often it should be called."""
    if not failing(task):
        return None
    call = decorator_call(task, name)
    if call is None:
        return None
    n = failures(task)
    check = RAISES if _SHOULD_RAISE.search(task.words) else RETURNS
    template = FLAKY_TEST.format(decorator=ast.unparse(call), failures=n, check=check)
    return Start(
        f"`{name}` is a decorator. Write the test like this: `flaky` raises `ValueError` "
        f'{times(n)} it is called, then returns `"ok"`, and `calls` counts its calls:\n'
        f"```python\n{template}\n```\nReplace each `...` with what the issue says it should "
        "be once the bug is fixed (not what it is now: that is the bug).\n\n",
        template,
    )


def start_for(task: Task, idx: Index, suspects: Sequence[Suspect]) -> Start | None:
    """The test written for the model for the localiser's first suspect, if any."""
    if not suspects:
        return None
    top = suspects[0].symbol
    if top.kind != "function" or not is_decorator("\n".join(idx.lines(top))):
        return None
    start = flaky_test(top.qualname, task)
    if start is None:
        return None
    # Its own import: the one the prompt shows, not a guess among modules defining the name.
    return replace(start, header=f"from {module_name(top.path)} import {top.qualname}\n\n\n")
