"""The risk-scored PR body, for three representative results, checked for what a reviewer
reads (the score, the reasons, the rollback commands) and against golden files
(tests/golden/; regenerate with UPDATE_GOLDEN=1 after a deliberate change)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.policy.evidence import Bump, Finding, FindingsDelta, OutsidePlace, Scope, TestDelta
from app.policy.policy_model import Policy
from app.policy.score import score_session
from app.publish.body import labels_for, render_body
from app.sessions.result import SessionResult
from tests.policy_helpers import gdiff, passed, policy_with, result_for

GOLDEN = Path(__file__).parents[1] / "golden"
PY_CMD = ["python", "-m", "pytest", "-q"]


def docs_typo() -> SessionResult:
    return result_for(
        gdiff("docs/install.md", ["Run the installer."], ["Run teh installer."]),
        fixer="lint",
        summary="Fixed a typo: teh -> the.",
        policy=policy_with("autonomy: automerge\n"),
        branch="patchwarden/42-fix-typo",
    )


def source_fix() -> SessionResult:
    diff = gdiff("src/calc.py", ["    return a + b"], ["    return a - b"]) + gdiff(
        "tests/test_calc.py", ["def test_add_negative():", "    assert add(-1, -2) == -3"]
    )
    return result_for(
        diff,
        fixer="llm",
        summary="add() subtracted; it now adds. Added a test with negative numbers.\n"
        "@octocat <img src=x> should stay inert.",
        tests=TestDelta(
            command=PY_CMD,
            source="detected",
            base=passed(11, failed=1),
            head=passed(13),
            fixed=["tests/test_calc.py::test_add"],
            added=["tests/test_calc.py::test_add_negative"],
        ),
        findings=[
            FindingsDelta(tool="ruff", files=2),
            FindingsDelta(
                tool="semgrep",
                files=2,
                new=[
                    Finding(
                        tool="semgrep",
                        rule="patchwarden.python.weak-hash",
                        path="src/calc.py",
                        line=9,
                        message="md5 is weak",
                        severity="medium",
                    )
                ],
            ),
            FindingsDelta(tool="bandit", files=2),
        ],
        branch="patchwarden/43-fix-add",
        job_id=43,
        scope=Scope(implicated=["src/calc.py::add: the task names it"]),
    )


def workflow_edit() -> SessionResult:
    return result_for(
        gdiff(".github/workflows/ci.yml", ["      - run: pytest -x"], ["      - run: pytest"]),
        fixer="llm",
        summary="Made CI stop at the first failure.",
        branch="patchwarden/44-speed-up-ci",
        job_id=44,
    )


CASES = {"docs-typo": docs_typo, "source-fix": source_fix, "workflow": workflow_edit}


def body_of(result: SessionResult, **kw: str) -> tuple[str, list[str]]:
    assert result.policy is not None
    s = score_session(result, Policy.model_validate(result.policy))
    return render_body(result, s, title="t", **kw), labels_for(s)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_body_matches_its_golden_file(name: str) -> None:
    body, _ = body_of(CASES[name]())
    golden = GOLDEN / f"pr-body-{name}.md"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.write_text(body)
    assert body == golden.read_text()


def test_a_docs_typo_may_merge_itself() -> None:
    body, labels = body_of(docs_typo())
    first = body.splitlines()[0]
    assert first == (
        "**Patchwarden risk 4/100 (low): may merge itself once every check on it is green.**"
    )
    assert labels == ["patchwarden", "risk:low"]
    assert "| changes docs files (weight 0.2) | 1 file, +1 -1 | +1 |" in body
    assert "| mechanical autofixes: ruff, semgrep, eslint | lint | +3 |" in body
    assert "**Verified:** tests 12 passed → 12 passed (0 fixed, 0 broken)" in body
    assert "git push origin --delete patchwarden/42-fix-typo" in body
    assert "git revert -m 1 <merge sha>" in body
    assert "comment `@patchwarden revert`" in body
    assert body.rstrip().endswith("<!-- patchwarden:job=42 -->")


def test_a_source_fix_needs_review_and_says_why() -> None:
    body, labels = body_of(source_fix())
    top = body.split("<details>")[0]
    assert top.startswith("**Patchwarden risk 28/100 (medium): needs a maintainer's approval.**")
    assert labels == ["patchwarden", "risk:medium"]
    # The factors, largest first, each with its reason and points.
    assert top.index("written by a model") < top.index("changes source files")
    assert "| makes failing tests pass: `tests/test_calc.py::test_add` | 1 | -5 |" in top
    assert "| new semgrep findings on the changed files | 1 new (1 medium), 0 fixed | +10 |" in top
    assert "tests 11 passed, 1 failed → 13 passed (1 fixed, 0 broken)" in top
    assert "semgrep 1 new, 0 fixed" in top
    # The fixer's words are fenced: no mention, no HTML reaches GitHub's renderer.
    assert "```text\nadd() subtracted; it now adds." in body
    assert "@octocat <img src=x> should stay inert.\n```" in body
    assert "`patchwarden.python.weak-hash` at `src/calc.py:9`" in body
    assert "patchwarden audit --job 43" in body


def test_a_workflow_edit_is_rejected_with_the_reason() -> None:
    body, labels = body_of(workflow_edit())
    lines = body.splitlines()
    assert lines[0] == (
        "**Patchwarden risk 31/100 (high, by a rule below): rejected: Patchwarden will not open "
        "it as a pull "
        "request.**"
    )
    assert lines[2] == (
        "- **reject**: changes `.github/workflows/ci.yml`, protected by `.github/workflows/**` "
        "in the policy"
    )
    assert labels == ["patchwarden", "risk:high"]


def test_after_the_merge_the_body_names_the_merge_commit() -> None:
    body, _ = body_of(docs_typo(), merge_sha="c" * 40)
    assert f"git revert -m 1 {'c' * 40}" in body
    assert "<merge sha>" not in body
    assert "Merged as `cccccccccccc`." in body


def test_a_squash_or_rebase_merge_is_reverted_without_a_mainline() -> None:
    result = docs_typo()
    assert result.policy is not None
    s = score_session(result, Policy.model_validate(result.policy))
    before = render_body(result, s, title="t", merge_commit=False)
    assert "git revert <merge sha>" in before
    assert "-m 1" not in before
    after = render_body(result, s, title="t", merge_commit=False, merge_sha="d" * 40)
    assert f"git revert {'d' * 40}" in after
    assert "-m 1" not in after


def test_links_sit_under_the_verdict() -> None:
    result = docs_typo()
    assert result.policy is not None
    s = score_session(result, Policy.model_validate(result.policy))
    body = render_body(result, s, title="t", links=["Fixes #12", "Reverts #3 (merged as abc)"])
    lines = body.splitlines()
    assert lines.index("Fixes #12") < next(i for i, ln in enumerate(lines) if "**Verified:**" in ln)
    assert "Reverts #3 (merged as abc)" in lines


def test_a_security_update_s_advisory_leads_and_stays_inert() -> None:
    """The advisory's fields come from a webhook: a GHSA id is linked only when it has
    GHSA's shape, and no field becomes a link or markup of its own."""
    result = result_for(gdiff("requirements.txt", ["x==2"], ["x==1"]), fixer="dependency")
    assert result.fix is not None
    hostile = Bump(
        package="x](https://evil.example)",
        old="1",
        new="2",
        size="major",
        advisory="GHSA-evil](https://evil.example)",
        cve="<img src=x>",
        severity="critical",
        vulnerable_range="< 2",
        files=["requirements.txt"],
        summary="click [here](https://evil.example)",
    )
    fix = result.fix.model_copy(update={"bump": hostile})
    body, _ = body_of(result.model_copy(update={"fix": fix}))
    first = body.splitlines()[0]
    assert first.startswith("**Security update:** `x](https://evil.example)` `1` → `2`")
    assert "](https://github.com/advisories/" not in body  # not a GHSA id: not linked
    assert "<img" not in first.replace("`<img src=x>`", "")
    assert "```text\nclick [here](https://evil.example)\n```" in body  # fenced
    good = fix.model_copy(update={"bump": hostile.model_copy(update={"advisory": GHSA})})
    linked, _ = body_of(result.model_copy(update={"fix": good}))
    assert f"[{GHSA}](https://github.com/advisories/{GHSA})" in linked.splitlines()[0]


GHSA = "GHSA-9wx4-h78v-vm56"


def test_a_regenerated_lock_says_how_and_what_moved() -> None:
    result = result_for(
        gdiff("uv.lock", ['version = "3.7"'], ['version = "3.6"']), fixer="dependency"
    )
    assert result.fix is not None
    bump = Bump(
        package="idna",
        old="3.6",
        new="3.7",
        size="minor",
        advisory=GHSA,
        files=["uv.lock"],
        locks=["uv.lock"],
        lock_commands=["uv lock --upgrade-package idna==3.7"],
        locked=["`uv.lock`: idna 3.6 → 3.7", "`uv.lock`: + x](https://evil.example) 1.0"],
    )
    body, _ = body_of(
        result.model_copy(update={"fix": result.fix.model_copy(update={"bump": bump})})
    )
    [line] = [ln for ln in body.splitlines() if ln.startswith("Lock regenerated")]
    assert line == (
        "Lock regenerated by its own tool in the setup phase (`uv lock --upgrade-package "
        "idna==3.7`); it moved `idna 3.6 → 3.7`, `+ x](https://evil.example) 1.0`, and no "
        "other entry."
    )


def test_the_places_outside_the_scope_are_listed_first_and_inert() -> None:
    result = result_for(
        gdiff("src/calc.py", ["    return a + b"], ["    return a - b"])
        + gdiff("src/keys.py", ["KEY = ''.join(PARTS)"], new=True),
        fixer="llm",
        scope=Scope(
            outside=[
                OutsidePlace(path="src/keys.py", what="a new Python module"),
                OutsidePlace(path="src/calc.py", line=30, what="module-level code", removed=True),
                OutsidePlace(path="src/`x`<img>.py", line=3, what="a new function `f`"),
            ]
        ),
        policy=policy_with("autonomy: automerge\n"),
    )
    body, _ = body_of(result)
    top = body.split("**Verified:**")[0]
    assert "**Outside the task's scope:**" in top
    assert "- `src/keys.py`: a new Python module" in top
    assert "- `src/calc.py:30`: removes module-level code" in top
    assert "- ``src/`x`<img>.py:3``: a new function `f`" in top
    # Held for a person: the rule names the places, the decision is review.
    assert "- **review**: a model's change outside the task's scope" in top
    assert "may merge itself" not in top.splitlines()[0]
