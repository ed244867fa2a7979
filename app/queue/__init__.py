"""Durable jobs: in-process workers that lease jobs from the store."""

from app.queue.worker import Lane, WorkerPool, worker_id

__all__ = ["Lane", "WorkerPool", "worker_id"]
