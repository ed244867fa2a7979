"""The test runs, read: pytest's ``--junitxml`` report into outcomes, the base and the
patched tree's runs into a :class:`~app.policy.evidence.TestDelta`, and the output of a
run that never got to test into what went wrong. Pure: it runs nothing, reads no file."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, NamedTuple
from xml.etree import ElementTree

from app.policy.evidence import TestCounts, TestDelta, TestRun
from app.sessions.reports import ReportError, _start

Outcome = Literal["passed", "failed", "errored", "skipped"]

MAX_JUNIT_BYTES = 20 * 1024 * 1024


class JUnitReport(NamedTuple):
    """What one JUnit XML report says: counts, and the outcome of every test id."""

    counts: TestCounts
    outcomes: dict[str, Outcome]


RANK: dict[Outcome, int] = {"passed": 0, "skipped": 1, "failed": 2, "errored": 3}


def parse_junit(data: bytes, *, nested: bool = False) -> JUnitReport:
    """Outcomes from pytest's ``--junitxml`` report (families xunit2 and xunit1).

    A test id is ``"{classname}::{name}"`` as pytest writes them
    (``"suite.test_calc.TestX::test_m[1]"``); a collection error has an empty classname
    and the module as name, and its id is the name alone. A testcase with ``<error>``
    is errored, ``<failure>`` failed, ``<skipped>`` skipped (xfail included), else
    passed. When one id appears twice (older pytest wrote a teardown error as a second
    testcase next to the pass), the worst outcome wins: errored > failed > skipped.
    Counts are per id, so they always agree with the outcomes. ``nested``: the report
    names no class (node's runner writes ``classname="test"``), and a test's id is the
    names of the suites around it and its own, joined by `` > ``.

    The XML comes from the repository's own (untrusted) code. It is refused above
    :data:`MAX_JUNIT_BYTES` and when it declares a DTD, which pytest never writes.
    ``xml.etree`` is safe enough for the rest: it resolves no external entities, and
    the expat bundled with Python (>= 2.4.1) stops entity-expansion bombs.
    """
    outcomes: dict[str, Outcome] = {}
    for test_id, case in _cases(data, nested=nested):
        outcome = _outcome(case)
        if test_id not in outcomes or RANK[outcome] > RANK[outcomes[test_id]]:
            outcomes[test_id] = outcome
    counts = TestCounts(
        passed=sum(1 for o in outcomes.values() if o == "passed"),
        failed=sum(1 for o in outcomes.values() if o == "failed"),
        errored=sum(1 for o in outcomes.values() if o == "errored"),
        skipped=sum(1 for o in outcomes.values() if o == "skipped"),
    )
    return JUnitReport(counts=counts, outcomes=outcomes)


def failures(data: bytes, *, limit: int = 4000) -> dict[str, str]:
    """What each failed or errored test of the report printed: the failure's message,
    then its text (pytest's traceback and assertion), the last ``limit`` characters."""
    found: dict[str, str] = {}
    for test_id, case in _cases(data):
        for child in case:
            if child.tag in ("failure", "error"):
                text = "\n".join(p for p in (child.get("message"), child.text) if p)
                found[test_id] = text[-limit:]
    return found


def _cases(data: bytes, *, nested: bool = False) -> list[tuple[str, ElementTree.Element]]:
    """(test id, testcase element) of a report, refused as :func:`parse_junit` says."""
    if len(data) > MAX_JUNIT_BYTES:
        raise ReportError(
            f"junit report is {len(data)} bytes; more than {MAX_JUNIT_BYTES} is refused"
        )
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise ReportError("junit report declares a DTD; pytest never writes one")
    try:
        root = ElementTree.fromstring(data)  # noqa: S314 -- size-capped, no DTD; see docstring
    except ElementTree.ParseError as exc:
        raise ReportError(f"junit report is not well-formed XML ({exc}): {_start(data)}") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise ReportError(f"junit report has root <{root.tag}>, not <testsuites>: {_start(data)}")
    if nested:
        return list(_nested_cases(root, ()))
    cases = []
    for case in root.iter("testcase"):
        classname, name = case.get("classname") or "", case.get("name") or ""
        cases.append((f"{classname}::{name}" if classname else name, case))
    return cases


def _nested_cases(
    suite: ElementTree.Element, names: tuple[str, ...]
) -> list[tuple[str, ElementTree.Element]]:
    """(``suite > … > test``, testcase) of every test under ``suite``, depth first."""
    found = []
    for child in suite:
        if child.tag == "testcase":
            found.append((" > ".join([*names, child.get("name") or ""]), child))
        elif child.tag == "testsuite":
            found += _nested_cases(child, (*names, child.get("name") or ""))
    return found


def _outcome(case: ElementTree.Element) -> Outcome:
    children = {child.tag for child in case}
    if "error" in children:
        return "errored"
    if "failure" in children:
        return "failed"
    if "skipped" in children:
        return "skipped"
    return "passed"


def test_delta(
    command: list[str],
    source: Literal["config", "detected"],
    base: TestRun | None,
    head: TestRun | None,
) -> TestDelta:
    """Which tests the patch fixed, broke, added and removed (sorted ids).

    Fixed: failed/errored on base, passed on head. Already failing: failed/errored on
    both. Broken: passed on base, failed/errored
    on head — or gone from head because their module no longer imports (a collection
    error names the module, and pytest then runs nothing of it). Added/removed: ids only
    on head/only on base (collection errors are not tests). The lists stay empty unless
    both runs have a per-test report (``counts`` set): without one, "not in the report"
    does not mean "removed".
    """
    if base is None or head is None or base.counts is None or head.counts is None:
        return TestDelta(command=command, source=source, base=base, head=head)
    before, after = base.outcomes, head.outcomes
    bad = ("failed", "errored")
    both = before.keys() & after.keys()
    uncollected = collection_errors(head)
    gone = before.keys() - after.keys()
    unimportable = {t for t in gone if _in_module(t, uncollected)}
    return TestDelta(
        command=command,
        source=source,
        base=base,
        head=head,
        fixed=sorted(t for t in both if before[t] in bad and after[t] == "passed"),
        broken=sorted(
            [t for t in both if before[t] == "passed" and after[t] in bad]
            + [t for t in unimportable if before[t] == "passed"]
        ),
        already_failing=sorted(t for t in both if before[t] in bad and after[t] in bad),
        added=sorted(after.keys() - before.keys() - set(uncollected)),
        removed=sorted(gone - unimportable - set(collection_errors(base))),
    )


def collection_errors(run: TestRun) -> list[str]:
    """The modules of ``run`` that could not be imported or collected (pytest reports
    each as an errored "test" named by the module, without ``::``)."""
    return sorted(t for t, o in run.outcomes.items() if o == "errored" and "::" not in t)


def _in_module(test_id: str, modules: Sequence[str]) -> bool:
    return any(test_id == m or test_id.startswith((f"{m}::", f"{m}.")) for m in modules)


_ERROR_LINE = re.compile(r"^E\s+(\S.*)$", re.MULTILINE)
_USAGE_LINE = re.compile(r"^(?:ERROR|INTERNALERROR)[: >]+(\S.*)$", re.MULTILINE)
_NO_MODULE = re.compile(r"(No module named \S+)")


def environment_problem(run: TestRun, output: str, *, pytest: bool) -> str | None:
    """Why ``run`` says nothing about the code, or None: the tests could not be
    imported or collected (collection errors and no test ran), or pytest stopped on a
    usage or internal error (an option from a missing plugin, a broken conftest).
    The text is the first error pytest printed."""
    if run.timed_out:
        return None
    if run.counts is None:
        # Every pytest that starts writes its report (PYTEST_ADDOPTS asks for one):
        # none and a failure means pytest never ran (not installed, a usage error).
        if not pytest or run.exit_code in (0, None):
            return None
    elif not collection_errors(run) or run.counts.passed + run.counts.failed > 0:
        return None
    found = _ERROR_LINE.search(output) or _USAGE_LINE.search(output) or _NO_MODULE.search(output)
    last = next((ln.strip() for ln in reversed(output.splitlines()) if ln.strip()), "")
    first = found.group(1).strip() if found else (last or f"exit code {run.exit_code}")
    where = collection_errors(run)
    if where:
        first += f" (collecting {where[0]}" + (
            f" and {len(where) - 1} more)" if len(where) > 1 else ")"
        )
    return first[:500]


test_delta.__test__ = False  # type: ignore[attr-defined]  # a function, not a pytest test
