"""The code scanning fixer: a semgrep rule's own autofix, at the alert's place only.

A code scanning alert names a tool, a rule and a place. When the tool is semgrep (as
its SARIF output names itself: ``Semgrep OSS``) and the rule is one Patchwarden has
(the repository's own rule files on the base branch: ``.semgrep.yml``,
``.semgrep.yaml``, ``.semgrep/``; else Patchwarden's packs in ``policies/semgrep/``)
and it has an autofix (``fix`` or ``fix-regex``):

1. that one rule runs on that one file, in the sandbox (``semgrep --json``, offline);
2. of its matches, the one at the alert's line is fixed, with the replacement semgrep
   computed for it, spliced in by byte offset: no other match, no other file changes;
3. the rule runs again on the patched file, and the finding must be gone there.

Anything else (another tool such as CodeQL, which cannot run here; a rule Patchwarden
does not have; a rule with no autofix) goes to the model only where the policy lets it
(``alerts.code_scanning.model``), with the rule's texts as untrusted documents and the
place as where to look; then the pull request says the finding was not checked again.
Otherwise the job says why and changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from app.fixers.interface import Fixer
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


class ScanningFixer(Fixer):
    # semgrep's own autofix: mechanical, weighed and learnt like the lint fixer's
    name = "lint"

    def __init__(self, *, rules_dir: Path = DEFAULT_RULES, model: Fixer | None = None) -> None:
        self.rules_dir = rules_dir
        self.model = model

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        scan = task.scan
        if scan is None:
            return self.gave_up("no code scanning alert: this fixer only answers those")
        rule, why = None, f"{scan.tool} cannot run here and has no autofix Patchwarden applies"
        if is_semgrep(scan.tool):
            rule, where = find_rule(workspace.tree, self.rules_dir, scan.rule)
            if rule is None:
                why = (
                    f"the semgrep rule `{scan.rule}` is not in the repository's rule files "
                    "(.semgrep.yml, .semgrep/) nor Patchwarden's, so its autofix is unknown"
                )
            elif "fix" not in rule and "fix-regex" not in rule:
                why, rule = f"the semgrep rule `{scan.rule}` ({where}) has no autofix", None
        if rule is not None:
            fixed = await self._autofix(workspace, scan, rule)
            if fixed is not None:
                return fixed
            why = f"semgrep computes no fix for `{scan.rule}` at `{scan.path}:{scan.start_line}`"
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

    async def _autofix(
        self, ws: FixContext, scan: ScanAlert, rule: dict[str, Any]
    ) -> FixOutcome | None:
        """The rule's fix at the alert's place; None when semgrep computes none there
        (a ``fix-regex`` on a ``pattern-regex`` rule, say)."""
        original = read_confined(ws.tree, scan.path, limit=MAX_SOURCE_BYTES + 1)
        if original is None:
            return self.gave_up(f"`{scan.path}` is not a file of the tree", final=True)
        if len(original) > MAX_SOURCE_BYTES:  # never written back cut
            return self.gave_up(
                f"`{scan.path}` is over {MAX_SOURCE_BYTES // 2**20} MiB: not edited here",
                final=True,
            )
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
