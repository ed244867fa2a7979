"""Ordinary issues, written for this test in the words users write them (none of them is
a development task's): the repair's readers of an issue's words must not fire where the
words do not say what a test could check.

Two readers act on wording: the issue's own examples (app/fixers/llm/repair/examples.py:
a call quoted with literal arguments, what it gives now, what it should give, turned
into a test without the model) and the failing tests a task names
(:func:`app.fixers.llm.repair.job.named_tests`). On each issue below the first must
write no test, whatever the call gave on the base, and the second must name none of
the repository's failing tests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from app.fixers.llm.localize import Index, Suspect, Symbol
from app.fixers.llm.repair.examples import Example, example_test, examples
from app.fixers.llm.repair.job import named_tests
from app.sessions.task import Document, Task

FUNCTIONS = {
    "slugify": "text/slug.py",
    "parse_duration": "timeparse.py",
    "chunk": "itertools_extra.py",
    "render": "templates/engine.py",
    "retry": "net/retry.py",
    "to_snake": "text/case.py",
    "load_config": "config/loader.py",
    "merge": "config/merge.py",
    "round_price": "money.py",
    "paginate": "web/pages.py",
    "get_user": "accounts/users.py",
    "sort_versions": "versions.py",
    "strip_tags": "text/html.py",
    "is_weekend": "calendar_util.py",
    "percent": "stats.py",
    "split_name": "people.py",
}
IDX = Index(defines={name: [path] for name, path in FUNCTIONS.items()})
SUSPECTS = [
    Suspect(Symbol(path=path, qualname=name, start=1, end=2, kind="function"), 1.0)
    for name, path in FUNCTIONS.items()
]
RAISES = object()  # the call raised on the base (the exception's name follows)

# (the issue, what its first quoted call gave on the base: a value, or RAISES and a name)
ORDINARY: list[tuple[str, tuple[Any, ...]]] = [
    # no value said at all
    ("`slugify('Ärger im Büro')` drops the umlauts instead of transliterating them.", ("-rger",)),
    ("Calling `chunk([1, 2, 3], 0)` hangs forever. It should raise instead.", (None,)),
    ("`retry(print, attempts=3)` is slow: is a sleep between attempts really needed?", (None,)),
    ("`paginate([], 1)` looks odd in the UI, see the screenshot.", ([],)),
    ("Since 2.3 `load_config('app.toml')` is noticeably slower on big files.", ({},)),
    ("`get_user(0)` works, but the log says the cache missed. Expected a cache hit here.", (None,)),
    # a value quoted, but not as what the call gives or should give
    (
        "`parse_duration('1h30m')` raises `ValueError`; the message should mention "
        "`minutes` so users know which part is wrong.",
        (RAISES, "ValueError"),
    ),
    (
        "`render('missing.html')` returns `None` when the template is missing. The docs say "
        "it should raise `TemplateNotFound`.",
        (None,),
    ),
    (
        "`merge({'a': 1}, {'a': 2})` raises `KeyError`. Expected behaviour: same as `dict.update`.",
        (RAISES, "KeyError"),
    ),
    (
        "`round_price(2.675)` raises `TypeError` on Python 3.12. I expected it to use "
        "`decimal.Decimal` internally.",
        (RAISES, "TypeError"),
    ),
    (
        "`sort_versions(['1.10', '1.9'])` raises `IndexError`, should it use `packaging.version`?",
        (RAISES, "IndexError"),
    ),
    (
        "`strip_tags('<b>x</b>')` raises `AttributeError`. The changelog says `strip_tags` "
        "is supported since 1.2.",
        (RAISES, "AttributeError"),
    ),
    # the value quoted is right, or a question, or someone else's
    ("`percent(1, 4)` returns `25.0` as expected, but `percent(1, 3)` is ugly.", (25.0,)),
    ("`is_weekend('2024-06-01')` returns `True` correctly; Sundays are the problem.", (True,)),
    (
        "Does `to_snake('HTTPServer')` return `http_server`? The README is unclear.",
        ("http_server",),
    ),
    (
        "`split_name('Ada Lovelace')` gives `('Ada', 'Lovelace')`, fine. Middle names break.",
        (("Ada", "Lovelace"),),
    ),
    # what it gives, said loosely: nothing a test can take
    ("`paginate(list(range(5)), 2)` returns an empty page for the last items.", ([],)),
    ("`chunk([1, 2, 3], 2)` returns a generator, which surprised me.", ([[1, 2], [3]],)),
    ("`slugify('a  b')` returns something with two dashes.", ("a--b",)),
    ("`percent(0, 0)` returns nan sometimes.", (0.0,)),
    # the call is not literal, or not the repository's
    ("`slugify(title)` fails for titles with emoji; should be `untitled`.", ("",)),
    ("`os.path.join('a', 'b')` returns `a\\b` on Windows; should be `a/b`.", ("a/b",)),
    ("`load_config(path=Path('x'))` should return `{}` for an empty file.", ({},)),
    # what it should do is to raise, not a value
    ("`chunk([1], -1)` returns `[]`; it should throw `ValueError` for a negative size.", ([],)),
    (
        "`get_user(42)` returns `None` for deleted users; it should raise `UserDeleted` so "
        "callers notice.",
        (None,),
    ),
    # the call raises now, and what follows a cue names code, not a value
    (
        "`percent(1, 0)` raises `ZeroDivisionError`; I expected `percent` to handle zero totals.",
        (RAISES, "ZeroDivisionError"),
    ),
    (
        "`split_name('Cher')` raises `ValueError`. Mononyms should be supported, see `people.rst`.",
        (RAISES, "ValueError"),
    ),
    (
        "`load_config('a.toml')` raises `FileNotFoundError` when the file is a symlink; "
        "expected it to follow `os.path.realpath`.",
        (RAISES, "FileNotFoundError"),
    ),
    (
        "`to_snake('')` raises `IndexError` on an empty string; the README says `to_snake` "
        "accepts any string.",
        (RAISES, "IndexError"),
    ),
    (
        "`merge({}, None)` raises `AttributeError`, should be `TypeError`.",
        (RAISES, "AttributeError"),
    ),
]


def task_of(issue: str) -> Task:
    return Task("an issue", documents=(Document("issue #7 body", issue),))


@pytest.mark.parametrize(("issue", "seen"), ORDINARY, ids=[f"issue-{n}" for n in range(30)])
def test_an_ordinary_issue_gives_no_test_its_words_do_not_say(
    issue: str, seen: tuple[Any, ...]
) -> None:
    found = examples(task_of(issue), IDX, SUSPECTS)
    assert example_test(observed(found, seen)) == ([], []), found


def observed(found: list[Example], seen: tuple[Any, ...]) -> list[Example]:
    """Each example as ``observe`` would leave it, had its call given ``seen`` on the base."""
    if seen[0] is RAISES:
        return [replace(e, raised=seen[1], shown=f"raises {seen[1]}: x") for e in found]
    return [replace(e, value=seen[0], shown=repr(seen[0])) for e in found]


@pytest.mark.parametrize(
    ("issue", "seen", "test"),
    [
        # not raising is what it should do: the value it should give instead is the test
        (
            "`get_user(7)` raises `KeyError`; it should not raise but return `None`.",
            (RAISES, "KeyError"),
            "assert get_user(7) is None",
        ),
        (
            "`percent(1, 0)` raises `ZeroDivisionError`. It should never throw, expected `0.0`.",
            (RAISES, "ZeroDivisionError"),
            "assert percent(1, 0) == 0.0",
        ),
        # a value written bare is a value, not code, even where the call raises now
        (
            "`to_snake('a b')` raises `TypeError`; expected `a_b c`.",
            (RAISES, "TypeError"),
            "assert to_snake('a b') == 'a_b c'",
        ),
    ],
)
def test_what_an_issue_wants_instead_of_a_raise_is_its_test(
    issue: str, seen: tuple[Any, ...], test: str
) -> None:
    found = observed(examples(task_of(issue), IDX, SUSPECTS), seen)
    assert example_test(found)[1] == [f"def test_issue_example_1():\n    {test}\n"]


@pytest.mark.parametrize(
    "issue",
    [
        "`chunk([1], -1)` returns `[]`; it should have thrown `ValueError` for a negative size.",
        "`chunk([1], -1)` returns `[]`, it should fail with `ValueError`.",
        "`chunk([1], -1)` returns `[]`; expected a `ValueError` to be raised.",
    ],
)
def test_an_issue_that_wants_a_raise_gives_no_value_test(issue: str) -> None:
    found = observed(examples(task_of(issue), IDX, SUSPECTS), ([],))
    assert example_test(found) == ([], [])


def test_the_corpus_is_thirty_issues() -> None:
    assert len(ORDINARY) == 30
    assert len({issue for issue, _ in ORDINARY}) == 30


@pytest.mark.parametrize(("issue", "seen"), ORDINARY, ids=[f"issue-{n}" for n in range(30)])
def test_an_ordinary_issue_names_no_failing_test(issue: str, seen: tuple[Any, ...]) -> None:
    failing = [
        *(f"tests/test_{name}.py::test_{name}" for name in FUNCTIONS),
        "tests/test_config.py::test_load[toml]",
        "tests.test_broken",
    ]
    assert named_tests(failing, issue) == []


def test_a_red_check_that_names_its_test_is_read() -> None:
    """The reader the corpus holds back does fire where the words name a test."""
    failing = ["tests/test_case.py::test_to_snake[HTTPServer]", "tests/test_slug.py::test_slugify"]
    words = "CI failed on main: tests/test_case.py::test_to_snake[HTTPServer] (1 failed)"
    assert named_tests(failing, words) == failing[:1]


def test_an_issue_that_says_what_is_wrong_gives_its_test() -> None:
    """... and the examples' reader writes the test an issue's words do give."""
    issue = "`to_snake('getHTTP')` returns `get_h_t_t_p`; it should be `get_http`."
    found = [replace(e, value="get_h_t_t_p") for e in examples(task_of(issue), IDX, SUSPECTS)]
    assert example_test(found) == (
        ["from text.case import to_snake"],
        ["def test_issue_example_1():\n    assert to_snake('getHTTP') == 'get_http'\n"],
    )
