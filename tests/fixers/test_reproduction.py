"""When a test the model wrote shows the bug (app/fixers/llm/repair/reproduction.py): it must
fail on the base for the bug's reason, which is read from what pytest reported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.fixers.llm.localize import Index, Suspect, Symbol
from app.fixers.llm.repair.agreement import agreed, expectations
from app.fixers.llm.repair.bug_reason import reproduces
from app.fixers.llm.repair.repro_prompt import repro_prompt
from app.fixers.llm.repair.testruns import Tests, path_of_test, source_of_test, with_imports
from app.policy.evidence import TestRun
from app.sessions.task import Task

TASK = Task(
    title="stock can go negative",
    instructions="`Inventory.remove` should raise `OutOfStock` and leave the stock unchanged.",
)
IDX = Index(defines={"OutOfStock": ["shop/errors.py"], "Inventory": ["shop/inventory.py"]})
T = "tests/test_issue.py::test_remove"


@pytest.mark.parametrize(
    ("outcome", "printed", "kept", "why"),
    [
        ("failed", "assert -1 == 0\nassert -1 == 0", True, "AssertionError"),
        # pytest.raises(OutOfStock) and the code let the stock go negative: the bug
        ("failed", "Failed: DID NOT RAISE OutOfStock", True, "does not raise OutOfStock"),
        ("failed", "Failed: DID NOT RAISE <class 'shop.errors.OutOfStock'>", True, "OutOfStock"),
        # ... but not an exception nobody asked for
        ("failed", "Failed: DID NOT RAISE KeyError", False, "expects KeyError"),
        ("failed", "NameError: name 'OutOfStock' is not defined", False, "NameError"),
        ("failed", "ModuleNotFoundError: No module named 'shop.stock'", False, "Module"),
        ("failed", "TypeError: remove() missing 1 required positional", False, "TypeError"),
        ("errored", "fixture 'inventory' not found", False, "errored before it ran"),
        ("passed", "", False, "passes on the base"),
        # fahrenheit: `== expected_result`, a fixture the test never requested
        (
            "failed",
            "assert 324.0 == <pytest_fixture(<function expected_result at 0x7f>)>\n"
            ">       assert f(212) == expected_result\n"
            "E       assert 324.0 == <pytest_fixture(<function expected_result at 0x7f>)>\n"
            "E        +  where 324.0 = f(212)\ntests/t.py:9: AssertionError",
            False,
            "compares with a function object",
        ),
        # event-unsubscribe: a string looked for among functions, as pytest reports it
        # where it does not rewrite the assertion
        (
            "failed",
            "AssertionError: assert 'test1' in [<function test_bug.<locals>.<lambda> at 0x7f>]\n"
            "E       AssertionError: assert 'test1' in [<function test_bug.<locals>.<lambda> "
            "at 0x7f>]\ntests/t.py:9: AssertionError",
            False,
            "compares with a function object",
        ),
        # a comparison that differs only in quotes is an assertion like any other: a
        # message's quotes can be the bug
        (
            "failed",
            "assert \"'jane+news@e...email address\" == 'jane+news@ex...email address'\n"
            "E       assert \"'jane+news@e...email address\" == 'jane+news@ex...email address'\n"
            "E         \n"
            "E         - jane+news@example.com is not a valid email address\n"
            "E         + 'jane+news@example.com' is not a valid email address\n"
            "E         ? +                     +\n",
            True,
            "AssertionError",
        ),
        # a bug whose whole point is case, or spacing: the bug's reason, kept
        (
            "failed",
            "assert 'hello world' == 'Hello World'\n"
            "E       AssertionError: assert 'hello world' == 'Hello World'\n"
            "E         \n"
            "E         - Hello World\n"
            "E         ? ^     ^\n"
            "E         + hello world\n"
            "E         ? ^     ^\n",
            True,
            "AssertionError",
        ),
        (
            "failed",
            "assert 'a  b' == 'a b'\n"
            "E       AssertionError: assert 'a  b' == 'a b'\n"
            "E         \n"
            "E         - a b\n"
            "E         + a  b\n"
            "E         ?  +\n",
            True,
            "AssertionError",
        ),
        # dedupe-order: the same items in another order is the bug, not a message's quotes
        # (one line out, the same line in: pytest's full diff of a moved item)
        (
            "failed",
            "assert ['a', 'c', 'b'] == ['b', 'a', 'c']\n"
            "E       AssertionError: assert ['a', 'c', 'b'] == ['b', 'a', 'c']\n"
            "E         At index 0 diff: 'a' != 'b'\n"
            "E         Full diff:\n"
            "E           [\n"
            "E         -     'b',\n"
            "E               'a',\n"
            "E               'c',\n"
            "E         +     'b',\n"
            "E           ]\n",
            True,
            "AssertionError",
        ),
        # ... but two strings that differ in a word are the bug's reason
        (
            "failed",
            "assert 'a b' == 'a-b'\nE       assert 'a b' == 'a-b'\nE         \n"
            "E         - a-b\nE         ? ^\nE         + a b\nE         ? ^\n",
            True,
            "AssertionError",
        ),
        # ... but a function named in pytest's explanation of a call is fine
        (
            "failed",
            "assert 324.0 == 100\n>       assert f(212) == 100\n"
            "E       assert 324.0 == 100\nE        +  where 324.0 = <function f at 0x7f>(212)",
            True,
            "AssertionError",
        ),
    ],
)
def test_a_reproduction_is_kept_only_for_the_bugs_reason(
    outcome: str, printed: str, kept: bool, why: str
) -> None:
    run = TestRun(exit_code=0 if outcome == "passed" else 1, outcomes={T: outcome})  # type: ignore[dict-item]
    ok, note = reproduces(Tests(run=run, failures={T: printed} if printed else {}), TASK, IDX)
    assert (ok, why in note) == (kept, True), note


RETRY_TEST = """\
def test_retry_calls_three_times():
    calls = []

    @retry(attempts=3)
    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ValueError("not yet")
        return "ok"

    assert flaky() == "ok"
"""


def test_an_exception_the_test_itself_raises_and_the_code_lets_through_is_the_bug() -> None:
    # retry-count: "a function that fails twice and then succeeds still raises"
    run = TestRun(exit_code=1, outcomes={T: "failed"})
    failed = Tests(run=run, failures={T: "ValueError: not yet\ntests/t.py:8: ValueError"})
    ok, note = reproduces(failed, TASK, IDX, RETRY_TEST)
    assert ok, note
    assert note.startswith("ValueError, which the test itself raises, got through")
    # ... not one the test does not raise, which the task does not name either
    other = Tests(run=run, failures={T: "KeyError: 'x'\ntests/t.py:8: KeyError"})
    assert reproduces(other, TASK, IDX, RETRY_TEST)[0] is False
    assert reproduces(failed, TASK, IDX, "")[0] is False


def test_a_test_gets_the_repository_names_it_uses_but_forgot_to_import() -> None:
    source = (
        "from shop.inventory import Inventory\n\n\n"
        "def test_remove():\n"
        "    with pytest.raises(OutOfStock):\n"
        "        Inventory().remove('x', 1)\n"
    )
    fixed = with_imports(source, IDX)
    assert fixed.splitlines()[:2] == ["import pytest", "from shop.errors import OutOfStock"]
    assert with_imports(fixed, IDX) == fixed  # nothing twice


BUCKET = """\
import time


class TokenBucket:
    def __init__(self, rate, capacity, clock=time.monotonic):
        self.clock = clock
        self.tokens = capacity

    def _refill(self):
        self.tokens += 0

    def allow(self, cost=1.0):
        self._refill()
        return self.tokens >= cost
"""


def test_a_methods_short_class_is_shown_whole() -> None:
    """A method is shown with its short class: `__init__` shows how to build the object
    (and that its clock is injectable), `_refill` what `allow` calls."""
    idx = Index(sources={"ratelimit.py": BUCKET})
    symbol = Symbol(path="ratelimit.py", qualname="TokenBucket.allow", start=12, end=14,
                    kind="method")  # fmt: skip
    prompt = repro_prompt(TASK, idx, [Suspect(symbol, 1.0)])[-1]["content"]
    assert "def __init__(self, rate, capacity, clock=time.monotonic):" in prompt
    assert "def _refill(self):" in prompt
    # A long class: its line, its __init__ and the method, not the rest.
    filler = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(40))
    long = BUCKET.replace("    def _refill", filler + "    def _refill")
    idx = Index(sources={"ratelimit.py": long})
    start = long.splitlines().index("    def allow(self, cost=1.0):") + 1
    symbol = Symbol(path="ratelimit.py", qualname="TokenBucket.allow", start=start,
                    end=start + 2, kind="method")  # fmt: skip
    prompt = repro_prompt(TASK, idx, [Suspect(symbol, 1.0)])[-1]["content"]
    assert "class TokenBucket:" in prompt
    assert "def __init__(self, rate, capacity, clock=time.monotonic):" in prompt
    assert "def m7(self):" not in prompt
    assert "def allow(self, cost=1.0):" in prompt


def test_a_failing_test_is_shown_by_its_imports_and_its_own_body(tmp_path: Path) -> None:
    """A CI failure names a test by its id (``tests.test_slugs::test_accents``): the
    prompt shows that test with the imports of the names it uses, not the whole file."""
    test_file = (
        "from __future__ import annotations\nimport os.path, re\nimport json as j\n"
        "from blog.slugs import (\n    slugify,\n    unslug,\n)\nfrom . import helpers\n"
        "from blog.fixtures import page, site\nfrom blog.text import *\n\n\n"
        "def test_plain():\n    assert slugify('a b') == 'a-b'\n\n\n"
        "class TestAccents:\n"
        "    def test_accents(self, page):\n"
        "        assert slugify(helpers.text('Crème'), j.loads('1')) == 'creme'\n"
    )
    (tmp_path / "src/blog").mkdir(parents=True)
    (tmp_path / "src/blog/tests").mkdir()
    (tmp_path / "src/blog/tests/test_slugs.py").write_text(test_file)
    idx = Index(sources={"src/blog/tests/test_slugs.py": test_file, "src/blog/slugs.py": ""})
    test = "blog.tests.test_slugs::TestAccents::test_accents[x]"
    assert path_of_test(test, idx) == "src/blog/tests/test_slugs.py"
    assert path_of_test("nowhere.test_x::test_y", idx) is None
    assert path_of_test("tests/test_new.py", idx) == "tests/test_new.py"  # a path, as it is
    shown = source_of_test(tmp_path, test, idx, whole=False)
    assert shown == (
        "import json as j\nfrom blog.slugs import slugify\nfrom . import helpers\n"
        "from blog.fixtures import page\nfrom blog.text import *\n\n"
        "def test_accents(self, page):\n"
        "    assert slugify(helpers.text('Crème'), j.loads('1')) == 'creme'"
    )
    assert source_of_test(tmp_path, test, idx) == test_file
    assert source_of_test(tmp_path, "nowhere.test_x::test_y", idx) == ""


def test_one_kept_test_alone_is_not_agreement_two_alike_are() -> None:
    """A second batch is drawn unless two kept tests agree on what the code should do."""
    first = "def test_a():\n    assert paginate(items, 1, 10) == items[1:11]\n"
    right = "def test_b():\n    assert paginate(items, 1, 10) == items[0:10]\n"
    assert not agreed([])
    assert not agreed([(first, "AssertionError")])
    assert not agreed([(first, "AssertionError"), (right, "AssertionError")])
    assert agreed([(first, "AssertionError"), (right, "AssertionError"), (right, "x")])


def test_tests_that_only_name_their_values_alike_do_not_agree() -> None:
    """paginate-offset with the 1.5B model: two tests asserted ``paginate(items, page,
    per_page) == expected_result``, of different items and pages; they agreed as
    written, and the wrong one judged alone. A name set once reads as its value."""
    test = (
        "def test_p():\n    items = list(range({}))\n    page = 1\n"
        "    expected_result = items[{}]\n"
        "    assert paginate(items, page, 10) == expected_result\n"
    )
    wrong, right = test.format(20, "1:11"), test.format(20, ":10")
    assert not agreed([(wrong, "AssertionError"), (right, "AssertionError")])
    # the same values under other names, or written out, agree
    written_out = (
        "def test_q():\n    assert paginate(list(range(20)), 1, 10) == list(range(20))[:10]\n"
    )
    assert agreed([(right, "AssertionError"), (written_out, "AssertionError")])
    # a name set twice is not read as either value
    twice = test.format(20, ":10").replace("    page = 1\n", "    page = 1\n    page = 2\n")
    assert expectations(twice) != expectations(right)
    # a name read through itself is not unfolded; an expression too deep to read as
    # values is read as written
    grows = "def test_r():\n    x = 1\n    y = y + x\n    assert f(y) == x\n"
    assert list(expectations(grows).values()) == [ast.dump(ast.Constant(1), annotate_fields=False)]
    deep = "def test_d():\n    x = 1\n    assert f(x) == " + " + ".join(["x"] * 900) + "\n"
    assert len(expectations(deep)) == 1
