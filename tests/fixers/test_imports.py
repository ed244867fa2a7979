"""The imports a small model forgets: found where there is one reading, put where
Python reads imports, never for a name the module left unbound before."""

from __future__ import annotations

import pytest

from app.fixers.llm.imports import forgotten, importable, module_name, with_import_lines

BEFORE = (
    '"""Stock."""\n'
    "from __future__ import annotations\n\n"
    "from collections import defaultdict\n\n\n"
    "class Inventory:\n"
    "    def remove(self, sku, count):\n"
    "        self.stock[sku] -= count\n"
)
DEFINES = {
    "OutOfStock": ["shop.errors"],
    "Ambiguous": ["shop.a", "shop.b"],
    "unicodedata": ["shop.unicodedata_helpers"],  # a repository def named like a module
}


def defined_in(name: str) -> list[str]:
    return DEFINES.get(name, [])


def changed(body: str) -> str:
    return BEFORE.replace("        self.stock[sku] -= count\n", body)


@pytest.mark.parametrize(
    ("body", "imports"),
    [
        # inventory-negative: the exception one module of the repository defines
        ("        raise OutOfStock(sku)\n", ["from shop.errors import OutOfStock"]),
        # slug-accents: a standard module used as one, even where a def shares its name
        ("        return unicodedata.normalize('NFKD', sku)\n", ["import unicodedata"]),
        # a standard name used alone, and the module of one used as a module
        (
            "        return date.today(), datetime.timedelta(1)\n",
            ["from datetime import date", "import datetime"],
        ),
        # two modules define it: no guess
        ("        raise Ambiguous(sku)\n", []),
        # bound in the function, by assignment, loop, exception name or import
        ("        for x in sku:\n            y = x\n        return y\n", []),
        (
            "        try:\n            pass\n        except KeyError as e:\n            raise e\n",
            [],
        ),
        ("        import json\n        return json.dumps(sku)\n", []),
        # already imported, or a builtin
        ("        return defaultdict(list), len(sku)\n", []),
        # nobody defines it: nothing to import (the test run says NameError)
        ("        return no_such_name(sku)\n", []),
    ],
)
def test_names_a_change_reads_and_never_binds_are_imported_where_one_reading(
    body: str, imports: list[str]
) -> None:
    assert sorted(forgotten(BEFORE, changed(body), defined_in)) == sorted(imports)


def test_a_name_the_module_left_unbound_before_is_its_own_business() -> None:
    """A name a module reads from `globals()` tricks or a star import stays as it was."""
    before = BEFORE + "\n\ndef f():\n    return OutOfStock\n"
    assert forgotten(before, before + "\n\ndef g():\n    raise OutOfStock\n", defined_in) == []
    starred = "from shop.errors import *\n" + BEFORE
    assert (
        forgotten(starred, starred.replace("-= count", "-= count\n        raise X"), defined_in)
        == []
    )


def test_imports_go_after_the_docstring_and_future_imports() -> None:
    lines = forgotten(BEFORE, changed("        raise OutOfStock(sku)\n"), defined_in)
    out = with_import_lines(changed("        raise OutOfStock(sku)\n"), lines)
    assert out.startswith(
        '"""Stock."""\nfrom __future__ import annotations\nfrom shop.errors import OutOfStock\n'
    )
    compile(out, "inventory.py", "exec")  # still Python: __future__ stays first


@pytest.mark.parametrize(
    ("path", "module"),
    [("shop/errors.py", "shop.errors"), ("src/pkg/__init__.py", "pkg"), ("src.py", "src")],
)
def test_a_file_is_imported_by_its_module_path(path: str, module: str) -> None:
    assert module_name(path) == module


@pytest.mark.parametrize(
    ("module", "ok"),
    [
        ("shop.errors", True),
        ("", False),  # a root __init__.py
        ("migrations.0001_initial", False),
        ("scripts.build-docs", False),
        ("scripts.release", False),  # a script, not the project's code
        ("setup", False),
        ("pkg.conftest", False),
    ],
)
def test_only_the_projects_own_modules_are_imported_from(module: str, ok: bool) -> None:
    assert importable(module) is ok


def test_names_a_match_pattern_binds_are_bound() -> None:
    changed_ = changed(
        "        match sku:\n"
        "            case {'x': Point, **rest}:\n                return Point, rest\n"
        "            case [first, *others]:\n                return first, others\n"
    )
    compile(changed_, "inventory.py", "exec")  # the test is about a module that parses
    assert forgotten(BEFORE, changed_, lambda name: ["geo"]) == []


def test_a_form_feed_in_the_docstring_does_not_move_the_import_into_it() -> None:
    content = '"""Stock.\x0c\nmore."""\nX = 1\n'
    out = with_import_lines(content, ["import os"])
    assert out == '"""Stock.\x0c\nmore."""\nimport os\nX = 1\n'
