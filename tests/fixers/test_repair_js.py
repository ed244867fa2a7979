"""The llm fixer's repair strategy on npm projects, end to end: the real session
(bubblewrap, node's own test runner on base and patch, the score) against a scripted
model over HTTP answering as a small model does — code that does not parse, a function
renamed, a change that breaks another test — and one right answer.

The projects are node packages with no dependencies (node's built-in runner), so no
registry is needed: a temperature converter whose test fails (the red check), a class
whose method is wrong that no test catches (an issue, reproduced first), and a module
whose object-literal method is wrong.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from app.fixers.llm.repair.fixer import RepairFixer
from app.fixers.llm.scripted import text
from app.git import Remote
from app.policy.score import Trigger, score_session
from app.publish.body import render_body
from app.sessions.session import SessionRunner
from app.sessions.task import Document, SessionSpec, Task
from tests.conftest import make_project
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
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]

PACKAGE = json.dumps({"name": "temps", "version": "1.0.0", "scripts": {"test": "node --test"}})
TEMPS = """\
'use strict';

/** Degrees Fahrenheit in degrees Celsius. */
function toCelsius(f) {
  return (f - 32) * 9 / 5;
}

const toKelvin = (c) => c + 273.15;

module.exports = { toCelsius, toKelvin };
"""
TEMPS_TEST = """\
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { toCelsius, toKelvin } = require('../src/temps');

test('water boils at 100', () => {
  assert.strictEqual(toCelsius(212), 100);
});

test('freezing is zero', () => {
  assert.strictEqual(toCelsius(32), 0);
});

test('kelvin', () => {
  assert.strictEqual(toKelvin(0), 273.15);
});
"""
# The red check's text, as CI shows it.
CHECK = (
    "The tests check failed on main.\n\nnot ok 1 - water boils at 100\n"
    "  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n  324 !== 100\n"
)


def block(code: str, lang: str = "javascript") -> Any:
    return text(f"```{lang}\n{code}```\n")


UNPARSEABLE = block("function toCelsius(f) {\n  return (f - 32) * 5 /;\n}\n")
RENAMED = block("function fahrenheitToCelsius(f) {\n  return (f - 32) * 5 / 9;\n}\n")
BREAKS_FREEZING = block("function toCelsius(f) {\n  return f * 100 / 212;\n}\n")
RIGHT = block(
    "/** Degrees Fahrenheit in degrees Celsius. */\n"
    "function toCelsius(f) {\n  return (f - 32) * 5 / 9;\n}\n"
)
# The same change, laid out and commented otherwise: one change, two votes.
RIGHT_AGAIN = block("function toCelsius(f) {\n  // five ninths\n  return (f - 32) * 5 / 9\n}\n")


async def _session(
    runner: SessionRunner,
    project: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
    task: Task,
    *script: Any,
    samples: int,
) -> tuple[Any, Any]:
    model = await make_model(*script)
    client = make_client(provider(model), retry_base_seconds=0.01)
    fixer = RepairFixer(client, samples=samples)
    spec = SessionSpec(remote=Remote("octo/temps", str(project)), task=task)
    return await runner.run(spec, fixer), model


def _steps(result: Any) -> str:
    """What the session ran, for a failure's message."""
    shown = [f"{s.name} exit {s.exit_code}: {s.output[-600:]}" for s in result.steps]
    return "\n".join([str(result.fix and result.fix.reason), *shown])


def temps_project(tmp_path: Path) -> Path:
    """The temperature converter whose test fails: a git repository."""
    files = {"package.json": PACKAGE, "src/temps.js": TEMPS, "test/temps.test.js": TEMPS_TEST}
    return make_project(tmp_path / "temps", files)


def red_check() -> Task:
    return Task(
        "tests fail on main", kind="alert", check="tests", documents=(Document("check", CHECK),)
    )


async def test_a_red_check_on_an_npm_project_is_fixed_by_the_voted_passing_answer(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    project = temps_project(tmp_path)
    result, model = await _session(
        runner, project, make_model, make_client, red_check(),
        UNPARSEABLE, RENAMED, BREAKS_FREEZING, RIGHT, RIGHT_AGAIN,
        samples=5,
    )  # fmt: skip
    assert result.status == "patched", _steps(result)
    report = result.fix.repair
    # Localised by the failing test's call and the check's words, not told.
    assert report.suspects[0].startswith("toCelsius (src/temps.js:4-6)")
    assert (report.samples, report.candidates, report.passed) == (5, 2, 1)
    assert report.dropped == {"unparseable": 1, "renamed": 1}
    assert report.target == "toCelsius"
    assert report.chosen.startswith("2 answers of 5 wrote this change")
    # The patch: the function's body, spliced where it was; nothing else moved.
    assert [f.path for f in result.diff.files] == ["src/temps.js"]
    assert "+  return (f - 32) * 5 / 9;" in result.diff.unified
    assert "-  return (f - 32) * 9 / 5;" in result.diff.unified
    assert [line for line in result.diff.unified.splitlines() if line[:2] in ("+ ", "- ")] == [
        "-  return (f - 32) * 9 / 5;",
        "+  return (f - 32) * 5 / 9;",
    ]
    # Verification counted node's tests one by one on both trees.
    assert result.tests is not None
    assert "water boils at 100" in result.tests.fixed
    assert result.tests.broken == []
    # The prompt showed the function and the failing test, the check's text fenced.
    prompt = model.requests[0].body["messages"][-1]["content"]
    assert "```javascript\n/** Degrees" not in prompt  # the function, from its declaration
    assert "function toCelsius(f) {\n  return (f - 32) * 9 / 5;\n}" in prompt
    assert "test('water boils at 100'" in prompt
    assert "<untrusted-data" in prompt
    score = score_session(result, result.policy, trigger=Trigger("comment"))
    body = render_body(result, score, title="tests fail on main")
    assert "Rewrote `toCelsius` in src/temps.js." in body


CART = """\
'use strict';

class Cart {
  constructor() {
    this.lines = [];
  }

  add(price, quantity = 1) {
    this.lines.push({ price, quantity });
    return this;
  }

  total() {
    return this.lines.reduce((sum, line) => sum + line.price, 0);
  }
}

module.exports = { Cart };
"""
CART_TEST = """\
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { Cart } = require('../src/cart');

test('one of each', () => {
  assert.strictEqual(new Cart().add(2).add(3).total(), 5);
});
"""
ISSUE = "`new Cart().add(2, 3).total()` returns 2: three pens at 2 cost 6."
REPRO_PASSES = block(  # asserts what the code does now
    "const test = require('node:test');\nconst assert = require('node:assert');\n"
    "const { Cart } = require('../src/cart');\n\n"
    "test('quantities', () => {\n  assert.strictEqual(new Cart().add(2, 3).total(), 2);\n});\n"
)
REPRO_RIGHT = block(
    "const test = require('node:test');\nconst assert = require('node:assert');\n"
    "const { Cart } = require('../src/cart');\n\n"
    "test('quantities count', () => {\n"
    "  assert.strictEqual(new Cart().add(2, 3).total(), 6);\n});\n"
)
METHOD_RIGHT = block(
    "total() {\n"
    "  return this.lines.reduce((sum, line) => sum + line.price * line.quantity, 0);\n}\n"
)


async def test_an_issue_on_a_class_method_is_reproduced_for_the_runner_then_fixed(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    project = make_project(
        tmp_path / "cart",
        {
            "package.json": PACKAGE.replace("temps", "cart"),
            "src/cart.js": CART,
            "test/cart.test.js": CART_TEST,
        },
    )
    task = Task("quantity ignored", instructions="fix this", documents=(Document("issue", ISSUE),))
    result, model = await _session(
        runner, project, make_model, make_client, task,
        REPRO_PASSES, REPRO_RIGHT,
        METHOD_RIGHT, METHOD_RIGHT,  # asked for Cart.add (the issue names it first): renamed
        METHOD_RIGHT, METHOD_RIGHT,
        samples=2,
    )  # fmt: skip
    assert result.status == "patched", (result.error, result.fix)
    report = result.fix.repair
    assert re.fullmatch(r"test/patchwarden-repro-[0-9a-f]{8}\.test\.js", report.reproduction)
    assert report.target == "Cart.total"
    assert report.dropped == {"renamed": 2}
    assert sorted(f.path for f in result.diff.files) == ["src/cart.js", report.reproduction]
    # The method spliced in at the class's indentation.
    assert (
        "+    return this.lines.reduce((sum, line) => sum + line.price * line.quantity, 0);"
        in result.diff.unified
    )
    # The repository's runner ran the new test on both trees: it fails on the base.
    assert result.tests is not None
    assert "quantities count" in result.tests.reproduced
    # Asked for the project's runner, shown a test of its own to copy.
    repro_prompt = model.requests[0].body["messages"][-1]["content"]
    assert "node's built-in runner" in repro_prompt
    assert "A test file of the project (test/cart.test.js)" in repro_prompt
    # The round's prompt shows the reproduction and how it fails.
    fix_prompt = model.requests[2].body["messages"][-1]["content"]
    assert f"This test must pass ({report.reproduction})" in fix_prompt
    assert "new Cart().add(2, 3).total(), 6)" in fix_prompt
    assert "It fails now:" in fix_prompt


async def test_no_answer_that_passes_leaves_the_tree_as_it_was_and_says_what_was_tried(
    runner: SessionRunner,
    tmp_path: Path,
    make_model: MakeModel,  # noqa: F811
    make_client: MakeClient,  # noqa: F811
) -> None:
    project = temps_project(tmp_path)
    result, _ = await _session(
        runner, project, make_model, make_client, red_check(),
        BREAKS_FREEZING, RENAMED,
        samples=2,
    )  # fmt: skip
    assert result.status != "patched"
    assert result.fix is not None
    assert not result.fix.ok
    assert "no verified fix: 2 answers, 1 distinct change tried on toCelsius;" in result.fix.reason
    assert result.diff is None or not result.diff.files
