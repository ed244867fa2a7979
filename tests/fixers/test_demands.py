"""What an issue says the code must raise (app/fixers/llm/demands.py), read from the
project's own eval tasks' issue texts, and whether a change names it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from app.fixers.llm.demands import demanded, unmet
from app.fixers.llm.localize import index

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_of_the_eval_tasks_issues_two_ask_for_a_raise_and_no_other_does() -> None:
    """Every issue of the eval (the project's tasks and the real projects'): parse-bool
    and inventory-negative ask for an exception; six-ensure-text says what is raised now
    ("raises `UnicodeDecodeError` instead of"), retry-count that it "still raises"."""
    asked = {}
    for toml in sorted(BENCH.glob("*_tasks/*/task.toml")):
        spec = tomllib.loads(toml.read_text())
        asked[toml.parent.name] = demanded(f"{spec['title']}\n{spec.get('issue', '')}")
    assert len(asked) >= 29
    assert {k: v for k, v in asked.items() if v} == {
        "inventory-negative": {"OutOfStock"},
        "parse-bool": {"ValueError"},
    }


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Anything else should raise ValueError naming the variable.", {"ValueError"}),
        ("It must fail by raising `errors.OutOfStock`.", {"OutOfStock"}),
        ("Should refuse: raise a `TypeError`; and `KeyError` is fine.", {"TypeError"}),
        ("It should not raise ValueError.", set()),
        ("It shouldn't raise `KeyError` for a missing key.", set()),
        ("It raises KeyError instead of returning None.", set()),
        ("It should return None instead of raising KeyError.", set()),
        ("It must return None rather than raise `KeyError`.", set()),
        ("We should raise this with upstream.", set()),  # not a class
        ("It should work. Then raise ValueError, as it does.", set()),  # another sentence
    ],
)
def test_what_a_sentence_asks_to_be_raised(text: str, names: set[str]) -> None:
    assert demanded(text) == names


def test_a_change_names_the_exception_itself_or_through_a_function_it_calls(
    tmp_path: Path,
) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "inventory.py").write_text(
        "from shop.errors import OutOfStock\n\n\n"
        "def _check(stock, count):\n    if count > stock:\n        raise OutOfStock(count)\n\n\n"
        "def remove(stock, count):\n    return stock - count\n"
    )
    idx = index(tmp_path)
    demands = {"OutOfStock"}
    silent = "def remove(stock, count):\n    return max(0, stock - count)\n"
    itself = "def remove(stock, count):\n    if count > stock:\n        raise OutOfStock()\n"
    through = "def remove(stock, count):\n    _check(stock, count)\n    return stock - count\n"
    assert unmet(demands, [silent], idx) == ["OutOfStock"]
    assert unmet(demands, [itself], idx) == []
    assert unmet(demands, [through], idx) == []
    assert unmet(demands, [silent, "LIMIT = OutOfStock"], idx) == []  # a constant it rewrote
