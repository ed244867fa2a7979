"""LocalForge's CI: the repository's own test command on every pushed head.

Like a GitHub Actions workflow ``on: push``: for each required check the forge
exports the pushed commit to a scratch directory, runs the command there with a
timeout and a bare environment, and reports a check run (``github-actions`` suite)
with the conclusion and the tail of the output. Merges wait for these checks, so
auto-merge and the post-merge canary are exercised against real test results.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from pathlib import Path

from app.localforge.check_events import check_run_changed, suite_for
from app.localforge.deliveries import Outbox
from app.localforge.state import CheckOutput, CheckRun, Repo, RequiredCheck

CI_APP = "github-actions"
OUTPUT_LIMIT = 60_000  # GitHub caps check run output text at 65535 characters


async def run_command(check: RequiredCheck, workdir: Path) -> tuple[str, int | None, str]:
    """Run ``check.command`` in ``workdir``; (conclusion, exit code, output)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "LANG": "C.UTF-8",
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        # The runner is the forge's own interpreter: the pytest plugins installed beside
        # it are not the repository's, and a GitHub runner would not have them.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    try:
        proc = await asyncio.create_subprocess_exec(
            *check.command,
            cwd=workdir,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return "failure", None, f"could not start {check.command[0]!r}: {exc}"
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=check.timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        await proc.wait()
        return "timed_out", None, f"timed out after {check.timeout:g} s"
    text = out.decode(errors="replace")[-OUTPUT_LIMIT:]
    return ("success" if proc.returncode == 0 else "failure"), proc.returncode, text


async def run_required_checks(
    hooks: Outbox, repo: Repo, branch: str, before: str | None, sha: str
) -> None:
    """Run every required check of ``repo`` on ``sha`` and report check runs."""
    actions = hooks.state.user(f"{CI_APP}[bot]")
    suite = suite_for(hooks, repo, sha, CI_APP, branch)
    suite.before = before
    suite.status = "in_progress"
    runs = []
    for check in repo.required_checks:
        if check.only_on and branch not in check.only_on:
            continue
        run = CheckRun(hooks.state.next_id(), check.name, sha, suite, CI_APP, status="in_progress")
        run.details_url = f"{hooks.state.url}/{repo.full_name}/commit/{sha}"
        repo.check_runs.append(run)
        runs.append((check, run))
        await check_run_changed(hooks, repo, run, "created", actions)
    with tempfile.TemporaryDirectory(prefix="localforge-ci-") as scratch:
        for check, run in runs:
            workdir = Path(scratch) / str(run.id)
            await asyncio.to_thread(repo.git.export, sha, workdir)
            started = time.monotonic()
            conclusion, code, text = await run_command(check, workdir)
            seconds = time.monotonic() - started
            run.status, run.conclusion, run.completed_at = "completed", conclusion, time.time()
            exit_text = "" if code is None else f" (exit {code})"
            run.output = CheckOutput(
                title=f"{check.name}: {conclusion}{exit_text}",
                summary=(
                    f"`{' '.join(check.command)}` on {sha[:7]}: {conclusion} in {seconds:.1f} s"
                ),
                text=f"```\n{text}\n```" if text else None,
            )
            await check_run_changed(hooks, repo, run, "completed", actions)


class ForgeCI:
    """The forge's CI runs: each push to a repository with required checks starts one,
    in the background, until it reports (:attr:`runs`: the ones still going)."""

    def __init__(self, hooks: Outbox) -> None:
        self.hooks = hooks
        self.runs: set[asyncio.Task[None]] = set()

    def start(self, repo: Repo, branch: str, before: str | None, sha: str) -> None:
        task = asyncio.create_task(run_required_checks(self.hooks, repo, branch, before, sha))
        self.runs.add(task)
        task.add_done_callback(self.runs.discard)

    async def stop(self) -> None:
        for task in list(self.runs):
            task.cancel()
        await asyncio.gather(*self.runs, return_exceptions=True)
