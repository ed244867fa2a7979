"""Patchwarden's offline semgrep pack (``policies/semgrep/``) against annotated targets.

Each file under ``tests/fixtures/semgrep/`` marks the line after a ``# ruleid: <id>``
comment as one that rule must report, and the line after ``# ok: <id>`` as a near miss it
must not report (semgrep's own test-mode convention, so ``semgrep --test`` reads them
too). Every rule runs on every target, so a Python rule that fires on a secrets fixture,
or a finding on a line nobody annotated, fails as well.

All targets go through ONE ``semgrep scan --json`` (semgrep takes seconds to start), the
way the verify phase runs it: from the rules directory, naming each top-level pack with
``--config`` (``autofix/``, the lint fixer's pack, is not part of verification), with the
verify phase's flags, offline, with a throwaway ``HOME`` and a minimal environment, each target
named explicitly. That last part matters: semgrep's default ignore list skips
directories called ``tests/`` when it walks a directory, but not files named on the
command line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli.doctor import find_tool
from app.sessions.verify import SEMGREP_ENGINE, SEMGREP_FLAGS, rule_packs, semgrep_scan

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "policies" / "semgrep"
FIXTURES = ROOT / "tests" / "fixtures" / "semgrep"
README = ROOT / "policies" / "README.md"
REQUIRED_IDS = frozenset(
    {
        "patchwarden.python.subprocess-shell-true",
        "patchwarden.python.os-system",
        "patchwarden.python.eval-exec",
        "patchwarden.python.pickle-load",
        "patchwarden.python.yaml-unsafe-load",
        "patchwarden.python.weak-hash",
        "patchwarden.python.weak-cipher",
        "patchwarden.python.tls-verify-disabled",
        "patchwarden.python.hardcoded-password",
        "patchwarden.secrets.github-token",
        "patchwarden.secrets.aws-access-key",
        "patchwarden.secrets.private-key",
    }
)
# Which ids and languages each file of the pack holds.
PACKS = {
    "python-security.yml": ("patchwarden.python.", {"python"}),
    "secrets.yml": ("patchwarden.secrets.", {"regex", "generic"}),
    "javascript-security.yml": ("patchwarden.javascript.", {"javascript", "typescript"}),
}
RULE_ID = re.compile(r"^patchwarden\.[a-z]+\.[a-z0-9]+(-[a-z0-9]+)*$")
ANNOTATION = re.compile(r"(?:#|//)\s*(?P<kind>ruleid|ok):\s*(?P<ids>\S.*)$")
SEVERITIES = {"ERROR", "WARNING", "INFO"}
CONFIDENCES = {"HIGH", "MEDIUM", "LOW"}
OFFLINE_FLAGS = {"--metrics=off", "--disable-version-check"}
SEMGREP_TIMEOUT = 300.0


@dataclass(frozen=True, order=True)
class Mark:
    """One annotation: ``rule`` must (``ruleid``) or must not (``ok``) report ``line``."""

    path: str  # relative to the repository root
    line: int  # the line after the annotation
    rule: str
    kind: str


def pack_rules() -> Iterator[tuple[str, dict[str, Any]]]:
    """(file name, rule) for every rule in the pack, in file order."""
    for path in sorted(RULES_DIR.glob("*.y*ml")):
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        for rule in document["rules"]:
            yield path.name, rule


def fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.iterdir() if p.is_file())


def marks() -> list[Mark]:
    found = []
    for path in fixture_files():
        relative = path.relative_to(ROOT).as_posix()
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, text in enumerate(lines, start=1):
            match = ANNOTATION.search(text)
            if match is None:
                continue
            for rule in match["ids"].split(","):
                found.append(Mark(relative, number + 1, rule.strip(), match["kind"]))
    return found


def test_the_pack_has_every_required_rule_once() -> None:
    ids = [rule["id"] for _, rule in pack_rules()]
    assert sorted(REQUIRED_IDS - set(ids)) == []
    assert sorted({i for i in ids if ids.count(i) > 1}) == []
    assert [i for i in ids if not RULE_ID.match(i)] == []


def test_every_rule_says_what_is_wrong_how_bad_and_why() -> None:
    problems = []
    for file_name, rule in pack_rules():
        where = f"{file_name}: {rule.get('id')}"
        prefix, languages = PACKS.get(file_name, ("patchwarden.", set()))
        metadata = rule.get("metadata") or {}
        cwes = metadata.get("cwe")
        cwes = cwes if isinstance(cwes, list) else [cwes]
        if not str(rule.get("id", "")).startswith(prefix):
            problems.append(f"{where}: ids in {file_name} must start with {prefix!r}")
        if languages and not set(rule.get("languages") or ()) <= languages:
            problems.append(f"{where}: languages {rule.get('languages')} not in {languages}")
        if len(" ".join(str(rule.get("message", "")).split())) < 60:
            problems.append(f"{where}: the message must say what is wrong and what to do")
        if rule.get("severity") not in SEVERITIES:
            problems.append(f"{where}: severity {rule.get('severity')!r} not in {SEVERITIES}")
        if metadata.get("category") != "security":
            problems.append(f"{where}: metadata.category must be 'security'")
        if not all(isinstance(c, str) and re.match(r"CWE-\d+: \S", c) for c in cwes):
            problems.append(f"{where}: metadata.cwe must read 'CWE-<n>: <title>', got {cwes}")
        if metadata.get("confidence") not in CONFIDENCES:
            problems.append(f"{where}: metadata.confidence not in {CONFIDENCES}")
    assert not problems, "\n".join(problems)


def test_every_rule_has_a_positive_and_a_near_miss_target() -> None:
    ids = {rule["id"] for _, rule in pack_rules()}
    found = marks()
    problems = [
        f"{m.path}:{m.line - 1}: annotation names {m.rule!r}, which is not in the pack"
        for m in found
        if m.rule not in ids
    ]
    for rule in sorted(ids):
        for kind in ("ruleid", "ok"):
            if not any(m.rule == rule and m.kind == kind for m in found):
                problems.append(f"{rule}: no '# {kind}: {rule}' target in {FIXTURES.name}/")
    both = {(m.path, m.line, m.rule) for m in found if m.kind == "ruleid"}
    both &= {(m.path, m.line, m.rule) for m in found if m.kind == "ok"}
    problems += [f"{path}:{line}: both ruleid and ok for {rule}" for path, line, rule in both]
    problems.sort()
    assert not problems, "\n".join(problems)


def test_the_readme_names_every_rule() -> None:
    text = README.read_text(encoding="utf-8")
    assert [rule["id"] for _, rule in pack_rules() if f"`{rule['id']}`" not in text] == []


def run_semgrep(home: Path, *, engine: str = SEMGREP_ENGINE) -> dict[str, Any]:
    """One offline ``semgrep scan --json`` of the whole pack over every fixture, as the
    verify phase runs it (``engine``: its ``--experimental`` OCaml command line, or
    ``""`` for the Python one)."""
    semgrep = find_tool("semgrep")
    if semgrep is None:
        pytest.fail("semgrep is not installed: pip install -e '.[sessions]' (make test does)")
    # Without these semgrep phones home, and stalls for minutes where it cannot.
    missing = OFFLINE_FLAGS - set(SEMGREP_FLAGS)
    assert not missing, f"verify.SEMGREP_FLAGS lacks {sorted(missing)}"
    env = {
        "PATH": os.pathsep.join([str(Path(semgrep).parent), "/usr/bin", "/bin"]),
        "HOME": str(home),  # semgrep writes settings there
        "LANG": "C.UTF-8",
    }
    argv = semgrep_scan(str(Path(semgrep).parent), rule_packs(RULES_DIR), *SEMGREP_FLAGS)
    argv = [a for a in argv if a != SEMGREP_ENGINE or engine]
    argv += [str(path) for path in fixture_files()]
    done = subprocess.run(
        argv,
        cwd=RULES_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=SEMGREP_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"semgrep exited {done.returncode}:\n{done.stderr[-4000:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_semgrep(tmp_path_factory.mktemp("semgrep-home"))


def _found(report: dict[str, Any]) -> list[tuple[str, int, int, str, str, str]]:
    return sorted(
        (
            r["path"],
            r["start"]["line"],
            r["end"]["line"],
            r["check_id"],
            r["extra"]["severity"],
            r["extra"]["message"],
        )
        for r in report["results"]
    )


@pytest.mark.slow
def test_the_ocaml_command_line_finds_what_the_python_one_does(
    scan: dict[str, Any], tmp_path: Path
) -> None:
    """The verify phase runs osemgrep (``--experimental``, 0.2 s to start) for semgrep's
    Python command line (2.2 s): on every annotated target, the same findings with the
    same rule ids, lines, severities and messages, and no errors on either."""
    reference = run_semgrep(tmp_path, engine="")
    assert reference["errors"] == scan["errors"] == []
    assert _found(scan) == _found(reference)
    assert len(_found(scan)) > 20


@pytest.mark.slow
def test_semgrep_scans_every_fixture_without_errors(scan: dict[str, Any]) -> None:
    assert scan["errors"] == []
    scanned = {Path(p).resolve() for p in scan["paths"]["scanned"]}
    assert [p.name for p in fixture_files() if p.resolve() not in scanned] == []


@pytest.mark.slow
def test_every_rule_reports_exactly_its_annotated_lines(scan: dict[str, Any]) -> None:
    found = marks()
    expected = {(m.path, m.line, m.rule) for m in found if m.kind == "ruleid"}
    near_misses = {(m.path, m.line, m.rule) for m in found if m.kind == "ok"}
    reported = set()
    for result in scan["results"]:
        path = Path(result["path"]).resolve().relative_to(ROOT).as_posix()
        reported.add((path, int(result["start"]["line"]), str(result["check_id"])))
    problems = [
        f"{rule} did not fire on {path}:{line} (annotated ruleid)"
        for path, line, rule in sorted(expected - reported)
    ]
    for path, line, rule in sorted(reported - expected):
        why = "annotated ok: a near miss" if (path, line, rule) in near_misses else "no annotation"
        problems.append(f"{rule} fired on {path}:{line} ({why})")
    assert not problems, "\n".join(problems)
