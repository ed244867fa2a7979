"""What the store keeps to learn from: each job's outcome, and what earned autonomy reads
and keeps (app/policy/learn.py decides it): trust events (a pull request closed
unmerged, a maintainer's reset) and each kind of change's standing as last scored, its
changes audited in the same transaction."""

from __future__ import annotations

import dataclasses
import json

from app.store.database import DB, Database, Row, audit_row
from app.store.interface import Learning
from app.store.models import Outcome, TrustEvent, TrustStanding

# The outcomes table has one column per Outcome field, of the same name; these hold JSON.
_OUTCOME_FIELDS = tuple(f.name for f in dataclasses.fields(Outcome))
_OUTCOME_COLUMNS = ", ".join(_OUTCOME_FIELDS)
_OUTCOME_JSON = ("details", "links", "ship_it")


def _outcome(row: Row) -> Outcome:
    values = {name: row[name] for name in _OUTCOME_FIELDS}
    for name in _OUTCOME_JSON:
        values[name] = json.loads(values[name])
    values["links"] = tuple(values["links"])
    values["two_person"] = bool(values["two_person"])
    return Outcome(**values)


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


class SQLLearning(Learning):
    def __init__(self, database: Database):
        self.database = database

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

        await self.database.run(self.database.write(tx))

    async def get_outcome(self, job_id: int) -> Outcome | None:
        def q() -> Outcome | None:
            row = self.database.db.execute(
                f"SELECT {_OUTCOME_COLUMNS} FROM outcomes WHERE job_id = ?",  # noqa: S608
                (job_id,),
            ).fetchone()
            return _outcome(row) if row else None

        return await self.database.run(q)

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
            rows = self.database.db.execute(
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

        return await self.database.run(q)

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
            audit_row(
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

        await self.database.run(self.database.write(tx))

    async def trust_events(self, repo: str, *, since: float | None = None) -> list[TrustEvent]:
        def q() -> list[TrustEvent]:
            rows = self.database.db.execute(
                "SELECT repo, what, category, at, actor, pr_number FROM trust_events"
                " WHERE repo = ? AND at >= ? ORDER BY at, id",
                (repo, since if since is not None else float("-inf")),
            ).fetchall()
            return [_event(r) for r in rows]

        return await self.database.run(q)

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
                audit_row(
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

        return await self.database.run(self.database.write(tx))

    async def standings(self, repo: str | None = None) -> list[TrustStanding]:
        def q() -> list[TrustStanding]:
            columns = "repo, category, autonomy, state, explanation, at"
            if repo is None:
                rows = self.database.db.execute(
                    f"SELECT {columns} FROM standings ORDER BY repo, category"  # noqa: S608
                ).fetchall()
            else:
                rows = self.database.db.execute(
                    f"SELECT {columns} FROM standings WHERE repo = ?"  # noqa: S608
                    " ORDER BY category",
                    (repo,),
                ).fetchall()
            return [_standing(r) for r in rows]

        return await self.database.run(q)
