"""The repair strategy's runs of the repository's tests, in the sandbox, and the test
files it reads and writes.

A run is the repository's own test command (plus paths), with a JUnit report read back
into per-test outcomes and what each failing test printed (:class:`Tests`); a test id
(``tests.test_calc::test_add``) is found back to its file, and its source shown to the
model; a failure is trimmed to what a model needs (pytest's ``E`` lines).
"""

from __future__ import annotations

import ast
import posixpath
import re
import tempfile
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.fixers.llm.answers import parse
from app.fixers.llm.code_context import looks_like_test
from app.fixers.llm.imports import defined_by, import_lines, unbound
from app.fixers.llm.localize import Index
from app.fixers.llm.repair.splice import dedent
from app.policy.evidence import TestRun
from app.sessions import junit
from app.sessions.files import read_confined, write_confined
from app.sessions.fix_context import FixContext
from app.sessions.reports import ReportError
from app.sessions.sandbox import Mount
from app.sessions.selection import read_trace, selecting
from app.sessions.test_command import REPORTS_MOUNT, repo_test_command

MAX_TEST_CHARS = 2500

MAX_OUTPUT_CHARS = 1500

MAX_FILE_BYTES = 1024 * 1024
MAX_TRACE_BYTES = 16 * 1024 * 1024
NO_JUDGE = "no test that must pass: nothing shows the change fixes the bug"


@dataclass(frozen=True)
class Tests:
    """One test run in the sandbox, read from its JUnit report."""

    __test__ = False  # not a pytest test class
    run: TestRun
    failures: dict[str, str]  # test id -> what it printed
    # traced runs: test id -> the functions it called, as (path, first line) of the tree
    reached: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def failing(self) -> list[str]:
        return sorted(t for t, o in self.run.outcomes.items() if o in ("failed", "errored"))

    def passing(self) -> set[str]:
        return {t for t, o in self.run.outcomes.items() if o == "passed"}


async def run_tests(
    ws: FixContext,
    *,
    extra: Sequence[str] = (),
    name: str,
    trace: bool = False,
    only: Sequence[str] | None = None,
) -> Tests | None:
    """The repository's test command (plus ``extra``) on the tree, in the sandbox, read
    from its JUnit report; None when no report came back (not pytest, or it crashed).
    ``trace``: also which of the tree's functions each test called (:attr:`Tests.reached`);
    ``only``: the tests of these JUnit ids alone run (the others deselected)."""
    if not ws.commands.test:
        return None
    reports = Path(tempfile.mkdtemp(prefix="repair-", dir=ws.workspace.root))
    ws.sandbox.prepare_writable(reports)
    chosen = only is not None or trace
    traced = selecting(only, reports, trace=trace) if chosen else None
    report = [f"--junitxml={REPORTS_MOUNT}/junit.xml", "--continue-on-collection-errors"]
    addopts = [*report, *(traced.addopts if traced else ())]
    argv, env = repo_test_command(ws.commands, ws.env_dir, extra, addopts=addopts)
    done = await ws.run(
        argv,
        name=name,
        env={**env, **(traced.env if traced else {})},
        mounts=[
            *ws.mounts,
            Mount(reports, REPORTS_MOUNT, writable=True),
            *(traced.mounts if traced else ()),
        ],
        timeout=ws.timeouts.tests,
    )
    xml = read_confined(reports, "junit.xml", limit=junit.MAX_JUNIT_BYTES + 1)
    run = TestRun(exit_code=done.exit_code, timed_out=done.timed_out)
    if not xml:
        return Tests(run, {}) if done.ok else None
    try:
        counts, outcomes = junit.parse_junit(xml)
        failures = junit.failures(xml)
    except ReportError:
        return None
    run = run.model_copy(update={"counts": counts, "outcomes": outcomes})
    if not trace or traced is None:
        return Tests(run, failures)
    return Tests(run, failures, reached_in(reports, traced.trace.name))


def _place(item: object) -> bool:
    return (
        isinstance(item, list)
        and len(item) == 2
        and isinstance(item[0], str)
        and isinstance(item[1], int)
    )


def reached_in(folder: Path, name: str) -> dict[str, list[tuple[str, int]]]:
    """The plugin's trace report (:mod:`app.sessions.selection`), checked: {} when it is
    missing or not what the plugin writes."""
    raw = read_trace(folder, name, limit=MAX_TRACE_BYTES)
    out: dict[str, list[tuple[str, int]]] = {}
    for test, places in raw.items():
        items = places if isinstance(places, list) else []
        out[str(test)] = [(p[0], p[1]) for p in items if _place(p)]
    return out


def ids_in(tests: Tests, test: str) -> list[str]:
    """The ids a test stands for: itself, or every test of a file given by its path."""
    if not test.endswith(".py"):
        return [test]
    module = test.removesuffix(".py").replace("/", ".")
    return [t for t in tests.run.outcomes if t.split("::")[0].endswith(module)]


def failed_in(tests: Tests | None, test: str) -> bool:
    """Whether ``test`` (an id, or a reproduction file's path) did not pass."""
    if tests is None:
        return True
    ids = ids_in(tests, test)
    return not ids or any(tests.run.outcomes.get(t, "missing") != "passed" for t in ids)


def failure_of(tests: Tests | None, test: str) -> str:
    """What ``test`` (an id, or a file's path: its failing tests) printed, trimmed."""
    if tests is None:
        return ""
    return trim("\n".join(tests.failures[t] for t in ids_in(tests, test) if t in tests.failures))


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def trim(text: str) -> str:
    """The part of a failure a model needs: the assertion and its explanation (pytest's
    ``E`` lines, the failing line), capped."""
    lines = text.splitlines()
    keep = [ln for ln in lines if ln.startswith(("E ", ">")) or re.match(r"^[\w./-]+\.py:\d+:", ln)]
    return "\n".join(keep or lines[-15:])[-MAX_OUTPUT_CHARS:]


def path_of_test(test: str, idx: Index) -> str | None:
    """The file of a test id (``tests.test_calc::test_add``), or a path as it is."""
    if test.endswith(".py"):
        return test
    module = test.split("::")[0]
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        candidate = "/".join(parts[:n]) + ".py"
        for path in idx.sources:
            if path == candidate or path.endswith("/" + candidate):
                return path
    return None


def source_of_test(tree: Path, test: str, idx: Index, *, whole: bool = True) -> str:
    """A test's source: the whole file (``whole``), or its imports and the test."""
    path = path_of_test(test, idx)
    if path is None:
        return ""
    data = read_confined(tree, path, limit=MAX_FILE_BYTES)
    if data is None:
        return ""
    text = data.decode("utf-8", "replace")
    if whole or test.endswith(".py"):
        return text
    name = test.split("::")[-1].split("[")[0]
    module = parse(text)
    if module is None:
        return text[:MAX_TEST_CHARS]
    lines = text.splitlines()
    for node in ast.walk(module):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            body = "\n".join(dedent(lines[node.lineno - 1 : node.end_lineno or node.lineno]))
            return "\n".join([*imports_used(module, node), "", body])
    return text[:MAX_TEST_CHARS]


def imports_used(module: ast.Module, test: ast.AST) -> list[str]:
    """The module's top-level imports of the names ``test`` uses, its parameters (pytest
    fixtures imported by name) included, one line each: a test file that imports forty
    helpers shows the one its test calls. A star import is kept: what it brings is not
    written."""
    used = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    used |= {a.arg for a in ast.walk(test) if isinstance(a, ast.arg)}
    out = []
    for node in module.body:
        if isinstance(node, ast.Import):
            names = [a for a in node.names if (a.asname or a.name.split(".")[0]) in used]
            if names:
                out.append("import " + ", ".join(_alias(a) for a in names))
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            names = [a for a in node.names if a.name == "*" or (a.asname or a.name) in used]
            if names:
                where = "." * node.level + (node.module or "")
                out.append(f"from {where} import " + ", ".join(_alias(a) for a in names))
    return out


def _alias(alias: ast.alias) -> str:
    return f"{alias.name} as {alias.asname}" if alias.asname else alias.name


def tests_folder(idx: Index) -> str:
    folders = Counter(posixpath.dirname(p) for p in idx.sources if looks_like_test(p))
    folders.pop("", None)
    return folders.most_common(1)[0][0] if folders else "tests"


def free_path(tree: Path, rel: str) -> str:
    stem = rel.removesuffix(".py")
    for n in ["", *map(str, range(2, 100))]:
        candidate = f"{stem}{n}.py"
        if read_confined(tree, candidate, limit=0) is None:
            return candidate
    return f"{stem}_{uuid.uuid4().hex[:6]}.py"


MAX_IMPORTS = 8  # lines of one test file's imports shown


def import_example(idx: Index, module: str = "") -> str:
    """How the repository's tests import, for a new test to copy: the top-level
    imports of the test file that imports ``module`` (the code under test), else of one
    that imports its package, else of the first. Relative imports and ``__future__``
    are left out: a new test file is not in the tests' package (cachetools: the first
    test file's `from . import CacheTestMixin`, copied by 6 tests of 9, failed every
    one), and dateutil's first test file imported `easter` for a bug in `utils`."""
    best: tuple[int, list[str]] = (-1, [])
    for path, text in idx.sources.items():
        if not (looks_like_test(path) and posixpath.basename(path).startswith("test")):
            continue
        lines = _absolute_imports(text)
        rank = max((_mentions(line, module) for line in lines), default=-1)
        if rank > best[0]:
            best = (rank, lines)
        if rank == 2:
            break
    lines = list(dict.fromkeys(best[1]))  # a line the file repeats, once
    mentioning = [i for i, ln in enumerate(lines) if _mentions(ln, module)][:MAX_IMPORTS]
    others = [i for i in range(len(lines)) if i not in mentioning]
    kept = {*mentioning, *others[: MAX_IMPORTS - len(mentioning)]}
    return "\n".join(ln for i, ln in enumerate(lines) if i in kept)


def _absolute_imports(text: str) -> list[str]:
    """A module's top-level imports but relative and ``__future__`` ones, one per line;
    a top-level ``try:``'s too (`try: from dateutil import tz` and a fallback under
    ``except ImportError``: the fallback is not what the tests use)."""
    module = parse(text)
    if module is None:
        return []
    nodes = [n for top in module.body for n in (top.body if isinstance(top, ast.Try) else [top])]
    return [
        ast.unparse(node)
        for node in nodes
        if isinstance(node, ast.Import)
        or (isinstance(node, ast.ImportFrom) and not node.level and node.module != "__future__")
    ]


def _mentions(line: str, module: str) -> int:
    """2 when an import line names ``module``, 1 its top package, else 0."""
    if not module:
        return 0
    # `from humanize import number` names humanize.number.
    found = re.match(r"from ([\w.]+) import (.+)", line)
    named = [f"{found.group(1)}.{n.split()[0]}" for n in found.group(2).split(",")] if found else []
    if module in named:
        return 2
    for rank, name in ((2, module), (1, module.split(".")[0])):
        if re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", line):
            return rank
    return 0


async def try_change(
    ws: FixContext,
    idx: Index,
    *,
    path: str,
    text: str,
    must_pass: Sequence[str],
    passed_before: set[str],
) -> str:
    """Put ``text`` at ``path`` and run the tests that must pass (failing or reproducing)
    first, then all: "passed" leaves the change in the tree; otherwise the file is put
    back, and the verdict says why (``test failed: <id>``, ``breaks: <id>`` for a test
    that passed before). The first run is of those tests alone where each is a test id
    (most changes fail there, and the rest of their files need not run for it); of their
    whole files where one is a file, or where a selection did not find them all. With no
    test that must pass, nothing shows the change fixes anything: it fails closed, the
    tree untouched."""
    if not must_pass:
        return NO_JUDGE
    original = idx.sources[path]
    write_confined(ws.tree, path, text.encode())
    ws.sandbox.prepare_writable(ws.tree)
    verdict = "tests did not run"
    try:
        files = sorted({p for p in (path_of_test(t, idx) for t in must_pass) if p})
        if files:
            tests = await _must_pass_run(ws, files, must_pass)
            still = [t for t in must_pass if failed_in(tests, t)]
            if tests is None or still:
                verdict = f"test failed: {still[0] if still else 'the tests'}"
                return verdict
        whole = await run_tests(ws, name="repair-candidate-all")
        if whole is None:
            return verdict
        broken = [
            t
            for t in sorted(passed_before)
            if t in whole.run.outcomes and whole.run.outcomes[t] != "passed"
        ]
        still = [t for t in must_pass if failed_in(whole, t)]
        if broken:
            verdict = f"breaks: {broken[0]}"
        elif still:
            verdict = f"test failed: {still[0]}"
        elif not whole.run.outcomes and not whole.run.ok:
            verdict = f"tests failed (exit code {whole.run.exit_code})"
        else:
            verdict = "passed"
        return verdict
    finally:
        if verdict != "passed":
            write_confined(ws.tree, path, original.encode())


async def _must_pass_run(
    ws: FixContext, files: list[str], must_pass: Sequence[str]
) -> Tests | None:
    """The run of the tests that must pass: by their ids alone when each is an id and the
    selection finds every one, else their files whole. A test that passes only after
    others of its file ran fails alone, and the change is not proposed: it fails closed."""
    if all("::" in t for t in must_pass):
        alone = await run_tests(ws, extra=files, only=must_pass, name="repair-candidate")
        if alone is not None and all(t in alone.run.outcomes for t in must_pass):
            return alone
    return await run_tests(ws, extra=files, name="repair-candidate")


def with_imports(source: str, idx: Index) -> str:
    """The test with the imports it forgot: ``pytest``, and any name it uses but never
    defines that one module of the repository defines (a model writes
    ``pytest.raises(SignupError)`` and imports only ``signup``)."""
    module = parse(source)
    if module is None:
        return source
    free = unbound(module)
    lines = ["import pytest"] if free.pop("pytest", None) is not None else []
    lines += import_lines(free, lambda name: defined_by(idx, name))
    return "\n".join([*lines, source]) if lines else source
