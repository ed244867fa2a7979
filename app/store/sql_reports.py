"""What the store reports beyond the queue: each repository's dashboard issue, and the
counts ``GET /metrics`` reads at each scrape (one pass of GROUP BYs, the same SQL on
SQLite and PostgreSQL)."""

from __future__ import annotations

import time

from app.store.models import MetricsSnapshot, ModelSpend
from app.store.sql_base import DB
from app.store.sql_jobs import SQLJobs


class SQLReports(SQLJobs):
    # -- the dashboard issue ----------------------------------------------------
    async def dashboard_issue(self, repo: str) -> tuple[int | None, str | None]:
        def q() -> tuple[int | None, str | None]:
            row = self._db.execute(
                "SELECT issue_number, body_sha FROM dashboards WHERE repo = ?", (repo,)
            ).fetchone()
            return (int(row[0]), row[1]) if row else (None, None)

        return await self._run(q)

    async def set_dashboard_issue(self, repo: str, issue_number: int, body_sha: str) -> None:
        def tx(db: DB) -> None:
            db.execute(
                "INSERT INTO dashboards (repo, issue_number, body_sha, updated_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (repo) DO UPDATE SET"
                " issue_number = excluded.issue_number, body_sha = excluded.body_sha,"
                " updated_at = excluded.updated_at",
                (repo, issue_number, body_sha, time.time()),
            )

        await self._run(self._write(tx))

    # -- metrics ---------------------------------------------------------------
    async def metrics(self, *, now: float | None = None) -> MetricsSnapshot:
        def q() -> MetricsSnapshot:
            at = time.time() if now is None else now
            db = self._db
            deliveries = {
                (r[0], r[1]): int(r[2])
                for r in db.execute(
                    "SELECT source, event, COUNT(*) FROM deliveries GROUP BY source, event"
                ).fetchall()
            }
            jobs = {
                (r[0], r[1]): int(r[2])
                for r in db.execute(
                    "SELECT kind, state, COUNT(*) FROM jobs GROUP BY kind, state"
                ).fetchall()
            }
            queued, oldest = {}, {}
            for r in db.execute(
                # due jobs only: one that waits for its time (a retry's backoff, the
                # dashboard's window) is not a backlog
                "SELECT queue, COUNT(*), MIN(run_after) FROM jobs"
                " WHERE state = 'queued' AND run_after <= ? GROUP BY queue",
                (at,),
            ).fetchall():
                queued[r[0]] = int(r[1])
                oldest[r[0]] = max(at - float(r[2]), 0.0) if r[2] is not None else 0.0
            decisions = {
                r[0]: int(r[1])
                for r in db.execute(
                    "SELECT decision, COUNT(*) FROM outcomes WHERE decision IS NOT NULL"
                    " GROUP BY decision"
                ).fetchall()
            }
            merges = {
                r[0]: int(r[1])
                for r in db.execute(
                    # changes, as the outcome report counts them: a revert is no change
                    "SELECT merged_how, COUNT(*) FROM outcomes WHERE merged_at IS NOT NULL"
                    " AND kind != 'revert' GROUP BY merged_how"
                ).fetchall()
            }
            reverts = db.execute(
                # as app.store.outcomes.reverted counts them: a revert that merged
                "SELECT COUNT(*) FROM outcomes o WHERE o.kind != 'revert'"
                " AND o.reverted_by_pr IS NOT NULL AND EXISTS (SELECT 1 FROM outcomes r"
                " WHERE r.kind = 'revert' AND r.repo = o.repo AND r.pr_number = o.reverted_by_pr"
                " AND r.merged_at IS NOT NULL)"
            ).fetchone()
            spend = db.execute(
                "SELECT COALESCE(SUM(calls), 0), COALESCE(SUM(prompt_tokens), 0),"
                " COALESCE(SUM(completion_tokens), 0), COALESCE(SUM(cost_usd), 0)"
                " FROM model_usage"
            ).fetchone()
            return MetricsSnapshot(
                deliveries=deliveries,
                jobs=jobs,
                queued=queued,
                oldest_waiting=oldest,
                decisions=decisions,
                merges=merges,
                reverts=int(reverts[0]),
                model=ModelSpend(
                    calls=int(spend[0]),
                    prompt_tokens=int(spend[1]),
                    completion_tokens=int(spend[2]),
                    cost_usd=float(spend[3]),
                ),
            )

        return await self._run(q)
