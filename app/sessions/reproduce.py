"""Does a test show the problem? The patch's own tests, run against the base code.

A fix is believable when a test fails without it and passes with it. An existing test
that failed on the base and passes on the patch shows that already (``TestDelta.fixed``).
A test the patch adds or changes is checked here, independently of what the fixer
claims: the patch's versions of its test files are put into the base tree, only those
files are run, and every test that fails there and passes on the patch
**reproduces** the problem. The base tree is put back as it was afterwards.

For runners whose test files can be named on their command line and whose per-test
outcomes are read from a report: pytest, and an npm project's runner called directly
(node's own, jest, vitest, mocha: :mod:`app.sessions.node_tests`). Others (a test script
npm must run) get no reproduction check.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

from app.policy.evidence import TestRun
from app.policy.js_syntax import is_source
from app.sessions.files import read_confined, remove_confined, write_confined
from app.sessions.repo_commands import RepoCommands
from app.sessions.result import Diff, Step
from app.sessions.verify import Verifier

log = logging.getLogger(__name__)
MAX_FILES = 20  # test files run against the base at most
MAX_FILE_BYTES = 1024 * 1024


def checks_reproduction(commands: RepoCommands) -> bool:
    """Whether the repository's test command can run named test files and report each
    test's outcome (pytest, or an npm runner called directly)."""
    return commands.is_pytest or commands.node_runner is not None


def test_files(diff: Diff, is_test: Callable[[str], bool], commands: RepoCommands) -> list[str]:
    """The test files the patch adds or changes (none it removes) in the language of
    the repository's runner: Python for pytest, JavaScript or TypeScript for npm's."""
    javascript = commands.node_runner is not None
    return sorted(
        f.path
        for f in diff.files
        if f.status in ("added", "modified", "renamed")
        and not f.binary
        and (is_source(f.path) if javascript else f.path.endswith(".py"))
        and is_test(f.path)
    )[:MAX_FILES]


async def reproduced(
    verifier: Verifier,
    *,
    base_tree: Path,
    head_tree: Path,
    env_dir: Path | None,
    commands: RepoCommands,
    paths: list[str],
    head: TestRun,
) -> tuple[Step | None, list[str]]:
    """The step that ran the patch's test files on the base code, and the tests that
    failed there and pass on the patch (sorted); (None, []) when there is nothing to run."""
    if not checks_reproduction(commands) or not paths or not head.outcomes:
        return None, []
    try:
        with patch_tests_in_base(verifier, base_tree, head_tree, paths) as placed:
            if not placed:
                return None, []
            step, run = await verifier.tests(
                base_tree, env_dir, commands, label="base", extra=placed, name="reproduce"
            )
    except OSError as exc:
        # Best effort: a path the base tree cannot hold (a symlink on the way) is no
        # reason to fail a verified patch; it only shows nothing.
        log.warning("reproduction not checked: %s", exc)
        return None, []
    failing = {t for t, o in run.outcomes.items() if o in ("failed", "errored")}
    passing = {t for t, o in head.outcomes.items() if o == "passed"}
    return step, sorted(failing & passing)


@contextlib.contextmanager
def patch_tests_in_base(
    verifier: Verifier, base_tree: Path, head_tree: Path, paths: list[str]
) -> Iterator[list[str]]:
    """The patch's versions of the test files ``paths`` put into the base tree for the
    time of the block (the paths placed, sorted), then the base's put back."""
    saved: dict[str, bytes | None] = {}
    try:
        for rel in paths:
            data = read_confined(head_tree, rel, limit=MAX_FILE_BYTES + 1)
            if data is None or len(data) > MAX_FILE_BYTES:
                continue  # a symlink, or larger than a test file should be: not run
            before = read_confined(base_tree, rel, limit=MAX_FILE_BYTES + 1)
            if before is not None and len(before) > MAX_FILE_BYTES:
                continue  # could not be put back whole
            write_confined(base_tree, rel, data)
            saved[rel] = before  # only once written: only that is put back
            verifier.sandbox.prepare_writable(base_tree / rel)
        yield sorted(saved)
    finally:
        for rel, before in saved.items():
            try:
                if before is None:
                    remove_confined(base_tree, rel)
                else:
                    write_confined(base_tree, rel, before)
            except OSError as exc:  # the session's trees are removed when it ends anyway
                log.warning("could not put back %s in the base tree: %s", rel, exc)
