"""A session result as the store keeps it: JSON text under a size cap.

Later jobs of the same change (the merge job's final pull request body, the update
job's rerun) read the result on whichever host runs them, so it lives in the database
(``store.queue.save_result``), never on a worker's disk. The result is already redacted
when it is saved (the session masks what it found before anything is kept).

A result over the cap loses, in this order, the model's transcript, the steps' output
(each cut to its last lines), the diff's text and the tests' per-test outcomes (their
counts and the lists the score reads stay; a score read again from a cut record treats
no failure as one the base already had: stricter, never looser), until it fits;
``SessionResult.cut`` says what went, so a reader knows the record is partial.
"""

from __future__ import annotations

import json

from app.sessions.result import SessionResult

RESULT_CAP = 1_000_000  # characters of JSON text per result
STEP_TAIL = 2_000  # characters of a step's output kept when results are cut
CUT_MARK = "[... cut to fit the store's size cap]\n"


def for_store(result: SessionResult, cap: int = RESULT_CAP) -> str:
    """``result`` as JSON text of at most ``cap`` characters (see the module's docstring)."""
    text = json.dumps(result.to_json())
    cuts: list[str] = []
    for what, cut in (
        ("the model's transcript", _without_transcript),
        ("the steps' output", _step_tails),
        ("the diff's text", _without_diff_text),
        ("the tests' per-test outcomes", _without_outcomes),
    ):
        if len(text) <= cap:
            break
        result = cut(result)
        cuts.append(what)
        marked = result.model_copy(update={"cut": ", ".join(cuts) + f" (over {cap} characters)"})
        text = json.dumps(marked.to_json())
    if len(text) > cap:
        raise ValueError(f"a session result of {len(text)} characters does not fit in {cap}")
    return text


def from_store(version: int, body: str) -> SessionResult:
    """The result kept as ``body``; a schema version this code does not read is refused
    (``SessionResultError``, with what to do)."""
    data = json.loads(body)
    data.setdefault("schema_version", version)
    return SessionResult.load(data)


def _without_transcript(result: SessionResult) -> SessionResult:
    if result.fix is None:
        return result
    return result.model_copy(update={"fix": result.fix.model_copy(update={"transcript": []})})


def _step_tails(result: SessionResult) -> SessionResult:
    steps = [
        s.model_copy(update={"output": CUT_MARK + s.output[-STEP_TAIL:], "output_truncated": True})
        if len(s.output) > STEP_TAIL
        else s
        for s in result.steps
    ]
    return result.model_copy(update={"steps": steps})


def _without_diff_text(result: SessionResult) -> SessionResult:
    diff = result.diff.model_copy(update={"unified": "", "truncated": True})
    return result.model_copy(update={"diff": diff})


def _without_outcomes(result: SessionResult) -> SessionResult:
    tests = result.tests
    if tests is None:
        return result
    runs = {
        side: run.model_copy(update={"outcomes": {}})
        for side, run in (("base", tests.base), ("head", tests.head))
        if run is not None
    }
    return result.model_copy(update={"tests": tests.model_copy(update=runs)})
