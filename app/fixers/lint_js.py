"""The ``lint`` fixer on JavaScript and TypeScript: eslint's own fixes, no model.

1. ``eslint --fix`` with the repository's own configuration (``eslint.config.*`` or
   ``.eslintrc*``, or ``eslintConfig`` in ``package.json``) and the eslint its
   ``package.json`` installs (setup put it in ``node_modules``): a repository without
   either is told so, never linted by rules of Patchwarden's choosing;
2. ``prettier --write``, only where the repository uses prettier (a prettier
   configuration, and ``prettier --check`` passes on the base tree).

**Scope** as for Python: the files the task names, else the whole tree. **What was
fixed** comes from eslint's JSON census before and after the fixes, matched by rule,
file and message, and counted in files the patch changes. Everything runs in the
sandbox on the tree, with no cache written into it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from app.fixers.fixer_policy import LintConfig
from app.sessions.eslint import installed, package_json
from app.sessions.files import read_confined
from app.sessions.fix_context import FixContext
from app.sessions.sandbox import WORKSPACE
from app.sessions.verify import TOOL_OUTPUT_BYTES

PRETTIER_CONFIGS = (
    ".prettierrc", ".prettierrc.json", ".prettierrc.yaml", ".prettierrc.yml",
    ".prettierrc.js", ".prettierrc.cjs", ".prettierrc.mjs", ".prettierrc.toml",
    "prettier.config.js", "prettier.config.cjs", "prettier.config.mjs",
)  # fmt: skip
Finding = tuple[str, str, str]  # (rule, file, message)


class JsLintError(Exception):
    """eslint or prettier could not run as asked; the message says which and why."""


def uses_prettier(tree: Path) -> bool:
    """Whether the repository configures prettier (a file of its own or a key)."""
    return any(read_confined(tree, n) is not None for n in PRETTIER_CONFIGS) or (
        "prettier" in package_json(tree)
    )


async def eslint_fix(
    ws: FixContext, config: LintConfig, files: list[str], *, scoped: bool
) -> tuple[Counter[str], Counter[str], bool]:
    """eslint's fixes on ``files`` (or the whole tree): the rules fixed in files the
    patch changes, the findings left, and whether prettier formatted the tree."""
    targets = files if scoped else ["."]
    formats = False
    if config.format is not False and uses_prettier(ws.base_tree):
        formats = installed(ws.env_dir, "prettier") and (
            config.format is True or await _passes_prettier(ws)
        )
    ws.progress("fix: eslint --fix")
    before = await _census(ws, targets)
    done = await ws.run(["eslint", "--fix", "--format", "json", *targets], name="eslint-fix",
                        output_bytes=TOOL_OUTPUT_BYTES, keep_stdout=False)  # fmt: skip
    if done.exit_code not in (0, 1) or done.timed_out:  # 1: problems left, 2: a crash
        raise JsLintError(f"`eslint --fix` failed: {done.stderr.strip()[-500:]}")
    after = await _census(ws, targets)
    if formats:
        ws.progress("fix: prettier --write")
        done = await ws.run(["prettier", "--write", "--log-level", "warn", *targets],
                            name="prettier")  # fmt: skip
        if not done.ok:
            raise JsLintError(f"`prettier --write` failed: {done.stderr.strip()[-500:]}")
    changed = set(await ws.changed_paths())
    fixed = Counter(rule for rule, path, _ in before - after if path in changed)
    left = Counter(rule for rule, _, _ in after.elements())
    return fixed, left, formats


async def _census(ws: FixContext, targets: list[str]) -> Counter[Finding]:
    done = await ws.run(
        ["eslint", "--format", "json", *targets],
        name="eslint",
        output_bytes=TOOL_OUTPUT_BYTES,
        keep_stdout=False,
    )
    if done.exit_code not in (0, 1) or done.stdout_truncated:
        why = done.stderr.strip()[-500:] or f"exit code {done.exit_code}"
        raise JsLintError(f"eslint could not check the repository: {why}")
    try:
        results = json.loads(done.stdout or "[]")
    except json.JSONDecodeError as exc:
        raise JsLintError(f"eslint's JSON does not parse: {exc}") from None
    prefix = WORKSPACE + "/"
    return Counter(
        (
            str(m.get("ruleId") or "parse-error"),
            str(r.get("filePath") or "").removeprefix(prefix),
            str(m.get("message") or ""),
        )
        for r in results
        if isinstance(r, dict)
        for m in r.get("messages") or []
        if isinstance(m, dict)
    )


async def _passes_prettier(ws: FixContext) -> bool:
    """Whether the tree as it is passes ``prettier --check`` (its files are formatted
    with it: formatting a tree prettier never ran on would rewrite it whole)."""
    return (await ws.run(["prettier", "--check", "."], name="prettier")).exit_code == 0
