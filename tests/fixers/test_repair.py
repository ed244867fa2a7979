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
from app.fixers.llm.repair import mechanical_rounds, switches
from app.fixers.llm.repair.fixer import RepairFixer
from app.fixers.llm.repair.mechanical import WEAK_JUDGE
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
    max_output_tokens: int = 4096,
) -> Any:
    """The session on the temps project (and ``files``) with ``script`` answering;
    ``auto``: the llm fixer's auto strategy (repair, then the agent) instead of repair
    alone; ``without``: mechanisms turned off; ``prefill``: answers start as asked."""
    project = make_project(
        tmp_path / "temps", {"temps.py": temps, "test_temps.py": TESTS, **(files or {})}
    )
    model = await make_model(*script)
    client = make_client(
        provider(model), retry_base_seconds=0.01, max_output_tokens=max_output_tokens
    )
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
    """The bug is in a one-line helper the named function calls. The helper is shown
    whole beside it, and an answer that rewrites the helper alone is a candidate."""
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
        helper_fixed,
        helper_fixed,
        samples=2,
        temps=temps,
        issue=ISSUE + " Is `factor()` upside down?",  # two suspects
    )
    assert result.status == "patched", (result.error, result.fix)
    report = result.fix.repair if result.fix else None
    assert report is not None
    assert report.target == "fahrenheit_to_celsius"
    assert "-    return 9 / 5\n+    return 5 / 9" in result.diff.unified
    assert "def fahrenheit_to_celsius(f):\n-" not in result.diff.unified  # unchanged
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
        assert len(prompts) == 1  # the first suspect alone, and its answer only half right
        assert "return c - 273.15" not in first


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
    """Every candidate wrong: the issue hears why, and nothing is pushed or opened."""
    config = "fixers:\n  llm:\n    strategy: repair\n"  # auto would try the agent next
    files = {"temps.py": TEMPS, "test_temps.py": TESTS, ".github/patchwarden.yml": config}
    await forge.push(REPO, files, author="alice")
    forge.add_user(REPO, "alice", "maintain")
    junk = text("I think the function is fine.")
    # The reproductions, then the round's answers.
    script = [REPRO_RIGHT, junk, junk, BREAKS_FREEZING, UNPARSEABLE]
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
    """A one-token bug (here `<` for `<=`) the model's answers all missed is found by
    trying small changes, as program repair does: kept only when it is the only change
    that passes. Without a test at 32.5 °F, `FREEZING = 33` passes as well as `<=`, and
    nothing is proposed."""
    issue = "`is_freezing(32)` returns `False`, it should be `True`: water freezes at 32 °F."
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[text("I cannot write a test.")] * 3,  # the issue's own example is the test
        UNPARSEABLE,  # the round of answers
        UNPARSEABLE,
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
        assert report.dropped == {"unparseable": 2}
        assert report.rounds == 1
        assert "-    return f < FREEZING\n+    return f <= FREEZING" in result.diff.unified
        assert result.tests is not None
        assert result.tests.broken == []
        body = render_body(
            result,
            score_session(result, result.policy, trigger=Trigger("comment")),  # type: ignore[arg-type]
            title="is_freezing is wrong at 32",
        )
        assert (
            "Chosen: a mechanical change, tried after the model's answers all missed: "
            "`<` became `<=` (temps.py:6)"
        ) in body
        assert f"then {report.mechanical} mechanical changes, 1 passed" in body
    else:
        assert result.status == "failed"
        assert report.dropped == {"unparseable": 2}
        assert result.diff.files == []
        assert fix.reason is not None
        assert fix.reason.startswith("no verified fix")
        assert "two mechanical changes pass (`<` became `<=`; `32` became `33`)" in fix.reason
        assert "neither is proposed" in fix.reason
        assert f", then {report.mechanical} mechanical changes; none made" in fix.reason


async def test_when_the_repositorys_own_tests_cannot_choose_a_maintainer_does(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """The repository's own test fails at 32 °F and nothing of it tells `<=` from
    `FREEZING = 33`: the first is proposed with the other named beside it, and the
    policy keeps it a draft for a maintainer to choose (judged by a test the session
    wrote, neither would be: the test above)."""
    failing = FREEZING_TESTS + "\n\ndef test_32():\n    assert is_freezing(32)\n"
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        UNPARSEABLE,  # the round of answers: no reproduction, a test fails already
        UNPARSEABLE,
        samples=2,
        temps=FREEZING,
        files={"test_temps.py": failing},
    )
    assert model.remaining == 0
    assert result.status == "patched", (result.error, result.fix)
    assert "-    return f < FREEZING\n+    return f <= FREEZING" in result.diff.unified
    report = result.fix.repair
    assert report.alternatives == ["`32` became `33` (temps.py:1)"]
    assert report.won_by == "mechanical-late"
    # Each change's first run is of the failing test alone: the rest of its file is not
    # run until a change passes it (then every test runs).
    first = [s.output for s in result.steps if s.name == "repair-candidate"]
    assert len(first) == report.mechanical
    assert all("1 deselected" in out for out in first), first[:1]
    whole = [s.output for s in result.steps if s.name == "repair-candidate-all"]
    assert len(whole) == 2
    assert all("deselected" not in out for out in whole)
    score = score_session(result, result.policy, trigger=Trigger("comment"))  # type: ignore[arg-type]
    (rule,) = [r for r in score.rules if r.rule == "tests_cannot_choose"]
    assert rule.decision == "draft"
    assert score.decision in ("draft", "reject")
    body = render_body(result, score, title="is_freezing is wrong at 32")
    assert "as 1 other change of the" in body
    assert "(`32` became `33` (temps.py:1)): the tests cannot tell which one fixes the bug" in (
        body
    )


async def test_a_function_an_answer_cannot_hold_is_not_asked_for(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """Where writing the function back takes more tokens than an answer may hold, every
    answer would be cut off before its end: no model call is spent on it, and the
    answer says why, with the setting that raises the limit."""
    boiling = TESTS + "\n\ndef test_boiling():\n    assert fahrenheit_to_celsius(212) == 100\n"
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        RIGHT,  # never asked for
        samples=2,
        files={"test_temps.py": boiling},
        max_output_tokens=15,
    )
    assert model.remaining == 1
    fix = result.fix
    assert result.status == "failed"
    assert fix.repair.samples == 0
    assert fix.reason.startswith("no verified fix: 0 answers")
    assert fix.reason.endswith(
        "; `fahrenheit_to_celsius` is not asked for: writing it back takes about 19 tokens, "
        "more than an answer's 15 (PATCHWARDEN_LLM_MAX_OUTPUT_TOKENS)"
    )


LONG_REPORT = (
    TEMPS
    + "\n\ndef report(f):\n"
    + "".join(
        f"    line_{n} = 'degrees, as the thermometer on the wall says them'\n" for n in range(6)
    )
    + "    return f'{fahrenheit_to_celsius(f):.1f} C'\n"
)


async def test_a_suspect_too_long_to_write_passes_the_round_to_the_next(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """The failing test calls a function too long for an answer, which calls the wrong
    one: no call is spent on the long one, the short one gets the round, and the round
    goes to no other suspect after it."""
    hot = "from temps import report\n\n\ndef test_boiling():\n    assert report(212) == '100.0 C'\n"
    result, model = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        RIGHT,
        RIGHT,
        samples=2,
        temps=LONG_REPORT,
        issue="`report(212)` gives `'180.0 C'`, it should be `'100.0 C'`.",
        files={"test_report.py": hot},
        max_output_tokens=60,
        without=frozenset({"mechanical-late"}),
    )
    report = result.fix.repair
    assert [s.split(" (")[0] for s in report.suspects[:2]] == ["report", "fahrenheit_to_celsius"]
    assert report.too_long[0].startswith("`report` is not asked for")
    assert result.status == "patched", (result.error, result.fix)
    assert report.target == "fahrenheit_to_celsius"
    assert report.rounds == 1
    assert "+    return (f - 32) * 5 / 9" in result.diff.unified
    assert model.remaining == 0


async def test_the_mechanical_round_keeps_to_its_time_and_then_proposes_nothing(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Mechanical changes cost test runs, not model calls: the round stops when its time
    is spent, and a change is kept only when every other was tried, so none is here."""
    monkeypatch.setattr(mechanical_rounds, "MECHANICAL_SECONDS", 0.0)
    issue = "`is_freezing(32)` returns `False`, it should be `True`: water freezes at 32 °F."
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[text("I cannot write a test.")] * 3,
        UNPARSEABLE,
        UNPARSEABLE,
        samples=2,
        issue=issue,
        temps=FREEZING,
        files={"test_temps.py": FREEZING_TESTS + WARM},
    )
    fix = result.fix
    assert fix is not None
    assert fix.repair is not None
    assert result.status == "failed"
    assert fix.repair.mechanical == 0
    assert fix.reason is not None
    assert fix.reason.endswith("the mechanical round stopped after 0 s of test runs")
    assert result.diff.files == []


async def test_a_single_model_test_never_judges_a_boundary_change(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """One model-written test is the only judge, and `<` → `<=` would pass it: a change no
    model wrote needs a stronger judge (the repository's own failing tests, the issue's
    own example, or two of the model's tests that agree), and none is tried."""
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
        "over a copy, an element moved or a string argument left out may be tried"
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
    patched: bool = True,
) -> tuple[Any, RepairReport]:
    """The session on ``temps`` (with ``tests``) where one model test, the only one of
    six kept, judges the ``answers``: it ends patched (unless not ``patched``); the
    result and the repair report."""
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
    assert (result.status == "patched") is patched, (result.error, result.fix)
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
        *[UNPARSEABLE] * 2,  # the round of answers: nothing usable
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


PLUS_ISSUE = (
    "`is_valid` turns down `jane+news@example.com`, and people cannot sign up with it: "
    "plus addressing is standard."
)
PLUS_TEST = (
    "from temps import is_valid\n\n\n"
    "def test_plus():\n    assert is_valid('jane+news@example.com')\n"
)


async def test_a_character_the_issue_quotes_is_never_added_to_a_pattern_one_test_judging(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """The pattern lacks the `+` of the issue's own example and the model's answers
    missed: the mechanical round reads the code, not the issue's words, so it does not
    add the `+` (an issue quoting `a/b` would widen an allowlist the same way). No pull
    request, and the reason says one model test judged only a few kinds of change."""
    result, report = await _one_test_judges(
        runner,
        tmp_path,
        make_model,
        make_client,
        PLUS_TEST,
        *[UNPARSEABLE] * 2,  # the round of answers: nothing usable
        issue=PLUS_ISSUE,
        temps=VALID,
        tests=VALID_TESTS,
        patched=False,
    )
    assert result.status == "failed"
    assert result.fix.reason.endswith(WEAK_JUDGE)
    assert report.chosen == ""


async def test_a_character_the_issue_quotes_is_never_added_to_a_pattern_the_repository_judging(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """The same with the repository's own failing test as the judge, so every kind of
    mechanical change is tried: none of them adds the `+` the issue quotes."""
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[UNPARSEABLE] * 2,  # the round of answers: nothing usable
        samples=2,
        issue=PLUS_ISSUE,
        temps=VALID,
        files={"test_temps.py": VALID_TESTS + "\n\n" + PLUS_TEST.split("\n\n\n", 1)[1]},
    )
    report = result.fix.repair if result.fix else None
    assert report is not None
    assert report.reproduction is None  # the repository's failing test judged
    assert report.mechanical > 0
    assert result.status == "failed"
    assert result.diff.files == []


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


async def test_a_mechanism_turned_off_does_not_run(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    """The model's answers all miss and the mechanical round is off: no mechanical change
    is tried, and no fix is proposed (with it on, `<` → `<=` alone passes)."""
    issue = "`is_freezing(32)` returns `False`, it should be `True`: water freezes at 32 °F."
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[text("I cannot write a test.")] * 3,
        UNPARSEABLE,
        UNPARSEABLE,
        samples=2,
        issue=issue,
        temps=FREEZING,
        files={"test_temps.py": FREEZING_TESTS + WARM},
        without=frozenset({"mechanical-late"}),
    )
    assert result.status != "patched"
    report = result.fix.repair if result.fix else None
    assert report is not None
    assert (report.mechanical, report.passed) == (0, 0)
    assert "mechanical-late" not in report.fired
    assert report.won_by == ""


# A test failing on the base for a reason of its own (here the machine), as a sandbox
# without a service or a locale makes some of a real project's tests fail.
OWN_REASON = (
    "import os\n\n\ndef test_needs_a_service():\n    assert os.environ.get('SERVICE_URL')\n"
)
BOILING = (
    "from temps import fahrenheit_to_celsius\n\n\n"
    "def test_boiling():\n    assert fahrenheit_to_celsius(212) == 100\n"
)


@pytest.mark.parametrize("named", [True, False])
async def test_the_failing_test_the_check_names_judges_not_one_failing_for_its_own_reason(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
    named: bool,
) -> None:
    """A red check names `test_boiling`; `test_needs_a_service` fails on the base too,
    for a reason of its own. The right change is judged by the named test and proposed,
    the other test left failing as it was; judged by every failing test, no change can
    pass and nothing is proposed."""
    issue = "The check `tests` fails on the default branch: `test_boiling.py::test_boiling`."
    result, _ = await _repair(
        runner,
        tmp_path,
        make_model,
        make_client,
        *[RIGHT] * 4,
        samples=2,
        issue=issue,
        files={"test_boiling.py": BOILING, "test_service.py": OWN_REASON},
        without=frozenset() if named else frozenset({"named"}),
    )
    report = result.fix.repair if result.fix else None
    assert report is not None
    if named:
        fixed_right(result)
        assert "named" in report.fired
        assert result.tests is not None
        assert result.tests.fixed == ["test_boiling::test_boiling"]
        assert result.tests.already_failing == ["test_service::test_needs_a_service"]
        assert "`test_boiling::test_boiling`" in report.chosen
        assert "test_needs_a_service" not in report.chosen
    else:
        assert result.status != "patched"
        assert "named" not in report.fired


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
