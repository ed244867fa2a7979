"""The counts ``GET /metrics`` reads at each scrape: one pass of GROUP BYs over the
queue, the outcomes and the model spend, the same SQL on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from app.store.database import DB, Database
from app.store.models import MetricsSnapshot, ModelSpend

_DELIVERIES = "SELECT source, event, COUNT(*) FROM deliveries GROUP BY source, event"
_JOBS = "SELECT kind, state, COUNT(*) FROM jobs GROUP BY kind, state"
# due jobs only: one that waits for its time (a retry's backoff, the dashboard's
# window) is not a backlog
_WAITING = (
    "SELECT queue, COUNT(*), MIN(run_after) FROM jobs"
    " WHERE state = 'queued' AND run_after <= ? GROUP BY queue"
)
_DECISIONS = "SELECT decision, COUNT(*) FROM outcomes WHERE decision IS NOT NULL GROUP BY decision"
# changes, as the outcome report counts them: a revert is no change
_MERGES = (
    "SELECT merged_how, COUNT(*) FROM outcomes WHERE merged_at IS NOT NULL"
    " AND kind != 'revert' GROUP BY merged_how"
)
# as app.store.outcomes.reverted counts them: a revert that merged
_REVERTS = (
    "SELECT COUNT(*) FROM outcomes o WHERE o.kind != 'revert'"
    " AND o.reverted_by_pr IS NOT NULL AND EXISTS (SELECT 1 FROM outcomes r"
    " WHERE r.kind = 'revert' AND r.repo = o.repo AND r.pr_number = o.reverted_by_pr"
    " AND r.merged_at IS NOT NULL)"
)
_SPEND = (
    "SELECT COALESCE(SUM(calls), 0), COALESCE(SUM(prompt_tokens), 0),"
    " COALESCE(SUM(completion_tokens), 0), COALESCE(SUM(cost_usd), 0) FROM model_usage"
)


def _grouped(db: DB, sql: str, params: Sequence[Any] = ()) -> dict[Any, int]:
    """A GROUP BY's counts by its key: one column, or a tuple of several."""
    out: dict[Any, int] = {}
    for row in db.execute(sql, params).fetchall():
        *key, count = tuple(row)
        out[key[0] if len(key) == 1 else tuple(key)] = int(count)
    return out


def _snapshot(db: DB, at: float) -> MetricsSnapshot:
    queued, oldest = {}, {}
    for queue, count, first in db.execute(_WAITING, (at,)).fetchall():
        queued[queue] = int(count)
        oldest[queue] = max(at - float(first), 0.0) if first is not None else 0.0
    spend = db.execute(_SPEND).fetchone()
    return MetricsSnapshot(
        deliveries=_grouped(db, _DELIVERIES),
        jobs=_grouped(db, _JOBS),
        queued=queued,
        oldest_waiting=oldest,
        decisions=_grouped(db, _DECISIONS),
        merges=_grouped(db, _MERGES),
        reverts=int(db.execute(_REVERTS).fetchone()[0]),
        model=ModelSpend(
            calls=int(spend[0]),
            prompt_tokens=int(spend[1]),
            completion_tokens=int(spend[2]),
            cost_usd=float(spend[3]),
        ),
    )


async def read_metrics(database: Database, *, now: float | None = None) -> MetricsSnapshot:
    # the time read on the store's thread, as the counts are: a call that waited for a
    # free thread does not age the backlog it reports
    return await database.run(lambda: _snapshot(database.db, time.time() if now is None else now))
