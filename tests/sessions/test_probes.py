"""The programs the session runs inside the sandbox (app/sessions/probes/), run here as
plain processes on synthetic trees: what they print is what the session reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

from app.sessions.probes import module_values
from app.sessions.probes.patchwarden_tests import junit_id
from app.sessions.selection import read_trace

PROBES = Path(module_values.__file__).parent


def test_a_module_is_imported_as_its_package_would_import_it(tmp_path: Path) -> None:
    (tmp_path / "src" / "pkg" / "sub").mkdir(parents=True)
    for init in ("src/pkg/__init__.py", "src/pkg/sub/__init__.py"):
        (tmp_path / init).write_text("")
    assert module_values.module_name(str(tmp_path), "src/pkg/sub/mod.py") == (
        str(tmp_path / "src"),
        "pkg.sub.mod",
    )
    assert module_values.module_name(str(tmp_path), "src/pkg/__init__.py") == (
        str(tmp_path / "src"),
        "pkg",
    )
    assert module_values.module_name(str(tmp_path), "tests/test_x.py") == (
        str(tmp_path / "tests"),
        "test_x",
    )


def test_the_values_a_module_holds_are_walked_in_containers_and_classes() -> None:
    module = types.ModuleType("mine")
    exec(  # noqa: S102 - a synthetic module's own source
        "import os\n"
        "TOKEN = 'abcdefgh-1'\n"
        "SHORT = 'abc'\n"
        "RAW = b'bytes-value-1'\n"
        "NESTED = {'k': ['abcdefgh-2', ('abcdefgh-3',)], 'abcdefgh-4': 1}\n"
        "class Settings:\n"
        "    secret = 'abcdefgh-5'\n"
        "import re\n"
        "PATTERN = re.compile('abcdefgh-6')\n"
        "LOOP = []\n"
        "LOOP.append(LOOP)\n",
        module.__dict__,
    )
    found = dict(module_values.values(module))
    assert found["TOKEN"] == "abcdefgh-1"
    assert found["RAW"] == "bytes-value-1"
    assert found["NESTED['k'][0]"] == "abcdefgh-2"
    assert found["NESTED['k'][1][0]"] == "abcdefgh-3"
    assert found["NESTED[1]"] == "abcdefgh-4"
    assert found["Settings.secret"] == "abcdefgh-5"
    assert found["PATTERN.pattern"] == "abcdefgh-6"
    assert "SHORT" not in found
    assert not any(k.startswith("os") for k in found)  # another module's values are its own


def test_the_scan_reports_each_module_and_survives_one_that_exits(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text("import sys\nprint('noise')\nKEY = 'x' * 3 + 'abcdefgh'\n")
    (tmp_path / "exits.py").write_text("import os\nos._exit(3)\n")
    (tmp_path / "raises.py").write_text("raise RuntimeError('no')\n")
    (tmp_path / "hangs.py").write_text("import time\ntime.sleep(60)\n")
    done = subprocess.run(
        [
            sys.executable,
            str(PROBES / "module_values.py"),
            str(tmp_path),
            "1",
            "good.py",
            "exits.py",
            "raises.py",
            "hangs.py",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert {"path": "good.py", "imported": True} in lines
    assert {"path": "good.py", "name": "KEY", "value": "xxxabcdefgh"} in lines
    errors = {line["path"]: line["error"] for line in lines if "error" in line}
    assert errors["exits.py"] == "the import exited before it finished"
    assert errors["raises.py"] == "RuntimeError: no"
    assert errors["hangs.py"] == "the import timed out before it finished"
    assert "noise" not in done.stdout  # the module's own output goes nowhere


def run_plugin(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in ``tmp_path`` with the tests plugin loaded and ``env`` added. Its
    temporary files go under ``tmp_path``: with ``-n``, a pytest of its own would clear
    the user's old numbered temporary directories, the suite's own among them (tens of
    seconds when they hold real projects)."""
    plugin = ["-p", "patchwarden_tests", "-p", "no:cacheprovider"]
    temporary = f"--basetemp={tmp_path / '.pytest-tmp'}"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", temporary, *args, *plugin],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(PROBES), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_reach_plugin_records_what_each_chosen_test_calls(tmp_path: Path) -> None:
    calc = [
        "def helper(x):",  # 1
        "    return x",
        "",
        "",
        "@staticmethod",  # 5
        "def add(a, b):",
        "    return helper(a) + b",
        "",
        "",
        "def mul(a, b):",  # 10
        "    return a * b",
    ]
    (tmp_path / "calc.py").write_text("\n".join(calc) + "\n")
    (tmp_path / "test_calc.py").write_text(
        "from calc import add, mul\n\n\nclass TestIt:\n    def test_add(self):\n"
        "        assert add(1, 2) == 4\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
    )
    (tmp_path / "ids.txt").write_text("test_calc.TestIt::test_add\n")
    env = {
        "SELECT_TESTS_FILE": str(tmp_path / "ids.txt"),
        "TRACE_REPORT": str(tmp_path / "reach.json"),
        "TRACE_ROOT": str(tmp_path),
    }
    done = run_plugin(tmp_path, env)
    assert "1 failed, 1 deselected" in done.stdout, done.stdout
    reached = json.loads((tmp_path / "reach.json").read_text())
    assert set(reached) == {"test_calc.TestIt::test_add"}
    calls = {tuple(x) for x in reached["test_calc.TestIt::test_add"]}
    assert ("calc.py", 1) in calls  # helper
    assert ("calc.py", 5) in calls  # add, known by its decorator's line
    assert ("calc.py", 10) not in calls  # mul: not this test's


def test_junit_ids_are_the_reports() -> None:
    assert junit_id("tests/test_a.py::TestX::test_m[1]") == "tests.test_a.TestX::test_m[1]"
    assert junit_id("test_a.py::test_f") == "test_a::test_f"


def test_under_xdist_each_worker_reports_and_the_reports_are_read_together(
    tmp_path: Path,
) -> None:
    """A repository whose pytest runs its tests in worker processes (``-n 2``): each worker
    writes what its tests reached, the controller (which ran none) writes nothing over
    them, and the reader merges them."""
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "test_calc.py").write_text(
        "from calc import add\n\n\n"
        + "".join(f"def test_{n}():\n    assert add({n}, 1) == {n + 1}\n\n\n" for n in range(4))
    )
    env = {
        "TRACE_REPORT": str(tmp_path / "reach.json"),
        "TRACE_ROOT": str(tmp_path),
    }
    done = run_plugin(tmp_path, env, "-n", "2")
    assert "4 passed" in done.stdout, done.stdout
    assert not (tmp_path / "reach.json").exists()  # the controller's would be empty
    reached = read_trace(tmp_path, "reach.json", limit=1 << 20)
    assert sorted(reached) == [f"test_calc::test_{n}" for n in range(4)]
    assert all(["calc.py", 1] in places for places in reached.values())
