"""Whether a Patchwarden pull request merges now: a pure function over what GitHub says.

The merge job reads the pull request, its reviews, the check runs and statuses on its
head, and the job's recorded decision, then asks :func:`decide`. The order of the
questions is the order of their importance: a paused repository, a head Patchwarden
did not score, or a rejected change never merge, whatever the approvals say.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from app.github.repos import WRITE_ROLES
from app.policy.policy_model import Decision

GREEN = frozenset({"success", "neutral", "skipped"})

Action = Literal["merge", "wait", "refuse", "done", "update"]
CheckState = Literal["pending", "passed", "failed"]
_STATUS: dict[str, CheckState] = {"success": "passed", "pending": "pending"}


@dataclass(frozen=True)
class Check:
    name: str
    state: CheckState


@dataclass(frozen=True)
class Facts:
    """What decides a merge, read from GitHub and the job's record."""

    decision: Decision  # the policy's decision for the scored head
    state: str  # the pull request: "open" | "closed"
    merged: bool
    draft: bool
    head_sha: str  # the pull request's head now
    scored_sha: str  # the head Patchwarden scored and pushed
    base_moved: bool  # the base branch has commits the session did not see
    checks: tuple[Check, ...]  # everyone's but Patchwarden's own
    approvers: frozenset[str]  # writers who approved the current head (review or ship it)
    requested_by: str | None  # who asked for the fix
    two_person: bool
    paused: str | None = None  # why no merge may happen now, when paused
    bot: str = "patchwarden"  # the App's name in commands
    refused_before: str | None = None  # GitHub refused to merge this very head: why
    person_asked: bool = False  # this evaluation comes from an approval or `ship it`


@dataclass(frozen=True)
class Verdict:
    action: Action
    reason: str
    how: Literal["auto", "approved"] | None = None


def what_to_change(refusal: str) -> str:
    """For a merge GitHub refused: the setting that would let it through, if one would
    (a branch that requires signed commits refuses what git pushed); a sentence with no
    final stop, or ""."""
    said = refusal.lower()
    if (
        "must have verified signatures" in said
        or "must have valid signatures" in said
        or ("requires signed commits" in said)
    ):
        return (
            "This branch requires signed commits. In `.github/patchwarden.yml`, "
            "`merge.method: squash` lands one commit that GitHub signs, and "
            "`commit_signing: api` has GitHub make and sign each of Patchwarden's commits, "
            "so a merge commit passes too; a rebase merge cannot be signed "
            "(docs/policy.md#signed-commits)"
        )
    return ""


def checks_of(
    runs: Sequence[dict[str, Any]], statuses: Sequence[dict[str, Any]], *, bot_slug: str
) -> tuple[Check, ...]:
    """Check runs (the latest per app and name: a re-run replaces its run, another CI's
    check of the same name does not) and statuses, Patchwarden's own left out."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        slug = str((run.get("app") or {}).get("slug"))
        if slug == bot_slug:
            continue
        key = (slug, str(run.get("name")))
        if key not in latest or int(run.get("id") or 0) > int(latest[key].get("id") or 0):
            latest[key] = run
    found = []
    for (_, name), run in sorted(latest.items()):
        if run.get("status") != "completed":
            found.append(Check(name, "pending"))
        else:
            found.append(Check(name, "passed" if run.get("conclusion") in GREEN else "failed"))
    for status in statuses:
        state = status.get("state")
        context = str(status.get("context"))
        found.append(Check(context, _STATUS.get(str(state), "failed")))
    return tuple(found)


def approvers_of(
    reviews: Sequence[dict[str, Any]], *, head_sha: str, roles: dict[str, str | None]
) -> frozenset[str]:
    """Writers whose latest review approves ``head_sha`` (a later change request undoes it)."""
    latest: dict[str, dict[str, Any]] = {}
    for review in reviews:
        login = (review.get("user") or {}).get("login")
        if login and review.get("state") in {"APPROVED", "CHANGES_REQUESTED", "DISMISSED"}:
            latest[login] = review
    return frozenset(
        login
        for login, review in latest.items()
        if review.get("state") == "APPROVED"
        and review.get("commit_id") == head_sha
        and roles.get(login) in WRITE_ROLES
    )


def _names(checks: Collection[Check], state: str) -> str:
    names = sorted(c.name for c in checks if c.state == state)
    shown = ", ".join(f"`{n}`" for n in names[:5])
    return shown + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def decide(f: Facts) -> Verdict:
    if f.merged:
        return Verdict("done", "already merged")
    if f.state != "open":
        return Verdict("done", "the pull request is closed")
    if f.paused:
        return Verdict("refuse", f.paused)
    if f.head_sha != f.scored_sha:
        return Verdict(
            "refuse",
            f"the head moved to {f.head_sha[:12]}, which Patchwarden did not score "
            f"(it scored {f.scored_sha[:12]}); merge it yourself after reviewing the new "
            "commits, or ask for a new fix",
        )
    if f.decision == "reject":
        return Verdict("refuse", "the policy rejected this change")
    others = f.approvers - {f.requested_by} if f.two_person else f.approvers
    how: Literal["auto", "approved"] | None = None
    if others:
        how = "approved"
    elif f.decision == "automerge":
        how = "auto"
    elif f.approvers:
        return Verdict(
            "wait",
            f"@{f.requested_by} asked for this fix, so a second writer has to approve it "
            "(merge.two_person)",
        )
    else:
        return Verdict(
            "wait",
            f"waiting for a writer's approval: a review approval, or a comment `@{f.bot} ship it`",
        )
    if f.draft:
        return Verdict("wait", "it is a draft: mark it ready for review first")
    if any(c.state == "failed" for c in f.checks):
        return Verdict("wait", f"checks failed: {_names(f.checks, 'failed')}")
    if any(c.state == "pending" for c in f.checks):
        return Verdict("wait", f"waiting for checks: {_names(f.checks, 'pending')}")
    if not f.checks and how == "auto":
        return Verdict(
            "wait",
            "no checks ran on the head commit: a repository with no checks is never "
            f"merged automatically. A writer can approve it or comment `@{f.bot} ship it`",
        )
    if f.base_moved:
        return Verdict("update", "the base branch moved since the session", how)
    if f.refused_before and not f.person_asked:
        return Verdict(
            "wait",
            f"GitHub refused to merge this head before ({f.refused_before}); not retried "
            f"until a writer approves it or comments `@{f.bot} ship it`"
            + (f". {hint}" if (hint := what_to_change(f.refused_before)) else ""),
        )
    return Verdict("merge", "every check passed" if f.checks else "approved", how)
