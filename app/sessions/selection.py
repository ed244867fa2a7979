"""Running only some of a repository's pytest tests, and tracing what they reach.

The plugin ``probes/patchwarden_tests.py`` does the work inside the sandbox;
:func:`selecting` gives a test run what it needs to load it: pytest options (through
``PYTEST_ADDOPTS``, so it reaches pytest however the repository's command starts it),
the environment, and two mounts (the probes folder, read-only, and a folder with the
list of tests and, when tracing, the report). Used by the scope's trace of the tests
that show a fix (app/sessions/contain.py) and by the culprit finder, whose bisect probes
need only the tests that failed (app/fixers/culprit.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.sessions import probes
from app.sessions.files import read_confined
from app.sessions.sandbox import WORKSPACE, Mount

PROBES = Path(probes.__file__).parent
PROBES_MOUNT = "/probes"
SELECTION_MOUNT = "/selection"
PLUGIN = "patchwarden_tests"
IDS_FILE = "tests.txt"
TRACE_FILE = "reached.json"


@dataclass(frozen=True)
class Selection:
    """What a test run needs to run only the chosen tests (and trace them)."""

    addopts: tuple[str, ...]
    env: dict[str, str]
    mounts: tuple[Mount, ...]
    folder: Path  # the host side of /selection: the trace report lands here

    @property
    def trace(self) -> Path:
        return self.folder / TRACE_FILE


def selecting(ids: Iterable[str] | None, folder: Path, *, trace: bool = False) -> Selection:
    """Run only the tests of ``ids`` (JUnit ids; None: every test) — and, with ``trace``,
    record what each reaches under /workspace. ``folder`` (made by the caller, writable
    by the sandbox) holds the list and the reports."""
    env = {"PYTHONPATH": PROBES_MOUNT}
    if ids is not None:
        (folder / IDS_FILE).write_text("".join(f"{i}\n" for i in sorted(set(ids))))
        env["SELECT_TESTS_FILE"] = f"{SELECTION_MOUNT}/{IDS_FILE}"
    if trace:
        env |= {"TRACE_REPORT": f"{SELECTION_MOUNT}/{TRACE_FILE}", "TRACE_ROOT": WORKSPACE}
    mounts = (Mount(PROBES, PROBES_MOUNT), Mount(folder, SELECTION_MOUNT, writable=True))
    return Selection(addopts=("-p", PLUGIN), env=env, mounts=mounts, folder=folder)


def read_trace(folder: Path, name: str, *, limit: int) -> dict[str, Any]:
    """A trace report the plugin wrote in ``folder`` (the sandbox wrote it: read
    confined, each file at most ``limit`` bytes), merged with those of pytest-xdist's
    workers (``name.gw0``, ``name.gw1``…: each worker writes the tests it ran); {} when
    there is none or none is a JSON object."""
    pattern = re.compile(re.escape(name) + r"\.gw\d+")
    names = [name, *sorted(n.name for n in folder.iterdir() if pattern.fullmatch(n.name))]
    merged: dict[str, Any] = {}
    for each in names:
        try:
            raw = json.loads(read_confined(folder, each, limit=limit) or b"{}")
        except ValueError:
            continue
        if isinstance(raw, dict):
            merged.update(raw)
    return merged
