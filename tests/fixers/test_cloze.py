"""Cloze rounds: which statements a repair hides in turn, and what the model is shown.

The project is a small one written here (a module of the shapes a repair meets: a guard
then arithmetic, a loop inside a decorator, a helper, module constants, a method)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.fixers.llm.localize import index
from app.fixers.llm.repair import hidden_line
from app.fixers.llm.repair.prompt import repair_prompt
from app.fixers.llm.repair.splice import target_of
from app.sessions.task import Document, Task

SHOP = {
    "shop/__init__.py": "",
    "shop/listing.py": """\
def rows_on(rows, number: int, size: int = 20):
    \"\"\"The rows shown on page ``number`` (counted from 1).\"\"\"
    if number < 1:
        raise ValueError("pages are counted from 1")
    first = number * size
    return rows[first : first + size]


def link(root: str, tail: str) -> str:
    return root + "/" + tail if not root.endswith("/") else root + tail
""",
    "shop/again.py": """\
import functools
import time


def again(tries: int = 3, pause: float = 0.0, errors=(Exception,)):
    \"\"\"Call the function up to ``tries`` times in all until it does not raise.\"\"\"
    if tries < 1:
        raise ValueError("tries must be at least 1")

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            for n in range(1, tries):
                try:
                    return fn(*args, **kwargs)
                except errors:
                    if n == tries - 1:
                        raise
                    time.sleep(pause)
        return inner

    return wrap
""",
    "shop/codes.py": """\
import re

CODE = re.compile(r"^[A-Z0-9_-]+:[0-9]+$")
UNITS = [(1000, "k"), (100, "h"), (10, "d"), (1, "u")]


def parts(code: str) -> list[int]:
    return [int(p) for p in code.strip().lstrip("c").split(".")]


def later(code: str, other: str) -> bool:
    return parts(code) > parts(other)


def valid(code: str) -> bool:
    return CODE.match(code) is not None


def spelled(n: int) -> str:
    out = ""
    for value, letter in UNITS:
        while n >= value:
            out += letter
            n -= value
    return out
""",
    "shop/stock.py": """\
class Shelf:
    def __init__(self, rate, room, clock):
        self.rate, self.room, self.clock = rate, room, clock
        self.items, self.seen = room, clock()

    def _restock(self):
        now = self.clock()
        self.items = min(self.room, self.items + (now - self.seen) * self.rate)
        self.seen = now
""",
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shop")
    for rel, text in SHOP.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _target(root: Path, name: str) -> tuple[hidden_line.Index, hidden_line.Target]:
    idx = index(root)
    symbol = next(s for s in idx.symbols if s.name == name)
    target = target_of(idx, symbol)
    assert target is not None
    return idx, target


def _hidden(root: Path, name: str) -> list[str]:
    """The lines each mask hides, as written in the file."""
    idx, target = _target(root, name)
    lines = idx.sources[target.symbol.path].splitlines()
    return [
        " ".join(x.strip() for x in lines[m.first - 1 : m.last])
        for m in hidden_line.masks(idx, target)
    ]


@pytest.mark.parametrize(
    ("name", "wrong"),
    [
        ("rows_on", "first = number * size"),
        ("link", 'return root + "/" + tail if not root.endswith("/") else'),
        ("again", "for n in range(1, tries):"),
        ("again", "if n == tries - 1:"),
        # In a helper the function calls, and in a constant the function reads.
        ("later", 'return [int(p) for p in code.strip().lstrip("c").split(".")]'),
        ("valid", 'CODE = re.compile(r"^[A-Z0-9_-]+:[0-9]+$")'),
        ("spelled", 'UNITS = [(1000, "k"), (100, "h")'),  # literals
    ],
)
def test_the_wrong_statement_is_among_those_hidden_in_turn(
    shop: Path, name: str, wrong: str
) -> None:
    hidden = _hidden(shop, name)
    assert any(h.startswith(wrong) for h in hidden), hidden
    assert len(hidden) <= hidden_line.MAX_MASKS


def test_the_docstring_nested_defs_and_decorators_are_never_hidden(shop: Path) -> None:
    hidden = _hidden(shop, "again")
    assert not any(h.startswith(('"""', "def ", "@")) for h in hidden), hidden
    # A header is hidden without its body: the `for` line alone, not the `try` under it.
    assert "for n in range(1, tries):" in hidden


def test_the_prompt_hides_the_line_and_keeps_the_rest(shop: Path) -> None:
    idx, target = _target(shop, "rows_on")
    span = next(
        m
        for m in hidden_line.masks(idx, target)
        if "first =" in idx.sources[target.symbol.path].splitlines()[m.first - 1]
    )
    task = Task("page 1 starts at row 21", documents=(Document("issue #1 body", "number=1"),))
    prompt = repair_prompt(task, idx, shop, target, [], None, [], mask=span)[-1]["content"]
    code = prompt.split("```python\n")[1].split("```")[0]
    assert "number * size" not in code
    assert "    first = ???\n" in code  # the frame is kept: a value is asked for
    assert "return rows[first : first + size]" in code  # the rest, as it is
    assert 'raise ValueError("pages are counted from 1")' in code
    assert "Below, `???` hides what one line of `rows_on` computes" in prompt
    assert prompt.endswith(
        "the whole function, with the same name and parameters and `???` replaced by the "
        "right code (one line or more), in one ```python block, nothing else."
    )


def test_a_line_hidden_in_a_helper_asks_for_the_helper(shop: Path) -> None:
    idx, target = _target(shop, "later")
    lines = idx.sources[target.symbol.path].splitlines()
    span = next(m for m in hidden_line.masks(idx, target) if "split" in lines[m.first - 1])
    task = Task("c1.10 is not later than c1.9")
    prompt = repair_prompt(task, idx, shop, target, [], None, [], mask=span)[-1]["content"]
    assert ".split(" not in prompt.split("The bug is probably")[1].split("It calls")[0]
    assert "return parts(code) > parts(other)" in prompt  # the function, shown whole
    assert "hides what one line of `parts` computes" in prompt
    assert "    return ???\n" in prompt
    assert prompt.endswith(
        "Write `parts` whole, with `???` replaced by the right code (one line or more), in "
        "one ```python block, nothing else."
    )


def test_a_span_outside_the_lines_leaves_them_as_they_are() -> None:
    lines = ["def f():", "    return 1"]
    assert hidden_line.hide(lines, 10, hidden_line.Mask(3, 3, "return ???")) == lines
    assert hidden_line.hide(lines, 10, None) == lines
    assert hidden_line.hide(lines, 10, hidden_line.Mask(11, 11, "return ???")) == [
        "def f():",
        "    return ???",
    ]


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("again", "for n in ???:"),
        ("again", "if ???:"),
        ("link", "return ???"),
        ("_restock", "self.items = ???"),
    ],
)
def test_a_hidden_statement_keeps_its_frame(shop: Path, name: str, shown: str) -> None:
    idx, target = _target(shop, name)
    assert shown in [m.shown for m in hidden_line.masks(idx, target)]


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
    monkeypatch.setattr(hidden_line, "MAX_MASKS", 20)
    found = {m.first: m.shown for m in hidden_line.masks(idx, target)}
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
