"""A session result as the store keeps it (app/sessions/stored.py): under its size cap,
with what was cut said, and a version this code does not read refused with what to do."""

from __future__ import annotations

import json

import pytest

from app.sessions.result import SessionResultError, Step, TranscriptEntry
from app.sessions.stored import CUT_MARK, for_store, from_store
from tests.policy_helpers import result_for

ONE_LINE = "--- a/util.py\n+++ b/util.py\n@@ -1,2 +1 @@\n-import os\n x = 1\n"


def _big(transcript: int, output: int):  # type: ignore[no-untyped-def]
    result = result_for(ONE_LINE, fixer="llm", summary="rewrote parse")
    assert result.fix is not None
    said = [TranscriptEntry(role="assistant", content="x" * 1000) for _ in range(transcript)]
    fix = result.fix.model_copy(update={"transcript": said})
    step = Step(
        name="tests", phase="verify", argv=["pytest"], exit_code=1, duration_seconds=1.0,
        output="start of the output\n" + "y" * output + "\nthe failure at the end",
    )  # fmt: skip
    return result.model_copy(update={"fix": fix, "steps": [step]})


def test_a_small_result_is_kept_whole() -> None:
    result = _big(transcript=3, output=100)
    loaded = from_store(2, for_store(result, cap=100_000))
    assert loaded == result


def test_an_oversized_result_loses_the_transcript_first_and_says_so() -> None:
    result = _big(transcript=200, output=100)
    text = for_store(result, cap=50_000)
    assert len(text) <= 50_000
    loaded = from_store(2, text)
    assert loaded.fix is not None
    assert loaded.fix.transcript == []
    assert loaded.fix.summary == "rewrote parse"  # what the PR body needs stays
    assert loaded.steps == result.steps
    assert loaded.cut == "the model's transcript (over 50000 characters)"


def test_long_step_output_keeps_its_end_where_the_failure_is() -> None:
    result = _big(transcript=0, output=200_000)
    loaded = from_store(2, for_store(result, cap=50_000))
    (step,) = loaded.steps
    assert step.output.startswith(CUT_MARK)
    assert step.output.endswith("the failure at the end")
    assert step.output_truncated
    assert "the steps' output" in loaded.cut
    assert loaded.diff.unified == ONE_LINE


def test_a_repository_of_many_tests_loses_the_per_test_outcomes_and_keeps_the_counts() -> None:
    """Tens of thousands of test ids do not fit: the outcomes go last, the counts and
    the lists the score reads stay, and a score read again can only be stricter."""
    result = _big(transcript=0, output=10)
    assert result.tests is not None
    assert result.tests.head is not None
    many = {f"tests/test_{n}.py::test_case_{n}": "passed" for n in range(3000)}
    head = result.tests.head.model_copy(update={"outcomes": many})
    tests = result.tests.model_copy(update={"head": head, "fixed": ["t::x"]})
    loaded = from_store(2, for_store(result.model_copy(update={"tests": tests}), cap=20_000))
    assert loaded.tests is not None
    assert loaded.tests.head is not None
    assert loaded.tests.head.outcomes == {}
    assert loaded.tests.head.counts == head.counts
    assert loaded.tests.fixed == ["t::x"]
    assert loaded.cut.endswith("the tests' per-test outcomes (over 20000 characters)")


def test_a_result_that_cannot_fit_is_refused_not_stored_broken() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        for_store(_big(transcript=0, output=10), cap=500)


def test_a_version_this_code_does_not_read_is_refused_with_what_to_do() -> None:
    data = result_for(ONE_LINE).to_json()
    data["schema_version"] = 9
    with pytest.raises(SessionResultError, match="Re-run the job or upgrade"):
        from_store(9, json.dumps(data))
