"""What a webhook handler gets besides the event and the GitHub client."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.contract.kinds import JobKind
from app.contract.lifecycle_rules import pause_reason
from app.sessions.policyfile import DEFAULT_POLICY
from app.store import Job, Store


@dataclass
class HandlerContext:
    store: Store
    bot_name: str
    delivery_id: str
    on_enqueued: Callable[[str], None] = field(default=lambda queue: None)
    paused_globally: bool = False  # PATCHWARDEN_PAUSED
    batch_seconds: float = 30.0  # PATCHWARDEN_DASHBOARD_SECONDS: a window jobs share
    # PATCHWARDEN_DEFAULT_POLICY: the policy a repository's own file is merged over, here
    # as in the sessions (an alert the operator's default turns off starts nothing)
    default_policy: Path = DEFAULT_POLICY

    async def paused(self, repo: str) -> str | None:
        """Why no new job may start on ``repo`` now, or None."""
        pause = await self.store.repos.get_pause(repo)
        return pause_reason(pause, globally=self.paused_globally, repo=repo, bot=self.bot_name)

    @property
    def bot_login(self) -> str:
        return f"{self.bot_name}[bot]"

    async def audit(
        self,
        action: str,
        *,
        actor: str | None = None,
        repo: str | None = None,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        await self.store.journal.audit(
            action,
            actor=actor,
            repo=repo,
            delivery_id=self.delivery_id,
            reason=reason,
            details=details,
        )

    async def enqueue(
        self,
        kind: JobKind,
        *,
        installation_id: int | None,
        actor: str | None,
        run_after: float | None = None,
    ) -> tuple[Job, bool]:
        """Queue ``kind`` for this delivery unless a job with its key exists."""
        job = kind.new_job(
            installation_id=installation_id, delivery_id=self.delivery_id, run_after=run_after
        )
        created = await self.store.queue.enqueue(job, actor=actor)
        if created[1]:
            self.on_enqueued(job.queue)
        return created
