"""Durable jobs: in-process workers that lease jobs from the store."""

from app.queue.worker import Lane, WorkerPool, worker_id

EVENTS_QUEUE = "events"  # fast: routing deliveries, merge checks (GitHub calls only)
SESSIONS_QUEUE = "sessions"  # slow: coding sessions (fix, alert, revert, update)

__all__ = ["EVENTS_QUEUE", "SESSIONS_QUEUE", "Lane", "WorkerPool", "worker_id"]
