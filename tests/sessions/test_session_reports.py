"""app.sessions.reports: real tool output in, typed findings and test deltas out.

The slow tests run the real ruff, bandit, semgrep and pytest once each over two small
generated trees and check the deltas; the table-driven ones pin the edge cases.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.errors import PatchwardenError
from app.policy.evidence import Finding, FindingsDelta, TestCounts, TestRun, Tool
from app.sessions import junit as junit_module
from app.sessions import node_tests
from app.sessions import reports as reports_module
from app.sessions.junit import MAX_JUNIT_BYTES, collection_errors, parse_junit
from app.sessions.reports import (
    ReportError,
    findings_delta,
    parse_bandit,
    parse_ruff,
    parse_semgrep,
)
from app.sessions.result import Tree
from app.sessions.verify import semgrep_scan

BIN = Path(sys.executable).parent  # the project's .venv/bin
ROOTS: dict[str, Tree] = {"/base": "base", "/workspace": "head"}

BASE_A = """\
import subprocess


def run(cmd):
    return subprocess.call(cmd, shell=True)


def parse(data):
    return eval(data)
"""

# Shifts everything down, adds an unused import and a second shell=True call,
# and replaces eval with ast.literal_eval.
HEAD_A = """\
import ast
import os
import subprocess

# Two comment lines that move
# the old code down.


def run(cmd):
    return subprocess.call(cmd, shell=True)


def parse(data):
    return ast.literal_eval(data)


def run_again(cmd):
    return subprocess.call(cmd, shell=True)
"""

SEMGREP_RULES = """\
rules:
  - id: shell-true
    pattern: subprocess.call(..., shell=True)
    message: subprocess call with shell=True
    languages: [python]
    severity: ERROR
  - id: no-eval
    pattern: eval(...)
    message: eval of data
    languages: [python]
    severity: WARNING
"""


@dataclass(frozen=True)
class Scan:
    """Two trees under ``tmp`` and what each real tool printed about them."""

    tmp: Path
    outputs: dict[Tool, str]

    @property
    def roots(self) -> dict[str, Tree]:
        return {str(self.tmp / "base"): "base", str(self.tmp / "workspace"): "head"}

    def read_line(self, tree: Tree, path: str, line: int) -> str:
        top = self.tmp / ("base" if tree == "base" else "workspace")
        lines = (top / path).read_text().splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else ""


def _run(argv: list[str], *, cwd: Path, home: Path, timeout: float = 120) -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    proc = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode in (0, 1), (argv, proc.returncode, proc.stderr[-2000:])
    return proc.stdout


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> Scan:
    tmp = tmp_path_factory.mktemp("trees")
    home = tmp_path_factory.mktemp("home")
    for top, text in (("base", BASE_A), ("workspace", HEAD_A)):
        (tmp / top / "pkg").mkdir(parents=True)
        (tmp / top / "pkg" / "a.py").write_text(text)
    (tmp / "rules.yml").write_text(SEMGREP_RULES)
    # One target relative to cwd and one absolute, as a session may pass either.
    targets = ["base/pkg/a.py", str(tmp / "workspace" / "pkg" / "a.py")]
    ruff = [str(BIN / "ruff"), "check", "--isolated", "--select", "E,F,S"]
    outputs: dict[Tool, str] = {
        "ruff": _run(
            [*ruff, "--output-format", "json", "--no-cache", "--exit-zero", *targets],
            cwd=tmp,
            home=home,
        ),
        "bandit": _run([str(BIN / "bandit"), "-f", "json", "-q", *targets], cwd=tmp, home=home),
        "semgrep": _run(
            semgrep_scan(
                str(BIN), ["rules.yml"], "--quiet", "--metrics=off", "--disable-version-check"
            )
            + targets,
            cwd=tmp,
            home=home,
        ),
    }
    return Scan(tmp=tmp, outputs=outputs)


PARSERS = {"ruff": parse_ruff, "bandit": parse_bandit, "semgrep": parse_semgrep}

# tool -> (rule of the added shell=True call, rule of the removed eval, base, head count)
EXPECTED: dict[Tool, tuple[str, str, int, int]] = {
    "ruff": ("S602", "S307", 2, 3),  # head also has F401 for `os`
    "bandit": ("B602", "B307", 3, 3),  # B404 (import subprocess) in both
    "semgrep": ("shell-true", "no-eval", 2, 2),
}


def _delta(scan: Scan, tool: Tool, *, with_reader: bool) -> FindingsDelta:
    pairs = PARSERS[tool](
        scan.outputs[tool],
        roots=scan.roots,
        cwd=str(scan.tmp),
        read_line=scan.read_line if with_reader else None,
    )
    return findings_delta(tool, pairs, files=1)


@pytest.mark.slow
@pytest.mark.parametrize("with_reader", [True, False], ids=["read_line", "tool-text-only"])
@pytest.mark.parametrize("tool", ["ruff", "bandit", "semgrep"])
def test_real_tool_output_gives_the_right_delta(scan: Scan, tool: Tool, with_reader: bool) -> None:
    added, removed, base_count, head_count = EXPECTED[tool]
    delta = _delta(scan, tool, with_reader=with_reader)

    assert (delta.tool, delta.files) == (tool, 1)
    assert (delta.base_count, delta.head_count) == (base_count, head_count)
    new_shell = [f for f in delta.new if f.rule == added]
    assert [(f.path, f.line) for f in new_shell] == [("pkg/a.py", 18)]  # not the shifted one
    assert [(f.rule, f.path, f.line) for f in delta.fixed] == [(removed, "pkg/a.py", 9)]
    assert new_shell[0].severity == ("medium" if tool == "ruff" else "high")
    if tool == "ruff":
        assert {f.rule: f.severity for f in delta.new} == {"S602": "medium", "F401": "low"}
    else:
        assert [f.rule for f in delta.new] == [added]
    if with_reader or tool == "bandit":  # bandit prints the numbered source itself
        assert new_shell[0].snippet == "return subprocess.call(cmd, shell=True)"


@pytest.mark.slow
def test_semgrep_without_login_says_so_in_extra_lines_which_is_never_a_snippet(
    scan: Scan,
) -> None:
    raw = json.loads(scan.outputs["semgrep"])
    assert {r["extra"]["lines"] for r in raw["results"]} == {"requires login"}
    pairs = parse_semgrep(scan.outputs["semgrep"], roots=scan.roots, cwd=str(scan.tmp))
    assert pairs
    assert {f.snippet for _, f in pairs} == {""}


@pytest.mark.slow
def test_real_paths_are_relative_to_their_root(scan: Scan) -> None:
    for tool, parse in PARSERS.items():
        pairs = parse(scan.outputs[tool], roots=scan.roots, cwd=str(scan.tmp))
        assert {(tree, f.path) for tree, f in pairs} == {
            ("base", "pkg/a.py"),
            ("head", "pkg/a.py"),
        }, tool


# --- findings: table-driven ---------------------------------------------------------------


def _finding(
    rule: str, line: int, *, path: str = "f.py", snippet: str = "", msg: str = "m"
) -> Finding:
    return Finding(tool="bandit", rule=rule, path=path, line=line, message=msg, snippet=snippet)


CALL = "subprocess.call(cmd, shell=True)"


@pytest.mark.parametrize(
    ("base", "head", "new", "fixed"),
    [
        pytest.param(
            [_finding("B602", 5, snippet=CALL)],
            [_finding("B602", 9, snippet=CALL)],
            [],
            [],
            id="line-shift-is-not-new",
        ),
        pytest.param(
            [_finding("B602", 5, snippet=CALL)],
            [_finding("B602", 9, snippet=CALL), _finding("B602", 12, snippet=CALL)],
            [("B602", 12)],
            [],
            id="duplicate-adds-exactly-one",
        ),
        pytest.param(
            [_finding("B602", 5, snippet=CALL)] * 3,
            [_finding("B602", 7, snippet=CALL)],
            [],
            [("B602", 5), ("B602", 5)],
            id="removing-two-of-three-fixes-two",
        ),
        pytest.param(
            [_finding("B602", 5)],
            [_finding("B602", 40)],
            [],
            [],
            id="no-snippet-matches-on-message",
        ),
        pytest.param(
            [_finding("B602", 5, msg="one")],
            [_finding("B602", 5, msg="two")],
            [("B602", 5)],
            [("B602", 5)],
            id="other-message-is-another-finding",
        ),
        pytest.param(
            [_finding("B602", 5, snippet=CALL)],
            [_finding("B602", 5, snippet="os.system(cmd)")],
            [("B602", 5)],
            [("B602", 5)],
            id="other-line-content-is-another-finding",
        ),
        pytest.param(
            [_finding("B602", 5, snippet=CALL, path="old.py")],
            [_finding("B602", 5, snippet=CALL, path="new.py")],
            [("B602", 5)],
            [("B602", 5)],
            id="renames-are-not-followed",
        ),
        pytest.param([], [_finding("B101", 1)], [("B101", 1)], [], id="new-file"),
    ],
)
def test_findings_delta_matches_as_a_multiset(
    base: list[Finding],
    head: list[Finding],
    new: list[tuple[str, int]],
    fixed: list[tuple[str, int]],
) -> None:
    pairs: list[tuple[Tree, Finding]] = [("base", f) for f in base] + [("head", f) for f in head]
    delta = findings_delta("bandit", pairs, files=2)
    assert [(f.rule, f.line) for f in delta.new] == new
    assert [(f.rule, f.line) for f in delta.fixed] == fixed
    assert (delta.base_count, delta.head_count, delta.files) == (len(base), len(head), 2)


def test_findings_delta_refuses_another_tools_findings() -> None:
    with pytest.raises(ValueError, match="ruff"):
        findings_delta("bandit", [("head", _finding("B1", 1).model_copy(update={"tool": "ruff"}))])


def _ruff_item(filename: str, *, code: str | None = "S602", row: int = 3) -> dict[str, Any]:
    return {
        "code": code,
        "name": "some-rule",
        "filename": filename,
        "location": {"row": row, "column": 1},
        "message": "msg",
    }


def _ruff(*items: dict[str, Any]) -> str:
    return json.dumps(list(items))


@pytest.mark.parametrize(
    ("filename", "cwd", "expected"),
    [
        ("/workspace/pkg/a.py", "/", ("head", "pkg/a.py")),
        ("/base/a.py", "/", ("base", "a.py")),
        ("pkg/a.py", "/workspace", ("head", "pkg/a.py")),
        ("./workspace/pkg/a.py", "/", ("head", "pkg/a.py")),  # bandit's form
        ("../base/x/y.py", "/workspace", ("base", "x/y.py")),
        ("/workspace/../etc/passwd", "/", None),
        ("/workspaces/a.py", "/", None),  # a prefix of the name is not a parent
        ("/elsewhere/a.py", "/", None),
        ("/workspace", "/", None),
    ],
)
def test_paths_resolve_against_cwd_and_outside_roots_drop(
    filename: str, cwd: str, expected: tuple[str, str] | None
) -> None:
    pairs = parse_ruff(_ruff(_ruff_item(filename)), roots=ROOTS, cwd=cwd)
    assert [(tree, f.path) for tree, f in pairs] == ([expected] if expected else [])


def test_nested_roots_pick_the_deepest() -> None:
    roots: dict[str, Tree] = {"/": "base", "/workspace/": "head"}
    pairs = parse_ruff(_ruff(_ruff_item("/workspace/a.py"), _ruff_item("/a.py")), roots=roots)
    assert [(tree, f.path) for tree, f in pairs] == [("head", "a.py"), ("base", "a.py")]


@pytest.mark.parametrize(
    ("code", "rule", "severity"),
    [
        ("S602", "S602", "medium"),
        ("S101", "S101", "medium"),
        ("SIM108", "SIM108", "low"),  # flake8-simplify, not flake8-bandit
        ("F401", "F401", "low"),
        ("invalid-syntax", "invalid-syntax", "low"),
        (None, "some-rule", "low"),  # older ruff: code null on syntax errors
    ],
)
def test_ruff_severity(code: str | None, rule: str, severity: str) -> None:
    [(_, finding)] = parse_ruff(_ruff(_ruff_item("/workspace/a.py", code=code)), roots=ROOTS)
    assert (finding.tool, finding.rule, finding.severity) == ("ruff", rule, severity)


def test_snippets_come_from_read_line_normalised_and_capped() -> None:
    calls: list[tuple[Tree, str, int]] = []

    def read_line(tree: Tree, path: str, line: int) -> str:
        calls.append((tree, path, line))
        return "\t  x  =   eval( data )  " + "y" * 300

    [(_, finding)] = parse_ruff(
        _ruff(_ruff_item("/workspace/pkg/a.py", row=7)), roots=ROOTS, read_line=read_line
    )
    assert calls == [("head", "pkg/a.py", 7)]
    assert finding.snippet.startswith("x = eval( data ) yyy")
    assert len(finding.snippet) == 200


def _semgrep(lines: str, *, errors: list[dict[str, Any]] | None = None) -> str:
    result = {
        "check_id": "policies.semgrep.shell-true",
        "path": "/workspace/a.py",
        "start": {"line": 4, "col": 1, "offset": 0},
        "end": {"line": 4, "col": 9, "offset": 8},
        "extra": {"message": "shell", "severity": "ERROR", "lines": lines},
    }
    return json.dumps({"results": [result], "errors": errors or [], "paths": {"scanned": []}})


@pytest.mark.parametrize(
    ("lines", "reader", "snippet"),
    [
        ("requires login", None, ""),
        ("requires login", lambda t, p, n: "  os.system(x)", "os.system(x)"),
        ("  os.system( x )\n", None, "os.system( x )"),
        ("os.system(x)", lambda t, p, n: "", "os.system(x)"),
    ],
)
def test_semgrep_requires_login_is_never_a_snippet(
    lines: str, reader: Callable[[Tree, str, int], str] | None, snippet: str
) -> None:
    [(tree, finding)] = parse_semgrep(_semgrep(lines), roots=ROOTS, read_line=reader)
    assert (tree, finding.snippet, finding.severity) == ("head", snippet, "high")
    assert finding.rule == "policies.semgrep.shell-true"


@pytest.mark.parametrize(
    ("level", "path", "raises"),
    [
        ("error", None, True),  # e.g. a rule that does not parse
        ("warn", "/workspace/a.py", True),  # the patched file was not fully scanned
        ("warn", "/base/a.py", False),  # only makes findings look new: safe side
        ("warn", None, True),
    ],
)
def test_semgrep_errors(level: str, path: str | None, raises: bool) -> None:
    error: dict[str, Any] = {"code": 3, "level": level, "type": "Timeout", "message": "slow"}
    if path:
        error["path"] = path
    text = _semgrep("x", errors=[error])
    if raises:
        with pytest.raises(ReportError, match="semgrep"):
            parse_semgrep(text, roots=ROOTS)
    else:
        assert len(parse_semgrep(text, roots=ROOTS)) == 1


def _bandit(errors: list[dict[str, str]]) -> str:
    result = {
        "filename": "./base/a.py",
        "line_number": 5,
        "test_id": "B602",
        "issue_text": "shell",
        "issue_severity": "HIGH",
        "code": "4 def run(cmd):\n5     return subprocess.call(cmd, shell=True)\n6 \n",
    }
    return json.dumps({"errors": errors, "results": [result]})


def test_bandit_takes_the_snippet_from_its_numbered_code() -> None:
    [(tree, finding)] = parse_bandit(_bandit([]), roots=ROOTS)
    assert (tree, finding.path, finding.line) == ("base", "a.py", 5)
    assert (finding.rule, finding.severity) == ("B602", "high")
    assert finding.snippet == "return subprocess.call(cmd, shell=True)"


def test_bandit_errors_on_the_patched_tree_refuse_the_report() -> None:
    reason = "syntax error while parsing AST from file"
    assert (
        len(parse_bandit(_bandit([{"filename": "./base/b.py", "reason": reason}]), roots=ROOTS))
        == 1
    )
    with pytest.raises(ReportError, match=r"bandit could not check b\.py in the patched tree"):
        parse_bandit(_bandit([{"filename": "./workspace/b.py", "reason": reason}]), roots=ROOTS)


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (parse_ruff, ""),
        (parse_ruff, "warning: something\n[]"),
        (parse_ruff, '{"not": "a list"}'),
        (parse_ruff, '[{"code": "F401"}]'),
        (parse_bandit, "[main]\tINFO profile include tests: None"),
        (parse_bandit, '{"results": []}'),
        (parse_bandit, '{"errors": [], "results": [{"filename": "/workspace/a.py"}]}'),
        (parse_semgrep, "<html>"),
        (parse_semgrep, '{"results": [{"path": "/workspace/a.py", "start": {}}]}'),
    ],
)
def test_bad_json_is_a_report_error_naming_the_tool(
    parse: Callable[..., list[tuple[Tree, Finding]]], text: str
) -> None:
    tool = parse.__name__.removeprefix("parse_")
    with pytest.raises(ReportError, match=f"^{tool} ") as info:
        parse(text, roots=ROOTS)
    assert isinstance(info.value, PatchwardenError)
    assert repr(text[:200]) in str(info.value)


# --- tests: real pytest runs -------------------------------------------------------------

CONFTEST = """\
import pytest


@pytest.fixture
def broken():
    raise RuntimeError("fixture boom")


@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown boom")
"""

BASE_TESTS = """\
import pytest


def test_fail():
    assert 1 + 1 == 3


def test_pass():
    assert True


def test_err(broken):
    pass


def test_teardown_error(bad_teardown):
    pass


@pytest.mark.skip(reason="not today")
def test_skip():
    pass


def test_old():
    pass


class TestCalc:
    @pytest.mark.parametrize("x", [1, "a b"])
    def test_param(self, x):
        pass
"""

HEAD_TESTS = (
    BASE_TESTS.replace("assert 1 + 1 == 3", "assert 1 + 1 == 2")
    .replace("def test_pass():\n    assert True", "def test_pass():\n    assert False")
    .replace("def test_old():", "def test_new():")
)

BASE_OUTCOMES = {
    "suite.test_calc::test_fail": "failed",
    "suite.test_calc::test_pass": "passed",
    "suite.test_calc::test_err": "errored",
    "suite.test_calc::test_teardown_error": "errored",  # passed, then teardown failed
    "suite.test_calc::test_skip": "skipped",
    "suite.test_calc::test_old": "passed",
    "suite.test_calc.TestCalc::test_param[1]": "passed",
    "suite.test_calc.TestCalc::test_param[a b]": "passed",
}


def _pytest(project: Path, report: Path, *extra: str) -> int:
    argv = [
        *(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"),
        *(f"--junitxml={report}", *extra, "suite"),
    ]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(project), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        argv, cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]  # tests failed
    return proc.returncode


@pytest.fixture(scope="module")
def junit(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, bytes]]:
    """Real pytest reports: base and head (xunit2, pytest's default), head in xunit1."""
    out = {}
    for label, tests, extra in (
        ("base", BASE_TESTS, ()),
        ("head", HEAD_TESTS, ()),
        ("head-xunit1", HEAD_TESTS, ("-o", "junit_family=xunit1")),
    ):
        project = tmp_path_factory.mktemp(label)
        (project / "suite").mkdir()
        (project / "pytest.ini").write_text(
            "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        )
        (project / "suite" / "__init__.py").write_text("")
        (project / "suite" / "conftest.py").write_text(CONFTEST)
        (project / "suite" / "test_calc.py").write_text(tests)
        report = project / "report.xml"
        code = _pytest(project, report, *extra)
        out[label] = (code, report.read_bytes())
    return out


@pytest.mark.slow
def test_real_junit_outcomes(junit: dict[str, tuple[int, bytes]]) -> None:
    counts, outcomes = parse_junit(junit["base"][1])
    assert outcomes == BASE_OUTCOMES
    assert counts == TestCounts(passed=4, failed=1, errored=2, skipped=1)
    assert parse_junit(junit["head-xunit1"][1]) == parse_junit(junit["head"][1])


@pytest.mark.slow
def test_real_junit_test_delta(junit: dict[str, tuple[int, bytes]]) -> None:
    runs = {}
    for label in ("base", "head"):
        code, data = junit[label]
        report = parse_junit(data)
        runs[label] = TestRun(exit_code=code, counts=report.counts, outcomes=report.outcomes)
    command = ["python", "-m", "pytest"]
    delta = junit_module.test_delta(command, "detected", runs["base"], runs["head"])

    assert delta.fixed == ["suite.test_calc::test_fail"]
    assert delta.broken == ["suite.test_calc::test_pass"]
    assert delta.added == ["suite.test_calc::test_new"]
    assert delta.removed == ["suite.test_calc::test_old"]
    assert (delta.command, delta.source, delta.base, delta.head) == (
        command,
        "detected",
        runs["base"],
        runs["head"],
    )


# --- tests: table-driven ---------------------------------------------------------------------


def _case(classname: str, name: str, inner: str = "") -> str:
    return f'<testcase classname="{classname}" name="{name}" time="0.001">{inner}</testcase>'


@pytest.mark.parametrize(
    ("xml", "outcomes"),
    [
        pytest.param(
            "<testsuites>"
            f'<testsuite name="a">{_case("t.a", "x")}</testsuite>'
            f'<testsuite name="b">{_case("t.b", "y", "<failure/>")}</testsuite>'
            "</testsuites>",
            {"t.a::x": "passed", "t.b::y": "failed"},
            id="several-testsuites",
        ),
        pytest.param(
            f'<testsuite name="pytest">{_case("t", "x", "<skipped/>")}</testsuite>',
            {"t::x": "skipped"},
            id="bare-testsuite-root",
        ),
        pytest.param(
            f"<testsuites><testsuite>{_case('t', 'x')}{_case('t', 'x', '<error/>')}"
            f"{_case('t', 'y', '<error/>')}{_case('t', 'y')}</testsuite></testsuites>",
            {"t::x": "errored", "t::y": "errored"},
            id="errored-wins-over-a-pass-of-the-same-test",
        ),
        pytest.param(
            f"<testsuites><testsuite>{_case('t', 'x', '<failure/><error/>')}"
            f"</testsuite></testsuites>",
            {"t::x": "errored"},
            id="failure-and-error",
        ),
        pytest.param(
            f"<testsuites><testsuite>{_case('', 'suite.test_broken', '<error/>')}"
            f"</testsuite></testsuites>",
            {"suite.test_broken": "errored"},
            id="collection-error",
        ),
        pytest.param(
            f"<testsuites><testsuite>{_case('t', 'x', '<system-out>hi</system-out>')}"
            f"</testsuite></testsuites>",
            {"t::x": "passed"},
            id="captured-output-is-not-an-outcome",
        ),
        pytest.param("<testsuites/>", {}, id="empty"),
    ],
)
def test_parse_junit(xml: str, outcomes: dict[str, str]) -> None:
    report = parse_junit(xml.encode())
    assert report.outcomes == outcomes
    assert report.counts.total == len(outcomes)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "not well-formed"),
        (b"<testsuites><testsuite>", "not well-formed"),
        (b"pytest: error: unrecognized arguments", "not well-formed"),
        (b"<html><body/></html>", "root <html>"),
        (
            b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]>'
            b"<testsuites>&lol;</testsuites>",
            "DTD",
        ),
    ],
)
def test_bad_junit_is_a_report_error(data: bytes, match: str) -> None:
    with pytest.raises(ReportError, match=f"^junit report .*{match}"):
        parse_junit(data)


def test_oversize_junit_is_refused_before_parsing() -> None:
    data = b"<testsuites>" + b" " * MAX_JUNIT_BYTES + b"</testsuites>"
    with pytest.raises(ReportError, match="more than 20971520"):
        parse_junit(data)
    assert parse_junit(data[: MAX_JUNIT_BYTES - 13] + b"</testsuites>").outcomes == {}


def _run_of(outcomes: dict[str, Any], *, counts: bool = True) -> TestRun:
    total = TestCounts(passed=len(outcomes)) if counts else None
    return TestRun(exit_code=1, counts=total, outcomes=outcomes)


@pytest.mark.parametrize(
    ("base", "head", "expected"),
    [
        pytest.param(
            {"a": "failed", "b": "errored", "c": "skipped"},
            {"a": "passed", "b": "passed", "c": "passed"},
            {"fixed": ["a", "b"]},
            id="fixed-from-failed-or-errored-only",
        ),
        pytest.param(
            {"a": "passed", "b": "passed", "c": "passed"},
            {"a": "failed", "b": "errored", "c": "skipped"},
            {"broken": ["a", "b"]},
            id="broken-to-failed-or-errored-only",
        ),
        pytest.param(
            {"z": "passed", "a": "failed"},
            {"y": "failed", "b": "passed"},
            {"added": ["b", "y"], "removed": ["a", "z"]},
            id="added-and-removed-sorted",
        ),
    ],
)
def test_test_delta(
    base: dict[str, Any], head: dict[str, Any], expected: dict[str, list[str]]
) -> None:
    delta = junit_module.test_delta(["pytest"], "config", _run_of(base), _run_of(head))
    lists = {"fixed": delta.fixed, "broken": delta.broken}
    lists |= {"added": delta.added, "removed": delta.removed}
    assert {name: ids for name, ids in lists.items() if ids} == expected


@pytest.mark.parametrize(
    ("base", "head"),
    [
        (None, _run_of({"a": "passed"})),
        (_run_of({"a": "passed"}), None),
        (_run_of({"a": "passed"}), _run_of({}, counts=False)),  # head timed out: no report
    ],
)
def test_test_delta_needs_two_reports(base: TestRun | None, head: TestRun | None) -> None:
    delta = junit_module.test_delta(["pytest"], "config", base, head)
    assert (delta.base, delta.head) == (base, head)
    assert (delta.fixed, delta.broken, delta.added, delta.removed) == ([], [], [], [])


def _test_run(outcomes: dict[str, str], exit_code: int = 1) -> TestRun:
    counts = TestCounts(
        passed=sum(o == "passed" for o in outcomes.values()),
        failed=sum(o == "failed" for o in outcomes.values()),
        errored=sum(o == "errored" for o in outcomes.values()),
        skipped=sum(o == "skipped" for o in outcomes.values()),
    )
    return TestRun(exit_code=exit_code, counts=counts, outcomes=outcomes)  # type: ignore[arg-type]


def test_a_module_that_no_longer_imports_breaks_its_tests_and_removes_none() -> None:
    base = _test_run(
        {
            "tests.test_a::test_one": "passed",
            "tests.test_a.TestK::test_two": "passed",
            "tests.test_a::test_three": "failed",
            "tests.test_ab::test_other": "passed",  # another module with a common prefix
            "tests.test_b::test_gone": "passed",
        }
    )
    head = _test_run(
        {"tests.test_a": "errored", "tests.test_ab::test_other": "passed"}, exit_code=2
    )
    delta = junit_module.test_delta(["pytest"], "detected", base, head)
    assert delta.broken == ["tests.test_a.TestK::test_two", "tests.test_a::test_one"]
    assert delta.removed == ["tests.test_b::test_gone"]  # really gone: not in the report
    assert delta.added == []  # a collection error is not a test
    assert delta.fixed == []


@pytest.mark.parametrize(
    ("run", "output", "pytest_command", "expected"),
    [
        pytest.param(
            _test_run({"tests.test_a": "errored", "tests.test_b": "errored"}, exit_code=2),
            "tests/test_a.py:3: in <module>\n    import freezegun\n"
            "E   ModuleNotFoundError: No module named 'freezegun'\n",
            True,
            "ModuleNotFoundError: No module named 'freezegun' (collecting tests.test_a and 1 more)",
            id="collection-errors-and-no-test-ran",
        ),
        pytest.param(
            TestRun(exit_code=4),
            "ERROR: usage: __main__.py [options] [file_or_dir] [file_or_dir] [...]\n"
            "__main__.py: error: unrecognized arguments: --cov=humanize\n",
            True,
            "usage: __main__.py [options] [file_or_dir] [file_or_dir] [...]",
            id="usage-error-without-a-report",
        ),
        pytest.param(
            TestRun(exit_code=4), "make: *** [test] Error 4\n", False, None, id="not-pytest"
        ),
        pytest.param(
            TestRun(exit_code=1),
            "/env/bin/python: No module named pytest\n",
            True,
            "No module named pytest",
            id="pytest-is-not-installed",
        ),
        pytest.param(
            _test_run({"t::a": "failed", "t::b": "passed"}),
            "E   assert 1 == 2\n",
            True,
            None,
            id="an-ordinary-failure",
        ),
        pytest.param(
            _test_run({"t": "errored", "u::a": "passed"}),
            "",
            True,
            None,
            id="continue-on-collection-errors-still-ran-tests",
        ),
        pytest.param(
            TestRun(exit_code=None, timed_out=True), "", True, None, id="a-timeout-is-not-broken"
        ),
    ],
)
def test_a_base_that_cannot_collect_is_a_broken_environment(
    run: TestRun, output: str, pytest_command: bool, expected: str | None
) -> None:
    assert junit_module.environment_problem(run, output, pytest=pytest_command) == expected


NODE_JUNIT = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites>
  <testcase name="adds" classname="test"/>
  <testsuite name="dates" tests="2">
    <testsuite name="parse" tests="1">
      <testcase name="iso" classname="test"><failure message="x">no</failure></testcase>
    </testsuite>
    <testcase name="adds" classname="test"><skipped/></testcase>
  </testsuite>
</testsuites>
"""


def test_node_s_own_runner_names_its_tests_by_their_suites() -> None:
    """node's JUnit report says `classname="test"` for every test: the suites around a
    test name it, so two tests called `adds` stay two."""
    counts, outcomes = node_tests.parse_report("node", NODE_JUNIT)
    assert outcomes == {
        "adds": "passed",
        "dates > parse > iso": "failed",
        "dates > adds": "skipped",
    }
    assert (counts.passed, counts.failed, counts.skipped) == (1, 1, 1)


def test_jest_s_report_names_tests_by_file_and_a_file_that_could_not_run_errors() -> None:
    report = {
        "testResults": [
            {
                "name": "/workspace/test/calc.test.js",
                "status": "failed",
                "assertionResults": [
                    {"ancestorTitles": ["calc"], "title": "adds", "status": "passed"},
                    {"ancestorTitles": ["calc"], "title": "subtracts", "status": "failed"},
                    {"ancestorTitles": [], "title": "later", "status": "todo"},
                ],
            },
            {"name": "/workspace/test/broken.test.js", "status": "failed", "assertionResults": []},
        ]
    }
    counts, outcomes = node_tests.parse_report("jest", json.dumps(report).encode())
    assert outcomes == {
        "test/calc.test.js::calc > adds": "passed",
        "test/calc.test.js::calc > subtracts": "failed",
        "test/calc.test.js::later": "skipped",
        "test/broken.test.js": "errored",  # as a module pytest could not import
    }
    assert collection_errors(TestRun(exit_code=1, counts=counts, outcomes=outcomes)) == [
        "test/broken.test.js"
    ]


@pytest.mark.parametrize("data", [b"not json", b"[]", b'{"testResults": 3}'])
def test_a_jest_report_that_is_not_one_is_refused_with_why(data: bytes) -> None:
    with pytest.raises(ReportError, match="jest report"):
        node_tests.parse_report("jest", data)


def test_eslint_findings_are_placed_in_their_tree_with_errors_low_and_warnings_info() -> None:
    report = [
        {
            "filePath": "/workspace/src/a.js",
            "messages": [
                {"ruleId": "no-var", "severity": 2, "message": "Unexpected var.", "line": 3},
                {"ruleId": "no-console", "severity": 1, "message": "No console.", "line": 4},
            ],
        },
        {"filePath": "/base/src/a.js", "messages": [{"ruleId": None, "severity": 2,
                                                      "message": "Parsing error", "line": 1}]},
        {"filePath": "/elsewhere/x.js", "messages": [{"ruleId": "semi", "severity": 2,
                                                       "message": "Missing", "line": 1}]},
        # eslint 8 on a file its ignore patterns leave out: not a finding
        {"filePath": "/workspace/dist/b.js", "messages": [{"ruleId": None, "severity": 1,
            "message": "File ignored because of a matching ignore pattern."}]},
    ]  # fmt: skip
    found = reports_module.parse_eslint(json.dumps(report), roots=ROOTS, cwd="/workspace")
    assert [(tree, f.rule, f.path, f.line, f.severity) for tree, f in found] == [
        ("head", "no-var", "src/a.js", 3, "low"),
        ("head", "no-console", "src/a.js", 4, "info"),
        ("base", "parse-error", "src/a.js", 1, "low"),
    ]
    with pytest.raises(ReportError, match="eslint output is not JSON"):
        reports_module.parse_eslint("Oops", roots=ROOTS)


@pytest.mark.parametrize(
    ("config", "legacy", "expected"),
    [
        # eslint 9's flat configuration, the base's by its path: ignored files skipped
        (
            "/base/eslint.config.mjs",
            False,
            ["--config", "/base/eslint.config.mjs", "--no-inline-config", "--no-warn-ignored"],
        ),
        (None, False, ["--no-inline-config", "--no-warn-ignored"]),
        # eslint 8's .eslintrc files, nested ones too, as eslint finds them; that eslint
        # has no --no-warn-ignored
        (None, True, ["--no-inline-config"]),
    ],
)
def test_eslint_is_called_as_the_kind_of_its_configuration_wants(
    config: str | None, legacy: bool, expected: list[str]
) -> None:
    from app.sessions.eslint import check_command

    argv = check_command(["src/a.js"], config=config, legacy=legacy)
    assert [a for a in argv[1:] if a not in ("--format", "json")] == [*expected, "./src/a.js"]


def test_tsc_errors_are_findings_named_by_their_code_in_their_tree() -> None:
    text = (
        "src/use.ts(2,27): error TS2345: Argument of type 'number' is not assignable to "
        "parameter of type 'string'.\n"
        "Found 1 error in src/use.ts:2\n"
    )
    found = reports_module.parse_tsc(text, roots=ROOTS, cwd="/workspace")
    assert [(tree, f.rule, f.path, f.line, f.severity) for tree, f in found] == [
        ("head", "TS2345", "src/use.ts", 2, "low")
    ]
    assert reports_module.parse_tsc("", roots=ROOTS, cwd="/base") == []
