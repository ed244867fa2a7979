"""An npm project's tests, counted one by one: its ``test`` script's runner called
directly with a report it writes (node's own runner, jest, vitest, mocha), and that
report read into the outcome of every test, as pytest's JUnit report is.

The ``test`` script is called directly only when it is one runner's command alone
(``jest --coverage``, ``node --test test/``): anything else (``tsc && jest``, an
environment assignment, a shell pipe) runs as ``npm test`` and is judged by its exit
code. Pure: it runs nothing; the verifier runs the command and hands the report here.

Test ids: ``file::suite > test`` for jest (the file relative to the tree; a file that
could not run is an errored id of its own, as a module pytest could not import),
``classname::name`` from the JUnit report of vitest and mocha, and ``suite > test``
for node's runner, whose JUnit report names no file (two files' tests of the same
name are one id: the worse outcome wins).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any, Literal

from app.policy.evidence import TestCounts
from app.sessions.junit import MAX_JUNIT_BYTES, RANK, JUnitReport, Outcome, parse_junit
from app.sessions.reports import ReportError

Runner = Literal["node", "jest", "vitest", "mocha"]
# The report each runner writes, in the reports folder.
REPORT_FILE: dict[Runner, str] = {
    "node": "junit.xml",
    "jest": "jest.json",
    "vitest": "junit.xml",
    "mocha": "junit.xml",
}
_SHELL = set("|&;<>()$`*?[]{}~")
_JEST_OUTCOME: dict[str, Outcome] = {
    "passed": "passed",
    "failed": "failed",
    "pending": "skipped",
    "skipped": "skipped",
    "todo": "skipped",
    "disabled": "skipped",
    "focused": "passed",
}


def direct_command(script: str) -> tuple[Runner, list[str]] | None:
    """The runner and its argument list when the ``test`` script is one runner's
    command alone; None for anything a shell must read or npm must run."""
    if set(script) & _SHELL:  # operators, expansions, globs: a shell must read it
        return None
    try:
        argv = shlex.split(script)
    except ValueError:
        return None
    if not argv or "=" in argv[0]:  # nothing, or an environment assignment first
        return None
    runner = runner_of(argv)
    return (runner, argv) if runner is not None else None


def runner_of(argv: Sequence[str]) -> Runner | None:
    """The runner a test command calls directly (as :func:`direct_command` made it)."""
    if argv[:1] == ["node"] and "--test" in argv[1:]:
        return "node"
    first = argv[0] if argv else ""
    return first if first in ("jest", "vitest", "mocha") else None  # type: ignore[return-value]


def reporting_command(runner: Runner, argv: Sequence[str], reports: str) -> list[str]:
    """``argv`` with the options that make ``runner`` write its report into the folder
    ``reports`` (a path inside the sandbox) and still print what it prints."""
    out = f"{reports}/{REPORT_FILE[runner]}"
    if runner == "node":
        node_options = [
            "--test-reporter=spec",
            "--test-reporter-destination=stdout",
            "--test-reporter=junit",
            f"--test-reporter-destination={out}",
        ]
        return [argv[0], *node_options, *argv[1:]]
    if runner == "jest":
        return [*argv, "--ci", "--json", f"--outputFile={out}"]
    if runner == "vitest":  # once, not watching: `vitest run`
        rest = argv[2:] if argv[1:2] and argv[1] in ("run", "watch", "dev") else argv[1:]
        reporters = ["--reporter=default", "--reporter=junit", f"--outputFile.junit={out}"]
        return [argv[0], "run", *rest, *reporters]
    return [*argv, "--reporter", "xunit", "--reporter-option", f"output={out}"]


def parse_report(runner: Runner, data: bytes, *, root: str = "/workspace") -> JUnitReport:
    """The outcome of every test from ``runner``'s report; :class:`ReportError` when it
    cannot be read (the run is then judged by its exit code)."""
    if runner == "jest":
        return parse_jest(data, root=root)
    return parse_junit(data, nested=runner == "node")


def parse_jest(data: bytes, *, root: str = "/workspace") -> JUnitReport:
    """Outcomes from jest's ``--json`` report: ``file::ancestor > title`` per test, and a
    test file that failed to run (a syntax error, a missing module) errored by its name."""
    if len(data) > MAX_JUNIT_BYTES:
        raise ReportError(f"jest report is {len(data)} bytes; more than {MAX_JUNIT_BYTES}")
    try:
        doc: Any = json.loads(data)
    except ValueError as exc:
        raise ReportError(f"jest report is not JSON ({exc})") from None
    results = doc.get("testResults") if isinstance(doc, dict) else None
    if not isinstance(results, list):
        raise ReportError("jest report has no testResults list")
    outcomes: dict[str, Outcome] = {}
    for result in results:
        if not isinstance(result, dict):
            continue
        name = str(result.get("name", ""))
        file = name.removeprefix(root.rstrip("/") + "/")
        tests = [t for t in result.get("assertionResults") or [] if isinstance(t, dict)]
        if not tests and result.get("status") == "failed":
            outcomes[file] = "errored"
        for test in tests:
            titles = [*map(str, test.get("ancestorTitles") or []), str(test.get("title", ""))]
            outcome = _JEST_OUTCOME.get(str(test.get("status")), "errored")
            test_id = f"{file}::{' > '.join(titles)}"
            if test_id not in outcomes or RANK[outcome] > RANK[outcomes[test_id]]:
                outcomes[test_id] = outcome  # two tests of one name: the worse one counts
    counts = TestCounts(
        passed=sum(o == "passed" for o in outcomes.values()),
        failed=sum(o == "failed" for o in outcomes.values()),
        errored=sum(o == "errored" for o in outcomes.values()),
        skipped=sum(o == "skipped" for o in outcomes.values()),
    )
    return JUnitReport(counts=counts, outcomes=outcomes)
