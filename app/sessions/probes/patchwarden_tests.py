"""A pytest plugin: run only the chosen tests, and say which functions each reaches.

Loaded inside the sandbox with ``-p patchwarden_tests`` (this folder on ``PYTHONPATH``).

- ``$SELECT_TESTS_FILE`` names a file of JUnit ids (``classname::name``, as pytest's
  ``--junitxml`` writes them), one a line: every other collected test is deselected.
  Collection errors are still reported, as without the plugin.
- ``$TRACE_REPORT``, when set, names where to write, at the end, every Python
  function each test called (set-up, call and tear-down) whose file is under
  ``$TRACE_ROOT``: ``{test id: [[path relative to the root, first line], ...]}``. A
  function is known by its file and its first line (a decorated one's first
  decorator): the caller maps that to a function of the tree. Under pytest-xdist each
  worker writes its own (the path and ``.gw0``...), and the controller none.

Standard library and pytest only; it imports nothing of Patchwarden.
"""

from __future__ import annotations

import json
import os
import sys
from types import FrameType
from typing import Any

import pytest

_ROOT = os.path.join(os.environ.get("TRACE_ROOT", "/workspace"), "")
_reached: dict[str, set[tuple[str, int]]] = {}


def _wanted() -> set[str] | None:
    path = os.environ.get("SELECT_TESTS_FILE")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return {line.strip() for line in f if line.strip()}
    except OSError:
        return set()


def junit_id(nodeid: str) -> str:
    """The id pytest's JUnit report gives the test ``nodeid``."""
    from _pytest.junitxml import mangle_test_address

    names = mangle_test_address(nodeid)
    return "::".join([".".join(names[:-1]), names[-1]]) if len(names) > 1 else names[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = _wanted()
    if wanted is None:
        return
    keep = [i for i in items if junit_id(i.nodeid) in wanted]
    drop = [i for i in items if junit_id(i.nodeid) not in wanted]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    if not os.environ.get("TRACE_REPORT"):
        yield
        return
    codes: set[object] = set()

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call":
            codes.add(frame.f_code)
        return None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous)
        test = junit_id(item.nodeid)
        found = _reached.setdefault(test, set())
        for code in codes:
            name = code.co_filename  # type: ignore[attr-defined]
            if name.startswith(_ROOT):
                found.add((name[len(_ROOT) :], code.co_firstlineno))  # type: ignore[attr-defined]


def _report(path: str, session: pytest.Session) -> str | None:
    """Where this process writes a report: a pytest-xdist worker beside it, under its
    own name (``reached.json.gw0``), and the controller, which runs no test, nowhere."""
    worker = getattr(session.config, "workerinput", None)  # set in an xdist worker only
    if isinstance(worker, dict) and worker.get("workerid"):
        return f"{path}.{worker['workerid']}"
    return None if session.config.pluginmanager.has_plugin("dsession") else path


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    out = os.environ.get("TRACE_REPORT")
    if out and (path := _report(out, session)):
        with open(path, "w", encoding="utf-8") as f:
            json.dump({k: sorted(v) for k, v in _reached.items()}, f)
