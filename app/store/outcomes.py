"""What became of Patchwarden's jobs, per repository: pure functions over outcomes. No I/O."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.store.models import Outcome


def _median(values: Iterable[float]) -> float | None:
    seen = list(values)
    return statistics.median(seen) if seen else None


def reverted(outcomes: Sequence[Outcome]) -> list[Outcome]:
    """The jobs whose merge was reverted: a revert pull request that *merged* (one that
    was opened and then closed, or still waits, reverted nothing)."""
    merged_reverts = {
        (o.repo, o.pr_number)
        for o in outcomes
        if o.is_revert and o.merged_at is not None and o.pr_number is not None
    }
    return [
        o
        for o in outcomes
        if not o.is_revert
        and o.reverted_by_pr is not None
        and (o.repo, o.reverted_by_pr) in merged_reverts
    ]


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def summarise_outcomes(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """One row per repository, sorted by repository name: counts, and the KPIs as rates
    over the outcomes given (``audit --outcomes --since 30d``, the dashboard's 30 days).

    A *change* is a job that is not a revert: ``prs``, ``merged`` and the rates count
    changes, so a revert pull request that merged is not a merged change (it is in
    ``reverts_merged``). ``acceptance_rate``: merged changes per change PR opened (an
    open one is not accepted yet); ``revert_rate``: merged changes later reverted (the
    revert merged); ``median_seconds_to_recover``: from such a merge to its revert's.
    Medians of times are measured from the job's ``created_at``; each rate or median is
    ``None`` with nothing to count.
    """
    by_repo: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_repo[outcome.repo].append(outcome)
    rows = []
    for repo in sorted(by_repo):
        jobs = by_repo[repo]
        changes = [o for o in jobs if not o.is_revert]
        undone = reverted(jobs)
        merged = [o for o in changes if o.merged_at is not None]
        prs = sum(o.pr_number is not None for o in changes)
        reverts = {o.pr_number: o for o in jobs if o.is_revert and o.merged_at}
        cost = math.fsum(o.cost_usd for o in jobs)
        rows.append(
            {
                "repo": repo,
                "jobs": len(jobs),
                "prs": prs,
                "merged": len(merged),
                "auto_merged": sum(o.merged_how == "auto" for o in merged),
                "approved_merged": sum(o.merged_how == "approved" for o in merged),
                "reverted": len(undone),
                "reverts_merged": len(reverts),
                "rejected": sum(o.status == "rejected" for o in jobs),
                "acceptance_rate": _rate(len(merged), prs),
                "revert_rate": _rate(len(undone), len(merged)),
                "median_seconds_to_pr": _median(
                    o.pr_opened_at - o.created_at
                    for o in changes
                    if o.pr_number is not None and o.pr_opened_at is not None
                ),
                "median_seconds_to_merge": _median(
                    o.merged_at - o.created_at for o in merged if o.merged_at is not None
                ),
                "median_seconds_to_recover": _median(
                    (reverts[o.reverted_by_pr].merged_at or 0.0) - (o.merged_at or 0.0)
                    for o in undone
                    if o.reverted_by_pr in reverts
                ),
                "tokens": sum(o.tokens for o in jobs),
                "cost_usd": round(cost, 6),
                "cost_per_merge": round(cost / len(merged), 6) if merged else None,
            }
        )
    return rows


def format_duration(seconds: float | None) -> str:
    """``42s``, ``3m10s``, ``1h05m``; ``-`` for ``None``."""
    if seconds is None:
        return "-"
    total = max(0, round(seconds))
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m{total % 60:02d}s"
    return f"{total // 3600}h{total % 3600 // 60:02d}m"


_COLUMNS: tuple[tuple[str, str], ...] = (
    # (header, key); the first column is left-aligned, the others right-aligned
    ("repo", "repo"),
    ("jobs", "jobs"),
    ("PRs", "prs"),
    ("merged", "merged"),
    ("auto", "auto_merged"),
    ("approved", "approved_merged"),
    ("reverted", "reverted"),
    ("rejected", "rejected"),
    ("accepted", "acceptance_rate"),
    ("reverted %", "revert_rate"),
    ("to PR", "median_seconds_to_pr"),
    ("to merge", "median_seconds_to_merge"),
    ("to recover", "median_seconds_to_recover"),
    ("tokens", "tokens"),
    ("cost", "cost_usd"),
    ("per merge", "cost_per_merge"),
)


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key.startswith("median_seconds"):
        return format_duration(value)
    if key in ("cost_usd", "cost_per_merge"):
        return f"${value:.2f}"
    if key.endswith("_rate"):
        return f"{100 * value:.0f}%"
    if key == "tokens":
        return f"{value:,}"
    return str(value)


def format_outcomes(rows: Sequence[Mapping[str, Any]]) -> str:
    """``summarise_outcomes`` rows as a fixed-width table with a header (medians as ``to PR``
    and ``to merge``), one line per repository, no trailing newline."""
    table = [[header for header, _ in _COLUMNS]]
    table += [[_cell(key, row.get(key)) for _, key in _COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(_COLUMNS))]
    return "\n".join(
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in table
    )
