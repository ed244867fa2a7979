"""Cloze rounds: which statements a repair hides in turn, and what the model is shown.

The projects are the eval's own (bench/agent_tasks), read as the repair reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.fixers.llm import cloze
from app.fixers.llm.localize import index
from app.fixers.llm.repair_prompt import repair_prompt
from app.fixers.llm.splice import target_of
from app.sessions.task import Document, Task

TASKS = Path(__file__).parents[2] / "bench" / "agent_tasks"


def _target(task: str, name: str) -> tuple[cloze.Index, cloze.Target]:
    idx = index(TASKS / task / "repo")
    symbol = next(s for s in idx.symbols if s.name == name)
    target = target_of(idx, symbol)
    assert target is not None
    return idx, target


def _hidden(task: str, name: str) -> list[str]:
    """The lines each mask hides, as written in the file."""
    idx, target = _target(task, name)
    lines = idx.sources[target.symbol.path].splitlines()
    return [
        " ".join(x.strip() for x in lines[m.first - 1 : m.last]) for m in cloze.masks(idx, target)
    ]


@pytest.mark.parametrize(
    ("task", "name", "wrong"),
    [
        ("paginate-offset", "paginate", "start = page * per_page"),
        ("url-join", "join_url", 'return base + "/" + path if not base.endswith("/") else'),
        ("retry-count", "retry", "for attempt in range(1, attempts):"),
        ("retry-count", "retry", "if attempt == attempts - 1:"),
        ("slug-accents", "slugify", 'words = re.split(r"[^a-z0-9]+", title.lower())'),
        # In a helper the function calls, and in a constant the function reads.
        ("version-compare", "is_newer", 'return version.strip().lstrip("v").split(".")'),
        ("email-plus", "is_valid_email", 'EMAIL = re.compile(r"^[A-Za-z0-9._-]+@'),
        ("roman-subtractive", "to_roman", 'VALUES = [(1000, "M"), (500, "D")'),  # literals
    ],
)
def test_the_wrong_statement_is_among_those_hidden_in_turn(
    task: str, name: str, wrong: str
) -> None:
    hidden = _hidden(task, name)
    assert any(h.startswith(wrong) for h in hidden), hidden
    assert len(hidden) <= cloze.MAX_MASKS


def test_the_docstring_nested_defs_and_decorators_are_never_hidden() -> None:
    hidden = _hidden("retry-count", "retry")
    assert not any(h.startswith(('"""', "def ", "@")) for h in hidden), hidden
    # A header is hidden without its body: the `for` line alone, not the `try` under it.
    assert "for attempt in range(1, attempts):" in hidden


def test_the_prompt_hides_the_line_and_keeps_the_rest() -> None:
    idx, target = _target("paginate-offset", "paginate")
    span = next(
        m
        for m in cloze.masks(idx, target)
        if "start =" in idx.sources[target.symbol.path].splitlines()[m.first - 1]
    )
    task = Task("page 1 starts at item 11", documents=(Document("issue #1 body", "page=1"),))
    prompt = repair_prompt(task, idx, TASKS, target, [], None, [], mask=span)[-1]["content"]
    code = prompt.split("```python\n")[1].split("```")[0]
    assert "page * per_page" not in code
    assert "    start = ???\n" in code  # the frame is kept: a value is asked for
    assert "return items[start : start + per_page]" in code  # the rest, as it is
    assert 'raise ValueError("pages are numbered from 1")' in code
    assert "Below, `???` hides what one line of `paginate` computes" in prompt
    assert prompt.endswith(
        "the whole function, with the same name and parameters and `???` replaced by the "
        "right code (one line or more), in one ```python block, nothing else."
    )


def test_a_line_hidden_in_a_helper_asks_for_the_helper() -> None:
    idx, target = _target("version-compare", "is_newer")
    lines = idx.sources[target.symbol.path].splitlines()
    span = next(m for m in cloze.masks(idx, target) if "split" in lines[m.first - 1])
    task = Task("1.10 is not newer than 1.9")
    prompt = repair_prompt(task, idx, TASKS, target, [], None, [], mask=span)[-1]["content"]
    assert ".split(" not in prompt.split("The bug is probably")[1].split("It calls")[0]
    assert "return parse(candidate) > parse(current)" in prompt  # the function, shown whole
    assert "hides what one line of `parse` computes" in prompt
    assert "    return ???\n" in prompt
    assert prompt.endswith(
        "Write `parse` whole, with `???` replaced by the right code (one line or more), in "
        "one ```python block, nothing else."
    )


def test_a_span_outside_the_lines_leaves_them_as_they_are() -> None:
    lines = ["def f():", "    return 1"]
    assert cloze.hide(lines, 10, cloze.Mask(3, 3, "return ???")) == lines
    assert cloze.hide(lines, 10, None) == lines
    assert cloze.hide(lines, 10, cloze.Mask(11, 11, "return ???")) == ["def f():", "    return ???"]


@pytest.mark.parametrize(
    ("task", "name", "shown"),
    [
        ("retry-count", "retry", "for attempt in ???:"),
        ("retry-count", "retry", "if ???:"),
        ("url-join", "join_url", "return ???"),
        ("token-bucket", "_refill", "self.tokens = ???"),
    ],
)
def test_a_hidden_statement_keeps_its_frame(task: str, name: str, shown: str) -> None:
    idx, target = _target(task, name)
    assert shown in [m.shown for m in cloze.masks(idx, target)]


MIXED = """\
def f(n, xs, size, flags):
    if n < 0: return -n
    for x in xs: total = x * 2
    a = g(1); b = g(2)
    flags |= n & 4
    if(n > size):
        y = n + 1
    elif n + 2 > 3:
        y = 2
    x: int = n * 2
    with open(n + "x") as fh:
        pass
    return n + 1


def g(n):
    return n
"""


def test_a_statement_sharing_its_line_is_never_hidden_and_frames_are_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hiding `return -n` of `if n < 0: return -n` would hide the `if`; `flags |= …` is
    not `flags = …`; `if(n > size):` is an `if`."""
    (tmp_path / "m.py").write_text(MIXED)
    idx = index(tmp_path)
    target = target_of(idx, next(s for s in idx.symbols if s.name == "f"))
    assert target is not None
    monkeypatch.setattr(cloze, "MAX_MASKS", 20)
    found = {m.first: m.shown for m in cloze.masks(idx, target)}
    assert not {2, 3, 4} & set(found)  # each shares its line with another statement
    assert found == {
        5: "flags |= ???",
        6: "if ???:",
        7: "y = ???",
        8: "elif ???:",
        10: "x: int = ???",
        11: "with ???:",
        13: "return ???",
    }
