"""Building blocks for the policy tests: git-shaped diffs, the default policy, results."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from app.fixers import registry
from app.policy.diff import parse_diff
from app.policy.evidence import FindingsDelta, Scope, TestCounts, TestDelta, TestRun
from app.policy.policy_model import Policy, load_policy
from app.policy.score_types import Verification
from app.sessions.policyfile import default_policy_text
from app.sessions.result import Diff, FileStat, FixOutcome, SandboxInfo, SessionResult


@lru_cache(maxsize=1)
def default_policy() -> Policy:
    return load_policy(default_policy_text())


def policy_with(repo_yaml: str) -> Policy:
    """The default policy with ``repo_yaml`` over it, read as a session reads it."""
    return load_policy(default_policy_text(), repo_yaml, fixers=registry.KNOWN)


def by(fixer: str, **kw: Any) -> Verification:
    """What a session learnt of a change ``fixer`` made: its record's category, model and
    reason (a name the registry does not have reads as a model's), and ``kw``."""
    record = registry.RECORDS.get(fixer)
    if record is not None:
        kw = {"category": record.category, "model": record.model, "about": record.reason, **kw}
    return Verification(fixer=fixer, **kw)


def gdiff(
    path: str,
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
    *,
    new: bool = False,
    deleted: bool = False,
    old_path: str | None = None,
    mode: tuple[str, str] | None = None,
    binary: bool = False,
) -> str:
    """One file's part of a ``git diff``, as git writes it."""
    src = old_path or path
    lines = [f"diff --git a/{src} b/{path}"]
    if new:
        lines.append("new file mode 100644")
    if deleted:
        lines.append("deleted file mode 100644")
    if mode:
        lines += [f"old mode {mode[0]}", f"new mode {mode[1]}"]
    if old_path:
        lines += ["similarity index 90%", f"rename from {old_path}", f"rename to {path}"]
    if binary:
        lines += ["index 1111111..2222222", f"Binary files a/{src} and b/{path} differ"]
        return "\n".join(lines) + "\n"
    if not add and not remove:
        return "\n".join(lines) + "\n"
    lines.append("--- /dev/null" if new else f"--- a/{src}")
    lines.append("+++ /dev/null" if deleted else f"+++ b/{path}")
    old_start = 0 if new else 1
    new_start = 0 if deleted else 1
    lines.append(f"@@ -{old_start},{len(remove)} +{new_start},{len(add)} @@")
    lines += [f"-{r}" for r in remove] + [f"+{a}" for a in add]
    return "\n".join(lines) + "\n"


def passed(n: int, *, failed: int = 0, code: int | None = None) -> TestRun:
    exit_code = code if code is not None else (1 if failed else 0)
    return TestRun(exit_code=exit_code, counts=TestCounts(passed=n, failed=failed))


def stats_of(unified: str) -> list[FileStat]:
    """What git's --numstat/--raw would say of ``unified`` (the session keeps both)."""
    return [
        FileStat(
            path=f.path,
            old_path=f.old_path,
            status=f.status,
            added=f.added,
            removed=f.removed,
            binary=f.binary,
        )
        for f in parse_diff(unified).files
    ]


def result_for(
    unified: str,
    *,
    fixer: str = "lint",
    summary: str = "",
    tests: TestDelta | None = None,
    findings: Sequence[FindingsDelta] = (),
    policy: Policy | None = None,
    job_id: int | None = 42,
    branch: str = "patchwarden/42-fix",
    scope: Scope | None = None,
) -> SessionResult:
    """A patched SessionResult, as a session would have saved it; a change a model
    wrote has its scope checked (``scope``, by default all of it inside)."""
    if tests is None:
        tests = TestDelta(
            command=["python", "-m", "pytest", "-q"],
            source="detected",
            base=passed(12),
            head=passed(12),
        )
    fix = registry.stamped(FixOutcome(fixer=fixer, summary=summary))
    return SessionResult(
        job_id=job_id,
        repo="octo-org/widgets",
        base_sha="a" * 40,
        branch=branch,
        head_sha="b" * 40,
        status="patched",
        sandbox=SandboxInfo(backend="bwrap", isolated=True),
        fix=fix,
        diff=Diff(unified=unified, files=stats_of(unified)),
        tests=tests,
        findings=list(findings) or [FindingsDelta(tool=t) for t in ("ruff", "semgrep", "bandit")],
        scope=scope if scope is not None or not fix.model else Scope(),
        policy=(policy or default_policy()).to_json(),
        started_at=1_800_000_000.0,
        finished_at=1_800_000_012.0,
    )
