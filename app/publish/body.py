"""The pull request body and labels for a scored session, as GitHub markdown.

Rendered from ``templates/pr_body.md.j2``. The top says, in ten seconds, the score and
the decision and why, what was verified and how to undo it; the details (the fixer's
summary, per-file stats, checks, cost, the audit job) sit in ``<details>`` blocks.
Text that comes from the repository or a fixer (paths, summaries, test names) is kept
inert: escaped in tables and inline, fenced in code blocks elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import jinja2

from app.policy.evidence import Bump, FindingsDelta, TestDelta, TestRun
from app.policy.policy_model import Decision
from app.policy.score import Score
from app.sessions.result import SessionResult
from app.words import plural

MAX_FILES = 30
_VERDICT: dict[Decision, str] = {
    "automerge": "may merge itself once every check on it is green",
    "review": "needs a maintainer's approval",
    "draft": "opened as a draft: it needs a person's work before it can merge",
    "reject": "rejected: Patchwarden will not open it as a pull request",
}


def _inline(text: object) -> str:
    """Markdown-inert single-line text: HTML and table pipes escaped, newlines joined."""
    value = " ".join(str(text).split())
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = value.replace("@", "@\u2060")  # no @mentions from repository text
    return value


inline = _inline  # for Patchwarden's comments that quote the same kind of text


def _cell(text: object) -> str:
    return _inline(text).replace("|", "\\|")


def inert(text: str) -> str:
    """Untrusted text on one line of a bot-written issue: :func:`inline` (HTML escaped,
    no @mention pings) and no Markdown link or image a stranger could plant."""
    out = _inline(text)
    for char in "[]()!":
        out = out.replace(char, "\\" + char)
    return out


def _code(text: object) -> str:
    """``text`` as inline code, with a backtick fence longer than any run inside it."""
    value = " ".join(str(text).split())
    ticks = max((len(m) for m in re.findall(r"`+", value)), default=0) + 1
    fence = "`" * ticks
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}".replace("|", "\\|")


def _fenced(text: object) -> str:
    value = str(text).rstrip() or "(no summary)"
    ticks = max(3, max((len(m) for m in re.findall(r"`{3,}", value)), default=0) + 1)
    return f"{'`' * ticks}text\n{value}\n{'`' * ticks}"


def _points(value: float) -> str:
    return f"{value:+.1f}".removesuffix(".0")


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("app.publish", "templates"),
        autoescape=False,  # markdown, not HTML: the filters above do the escaping  # noqa: S701
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        inline=_inline, cell=_cell, code=_code, fenced=_fenced, points=_points, plural=plural
    )
    return env


def labels_for(score: Score) -> list[str]:
    """``patchwarden`` and the change's risk level."""
    return ["patchwarden", f"risk:{score.risk}"]


# A person's change: Patchwarden merges none of them, so the words say what it means.
_PERSON_VERDICT: dict[Decision, str] = {
    "automerge": "within the line under which Patchwarden merges its own changes",
    "review": "worth a maintainer's review",
    "draft": "risky: a careful review before it merges",
    "reject": "over what the policy allows (a hard rule or the draft threshold)",
}
_RISK_OF: dict[Decision, str] = {"automerge": "low", "review": "medium"}


def verdict(score: Score, *, person: bool = False) -> str:
    """One line: the number, the risk word (and, where a rule and not the number set it,
    that it did: "0/100 (high)" read as a contradiction), and what happens."""
    band = _RISK_OF.get(score.by_score, "high")
    risk = score.risk if score.risk == band else f"{score.risk}, by a rule below"
    what = (_PERSON_VERDICT if person else _VERDICT)[score.decision]
    return f"Patchwarden risk {score.score}/100 ({risk}): {what}."


def _score_context(score: Score, *, person: bool = False) -> dict[str, object]:
    t = score.thresholds
    merge = "Patchwarden's own may merge" if person else "may merge itself"
    return {
        "score": score,
        "verdict": verdict(score, person=person),
        "factors": sorted(score.contributions, key=lambda c: (-abs(c.points), c.factor)),
        "thresholds": f"≤{t.automerge} {merge}, ≤{t.review} review, ≤{t.draft} draft",
    }


def render_score(score: Score, *, person: bool = False) -> str:
    """The verdict, the deciding rules and the factor table (``patchwarden score``;
    ``person``: of a person's change, which Patchwarden never merges)."""
    context = _score_context(score, person=person)
    return _tidy(_env().get_template("score.md.j2").render(**context))


def revert_command(merge_sha: str | None, *, merge_commit: bool = True) -> str:
    if merge_sha is None:
        mainline = "-m 1 " if merge_commit else ""
        return f"git revert {mainline}<merge sha>  # filled in here when the pull request merges"
    return f"git revert -m 1 {merge_sha}" if merge_commit else f"git revert {merge_sha}"


def render_body(
    result: SessionResult,
    score: Score,
    *,
    title: str,
    bot: str = "patchwarden",
    merge_sha: str | None = None,
    merge_commit: bool = True,
    links: Sequence[str] = (),
) -> str:
    """The PR body; after the merge, render again with ``merge_sha`` to fill in the revert.

    ``links`` are lines of Patchwarden's own (``Fixes #12``, ``Reverts #15``), shown under
    the verdict; GitHub closes an issue named after a closing keyword when this merges."""
    fix = result.fix
    revert = revert_command(merge_sha, merge_commit=merge_commit)
    if merge_sha is None:
        before = f"before the merge, close this and `git push origin --delete {result.branch}`."
        mainline = "-m 1 " if merge_commit else ""
        after = f"After it, `git revert {mainline}<merge sha>` (filled in when it merges)."
    else:
        before = "Merged as " + _code(merge_sha[:12]) + "."
        after = f"Undo with `{revert}` and push that as a pull request."
    context = {
        **_score_context(score),
        "title": title,
        "bot": bot,
        "verified": _verified(result),
        "rollback_before": before[:1].upper() + before[1:],
        "rollback_after": after,
        "revert_command": revert,
        "fixer": fix.fixer if fix is not None else "none",
        "summary": (fix.summary if fix is not None else "") or title,
        "files": result.diff.files,
        "max_files": MAX_FILES,
        "checks": _checks(result),
        "cost": _cost(result),
        "sandbox": _sandbox(result),
        "base_sha": result.base_sha[:12],
        "head_sha": (result.head_sha or "none")[:12],
        "branch": result.branch,
        "job_id": result.job_id,
        "links": list(links),
        "outside": _outside(result),
        "max_outside": MAX_FILES,
        "advisory": _advisory(fix.bump if fix is not None else None),
        "advisory_summary": fix.bump.summary if fix is not None and fix.bump else "",
    }
    return _tidy(_env().get_template("pr_body.md.j2").render(**context))


_GHSA = re.compile(r"GHSA(?:-[23456789cfghjmpqrvwx]{4}){3}")


def _advisory(bump: Bump | None) -> list[str]:
    """The security update a dependency fix makes, first in the body: the package, the
    versions, the advisory and the alert (links only where they are what they claim)."""
    if bump is None:
        return []
    ghsa = bump.advisory if _GHSA.fullmatch(bump.advisory) else None
    named = f"[{ghsa}](https://github.com/advisories/{ghsa})" if ghsa else _code(bump.advisory)
    cve = f" ({_code(bump.cve)})" if bump.cve else ""
    severity = f", severity **{_inline(bump.severity)}**" if bump.severity else ""
    was = f" {_code(bump.old)} →" if bump.old else ""
    lines = [
        f"**Security update:** {_code(bump.package)}{was} {_code(bump.new)} (a {bump.size} "
        f"bump) for {named}{cve}{severity}. Vulnerable: {_code(bump.vulnerable_range)}; "
        f"fixed in {_code(bump.new)}."
    ]
    files = ", ".join(_code(f) for f in bump.files)
    if bump.locks:
        how = "; ".join(_code(c) for c in bump.lock_commands)
        moved = [line.split(": ", 1)[-1] for line in bump.locked]
        shown = ", ".join(_code(m) for m in moved[:10]) + (" …" if len(moved) > 10 else "")
        lines.append(
            f"Lock regenerated by its own tool in the setup phase ({how}); it moved "
            f"{shown or 'nothing'}, and no other entry."
        )
    if bump.setup:
        got = [*bump.upgraded, *(f"{i} (new)" for i in bump.installed)]
        shown = ", ".join(_code(g) for g in got[:10]) + (" …" if len(got) > 10 else "")
        lines.append(
            f"Raised in {files}; the patch's own setup installed {shown or 'nothing new'}, "
            "and the tests below ran with it."
        )
    else:
        lines.append(
            f"Raised in {files}. The project has no setup phase here, so the tests below "
            "ran without installing the new version."
        )
    return lines


def _tidy(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def _run(run: TestRun | None) -> str:
    if run is None:
        return "not run"
    if run.timed_out:
        return "timed out"
    if run.counts is None:
        return "passed" if run.ok else f"failed (exit code {run.exit_code})"
    c = run.counts
    text = f"{c.passed} passed"
    if c.failed + c.errored:
        text += f", {c.failed + c.errored} failed"
    if c.skipped:
        text += f", {c.skipped} skipped"
    return text


def _tests(tests: TestDelta | None) -> str:
    if tests is None:
        return "no test command is known (set `test:` in .github/patchwarden.yml)"
    text = f"tests {_run(tests.base)} → {_run(tests.head)}"
    text += f" ({len(tests.fixed)} fixed, {len(tests.broken)} broken"
    if tests.only_already_failing:
        text += f", {len(tests.already_failing)} already failing on the base"
    text += ")"
    if tests.reproduced:
        n = len(tests.reproduced)
        text += f"; {n} new test{'s' if n > 1 else ''} reproduce{'' if n > 1 else 's'} the problem"
    return text


def _outside(result: SessionResult) -> list[tuple[str, str]]:
    """Each place outside the change's scope: (where, what), the removals said so."""
    places = result.scope.outside if result.scope is not None else []
    return [
        (f"{p.path}:{p.line}" if p.line else p.path, ("removes " if p.removed else "") + p.what)
        for p in places
    ]


def _tool(delta: FindingsDelta) -> str:
    if not delta.ran or delta.error:
        return f"{delta.tool} did not run"
    return f"{delta.tool} {len(delta.new)} new, {len(delta.fixed)} fixed"


def _verified(result: SessionResult) -> str:
    """The tests, then each tool that had something of the change to check (ruff and
    bandit on a change with no Python file, eslint on one with no JavaScript: not said)."""
    shown = [d for d in result.findings if d.ran or d.error or d.files]
    parts = [_tests(result.tests), *(_tool(d) for d in shown)]
    return " · ".join(parts) + "."


def _checks(result: SessionResult) -> list[str]:
    lines = []
    tests = result.tests
    if tests is not None:
        lines.append(f"Test command: {_code(' '.join(tests.command))} ({tests.source})")
        already = tests.already_failing if tests.only_already_failing else []
        for label, names in (
            ("Fixed", tests.fixed),
            ("Broken", tests.broken),
            ("Already failing on the base (and still, not because of this change)", already),
        ):
            if names:
                lines.append(f"{label}: " + ", ".join(_code(n) for n in names[:10]))
        if tests.reproduced:
            lines.append(
                "Reproduced by "
                + ", ".join(_code(n) for n in tests.reproduced[:10])
                + ": fails on the base, passes on the patch (the patch's test run against "
                "the base code)"
            )
    for delta in result.findings:
        if delta.error:
            lines.append(f"{delta.tool}: {_inline(delta.error)}")
        for f in delta.new[:10]:
            lines.append(
                f"New {delta.tool} {f.severity}: {_code(f.rule)} at "
                f"{_code(f'{f.path}:{f.line}')}: {_inline(f.message)}"
            )
    lines += _contained(result)
    for step in result.steps:
        if step.timed_out or (step.exit_code not in (0, None) and step.phase == "setup"):
            lines.append(f"Step {_code(step.name)} ended with {step.killed_by or step.exit_code}")
    return lines or ["No check reported anything beyond the line above."]


def _contained(result: SessionResult) -> list[str]:
    """What the scope check implicated and what importing the changed modules showed."""
    lines = []
    scope = result.scope
    if scope is not None:
        shown = ", ".join(_code(i.split(": ", 1)[0]) for i in scope.implicated[:10])
        lines.append(f"Scope: the task implicates {shown or 'no function'}"
                     + (f" ({_inline(scope.note)})" if scope.note else ""))  # fmt: skip
    modules = result.modules
    if modules is not None:
        failed = [f"{_code(p)} ({_inline(why)})" for p, why in list(modules.failed.items())[:5]]
        said = f"; did not import: {', '.join(failed)}" if failed else ""
        lines.append(
            f"Module values: imported {plural(len(modules.imported), 'changed module')} in the "
            f"sandbox and scanned what they compute for credentials ({modules.found} found)" + said
        )
    return lines


def _cost(result: SessionResult) -> str:
    fix = result.fix
    wall = f"{result.usage.wall_seconds:.0f} s in the sandbox session"
    if fix is None or not fix.usage.calls:
        return f"no model calls; {wall}"
    u = fix.usage
    money = f"${u.cost_usd:.4f}" if not u.unpriced else "unknown (no price configured)"
    return f"{u.calls} model calls, {u.total_tokens:,} tokens, {money}; {wall}"


def _sandbox(result: SessionResult) -> str:
    s = result.sandbox
    isolation = "isolated" if s.isolated else "NOT isolated"
    return f"{s.backend}, {isolation}, network {'on' if s.network else 'off'}"
