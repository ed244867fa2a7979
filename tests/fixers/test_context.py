"""The code a task names, shown in the agent's first message (app/fixers/llm/code_context.py)."""

from __future__ import annotations

from pathlib import Path

from app.fixers.llm.code_context import MAX_LINES, names_in, relevant_code


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


def test_a_stack_traces_frames_are_shown_first_found_by_the_tail_of_their_path(
    tmp_path: Path,
) -> None:
    from app.fixers.llm.code_context import file_for
    from app.sessions.task import Place

    (tmp_path / "src" / "widgets").mkdir(parents=True)
    body = [f"x{i} = {i}" for i in range(100)]
    body[69] = "def mean(values):\n    return sum(values) / len(values)"
    (tmp_path / "src" / "widgets" / "stats.py").write_text("\n".join(body) + "\n")
    (tmp_path / "src" / "widgets" / "views.py").write_text("def average():\n    pass\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "views.py").write_text("def average():\n    pass\n")
    files = ["src/widgets/stats.py", "src/widgets/views.py", "other/views.py"]
    assert file_for("/srv/app/src/widgets/stats.py", files) == "src/widgets/stats.py"
    assert file_for("widgets/stats.py", files) == "src/widgets/stats.py"
    assert file_for("widgets/views.py", files) == "src/widgets/views.py"
    assert file_for("views.py", files) is None  # two files share the name: no guess
    assert file_for("flask/app.py", files) is None

    places = (
        Place("/srv/app/src/widgets/stats.py", 70, "mean"),
        Place("widgets/views.py", 2, "average; rm -rf /"),
        Place("site-packages/flask/app.py", 880, "dispatch"),
    )
    shown = relevant_code(tmp_path, "ZeroDivisionError: division by zero", places)
    assert [s.path for s in shown] == ["src/widgets/stats.py", "src/widgets/views.py"]
    stats = shown[0].render()
    assert stats.startswith("src/widgets/stats.py (the stack trace: line 70, in mean):")
    assert "70| def mean(values):" in stats
    # the frame's own words are data: a function name that is no identifier is not repeated
    assert "rm -rf" not in shown[1].render()


def test_an_alerts_first_message_starts_where_its_stack_trace_ends(tmp_path: Path) -> None:
    from app.fixers.llm.agent.prompt import task_message
    from app.sessions.repo_commands import RepoCommands
    from app.sessions.task import Document, Place, Task

    (tmp_path / "widgets").mkdir()
    (tmp_path / "widgets" / "stats.py").write_text(
        "def mean(values):\n    return sum(values) / len(values)\n"
    )
    task = Task(
        title="ZeroDivisionError: division by zero",
        kind="alert",
        documents=(Document("sentry alert", "  at widgets/stats.py:2 in mean"),),
        monitoring=True,
        places=(Place("/app/widgets/stats.py", 2, "mean"),),
    )
    message = task_message(task, tree=tmp_path, commands=RepoCommands())
    assert "Where the alert's stack trace runs through this repository" in message
    assert "widgets/stats.py (the stack trace: line 2, in mean):" in message
    assert "Start where the stack trace ends" in message
