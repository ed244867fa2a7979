"""The scope of a change: which places the task does not explain (app/sessions/scope.py).

Table-driven over synthetic modules: a base text, a patched text, what is implicated,
and the places a reviewer must be told about."""

from __future__ import annotations

import textwrap

import pytest

from app.sessions.scope import (
    FileChange,
    changed_lines,
    cited_names,
    data_kind,
    named_in,
    outside,
    read_module,
)

BASE = textwrap.dedent(
    '''\
    """Prices."""
    import math

    RATE = 0.2


    def net(price):
        return price * (1 - RATE)


    # Rounds a price to cents.
    def rounded(price):
        return round(price, 2)


    class Cart:
        currency = "EUR"

        def total(self, items):
            return sum(items)
    '''
)


def places(
    head: str, implicated: tuple[str, ...] = ("net",), base: str = BASE, *, computed: bool = False
) -> list[str]:
    change = FileChange(path="shop/prices.py", status="modified", base=base, head=head)
    found, _ = outside(change, implicated, computed=computed)
    return [p.shown().replace("`", "") for p in found]


def edit(old: str, new: str, text: str = BASE) -> str:
    assert old in text
    return text.replace(old, new, 1)


def test_a_change_inside_an_implicated_function_is_in_scope() -> None:
    head = edit("return price * (1 - RATE)", "return max(0, price * (1 - RATE))")
    assert places(head) == []


def test_a_change_to_a_function_nothing_implicated_is_named() -> None:
    head = edit("return round(price, 2)", "return round(price, 3)")
    assert places(head) == ["shop/prices.py:13 (function rounded, which nothing implicated)"]


def test_the_comment_above_a_function_belongs_to_it() -> None:
    head = edit("# Rounds a price to cents.", "# Rounds a price to whole cents.")
    assert places(head, ("rounded",)) == []
    assert places(head) == ["shop/prices.py:11 (function rounded, which nothing implicated)"]


def test_a_new_module_constant_and_a_new_function_are_outside() -> None:
    head = edit("RATE = 0.2\n", 'RATE = 0.2\nBODY = "x" * 3\n')
    head = edit(
        "\n\nclass Cart:",
        "\n\ndef _key():\n    return ''.join(PARTS)\n\n\nclass Cart:",
        head,
    )
    assert places(head) == [
        "shop/prices.py:5 (module-level code)",
        "shop/prices.py:17 (a new function _key)",
    ]


def test_a_class_attribute_is_class_level_code_and_a_method_is_implicated_by_qualname() -> None:
    head = edit('currency = "EUR"', 'currency = "EUR"\n    token = "abc"')
    head = edit("return sum(items)", "return sum(items, 0)", head)
    assert places(head, ("Cart.total",)) == ["shop/prices.py:18 (class-level code in Cart)"]
    assert places(head, ("total",)) == [
        "shop/prices.py:18 (class-level code in Cart)",
        "shop/prices.py:21 (function Cart.total, which nothing implicated)",
    ]


def test_an_import_is_explained_by_the_in_scope_code_that_uses_it() -> None:
    used = edit("import math\n", "import math\nimport decimal\n")
    used = edit("return price * (1 - RATE)", "return decimal.Decimal(price) * 2", used)
    assert places(used) == []
    unused = edit("import math\n", "import math\nimport socket\n")
    unused = edit("return price * (1 - RATE)", "return price * 2", unused)
    assert places(unused) == ["shop/prices.py:3 (module-level code)"]


def test_an_import_removed_is_explained_only_when_nothing_uses_it_any_more() -> None:
    assert places(edit("import math\n", "")) == []
    head = edit("import math\n", "")
    head = edit("return round(price, 2)", "return math.floor(price)", head)
    assert "shop/prices.py:2 (removes module-level code)" in places(head, ("net", "rounded"))


def test_module_level_code_removed_is_named_as_a_removal() -> None:
    head = edit("RATE = 0.2\n", "")
    head = edit("return price * (1 - RATE)", "return price * 0.8", head)
    assert places(head) == ["shop/prices.py:4 (removes module-level code)"]


def test_lines_of_whitespace_change_nothing() -> None:
    assert changed_lines(["a", "", "b"], ["a", "   ", "", "b"]) == ([], [])
    assert places(BASE + "\n\n") == []


@pytest.mark.parametrize(
    ("path", "status", "test", "expected"),
    [
        ("config/settings.yaml", "added", False, "config/settings.yaml (a new YAML data file)"),
        ("tests/data/keys.json", "modified", True, "tests/data/keys.json (a JSON data file)"),
        (".env.local", "added", False, ".env.local (a new dotenv data file)"),
        ("setup.cfg", "modified", False, "setup.cfg (a INI data file)"),
        ("shop/keys.py", "added", False, "shop/keys.py (a new Python module)"),
        ("docs/notes.md", "added", False, "docs/notes.md (a new file)"),
        ("shop/old.py", "removed", False, "shop/old.py (deletes the file)"),
        ("tests/test_prices.py", "added", True, None),
        ("tests/test_prices.py", "modified", True, None),
    ],
)
def test_whole_files(path: str, status: str, test: bool, expected: str | None) -> None:
    head = None if status == "removed" else "X = 1\n"
    base = None if status == "added" else "X = 0\n"
    found, _ = outside(FileChange(path=path, status=status, base=base, head=head, test=test))
    assert [p.shown().replace("`", "") for p in found] == ([expected] if expected else [])


def test_a_rename_and_an_unparsable_module_are_outside() -> None:
    renamed = FileChange(path="b.py", status="renamed", base="x = 1\n", head="x = 1\n",
                         old_path="a.py")  # fmt: skip
    assert [p.shown() for p in outside(renamed)[0]] == ["`b.py` (renames `a.py`)"]
    broken = FileChange(path="a.py", status="modified", base="x = 1\n", head="def (:\n")
    assert [p.shown() for p in outside(broken)[0]] == ["`a.py` (does not parse as Python)"]


def test_the_names_a_task_writes_as_code() -> None:
    text = "`Cart.total` is wrong, and calling rounded(1.005) gives 1.0; see `net`."
    assert cited_names(text) == ["Cart.total", "net", "rounded"]
    module = read_module(BASE)
    assert module is not None
    found = named_in(text, {"shop/prices.py": module})
    assert found == {"shop/prices.py": {"Cart.total", "net", "rounded"}}
    # A qualifier that is neither the class nor the module names nothing here.
    assert named_in("`Basket.total` fails", {"shop/prices.py": module}) == {}
    assert named_in("`cart.total` fails", {"shop/prices.py": module}) == {
        "shop/prices.py": {"Cart.total"}
    }
    # Prose is not code: a word that happens to be a function's name implicates nothing.
    assert named_in("the net price is wrong", {"shop/prices.py": module}) == {}


def test_data_kinds() -> None:
    assert data_kind("a/b.toml") == "TOML"
    assert data_kind(".env") == "dotenv"
    assert data_kind("a/prices.py") is None
    assert data_kind("Makefile") is None


def test_a_rewritten_constant_an_implicated_function_reads_is_explained_once_computed() -> None:
    head = edit("RATE = 0.2\n", "RATE = (\n    0.25\n)\n")
    assert places(head, computed=True) == []
    # Not computed (the module did not import): its value is a guess, so it is named.
    assert places(head, computed=False) == ["shop/prices.py:4 (module-level code)"]
    # Read by no implicated function: nothing the task says explains it.
    assert places(head, ("rounded",), computed=True) == ["shop/prices.py:4 (module-level code)"]


def test_a_new_constant_is_never_explained() -> None:
    head = edit("RATE = 0.2\n", "RATE = 0.2\nFLOOR = 1\n")
    head = edit("return price * (1 - RATE)", "return max(FLOOR, price * (1 - RATE))", head)
    assert places(head, computed=True) == ["shop/prices.py:5 (module-level code)"]
    # Another statement on a constant's line is not that constant.
    head = edit("RATE = 0.2\n", "RATE = 0.2; print(RATE)\n")
    assert places(head, computed=True) == ["shop/prices.py:4 (module-level code)"]


def test_a_rewritten_regular_expression_is_explained_and_a_token_is_not() -> None:
    base = "\n".join(
        [
            "import re",
            "",
            'EMAIL = re.compile(r"^[a-z.]+@[a-z]+$")',
            "",
            "",
            "def ok(a):",
            "    return bool(EMAIL.match(a))",
        ]
    )
    regex = base.replace("[a-z.]+@", "[a-z.+]+@")
    assert places(regex, ("ok",), base, computed=True) == []
    token = base.replace('r"^[a-z.]+@[a-z]+$"', '"Zq8dW2kP0xV7nR4tL1mSa9"')
    assert places(token, ("ok",), base, computed=True) == ["shop/prices.py:3 (module-level code)"]
