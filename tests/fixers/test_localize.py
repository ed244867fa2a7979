"""Localisation without the model (app/fixers/llm/localize.py): the function at fault is
among the first three suspects, from the task's words, a stack trace or what a failing
test calls — on every task of the eval set (bench/agent_tasks: the hidden test and the
solution are not shown to it; the solution only says which function was wrong)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from app.fixers.llm.localize import frames_in, index, localize, words
from app.fixers.llm.repair.spectrum import ochiai
from app.sessions.task import Document, Place, Task
from tests.conftest import make_project
from tests.realworld.conftest import unpack
from tests.realworld.projects import PROJECTS

TASKS = Path(__file__).resolve().parents[2] / "bench" / "agent_tasks"


def _units(path: Path) -> dict[str, tuple[str, set[str]]]:
    """Each function and method of a module: its syntax dump and the names it reads;
    and each module-level assignment, by name, under "=name"."""
    module = ast.parse(path.read_text())
    out: dict[str, tuple[str, set[str]]] = {}
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = (
                ast.dump(node),
                {n.id for n in ast.walk(node) if isinstance(n, ast.Name)},
            )
        elif isinstance(node, ast.ClassDef):
            for m in node.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names = {n.id for n in ast.walk(m) if isinstance(n, ast.Name)}
                    out[f"{node.name}.{m.name}"] = (ast.dump(m), names)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[f"={t.id}"] = (ast.dump(node), set())
    return out


def at_fault(task: Path) -> set[tuple[str, str]]:
    """(path, qualname) of the functions the reference fix changes, or that read a
    module constant it changes."""
    found = set()
    for fixed in (task / "solution").rglob("*.py"):
        rel = fixed.relative_to(task / "solution").as_posix()
        before, after = _units(task / "repo" / rel), _units(fixed)
        changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
        constants = {k[1:] for k in changed if k.startswith("=")}
        for name, (_, reads) in before.items():
            if not name.startswith("=") and (name in changed or reads & constants):
                found.add((rel, name))
    return found


def eval_tasks() -> list[Path]:
    return sorted(p for p in TASKS.iterdir() if (p / "task.toml").is_file())


@pytest.mark.bench
@pytest.mark.parametrize("task", eval_tasks(), ids=lambda p: p.name)
def test_the_function_at_fault_is_among_the_first_three(task: Path) -> None:
    meta = tomllib.loads((task / "task.toml").read_text())
    wanted = at_fault(task)
    assert wanted, f"{task.name}: the reference fix changes no function"
    issue = Task(
        meta["title"], instructions="fix this", documents=(Document("issue", meta["issue"]),)
    )
    suspects = localize(index(task / "repo"), issue)
    top = [(s.symbol.path, s.symbol.qualname) for s in suspects[:3]]
    assert wanted & set(top), f"{task.name}: {sorted(wanted)} not in {top}"
    assert all(s.evidence for s in suspects)


@pytest.mark.bench
def test_the_eval_set_is_all_there() -> None:
    assert len(eval_tasks()) >= 23


LIB = {
    "shop/__init__.py": "",
    "shop/prices.py": (
        "RATE = 0.2\n\n\n"
        'def gross(net):\n    """The price with value added tax."""\n'
        "    return net * (1 + RATE)\n\n\n"
        "def rounded(amount):\n    return round(amount, 2)\n"
    ),
    "shop/cart.py": (
        "from shop.prices import gross, rounded\n\n\n"
        "class Cart:\n    def __init__(self):\n        self.items = []\n\n"
        "    def add(self, name, net, quantity=1):\n"
        "        self.items.append((name, net, quantity))\n\n"
        "    def total(self):\n        return rounded(sum(gross(n) for _, n, q in self.items))\n"
    ),
    "tests/test_cart.py": (
        "from shop.cart import Cart\n\n\ndef test_total():\n    c = Cart()\n"
        "    c.add('tea', 10.0, quantity=2)\n    assert c.total() == 24.0\n"
    ),
}


def test_a_stack_frame_points_at_its_function(tmp_path: Path) -> None:
    tree = make_project(tmp_path / "shop", LIB)
    task = Task("checkout crashes", documents=(Document("alert", "TypeError in production"),))
    frames = [Place("/srv/app/shop/cart.py", 12, "total")]
    suspects = localize(index(tree), Task(task.title, places=tuple(frames)))
    assert suspects[0].symbol.qualname == "Cart.total"
    assert any("stack frame" in e for e in suspects[0].evidence)


def test_what_a_failing_test_calls_is_suspected(tmp_path: Path) -> None:
    tree = make_project(tmp_path / "shop", LIB)
    test = (tree / "tests" / "test_cart.py").read_text()
    suspects = localize(index(tree), Task("CI fails on main"), tests=[test])
    names = [s.symbol.qualname for s in suspects[:3]]
    assert "Cart.total" in names
    assert "Cart.add" in names


def test_a_name_the_test_imports_is_that_module_s_function_only(tmp_path: Path) -> None:
    """`from shop.prices import rounded` is shop/prices.py's `rounded`, not the build
    script's of the same name; `unittest.main()` is no `main` of the repository; `p.gross`
    after `import shop.prices as p` is shop/prices.py's `gross`."""
    tree = make_project(
        tmp_path / "shop",
        {
            **LIB,
            "tools/build.py": "def rounded(x):\n    return x\n\n\ndef main():\n    pass\n",
            "shop/cli.py": "def main():\n    pass\n",
        },
    )
    test = (
        "import unittest\n\nimport shop.prices as p\nfrom shop.prices import rounded\n\n\n"
        "class TestPrices(unittest.TestCase):\n"
        "    def test_round(self):\n        self.assertEqual(rounded(p.gross(1.0)), 1.2)\n\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n"
    )
    suspects = localize(index(tree), Task("CI fails on main"), tests=[test])
    called = {
        f"{s.symbol.path}:{s.symbol.qualname}"
        for s in suspects
        if any("a failing test calls" in e for e in s.evidence)
    }
    assert called == {"shop/prices.py:rounded", "shop/prices.py:gross"}


def test_the_function_only_the_failing_tests_run_comes_first(tmp_path: Path) -> None:
    """A failing test that fails by its output leaves no frame in the faulty function:
    the spectrum points at it — every failing test runs `gross`, no passing test does;
    `rounded` is run by a passing test too."""
    tree = make_project(tmp_path / "shop", LIB)
    idx = index(tree)
    start = {s.qualname: s.start for s in idx.symbols if s.path == "shop/prices.py"}
    reached = {
        "tests.test_cart::test_total": [
            ("shop/prices.py", start["gross"]),
            ("shop/prices.py", start["rounded"]),
            ("elsewhere.py", 1),  # not a function of the index: left out
        ],
        "tests.test_cart::test_round": [("shop/prices.py", start["rounded"])],
    }
    ran = ochiai(idx, reached, {"tests.test_cart::test_total"})
    scores = {s.qualname: round(score, 3) for s, (score, _) in ran.items()}
    assert scores == {"gross": 1.0, "rounded": 0.707}
    suspects = localize(idx, Task("CI fails on main"), spectrum=ran)
    assert suspects[0].symbol.qualname == "gross"
    assert "the failing tests run it (1 of 1; 0 passing tests)" in suspects[0].evidence
    assert ochiai(idx, reached, set()) == {}  # no failing test traced: no spectrum


def test_the_words_of_the_task_find_a_function_it_does_not_name(tmp_path: Path) -> None:
    tree = make_project(tmp_path / "shop", LIB)
    task = Task("Value added tax is charged twice on the price")
    suspects = localize(index(tree), task)
    assert suspects[0].symbol.qualname == "gross"  # its docstring says "value added tax"
    assert suspects[0].evidence == ("its words match the task's",)


def test_named_code_beats_words_and_tests_are_never_suspects(tmp_path: Path) -> None:
    tree = make_project(tmp_path / "shop", LIB)
    task = Task("`shop.prices.rounded(2.675)` gives 2.67", documents=(Document("issue", "total"),))
    suspects = localize(index(tree), task)
    assert suspects[0].symbol.qualname == "rounded"
    assert "the task names `shop.prices.rounded`" in suspects[0].evidence
    assert not any(s.symbol.path.startswith("tests/") for s in suspects)


def test_frames_are_read_from_pytest_and_python_tracebacks() -> None:
    pytest_output = (
        "tests/test_cart.py:7: in test_total\n    assert c.total() == 24.0\n"
        "shop/cart.py:12: in total\n    return rounded(...)\nE   TypeError: boom\n"
        "shop/prices.py:10: TypeError\n"
    )
    python_output = 'Traceback:\n  File "/srv/shop/prices.py", line 6, in gross\n    return x\n'
    assert frames_in(pytest_output) == [
        Place("tests/test_cart.py", 7, "test_total"),
        Place("shop/cart.py", 12, "total"),
        Place("shop/prices.py", 10, None),
    ]
    assert frames_in(python_output) == [Place("/srv/shop/prices.py", 6, "gross")]


def test_words_split_identifiers_and_drop_the_common_ones() -> None:
    assert words("parseDate returns the wrong HTTPServer value") == [
        "parse", "date", "http", "server",
    ]  # fmt: skip
    assert words("is_leap_year(1900)") == ["leap", "year", "1900"]


def test_that_a_check_fails_points_at_no_function(tmp_path: Path) -> None:
    """A red check's text says that something fails, not where: a function whose
    docstring says "if this fails" is no suspect for it."""
    opener = (
        "def open_safely(name):\n"
        '    """Open the file; retry with a cleaned name if this fails."""\n'
        "    return open(name)\n"
    )
    tree = make_project(tmp_path / "shop", {**LIB, "shop/files.py": opener})
    task = Task("CI is red on main: test_total fails", documents=(Document("check", "failed"),))
    assert not [s for s in localize(index(tree), task) if s.symbol.qualname == "open_safely"]


REAL_TASKS = TASKS.parent / "real_tasks"


def real_tasks() -> list[Path]:
    return sorted(p for p in REAL_TASKS.iterdir() if (p / "task.toml").is_file())


@pytest.mark.bench
@pytest.mark.slow
@pytest.mark.realworld
@pytest.mark.parametrize("task", real_tasks(), ids=lambda p: p.name)
def test_in_real_projects_the_function_at_fault_is_among_the_first_three(
    task: Path, tmp_path: Path
) -> None:
    """A real project (the pinned sdist, tests/realworld/projects.py: from 19 functions
    in iniconfig to hundreds in toolz, six and dateutil), one bug put in by the task, the
    issue a user would write."""
    meta = tomllib.loads((task / "task.toml").read_text())
    project = next(p for p in PROJECTS if p.name == meta["project"])
    tree = unpack(project, tmp_path / project.name)
    lines_at_fault = []
    for bug in meta["bug"]:
        text = (tree / bug["file"]).read_text()
        assert text.count(bug["old"]) == 1, f"{task.name}: the bug's text is not there once"
        lines_at_fault.append((bug["file"], text[: text.index(bug["old"])].count("\n") + 1))
        (tree / bug["file"]).write_text(text.replace(bug["old"], bug["new"]))
    idx = index(tree)
    assert len(idx.symbols) >= 15
    wanted = {
        (s.path, s.qualname)
        for s in idx.symbols
        for path, line in lines_at_fault
        if s.path == path and s.start <= line <= s.end
    }
    issue = Task(
        meta["title"], instructions="fix this", documents=(Document("issue", meta["issue"]),)
    )
    suspects = localize(idx, issue)
    top = [(s.symbol.path, s.symbol.qualname) for s in suspects[:3]]
    assert wanted & set(top), f"{task.name}: {sorted(wanted)} not in {top}"


def test_a_file_that_is_not_utf8_is_left_out_of_the_index(tmp_path: Path) -> None:
    """A candidate is spliced into the file's text and written back whole: a file read
    with replacement characters would be written back damaged."""
    (tmp_path / "latin.py").write_bytes(b"# caf\xe9\ndef greet():\n    return 1\n")
    (tmp_path / "ok.py").write_text("def wave():\n    return 2\n")
    idx = index(tmp_path)
    assert sorted(idx.sources) == ["ok.py"]
    assert [s.qualname for s in idx.symbols] == ["wave"]
