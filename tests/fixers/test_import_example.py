"""How the repository's tests import, as the reproduction prompt shows it
(app/fixers/llm/repair/testruns.py `import_example`): from the test file that imports the code
under test, never a relative import a new file cannot make."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.fixers.llm.localize import Index, index
from app.fixers.llm.repair.testruns import import_example
from tests.realworld.conftest import unpack
from tests.realworld.projects import PROJECTS

IDX = Index(
    sources={
        "shop/cart.py": "def total():\n    return 0\n",
        "tests/test_cart.py": (
            "from __future__ import annotations\n"
            "import pytest\n"
            "from . import CartMixin\n"
            "from .helpers import make\n"
            "from shop import cart\n\n\n"
            "def test_total():\n    assert cart.total() == 0\n"
        ),
        "tests/test_pricing.py": (
            "import decimal\n"
            "from shop.pricing import (\n    gross,\n    net,\n)\n\n\n"
            "def test_gross():\n    assert gross(1)\n"
        ),
    }
)


@pytest.mark.parametrize(
    ("module", "shown"),
    [
        ("shop.pricing", "import decimal\nfrom shop.pricing import gross, net"),
        ("shop.cart", "import pytest\nfrom shop import cart"),  # `from shop import cart`
        ("", "import pytest\nfrom shop import cart"),  # the first file, relative ones out
        ("elsewhere", "import pytest\nfrom shop import cart"),
    ],
)
def test_the_test_file_that_imports_the_code_is_shown_without_relative_imports(
    module: str, shown: str
) -> None:
    assert import_example(IDX, module) == shown


def test_the_lines_that_name_the_code_are_kept_when_there_are_many() -> None:
    many = "import m0\n" + "".join(f"import m{n}\n" for n in range(12))  # m0 twice
    many += "from shop.cart import total\n"
    idx = Index(sources={"tests/test_many.py": many})
    shown = import_example(idx, "shop.cart").splitlines()
    assert len(shown) == 8
    assert shown[-1] == "from shop.cart import total"
    assert shown[:2] == ["import m0", "import m1"]  # once


def test_an_import_the_tests_try_is_shown_and_its_fallback_is_not() -> None:
    idx = Index(
        sources={
            "tests/test_zones.py": (
                "import pytest\n"
                "try:\n    from shop.zones import utc\nexcept ImportError:\n"
                "    from backports.zones import utc\n\n\n"
                "def test_utc():\n    assert utc\n"
            )
        }
    )
    assert import_example(idx, "shop.zones") == "import pytest\nfrom shop.zones import utc"


@pytest.mark.realworld
@pytest.mark.parametrize(
    ("name", "module", "wanted"),
    [
        ("cachetools", "cachetools.keys", "import cachetools.keys"),
        ("python_dateutil", "dateutil.utils", "from dateutil.utils import within_delta"),
        ("humanize", "humanize.number", "from humanize import number"),
    ],
)
def test_in_real_projects_the_example_imports_the_code_under_test(
    name: str, module: str, wanted: str, tmp_path: Path
) -> None:
    """cachetools' first test file imports `from . import CacheTestMixin` (6 of 9 model
    tests copied it and failed), dateutil's imports `easter` (the bug was in `utils`)."""
    project = next(p for p in PROJECTS if p.name == name)
    shown = import_example(index(unpack(project, tmp_path / name)), module)
    assert wanted in shown.splitlines()
    assert "from ." not in shown
    assert "easter" not in shown
