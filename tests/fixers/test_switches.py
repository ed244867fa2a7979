"""The repair's switches (app/fixers/llm/repair/switches.py): names are checked, a switch
holds for one repair only, and the operator's setting reaches the fixer; and what the
``named`` mechanism reads (the failing tests a task names)."""

from __future__ import annotations

import asyncio

import pytest

from app.config import load_settings
from app.errors import ConfigError
from app.fixers.choose import make_fixer
from app.fixers.llm.repair import switches
from app.fixers.llm.repair.job import named_tests


def test_an_unknown_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown repair mechanism\(s\) togethr: .*together"):
        switches.parse("together, togethr")
    assert switches.parse(" together,mechanical-late ,") == {"together", "mechanical-late"}
    with pytest.raises(KeyError):
        switches.on("no-such-thing")


async def test_a_switch_holds_inside_its_repair_and_not_beside_it() -> None:
    seen: dict[str, bool] = {}

    async def repair(name: str, off: set[str]) -> None:
        with switches.turned_off(off):
            await asyncio.sleep(0.01)  # the other repair runs meanwhile
            seen[name] = switches.on("together")

    await asyncio.gather(repair("a", {"together"}), repair("b", set()))
    assert seen == {"a": False, "b": True}
    assert switches.on("together")  # nothing stays off after


def test_the_setting_reaches_the_fixer_and_a_typo_stops_it(tmp_path: object) -> None:
    settings = load_settings(
        llm_model="m",
        llm_base_url="http://127.0.0.1:9",
        llm_repair_without="together,mechanical-late",
    )
    fixer = make_fixer("llm", settings, strategy="repair")
    assert fixer.repair.without == {"together", "mechanical-late"}  # type: ignore[attr-defined]
    wrong = settings.model_copy(update={"llm_repair_without": "togetherr"})
    with pytest.raises(ConfigError, match="PATCHWARDEN_LLM_REPAIR_WITHOUT: unknown"):
        make_fixer("llm", wrong, strategy="repair")


@pytest.mark.parametrize(
    ("words", "named"),
    [
        # a red check's own words: ids as pytest prints them, one parametrized
        (
            "FAILED tests/test_dates.py::TestParse::test_parse_iso - AssertionError\n"
            "FAILED tests/test_dates.py::test_round[3]",
            ["tests.test_dates.TestParse::test_parse_iso", "tests.test_dates::test_round[1]"],
        ),
        # a name is a whole word: `test_parse_iso` is not `test_parse`
        ("test_parse_iso8601 fails", []),
        # a test of a module that no longer imports names the module by its path
        ("FAILED tests/test_locale.py::test_month_names", ["tests.test_locale::test_month_names"]),
        ("ERROR tests/test_io.py::test_read - ImportError", ["tests.test_io"]),
        ("nothing named", []),
    ],
)
def test_the_failing_tests_a_task_names_are_found_by_their_own_name(
    words: str, named: list[str]
) -> None:
    failing = [
        "tests.test_dates.TestParse::test_parse_iso",
        "tests.test_dates::test_round[1]",
        "tests.test_dates::test_parse",
        "tests.test_locale::test_month_names",
        "tests.test_io",
        "tests.io",
    ]
    assert named_tests(failing, words) == named
