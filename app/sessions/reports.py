"""Turn what the linters print (ruff, bandit, semgrep) into typed findings and deltas;
:mod:`app.sessions.junit` does the same for the test runs.

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
from typing import Any, Literal

from app.errors import PatchwardenError
from app.policy.evidence import Finding, FindingsDelta, Tool
from app.sessions.result import Tree

Roots = Mapping[str, Tree]
"""Where each tree is mounted, e.g. ``{"/base": "base", "/workspace": "head"}``."""

LineReader = Callable[[Tree, str, int], str]
"""``(tree, path relative to its root, 1-based line)`` -> that source line, or ``""``."""

Severity = Literal["info", "low", "medium", "high"]

SNIPPET_CHARS = 200
_SHOWN_CHARS = 200  # of bad output, in a ReportError message
_SEMGREP_NO_LOGIN = "requires login"
_RUFF_SECURITY_CODE = re.compile(r"S\d+")  # flake8-bandit; not SIM (flake8-simplify)
_BANDIT_CODE_LINE = re.compile(r"(\d+) ?(.*)")


class ReportError(PatchwardenError):
    """A tool's output does not parse, or says the tool could not check the patched code."""


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


def parse_eslint(
    text: str, *, roots: Roots, cwd: str = "/", read_line: LineReader | None = None
) -> list[tuple[Tree, Finding]]:
    """Findings from ``eslint --format json FILES``: each message of each file, its rule
    (``parse-error`` for a file eslint could not parse), ``low`` for an error of the
    repository's rules and ``info`` for a warning. A file the repository's ignore
    patterns leave out is no finding (eslint 8 says so of a file named to it)."""

    def hits(data: Any) -> list[_Hit]:
        out = []
        for result in _as_list(data):
            for m in result.get("messages") or []:
                if not m.get("ruleId") and str(m.get("message", "")).startswith("File ignored"):
                    continue
                out.append(
                    _Hit(
                        path=str(result["filePath"]),
                        line=int(m.get("line") or 1),
                        rule=str(m.get("ruleId") or "parse-error"),
                        message=str(m.get("message", "")),
                        severity="low" if m.get("severity") == 2 else "info",
                    )
                )
        return out

    return _place("eslint", _shape("eslint", text, hits), roots=roots, cwd=cwd, read_line=read_line)


_TSC_LINE = re.compile(
    r"^(?P<path>[^\s(][^(]*)\((?P<line>\d+),\d+\): (?P<kind>error|warning) (?P<code>TS\d+): "
    r"(?P<message>.*)$",
    re.MULTILINE,
)


def parse_tsc(
    text: str, *, roots: Roots, cwd: str = "/", read_line: LineReader | None = None
) -> list[tuple[Tree, Finding]]:
    """Type errors from ``tsc --noEmit --pretty false`` (``path(line,col): error TS2322:
    message``), each ``low``: a type the change got wrong, named by its code."""
    hits = [
        _Hit(
            path=m["path"],
            line=int(m["line"]),
            rule=m["code"],
            message=m["message"].strip(),
            severity="low",
        )
        for m in _TSC_LINE.finditer(text)
    ]
    return _place("tsc", hits, roots=roots, cwd=cwd, read_line=read_line)


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
