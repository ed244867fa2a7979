"""The journal: each delivery as received (stored with its jobs in one transaction: a
redelivery changes nothing), the audit log, and the answers given once (a key claimed
by the first caller in any process)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Unpack

from app.store.database import DB, Database, audit_row
from app.store.interface import Journal
from app.store.job_queue import insert_job
from app.store.models import AuditEntry, AuditFields, AuditQuery, Delivery, NewJob


def _like_prefix(prefix: str | None) -> str | None:
    """``prefix`` as a LIKE pattern that matches it literally at the start."""
    if prefix is None:
        return None
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


class SQLJournal(Journal):
    def __init__(self, database: Database, *, default_max_attempts: int = 3):
        self.database = database
        self.default_max_attempts = default_max_attempts

    async def record_delivery(self, delivery: Delivery, *, jobs: Sequence[NewJob] = ()) -> bool:
        one = self.database.driver.intake(self.database, delivery, jobs, self.default_max_attempts)
        if one is not None:
            return await self.database.run_intake(one)

        def tx(db: DB) -> bool:
            cur = db.execute(
                "INSERT INTO deliveries (id, source, event, action, installation_id, repo,"
                " sender, payload, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO NOTHING",
                (
                    delivery.id,
                    delivery.source,
                    delivery.event,
                    delivery.action,
                    delivery.installation_id,
                    delivery.repo,
                    delivery.sender,
                    json.dumps(delivery.payload),
                    delivery.received_at,
                ),
            )
            if cur.rowcount == 0:
                return False
            audit_row(
                db,
                "delivery.received",
                actor=delivery.sender,
                repo=delivery.repo,
                delivery_id=delivery.id,
                reason=f"{delivery.event}.{delivery.action}" if delivery.action else delivery.event,
                details={"source": delivery.source, "installation_id": delivery.installation_id},
                at=delivery.received_at,
            )
            for job in jobs:
                insert_job(db, job, delivery.sender, default_max_attempts=self.default_max_attempts)
            return True

        return await self.database.run(self.database.write(tx))

    async def get_delivery(self, delivery_id: str) -> Delivery | None:
        def q() -> Delivery | None:
            row = self.database.db.execute("SELECT * FROM deliveries WHERE id = ?", (delivery_id,))
            r = row.fetchone()
            if r is None:
                return None
            return Delivery(
                id=r["id"],
                source=r["source"],
                event=r["event"],
                action=r["action"],
                installation_id=r["installation_id"],
                repo=r["repo"],
                sender=r["sender"],
                payload=json.loads(r["payload"]),
                received_at=r["received_at"],
            )

        return await self.database.run(q)

    async def count_deliveries(self) -> int:
        return await self.database.run(
            lambda: int(self.database.db.execute("SELECT COUNT(*) FROM deliveries").fetchone()[0])
        )

    async def audit(self, action: str, **fields: Unpack[AuditFields]) -> None:
        await self.database.run(
            self.database.write(lambda db: audit_row(db, action, at=None, **fields))
        )

    async def query_audit(self, query: AuditQuery) -> list[AuditEntry]:
        def q() -> list[AuditEntry]:
            rows = self.database.db.execute(
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

        return await self.database.run(q)

    async def claim_once(self, key: str) -> bool:
        def tx(db: DB) -> bool:
            cur = db.execute(
                "INSERT INTO once_keys (key, claimed_at) VALUES (?, ?)"
                " ON CONFLICT (key) DO NOTHING",
                (key, time.time()),
            )
            return cur.rowcount == 1

        return await self.database.run(self.database.write(tx))

    async def release_once(self, key: str) -> None:
        def tx(db: DB) -> None:
            db.execute("DELETE FROM once_keys WHERE key = ?", (key,))

        await self.database.run(self.database.write(tx))
