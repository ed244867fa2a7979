"""The issue's own examples read without the model (app/fixers/llm/repair/examples.py): the
call, what the issue says it gives, what it should; the test the words give once the
call has run on the base; a model's assertion of the bug taken out of its test."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from app.fixers.llm.localize import Index, Suspect, Symbol
from app.fixers.llm.repair.contradictions import strip_contradictions
from app.fixers.llm.repair.examples import Example, example_test, examples
from app.fixers.llm.repair.testruns import with_imports
from app.sessions.task import Document, Task

IDX = Index(
    defines={
        "is_newer": ["versions.py"],
        "median": ["stats.py"],
        "take_nth": ["toolz/itertoolz.py"],
        "ensure_text": ["six.py"],
        "IniConfig": ["src/iniconfig/__init__.py"],
        "to_roman": ["numerals.py"],
        "count_words": ["textstats.py"],
        "format_duration": ["timefmt.py"],
        "date": ["app/models.py", "app/views.py"],  # two modules: never guessed
        "unique": ["collections_extra.py"],
    }
)
NAMES = [
    *("is_newer", "median", "take_nth", "ensure_text", "get", "to_roman", "count_words"),
    "unique",
]
SUSPECTS = [
    Suspect(Symbol(path="x.py", qualname=n, start=1, end=2, kind="function"), 1.0)
    for n in [*NAMES, "format_duration"]
]


def read(issue: str, *observed: Any, raised: str = "") -> list[Example]:
    """The examples of ``issue``, each given what the base gave (as ``observe`` would)."""
    found = examples(Task("t", documents=(Document("issue #1 body", issue),)), IDX, SUSPECTS)
    return [
        replace(e, value=v, raised=raised)
        if not isinstance(v, tuple)
        else replace(e, value=v[0], listed=True)
        for e, v in zip(found, observed, strict=True)
    ]


@pytest.mark.parametrize(
    ("issue", "observed", "test"),
    [
        # the bug's value quoted bare, a bool: the other bool (a "must compare" aside is no result)
        (
            '`versions.is_newer("1.10.0", "1.9.0")` returns False, so... Versions must compare '
            "number by number (`1.10 > 1.9`)",
            [False],
            "assert is_newer('1.10.0', '1.9.0') is True",
        ),
        # what it should be, after the value it has
        (
            "`stats.median([1, 2, 3, 4])` returns `3`. The median ... so it should be `2.5`.",
            [3],
            "assert median([1, 2, 3, 4]) == 2.5",
        ),
        # an unquoted string result; later examples in other words are not the expectation
        (
            "`timefmt.format_duration(3661)` gives `61m 1s`.\nIt should be `1h 1m 1s`. Under "
            "an hour stays (`90` -> `1m 30s`)",
            ["61m 1s"],
            "assert format_duration(3661) == '1h 1m 1s'",
        ),
        # an iterator: compared as its list
        (
            "`toolz.take_nth(2, [10, 20, 30, 40, 50])` gives `[20, 40]`. Its own docstring "
            "says\n`[10, 30, 50]`: every nth item",
            [([20, 40],)],
            "assert list(take_nth(2, [10, 20, 30, 40, 50])) == [10, 30, 50]",
        ),
        # a raise now, a value wanted
        (
            '`six.ensure_text(b"caf\\xe9", errors="replace")` raises `UnicodeDecodeError` '
            "instead of returning `'caf\\ufffd'`",
            [None],
            "assert ensure_text(b'caf\\xe9', errors='replace') == 'caf\ufffd'",
        ),
        # a method of an object the example builds; None is not what it should be
        (
            '`IniConfig("x.ini", data="[s]").get("s", "missing", default="fallback")` returns\n'
            "`None`. The default should be returned",
            [None],
            "assert IniConfig('x.ini', data='[s]').get('s', 'missing', default='fallback') "
            "is not None",
        ),
        # only what is wrong: not that
        (
            '`textstats.count_words("hello  world")` (two spaces) returns 3. Any run of '
            "whitespace should separate two words",
            [3],
            "assert count_words('hello  world') != 3",
        ),
    ],
)
def test_an_issues_example_gives_a_test_of_its_own_words(
    issue: str, observed: list[Any], test: str
) -> None:
    raised = "UnicodeDecodeError" if "raises" in issue else ""
    found = read(issue, *observed, raised=raised)
    imports, tests = example_test(found)
    assert tests == [f"def test_issue_example_1():\n    {test}\n"]
    assert len(imports) == 1
    assert imports[0].startswith("from ")


@pytest.mark.parametrize(
    ("issue", "observed", "why"),
    [
        # the base does not do what the issue says: the example is not understood
        ("`stats.median([1, 2, 3, 4])` returns `3`.", [2.5], "not confirmed"),
        # the base already gives what the issue asks for
        ("`stats.median([1, 2, 3, 4])` returns `3`, it should be `2.5`.", [2.5], "shows nothing"),
        # a result said to be right is not the bug
        ("`stats.median([1, 2, 3])` returns `2` correctly, but", [2], "right"),
        # no result quoted at all
        ("`stats.median([1, 2, 3, 4])` is wrong for even lists", [3], "nothing quoted"),
        # what it should be is of another kind than what it gives
        ("`to_roman(4)` should be `[1]`", ["IIII"], "another kind"),
    ],
)
def test_no_test_where_the_words_do_not_say_what_is_wrong(
    issue: str, observed: list[Any], why: str
) -> None:
    assert example_test(read(issue, *observed)) == ([], []), why


def test_only_literal_calls_of_suspects_are_examples() -> None:
    issue = (
        "`median(values)` and `os.system('x')` and `stats.median()` and "
        "`median([1, 2], key=lambda x: x)` and `date(2020, 1, 1)` and "
        "`stats.median(list(range(4)))` returns `1`"
    )
    found = examples(Task("t", documents=(Document("b", issue),)), IDX, SUSPECTS)
    assert [e.call for e in found] == ["median(list(range(4)))"]
    assert found[0].imports == ("from stats import median",)


def test_a_models_assertion_of_the_bug_is_taken_out() -> None:
    """roman-subtractive: the 1.5B model asserted `to_roman(4) == 'IV'` (right) and
    `to_roman(1994) == 'MDCCCCLXXXXIIII'` (the bug the issue quotes) in one test."""
    issue = (
        "`numerals.to_roman(4)` returns `IIII` and `to_roman(1994)` returns "
        "`MDCCCCLXXXXIIII`. 4 is `IV`"
    )
    found = read(issue, "IIII", "MDCCCCLXXXXIIII")
    source = (
        "from numerals import to_roman\n\n\ndef test_to_roman():\n"
        "    assert to_roman(4) == 'IV'\n"
        "    assert to_roman(1994) == (\n        'MDCCCCLXXXXIIII'\n    )\n"
        "    assert not to_roman(4) == 'IIII' or True\n"
    )
    kept, gone = strip_contradictions(source, found)
    assert gone == 1
    assert kept.splitlines()[4:8] == ["    assert to_roman(4) == 'IV'", "    pass", "", ""]
    assert strip_contradictions(kept, found) == (kept, 0)
    # `not f(x)` where the issue says f(x) returns False; an iterator compared to a list
    bools = read('`versions.is_newer("1.10.0", "1.9.0")` returns False', False)
    assert (
        strip_contradictions("def test():\n    assert not is_newer('1.10.0', '1.9.0')\n", bools)[1]
        == 1
    )
    assert (
        strip_contradictions("def test():\n    assert is_newer('1.10.0', '1.9.0')\n", bools)[1] == 0
    )
    nth = read("`toolz.take_nth(2, [10, 20, 30, 40, 50])` gives `[20, 40]`", ([20, 40],))
    assert (
        strip_contradictions(
            "def t():\n    assert take_nth(2, [10, 20, 30, 40, 50]) == [10, 30, 50]\n", nth
        )[1]
        == 1
    )
    assert (
        strip_contradictions(
            "def t():\n    assert list(take_nth(2, [10, 20, 30, 40, 50])) == [10, 30, 50]\n", nth
        )[1]
        == 0
    )


def test_an_assertion_through_names_is_read_as_what_they_hold() -> None:
    """dedupe-order: the model wrote `result = unique([...])`, `expected = ["b", "c",
    "a"]`, `assert result == expected` — another value than the issue asks for, so no
    fix could pass the reproduction (16 answers, none passed). Read through the names
    assigned once, it is taken out like a direct one; names assigned twice, or the
    right value, stay."""
    issue = '`collections_extra.unique(["b", "a", "b", "c"])` should be `["b", "a", "c"]`'
    found = read(issue, ["c", "a", "b"])
    wrong = (
        "def test_bug():\n    result = unique(['b', 'a', 'b', 'c'])\n"
        "    expected = ['b', 'c', 'a']\n    assert result == expected, 'order'\n"
    )
    kept, gone = strip_contradictions(wrong, found)
    assert gone == 1
    assert kept.splitlines()[3] == "    pass"
    reversed_ = wrong.replace("assert result == expected", "assert expected == result")
    assert strip_contradictions(reversed_, found)[1] == 1
    right = wrong.replace("['b', 'c', 'a']", "['b', 'a', 'c']")
    assert strip_contradictions(right, found) == (right, 0)
    twice = wrong.replace("    assert", "    expected = []\n    assert")
    assert strip_contradictions(twice, found) == (twice, 0)
    # changed in place after it was assigned: no longer what the assignment says
    grown = right.replace("['b', 'a', 'c']", "['b', 'a']").replace(
        "    assert", "    expected.append('c')\n    assert"
    )
    assert strip_contradictions(grown, found) == (grown, 0)
    after = "def test_bug():\n    assert unique(['b', 'a', 'b', 'c']) == expected\n"
    assert strip_contradictions(after + "expected = ['b', 'c', 'a']\n", found)[1] == 0


def test_a_test_gets_the_standard_library_names_it_forgot() -> None:
    """dateutil-within-delta: three tests of three used `date(...)` and `timedelta(...)`
    with no import, and died of a NameError before showing anything."""
    source = (
        "def test():\n    a = date(2023, 1, 1)\n    b = datetime.timedelta(seconds=1)\n"
        "    assert Decimal('1') and math.pi and timedelta(1)\n"
    )
    fixed = with_imports(source, Index(defines={"Decimal": ["money.py"]}))
    assert fixed.splitlines()[:5] == [
        "from money import Decimal",  # the repository's own name, not the stdlib's
        "from datetime import date",
        "import datetime",  # used as a module: `datetime.timedelta`
        "import math",
        "from datetime import timedelta",
    ]
    # `date` is ambiguous in IDX (two modules define it): not imported from the stdlib either
    assert "import date" not in with_imports("def test():\n    date(1, 1, 1)\n", IDX)


def test_the_body_says_more_than_the_title() -> None:
    """The title writes the call, the body what it gives and should: the body's reading
    is the example's; a None the issue asks for is asserted with `is` (ruff's E711 would
    flag `== None` in the patch)."""
    task = Task(
        "`stats.median([1, 2, 3, 4])` is wrong",
        documents=(
            Document("b", "`stats.median([1, 2, 3, 4])` raises `TypeError`, it should be `None`"),
        ),
    )
    found = examples(task, IDX, SUSPECTS)
    assert [(e.raises, e.expected) for e in found] == [("TypeError", None)]
    raised = replace(found[0], raised="TypeError")
    assert example_test([raised])[1] == [
        "def test_issue_example_1():\n    assert median([1, 2, 3, 4]) is None\n"
    ]
