"""What the watch on the default branch reads and keeps (app/policy/watch_rules.py decides):
the checks that completed there, one record per GitHub run or status however often it
is delivered, and the issue Patchwarden keeps for each finding."""

from __future__ import annotations

from app.store.database import DB, Database, Row, audit_row
from app.store.interface import CheckHistory
from app.store.models import CheckRecord, WatchFinding


def _check(repo: str, row: Row) -> CheckRecord:
    return CheckRecord(
        repo=repo,
        check=row["check_name"],
        sha=row["sha"],
        conclusion=row["conclusion"],
        completed_at=float(row["completed_at"]),
        started_at=float(row["started_at"]) if row["started_at"] is not None else None,
        source=row["source"],
        external_id=row["external_id"],
    )


def _finding(row: Row) -> WatchFinding:
    return WatchFinding(
        repo=row["repo"],
        key=row["finding"],
        issue_number=int(row["issue_number"]),
        state=row["state"],
        title=row["title"],
        first_seen=float(row["first_seen"]),
        last_seen=float(row["last_seen"]),
        body_sha=row["body_sha"],
    )


class SQLCheckHistory(CheckHistory):
    def __init__(self, database: Database):
        self.database = database

    async def record_check(self, record: CheckRecord) -> bool:
        def tx(db: DB) -> bool:
            cur = db.execute(
                "INSERT INTO check_history (repo, check_name, sha, conclusion, completed_at,"
                " started_at, source, external_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (repo, source, external_id) DO NOTHING",
                (
                    record.repo,
                    record.check,
                    record.sha,
                    record.conclusion,
                    record.completed_at,
                    record.started_at,
                    record.source,
                    record.external_id,
                ),
            )
            return cur.rowcount > 0

        return await self.database.run(self.database.write(tx))

    async def check_history(self, repo: str, *, since: float) -> list[CheckRecord]:
        def q() -> list[CheckRecord]:
            rows = self.database.db.execute(
                "SELECT check_name, sha, conclusion, completed_at, started_at, source,"
                " external_id FROM check_history WHERE repo = ? AND completed_at >= ?"
                " ORDER BY completed_at, id",
                (repo, since),
            ).fetchall()
            return [_check(repo, r) for r in rows]

        return await self.database.run(q)

    async def watch_findings(self, repo: str) -> list[WatchFinding]:
        def q() -> list[WatchFinding]:
            rows = self.database.db.execute(
                "SELECT repo, finding, issue_number, state, title, first_seen, last_seen,"
                " body_sha FROM watch_findings WHERE repo = ? ORDER BY finding",
                (repo,),
            ).fetchall()
            return [_finding(r) for r in rows]

        return await self.database.run(q)

    async def save_finding(self, finding: WatchFinding, *, audit: str | None = None) -> None:
        def tx(db: DB) -> None:
            db.execute(
                "INSERT INTO watch_findings (repo, finding, issue_number, state, title,"
                " first_seen, last_seen, body_sha) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (repo, finding) DO UPDATE SET issue_number ="
                " excluded.issue_number, title = excluded.title,"
                " last_seen = excluded.last_seen, body_sha = excluded.body_sha,"
                # `ignore` is a person's answer: a watch run that read the finding before
                # it, and writes after it, does not take it back
                " state = CASE WHEN watch_findings.state = 'ignored' THEN 'ignored'"
                " ELSE excluded.state END",
                (
                    finding.repo,
                    finding.key,
                    finding.issue_number,
                    finding.state,
                    finding.title,
                    finding.first_seen,
                    finding.last_seen,
                    finding.body_sha,
                ),
            )
            if audit is not None:
                audit_row(
                    db,
                    audit,
                    repo=finding.repo,
                    reason=f"{finding.title} (#{finding.issue_number})",
                    details={"finding": finding.key, "issue": finding.issue_number},
                    at=finding.last_seen,
                )

        await self.database.run(self.database.write(tx))
