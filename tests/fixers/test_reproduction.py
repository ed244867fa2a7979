"""When a test the model wrote shows the bug (app/fixers/llm/reproduction.py): it must
fail on the base for the bug's reason, which is read from what pytest reported."""

from __future__ import annotations

import pytest

from app.fixers.llm.localize import Index
from app.fixers.llm.reproduction import reproduces, with_imports
from app.fixers.llm.testruns import Tests
from app.policy.evidence import TestRun
from app.sessions.session import Task

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
    ],
)
def test_a_reproduction_is_kept_only_for_the_bugs_reason(
    outcome: str, printed: str, kept: bool, why: str
) -> None:
    run = TestRun(exit_code=0 if outcome == "passed" else 1, outcomes={T: outcome})  # type: ignore[dict-item]
    ok, note = reproduces(Tests(run=run, failures={T: printed} if printed else {}), TASK, IDX)
    assert (ok, why in note) == (kept, True), note


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
