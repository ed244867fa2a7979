"""What a small model plainly meant (app/fixers/llm/agent/guesses.py), table-tested on small
trees: a guess is taken only where there is one reading, and never past the scan cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.fixers.llm.agent import guesses
from app.fixers.llm.imports import with_import_lines


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


LAYOUT = {
    "batching.py": "def chunked(items, size):\n    return []\n",
    "tests/test_batching.py": "from batching import chunked\n\n\ndef test_one():\n    pass\n",
    "src/shop/inventory.py": "class Inventory:\n    pass\n\n\nLIMIT = 3\n",
    "src/shop/__init__.py": "",
    "a/util.py": "def helper():\n    pass\n",
    "b/util.py": "def helper():\n    pass\n",
}


@pytest.mark.parametrize(
    ("asked", "meant_path"),
    [
        # the same name elsewhere, once (a real 1.5B slip; it then fixed batching.py)
        ("tests/batching.py", "batching.py"),
        ("tests/test_batchng.py", "tests/test_batching.py"),  # a near spelling
        ("util.py", ""),  # two files of that name, neither nearer
        ("nothing/here.py", ""),
    ],
)
def test_a_path_that_is_not_there_means_one_file_or_none(
    tmp_path: Path, asked: str, meant_path: str
) -> None:
    assert guesses.closest_file(tree(tmp_path, LAYOUT), asked) == meant_path


@pytest.mark.parametrize(
    ("content", "imports"),
    [
        ("def test_x():\n    assert chunked([1], 1) == [[1]]\n", ["from batching import chunked"]),
        # src/ layouts import without src; a constant counts as a definition
        (
            "def test_x():\n    assert Inventory() and LIMIT\n",
            ["from shop.inventory import Inventory", "from shop.inventory import LIMIT"],
        ),
        # defined in two modules: which one is not plain, so nothing is added
        ("def test_x():\n    helper()\n", []),
        # a stdlib module used as name.attr; pytest too
        (
            "class T(unittest.TestCase):\n"
            "    @pytest.mark.slow\n    def test(self):\n        pass\n",
            ["import pytest", "import unittest"],
        ),
        # bound in the file itself: nothing to add
        (
            "from batching import chunked as c\n\n\ndef test_x(tmp_path):\n"
            "    chunked = c\n    assert chunked\n",
            [],
        ),
        ("def test(:\n", []),  # does not parse: the caller refuses it anyway
    ],
)
def test_a_new_test_gets_only_the_imports_it_plainly_lacks(
    tmp_path: Path, content: str, imports: list[str]
) -> None:
    assert guesses.missing_imports(tree(tmp_path, LAYOUT), content) == imports


def test_free_test_names_are_collected_by_pytest_and_new(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "tests/test_a.py": "",
            "tests/test_a_issue.py": "",
            "tests/b_test.py": "",
            "conftest.py": "",
        },
    )
    assert guesses.free_test_name(root, "tests/test_a.py") == "tests/test_a_issue2.py"
    assert guesses.free_test_name(root, "tests/b_test.py") == "tests/b_issue_test.py"
    assert guesses.free_test_name(root, "conftest.py") == "test_issue.py"


def test_an_old_text_in_one_file_names_it_and_the_scan_has_a_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path, LAYOUT)
    assert guesses.file_holding(root, "return []") == "batching.py"
    assert guesses.file_holding(root, "def helper():") == ""  # in two files
    assert guesses.file_holding(root, "pass") == ""  # too short to say
    assert guesses.files_with_words(root, "chunked batching loses items") == (
        "batching.py (chunked, items), tests/test_batching.py (batching, chunked)"
    )
    monkeypatch.setattr(guesses, "MAX_SCANNED", 2)
    assert guesses.file_holding(root, "return []") == ""  # not all read: no claim
    assert guesses.missing_imports(root, "def test():\n    chunked()\n") == []


def test_tests_pytest_could_not_find_are_listed_as_pytest_selects_them(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "tests/test_bus.py": "class TestBus:\n    def test_emit(self):\n        pass\n\n\n"
            "def test_alone():\n    pass\n",
            "bus.py": "x = 1\n",
        },
    )
    said = guesses.tests_in(root, "ERROR: not found: /workspace/tests/test_bus.py::test_emit")
    assert said == (
        "\nThe tests in tests/test_bus.py are: tests/test_bus.py::TestBus::test_emit, "
        "tests/test_bus.py::test_alone"
    )
    assert guesses.tests_in(root, "ERROR: not found: /workspace/bus.py::x").endswith(
        "bus.py has no tests. The test files are: tests/test_bus.py"
    )
    # The path comes from the repository's own output: a NUL in it is no crash.
    assert guesses.tests_in(root, "ERROR: file or directory not found: a\0b::t").endswith(
        "a\0b is not a file of the repository. The test files are: tests/test_bus.py"
    )


def test_a_large_repository_gets_no_path_guess(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path, LAYOUT)
    monkeypatch.setattr(guesses, "MAX_SCANNED", 2)
    assert guesses.closest_file(root, "src/batching.py") == ""


@pytest.mark.parametrize(
    ("content", "after"),
    [
        ("def test():\n    pass\n", "import x\ndef test():\n    pass\n"),
        (
            '"""Doc\nstring."""\ndef test(): pass\n',
            '"""Doc\nstring."""\nimport x\ndef test(): pass\n',
        ),
        (
            "#!/usr/bin/env python\ndef test(): pass\n",
            "#!/usr/bin/env python\nimport x\ndef test(): pass\n",
        ),
        ('"""Doc."""', '"""Doc."""\nimport x\n'),  # no final newline
        (
            '"""Doc."""\nfrom __future__ import annotations\nX = 1\n',
            '"""Doc."""\nfrom __future__ import annotations\nimport x\nX = 1\n',
        ),
    ],
)
def test_imports_go_where_python_reads_them(content: str, after: str) -> None:
    assert with_import_lines(content, ["import x"]) == after
