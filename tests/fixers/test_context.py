"""The code a task names, shown in the agent's first message (app/fixers/llm/context.py)."""

from __future__ import annotations

from pathlib import Path

from app.fixers.llm.context import MAX_LINES, names_in, relevant_code


def test_names_are_read_from_code_the_task_writes() -> None:
    words = (
        "`calendar_utils.dates.is_leap_year(1900)` returns True; "
        "Inventory.remove(sku) oversells; print(x) and `True` are not names"
    )
    assert names_in(words) == ["is_leap_year", "remove"]


def test_definitions_are_shown_as_windows_small_files_whole_within_a_budget(
    tmp_path: Path,
) -> None:
    big = ["import os", ""] + [f"def f{i}():\n    return {i}\n" for i in range(200)]
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "big.py").write_text(
        "\n".join(big)
        + "\ndef target(\n    x,\n) -> int:\n    y = x\n    return y\n\n\ndef after():\n    pass\n"
    )
    (tmp_path / "pkg" / "small.py").write_text("LIMIT = 3\n\n\ndef helper():\n    return LIMIT\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_big.py").write_text(
        "from pkg.big import target\n\n\ndef test_target():\n    assert target(1) == 2\n"
    )
    outside = tmp_path.parent / "outside-secret.py"
    outside.write_text("def target():\n    SECRET = 1\n")
    (tmp_path / "linked.py").symlink_to(outside)

    shown = relevant_code(tmp_path, "tests/test_big.py fails; `helper()` too")
    by_path = {s.path: s for s in shown}
    # The failing test names target in its imports: its definition, not the whole file.
    window = by_path["pkg/big.py"]
    assert window.lines[0] == "def target("  # a signature on several lines, then the body
    assert window.lines[-1] == "    return y"
    assert window.render().splitlines()[1].endswith("| def target(")
    assert by_path["pkg/small.py"].lines[0] == "LIMIT = 3"  # small: whole, constants too
    assert "tests/test_big.py" in by_path
    assert all("SECRET" not in "\n".join(s.lines) for s in shown)  # no symlink followed
    assert sum(len(s.lines) for s in shown) <= MAX_LINES
    assert relevant_code(tmp_path, "nothing here names code") == []
