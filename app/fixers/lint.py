"""The ``lint`` fixer: ruff and semgrep autofixes, no model.

1. ``ruff check --fix`` with the repository's own ruff configuration (safe fixes only
   unless ``lint.unsafe_fixes`` is on); what it fixed is the difference between
   ``ruff check`` before and after, rule by rule;
2. ``semgrep scan --autofix`` with the rules in ``policies/semgrep/autofix/`` (code
   that is wrong or gone in current Python), on the repository's Python files;
3. ``ruff format``, only if the repository already uses it (``lint.format: auto``
   asks ``ruff format --check`` on the base tree) or says so.

Everything runs in the sandbox on the tree, with no cache written into it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from app.fixers.base import Fixer, walk_files
from app.fixers.config import LintConfig, fixer_settings
from app.sessions.result import FixOutcome
from app.sessions.sandbox import WORKSPACE, Mount
from app.sessions.session import Budget, FixContext, Task
from app.sessions.verify import DEFAULT_RULES, RULES_MOUNT, TOOL_OUTPUT_BYTES

AUTOFIX_RULES = DEFAULT_RULES / "autofix"
SEMGREP_AUTOFIX_FLAGS = ("--metrics=off", "--disable-version-check", "--quiet")


class LintError(Exception):
    """A tool could not run; the message names it and quotes it."""


class LintFixer(Fixer):
    name = "lint"

    def __init__(self, *, autofix_rules: Path = AUTOFIX_RULES) -> None:
        self.autofix_rules = autofix_rules

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        config = fixer_settings(workspace.workspace.base_tree).lint
        python_files = _python_files(workspace.tree)
        if not python_files:
            return self.gave_up(
                "no Python files here: the lint fixer knows ruff and Patchwarden's Python "
                "semgrep rules only"
            )
        try:
            return await self._fix(workspace, config, python_files)
        except LintError as exc:
            return self.gave_up(str(exc))

    async def _fix(self, ws: FixContext, config: LintConfig, python_files: list[str]) -> FixOutcome:
        ruff = f"{ws.sandbox.toolchain.bin_dir}/ruff"
        ws.progress("fix: ruff check")
        before = await self._ruff_findings(ws, ruff)
        formats = config.format is True
        if config.format == "auto":
            check = await ws.run([ruff, "format", "--check", "--no-cache", "."], name="ruff")
            formats = check.exit_code == 0
        argv = [ruff, "check", "--fix", "--exit-zero", "--no-cache", "--quiet"]
        if config.unsafe_fixes:
            argv.append("--unsafe-fixes")
        done = await ws.run([*argv, "."], name="ruff-fix")
        if not done.ok:
            raise LintError(f"`ruff check --fix` failed: {done.stderr.strip()[-500:]}")
        after = await self._ruff_findings(ws, ruff)
        fixed: Counter[str] = before - after
        semgrep_fixed: Counter[str] = Counter()
        if config.semgrep and self.autofix_rules.is_dir():
            ws.progress("fix: semgrep --autofix")
            semgrep_fixed = await self._semgrep(ws, python_files)
        if formats:
            ws.progress("fix: ruff format")
            done = await ws.run([ruff, "format", "--no-cache", "--quiet", "."], name="ruff-format")
            if not done.ok:
                raise LintError(f"`ruff format` failed: {done.stderr.strip()[-500:]}")
        rules = dict(sorted((fixed + semgrep_fixed).items()))
        return FixOutcome(
            fixer=self.name,
            summary=_summary(fixed, semgrep_fixed, after, formatted=formats),
            rules_fixed=rules,
        )

    async def _ruff_findings(self, ws: FixContext, ruff: str) -> Counter[str]:
        argv = [ruff, "check", "--output-format", "json", "--exit-zero", "--no-cache", "."]
        done = await ws.run(argv, name="ruff", output_bytes=TOOL_OUTPUT_BYTES, keep_stdout=False)
        if not done.ok or done.stdout_truncated:
            why = done.stderr.strip()[-500:] or f"exit code {done.exit_code}"
            raise LintError(f"ruff could not check the repository: {why}")
        try:
            findings = json.loads(done.stdout or "[]")
        except json.JSONDecodeError as exc:
            raise LintError(f"ruff's JSON does not parse: {exc}") from None
        return Counter(str(f.get("code") or "syntax-error") for f in findings)

    async def _semgrep(self, ws: FixContext, python_files: list[str]) -> Counter[str]:
        semgrep = f"{ws.sandbox.toolchain.bin_dir}/semgrep"
        # Files named one by one: walking a directory, semgrep would skip tests/.
        targets = [f"{WORKSPACE}/{p}" for p in python_files]
        argv = [semgrep, "scan", "--config", ".", "--autofix", "--json", *SEMGREP_AUTOFIX_FLAGS]
        done = await ws.run(
            [*argv, *targets],
            name="semgrep-autofix",
            mounts=[*ws.mounts, Mount(self.autofix_rules, RULES_MOUNT)],
            cwd=RULES_MOUNT,
            output_bytes=TOOL_OUTPUT_BYTES,
            keep_stdout=False,
        )
        try:
            report = json.loads(done.stdout)
        except json.JSONDecodeError:
            raise LintError(
                f"semgrep --autofix failed (exit code {done.exit_code}): "
                f"{done.stderr.strip()[-500:]}"
            ) from None
        return Counter(
            str(r.get("check_id"))
            for r in report.get("results", [])
            if (r.get("extra") or {}).get("fix") is not None
        )


def _python_files(tree: Path) -> list[str]:
    return [p for p, link in walk_files(tree, tree) if p.endswith(".py") and not link]


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{rule} ({n})" for rule, n in sorted(counter.items()))


def _summary(
    ruff: Counter[str], semgrep: Counter[str], left: Counter[str], *, formatted: bool
) -> str:
    parts = []
    if ruff:
        parts.append(f"ruff fixed {sum(ruff.values())} problem(s): {_counts(ruff)}.")
    if semgrep:
        parts.append(f"semgrep fixed {sum(semgrep.values())}: {_counts(semgrep)}.")
    if not parts:
        parts.append(
            "Nothing to fix: ruff and Patchwarden's semgrep autofix rules found no problem "
            "they can fix safely."
        )
    if formatted:
        parts.append("Formatted with ruff format (the repository already uses it).")
    if left:
        parts.append(f"Left for a human (no safe automatic fix): {_counts(left)}.")
    return " ".join(parts)
