"""Lifecycle rules, pure: when nothing may start, and which merges the canary watches.

Beside :mod:`app.jobs.kinds`, the part of ``app/jobs/`` the webhook handlers may use.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.store.models import Outcome, Pause


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
