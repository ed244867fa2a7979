"""The llm fixer's repair strategy end to end: the real session (bubblewrap, the tests on
base and patch, ruff, bandit, semgrep, the score) against a scripted model over HTTP,
answering as a small model does — unparseable code, a renamed function, a test instead
of the fix, a change that breaks another test, and one right answer.

The project: ``fahrenheit_to_celsius`` multiplies by 9/5 where it should by 5/9, and no
test catches it, so the fixer must first have a test that shows the bug written."""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from app.fixers.llm.agent.fixer import AgentFixer
from app.fixers.llm.repair import switches
from app.fixers.llm.repair.fixer import RepairFixer
from app.fixers.llm.scripted import ScriptedModel, fail, text, tool
from app.fixers.llm.strategy import LlmFixer
from app.git import Remote
from app.localforge import LocalForge
from app.policy.score import Trigger, score_session
from app.publish.body import render_body
from app.sessions.result import RepairReport
from app.sessions.session import SessionRunner
from app.sessions.task import Budget, Document, SessionSpec, Task
from tests.conftest import INSTALLATION, REPO, Harness, make_project
from tests.fixers.test_fixer_llm import (  # noqa: F401 (fixtures)
    MakeClient,
    MakeModel,
    make_client,
    make_model,
    provider,
)
from tests.fixers.test_reproduction import RETRY

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

TEMPS = (
    "def fahrenheit_to_celsius(f):\n"
    '    """Degrees Fahrenheit in degrees Celsius."""\n'
    "    return (f - 32) * 9 / 5\n"
)
TESTS = (
    "from temps import fahrenheit_to_celsius\n\n\n"
    "def test_freezing():\n    assert fahrenheit_to_celsius(32) == 0\n"
)
KEY = "sk-local-test-key-0123456789"
ISSUE = "`fahrenheit_to_celsius(212)` returns 324.0; water boils at 100 degrees Celsius."
# No example a test could be written from without the model: no call with its result.
VAGUE = "`fahrenheit_to_celsius` is upside down: water boils at 100 degrees Celsius."


def block(code: str, prose: str = "") -> Any:
    return text(f"{prose}```python\n{code}```\n")


# Reproduction tests as a small model writes them: one that cannot import, one that
# asserts what the bug does (it passes on the base), one without its import (added).
REPRO_WRONG_IMPORT = block(
    "from temps import to_celsius\n\n\ndef test_boiling():\n    assert to_celsius(212) == 100\n"
)
REPRO_ASSERTS_THE_BUG = block(
    "from temps import fahrenheit_to_celsius\n\n\n"
    "def test_boiling():\n    assert fahrenheit_to_celsius(212) == 324.0\n"
)
REPRO_RIGHT = block("def test_boiling():\n    assert fahrenheit_to_celsius(212) == 100\n")
OFF_BY_ONE = block(
    "from temps import fahrenheit_to_celsius\n\n\n"
    "def test_boiling():\n    assert fahrenheit_to_celsius(212) == 101\n"
)
NO_TEST = text("The function looks right to me.")

UNPARSEABLE = block("def fahrenheit_to_celsius(f):\n    return (f - 32) * 5 /\n")
RENAMED = block("def f_to_c(f):\n    return (f - 32) * 5 / 9\n")
EDITS_THE_TEST = block(
    "def test_boiling():\n    assert True\n", prose="The test is wrong; use this one:\n"
)
BREAKS_FREEZING = block("def fahrenheit_to_celsius(f):\n    return f * 100 / 212\n")
RIGHT_CODE = (
    'def fahrenheit_to_celsius(f):\n    """Degrees Fahrenheit in degrees Celsius."""\n'
    "    return (f - 32) * 5 / 9\n"
)
RIGHT = block(RIGHT_CODE, prose="path: temps.py\n")


def fixed_right(result: Any) -> Any:
    """The session's fix, once it is checked to be the right change, patched."""
    assert result.status == "patched", (result.error, result.fix)
    fix = result.fix
    assert fix is not None
    assert fix.repair is not None
    assert "+    return (f - 32) * 5 / 9" in result.diff.unified
    return fix


def task(issue: str = ISSUE) -> Task:
    return Task(
        "fahrenheit_to_celsius is wrong",
        instructions="fix this",
        documents=(Document("issue #3 body", issue),),
    )


async def _repair(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
    *script: Any,
    samples: int,
    auto: bool = False,
    budget: Budget | None = None,
    issue: str = ISSUE,
    temps: str = TEMPS,
    files: dict[str, str] | None = None,
    without: frozenset[str] = frozenset(),
    prefill: bool = False,
) -> Any:
    """The session on the temps project (and ``files``) with ``script`` answering;
    ``auto``: the llm fixer's auto strategy (repair, then the agent) instead of repair
    alone; ``without``: mechanisms turned off; ``prefill``: answers start as asked."""
    project = make_project(
        tmp_path / "temps", {"temps.py": temps, "test_temps.py": TESTS, **(files or {})}
    )
    model = await make_model(*script)
    client = make_client(provider(model), retry_base_seconds=0.01)
    repair = RepairFixer(client, samples=samples, without=without, prefill=prefill)
    fixer = LlmFixer(repair=repair, agent=AgentFixer(client)) if auto else repair
    spec = SessionSpec(
        remote=Remote("octo/temps", str(project)), task=task(issue), budget=budget or Budget()
    )
    return await runner.run(spec, fixer), model


async def test_the_right_candidate_is_chosen_and_the_pull_request_says_why(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        REPRO_WRONG_IMPORT,
        REPRO_ASSERTS_THE_BUG,
        REPRO_RIGHT,
        UNPARSEABLE,
        RENAMED,
        BREAKS_FREEZING,
        EDITS_THE_TEST,
        BREAKS_FREEZING,  # twice: the most votes, and still out
        RIGHT,
        samples=6,
    )
    assert result.status == "patched", (result.error, result.fix)
    fix = result.fix
    assert fix is not None
    assert fix.ok
    report = fix.repair
    assert report is not None
    assert report.suspects[0].startswith("fahrenheit_to_celsius (temps.py:1-3)")
    assert report.reproduction == "tests/test_fahrenheit_to_celsius_issue.py"
    assert "fails on the base (AssertionError" in report.reproduction_note
    assert "1 of 3 samples" in report.reproduction_note
    assert (report.samples, report.candidates, report.passed) == (6, 2, 1)
    assert report.dropped == {"unparseable": 1, "renamed": 2, "duplicate": 1}
    assert report.failed == {"breaks": 1}
    assert report.target == "fahrenheit_to_celsius"

    # The patch: the function and the reproduction test, nothing else.
    assert sorted(f.path for f in result.diff.files) == [
        "temps.py",
        "tests/test_fahrenheit_to_celsius_issue.py",
    ]
    assert "+    return (f - 32) * 5 / 9" in result.diff.unified
    assert "from temps import fahrenheit_to_celsius" in result.diff.unified  # import added
    # Verification found it independently: the new test fails on the base code.
    assert result.tests is not None
    assert result.tests.broken == []
    assert any("test_boiling" in t for t in result.tests.reproduced)

    # What a reviewer reads.
    assert result.policy is not None
    score = score_session(result, result.policy, trigger=Trigger("comment"))
    assert score.decision == "review"  # a model's change: the default policy wants a person
    body = render_body(result, score, title="fahrenheit_to_celsius is wrong")
    assert "Rewrote `fahrenheit_to_celsius` in temps.py." in body
    assert "Reproduction: tests/test_fahrenheit_to_celsius_issue.py" in body
    assert "6 answers in 1 round, 2 distinct changes tested, 1 passed" in body
    assert "Chosen: 1 of 6 answers wrote this change" in body

    # The reproduction's prompt says what the issue's example gives now (run in the
    # sandbox): a small model asked for the right result otherwise copies the wrong one.
    first_prompt = model.requests[0].body["messages"][-1]["content"]
    assert "the issue's example gives this: that is the bug" in first_prompt
    observed = first_prompt.split("that is the bug, not the right result.\n")[1]
    assert observed.startswith('<untrusted-data id="')  # the repository's output: data
    assert "fahrenheit_to_celsius(212) -> 324.0\n</untrusted-data" in observed
    assert any(s.name == "repair-observe" for s in result.steps)

    # One prompt per round, the issue fenced in it, the first answer greedy.
    repair_requests = [r.body for r in model.requests if "Write the corrected" in str(r.body)]
    assert repair_requests[0]["temperature"] == 0.0
    assert all(r["temperature"] == 0.8 for r in repair_requests[1:])
    prompt = repair_requests[0]["messages"][-1]["content"]
    assert '<untrusted-data id="' in prompt
    assert "This test must pass (tests/test_fahrenheit_to_celsius_issue.py)" in prompt
    failing_now = prompt.split("It fails now:\n<untrusted-data")[1].split("</untrusted-data")[0]
    assert "E       assert 324.0 == 100" in failing_now
    assert "tests/test_fahrenheit_to_celsius_issue.py:" in failing_now  # its name in the patch


async def test_a_reproduction_that_fails_for_the_wrong_reason_is_not_kept(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    syntax_error = block("def test_boiling(:\n    assert fahrenheit_to_celsius(212) == 100\n")
    not_named = block(
        "from temps import fahrenheit_to_celsius\n\n\n"
        "def test_boiling():\n    assert fahrenheit_to_celsius(int('boiling')) == 100\n"
    )
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[REPRO_WRONG_IMPORT, syntax_error, not_named] * 3,  # a second and third batch
        samples=3,
        issue=VAGUE,
    )
    fix = result.fix
    assert fix is not None
    assert not fix.ok
    assert result.status == "failed"
    assert fix.reason is not None
    assert fix.reason.startswith("no verified fix: nothing shows the problem")
    assert fix.repair is not None
    note = fix.repair.reproduction_note
    assert "errored before it ran" in note  # the ImportError: collection
    assert "no test in the answer" in note  # the SyntaxError: never ran
    assert "ValueError the task does not name" in note
    assert fix.repair.reproduction is None
    assert fix.repair.samples == 0  # no repair was asked for
    assert result.diff.files == []  # nothing left behind
    # Nothing shown by the first three tests: three more were asked for, all hot, and
    # none kept: three more again, new seeds.
    assert len(model.requests) == 4
    assert [r.body.get("temperature") == 0.0 for r in model.requests] == [True] + [False] * 3
    assert [r.body.get("seed") for r in model.requests[1:]] == [1001, 1003, 1006]


async def test_a_reproduction_that_tests_its_own_copy_of_the_code_is_not_kept(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """token-bucket with the 1.5B model: the test pasted the whole buggy class above
    itself, so it failed on the base for the bug's reason, and no fix could pass it.
    retry-count: ``@retry`` decorated the test function itself, chosen, and no fix could
    pass it either."""
    its_own_copy = block(
        "from temps import fahrenheit_to_celsius\n\n\n" + TEMPS + "\n\n"
        "def test_boiling():\n    assert fahrenheit_to_celsius(212) == 100\n"
    )
    wraps_itself = block(
        "from temps import fahrenheit_to_celsius\n\n\n@fahrenheit_to_celsius\n"
        "def test_boiling():\n    assert fahrenheit_to_celsius(212) == 100\n"
    )
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[its_own_copy] * 4,
        *[wraps_itself] * 2,
        *[NO_TEST] * 3,  # none kept: a third batch
        samples=2,
        issue=VAGUE,
    )
    fix = result.fix
    assert fix is not None
    assert result.status == "failed"
    assert fix.repair is not None
    assert fix.repair.reproduction is None
    assert (
        "4 x defines its own `fahrenheit_to_celsius`: it would test that copy, not the code"
        in fix.repair.reproduction_note
    )
    assert (
        "2 x decorates the test itself with `fahrenheit_to_celsius`: no fix could make it pass"
        in fix.repair.reproduction_note
    )


async def test_the_issues_own_example_is_the_reproduction_when_the_model_asserts_the_bug(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """version-compare with the 1.5B model: told what the example gives now, it asserted
    exactly that, three times in three. The issue's words make the test instead: the
    call, and the value it says it should be; the model's assertion of the bug goes."""
    issue = "`fahrenheit_to_celsius(212)` returns `324.0`, it should be `100.0`."
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[REPRO_ASSERTS_THE_BUG] * 3,
        BREAKS_FREEZING,
        RIGHT,
        samples=2,
        issue=issue,
    )
    assert result.status == "patched", (result.error, result.fix)
    report = result.fix.repair if result.fix else None
    assert report is not None
    assert report.reproduction == "tests/test_fahrenheit_to_celsius_issue.py"
    note = report.reproduction_note
    assert "the issue's own example fails on the base (AssertionError" in note
    assert "3 assertions of what the issue says is the bug taken out" in note  # 1 each
    # The patch holds the test the issue's words gave, and no assertion of the bug.
    assert "+    assert fahrenheit_to_celsius(212) == 100.0" in result.diff.unified
    assert "== 324.0" not in result.diff.unified
    assert result.tests is not None
    assert any("test_issue_example_1" in t for t in result.tests.reproduced)


async def test_a_bug_in_a_short_helper_is_fixed_in_the_helper(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """version-compare: the bug is in a one-line helper the named function calls. The
    helper is shown whole beside it, and an answer that rewrites the helper alone is a
    candidate; the model was asked first which suspect to try (it named the first)."""
    temps = (
        "def factor():\n    return 9 / 5\n\n\n"
        "def fahrenheit_to_celsius(f):\n    return (f - 32) * factor()\n"
    )
    helper_fixed = block("def factor():\n    return 5 / 9\n")
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[REPRO_RIGHT] * 3,
        *[text("`fahrenheit_to_celsius`"), text("factor"), text("fahrenheit_to_celsius")],
        helper_fixed,
        helper_fixed,
        samples=2,
        temps=temps,
        issue=ISSUE + " Is `factor()` upside down?",  # two suspects: the model picks
    )
    assert result.status == "patched", (result.error, result.fix)
    report = result.fix.repair if result.fix else None
    assert report is not None
    assert report.picked == "fahrenheit_to_celsius (2 of 3 answers named it)"
    assert report.target == "fahrenheit_to_celsius"
    assert "-    return 9 / 5\n+    return 5 / 9" in result.diff.unified
    assert "def fahrenheit_to_celsius(f):\n-" not in result.diff.unified  # unchanged
    pick = next(r for r in model.requests if "Which one of them" in str(r.body))
    assert "def factor():\n    return 9 / 5" in pick.body["messages"][-1]["content"]
    repair = next(r for r in model.requests if "Write the corrected" in str(r.body))
    prompt = repair.body["messages"][-1]["content"]
    assert "def factor():\n    return 9 / 5\n\ndef fahrenheit_to_celsius(f):" in prompt
    assert "write it too, in the same block" in prompt


async def test_a_right_change_that_forgot_an_import_gets_it(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """inventory-negative: every answer raised `OutOfStock` in a module that never
    imported it, and each failed with a NameError the model could not read. The one
    module that defines the name is imported from, and the body says so."""
    uses_scale = block(
        "def fahrenheit_to_celsius(f):\n    return scale(f - 32, 5, 9) + math.floor(0)\n"
    )
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[REPRO_RIGHT] * 3,
        uses_scale,
        samples=1,
        files={"convert.py": "def scale(x, num, den):\n    return x * num / den\n"},
    )
    assert result.status == "patched", (result.error, result.fix)
    diff = result.diff.unified
    assert "+import math\n+from convert import scale\n def fahrenheit_to_celsius(f):" in diff
    assert result.fix is not None
    assert (
        "Imports it uses that the answer left out, added: `import math`; "
        "`from convert import scale`." in result.fix.summary
    )


async def test_a_right_change_that_dropped_a_guard_clause_gets_it_back(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """url-join with the 1.5B model: the one answer in 18 that wrote the fix left out
    the function's `if not path: return base`, broke the empty-path test and was thrown
    away. The answer with the check put back is tried next, passes, and the pull request
    says what was put back and why."""
    guarded = (
        "def fahrenheit_to_celsius(f):\n"
        '    """Degrees Fahrenheit in degrees Celsius."""\n'
        "    if f is None:  # a missing reading stays missing\n"
        "        return None\n"
        "    return (f - 32) * 9 / 5\n"
    )
    tests = TESTS + "\n\ndef test_missing():\n    assert fahrenheit_to_celsius(None) is None\n"
    drops_it = block(
        'def fahrenheit_to_celsius(f):\n    """Degrees Celsius."""\n    return (f - 32) * 5 / 9\n'
    )
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[REPRO_RIGHT] * 3,
        drops_it,
        samples=1,
        temps=guarded,
        files={"test_temps.py": tests},
    )
    fix = fixed_right(result)
    assert "    if f is None:  # a missing reading stays missing\n         return None\n" in (
        result.diff.unified
    )  # the clause as it was, comment and all: not a line of it in the diff
    assert '+    """Degrees Celsius."""\n' in result.diff.unified  # the rest as answered
    report = fix.repair
    assert report is not None
    assert report.failed == {"breaks": 1}  # the answer as written broke test_missing
    assert (report.candidates, report.passed) == (2, 1)  # the answer, then put back
    assert report.chosen.startswith(
        "1 of 1 answers wrote this change without the code's check `if f is None:`, which "
        "broke a test that passed before: put back here; it makes "
        "`tests/test_fahrenheit_to_celsius_issue.py` pass"
    )


async def test_a_server_that_refuses_n_is_asked_once_per_sample(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """llama.cpp's server answers n > 1 with a 400: the rest come one request each."""
    n_refused = fail(400, "Field 'n': Value must be between 1 <= value <= 1, but got 2")
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        REPRO_RIGHT,
        n_refused,
        REPRO_ASSERTS_THE_BUG,
        REPRO_WRONG_IMPORT,
        RIGHT,
        RENAMED,
        samples=2,
    )
    assert result.status == "patched", (result.error, result.fix)
    asked = [r.body.get("n", 1) for r in model.requests]
    assert asked == [1, 2, 1, 1, 1, 1]  # refused once, then one choice a request
    seeds = [r.body.get("seed") for r in model.requests]
    assert seeds[0] is None  # the greedy answer
    assert len({s for s in seeds[2:4] if s is not None}) == 2  # hot ones, each its own seed


BOILING = (
    "from temps import fahrenheit_to_celsius\n\n\n"
    "def test_boiling():\n    assert fahrenheit_to_celsius(212) == 100\n"
)


# How each judge comes about: the repository's own failing test; three reproductions
# that agree; one reproduction (the others fail for the wrong reason, twice over).
JUDGES = {
    "the repository's failing test": ([], ISSUE, True),
    "reproductions that agree": ([REPRO_RIGHT] * 3, ISSUE, True),
    "one model's reproduction": ([REPRO_RIGHT, *[REPRO_WRONG_IMPORT] * 5], VAGUE, False),
}


@pytest.mark.parametrize("judge", list(JUDGES))
async def test_answers_that_repeat_the_code_get_a_second_round_that_says_so(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
    judge: str,
) -> None:
    """slug-accents with the 1.5B model: shown the failing test, it wrote the function back
    unchanged in 4 of 4 answers, and the fixer stopped there; later 3 of 4, and round 2
    copied the fourth's miss. Half the answers or more unchanged: where a trusted judge
    judges (the repository's own failing test, or reproductions that agree: url-join's
    three did, and saw only copies), the body is hidden and the function asked for anew;
    where one test the model wrote judges (it may assert the bug: email-plus), it is not."""
    unchanged = block(TEMPS)
    ours = judge == "the repository's failing test"
    reproductions, issue, hidden = JUDGES[judge]
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *reproductions,
        unchanged,
        BREAKS_FREEZING,
        RIGHT,
        unchanged,
        samples=2,
        issue=issue,
        files={"test_boil.py": BOILING} if ours else None,
    )
    assert result.status == "patched", (result.error, result.fix)
    report = result.fix.repair if result.fix else None
    assert report is not None
    assert (report.rounds, report.samples, report.passed) == (2, 4, 1)
    assert report.dropped["unchanged"] == 2
    prompts = [
        r.body["messages"][-1]["content"]
        for r in model.requests
        if "Write the corrected" in str(r.body)
    ]
    assert "Earlier answers wrote" not in prompts[0]
    assert "return (f - 32) * 9 / 5" in prompts[0]
    if hidden:
        # Only what it must keep: the signature and the docstring; no miss shows the body.
        assert "Earlier answers wrote its body back exactly as it is" in prompts[-1]
        assert "return (f - 32) * 9 / 5" not in prompts[-1]
        assert "An earlier attempt" not in prompts[-1]
        kept = 'def fahrenheit_to_celsius(f):\n    """Degrees Fahrenheit in degrees Celsius."""'
        assert kept + "\n    ..." in prompts[-1]
    else:
        assert "return (f - 32) * 9 / 5" in prompts[-1]
        assert "Earlier answers wrote `fahrenheit_to_celsius` back exactly as it is" in prompts[-1]
        assert "An earlier attempt (1) was wrong" in prompts[-1]


@pytest.mark.parametrize("bug_first", [True, False])
async def test_the_answer_names_the_wrong_line_before_the_function(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
    bug_first: bool,
) -> None:
    """Asked first to say which line is wrong (a model shown a failing function most often
    writes it back as it is), the answer starts with that comment and is read as the
    function after it; with the switch off, the answer starts as the function does."""
    named = block("# Bug: the factor is upside down\n" + RIGHT_CODE)
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        named if bug_first else RIGHT,
        samples=1,
        files={"test_boil.py": BOILING},
        prefill=True,
        without=frozenset() if bug_first else frozenset({"bug-first"}),
    )
    fixed_right(result)
    (asked,) = [r.body for r in model.requests if "Write the corrected" in str(r.body)]
    prompt, start = asked["messages"][-2]["content"], asked["messages"][-1]["content"]
    said = "`fahrenheit_to_celsius` as it is gives this failure, so it must change"
    assert (said in prompt) is bug_first
    assert start == (
        "```python\n# Bug:" if bug_first else "```python\ndef fahrenheit_to_celsius(f):\n"
    )


TWO_WRONG = (
    "def fahrenheit_to_celsius(f):\n    return (f - 32) * 9 / 5\n\n\n"
    "def celsius_to_kelvin(c):\n    return c - 273.15\n"
)
BOTH_FIXED = block(
    "def fahrenheit_to_celsius(f):\n    return (f - 32) * 5 / 9\n\n\n"
    "def celsius_to_kelvin(c):\n    return c + 273.15\n"
)
TO_KELVIN = (
    "from temps import celsius_to_kelvin, fahrenheit_to_celsius\n\n\n"
    "def test_boiling_in_kelvin():\n"
    "    assert celsius_to_kelvin(fahrenheit_to_celsius(212)) == 373.15\n"
)


@pytest.mark.parametrize("together", [True, False])
async def test_a_bug_in_two_functions_of_a_file_is_fixed_in_both(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
    together: bool,
) -> None:
    """The failing test reaches two wrong functions of one file: shown together, both
    are rewritten by one answer; one at a time, neither change alone passes."""
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        BOTH_FIXED,
        BOTH_FIXED,
        samples=1,
        temps=TWO_WRONG,
        files={"test_kelvin.py": TO_KELVIN},
        without=frozenset(switches.MECHANISMS) - ({"together"} if together else set()),
    )
    prompts = [r.body for r in model.requests if "Write the corrected" in str(r.body)]
    first = prompts[0]["messages"][-1]["content"]
    assert ("return c - 273.15" in first and "return (f - 32) * 9 / 5" in first) is together
    if together:
        assert result.status == "patched", (result.error, result.fix)
        assert "+    return (f - 32) * 5 / 9" in result.diff.unified
        assert "+    return c + 273.15" in result.diff.unified
        assert result.fix is not None
        assert result.fix.repair is not None
        assert result.fix.repair.fired.get("together") == 1
    else:
        assert result.status != "patched"
        assert len(prompts) == 2  # each suspect alone, and each answer only half right


AGENT_FIX = [
    tool("edit", path="temps.py", old="(f - 32) * 9 / 5", new="(f - 32) * 5 / 9"),
    tool("finish", summary="the factor was upside down"),
    tool("finish", summary="the factor was upside down; 212 F is 100 C now"),
]


@pytest.mark.parametrize(("max_steps", "agent_ran"), [(30, True), (6, False)])
async def test_auto_tries_the_agent_only_after_repair_and_within_the_budget(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
    max_steps: int,
    agent_ran: bool,
) -> None:
    """strategy auto (the default): repair finds nothing to check a change against (every
    test the model writes asserts the bug), then the agent gets what the budget leaves:
    enough for it with 30 model calls, not with 6 (4 spent on reproduction: three
    batches)."""
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[REPRO_ASSERTS_THE_BUG] * 9,
        *AGENT_FIX,
        samples=2,
        auto=True,
        budget=Budget(max_steps=max_steps),
        issue=VAGUE,
    )
    fix = result.fix
    assert fix is not None
    assert fix.repair is not None
    assert fix.repair.reproduction is None  # repair's part: nothing shows the problem
    if agent_ran:
        assert result.status == "patched", (result.error, fix.reason)
        assert "+    return (f - 32) * 5 / 9" in result.diff.unified
        assert "Then the agent." in fix.summary  # the PR says repair came first
        assert fix.usage.calls == 7  # 4 requests of repair (3 batches of 3), 3 of the agent
        assert next(e.tool for e in fix.transcript if e.role == "tool") == "edit"
    else:
        assert result.status == "failed"
        assert fix.reason is not None
        assert fix.reason.startswith("no verified fix: nothing shows the problem")
        assert fix.reason.endswith("the budget left no room for the agent")
        assert len(model.requests) == 4  # 9 answers: 1 greedy, n=2, n=3, n=3; no agent
        assert result.diff.files == []


async def test_with_no_right_candidate_no_pull_request_and_an_honest_answer(
    make_pw: Callable[..., Awaitable[Harness]], forge: LocalForge
) -> None:
    """Two rounds, every candidate wrong (the second round is shown the first one's
    miss): the issue hears why, and nothing is pushed or opened."""
    config = "fixers:\n  llm:\n    strategy: repair\n"  # auto would try the agent next
    files = {"temps.py": TEMPS, "test_temps.py": TESTS, ".github/patchwarden.yml": config}
    await forge.push(REPO, files, author="alice")
    forge.add_user(REPO, "alice", "maintain")
    junk = text("I think the function is fine.")
    script = [REPRO_RIGHT, junk, junk, BREAKS_FREEZING, UNPARSEABLE, BREAKS_FREEZING, RENAMED]
    script.append(BREAKS_FREEZING)  # the cloze round: the one computing line hidden
    script += [UNPARSEABLE, RENAMED, BREAKS_FREEZING, junk]  # more answers, as many again
    async with ScriptedModel(script, api_key=KEY) as model:
        pw = await make_pw(
            workers=1,
            llm_model="scripted",
            llm_base_url=model.base_url,
            llm_api_key=KEY,
            llm_samples=2,
        )
        await forge.install(INSTALLATION, by="alice")
        issue = forge.open_issue(REPO, "fahrenheit_to_celsius is wrong", ISSUE, author="bob")
        await forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="alice")
        await pw.settle(within=300, every_job=True)
    assert model.violations == []
    assert model.remaining == 0
    second_round = model.requests[-3].body["messages"][-1]["content"]
    assert "An earlier attempt (1) was wrong (breaks: " in second_round
    assert "return f * 100 / 212" in second_round
    assert forge.pulls(REPO) == []
    assert not [r for r in forge.repos[REPO].git.refs() if "patchwarden/" in r]
    said = "\n".join(c.body for c in forge.comments(REPO, issue.number) if c.user.type == "Bot")
    assert "no verified fix" in said
    assert "none made the reproduction test pass with every other test still passing" in said


FREEZING = (
    "FREEZING = 32\n\n\n"
    "def is_freezing(f):\n"
    '    """Whether water freezes at ``f`` degrees Fahrenheit."""\n'
    "    return f < FREEZING\n"
)
FREEZING_TESTS = "from temps import is_freezing\n\n\ndef test_cold():\n    assert is_freezing(0)\n"
WARM = "\n\ndef test_warm():\n    assert not is_freezing(32.5)\n"


@pytest.mark.parametrize("told_apart", [True, False])
async def test_when_every_answer_misses_a_mechanical_change_the_tests_single_out_is_proposed(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
    told_apart: bool,
) -> None:
    """html-escape with the 1.5B model: sixteen answers, none moved `&` first. A one-token
    bug (here `<` for `<=`) is found by trying small changes, as program repair does, as
    soon as the model's first round missed (the issue's own example judges: trusted):
    kept only when it is the only change that passes, and then no more answers are asked
    for. Without a test at 32.5 °F, `FREEZING = 33` passes as well as `<=`: the rounds go
    on, and in the end nothing is proposed."""
    issue = "`is_freezing(32)` returns `False`, it should be `True`: water freezes at 32 °F."
    later = [  # no round 2: nothing came near
        *[UNPARSEABLE] * 2,  # the cloze round: `return f < FREEZING`, then `FREEZING = 32`
        *[UNPARSEABLE] * 4,  # more answers to round 1's prompt
    ]
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[text("I cannot write a test.")] * 3,  # the issue's own example is the test
        UNPARSEABLE,  # round 1
        UNPARSEABLE,
        *([] if told_apart else later),
        samples=2,
        issue=issue,
        temps=FREEZING,
        files={"test_temps.py": FREEZING_TESTS + (WARM if told_apart else "")},
    )
    assert model.remaining == 0
    fix = result.fix
    assert fix is not None
    report = fix.repair
    assert report is not None
    assert report.mechanical >= 2
    if told_apart:
        assert result.status == "patched", (result.error, fix.reason)
        assert report.dropped == {"unparseable": 2}  # round 1 only: no more model calls
        assert (report.rounds, report.masked) == (1, 0)
        assert "-    return f < FREEZING\n+    return f <= FREEZING" in result.diff.unified
        assert result.tests is not None
        assert result.tests.broken == []
        body = render_body(
            result,
            score_session(result, result.policy, trigger=Trigger("comment")),  # type: ignore[arg-type]
            title="is_freezing is wrong at 32",
        )
        assert (
            "Chosen: a mechanical change, tried after the model's first round on "
            "`is_freezing` missed: `<` became `<=` (temps.py:6)"
        ) in body
        assert f"then {report.mechanical} mechanical changes, 1 passed" in body
    else:
        assert result.status == "failed"
        assert report.dropped == {"unparseable": 8}  # the rounds went on
        assert report.masked == 2
        assert result.diff.files == []
        assert fix.reason is not None
        assert fix.reason.startswith("no verified fix")
        assert "two mechanical changes pass (`<` became `<=`; `32` became `33`)" in fix.reason
        assert "neither is proposed" in fix.reason
        assert f", then {report.mechanical} mechanical changes; none made" in fix.reason


async def test_mechanical_changes_go_early_on_the_localisers_first_not_on_a_pick(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """The model picks the helper `threshold`, where `32` as `33` alone passes the
    issue's example: tried early there, that wrong-place change would be published. It
    is not: the early round runs on the localiser's first, `is_freezing`, whose change
    (`<=`) and the helper's both pass, so the tests cannot choose, and no mechanical
    change of any suspect is proposed."""
    issue = (
        "`is_freezing(32)` returns `False`, it should be `True`: water freezes at 32 °F. "
        "Is `threshold()` wrong?"
    )
    temps = "def threshold():\n    return 32\n\n\ndef is_freezing(f):\n    return f < threshold()\n"
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[text("I cannot write a test.")] * 3,  # the issue's own example is the test
        *[text("threshold")] * 3,  # the pick
        *[UNPARSEABLE] * 30,
        samples=2,
        issue=issue,
        temps=temps,
        files={"test_temps.py": FREEZING_TESTS},
    )
    fix = result.fix
    assert fix is not None
    assert fix.repair is not None
    assert fix.repair.picked == "threshold (3 of 3 answers named it)"
    assert result.status == "failed"
    assert result.diff.files == []
    assert fix.reason is not None
    assert "two mechanical changes pass (`<` became `<=`; `32` became `33`)" in fix.reason
    assert fix.repair.mechanical == 2  # the early round's two, and no other round


async def test_a_single_model_test_never_judges_a_boundary_change(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """email-plus with the 1.5B model: one model-written test was the only judge, and `not`
    taken away from a validation passed it (and the repository's tests) and was published.
    A change no model wrote needs a stronger judge: the repository's own failing tests,
    the issue's own example, or two of the model's tests that agree."""
    issue = "Water at 32 °F is reported as not freezing, but it freezes at 32 °F."
    one_test = block(
        "from temps import is_freezing\n\n\ndef test_32():\n    assert is_freezing(32)\n"
    )
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        one_test,
        *[text("I cannot write a test.")] * 5,  # two batches: one kept test is weak
        UNPARSEABLE,
        UNPARSEABLE,
        *[UNPARSEABLE] * 2,  # the cloze round: the comparison, then the constant
        samples=2,
        issue=issue,
        temps=FREEZING,
        files={"test_temps.py": FREEZING_TESTS + WARM},
    )
    fix = result.fix
    assert fix is not None
    report = fix.repair
    assert report is not None
    assert report.reproduction is not None  # the one test was kept: it shows the bug
    assert "1 agree on what it should do" in report.reproduction_note
    # One kept test alone is not taken on trust: three more were drawn.
    assert "1 of 6 samples failed for the bug's reason" in report.reproduction_note
    assert report.mechanical == 0  # `<` → `<=` would have passed it: never tried
    assert result.status == "failed"
    assert result.diff.files == []
    assert fix.reason is not None
    assert fix.reason.endswith(
        "one model-written test is too weak a judge for most mechanical changes: only a loop "
        "over a copy, an element moved, a string argument left out or a `+ _ - @ #` the "
        "issue's examples use added to a character class may be tried"
    )


async def _one_test_judges(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
    test: str,
    *answers: Any,
    issue: str,
    temps: str,
    tests: str,
    samples: int = 2,
) -> tuple[Any, RepairReport]:
    """The session on ``temps`` (with ``tests``) where one model test, the only one of
    six kept, judges the ``answers``: it ends patched; the result and the repair report."""
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        block(test),
        *[text("I cannot write a test.")] * 5,  # two batches: one kept test is weak
        *answers,
        samples=samples,
        issue=issue,
        temps=temps,
        files={"test_temps.py": tests},
    )
    assert result.status == "patched", (result.error, result.fix)
    report = result.fix.repair if result.fix else None
    assert report is not None
    assert "1 agree on what it should do" in report.reproduction_note  # a weak judge
    return result, report


DROP_FROZEN = (
    "def drop_frozen(readings):\n"
    '    """The readings above freezing (32 °F): ``readings``, changed in place."""\n'
    "    for r in readings:\n"
    "        if r <= 32:\n"
    "            readings.remove(r)\n"
    "    return readings\n"
)


async def test_a_single_model_test_judges_a_loop_over_a_copy(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """event-unsubscribe with the 1.5B model: a handler unsubscribed itself while the
    bus looped over its handlers, the model never wrote the loop over a copy, and in
    three runs of six its one kept test passed with it. A loop over a copy behaves as
    the loop did unless the body changes what it loops over, so one model test may
    judge that change (a boundary or an off-by-one it may not)."""
    issue = "`drop_frozen` keeps frozen readings when two of them come one after the other."
    result, report = await _one_test_judges(
        runner,
        tmp_path,
        make_model,
        make_client,
        "from temps import drop_frozen\n\n\n"
        "def test_two_frozen():\n    assert drop_frozen([10, 20, 50]) == [50]\n",
        *[UNPARSEABLE] * 12,  # the rounds and the cloze round: nothing usable
        issue=issue,
        temps=DROP_FROZEN,
        tests="from temps import drop_frozen\n\n\ndef test_none():\n"
        "    assert drop_frozen([]) == []\n",
    )
    assert "-    for r in readings:\n+    for r in list(readings):" in result.diff.unified
    assert report.mechanical == 1  # the loop over a copy alone: no `<=` as `<`, no `33`
    assert report.chosen.startswith(
        "a mechanical change, tried after the model's answers all missed: the loop runs "
        "over a copy of `readings`"
    )


VALID = (
    "import re\n\n"
    'EMAIL = re.compile(r"^[a-z0-9._-]+@[a-z0-9-]+(\\.[a-z0-9-]+)+$")\n\n\n'
    "def is_valid(address):\n"
    '    """Whether ``address`` is an email address."""\n'
    "    return bool(EMAIL.match(address))\n"
)
VALID_TESTS = (
    "from temps import is_valid\n\n\n"
    "def test_dots():\n    assert is_valid('first.last-x@example.co.uk')\n\n\n"
    "def test_no_domain_dot():\n    assert not is_valid('a@b')\n"
)


async def test_a_single_model_test_judges_a_character_the_issue_names(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """email-plus with the 1.5B model: the pattern lacks the `+` of the issue's own
    example, and the model's answers missed. A character the issue's words use, added to
    a character class that lacks it, has the issue behind it, so one model test may
    judge it (in repair18-34 it passed such tests twice, right both times)."""
    issue = (
        "`is_valid` turns down `jane+news@example.com`, and people cannot sign up with it: "
        "plus addressing is standard."
    )
    result, report = await _one_test_judges(
        runner,
        tmp_path,
        make_model,
        make_client,
        "from temps import is_valid\n\n\n"
        "def test_plus():\n    assert is_valid('jane+news@example.com')\n",
        *[UNPARSEABLE] * 12,  # the rounds and the cloze round: nothing usable
        issue=issue,
        temps=VALID,
        tests=VALID_TESTS,
    )
    assert '+EMAIL = re.compile(r"^[a-z0-9._+-]+@' in result.diff.unified
    assert report.chosen.startswith(
        "a mechanical change, tried after the model's answers all missed: `+` added to the "
        "character class `[a-z0-9._-]`"
    )


COUNT = (
    "def count_words(text):\n"
    '    """The number of words in ``text``."""\n'
    '    return len(text.split(" "))\n'
)
COUNT_TESTS = (
    "from temps import count_words\n\n\ndef test_two():\n    assert count_words('a b') == 2\n"
)


def count(body: str) -> Any:
    return block(f'def count_words(text):\n    """The number of words in ``text``."""\n{body}')


async def test_a_one_node_change_an_answer_wrote_is_tried_before_more_voted_ones(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """word-count with the 1.5B model, three runs of seven: two answers of four wrote
    `[w for w in text.split(" ") if w]`, one wrote `text.split()`; both passed the one
    kept test and the repository's, and the two-vote change, wrong on tabs and newlines,
    was published. An answer that is also a one-node change of the function was written
    by two sources, the model and the mutation, and is tried first."""
    issue = "`count_words` counts runs of spaces as words: any whitespace run separates two."
    result, report = await _one_test_judges(
        runner,
        tmp_path,
        make_model,
        make_client,
        "from temps import count_words\n\n\n"
        "def test_runs():\n    assert count_words('hello  world') == 2\n",
        count('    return len([w for w in text.split(" ") if w])\n'),
        count('    return len([w for w in text.split(" ") if w])\n'),
        count("    return len(text.split())\n"),
        UNPARSEABLE,
        samples=4,
        issue=issue,
        temps=COUNT,
        tests=COUNT_TESTS,
    )
    assert "+    return len(text.split())" in result.diff.unified
    assert (report.candidates, report.passed) == (2, 1)
    assert report.failed == {}  # the one-node change was tested first, and passed
    assert report.chosen.startswith(
        "1 of 4 answers wrote this change, which is also a one-node change "
        '(`text.split(" ")` became `text.split()`), so it was tried before changes more '
        "answers wrote; it makes `tests/test_count_words_issue.py` pass"
    )


async def test_when_the_rounds_miss_a_line_hidden_at_a_time_brings_the_fix(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """url-join and paginate-offset with the 1.5B model: shown the whole function, it wrote
    the wrong line back in most answers; shown its signature alone, a different function.
    After both rounds miss, each computing statement is hidden in turn (one prompt each,
    one greedy answer): the model cannot copy what it does not see."""
    unchanged = block(TEMPS)
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        unchanged,
        BREAKS_FREEZING,  # round 1: half unchanged, so round 2 asks anew
        BREAKS_FREEZING,
        UNPARSEABLE,  # round 2: both miss
        RIGHT,  # the cloze round: `return (f - 32) * 9 / 5` hidden
        samples=2,
        files={"test_boil.py": BOILING},
    )
    assert result.status == "patched", (result.error, result.fix)
    assert "+    return (f - 32) * 5 / 9" in result.diff.unified
    report = result.fix.repair if result.fix else None
    assert report is not None
    assert (report.rounds, report.masked, report.passed) == (3, 1, 1)
    # The first run of the tests is traced: the failing test and the passing one run it
    assert "the failing tests run it (1 of 1; 1 passing test)" in report.suspects[0]
    assert report.won_by == "cloze"  # what brought the change, for the ablation's counts
    assert report.fired["cloze"] == 1
    cloze_prompt = model.requests[-1].body["messages"][-1]["content"]
    assert "`???` hides what one line of `fahrenheit_to_celsius` computes" in cloze_prompt
    assert "    return ???\n" in cloze_prompt
    assert "* 9 / 5" not in cloze_prompt  # neither the line nor a miss that shows it
    assert model.requests[-1].body["temperature"] == 0.0
    body = render_body(
        result,
        score_session(result, result.policy, trigger=Trigger("comment")),  # type: ignore[arg-type]
        title="fahrenheit_to_celsius is wrong",
    )
    assert "5 answers in 3 rounds (1 of them with one line hidden)" in body
    assert "Chosen: 1 of 1 answers with one line hidden at a time (1 prompt) wrote this" in body


async def test_a_mechanism_turned_off_does_not_run(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """The same misses with the cloze round and the later draws off: no line is hidden,
    the cloze answer is never asked for, and no fix is proposed."""
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        block(TEMPS),
        BREAKS_FREEZING,
        BREAKS_FREEZING,
        UNPARSEABLE,
        RIGHT,
        samples=2,
        files={"test_boil.py": BOILING},
        without=frozenset({"cloze", "more", "mechanical-early", "mechanical-late"}),
    )
    assert result.status != "patched"
    report = result.fix.repair if result.fix else None
    assert report is not None
    assert (report.rounds, report.masked, report.passed) == (2, 0, 0)
    assert "cloze" not in report.fired
    assert report.won_by == ""
    prompts = [r.body["messages"][-1]["content"] for r in model.requests]
    assert not any("`???` hides" in p for p in prompts)


async def test_a_change_that_misses_a_wrong_reproduction_is_judged_by_another_kept_test(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """retry-count and paginate-offset with the 1.5B model: the test chosen to reproduce
    the bug expected the wrong thing (three calls of a function that fails once; page 1
    starting at the second item), and the right change, written by four answers, failed
    it. Two kept tests that disagree: when no change passes the one chosen, the changes
    that missed only it are judged by the other, which becomes the reproduction."""
    off_by_one = block(
        "from temps import fahrenheit_to_celsius\n\n\n"
        "def test_boiling():\n    assert fahrenheit_to_celsius(212) == 101\n"
    )
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        off_by_one,  # greedy: kept, and chosen (a tie goes to the greedy test)
        REPRO_RIGHT,  # kept: it disagrees
        REPRO_WRONG_IMPORT,
        RIGHT,
        BREAKS_FREEZING,  # round 1: both fail the test chosen
        UNPARSEABLE,
        UNPARSEABLE,  # round 2
        UNPARSEABLE,  # the cloze round
        *[UNPARSEABLE] * 4,  # more answers: the issue's example backs the test chosen
        samples=2,
    )
    fix = fixed_right(result)
    # The reproduction in the patch is the test that passed, not the one chosen first.
    assert "+    assert fahrenheit_to_celsius(212) == 100" in result.diff.unified
    assert "== 101" not in result.diff.unified
    assert result.tests is not None
    assert any("test_boiling" in t for t in result.tests.reproduced)
    assert "another test the model wrote" in fix.repair.reproduction_note
    assert fix.repair.reproduction_note.startswith("fails on the base (AssertionError")
    assert "no change passed the one chosen first, which fails on the base" in (
        fix.repair.reproduction_note
    )
    assert fix.repair.chosen.startswith("1 answer wrote this change; it makes the reproduction")


# Two batches of reproduction answers that keep one test alone (a weak judge), and a
# wrong one: 212 °F expected to be 101 °C.
ALONE_AND_WRONG = (
    OFF_BY_ONE,
    REPRO_WRONG_IMPORT,
    REPRO_ASSERTS_THE_BUG,
    REPRO_WRONG_IMPORT,  # the second batch: nothing more kept
    REPRO_ASSERTS_THE_BUG,
    NO_TEST,
)


async def test_a_change_the_answers_agree_on_is_judged_by_a_test_written_afresh(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """retry-count with the 1.5B model: the one test kept expected the impossible (its
    function raised every time), the other kept tests were as wrong, and the right
    change, written by eight answers of twelve, failed it. When every change misses a
    reproduction one model test alone backs and answers of a round agree on a change, a
    few tests are written afresh: one that fails on the base for the bug's reason (the
    test chosen out of the tree meanwhile: this repository's command runs every test)
    and passes with that change becomes the reproduction."""
    shows_nothing = block(
        "from temps import fahrenheit_to_celsius\n\n\n"
        "def test_freezing_point():\n    assert fahrenheit_to_celsius(32) == 0\n"
    )
    boils = block(
        "from temps import fahrenheit_to_celsius\n\n\n"
        "def test_boils():\n    assert fahrenheit_to_celsius(212) == 100.0\n"
    )
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *ALONE_AND_WRONG,
        RIGHT,
        RIGHT,  # round 1: two answers agree, and fail the test chosen
        BREAKS_FREEZING,
        UNPARSEABLE,  # round 2
        UNPARSEABLE,  # the cloze round
        shows_nothing,  # written afresh: passes on the base, not kept
        boils,  # fails on the base for the bug's reason
        NO_TEST,
        samples=2,
        issue=VAGUE,
        files={".github/patchwarden.yml": 'test: "python -m pytest -q ."\n'},
    )
    assert model.remaining == 0
    afresh = model.requests[-1].body
    assert afresh["n"] == 3
    assert afresh["seed"] == 1009  # none of the three batches' seeds
    assert afresh["messages"] == model.requests[0].body["messages"]
    fix = fixed_right(result)
    assert "+    assert fahrenheit_to_celsius(212) == 100.0" in result.diff.unified
    assert "== 101" not in result.diff.unified
    assert "test_freezing_point" not in result.diff.unified
    assert "a test the model wrote afresh" in fix.repair.reproduction_note
    assert fix.repair.chosen.startswith("2 answers wrote this change; it makes the reproduction")


async def test_a_change_one_answer_of_a_round_wrote_is_not_judged_by_tests_written_afresh(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """Tests written afresh judge only a change answers of a round agree on: the right
    change one answer wrote would pass the new test, and is still not proposed."""
    five_eighths = block(
        'def fahrenheit_to_celsius(f):\n    """Degrees Fahrenheit in degrees Celsius."""\n'
        "    return (f - 32) * 5 / 8\n"
    )
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *ALONE_AND_WRONG,
        five_eighths,
        five_eighths,  # round 1: two answers agree on a wrong change
        RIGHT,
        UNPARSEABLE,  # round 2: one answer writes the right one
        UNPARSEABLE,  # the cloze round
        REPRO_RIGHT,  # written afresh, and kept: the right change passes it
        NO_TEST,
        NO_TEST,
        samples=2,
        issue=VAGUE,
    )
    assert model.remaining == 0
    assert result.status != "patched"
    assert "5 / 9" not in (result.diff.unified if result.diff else "")


async def test_when_every_round_misses_a_trusted_judge_more_answers_are_drawn(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """slug-accents and url-join with the 1.5B model: about 1 answer in 8 was right, and
    rounds of 4 held none. When a trusted judge (here the issue's own example) turned
    every change down, the last round's prompt is answered again, twice as many times,
    with new seeds; the right answer among them is chosen."""
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        REPRO_RIGHT,
        REPRO_WRONG_IMPORT,
        REPRO_ASSERTS_THE_BUG,
        BREAKS_FREEZING,
        UNPARSEABLE,  # round 1
        BREAKS_FREEZING,
        RENAMED,  # round 2, shown the miss
        UNPARSEABLE,  # the cloze round
        UNPARSEABLE,
        BREAKS_FREEZING,
        RIGHT,
        RENAMED,  # more answers to round 2's prompt
        samples=2,
    )
    assert model.remaining == 0
    fix = fixed_right(result)
    assert fix.repair.rounds == 4
    assert fix.repair.samples == 9
    assert fix.repair.chosen.startswith("1 of 4 answers asked again wrote this change")
    more = [r.body for r in model.requests][-1]
    assert more["seed"] == 1002  # round 2's were 1001
    assert more["n"] == 4
    assert more["temperature"] == 0.8
    assert more["messages"] == model.requests[-3].body["messages"]  # round 2's prompt
    assert "An earlier attempt (1) was wrong" in more["messages"][-1]["content"]


async def test_when_two_batches_keep_no_test_a_third_is_drawn(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """memoize-kwargs with the 1.5B model: six tests passed on the base or failed with a
    TypeError, and the job ended with nothing to check a change against; in three runs
    of four a test was kept. When two batches keep none, a third is drawn."""
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        REPRO_WRONG_IMPORT,
        REPRO_ASSERTS_THE_BUG,
        NO_TEST,
        REPRO_ASSERTS_THE_BUG,
        REPRO_WRONG_IMPORT,
        NO_TEST,  # two batches, nothing kept
        REPRO_RIGHT,
        NO_TEST,
        REPRO_WRONG_IMPORT,  # the third: one kept
        RIGHT,
        UNPARSEABLE,
        samples=2,
        issue=VAGUE,
    )
    assert model.remaining == 0
    fix = fixed_right(result)
    assert "1 of 9 samples failed for the bug's reason" in fix.repair.reproduction_note
    assert "+    assert fahrenheit_to_celsius(212) == 100" in result.diff.unified


def partly_wrong(*asserts: str) -> Any:
    """A reproduction as word-count's: the issue's example right, then cases the model
    invented, some wrong."""
    body = "".join(f"    assert fahrenheit_to_celsius({a}\n" for a in asserts)
    return block(f"from temps import fahrenheit_to_celsius\n\n\ndef test_boiling():\n{body}")


@pytest.mark.parametrize(
    ("written", "fixed"),
    [
        (("212) == 100", "50) == 10", "-40) == -41"), True),
        # Without its wrong assertion, what is left passes on the base: it shows nothing.
        (("32) == 0", "212) == 101"), False),
        # The assertion it failed at on the base is what it was kept for: it stays.
        (("212) == 101", "50) == 10", "-40) == -40"), False),
    ],
)
async def test_a_reproduction_less_what_an_agreed_change_fails_judges_it(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
    written: tuple[str, ...],
    fixed: bool,
) -> None:
    """word-count with the 1.5B model: the one test kept asserted the issue's example
    right and two cases it invented wrong, and the right change, written by two answers
    of four, failed only those. The reproduction less the model's assertions such a
    change fails (at most half of them, never one it failed at on the base) judges it,
    as long as what is left still fails on the base; the trimmed test is the one the
    pull request adds."""
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        partly_wrong(*written),
        *ALONE_AND_WRONG[1:],
        RIGHT,
        RIGHT,  # round 1: two answers agree, and fail the test chosen
        BREAKS_FREEZING,
        UNPARSEABLE,  # round 2
        UNPARSEABLE,  # the cloze round
        NO_TEST,
        NO_TEST,
        NO_TEST,  # tests written afresh: none
        samples=2,
        issue=VAGUE,
    )
    assert model.remaining == 0, (result.status, result.error, result.fix)
    if not fixed:
        assert result.status != "patched"
        assert "5 / 9" not in (result.diff.unified if result.diff else "")
        return
    fix = fixed_right(result)
    assert "+    assert fahrenheit_to_celsius(50) == 10" in result.diff.unified
    assert "-41" not in result.diff.unified
    assert fix.repair.chosen.startswith(
        "2 answers of one round wrote this change; it makes the reproduction pass once 1 of "
        "the 3 assertions the model wrote is taken out"
    )
    assert "taken out (what is left still fails on the base)" in fix.repair.reproduction_note
    score = score_session(result, result.policy, trigger=Trigger("comment"))  # type: ignore[arg-type]
    # One model's test, trimmed, is the only judge: a draft for a person to read.
    assert score.decision == "draft"
    assert [r.rule for r in score.rules if r.decision == "draft"] == ["model_tests_only"]
    body = render_body(result, score, title="fahrenheit_to_celsius is wrong")
    assert "assertions the model wrote is taken out" in body


RAISES = block(
    'def fahrenheit_to_celsius(f):\n    """Degrees Fahrenheit in degrees Celsius."""\n'
    "    if f < -459.67:\n"
    '        raise ValueError(f"{f} is below absolute zero")\n'
    "    return (f - 32) * 5 / 9\n"
)
ASKS_A_RAISE = VAGUE + " Below absolute zero (-459.67) it should raise ValueError."


@pytest.mark.parametrize("raised", [True, False])
async def test_a_change_that_raises_nothing_the_issue_asks_for_goes_last_and_says_so(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
    raised: bool,
) -> None:
    """The issue asks that anything else raise ValueError; the reproduction does not check
    it. A change that names ValueError goes before one that does not; one that does not
    still runs (`int(text)` raises it without naming it: only running shows that), and
    when it is the one that passes, the pull request says what to check."""
    answers = (RIGHT, RAISES) if raised else (RIGHT, RIGHT, UNPARSEABLE)
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        REPRO_RIGHT,
        *ALONE_AND_WRONG[1:],
        *answers,  # round 1, then (when nothing passed) the cloze round's one answer
        samples=2,
        issue=ASKS_A_RAISE,
    )
    fix = result.fix
    assert fix is not None
    assert fix.repair is not None
    assert "does not raise what the issue asks" not in fix.repair.dropped  # none dropped
    fixed_right(result)
    if raised:
        assert "+        raise ValueError(" in result.diff.unified
        assert fix.repair.chosen.startswith("1 of 2 answers wrote this change")
        assert "names nowhere" not in fix.repair.chosen
        return
    assert "+        raise ValueError(" not in result.diff.unified
    assert "the issue asks that the code raise an exception this change names nowhere" in (
        fix.repair.chosen
    )
    assert "check that it does" in fix.summary


FLAG = 'def flag(raw):\n    """The boolean a setting\'s text means."""\n    return bool(raw)\n'
FLAG_TESTS = "from temps import flag\n\n\ndef test_set():\n    assert flag('yes') is True\n"


def flag_answer(body: str) -> Any:
    return block(f'def flag(raw):\n    """The boolean a setting\'s text means."""\n{body}')


async def test_the_values_an_issue_lists_are_tried_as_it_says_they_may_be_written(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """parse-bool with the 1.5B model (repair38): the issue listed the false words "(any
    case, with spaces around)", the model's test set `false` alone, and a change that
    lower-cased but did not strip passed it and was published. The test gets a twin with
    the listed values written as the issue allows, and that change fails it."""
    issue = (
        "A setting of `false` turns the flag on. `false`, `no` and `off` (any case, with "
        "spaces around) must be false."
    )
    lower_only = flag_answer("    return raw.lower() not in ('false', 'no', 'off')\n")
    right = flag_answer("    return raw.strip().lower() not in ('false', 'no', 'off')\n")
    result, report = await _one_test_judges(
        runner,
        tmp_path,
        make_model,
        make_client,
        "from temps import flag\n\n\ndef test_false():\n    assert flag('false') is False\n",
        lower_only,
        lower_only,  # the most votes: tried first
        right,
        samples=3,
        issue=issue,
        temps=FLAG,
        tests=FLAG_TESTS,
    )
    assert "+    return raw.strip().lower() not in ('false', 'no', 'off')" in result.diff.unified
    assert report.failed == {"test failed": 1}  # the lower-cased change, by the twin
    assert "+def test_false_any_case_spaces_around():" in result.diff.unified
    assert "+    assert flag(' FALSE ') is False" in result.diff.unified
    assert (
        "its tests that pass a value the issue lists are also tried with the values written "
        "as the issue allows (' FALSE ' for 'false')" in report.reproduction_note
    )


RETRY_TESTS = (
    "from temps import retry\n\n\n"
    "def test_a_function_that_works():\n"
    "    assert retry()(lambda: 1)() == 1\n"
)
RETRY_ISSUE = (
    "With `@retry(attempts=3)`, a function that fails twice and then succeeds still "
    "raises: it is called only twice."
)
START = (
    "from temps import retry\n\n\ndef test_issue():\n    calls = []\n\n"
    "    @retry(attempts=3)\n    def flaky():\n        calls.append(1)\n"
    "        if len(calls) <= 2:\n            raise ValueError('failed')\n"
    "        return 'ok'\n\n"
)


async def test_a_decorators_test_is_the_one_written_for_the_model_with_its_values(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """retry-count with the 1.5B model: given the test up to its expectations, the
    greedy answer and one more put `pytest.raises(ValueError)` around the call, two
    tests that agree on what no fix can pass; another called `flaky()` twice. Their
    values are read into the test written for them: the one that gives none is not
    kept, and the rest judge the right change."""
    expects_the_error = block(
        START + "    with pytest.raises(ValueError):\n        flaky()\n    assert len(calls) == 3\n"
    )
    calls_it_twice = block(
        START + "    flaky()\n    assert flaky() == 'ok'\n    assert len(calls) == 3\n"
    )
    right = RETRY.replace("range(1, attempts)", "range(1, attempts + 1)").replace(
        "attempts - 1", "attempts"
    )
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        expects_the_error,
        expects_the_error,
        calls_it_twice,
        *[calls_it_twice] * 3,  # a second batch: two that agree
        block(right),
        block(right),
        samples=2,
        issue=RETRY_ISSUE,
        temps=RETRY,
        files={"test_temps.py": RETRY_TESTS},
    )
    assert result.status == "patched", (result.error, result.fix)
    assert "+            for attempt in range(1, attempts + 1):" in result.diff.unified
    repair = result.fix.repair
    # the two that expect the error give no value for the result: not kept
    assert "4 of 6 samples failed for the bug's reason" in repair.reproduction_note
    # the reproduction in the patch: called once, the values the answer gave
    assert "+    result = flaky()\n+    assert result == 'ok'\n+    assert len(calls) == 3" in (
        result.diff.unified
    )


SIGNUP = VALID + (
    "\n\nclass SignupError(ValueError):\n    pass\n"
    "\n\ndef signup(address):\n"
    '    """The new account of ``address``, a valid email address."""\n'
    "    if not is_valid(address):\n"
    '        raise SignupError(f"{address!r} is not a valid email address")\n'
    '    return {"email": address}\n'
)
# Taking `not` away passes the model's test and every test the repository has.
TURNED = block(
    "def signup(address):\n"
    '    """The new account of ``address``, a valid email address."""\n'
    "    if is_valid(address):\n"
    '        raise SignupError(f"{address!r} is not a valid email address")\n'
    '    return {"email": address}\n'
)
PLUS_ALLOWED = block(
    "def signup(address):\n"
    '    """The new account of ``address``, a valid email address."""\n'
    '    local, _, domain = address.partition("@")\n'
    '    if not is_valid(local.split("+")[0] + "@" + domain):\n'
    '        raise SignupError(f"{address!r} is not a valid email address")\n'
    '    return {"email": address}\n'
)
PLUS_ISSUE = (
    "`signup` turns down `jane+news@example.com`: plus addressing is standard. Dots and "
    "hyphens (`first.last-x@example.co.uk`) must keep working, and `a@b` must stay invalid."
)


@pytest.mark.parametrize("kept", [True, False])
async def test_a_change_that_breaks_what_the_issue_says_must_keep_working_is_not_published(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    kept: bool,
) -> None:
    """email-plus in repair43: `not` taken away from `signup`'s guard passed two model
    tests and the repository's (which never call `signup`), and was published; every
    valid address was then refused. The issue's own words say which values must keep
    working: written into a test on the base, they turn that change down."""
    if not kept:  # the check taken out: the turned guard is what gets published
        monkeypatch.setattr("app.fixers.llm.repair.job.keep", _nothing)
    result, report = await _one_test_judges(
        runner,
        tmp_path,
        make_model,
        make_client,
        "from temps import signup\n\n\ndef test_plus():\n"
        "    assert signup('jane+news@example.com') == {'email': 'jane+news@example.com'}\n",
        TURNED,
        PLUS_ALLOWED,
        issue=PLUS_ISSUE,
        temps=SIGNUP,
        tests=VALID_TESTS,
    )
    diff = result.diff.unified
    if not kept:
        assert "+    if is_valid(address):" in diff
        assert report.kept is None
        return
    assert "+    if is_valid(address):" not in diff
    assert '+    if not is_valid(local.split("+")[0] + "@" + domain):' in diff
    assert report.kept == "tests/test_signup_kept.py"
    assert report.failed.get("breaks") == 1
    # The test is in the patch, as the base gave each value.
    assert "+++ b/tests/test_signup_kept.py" in diff
    assert "+    assert signup('first.last-x@example.co.uk') == {'email': " in diff
    assert "+    with pytest.raises(SignupError):\n+        signup('a@b')" in diff
    score = score_session(result, result.policy, trigger=Trigger("comment"))
    body = render_body(result, score, title="signup turns down plus addresses")
    assert "Kept as it was: tests/test_signup_kept.py checks what the issue says" in body


async def _nothing(*_: Any, **__: Any) -> None:
    return None
