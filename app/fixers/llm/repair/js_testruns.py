"""The repair's runs of an npm project's tests in the sandbox: its own test command (or
one test file, with the project's runner), the runner's report read test by test, and
what it printed; a project whose runner reports no test one by one is judged by its exit
code, as one pseudo-test (:data:`WHOLE`)."""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from app.policy.evidence import TestRun
from app.sessions import node_tests
from app.sessions.fix_context import FixContext
from app.sessions.reports import ReportError
from app.sessions.sandbox import Mount
from app.sessions.test_command import REPORTS_MOUNT, read_test_report, reported_test_command

# The pseudo-test of a project whose runner reports no test one by one (`npm test`).
WHOLE = "the test command"


@dataclass(frozen=True)
class JsTests:
    """One run of the project's tests in the sandbox: each test's outcome (when its
    runner reports them) and what it printed."""

    __test__ = False  # not a pytest test class
    run: TestRun
    output: str

    def failing(self) -> list[str]:
        """The tests that failed; the whole command when it failed and no test says so
        (no report, or one that hides the failure: the exit code is never overruled)."""
        red = self.run.exit_code != 0 or self.run.timed_out
        found = sorted(t for t, o in self.run.outcomes.items() if o in ("failed", "errored"))
        return found or ([WHOLE] if red else [])

    def passing(self) -> set[str]:
        if not self.run.outcomes:
            return {WHOLE} if self.run.exit_code == 0 and not self.run.timed_out else set()
        return {t for t, o in self.run.outcomes.items() if o == "passed"}


async def run_js_tests(ws: FixContext, *, name: str, only: str | None = None) -> JsTests:
    """The project's tests (or the test file ``only``, with the project's runner) on
    the tree, in the sandbox, with its runner's report read test by test."""
    reports = Path(tempfile.mkdtemp(prefix="repair-", dir=ws.workspace.root))
    ws.sandbox.prepare_writable(reports)
    runner = ws.commands.node_runner
    argv, env = reported_test_command(ws.commands, ws.env_dir)
    if only is not None:
        runner = runner or "node"  # node's own runner needs nothing installed
        alone = {"node": ["node", "--test"], "vitest": ["vitest", "run"]}.get(runner, [runner])
        argv = node_tests.reporting_command(runner, [*alone, only], REPORTS_MOUNT)
    done = await ws.run(
        argv,
        name=name,
        env=env,
        mounts=[*ws.mounts, Mount(reports, REPORTS_MOUNT, writable=True)],
        timeout=ws.timeouts.tests,
    )
    run = TestRun(exit_code=done.exit_code, timed_out=done.timed_out)
    if runner is not None:  # only a runner told to write one: nothing else may speak
        with contextlib.suppress(ReportError):  # unreadable: judged by its exit code
            run = read_test_report(runner, reports, run)
    return JsTests(run, (done.stdout + "\n" + done.stderr).strip())
