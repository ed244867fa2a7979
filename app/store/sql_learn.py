"""What earned autonomy reads and keeps (app/policy/learn.py decides it): trust events (a
pull request closed unmerged, a maintainer's reset) and each kind of change's standing as
last scored, with its changes audited in the same transaction."""

from __future__ import annotations

from app.store.models import TrustEvent, TrustStanding
from app.store.sql_base import DB, Row
from app.store.sql_reports import SQLReports


def _event(row: Row) -> TrustEvent:
    return TrustEvent(
        repo=row["repo"],
        what=row["what"],
        category=row["category"],
        at=float(row["at"]),
        actor=row["actor"],
        pr_number=row["pr_number"],
    )


def _standing(row: Row) -> TrustStanding:
    return TrustStanding(
        repo=row["repo"],
        category=row["category"],
        autonomy=row["autonomy"],
        state=row["state"],
        explanation=row["explanation"],
        at=float(row["at"]),
    )


class SQLLearn(SQLReports):
    async def add_trust_event(self, event: TrustEvent) -> None:
        def tx(db: DB) -> None:
            db.execute(
                "INSERT INTO trust_events (repo, what, category, at, actor, pr_number)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (event.repo, event.what, event.category, event.at, event.actor, event.pr_number),
            )
            if event.what == "reset":
                # what was earned is forgotten with the record it was earned by
                if event.category == "*":
                    db.execute("DELETE FROM standings WHERE repo = ?", (event.repo,))
                else:
                    db.execute(
                        "DELETE FROM standings WHERE repo = ? AND category = ?",
                        (event.repo, event.category),
                    )
            self._audit_row(
                db,
                f"trust.{event.what}",
                actor=event.actor,
                repo=event.repo,
                reason={
                    "rejected": f"#{event.pr_number} closed without a merge",
                    "reverted": f"#{event.pr_number} reverted by a person's pull request",
                }.get(
                    event.what,
                    "every kind of change starts again"
                    if event.category == "*"
                    else f"{event.category} changes start again",
                ),
                details={"category": event.category, "pr": event.pr_number},
                at=event.at,
            )

        await self._run(self._write(tx))

    async def trust_events(self, repo: str, *, since: float | None = None) -> list[TrustEvent]:
        def q() -> list[TrustEvent]:
            rows = self._db.execute(
                "SELECT repo, what, category, at, actor, pr_number FROM trust_events"
                " WHERE repo = ? AND at >= ? ORDER BY at, id",
                (repo, since if since is not None else float("-inf")),
            ).fetchall()
            return [_event(r) for r in rows]

        return await self._run(q)

    async def set_standing(
        self, standing: TrustStanding, *, job_id: int | None = None
    ) -> TrustStanding | None:
        def tx(db: DB) -> TrustStanding | None:
            row = db.execute(
                "SELECT repo, category, autonomy, state, explanation, at FROM standings"
                " WHERE repo = ? AND category = ?",
                (standing.repo, standing.category),
            ).fetchone()
            before = _standing(row) if row else None
            db.execute(
                "INSERT INTO standings (repo, category, autonomy, state, explanation, at)"
                " VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (repo, category) DO UPDATE SET autonomy = excluded.autonomy,"
                " state = excluded.state, explanation = excluded.explanation,"
                " at = excluded.at",
                (
                    standing.repo,
                    standing.category,
                    standing.autonomy,
                    standing.state,
                    standing.explanation,
                    standing.at,
                ),
            )
            was = before.state if before is not None else "base"
            if standing.state != was:
                action = {"earned": "trust.promoted", "demoted": "trust.demoted"}.get(
                    standing.state, "trust.restored"
                )
                self._audit_row(
                    db,
                    action,
                    repo=standing.repo,
                    job_id=job_id,
                    reason=standing.explanation,
                    details={
                        "category": standing.category,
                        "autonomy": standing.autonomy,
                        "was": was,
                        "was_autonomy": before.autonomy if before is not None else None,
                    },
                    at=standing.at,
                )
            return before

        return await self._run(self._write(tx))

    async def standings(self, repo: str | None = None) -> list[TrustStanding]:
        def q() -> list[TrustStanding]:
            columns = "repo, category, autonomy, state, explanation, at"
            if repo is None:
                rows = self._db.execute(
                    f"SELECT {columns} FROM standings ORDER BY repo, category"  # noqa: S608
                ).fetchall()
            else:
                rows = self._db.execute(
                    f"SELECT {columns} FROM standings WHERE repo = ?"  # noqa: S608
                    " ORDER BY category",
                    (repo,),
                ).fetchall()
            return [_standing(r) for r in rows]

        return await self._run(q)
