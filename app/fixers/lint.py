"""The ``lint`` fixer: ruff and semgrep autofixes, no model.

1. ``ruff check --fix`` — with the repository's own ruff configuration when it has one
   (``ruff.toml``, ``.ruff.toml`` or ``[tool.ruff]`` in ``pyproject.toml``), else with
   Patchwarden's own small selection (:data:`OWN_SELECT`: unused imports, f-strings
   without placeholders, ``is`` with a literal, ``not in``/``is not``) and nothing of
   ruff's defaults; safe fixes only unless ``lint.unsafe_fixes`` is on;
2. ``semgrep scan --autofix`` with the rules in ``policies/semgrep/autofix/`` (code
   that is wrong or gone in current Python);
3. ``ruff format``, only if the repository already uses it (``lint.format: auto``
   asks ``ruff format --check`` on the base tree) or says so.

**Scope.** When the task names files of the tree (``src/pkg/mod.py``), only those are
fixed; otherwise the whole tree, and the summary says which. **What was fixed** comes
from ruff's census before and after, taken with fixes disabled (``--no-fix``: a
repository's ``fix = true`` would otherwise apply them while counting), matched by
rule, file and message (not line: a fix moves lines), and counted only in files the
patch changes.

Everything runs in the sandbox on the tree, with no cache written into it.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections import Counter
from pathlib import Path

from app.fixers import lint_js
from app.fixers.fixer_policy import LintConfig, section
from app.fixers.interface import Fixer, FixerRecord, walk_files
from app.sessions.eslint import JS_SUFFIXES, eslint_config, installed
from app.sessions.files import read_confined
from app.sessions.fix_context import FixContext
from app.sessions.repo_commands import NODE_MODULES
from app.sessions.result import FixOutcome
from app.sessions.sandbox import WORKSPACE, Mount
from app.sessions.task import Budget, Task
from app.sessions.verify import (
    DEFAULT_RULES,
    RULES_MOUNT,
    TOOL_OUTPUT_BYTES,
    rule_packs,
    semgrep_scan,
)
from app.words import plural

AUTOFIX_RULES = DEFAULT_RULES / "autofix"
SEMGREP_AUTOFIX_FLAGS = ("--metrics=off", "--disable-version-check", "--quiet")
# Without a ruff configuration of the repository's own: fixes nobody argues about.
OWN_SELECT = ("F401", "F541", "F632", "E713", "E714")
RUFF_CONFIGS = ("ruff.toml", ".ruff.toml")
_NAMED_FILE = re.compile(r"[\w./-]+\.(?:pyi?|[mc]?[jt]sx?)\b")
Finding = tuple[str, str, str]  # (rule, file, message)


class LintError(Exception):
    """A tool could not run; the message names it and quotes it."""


class LintFixer(Fixer):
    record = FixerRecord(
        name="lint",
        reason="mechanical autofixes: ruff, semgrep, eslint",
        category="lint",
        model=False,
        words=("lint",),
        closes_issue=False,  # only an issue about lint (app/jobs/pull_request.py)
        section="lint",
        settings=LintConfig,
        build=lambda settings, made: LintFixer(),
    )

    def __init__(self, *, autofix_rules: Path = AUTOFIX_RULES) -> None:
        self.autofix_rules = autofix_rules

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        config = section(workspace.base_tree, "lint", LintConfig)
        python_files = _python_files(workspace.tree)
        js_files = _files(workspace.tree, JS_SUFFIXES)
        named = named_files(task, python_files)
        named_js = named_files(task, js_files, suffixes=JS_SUFFIXES)
        if js_files and (named_js or not python_files) and not named:
            return await self._fix_js(workspace, config, named_js or js_files, bool(named_js))
        if not python_files:
            return self.gave_up(
                "no Python or JavaScript files here: the lint fixer knows ruff and "
                "Patchwarden's semgrep rules for Python, and a repository's own eslint"
            )
        try:
            return await self._fix(workspace, config, named or python_files, scoped=bool(named))
        except LintError as exc:
            return self.gave_up(str(exc))

    async def _fix_js(
        self, ws: FixContext, config: LintConfig, files: list[str], scoped: bool
    ) -> FixOutcome:
        """eslint's own fixes (:mod:`~app.fixers.lint_js`), with the repository's rules."""
        rules_file = eslint_config(ws.base_tree)
        if rules_file is None:
            return self.gave_up(
                "no eslint configuration here (eslint.config.js, .eslintrc or "
                "package.json's eslintConfig): on JavaScript the lint fixer applies the "
                "repository's own eslint rules, and it has none"
            )
        if not installed(ws.env_dir, "eslint"):
            return self.gave_up(
                "eslint is not among the packages setup installed: add it to "
                "package.json's devDependencies (and the lock)"
            )
        try:
            fixed, left, formatted = await lint_js.eslint_fix(ws, config, files, scoped=scoped)
        except lint_js.JsLintError as exc:
            return self.gave_up(str(exc))
        parts = [f"eslint fixed {plural(sum(fixed.values()), 'problem')}: {_counts(fixed)}."]
        if not fixed:
            parts = [
                "Nothing to fix: eslint found no problem it can fix with the repository's rules."
            ]
        if formatted:
            parts.append("Formatted with prettier (the repository already uses it).")
        if left:
            parts.append(f"Left for a human (no automatic fix): {_counts(left)}.")
        scope = ", ".join(files) if scoped else ""
        parts.append(
            f"Scope: the files the task names ({scope})."
            if scoped
            else "Scope: the whole repository (the task names no file)."
        )
        parts.append(f"Rules: the repository's own eslint configuration ({rules_file}).")
        named = ", ".join(sorted(fixed)) or "formatting"
        return FixOutcome(
            fixer=self.name,
            summary=" ".join(parts),
            commit_message=f"Fix lint: {named}"[:72] + "\n\nPatchwarden session, fixer lint.",
            rules_fixed=dict(sorted(fixed.items())),
        )

    async def _fix(
        self, ws: FixContext, config: LintConfig, files: list[str], *, scoped: bool
    ) -> FixOutcome:
        ruff = f"{ws.sandbox.toolchain.bin_dir}/ruff"
        own = not has_ruff_config(ws.base_tree)
        select = ["--isolated", "--select", ",".join(OWN_SELECT)] if own else []
        targets = files if scoped else ["."]
        ws.progress("fix: ruff check")
        before = await self._ruff_findings(ws, ruff, select, targets)
        formats = config.format is True
        if config.format == "auto":
            check = await ws.run([ruff, "format", "--check", "--no-cache", "."], name="ruff")
            formats = check.exit_code == 0
        argv = [ruff, "check", *select, "--fix", "--exit-zero", "--no-cache", "--quiet"]
        if config.unsafe_fixes:
            argv.append("--unsafe-fixes")
        done = await ws.run([*argv, *targets], name="ruff-fix")
        if not done.ok:
            raise LintError(f"`ruff check --fix` failed: {done.stderr.strip()[-500:]}")
        after = await self._ruff_findings(ws, ruff, select, targets)
        semgrep_fixed: Counter[str] = Counter()
        if config.semgrep and self.autofix_rules.is_dir():
            ws.progress("fix: semgrep --autofix")
            semgrep_fixed = await self._semgrep(ws, files)
        if formats:
            ws.progress("fix: ruff format")
            done = await ws.run(
                [ruff, "format", "--no-cache", "--quiet", *targets], name="ruff-format"
            )
            if not done.ok:
                raise LintError(f"`ruff format` failed: {done.stderr.strip()[-500:]}")
        changed = set(await ws.changed_paths())
        fixed = Counter(rule for rule, path, _ in before - after if path in changed)
        left = Counter(rule for rule, _, _ in after.elements())
        rules = dict(sorted((fixed + semgrep_fixed).items()))
        scope = (
            f"Scope: the files the task names ({', '.join(files)})."
            if scoped
            else "Scope: the whole repository (the task names no file)."
        )
        rule_set = (
            f"Rules: Patchwarden's own safe selection ({', '.join(OWN_SELECT)}); the "
            "repository has no ruff configuration."
            if own
            else "Rules: the repository's own ruff configuration."
        )
        named = ", ".join(rules) or "formatting"
        return FixOutcome(
            fixer=self.name,
            summary=" ".join(
                [_summary(fixed, semgrep_fixed, left, formatted=formats), scope, rule_set]
            ),
            # The commit (and the pull request) says what it is: lint, not the issue.
            commit_message=f"Fix lint: {named}"[:72] + "\n\nPatchwarden session, fixer lint.",
            rules_fixed=rules,
        )

    async def _ruff_findings(
        self, ws: FixContext, ruff: str, select: list[str], targets: list[str]
    ) -> Counter[Finding]:
        argv = [ruff, "check", *select, "--no-fix", "--output-format", "json"]
        argv += ["--exit-zero", "--no-cache", *targets]
        done = await ws.run(argv, name="ruff", output_bytes=TOOL_OUTPUT_BYTES, keep_stdout=False)
        if not done.ok or done.stdout_truncated:
            why = done.stderr.strip()[-500:] or f"exit code {done.exit_code}"
            raise LintError(f"ruff could not check the repository: {why}")
        try:
            findings = json.loads(done.stdout or "[]")
        except json.JSONDecodeError as exc:
            raise LintError(f"ruff's JSON does not parse: {exc}") from None
        prefix = WORKSPACE + "/"
        return Counter(
            (
                str(f.get("code") or "syntax-error"),
                str(f.get("filename") or "").removeprefix(prefix),
                str(f.get("message") or ""),
            )
            for f in findings
        )

    async def _semgrep(self, ws: FixContext, python_files: list[str]) -> Counter[str]:
        packs = rule_packs(self.autofix_rules)
        if not packs:
            return Counter()
        # Files named one by one: walking a directory, semgrep would skip tests/.
        targets = [f"{WORKSPACE}/{p}" for p in python_files]
        flags = ("--autofix", *SEMGREP_AUTOFIX_FLAGS)
        argv = semgrep_scan(ws.sandbox.toolchain.bin_dir, packs, *flags)
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


def has_ruff_config(tree: Path) -> bool:
    """Whether the repository configures ruff at its top (where ruff would look)."""
    if any(read_confined(tree, name) is not None for name in RUFF_CONFIGS):
        return True
    data = read_confined(tree, "pyproject.toml")
    if data is None:
        return False
    try:
        return "ruff" in tomllib.loads(data.decode("utf-8", "replace")).get("tool", {})
    except tomllib.TOMLDecodeError:
        return False


def named_files(
    task: Task, python_files: list[str], *, suffixes: tuple[str, ...] = (".py", ".pyi")
) -> list[str]:
    """The files of the tree (with one of ``suffixes``) the task's words name, by path
    (``src/a/b.py``) or, when unambiguous, by file name (``b.py``)."""
    known = set(python_files)
    by_name: dict[str, list[str]] = {}
    for path in python_files:
        by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)
    found: list[str] = []
    for word in _NAMED_FILE.findall(task.words):
        if not word.endswith(suffixes):
            continue
        word = word.removeprefix("./").lstrip("/")
        candidates = [word] if word in known else by_name.get(word, [])
        if len(candidates) == 1 and candidates[0] not in found:
            found.append(candidates[0])
    return found


def _python_files(tree: Path) -> list[str]:
    return _files(tree, (".py",))


def _files(tree: Path, suffixes: tuple[str, ...]) -> list[str]:
    """The tree's files with one of ``suffixes`` (no symlink, nothing in node_modules)."""
    return [
        p
        for p, link in walk_files(tree, tree)
        if p.endswith(suffixes) and not link and not p.startswith(f"{NODE_MODULES}/")
    ]


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{rule} ({n})" for rule, n in sorted(counter.items()))


def _summary(
    ruff: Counter[str], semgrep: Counter[str], left: Counter[str], *, formatted: bool
) -> str:
    parts = []
    if ruff:
        parts.append(f"ruff fixed {plural(sum(ruff.values()), 'problem')}: {_counts(ruff)}.")
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
