"""Where the suite's time goes: a pytest plugin behind ``--profile-json PATH``.

Off unless asked for (``make test-profile`` asks: scripts/test_profile.py prints the
tables). It records, per test: the setup, call and teardown durations; the time each
fixture's setup took (a session or module fixture is charged to the first test that
needs it); and each command a coding session ran in the sandbox in that test's process
(the tool's name, seconds, CPU seconds where the sandbox accounts for them). Under
pytest-xdist the workers attach what they measured to their reports and the controller
writes one file.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

_fixtures: dict[str, float] = {}
_commands: list[tuple[str, float, float | None]] = []
_records: dict[str, dict[str, Any]] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--profile-json",
        metavar="PATH",
        default=None,
        help="write each test's phases, fixture setups and sandboxed commands to PATH",
    )


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("--profile-json"))


def tool_of(argv: Sequence[str]) -> str:
    """The program a sandboxed command runs: ``semgrep``, ``pytest`` (also as ``python
    -m pytest``), ``pip``…"""
    if not argv:
        return "?"
    name = os.path.basename(argv[0])
    if name.startswith("python") and "-m" in argv[:-1]:
        return argv[list(argv).index("-m") + 1]
    if name in ("sh", "bash") and len(argv) > 2 and argv[1] == "-c":
        return f"{name} -c"
    return name


def pytest_configure(config: pytest.Config) -> None:
    if not _enabled(config):
        return
    from app.sessions.sandbox import Sandbox

    original = Sandbox.run

    async def timed(self: Sandbox, argv: Sequence[str], **kwargs: Any) -> Any:
        started = time.monotonic()
        done = await original(self, argv, **kwargs)
        _commands.append((tool_of(argv), time.monotonic() - started, done.usage.cpu_seconds))
        return done

    Sandbox.run = timed  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Generator[None, None, None]:
    started = time.monotonic()
    yield
    name = f"{fixturedef.argname} ({fixturedef.scope})"
    _fixtures[name] = _fixtures.get(name, 0.0) + time.monotonic() - started


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, None, None]:
    if call.when == "teardown" and _enabled(item.config):
        item.user_properties.append(("profile_fixtures", dict(_fixtures)))
        item.user_properties.append(("profile_commands", list(_commands)))
        _fixtures.clear()
        _commands.clear()
    yield


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    record = _records.setdefault(
        report.nodeid, {"phases": {}, "fixtures": {}, "commands": [], "outcome": "passed"}
    )
    record["phases"][report.when] = round(report.duration, 4)
    if report.failed:
        record["outcome"] = "failed"
    elif report.skipped and report.when != "teardown":
        record["outcome"] = "skipped"
    for key, value in report.user_properties:
        if key == "profile_fixtures":
            record["fixtures"] = {k: round(v, 4) for k, v in value.items()}
        elif key == "profile_commands":
            record["commands"] = [[t, round(s, 4), c] for t, s, c in value]


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not _enabled(config) or hasattr(config, "workerinput"):
        return  # an xdist worker: its reports went to the controller
    Path(config.getoption("--profile-json")).write_text(json.dumps({"tests": _records}))
