"""What the store keeps per installation and repository: which repositories each
installation covers, the model spend per day, pauses (a maintainer's, and GitHub's rate
limits shared by every process), and the dashboard issue."""

from __future__ import annotations

import time
from collections.abc import Sequence

from app.store.database import DB, Database, Row, audit_row
from app.store.interface import RepoState
from app.store.models import ModelSpend, Pause


def _pause(row: Row) -> Pause:
    return Pause(repo=row["repo"], actor=row["actor"], at=row["at"], reason=row["reason"])


class SQLRepoState(RepoState):
    def __init__(self, database: Database):
        self.database = database

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

        await self.database.run(self.database.write(tx))

    async def add_installation_repos(self, installation_id: int, repos: Sequence[str]) -> None:
        def tx(db: DB) -> None:
            now = time.time()
            db.executemany(
                "INSERT INTO installation_repos (repo, installation_id, added_at) VALUES (?, ?, ?)"
                " ON CONFLICT (repo) DO UPDATE SET installation_id = excluded.installation_id",
                [(repo, installation_id, now) for repo in repos],
            )

        await self.database.run(self.database.write(tx))

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

        await self.database.run(self.database.write(tx))

    async def installation_for_repo(self, repo: str) -> int | None:
        def q() -> int | None:
            row = self.database.db.execute(
                "SELECT r.installation_id FROM installation_repos r JOIN installations i"
                " ON i.id = r.installation_id WHERE lower(r.repo) = lower(?) AND i.active = 1",
                (repo,),
            ).fetchone()
            return int(row[0]) if row else None

        return await self.database.run(q)

    async def installed_repos(self) -> dict[str, int]:
        def q() -> dict[str, int]:
            rows = self.database.db.execute(
                "SELECT r.repo, r.installation_id FROM installation_repos r JOIN installations i"
                " ON i.id = r.installation_id WHERE i.active = 1 ORDER BY r.repo"
            ).fetchall()
            return {r[0]: int(r[1]) for r in rows}

        return await self.database.run(q)

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

        await self.database.run(self.database.write(tx))

    async def model_spend(self, installation_id: int, *, day: str) -> ModelSpend:
        def q() -> ModelSpend:
            row = self.database.db.execute(
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

        return await self.database.run(q)

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
            audit_row(
                db,
                "repo.paused" if paused else "repo.resumed",
                actor=actor,
                repo=repo,
                reason=reason,
                at=now,
            )
            return True

        return await self.database.run(self.database.write(tx))

    async def get_pause(self, repo: str) -> Pause | None:
        def q() -> Pause | None:
            row = self.database.db.execute(
                "SELECT repo, actor, at, reason FROM pauses WHERE repo = ?", (repo,)
            ).fetchone()
            return _pause(row) if row else None

        return await self.database.run(q)

    async def pauses(self) -> list[Pause]:
        def q() -> list[Pause]:
            rows = self.database.db.execute(
                "SELECT repo, actor, at, reason FROM pauses ORDER BY repo"
            ).fetchall()
            return [_pause(r) for r in rows]

        return await self.database.run(q)

    async def pause_requests(self, scope: str, until: float) -> None:
        def tx(db: DB) -> None:
            cur = db.execute(
                "INSERT INTO rate_limits (scope, until) VALUES (?, ?) ON CONFLICT (scope)"
                " DO UPDATE SET until = excluded.until WHERE excluded.until > rate_limits.until",
                (scope, until),
            )
            if cur.rowcount:  # a new pause, or a longer one: audited once
                wait = max(until - time.time(), 0.0)
                audit_row(
                    db,
                    "github.rate_limited",
                    reason=f"GitHub asked to wait {wait:.1f}s: every request of "
                    + ("the App" if scope == "app" else f"installation {scope}")
                    + " waits",
                    details={"scope": scope, "until": until},
                )

        await self.database.run(self.database.write(tx))

    async def requests_paused_until(self, scope: str) -> float:
        def q() -> float:
            row = self.database.db.execute(
                "SELECT until FROM rate_limits WHERE scope = ?", (scope,)
            ).fetchone()
            return float(row[0]) if row else 0.0

        return await self.database.run(q)

    async def dashboard_issue(self, repo: str) -> tuple[int | None, str | None]:
        def q() -> tuple[int | None, str | None]:
            row = self.database.db.execute(
                "SELECT issue_number, body_sha FROM dashboards WHERE repo = ?", (repo,)
            ).fetchone()
            return (int(row[0]), row[1]) if row else (None, None)

        return await self.database.run(q)

    async def set_dashboard_issue(self, repo: str, issue_number: int, body_sha: str) -> None:
        def tx(db: DB) -> None:
            db.execute(
                "INSERT INTO dashboards (repo, issue_number, body_sha, updated_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (repo) DO UPDATE SET"
                " issue_number = excluded.issue_number, body_sha = excluded.body_sha,"
                " updated_at = excluded.updated_at",
                (repo, issue_number, body_sha, time.time()),
            )

        await self.database.run(self.database.write(tx))
