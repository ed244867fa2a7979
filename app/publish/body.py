"""The pull request body for a session's result, as markdown.

What a reviewer reads first: what changed and why, what was verified, and how to undo
it. The risk score and its reasons join this body with the policy engine
(docs/roadmap.md); until then the body says so rather than guess.
"""

from __future__ import annotations

from app.sessions.result import FindingsDelta, SessionResult, TestDelta, TestRun


def render_body(result: SessionResult, *, title: str) -> str:
    fix = result.fix
    lines = [f"## {title.strip() or 'Patchwarden patch'}", ""]
    if fix is not None and fix.summary:
        lines += [fix.summary, ""]
    lines += [
        f"**Verified:** {_tests(result.tests)}",
        f"**Findings on the changed files:** {_findings(result.findings)}",
        f"**Diff:** {_diff(result)}",
    ]
    if fix is not None:
        lines.append(f"**Fixer:** {_fixer(result)}")
    lines += [
        "**Risk score:** not computed yet (the policy engine is the next milestone).",
        "",
        "### Rollback",
        "- Before merging: close this pull request and "
        f"`git push origin --delete {result.branch}`.",
        "- After merging: `git revert -m 1 <merge sha>`.",
        "",
        "<details><summary>Steps</summary>",
        "",
        "| step | tree | exit | seconds |",
        "| --- | --- | --- | --- |",
    ]
    for step in result.steps:
        code = "timeout" if step.timed_out else ("cached" if step.cached else step.exit_code)
        lines.append(f"| {step.name} | {step.tree or ''} | {code} | {step.duration_seconds:.1f} |")
    lines += ["", "</details>", ""]
    if result.job_id is not None:
        lines.append(f"<!-- patchwarden:job={result.job_id} -->")
    return "\n".join(lines).rstrip() + "\n"


def _run(run: TestRun | None) -> str:
    if run is None:
        return "not run"
    if run.timed_out:
        return "timed out"
    if run.counts is None:
        return "passed" if run.ok else f"failed (exit code {run.exit_code})"
    c = run.counts
    return f"{c.passed} passed, {c.failed + c.errored} failed, {c.skipped} skipped"


def _tests(tests: TestDelta | None) -> str:
    if tests is None:
        return "no test command is known for this repository."
    text = f"tests on the patch: {_run(tests.head)} (before: {_run(tests.base)})"
    if tests.fixed:
        text += f"; fixed: {', '.join(f'`{t}`' for t in tests.fixed[:10])}"
    text += f"; broken: {', '.join(f'`{t}`' for t in tests.broken[:10]) or 'none'}"
    return text + "."


def _findings(deltas: list[FindingsDelta]) -> str:
    parts = []
    for d in deltas:
        if not d.ran:
            parts.append(f"{d.tool} not run")
        elif d.error:
            parts.append(f"{d.tool} failed ({d.error})")
        else:
            parts.append(f"{d.tool} {len(d.new)} new, {len(d.fixed)} fixed")
    return "; ".join(parts) + "." if parts else "no changed files to check."


def _diff(result: SessionResult) -> str:
    files = result.diff.files
    names = ", ".join(f"`{f.path}`" for f in files[:8]) + (" …" if len(files) > 8 else "")
    return f"{len(files)} file(s), +{result.diff.lines_added} -{result.diff.lines_removed}" + (
        f" ({names})" if names else ""
    )


def _fixer(result: SessionResult) -> str:
    fix = result.fix
    assert fix is not None
    text = fix.fixer
    u = fix.usage
    if u.calls:
        cost = f"${u.cost_usd:.4f}" if not u.unpriced else "cost unknown (no price configured)"
        text += f", {u.calls} model calls, {u.total_tokens:,} tokens, {cost}"
    if fix.rules_fixed:
        text += ", rules fixed: " + ", ".join(f"{r} ({n})" for r, n in fix.rules_fixed.items())
    if fix.culprit is not None:
        c = fix.culprit
        pr = f", PR #{c.pull_request}" if c.pull_request else ""
        text += f", culprit `{c.sha[:12]}` by {c.author}{pr}"
    return text
