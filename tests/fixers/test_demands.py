"""What an issue says the code must raise (app/fixers/llm/repair/demands.py), read from the
project's own eval tasks' issue texts, and whether a change names it."""

from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path

import pytest

from app.fixers.llm.localize import index
from app.fixers.llm.repair.candidates import candidates_of
from app.fixers.llm.repair.demands import demanded, unmet
from app.fixers.llm.repair.splice import target_of

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.bench
def test_of_the_eval_tasks_issues_two_ask_for_a_raise_and_no_other_does() -> None:
    """Every issue of the eval (the project's tasks and the real projects'): parse-bool
    and inventory-negative ask for an exception; six-ensure-text says what is raised now
    ("raises `UnicodeDecodeError` instead of"), retry-count that it "still raises"."""
    asked = {}
    for toml in sorted(BENCH.glob("*_tasks/*/task.toml")):
        spec = tomllib.loads(toml.read_text())
        repo = toml.parent / "repo"  # a real project's task has its sdist instead
        known = index(repo).defines if repo.is_dir() else {}
        asked[toml.parent.name] = demanded([spec["title"], spec.get("issue", "")], known)
    assert len(asked) >= 29
    assert {k: v for k, v in asked.items() if v} == {
        "inventory-negative": {"OutOfStock"},
        "parse-bool": {"ValueError"},
    }


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Anything else should raise ValueError naming the variable.", {"ValueError"}),
        ("It must fail by raising `errors.OutOfStock`.", set()),  # not "raise" after it
        ("It should also raise `errors.OutOfStock`.", {"OutOfStock"}),
        ("It should refuse: raise a `TypeError`, as `int` does.", {"TypeError"}),
        ("`Shop.remove` should\nrefuse more than the stock: raise `OutOfStock`.", {"OutOfStock"}),
        ("It should not raise ValueError.", set()),
        ("It shouldn't raise `KeyError` for a missing key.", set()),
        ("I don't think it should raise ValueError.", set()),
        ("It should stop raising DeprecationWarning.", set()),
        ("It should return None instead of raising KeyError.", set()),
        ("It must return None rather than raise `KeyError`.", set()),
        ("Should it raise ValueError?", set()),
        ("It should either return None or raise KeyError.", set()),
        ("It should raise a TypeError or ValueError.", set()),
        ("It should be able to raise ValidationError.", set()),  # three words between
        ("It should raise ValueErrors.", set()),  # no such exception
        ("It should raise an HTTP 400 error.", set()),
        ("It should raise an Exception.", set()),  # any would do
        ("We should raise this with upstream.", set()),  # not a class
        ("It should work. Then raise ValueError, as it does.", set()),  # another sentence
        ("Repro: raise KeyError in the callback.", set()),  # no "should" before
        # A pasted traceback asks for nothing: code blocks are not the reporter's words.
        ("It should return 0 for empty input:\n\n```\n    raise ValueError('x')\n```\n", set()),
        ("> It should raise KeyError.\n\nThat was the old docs.", set()),  # a quote
    ],
)
def test_what_a_sentence_asks_to_be_raised(text: str, names: set[str]) -> None:
    assert demanded([text], known=["OutOfStock"]) == names


def test_a_class_of_the_repository_is_an_exception_and_the_title_is_read_apart() -> None:
    assert demanded(["It should raise `OutOfStock`."], known=["OutOfStock"]) == {"OutOfStock"}
    assert demanded(["It should raise `OutOfStock`."]) == set()
    # Joined with one newline, the title and the body's first line read as one sentence.
    title, body = "load() should handle missing keys", "It crashes: raise KeyError."
    assert demanded([title, body]) == set()


def test_a_change_names_the_exception_itself_or_through_a_function_it_calls(
    tmp_path: Path,
) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "errors.py").write_text(
        "class OutOfStock(Exception):\n    pass\n\n\nclass Sold(OutOfStock):\n    pass\n"
    )
    (tmp_path / "shop" / "inventory.py").write_text(
        "from shop.errors import OutOfStock as Gone\n\n\n"
        "def _check(stock, count):\n    if count > stock:\n        raise Gone(count)\n\n\n"
        "def remove(stock, count):\n    return stock - count\n"
    )
    idx = index(tmp_path)
    path = "shop/inventory.py"
    demands = {"OutOfStock"}
    silent = "def remove(stock, count):\n    return max(0, stock - count)\n"
    itself = "def remove(stock, count):\n    if count > stock:\n        raise OutOfStock()\n"
    aliased = "def remove(stock, count):\n    if count > stock:\n        raise Gone()\n"
    subclass = "def remove(stock, count):\n    if count > stock:\n        raise Sold()\n"
    through = "def remove(stock, count):\n    _check(stock, count)\n    return stock - count\n"
    assert unmet(demands, [silent], idx, path=path) == ["OutOfStock"]
    assert unmet(demands, [itself], idx, path=path) == []
    assert unmet(demands, [aliased], idx, path=path) == []
    assert unmet(demands, [aliased], idx, path="shop/errors.py") == ["OutOfStock"]
    assert unmet(demands, [subclass], idx, path=path) == []
    assert unmet(demands, [through], idx, path=path) == []
    assert unmet(demands, [silent, "LIMIT = OutOfStock"], idx, path=path) == []  # a constant


def test_a_change_that_raises_without_naming_the_exception_is_still_tried(
    tmp_path: Path,
) -> None:
    """An ordinary issue: "anything that is not a number should raise ValueError".
    `return int(text)` raises it without naming it: it must run, after the change that
    names it, never be dropped."""
    (tmp_path / "conv.py").write_text(
        "def to_int(text):\n    if not text.strip().isdigit():\n        return 0\n"
        "    return int(text)\n"
    )
    idx = index(tmp_path)
    (symbol,) = [s for s in idx.symbols if s.name == "to_int"]
    target = target_of(idx, symbol)
    assert target is not None
    implicit = "```python\ndef to_int(text):\n    return int(text)\n```"
    explicit = (
        "```python\ndef to_int(text):\n    if not text.strip().isdigit():\n"
        "        raise ValueError(text)\n    return int(text)\n```"
    )
    dropped: Counter[str] = Counter()
    found = candidates_of(idx, target, [implicit, explicit], "", dropped,
                          demands=frozenset({"ValueError"}))  # fmt: skip
    assert [c.silent for c in found] == [False, True]
    assert "raise ValueError" in found[0].function
    assert found[1].function.strip().endswith("return int(text)")
    assert sum(dropped.values()) == 0
