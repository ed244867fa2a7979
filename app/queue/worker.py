"""In-process workers over the store: leases, heartbeats, retries, graceful drain.

A pool has *lanes*, one per queue name, each with its own concurrency, so that fast
event routing never waits behind slow coding sessions. The store is the queue: a
lane claims a job only when it has a free slot, so a burst of work waits in the
database (bounded memory) while the server goes on acknowledging deliveries.

Crash safety: a claimed job carries a lease that a heartbeat extends. If the process
dies, the lease expires: that is a crash, told apart from the job's own errors. The job
waits a backoff that doubles with each crash and runs again, up to ``MAX_CRASHES``
crashes; its own errors are retried up to its ``max_attempts``. Either way a job that
finally fails is ``failed`` with the reason, and the store queues a notice that tells
the person who asked (app/jobs/notice.py). Completion is accepted only from the lease
holder, so a job never completes twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import traceback
import uuid
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from app import logs
from app.errors import PermanentJobError
from app.store import Job, Store
from app.store.models import backoff
from app.words import plural

log = logging.getLogger(__name__)

JobHandler = Callable[[Job], Coroutine[Any, Any, dict[str, Any] | None]]


@dataclass(frozen=True)
class Lane:
    queue: str
    concurrency: int


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text[:2000]


# The keys of a job's result that say what it decided, in the order a person reads them.
_DECISION_KEYS = ("status", "decision", "score", "risk", "pr", "merged", "reason", "kind")


def decided(result: dict[str, Any]) -> str:
    """One line of what a job decided, from its result (``status=published decision=review
    score=34 pr=12``); the other keys, if nothing of those."""
    keys = [k for k in _DECISION_KEYS if k in result] or sorted(result)[:6]
    if not keys:
        return "nothing to report"
    parts = []
    for key in keys:
        value = str(result[key]).replace("\n", " ")
        parts.append(f"{key}={value[:120]}")
    return " ".join(parts)


class WorkerPool:
    """Runs jobs from the store with bounded concurrency per lane."""

    def __init__(
        self,
        store: Store,
        handlers: Mapping[str, tuple[str, JobHandler]],
        lanes: list[Lane],
        *,
        lease_seconds: float = 60.0,
        poll_seconds: float = 1.0,
        retry_base_seconds: float = 10.0,
        drain_seconds: float = 30.0,
        owner: str | None = None,
    ) -> None:
        """``handlers`` maps a job kind to ``(queue, handler)``."""
        self.store = store
        self.handlers = dict(handlers)
        self.lanes = lanes
        self.lease_seconds = lease_seconds
        self.poll_seconds = poll_seconds
        self.retry_base_seconds = retry_base_seconds
        self.drain_seconds = drain_seconds
        self.owner = owner or worker_id()
        self._wake: dict[str, asyncio.Event] = {}
        self._loops: list[asyncio.Task[None]] = []
        self._running: set[asyncio.Task[None]] = set()
        self._stopping = False

    # -- public -------------------------------------------------------------
    def kinds_for(self, queue: str) -> list[str]:
        return sorted(kind for kind, (q, _) in self.handlers.items() if q == queue)

    def wake(self, queue: str | None = None) -> None:
        """Tell idle lanes that work arrived (saves up to one poll interval)."""
        for name, event in self._wake.items():
            if queue is None or name == queue:
                event.set()

    @property
    def in_flight(self) -> int:
        return len(self._running)

    async def start(self) -> None:
        for lane in self.lanes:
            self._wake[lane.queue] = asyncio.Event()
            task = asyncio.create_task(self._lane_loop(lane), name=f"lane:{lane.queue}")
            self._loops.append(task)
        log.info(
            "workers started: %s (owner %s)",
            ", ".join(f"{lane.queue} x{lane.concurrency}" for lane in self.lanes),
            self.owner,
        )

    async def stop(self) -> None:
        """Stop claiming; let running jobs finish for ``drain_seconds``; release the rest."""
        self._stopping = True
        self.wake()
        for task in self._loops:
            task.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        self._loops.clear()
        if self._running:
            log.info(
                "draining %d running job(s) for up to %.0fs", len(self._running), self.drain_seconds
            )
            _, pending = await asyncio.wait(set(self._running), timeout=self.drain_seconds)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

    async def run_until_idle(self) -> None:
        """Test and CLI helper: process due jobs one by one until none is left."""
        while True:
            claimed = False
            for lane in self.lanes:
                job = await self._claim(lane)
                if job is not None:
                    claimed = True
                    await self._run_job(job)
            if not claimed:
                return

    # -- internals ----------------------------------------------------------
    async def _claim(self, lane: Lane) -> Job | None:
        kinds = self.kinds_for(lane.queue)
        return await self.store.queue.claim(
            queue=lane.queue,
            kinds=kinds,
            owner=self.owner,
            lease_seconds=self.lease_seconds,
            crash_backoff_seconds=self.retry_base_seconds,
        )

    async def _lane_loop(self, lane: Lane) -> None:
        slots = asyncio.Semaphore(lane.concurrency)
        wake = self._wake[lane.queue]
        while not self._stopping:
            await slots.acquire()
            try:
                job = await self._claim(lane)
            except Exception:
                slots.release()
                log.exception("claiming from %s failed; retrying", lane.queue)
                await asyncio.sleep(self.poll_seconds)
                continue
            if job is None:
                slots.release()
                wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout=self.poll_seconds)
                continue
            task = asyncio.create_task(self._run_job(job), name=f"job:{job.id}")
            self._running.add(task)

            def done(t: asyncio.Task[None]) -> None:
                self._running.discard(t)
                slots.release()

            task.add_done_callback(done)

    async def _heartbeat(self, job: Job, work: asyncio.Task[Any]) -> None:
        interval = max(self.lease_seconds / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            try:
                ok = await self.store.queue.heartbeat(
                    job.id, owner=self.owner, lease_seconds=self.lease_seconds
                )
            except Exception as exc:  # the database blinked: the next beat tries again
                log.warning("job %s: heartbeat failed (%s); trying again", job.id, exc)
                continue
            if not ok:
                log.warning("job %s: lease lost; stopping this attempt", job.id)
                work.cancel()
                return

    async def _run_job(self, job: Job) -> None:
        with logs.bound(
            job_id=job.id,
            kind=job.kind,
            repo=job.repo,
            installation_id=job.installation_id,
            delivery_id=job.delivery_id,
        ):
            await self._run_bound(job)

    async def _run_bound(self, job: Job) -> None:
        _, handler = self.handlers[job.kind]
        log.info(
            "job %s (%s, %s) attempt %d/%d",
            job.id,
            job.kind,
            job.repo or "-",
            job.attempts,
            job.max_attempts,
        )
        work: asyncio.Task[dict[str, Any] | None] = asyncio.create_task(handler(job))
        beat = asyncio.create_task(self._heartbeat(job, work))
        try:
            result = await work
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if me is not None and me.cancelling():
                # Shutdown ran out of drain time: give the job back for another run.
                with contextlib.suppress(Exception):
                    await self.store.queue.release(job.id, owner=self.owner)
                raise
            return  # the heartbeat lost the lease: the job is someone else's now
        except PermanentJobError as exc:
            await self.store.queue.fail(job.id, owner=self.owner, error=_error_text(exc))
            log.warning("job %s failed: %s", job.id, exc)
            return
        except Exception as exc:
            await self._after_error(job, exc)
            return
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
        if not await self.store.queue.complete(job.id, owner=self.owner, result=result or {}):
            log.warning("job %s finished but its lease had moved on; result discarded", job.id)
            return
        log.info(
            "job %s (%s, %s) done: %s", job.id, job.kind, job.repo or "-", decided(result or {})
        )

    async def _after_error(self, job: Job, exc: Exception) -> None:
        error = _error_text(exc)
        log.warning(
            "job %s attempt %d failed: %s\n%s",
            job.id,
            job.attempts,
            error,
            traceback.format_exc(limit=5),
        )
        # Runs its worker did not survive (crashes) do not count: only the job's own errors.
        if job.errors >= job.max_attempts:
            await self.store.queue.fail(
                job.id,
                owner=self.owner,
                error=f"gave up after {plural(job.errors, 'attempt')}; last error: {error}",
            )
            return
        delay = backoff(self.retry_base_seconds, job.errors)
        await self.store.queue.retry_later(
            job.id, owner=self.owner, error=error, delay_seconds=delay
        )
