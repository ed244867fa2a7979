"""The reproduction probe (bench/repro_probe.py) tells a right test from a wrong one: each
test the scripted model answers runs in the sandbox on the task's bug and on its fix."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from openai import AsyncOpenAI

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import agent_eval  # noqa: E402  (bench/ is not a package)
import repro_probe  # noqa: E402

from app.fixers.llm.scripted import ScriptedModel, text  # noqa: E402

pytestmark = [
    pytest.mark.bench,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

START = """\
from resilience.retry import retry


def test_issue():
    calls = []

    @retry(attempts=3)
    def flaky():
        calls.append(1)
        if len(calls) <= 2:
            raise ValueError("failed")
        return "ok"

"""


def _answer(checks: str) -> str:
    return f"```python\n{START}{checks}```\n"


async def test_each_test_is_judged_on_the_bug_and_on_the_fix(tmp_path: Path) -> None:
    (task,) = agent_eval.load_tasks(names=["retry-count"])
    answers = [
        _answer('    assert flaky() == "ok"\n    assert len(calls) == 3\n'),  # right
        _answer("    assert len(calls) == 2\n"),  # never calls it: fails on both
        # the bug's behaviour asserted
        _answer("    with pytest.raises(ValueError):\n        flaky()\n"),
        _answer('    assert flaky() == "ok"\n    assert len(calls) == 4\n'),  # fails on both
        "I cannot write that test.",
    ]
    async with ScriptedModel([text(a) for a in answers]) as model:
        async with AsyncOpenAI(base_url=model.base_url, api_key="none") as client:
            row = await repro_probe.probe(task, len(answers), client, "scripted", tmp_path)
        prompts = [r.body["messages"][-1]["content"] for r in model.requests]
    assert row["right"] == 1
    assert row["kinds"] == {
        "right": 1,
        "fails on both": 2,
        "passes on the bug": 1,
        "no test": 1,
    }
    # After the first batch of three, the one kept test is the vote's, with no other
    # agreeing (five answers make no second batch).
    assert row["chosen"] == {1: ["right", False]}
    # the prompt the fixer writes, with the code it is about
    assert all("def retry(" in p for p in prompts)
