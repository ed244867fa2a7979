"""Turn what the verification tools print into typed findings, deltas and test outcomes.

The verify phase runs ruff, bandit and semgrep ONCE over both trees (base mounted at
``/base``, the patched tree at ``/workspace``, the changed files of both as explicit
targets), and the repository's pytest with ``--junitxml`` on each tree. This module is
the pure half of that: it parses the tools' output and says what the patch introduced
(``new``) and what it removed (``fixed``). It runs nothing and reads no files itself;
the caller may pass a :data:`LineReader` so findings carry their source line (it wins
over what a tool prints itself, bandit's numbered ``code`` or semgrep's ``extra.lines``).
Snippets are not redacted here: the caller redacts before storing.

Why fingerprints and not line numbers: a patch that inserts three lines at the top of a
file moves every old finding down by three. A finding is identified by
``(rule, path, normalised source line)`` when the line is known, else by
``(rule, path, message)``, and the two trees are compared as multisets, so one more
``shell=True`` call in a file that already had one is exactly one new finding.

What the tools print (ruff 0.17, bandit 1.9, semgrep 1.182): ruff resolves every
``filename`` to an absolute path; bandit and semgrep echo each target as it was given
(bandit prefixes relative ones with ``./``). Hence the ``cwd`` keyword. Semgrep without
a login puts the literal string ``"requires login"`` in ``extra.lines`` (and in
``extra.fingerprint``); that is never used as a snippet.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple
from xml.etree import ElementTree

from app.errors import PatchwardenError
from app.policy.evidence import Finding, FindingsDelta, TestCounts, TestDelta, TestRun, Tool
from app.sessions.result import Tree

__all__ = [
    "MAX_JUNIT_BYTES",
    "JUnitReport",
    "LineReader",
    "Outcome",
    "ReportError",
    "Roots",
    "collection_errors",
    "environment_problem",
    "findings_delta",
    "parse_bandit",
    "parse_junit",
    "parse_ruff",
    "parse_semgrep",
    "test_delta",
]

Roots = Mapping[str, Tree]
"""Where each tree is mounted, e.g. ``{"/base": "base", "/workspace": "head"}``."""

LineReader = Callable[[Tree, str, int], str]
"""``(tree, path relative to its root, 1-based line)`` -> that source line, or ``""``."""

Outcome = Literal["passed", "failed", "errored", "skipped"]
Severity = Literal["info", "low", "medium", "high"]

MAX_JUNIT_BYTES = 20 * 1024 * 1024
SNIPPET_CHARS = 200
_SHOWN_CHARS = 200  # of bad output, in a ReportError message
_SEMGREP_NO_LOGIN = "requires login"
_RUFF_SECURITY_CODE = re.compile(r"S\d+")  # flake8-bandit; not SIM (flake8-simplify)
_BANDIT_CODE_LINE = re.compile(r"(\d+) ?(.*)")


class ReportError(PatchwardenError):
    """A tool's output does not parse, or says the tool could not check the patched code."""


class JUnitReport(NamedTuple):
    """What one JUnit XML report says: counts, and the outcome of every test id."""

    counts: TestCounts
    outcomes: dict[str, Outcome]


@dataclass(frozen=True)
class _Hit:
    """One finding as the tool printed it, before its path is placed in a tree."""

    path: str
    line: int
    rule: str
    message: str
    severity: Severity
    tool_snippet: str = ""  # the source line as the tool itself printed it, if it did


# --- findings ---------------------------------------------------------------------------


def parse_ruff(
    text: str, *, roots: Roots, cwd: str = "/", read_line: LineReader | None = None
) -> list[tuple[Tree, Finding]]:
    """Findings from ``ruff check --output-format json --no-cache --exit-zero FILES``.

    Severity is ``medium`` for flake8-bandit codes (``S``-digits) and ``low`` otherwise.
    Ruff prints no source text, so snippets come from ``read_line`` only. Syntax errors
    come as code ``invalid-syntax`` (older ruff: ``code`` null; the name is used then).
    """

    def hits(data: Any) -> list[_Hit]:
        out = []
        for item in _as_list(data):
            code = str(item["code"] or item.get("name") or "invalid-syntax")
            out.append(
                _Hit(
                    path=item["filename"],
                    line=int(item["location"]["row"]),
                    rule=code,
                    message=str(item["message"]),
                    severity="medium" if _RUFF_SECURITY_CODE.fullmatch(code) else "low",
                )
            )
        return out

    found = _shape("ruff", text, hits)
    return _place("ruff", found, roots=roots, cwd=cwd, read_line=read_line)


def parse_bandit(
    text: str, *, roots: Roots, cwd: str = "/", read_line: LineReader | None = None
) -> list[tuple[Tree, Finding]]:
    """Findings from ``bandit -f json -q FILES``.

    Bandit lists files it could not parse (usually syntax errors) in ``errors`` and
    carries on with the rest. An error on a file of the **head** tree raises
    :class:`ReportError`: the patched code was not checked, and its base findings would
    otherwise count as fixed. Errors on base files (or outside every root) are ignored;
    they can only make findings look new, which errs on the safe side.
    """

    def hits(data: Any) -> list[_Hit]:
        problems = [(str(e["filename"]), str(e["reason"])) for e in _as_list(data["errors"])]
        _refuse_head_errors("bandit", problems, roots=roots, cwd=cwd)
        out = []
        for item in _as_list(data["results"]):
            line = int(item["line_number"])
            out.append(
                _Hit(
                    path=item["filename"],
                    line=line,
                    rule=str(item["test_id"]),
                    message=str(item["issue_text"]),
                    severity=_severity(item["issue_severity"]),
                    tool_snippet=_bandit_line(str(item.get("code") or ""), line),
                )
            )
        return out

    found = _shape("bandit", text, hits)
    return _place("bandit", found, roots=roots, cwd=cwd, read_line=read_line)


def parse_semgrep(
    text: str, *, roots: Roots, cwd: str = "/", read_line: LineReader | None = None
) -> list[tuple[Tree, Finding]]:
    """Findings from ``semgrep scan --json ...``.

    Severity: ERROR -> high, WARNING -> medium, INFO -> low (and the newer CRITICAL/HIGH/
    MEDIUM/LOW likewise). ``extra.lines`` is a snippet only when it is real source; an
    unauthenticated semgrep prints ``"requires login"`` there. Errors of level ``error``
    (a rule that does not parse, ...) and errors naming a head-tree file (timeout, parse
    failure) raise :class:`ReportError`, as for bandit. Note that semgrep prefixes rule
    ids from a ``--config`` directory with that directory, dotted (``policies.semgrep.x``).
    """

    def hits(data: Any) -> list[_Hit]:
        problems = []
        for err in _as_list(data.get("errors") or []):
            reason = str(err.get("message") or err.get("type") or "error")[:_SHOWN_CHARS]
            path = err.get("path")
            if err.get("level") == "error" or not isinstance(path, str):
                raise ReportError(f"semgrep reported an error: {reason}")
            problems.append((path, reason))
        _refuse_head_errors("semgrep", problems, roots=roots, cwd=cwd)
        out = []
        for item in _as_list(data["results"]):
            extra = item["extra"]
            lines = str(extra.get("lines") or "")
            out.append(
                _Hit(
                    path=item["path"],
                    line=int(item["start"]["line"]),
                    rule=str(item["check_id"]),
                    message=str(extra["message"]),
                    severity=_severity(extra.get("severity")),
                    tool_snippet="" if lines.strip() == _SEMGREP_NO_LOGIN else lines,
                )
            )
        return out

    found = _shape("semgrep", text, hits)
    return _place("semgrep", found, roots=roots, cwd=cwd, read_line=read_line)


def findings_delta(
    tool: Tool, pairs: Sequence[tuple[Tree, Finding]], *, files: int = 0
) -> FindingsDelta:
    """Compare the base and head findings of one tool run.

    ``new``: head findings with no matching base finding; ``fixed``: the reverse.
    Matching is by fingerprint, as a multiset: if base has one and head three findings
    with a fingerprint, two are new. Within such a group the findings pair up in line
    order, so the ones left over (reported) are the last ones. Renamed files are not
    followed: paths compare as they are.
    """
    by_tree: dict[Tree, dict[tuple[str, str, str], list[Finding]]] = {
        "base": defaultdict(list),
        "head": defaultdict(list),
    }
    for tree, finding in pairs:
        if finding.tool != tool:
            raise ValueError(f"findings_delta({tool!r}) was given a {finding.tool} finding")
        by_tree[tree][_fingerprint(finding)].append(finding)
    base, head = by_tree["base"], by_tree["head"]
    new = [f for key, group in head.items() for f in _leftover(group, len(base.get(key, [])))]
    fixed = [f for key, group in base.items() for f in _leftover(group, len(head.get(key, [])))]
    return FindingsDelta(
        tool=tool,
        files=files,
        base_count=sum(len(g) for g in base.values()),
        head_count=sum(len(g) for g in head.values()),
        new=sorted(new, key=_order),
        fixed=sorted(fixed, key=_order),
    )


def _fingerprint(finding: Finding) -> tuple[str, str, str]:
    return (finding.rule, finding.path, finding.snippet or f"message:{finding.message}")


def _leftover(group: list[Finding], matched: int) -> list[Finding]:
    return sorted(group, key=_order)[matched:]


def _order(finding: Finding) -> tuple[str, int, str]:
    return (finding.path, finding.line, finding.rule)


def _shape(tool: Tool, text: str, hits: Callable[[Any], list[_Hit]]) -> list[_Hit]:
    """Load the JSON and pull the hits out; any surprise in the shape is a ReportError."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ReportError(f"{tool} output is not JSON ({exc}): {_start(text)}") from None
    try:
        return hits(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ReportError(
            f"{tool} JSON has an unexpected shape ({type(exc).__name__}: {exc}): {_start(text)}"
        ) from None


def _as_list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return value


def _place(
    tool: Tool, hits: list[_Hit], *, roots: Roots, cwd: str, read_line: LineReader | None
) -> list[tuple[Tree, Finding]]:
    """Put each hit in its tree with a root-relative path; hits outside every root drop."""
    out: list[tuple[Tree, Finding]] = []
    for hit in hits:
        placed = _locate(hit.path, roots=roots, cwd=cwd)
        if placed is None:
            continue
        tree, path = placed
        source = (read_line(tree, path, hit.line) if read_line else "") or hit.tool_snippet
        finding = Finding(
            tool=tool,
            rule=hit.rule,
            path=path,
            line=hit.line,
            message=hit.message,
            severity=hit.severity,
            snippet=_snippet(source),
        )
        out.append((tree, finding))
    return out


def _locate(path: str, *, roots: Roots, cwd: str) -> tuple[Tree, str] | None:
    """``(tree, path relative to that tree's root)``, or None when under no root."""
    full = _absolute(path, cwd)
    best: tuple[int, Tree, str] | None = None
    for root, tree in roots.items():
        top = _absolute(root, cwd)
        prefix = top if top.endswith("/") else top + "/"
        inside = full.startswith(prefix) and len(full) > len(prefix)
        if inside and (best is None or len(top) > best[0]):
            best = (len(top), tree, full[len(prefix) :])
    return None if best is None else (best[1], best[2])


def _absolute(path: str, cwd: str) -> str:
    return posixpath.normpath(posixpath.join(cwd, path))


def _refuse_head_errors(
    tool: Tool, problems: list[tuple[str, str]], *, roots: Roots, cwd: str
) -> None:
    for path, reason in problems:
        placed = _locate(path, roots=roots, cwd=cwd)
        if placed is not None and placed[0] == "head":
            raise ReportError(
                f"{tool} could not check {placed[1]} in the patched tree: {reason[:_SHOWN_CHARS]}"
            )


def _severity(value: object) -> Severity:
    """Bandit's LOW/MEDIUM/HIGH and semgrep's INFO/WARNING/ERROR (+ CRITICAL...)."""
    level = str(value or "").upper()
    if level in ("HIGH", "ERROR", "CRITICAL"):
        return "high"
    if level in ("LOW", "INFO"):
        return "low"
    return "medium"  # MEDIUM, WARNING, and anything unknown (bandit's UNDEFINED)


def _bandit_line(code: str, line: int) -> str:
    """Bandit's ``code`` is numbered context (``"4 def f():\\n5     eval(x)\\n"``)."""
    for row in code.splitlines():
        match = _BANDIT_CODE_LINE.fullmatch(row)
        if match and int(match.group(1)) == line:
            return match.group(2)
    return ""


def _snippet(source: str) -> str:
    return " ".join(source.split())[:SNIPPET_CHARS]


def _start(text: str | bytes) -> str:
    return repr(text[:_SHOWN_CHARS])


# --- tests ------------------------------------------------------------------------------

_RANK: dict[Outcome, int] = {"passed": 0, "skipped": 1, "failed": 2, "errored": 3}


def parse_junit(data: bytes) -> JUnitReport:
    """Outcomes from pytest's ``--junitxml`` report (families xunit2 and xunit1).

    A test id is ``"{classname}::{name}"`` as pytest writes them
    (``"suite.test_calc.TestX::test_m[1]"``); a collection error has an empty classname
    and the module as name, and its id is the name alone. A testcase with ``<error>``
    is errored, ``<failure>`` failed, ``<skipped>`` skipped (xfail included), else
    passed. When one id appears twice (older pytest wrote a teardown error as a second
    testcase next to the pass), the worst outcome wins: errored > failed > skipped.
    Counts are per id, so they always agree with the outcomes.

    The XML comes from the repository's own (untrusted) code. It is refused above
    :data:`MAX_JUNIT_BYTES` and when it declares a DTD, which pytest never writes.
    ``xml.etree`` is safe enough for the rest: it resolves no external entities, and
    the expat bundled with Python (>= 2.4.1) stops entity-expansion bombs.
    """
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
    outcomes: dict[str, Outcome] = {}
    for case in root.iter("testcase"):
        classname, name = case.get("classname") or "", case.get("name") or ""
        test_id = f"{classname}::{name}" if classname else name
        outcome = _outcome(case)
        if test_id not in outcomes or _RANK[outcome] > _RANK[outcomes[test_id]]:
            outcomes[test_id] = outcome
    counts = TestCounts(
        passed=sum(1 for o in outcomes.values() if o == "passed"),
        failed=sum(1 for o in outcomes.values() if o == "failed"),
        errored=sum(1 for o in outcomes.values() if o == "errored"),
        skipped=sum(1 for o in outcomes.values() if o == "skipped"),
    )
    return JUnitReport(counts=counts, outcomes=outcomes)


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

    Fixed: failed/errored on base, passed on head. Broken: passed on base, failed/errored
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
