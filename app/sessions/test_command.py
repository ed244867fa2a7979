"""The repository's test command as every step runs it: the tree and its environment
mounted (:func:`tree_mounts`), pytest's options through ``PYTEST_ADDOPTS``
(:func:`repo_test_command`), a report of every test asked for — pytest's JUnit report,
or the one an npm project's runner writes (:func:`reported_test_command`) — and read
back (:func:`read_test_report`)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from app.policy.evidence import TestRun
from app.sessions import eslint, junit, node_tests
from app.sessions.files import read_confined
from app.sessions.repo_commands import ENV_MOUNT, NODE_MODULES, RepoCommands
from app.sessions.sandbox import WORKSPACE, Mount

REPORTS_MOUNT = "/reports"


def tree_mounts(tree: Path, env_dir: Path | None) -> list[Mount]:
    """A tree at /workspace (writable) and its cached environment at /env (read-only);
    an npm project's packages, kept in the environment, at /workspace/node_modules
    (read-only), where node looks for them."""
    mounts = [Mount(tree, WORKSPACE, writable=True)]
    if env_dir is not None:
        mounts.append(Mount(env_dir, ENV_MOUNT))
        packages = eslint.packages_of(env_dir)  # a real folder: a link would reach the host
        if packages is not None:
            mounts.append(Mount(packages, f"{WORKSPACE}/{NODE_MODULES}"))
    return mounts


def repo_test_command(
    commands: RepoCommands,
    env_dir: Path | None,
    extra: Sequence[str] = (),
    *,
    addopts: Sequence[str] = (),
) -> tuple[list[str], dict[str, str]]:
    """The repository's test command (plus ``extra`` arguments) and its environment,
    as every step runs it. pytest's options go through ``PYTEST_ADDOPTS``, so they
    reach pytest however the repository runs it (``pytest``, ``python -m pytest``,
    inside ``sh -c`` or ``make test``): no cache (it would land in the patch), plus
    ``addopts`` (the JUnit report). Without an environment of its own the repository
    runs on Patchwarden's Python, without Patchwarden's own pytest plugins."""
    argv = [*commands.test, *extra]
    env = {"PYTEST_ADDOPTS": shlex.join(["-p", "no:cacheprovider", *addopts])}
    if env_dir is None:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return argv, env


def reported_test_command(
    commands: RepoCommands,
    env_dir: Path | None,
    extra: Sequence[str] = (),
    *,
    addopts: Sequence[str] = (),
) -> tuple[list[str], dict[str, str]]:
    """:func:`repo_test_command` asking for a report of every test in
    :data:`REPORTS_MOUNT`: pytest's JUnit report (every module's tests even when one of
    them does not import), or the report an npm project's runner writes
    (:mod:`~app.sessions.node_tests`)."""
    report = [f"--junitxml={REPORTS_MOUNT}/junit.xml", "--continue-on-collection-errors"]
    argv, env = repo_test_command(commands, env_dir, extra, addopts=[*report, *addopts])
    runner = commands.node_runner
    if runner is not None:
        argv = node_tests.reporting_command(runner, argv, REPORTS_MOUNT)
    return argv, env


def writes_report(commands: RepoCommands) -> bool:
    """Whether the test command is asked for a report it writes: pytest's JUnit report,
    or an npm runner's called directly. An npm project's other commands write none, so
    a file found in the reports folder is not theirs and is never read."""
    return commands.kind != "node" or commands.node_runner is not None


def read_test_report(runner: node_tests.Runner | None, reports_dir: Path, run: TestRun) -> TestRun:
    """``run`` with the outcome of every test from the report its command wrote in
    ``reports_dir`` (an npm ``runner``'s, or pytest's JUnit report); as it was when
    there is none. Raises :class:`~app.sessions.reports.ReportError` for a report that
    cannot be read."""
    name = node_tests.REPORT_FILE[runner] if runner is not None else "junit.xml"
    data = read_confined(reports_dir, name, limit=junit.MAX_JUNIT_BYTES + 1)
    if not data:
        return run
    if runner is not None:
        counts, outcomes = node_tests.parse_report(runner, data)
    else:
        counts, outcomes = junit.parse_junit(data)
    return run.model_copy(update={"counts": counts, "outcomes": outcomes})
