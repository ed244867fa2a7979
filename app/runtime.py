"""Wiring: the store, the one HTTP session, the GitHub App and the workers, for a process.

Above both ``app/webhooks/`` and ``app/jobs/``: a delivery job runs the handlers'
router, every other kind its job; both reach each other only through the typed kinds of
``app/contract/``. ``serve`` runs the runtime inside the web server; ``worker`` runs it
on its own.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp

from app.config import Settings
from app.contract.kinds import (
    KINDS,
    AlertJob,
    DashboardJob,
    DeliveryJob,
    FailureNotice,
    FixJob,
    JobKind,
    MergeJob,
    RevertJob,
    SecurityAlertJob,
    UpdateJob,
    WatchJob,
)
from app.errors import ConfigError, PermanentJobError
from app.fixers.registry import KNOWN
from app.github import GitHubApp, RetryPolicy
from app.jobs import (
    alert,
    dashboard,
    fix,
    merge,
    notice,
    revert,
    security_alert,
    update,
    watch,
)
from app.jobs.context import JobContext
from app.metrics import Metrics
from app.queue import EVENTS_QUEUE, SESSIONS_QUEUE, Lane, WorkerPool
from app.queue.worker import JobHandler
from app.sessions.factory import runner_from
from app.sessions.policyfile import DEFAULT_POLICY
from app.store import Job, Store, store_for_url
from app.webhooks import HandlerContext, route_delivery

log = logging.getLogger(__name__)

JOBS: tuple[
    tuple[type[JobKind], Callable[[JobContext, Job], Coroutine[Any, Any, dict[str, Any]]]], ...
] = (
    (FixJob, fix.fix_job),
    (AlertJob, alert.alert_job),
    (SecurityAlertJob, security_alert.security_alert_job),
    (RevertJob, revert.revert_job),
    (UpdateJob, update.update_job),
    (MergeJob, merge.merge_job),
    (FailureNotice, notice.failure_notice_job),
    (DashboardJob, dashboard.dashboard_job),
    (WatchJob, watch.watch_job),
)


@dataclass
class Runtime:
    settings: Settings
    store: Store
    session: aiohttp.ClientSession
    github: GitHubApp
    pool: WorkerPool
    metrics: Metrics = field(default_factory=Metrics)

    def __post_init__(self) -> None:
        self.metrics.watch_gates(self.github.gates)

    async def handle_delivery(self, job: Job) -> dict[str, Any]:
        delivery_id = DeliveryJob.of(job).delivery_id
        delivery = await self.store.journal.get_delivery(delivery_id)
        if delivery is None:
            raise PermanentJobError(f"delivery {delivery_id} is not in the store")
        ctx = HandlerContext(
            store=self.store,
            bot_name=self.settings.bot_name,
            delivery_id=delivery.id,
            on_enqueued=self.pool.wake,
            paused_globally=self.settings.paused,
            batch_seconds=self.settings.dashboard_seconds,
            default_policy=self.settings.default_policy or DEFAULT_POLICY,
        )
        handled = await route_delivery(delivery, app=self.github, ctx=ctx)
        return {"handlers": handled}

    def handlers(self) -> dict[str, tuple[str, JobHandler]]:
        """Job kinds this process runs: routing deliveries, and the jobs of app/jobs/."""
        ctx = JobContext(
            settings=self.settings,
            store=self.store,
            github=self.github,
            runner=runner_from(self.settings, fixers=KNOWN),
            wake=self.pool.wake,
            metrics=self.metrics,
        )
        jobs: dict[str, tuple[str, JobHandler]] = {
            kind.kind: (kind.queue, self._then_dashboard(ctx, partial(job, ctx)))
            for kind, job in JOBS
        }
        return {DeliveryJob.kind: (DeliveryJob.queue, self.handle_delivery), **jobs}

    def _then_dashboard(self, ctx: JobContext, handler: JobHandler) -> JobHandler:
        """``handler``, then (whatever came of it) the repository's dashboard update for
        the current window, queued once per window to run when the window ends."""

        async def run(job: Job) -> dict[str, Any] | None:
            try:
                return await handler(job)
            finally:
                kind = KINDS.get(job.kind)
                if kind and kind.updates_dashboard and job.repo and job.installation_id:
                    window = int(time.time() // self.settings.dashboard_seconds)
                    try:
                        await ctx.enqueue(
                            DashboardJob(repo=job.repo, window=window),
                            installation_id=job.installation_id,
                            run_after=(window + 1) * self.settings.dashboard_seconds,
                        )
                    except Exception:  # the dashboard must never fail the job it follows
                        log.exception("job %s: could not queue the dashboard update", job.id)

        return run


def github_app(settings: Settings, session: aiohttp.ClientSession) -> GitHubApp:
    missing = settings.missing_for_github()
    if missing:
        raise ConfigError(
            "cannot act on GitHub without the App's identity; set "
            + " and ".join(missing)
            + " (docs/install.md shows where to find them)"
        )
    key = settings.app_private_key()
    assert key is not None
    assert settings.app_id is not None
    return GitHubApp(
        app_id=settings.app_id,
        private_key=key,
        api_url=settings.github_api_url,
        session=session,
        policy=RetryPolicy(
            base_seconds=settings.rate_limit_base_seconds,
            max_retries=settings.rate_limit_max_retries,
            max_wait_seconds=settings.rate_limit_max_wait_seconds,
        ),
    )


def prepare_cache(cache_dir: Path) -> None:
    """Create the cache folder (mirrors, environments, sandbox state) or say why not."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        # a name of its own: serve and workers sharing the folder start at once
        with tempfile.NamedTemporaryFile(dir=cache_dir, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise ConfigError(
            f"the cache folder {cache_dir} cannot be written ({exc.strerror}): set "
            "PATCHWARDEN_CACHE_DIR to a folder this user can write"
        ) from None


async def open_runtime(settings: Settings, *, start_workers: bool = True) -> Runtime:
    """Everything a server or worker process needs, checked in order (the key, the cache
    folder, the database); a failure closes what was opened and says what is wrong."""
    store = store_for_url(settings.database_url, default_max_attempts=settings.job_max_attempts)
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
    try:
        gh = github_app(settings, session)  # parses the key: a bad one fails here, at start
        prepare_cache(settings.cache_dir)
        await store.open()
    except BaseException:
        await session.close()
        raise
    pool = WorkerPool(
        store,
        {},
        [
            lane
            for lane in (
                Lane(EVENTS_QUEUE, settings.event_workers),
                Lane(SESSIONS_QUEUE, settings.workers),  # 0: sessions run in other processes
            )
            if lane.concurrency > 0
        ],
        lease_seconds=settings.lease_seconds,
        poll_seconds=settings.poll_seconds,
        retry_base_seconds=settings.retry_base_seconds,
        drain_seconds=settings.drain_seconds,
    )
    gh.shared = store.repos  # a rate limit one process meets pauses the installation in all
    runtime = Runtime(settings=settings, store=store, session=session, github=gh, pool=pool)
    pool.handlers.update(runtime.handlers())
    if start_workers:
        await pool.start()
    return runtime


async def close_runtime(runtime: Runtime) -> None:
    await runtime.pool.stop()
    await runtime.session.close()
    await runtime.store.close()
