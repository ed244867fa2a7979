"""A negative corpus: thirty ordinary issues, written for this test (none from the eval
sets), as users file them — what was called, what came back, what was expected, with
the words such issues use ("error", "fails", "raises", "still", "keep", "attempt",
"twice"). None asks for an exception to be raised, none says a value must keep
working, none is about a function retried or failing a number of times: the repair's
narrow triggers must stay silent on every one."""

from __future__ import annotations

import pytest

from app.fixers.llm.repair.decorator_tests import failing
from app.fixers.llm.repair.demands import demanded
from app.fixers.llm.repair.must_keep import kept_values
from app.sessions.task import Document, Task

ISSUES: list[tuple[str, str]] = [
    (
        "format_size(1024) shows bytes",
        "`format_size(1024)` returns `'1024 B'`. I expected `'1.0 KiB'`, as the docs say.",
    ),
    (
        "Error when the config file is empty",
        "Loading an empty `settings.toml` raises `KeyError: 'app'` from `load_config`. An "
        "empty file should give the defaults.",
    ),
    (
        "CSV export drops the last row",
        "With three rows, `export_csv(rows)` writes the header and two rows. I tried twice "
        "with different data: the last row is always missing.",
    ),
    (
        "parse_duration('1h30m') is wrong",
        "`parse_duration('1h30m')` gives `3600`; it should be `5400`. Minutes after hours "
        "are ignored.",
    ),
    (
        "Titles lose their accents",
        "`title_case('élan vital')` returns `'éLan Vital'`. It should return `'Élan Vital'`.",
    ),
    (
        "Sorting by date fails on None",
        "`sort_events(events)` fails with `TypeError: '<' not supported between instances "
        "of 'NoneType' and 'datetime'` when an event has no date. Events without a date "
        "should come last.",
    ),
    (
        "merge_dicts overwrites nested keys",
        "`merge_dicts({'a': {'x': 1}}, {'a': {'y': 2}})` returns `{'a': {'y': 2}}`; the "
        "nested dicts should be merged into `{'a': {'x': 1, 'y': 2}}`.",
    ),
    (
        "Word count counts punctuation",
        "`word_count('Hello, world!')` says 3. My first attempt was to strip the text "
        "myself, which works, but the function should count 2 words.",
    ),
    (
        "Cache key ignores keyword arguments",
        "With `@memoize`, calling `area(w=2, h=3)` and then `area(w=3, h=2)` gives the "
        "first result both times. The error is in how the key is built.",
    ),
    (
        "is_weekend is off by one",
        "`is_weekend(date(2024, 6, 8))` (a Saturday) returns `False`, and Monday returns `True`.",
    ),
    (
        "Truncate cuts words in half",
        "`truncate('the quick brown fox', 12)` returns `'the quick br…'`; it should stop at "
        "a word: `'the quick…'`.",
    ),
    (
        "Percentages above 100",
        "`progress(5, 4)` prints `125%`. A finished job that did more than planned should "
        "show `100%`.",
    ),
    (
        "Negative numbers in to_words",
        "`to_words(-3)` returns `'three'`. I would expect `'minus three'`.",
    ),
    (
        "Paths with spaces break the loader",
        "`load_plugin('my plugins/a.py')` still fails after the last release, with "
        "`FileNotFoundError`. Paths with spaces worked in 2.3.",
    ),
    (
        "Duplicate emails are accepted",
        "`Registry.add('A@x.org')` after `Registry.add('a@x.org')` adds a second user. "
        "Emails differ only in case here and should count as the same.",
    ),
    (
        "Median of an even list",
        "`median([1, 2, 3, 4])` returns `3`. The median of an even number of values is the "
        "mean of the middle two: `2.5`.",
    ),
    (
        "Slug keeps trailing dashes",
        "`slugify('Hello world!')` returns `'hello-world-'` with a dash at the end.",
    ),
    (
        "The retry button text is wrong",
        "The label for the retry button reads `Retyr`. `button_label('retry')` should give "
        "`'Retry'`.",
    ),
    (
        "Timeout is read in milliseconds",
        "`Client(timeout=5)` waits 5 ms instead of 5 s: requests error out immediately.",
    ),
    (
        "Version comparison",
        "`newer('1.10', '1.9')` is `False`. Versions should compare by number, not as text.",
    ),
    (
        "Empty list crashes average",
        "`average([])` raises `ZeroDivisionError`. It would be nicer to get `0.0` for no values.",
    ),
    (
        "Hex colours in lowercase",
        "`to_hex((255, 0, 128))` returns `'#FF0080'`; our style guide wants `'#ff0080'`.",
    ),
    (
        "Overlapping ranges are not merged",
        "`merge_ranges([(1, 3), (2, 5)])` returns both ranges unchanged. They overlap, so "
        "the result should be `[(1, 5)]`.",
    ),
    (
        "Leap years again",
        "`days_in_february(1900)` returns 29. 1900 was not a leap year.",
    ),
    (
        "Query string loses repeated keys",
        "`parse_query('a=1&a=2')` gives `{'a': '2'}`. Both values should be kept in a "
        "list: `{'a': ['1', '2']}`.",
    ),
    (
        "Invoice total rounding",
        "`Invoice.total()` of three items at 0.10 shows `0.30000000000000004`. Totals should "
        "be rounded to cents.",
    ),
    (
        "Table renderer pads wrongly",
        "`render_table([['a', 'bbb']])` aligns the second column one space too far to the "
        "right. The columns keep shifting as the first column grows.",
    ),
    (
        "Wrong plural",
        "`pluralize('box')` returns `'boxs'`. It should return `'boxes'`.",
    ),
    (
        "Log level from the environment is ignored",
        "Setting `LOG_LEVEL=debug` has no effect: `level_from_env()` returns `'INFO'`. The "
        "environment variable is compared in upper case only.",
    ),
    (
        "Chunks of uneven size",
        "`chunks([1, 2, 3, 4, 5], 2)` returns `[[1, 2], [3, 4]]` and loses the 5. The last "
        "chunk may be shorter: `[[1, 2], [3, 4], [5]]`.",
    ),
]


def _task(title: str, text: str) -> Task:
    return Task(title, instructions="fix this", documents=(Document("issue #1 body", text),))


def test_the_corpus_is_thirty_distinct_issues() -> None:
    assert len(ISSUES) == 30
    assert len({t for t, _ in ISSUES}) == 30


@pytest.mark.parametrize(("title", "text"), ISSUES, ids=[t for t, _ in ISSUES])
def test_no_narrow_trigger_fires_on_an_ordinary_issue(title: str, text: str) -> None:
    task = _task(title, text)
    assert demanded([title, text]) == frozenset(), "no exception is asked for"
    assert kept_values([title, text]) == [], "no value is said to keep working"
    assert not failing(task), "no function fails a number of times or is retried"
