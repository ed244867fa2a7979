"""What every job needs: the settings, the store, GitHub, the session runner, the audit
log and the pause check (:class:`JobContext`, one per process), and one running job
with its typed kind and its repository's publisher (:class:`Running`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from app.config import Settings
from app.contract.kinds import JobKind
from app.contract.lifecycle_rules import pause_reason, record_of
from app.errors import PermanentJobError
from app.fixers.registry import KNOWN
from app.git import Author, Remote, bot_author
from app.github import GitHubApp
from app.jobs.report import Report
from app.metrics import Metrics
from app.policy.policy_model import REPO_SOURCE, Policy, load_policy
from app.policy.score import HISTORY_DAYS, History
from app.publish import audit_page
from app.publish.github import Publisher
from app.sessions.policyfile import DEFAULT_POLICY, default_policy_text
from app.sessions.result import SessionResult, SessionResultError
from app.sessions.session import SessionRunner
from app.sessions.stored import for_store, from_store
from app.store import Job, Outcome, Store
from app.store.outcomes import reverted

log = logging.getLogger(__name__)
K = TypeVar("K", bound=JobKind)


@dataclass
class JobContext:
    settings: Settings
    store: Store
    github: GitHubApp
    runner: SessionRunner
    wake: Callable[[str], None] | None = None  # wakes idle workers of a queue
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)  # merges, per repository
    author: Author | None = None  # the bot user as a commit author, once asked
    metrics: Metrics = field(default_factory=Metrics)

    @property
    def bot(self) -> str:
        return self.settings.bot_name

    def publisher(self, job: Job) -> Publisher:
        if job.installation_id is None or job.repo is None:
            raise PermanentJobError(f"job {job.id} names no installation or repository")
        return Publisher(
            self.github.installation(job.installation_id), job.repo, bot_login=f"{self.bot}[bot]"
        )

    def audit_url(self, repo: str, number: int) -> str | None:
        """The pull request's signed audit page on this server (its check run's details
        link), or None when PATCHWARDEN_PUBLIC_URL or the webhook secret is not set."""
        base, secret = self.settings.public_url, self.settings.webhook_secret
        if base is None or secret is None:
            return None
        return audit_page.audit_url(base, secret.get_secret_value(), repo, number)

    async def paused(self, repo: str) -> str | None:
        pause = await self.store.repos.get_pause(repo)
        return pause_reason(pause, globally=self.settings.paused, repo=repo, bot=self.bot)

    async def enqueue(
        self, kind: JobKind, *, installation_id: int | None, run_after: float | None = None
    ) -> bool:
        """Queue ``kind`` unless a job with its key exists; True when it is new."""
        job = kind.new_job(installation_id=installation_id, run_after=run_after)
        _, created = await self.store.queue.enqueue(job, actor=None)
        if created and self.wake is not None:
            self.wake(job.queue)
        return created

    async def default_branch_policy(self, pub: Publisher) -> Policy:
        """The policy as the default branch has it now (the default policy with
        ``.github/patchwarden.yml`` merged over it); :class:`RepoConfigError` when it
        does not load. For jobs that act on the repository rather than on a change."""
        text = await pub.default_branch_file(REPO_SOURCE)
        return load_policy(
            default_policy_text(self.settings.default_policy or DEFAULT_POLICY),
            text,
            fixers=KNOWN,
        )

    async def history(self, repo: str, *, window_days: float = HISTORY_DAYS) -> History:
        """Outcomes feed back into the risk (Patchwarden's merges reverted lately) and
        into the autonomy each kind of change has earned (over ``window_days``)."""
        now = time.time()
        # a change created a while before its merge or revert still counts by those
        since = now - (max(window_days, HISTORY_DAYS) + 90) * 86400
        outcomes = await self.store.learning.find_outcomes(repo=repo, since=since)
        # Only reverts that merged count: one opened and never merged undid nothing.
        recent = [o for o in outcomes if o.created_at >= now - HISTORY_DAYS * 86400]
        past, resets = record_of(
            outcomes, await self.store.learning.trust_events(repo, since=since)
        )
        return History(reverted_recently=len(reverted(recent)), past=past, resets=resets, now=now)

    # -- a session's result, kept in the store for later jobs of the same change -----
    async def save_result(self, result: SessionResult) -> None:
        """Keep ``result`` (redacted, capped: :mod:`app.sessions.stored`) in the store,
        where the merge and update jobs of its change read it on any host."""
        assert result.job_id is not None
        body = for_store(result)
        await self.store.queue.save_result(result.job_id, body, version=result.schema_version)

    async def load_result(self, job_id: int) -> SessionResult | None:
        """The result ``job_id``'s session left, or None when it kept none or kept one
        this Patchwarden cannot read (an older version's: said in the log). Its readers
        then do without it: the merge leaves the body as it is, the update scores the
        carried change as a fixer it has no record of (contained, as a model's)."""
        kept = await self.store.queue.load_result(job_id)
        if kept is None:
            return None
        try:
            return from_store(*kept)
        except SessionResultError as exc:
            log.warning("job %s: its session result cannot be read: %s", job_id, exc)
            return None


@dataclass
class Running(Generic[K]):
    """One job as it runs: its record, its typed kind, and its repository's publisher."""

    ctx: JobContext
    job: Job
    kind: K
    pub: Publisher

    @classmethod
    def start(cls, ctx: JobContext, job: Job, kind: type[K]) -> Running[K]:
        return cls(ctx, job, kind.of(job), ctx.publisher(job))

    @property
    def repo(self) -> str:
        return self.pub.repo

    async def audit(self, action: str, *, reason: str, **details: Any) -> None:
        await self.ctx.store.journal.audit(
            action,
            actor=self.kind.requester,
            repo=self.repo,
            job_id=self.job.id,
            reason=reason,
            details=details or None,
        )

    async def remote(self) -> tuple[Remote, dict[str, Any]]:
        """Where git fetches and pushes the repository, with the installation's token
        (it goes into git's environment only), and the repository as GitHub shows it."""
        repository = await self.pub.repository()
        token = await self.ctx.github.auth.installation_token(int(self.job.installation_id or 0))
        return Remote(self.repo, str(repository["clone_url"]), token), repository

    async def author(self) -> Author:
        """Who the session's commits are by: the App's bot user, by its id, so GitHub
        links the commits to the App (asked once per process)."""
        if self.ctx.author is None:
            user_id = await self.pub.bot_user_id()
            if user_id is None:
                log.warning(
                    "GitHub has no user %s[bot]: commits use an address it does not link to "
                    "the App; set PATCHWARDEN_BOT_NAME to the App's slug",
                    self.ctx.bot,
                )
            self.ctx.author = bot_author(self.ctx.bot, user_id)
        return self.ctx.author

    async def outcome(self, *, kind: str, trigger: str, issue_number: int | None = None) -> Outcome:
        """The job's outcome row: the one an earlier run of it wrote, or a new one."""
        found = await self.ctx.store.learning.get_outcome(self.job.id)
        if found is not None:
            return found
        outcome = Outcome(
            job_id=self.job.id,
            repo=self.repo,
            kind=kind,
            trigger=trigger,
            created_at=self.job.created_at,
            issue_number=issue_number,
            requested_by=self.kind.requester,
        )
        await self.ctx.store.learning.save_outcome(outcome)
        return outcome

    async def refused_if_paused(
        self, outcome: Outcome, report: Report, what: str
    ) -> dict[str, Any] | None:
        """A paused repository starts nothing: say so, record it, audit it."""
        paused = await self.ctx.paused(self.repo)
        if paused is None:
            return None
        await report.say(f"{what}: {paused}.")
        await self.ctx.store.learning.save_outcome(replace(outcome, status="refused"))
        await self.audit("job.refused", reason=paused)
        return {"status": "refused", "reason": paused}

    async def enqueue(self, kind: JobKind) -> bool:
        return await self.ctx.enqueue(kind, installation_id=self.job.installation_id)
