"""The SQL store, the same for SQLite and PostgreSQL: audit, installations, model
spend, answers given once, outcomes and pauses, on top of the job queue.

All database work runs on one dedicated thread per store so the event loop never
blocks on disk or the network, and writes from this process are serialised. Other
processes (a separate ``patchwarden worker``, another ``serve`` behind a load
balancer) coordinate through the database's own locking (:mod:`app.store.sql_jobs`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from typing import Any

from app.store.models import (
    AuditEntry,
    AuditQuery,
    ModelSpend,
    Outcome,
    Pause,
)
from app.store.sql_base import (
    _OUTCOME_COLUMNS,
    _OUTCOME_FIELDS,
    _OUTCOME_JSON,
    DB,
    _outcome,
    _pause,
)
from app.store.sql_watch import SQLWatch


def _like_prefix(prefix: str | None) -> str | None:
    """``prefix`` as a LIKE pattern that matches it literally at the start."""
    if prefix is None:
        return None
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


class SQLStore(SQLWatch):
    """Deliveries and jobs (:class:`~app.store.sql_jobs.SQLJobs`), the dashboard issues
    and the metrics (:class:`~app.store.sql_reports.SQLReports`), earned autonomy's
    records (:class:`~app.store.sql_learn.SQLLearn`), the watch's
    (:class:`~app.store.sql_watch.SQLWatch`), and the rest:
    audit, installations, model spend, answers given once, outcomes, pauses.
    :class:`~app.store.sqlite.SQLiteStore` and
    :class:`~app.store.postgres.PostgresStore` give it a connection."""

    # -- audit --------------------------------------------------------------
    async def audit(
        self,
        action: str,
        *,
        actor: str | None = None,
        repo: str | None = None,
        job_id: int | None = None,
        delivery_id: str | None = None,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        def tx(db: DB) -> None:
            self._audit_row(
                db,
                action,
                actor=actor,
                repo=repo,
                job_id=job_id,
                delivery_id=delivery_id,
                reason=reason,
                details=details,
            )

        await self._run(self._write(tx))

    async def query_audit(self, query: AuditQuery) -> list[AuditEntry]:
        def q() -> list[AuditEntry]:
            rows = self._db.execute(
                "SELECT * FROM audit WHERE (? IS NULL OR repo = ?) AND (? IS NULL OR job_id = ?)"
                " AND (? IS NULL OR at >= ?) AND (? IS NULL OR action LIKE ? ESCAPE '\\')"
                " ORDER BY id LIMIT ?",
                (
                    query.repo,
                    query.repo,
                    query.job_id,
                    query.job_id,
                    query.since,
                    query.since,
                    query.action_prefix,
                    _like_prefix(query.action_prefix),
                    query.limit,
                ),
            ).fetchall()
            return [
                AuditEntry(
                    id=r["id"],
                    at=r["at"],
                    action=r["action"],
                    actor=r["actor"],
                    repo=r["repo"],
                    job_id=r["job_id"],
                    delivery_id=r["delivery_id"],
                    reason=r["reason"],
                    details=json.loads(r["details"]),
                )
                for r in rows
            ]

        return await self._run(q)

    # -- installations -----------------------------------------------------
    async def set_installation(
        self, installation_id: int, *, account: str | None, active: bool
    ) -> None:
        def tx(db: DB) -> None:
            db.execute(
                "INSERT INTO installations (id, account, active, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET"
                " account = COALESCE(excluded.account, installations.account),"
                " active = excluded.active, updated_at = excluded.updated_at",
                (installation_id, account, int(active), time.time()),
            )

        await self._run(self._write(tx))

    async def add_installation_repos(self, installation_id: int, repos: Sequence[str]) -> None:
        def tx(db: DB) -> None:
            now = time.time()
            db.executemany(
                "INSERT INTO installation_repos (repo, installation_id, added_at) VALUES (?, ?, ?)"
                " ON CONFLICT (repo) DO UPDATE SET installation_id = excluded.installation_id",
                [(repo, installation_id, now) for repo in repos],
            )

        await self._run(self._write(tx))

    async def remove_installation_repos(
        self, installation_id: int, repos: Sequence[str] | None = None
    ) -> None:
        def tx(db: DB) -> None:
            if repos is None:
                db.execute(
                    "DELETE FROM installation_repos WHERE installation_id = ?", (installation_id,)
                )
            else:
                db.executemany(
                    "DELETE FROM installation_repos WHERE installation_id = ? AND repo = ?",
                    [(installation_id, repo) for repo in repos],
                )

        await self._run(self._write(tx))

    async def installation_for_repo(self, repo: str) -> int | None:
        def q() -> int | None:
            row = self._db.execute(
                "SELECT r.installation_id FROM installation_repos r JOIN installations i"
                " ON i.id = r.installation_id WHERE lower(r.repo) = lower(?) AND i.active = 1",
                (repo,),
            ).fetchone()
            return int(row[0]) if row else None

        return await self._run(q)

    async def installed_repos(self) -> dict[str, int]:
        def q() -> dict[str, int]:
            rows = self._db.execute(
                "SELECT r.repo, r.installation_id FROM installation_repos r JOIN installations i"
                " ON i.id = r.installation_id WHERE i.active = 1 ORDER BY r.repo"
            ).fetchall()
            return {r[0]: int(r[1]) for r in rows}

        return await self._run(q)

    async def add_model_spend(self, installation_id: int, *, day: str, spend: ModelSpend) -> None:
        def tx(db: DB) -> None:
            db.execute(
                "INSERT INTO model_usage (installation_id, day, calls, prompt_tokens,"
                " completion_tokens, cost_usd, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (installation_id, day) DO UPDATE SET"
                " calls = model_usage.calls + excluded.calls,"
                " prompt_tokens = model_usage.prompt_tokens + excluded.prompt_tokens,"
                " completion_tokens = model_usage.completion_tokens + excluded.completion_tokens,"
                " cost_usd = model_usage.cost_usd + excluded.cost_usd,"
                " updated_at = excluded.updated_at",
                (
                    installation_id,
                    day,
                    spend.calls,
                    spend.prompt_tokens,
                    spend.completion_tokens,
                    spend.cost_usd,
                    time.time(),
                ),
            )

        await self._run(self._write(tx))

    async def model_spend(self, installation_id: int, *, day: str) -> ModelSpend:
        def q() -> ModelSpend:
            row = self._db.execute(
                "SELECT calls, prompt_tokens, completion_tokens, cost_usd FROM model_usage"
                " WHERE installation_id = ? AND day = ?",
                (installation_id, day),
            ).fetchone()
            if row is None:
                return ModelSpend()
            return ModelSpend(
                calls=row["calls"],
                prompt_tokens=row["prompt_tokens"],
                completion_tokens=row["completion_tokens"],
                cost_usd=row["cost_usd"],
            )

        return await self._run(q)

    async def claim_once(self, key: str) -> bool:
        def tx(db: DB) -> bool:
            cur = db.execute(
                "INSERT INTO once_keys (key, claimed_at) VALUES (?, ?)"
                " ON CONFLICT (key) DO NOTHING",
                (key, time.time()),
            )
            return cur.rowcount == 1

        return await self._run(self._write(tx))

    async def release_once(self, key: str) -> None:
        def tx(db: DB) -> None:
            db.execute("DELETE FROM once_keys WHERE key = ?", (key,))

        await self._run(self._write(tx))

    # -- outcomes -----------------------------------------------------------
    async def save_outcome(self, outcome: Outcome) -> None:
        values = dataclasses.asdict(outcome)
        for name in _OUTCOME_JSON:
            values[name] = json.dumps(values[name], sort_keys=True)
        values["two_person"] = int(values["two_person"])  # an INTEGER column in both
        marks = ", ".join("?" for _ in _OUTCOME_FIELDS)
        updates = ", ".join(f"{name} = excluded.{name}" for name in _OUTCOME_FIELDS[1:])

        def tx(db: DB) -> None:
            db.execute(
                f"INSERT INTO outcomes ({_OUTCOME_COLUMNS}) VALUES ({marks})"  # noqa: S608
                f" ON CONFLICT (job_id) DO UPDATE SET {updates}",
                tuple(values[name] for name in _OUTCOME_FIELDS),
            )

        await self._run(self._write(tx))

    async def get_outcome(self, job_id: int) -> Outcome | None:
        def q() -> Outcome | None:
            row = self._db.execute(
                f"SELECT {_OUTCOME_COLUMNS} FROM outcomes WHERE job_id = ?",  # noqa: S608
                (job_id,),
            ).fetchone()
            return _outcome(row) if row else None

        return await self._run(q)

    async def find_outcomes(
        self,
        *,
        repo: str | None = None,
        pr_number: int | None = None,
        head_sha: str | None = None,
        merge_sha: str | None = None,
        since: float | None = None,
    ) -> list[Outcome]:
        def q() -> list[Outcome]:
            rows = self._db.execute(
                f"SELECT {_OUTCOME_COLUMNS} FROM outcomes"  # noqa: S608
                " WHERE (? IS NULL OR repo = ?) AND (? IS NULL OR pr_number = ?)"
                " AND (? IS NULL OR head_sha = ?) AND (? IS NULL OR merge_sha = ?)"
                " AND (? IS NULL OR created_at >= ?) ORDER BY created_at, job_id",
                (
                    repo,
                    repo,
                    pr_number,
                    pr_number,
                    head_sha,
                    head_sha,
                    merge_sha,
                    merge_sha,
                    since,
                    since,
                ),
            ).fetchall()
            return [_outcome(r) for r in rows]

        return await self._run(q)

    # -- per-repository pause -------------------------------------------------
    async def set_pause(
        self, repo: str, *, paused: bool, actor: str, reason: str | None = None
    ) -> bool:
        def tx(db: DB) -> bool:
            now = time.time()
            if paused:
                cur = db.execute(
                    "INSERT INTO pauses (repo, actor, at, reason) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (repo) DO NOTHING",
                    (repo, actor, now, reason),
                )
            else:
                cur = db.execute("DELETE FROM pauses WHERE repo = ?", (repo,))
            if cur.rowcount == 0:
                return False
            self._audit_row(
                db,
                "repo.paused" if paused else "repo.resumed",
                actor=actor,
                repo=repo,
                reason=reason,
                at=now,
            )
            return True

        return await self._run(self._write(tx))

    async def get_pause(self, repo: str) -> Pause | None:
        def q() -> Pause | None:
            row = self._db.execute(
                "SELECT repo, actor, at, reason FROM pauses WHERE repo = ?", (repo,)
            ).fetchone()
            return _pause(row) if row else None

        return await self._run(q)

    async def pause_requests(self, scope: str, until: float) -> None:
        def tx(db: DB) -> None:
            cur = db.execute(
                "INSERT INTO rate_limits (scope, until) VALUES (?, ?) ON CONFLICT (scope)"
                " DO UPDATE SET until = excluded.until WHERE excluded.until > rate_limits.until",
                (scope, until),
            )
            if cur.rowcount:  # a new pause, or a longer one: audited once
                wait = max(until - time.time(), 0.0)
                self._audit_row(
                    db,
                    "github.rate_limited",
                    reason=f"GitHub asked to wait {wait:.1f}s: every request of "
                    + ("the App" if scope == "app" else f"installation {scope}")
                    + " waits",
                    details={"scope": scope, "until": until},
                )

        await self._run(self._write(tx))

    async def requests_paused_until(self, scope: str) -> float:
        def q() -> float:
            row = self._db.execute(
                "SELECT until FROM rate_limits WHERE scope = ?", (scope,)
            ).fetchone()
            return float(row[0]) if row else 0.0

        return await self._run(q)

    async def pauses(self) -> list[Pause]:
        def q() -> list[Pause]:
            rows = self._db.execute(
                "SELECT repo, actor, at, reason FROM pauses ORDER BY repo"
            ).fetchall()
            return [_pause(r) for r in rows]

        return await self._run(q)
