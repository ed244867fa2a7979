"""Lifecycle rules, pure: when nothing may start, which merges the canary watches, and
a repository's record as earned autonomy reads it.

Beside :mod:`app.contract.kinds`: what the webhook handlers and the jobs both consult.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.policy.learn import Past
from app.store.models import Outcome, Pause, TrustEvent


def pause_reason(pause: Pause | None, *, globally: bool, repo: str, bot: str) -> str | None:
    """Why no new job may start (and nothing may merge) on ``repo`` now, or None."""
    if globally:
        return "Patchwarden is paused for every repository (PATCHWARDEN_PAUSED)"
    if pause is not None:
        return (
            f"Patchwarden is paused on {repo} (by @{pause.actor}); `@{bot} resume` starts it again"
        )
    return None


def watched_merges(outcomes: Sequence[Outcome], *, now: float) -> list[Outcome]:
    """Patchwarden's merges whose canary window (of the policy each was judged by) is
    still open at ``now``, newest first: the ones a failure on the default branch may be
    blamed on."""
    watching = [
        o
        for o in outcomes
        if o.merge_sha and o.merged_at is not None and now - o.merged_at <= 60 * o.canary_minutes
    ]
    return sorted(watching, key=lambda o: float(o.merged_at or 0), reverse=True)


def record_of(
    outcomes: Sequence[Outcome], events: Sequence[TrustEvent]
) -> tuple[tuple[Past, ...], tuple[tuple[str, float], ...]]:
    """A repository's outcomes and trust events as :mod:`app.policy.learn` reads them:
    each change of a known kind with its merge and the merge of its revert (a revert
    that never merged undid nothing; one made with GitHub's Revert button is a
    ``reverted`` event), each pull request closed unmerged (unless it was reopened and
    merged after all), and the last reset of each kind."""
    reverts = {
        o.pr_number: float(o.merged_at)
        for o in outcomes
        if o.is_revert and o.pr_number is not None and o.merged_at is not None
    }
    by_button = {e.pr_number: e.at for e in events if e.what == "reverted"}
    merged_prs = {o.pr_number for o in outcomes if o.merged_at is not None}
    past = []
    for o in outcomes:
        if o.category is None or o.merged_at is None:
            continue
        undone = reverts.get(o.reverted_by_pr) if o.reverted_by_pr is not None else None
        past.append(
            Past(
                kind=o.category,
                merged_at=o.merged_at,
                reverted_at=undone or by_button.get(o.pr_number),
            )
        )
    resets: dict[str, float] = {}
    for e in events:
        if e.what == "rejected" and e.pr_number not in merged_prs:
            past.append(Past(kind=e.category, rejected_at=e.at))
        elif e.what == "reset":
            resets[e.category] = max(e.at, resets.get(e.category, e.at))
    return tuple(past), tuple(sorted(resets.items()))
