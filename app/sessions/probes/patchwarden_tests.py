"""A pytest plugin: run only the chosen tests, and say which functions each reaches.

Loaded inside the sandbox with ``-p patchwarden_tests`` (this folder on ``PYTHONPATH``).

- ``$SELECT_TESTS_FILE`` names a file of JUnit ids (``classname::name``, as pytest's
  ``--junitxml`` writes them), one a line: every other collected test is deselected.
  Collection errors are still reported, as without the plugin.
- ``$TRACE_REPORT``, when set, names where to write, at the end, every Python
  function each test called (set-up, call and tear-down) whose file is under
  ``$TRACE_ROOT``: ``{test id: [[path relative to the root, first line], ...]}``. A
  function is known by its file and its first line (a decorated one's first
  decorator): the caller maps that to a function of the tree.

Standard library and pytest only; it imports nothing of Patchwarden.
"""

from __future__ import annotations

import json
import os
import sys

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

    def tracer(frame: object, event: str, arg: object) -> None:
        if event == "call":
            codes.add(frame.f_code)  # type: ignore[attr-defined]

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous)
        found = _reached.setdefault(junit_id(item.nodeid), set())
        for code in codes:
            name = code.co_filename  # type: ignore[attr-defined]
            if name.startswith(_ROOT):
                found.add((name[len(_ROOT) :], code.co_firstlineno))  # type: ignore[attr-defined]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    out = os.environ.get("TRACE_REPORT")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            json.dump({k: sorted(v) for k, v in _reached.items()}, f)
