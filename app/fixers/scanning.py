"""The code scanning fixer: a semgrep rule's own autofix, or ruff's safe fix, at the
alert's place only.

A code scanning alert names a tool, a rule and a place. When the tool is semgrep (as
its SARIF output names itself: ``Semgrep OSS``) and the rule is one Patchwarden has
(the repository's own rule files on the base branch: ``.semgrep.yml``,
``.semgrep.yaml``, ``.semgrep/``; else Patchwarden's packs in ``policies/semgrep/``)
and it has an autofix (``fix`` or ``fix-regex``):

1. that one rule runs on that one file, in the sandbox (``semgrep --json``, offline);
2. of its matches, the one at the alert's line is fixed, with the replacement semgrep
   computed for it, spliced in by byte offset: no other match, no other file changes;
3. the rule runs again on the patched file, and the finding must be gone there.

When the tool is ruff, the same with ruff (``--select`` the alert's rule, the
repository's ruff configuration): the fix of the finding at the alert's line, when ruff
calls it safe, applied by its edits' rows and columns; ruff must then report one
finding fewer.

Anything else (another tool such as CodeQL, which cannot run here; a rule Patchwarden
does not have; a rule with no autofix, or no safe one) goes to the model only where the
policy lets it (``alerts.code_scanning.model``), with the rule's texts as untrusted
documents and the place as where to look; then the pull request says the finding was
not checked again.
Otherwise the job says why and changes nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from app.fixers.interface import Fixer, FixerRecord
from app.sessions.files import read_confined, write_confined
from app.sessions.fix_context import FixContext
from app.sessions.result import FixOutcome
from app.sessions.sandbox import WORKSPACE, Mount
from app.sessions.task import Budget, ScanAlert, Task
from app.sessions.verify import DEFAULT_RULES, RULES_MOUNT, TOOL_OUTPUT_BYTES, semgrep_scan

SEMGREP_FLAGS = ("--metrics=off", "--disable-version-check", "--quiet")
REPO_RULES = (".semgrep.yml", ".semgrep.yaml")
REPO_RULE_DIR = ".semgrep"
MAX_RULE_FILES = 50
MAX_SOURCE_BYTES = 4 * 1024 * 1024
RULE_FILE = "alert-rule.yml"
RUFF_CODE = re.compile(r"^[A-Z]{1,6}[0-9]{1,4}$")  # F401, UP031, PLR2004, ASYNC100
LINE_END = re.compile(r"\r\n|\r|\n")


class ScanningFixer(Fixer):
    # A rule's own autofix at one place: mechanical, weighed and learnt as lint is.
    # When it hands the alert to the model, the outcome is the llm fixer's.
    record = FixerRecord(
        name="scanning",
        reason="a code scanning rule's own autofix at the alert's place, no model",
        category="lint",
        model=False,
    )  # built by the security alert job only (app/jobs/security_alert.py)

    def __init__(self, *, rules_dir: Path = DEFAULT_RULES, model: Fixer | None = None) -> None:
        self.rules_dir = rules_dir
        self.model = model

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        scan = task.scan
        if scan is None:
            return self.gave_up("no code scanning alert: this fixer only answers those")
        if is_ruff(scan.tool):
            fixed, why = await self._ruff_fix(workspace, scan)
        else:
            fixed, why = await self._semgrep_fix(workspace, scan)
        if fixed is not None:
            return fixed
        if self.model is None:
            return self.gave_up(
                f"{why}, and no model may write the fix (`alerts.code_scanning.model` is "
                "false, or no model is configured): nothing changed",
                final=True,
            )
        workspace.progress(f"fix: {why}; the model writes the fix")
        outcome = await self.model(workspace)
        if outcome.ok:
            note = (
                f"\n\nThe finding was not checked again: {why}. A new analysis on the "
                "default branch after the merge says whether it is gone."
            )
            outcome = outcome.model_copy(update={"summary": outcome.summary + note})
        return outcome

    async def _semgrep_fix(self, ws: FixContext, scan: ScanAlert) -> tuple[FixOutcome | None, str]:
        """The semgrep rule's own autofix at the alert's place (or a final refusal), and
        else why there is none."""
        if not is_semgrep(scan.tool):
            return None, f"{scan.tool} cannot run here and has no autofix Patchwarden applies"
        rule, where = find_rule(ws.tree, self.rules_dir, scan.rule)
        if rule is None:
            return None, (
                f"the semgrep rule `{scan.rule}` is not in the repository's rule files "
                "(.semgrep.yml, .semgrep/) nor Patchwarden's, so its autofix is unknown"
            )
        if "fix" not in rule and "fix-regex" not in rule:
            return None, f"the semgrep rule `{scan.rule}` ({where}) has no autofix"
        fixed = await self._autofix(ws, scan, rule)
        why = f"semgrep computes no fix for `{scan.rule}` at `{scan.path}:{scan.start_line}`"
        return fixed, why

    async def _ruff_fix(self, ws: FixContext, scan: ScanAlert) -> tuple[FixOutcome | None, str]:
        """ruff's own safe fix of the one finding at the alert's place, with the
        repository's ruff configuration, checked by running the rule again; else why
        there is none."""
        place = f"{scan.path}:{scan.start_line}"
        if not RUFF_CODE.match(scan.rule):
            return None, f"`{scan.rule}` is not a ruff rule code"
        original = self._source(ws, scan)
        if isinstance(original, FixOutcome):
            return original, ""
        try:
            text = original.decode("utf-8")
        except UnicodeDecodeError:
            return self.gave_up(f"`{scan.path}` is not UTF-8: not edited here", final=True), ""
        ws.progress(f"fix: ruff {scan.rule} on {scan.path}")
        found = await self._ruff_findings(ws, scan)
        at = [f for f in found if f["location"]["row"] == scan.start_line]
        if not at:
            rows = sorted({f["location"]["row"] for f in found})
            return self.gave_up(
                f"ruff does not report `{scan.rule}` at `{place}` on the base (it reports it "
                f"at {rows or 'no line'}): the alert may be out of date; nothing changed",
                final=True,
            ), ""
        fix = at[0].get("fix")
        edits = fix.get("edits") if isinstance(fix, dict) else None
        if not isinstance(fix, dict) or fix.get("applicability") != "safe" or not edits:
            return None, f"ruff has no safe fix for `{scan.rule}` at `{place}`"
        patched = apply_edits(text, edits)
        if patched is None:
            return None, f"ruff's fix for `{scan.rule}` at `{place}` does not apply"
        write_confined(ws.tree, scan.path, patched.encode("utf-8"))
        after = await self._ruff_findings(ws, scan)
        if len(after) >= len(found):
            write_confined(ws.tree, scan.path, original)
            return self.gave_up(
                f"ruff's fix did not remove the `{scan.rule}` finding at `{place}`; nothing "
                "changed",
                final=True,
            ), ""
        others = len(found) - 1
        left = f" Its {others} other finding(s) in the file are left as they are." if others else ""
        return FixOutcome(
            fixer=self.name,
            summary=(
                f"Applied ruff's own safe fix for `{scan.rule}` at `{place}` (code scanning "
                f"alert #{scan.number}), and nothing else.{left} ruff was run again on the "
                f"patched `{scan.path}`: the finding is gone."
            ),
            commit_message=(
                f"Fix {scan.rule} at {place}\n\nruff's fix for code scanning alert "
                f"#{scan.number}, at that place only.\n\nPatchwarden session, fixer lint."
            ),
            rules_fixed={scan.rule: 1},
        ), ""

    def _source(self, ws: FixContext, scan: ScanAlert) -> bytes | FixOutcome:
        """The alert's file as the tree has it, or why it is not edited."""
        original = read_confined(ws.tree, scan.path, limit=MAX_SOURCE_BYTES + 1)
        if original is None:
            return self.gave_up(f"`{scan.path}` is not a file of the tree", final=True)
        if len(original) > MAX_SOURCE_BYTES:  # never written back cut
            return self.gave_up(
                f"`{scan.path}` is over {MAX_SOURCE_BYTES // 2**20} MiB: not edited here",
                final=True,
            )
        return original

    async def _ruff_findings(self, ws: FixContext, scan: ScanAlert) -> list[dict[str, Any]]:
        """ruff's findings of the alert's rule in its file (the repository's ruff
        configuration applies: the tree is the working folder)."""
        ruff = f"{ws.sandbox.toolchain.bin_dir}/ruff"
        argv = [ruff, "check", f"--select={scan.rule}", "--no-fix", "--output-format=json"]
        done = await ws.run(
            [*argv, "--exit-zero", "--no-cache", f"{WORKSPACE}/{scan.path}"],
            name="ruff-alert-rule",
            output_bytes=TOOL_OUTPUT_BYTES,
            keep_stdout=False,
        )
        try:
            found = json.loads(done.stdout) if done.ok and not done.stdout_truncated else None
        except json.JSONDecodeError:
            found = None
        if not isinstance(found, list):
            said = done.stderr.strip()[-500:]
            raise OSError(f"ruff failed on `{scan.path}` (exit code {done.exit_code}): {said}")
        return [
            f
            for f in found
            if isinstance(f, dict)
            and f.get("code") == scan.rule
            and isinstance(f.get("location"), dict)
            and isinstance(f["location"].get("row"), int)
        ]

    async def _autofix(
        self, ws: FixContext, scan: ScanAlert, rule: dict[str, Any]
    ) -> FixOutcome | None:
        """The rule's fix at the alert's place; None when semgrep computes none there
        (a ``fix-regex`` on a ``pattern-regex`` rule, say)."""
        original = self._source(ws, scan)
        if isinstance(original, FixOutcome):
            return original
        folder = ws.workspace.root / "scan-rules"
        folder.mkdir(exist_ok=True)
        (folder / RULE_FILE).write_text(yaml.safe_dump({"rules": [rule]}, sort_keys=False))
        ws.progress(f"fix: semgrep {rule['id']} on {scan.path}")
        found = await self._matches(ws, folder, scan.path)
        at = [m for m in found if m["start"]["line"] == scan.start_line]
        if not at:
            lines = sorted({m["start"]["line"] for m in found})
            return self.gave_up(
                f"`{rule['id']}` does not match at `{scan.path}:{scan.start_line}` on the base "
                f"(it matches at {lines or 'no line'}): the alert may be out of date; nothing "
                "changed",
                final=True,
            )
        match = at[0]
        fix = (match.get("extra") or {}).get("fix")
        if not isinstance(fix, str):
            return None
        start, end = int(match["start"]["offset"]), int(match["end"]["offset"])
        patched = original[:start] + fix.encode("utf-8") + original[end:]
        write_confined(ws.tree, scan.path, patched)
        after = await self._matches(ws, folder, scan.path)
        still = [m for m in after if m["start"]["line"] == scan.start_line]
        if still:
            write_confined(ws.tree, scan.path, original)
            return self.gave_up(
                f"`{rule['id']}`'s autofix did not remove the finding at "
                f"`{scan.path}:{scan.start_line}`; nothing changed",
                final=True,
            )
        others = len(found) - 1
        left = f" Its {others} other match(es) in the file are left as they are." if others else ""
        place = f"{scan.path}:{scan.start_line}"
        return FixOutcome(
            fixer=self.name,
            summary=(
                f"Applied semgrep rule `{rule['id']}`'s own autofix at `{place}` (code "
                f"scanning alert #{scan.number}), and nothing else.{left} The rule was run "
                f"again on the patched `{scan.path}`: it no longer matches at line "
                f"{scan.start_line}."
            ),
            commit_message=(
                f"Fix {rule['id']} at {place}\n\nsemgrep's autofix for code scanning alert "
                f"#{scan.number}, at that place only.\n\nPatchwarden session, fixer lint."
            ),
            rules_fixed={str(rule["id"]): 1},
        )

    async def _matches(self, ws: FixContext, folder: Path, path: str) -> list[dict[str, Any]]:
        argv = semgrep_scan(ws.sandbox.toolchain.bin_dir, [RULE_FILE], *SEMGREP_FLAGS)
        done = await ws.run(
            [*argv, f"{WORKSPACE}/{path}"],
            name="semgrep-alert-rule",
            mounts=[*ws.mounts, Mount(folder, RULES_MOUNT)],
            cwd=RULES_MOUNT,
            output_bytes=TOOL_OUTPUT_BYTES,
            keep_stdout=False,
        )
        try:
            report = json.loads(done.stdout)
        except json.JSONDecodeError:
            report = None
        results = report.get("results") if isinstance(report, dict) else None
        errors = report.get("errors") if isinstance(report, dict) else None
        # 0: no match, 1: matches; anything else, or an error (a rule that does not
        # parse, a timeout), and no finding can be claimed present or gone.
        if done.exit_code not in (0, 1) or errors or not isinstance(results, list):
            said = json.dumps(errors)[:500] if errors else done.stderr.strip()[-500:]
            raise OSError(f"semgrep failed on `{path}` (exit code {done.exit_code}): {said}")
        return [r for r in results if isinstance(r, dict) and "start" in r and "end" in r]


def is_semgrep(tool: str) -> bool:
    """Whether an alert's tool is semgrep: GitHub shows the SARIF file's driver name,
    which semgrep writes as ``Semgrep OSS`` (``Semgrep Pro`` with its Pro engine), and
    other uploaders as ``semgrep`` or ``Semgrep``."""
    words = tool.lower().split()
    return bool(words) and words[0] == "semgrep" and len(words) <= 2


def is_ruff(tool: str) -> bool:
    """Whether an alert's tool is ruff (``ruff check --output-format sarif`` names its
    driver ``ruff``)."""
    return tool.strip().lower() == "ruff"


def apply_edits(text: str, edits: list[Any]) -> str | None:
    """``text`` with ruff's edits applied (rows and columns from 1, in characters), or
    None when they do not fit it (out of range, overlapping, not ruff's shape)."""
    # ruff's lines end at \n, \r\n or \r only (str.splitlines also splits at \f)
    starts = [0, *(m.end() for m in LINE_END.finditer(text))]
    ends = [*starts[1:], len(text)]  # a column may reach the line's end, not past it

    def offset(at: Any) -> int:
        row, column = int(at["row"]) - 1, int(at["column"]) - 1
        if row < 0 or column < 0 or starts[row] + column > ends[row]:
            raise ValueError(f"{at} is not in the text")
        return starts[row] + column

    spans = []
    try:
        for edit in edits:
            a, b = offset(edit["location"]), offset(edit["end_location"])
            spans.append((a, b, str(edit["content"])))
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    spans.sort()
    if any(b < a for a, b, _ in spans) or any(
        spans[i][1] > spans[i + 1][0] for i in range(len(spans) - 1)
    ):
        return None
    for a, b, content in reversed(spans):
        text = text[:a] + content + text[b:]
    return text


def find_rule(tree: Path, rules_dir: Path, wanted: str) -> tuple[dict[str, Any] | None, str]:
    """The rule whose id is ``wanted`` (semgrep prefixes a rule's id with the folders of
    the file it came from: ``wanted`` may end with ``.<id>``), and where it was found:
    the repository's own rule files first, then Patchwarden's packs."""
    sources: list[tuple[str, bytes | None]] = [(n, read_confined(tree, n)) for n in REPO_RULES]
    folder = tree / REPO_RULE_DIR
    if folder.is_dir() and not folder.is_symlink():
        names = sorted(p for p in folder.rglob("*.y*ml") if p.is_file())[:MAX_RULE_FILES]
        sources += [(p.relative_to(tree).as_posix(), None) for p in names]
    ours = sorted(rules_dir.glob("*.y*ml")) + sorted(rules_dir.glob("*/*.y*ml"))
    for name, data in sources + [(f"Patchwarden's {p.name}", p.read_bytes()) for p in ours]:
        data = data if data is not None else read_confined(tree, name)
        for rule in _rules(data):
            rid = str(rule.get("id", ""))
            if rid and (wanted == rid or wanted.endswith("." + rid)):
                return rule, name
    return None, ""


def _rules(data: bytes | None) -> list[dict[str, Any]]:
    if not data:
        return []
    try:
        loaded = yaml.safe_load(data.decode("utf-8", "replace"))
    except (yaml.YAMLError, RecursionError, ValueError):
        return []  # not a rule file Patchwarden can read: its rules are not found
    rules = loaded.get("rules") if isinstance(loaded, dict) else None
    return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []
