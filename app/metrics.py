"""``GET /metrics``: Patchwarden in Prometheus's text format (prometheus-client).

Two kinds of figures:

- **From the database**, read at each scrape (:meth:`Store.metrics`): deliveries by
  event, jobs by kind and state, queue depth and the oldest waiting job, decisions,
  merges, reverts, model tokens and cost. They are the same whichever ``serve`` answers
  (all share the database, workers on other hosts included) and they are the numbers
  the audit log and ``audit --outcomes`` show. Totals that only grow are counters.
- **From this process**: webhook requests by outcome (refused ones never reach the
  database), session phase durations (the sessions this process ran), GitHub's
  rate-limit remaining per installation (as the last answer said), and the rate-limit
  pauses this process's gates made and the requests they held (app/github/client.py).

Labels are event names, job kinds, states, decisions and installation ids: never a
repository name, an issue's text or anything a stranger could put in a label.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from app.store import MetricsSnapshot, Store

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
CACHE_SECONDS = 5.0
PHASE_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)


class _FromDatabase(Collector):
    def __init__(self) -> None:
        self.snapshot: MetricsSnapshot | None = None

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot
        if snap is None:
            return
        yield from _queue_metrics(snap)
        yield from _change_metrics(snap)
        yield from _model_metrics(snap)


def _queue_metrics(snap: MetricsSnapshot) -> Iterator[Metric]:
    """Deliveries, jobs, and what waits in each queue."""
    deliveries = CounterMetricFamily(
        "patchwarden_deliveries",
        "Deliveries stored, by source and event",
        labels=["source", "event"],
    )
    for (source, event), n in sorted(snap.deliveries.items()):
        deliveries.add_metric([source, event], n)
    yield deliveries
    jobs = GaugeMetricFamily("patchwarden_jobs", "Jobs by kind and state", labels=["kind", "state"])
    for (kind, state), n in sorted(snap.jobs.items()):
        jobs.add_metric([kind, state], n)
    yield jobs
    depth = GaugeMetricFamily(
        "patchwarden_queue_depth",
        "Jobs due to run and not running yet, by queue",
        labels=["queue"],
    )
    oldest = GaugeMetricFamily(
        "patchwarden_queue_oldest_waiting_seconds",
        "How long the longest-waiting due job has waited, by queue",
        labels=["queue"],
    )
    for queue in sorted(snap.queued):
        depth.add_metric([queue], snap.queued[queue])
        oldest.add_metric([queue], snap.oldest_waiting.get(queue, 0.0))
    yield depth
    yield oldest


def _change_metrics(snap: MetricsSnapshot) -> Iterator[Metric]:
    """Changes scored, merged and reverted."""
    decisions = CounterMetricFamily(
        "patchwarden_decisions", "Changes scored, by decision", labels=["decision"]
    )
    for decision, n in sorted(snap.decisions.items()):
        decisions.add_metric([decision], n)
    yield decisions
    merges = CounterMetricFamily(
        "patchwarden_merges",
        "Patchwarden changes merged (reverts apart), by how (auto, approved, manual)",
        labels=["how"],
    )
    for how, n in sorted(snap.merges.items()):
        merges.add_metric([how or "unknown"], n)
    yield merges
    yield CounterMetricFamily(
        "patchwarden_reverts",
        "Patchwarden merges reverted (their revert merged)",
        value=snap.reverts,
    )


def _model_metrics(snap: MetricsSnapshot) -> Iterator[Metric]:
    """What the model was asked, and what it cost."""
    tokens = CounterMetricFamily("patchwarden_model_tokens", "Model tokens spent", labels=["kind"])
    tokens.add_metric(["prompt"], snap.model.prompt_tokens)
    tokens.add_metric(["completion"], snap.model.completion_tokens)
    yield tokens
    yield CounterMetricFamily("patchwarden_model_calls", "Model calls made", value=snap.model.calls)
    yield CounterMetricFamily(
        "patchwarden_model_cost_usd", "Model spend in US dollars", value=snap.model.cost_usd
    )


class _Gates(Collector):
    def __init__(self, gates: Mapping[int | None, Any]) -> None:
        self.gates = gates

    def collect(self) -> Iterator[Metric]:
        pauses = CounterMetricFamily(
            "patchwarden_github_rate_limit_pauses",
            "Rate limits that paused every request of an installation (app: the App's)",
            labels=["installation"],
        )
        held = CounterMetricFamily(
            "patchwarden_github_rate_limit_held",
            "Requests held at an installation's gate for another's rate limit",
            labels=["installation"],
        )
        for installation, gate in sorted(self.gates.items(), key=lambda kv: str(kv[0])):
            label = "app" if installation is None else str(installation)
            pauses.add_metric([label], gate.pauses)
            held.add_metric([label], gate.held)
        yield pauses
        yield held


class Metrics:
    """One process's metrics: a registry of its own (tests run many in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._read_at = 0.0
        self._database = _FromDatabase()
        self.registry.register(self._database)
        self.webhooks = Counter(
            "patchwarden_webhook_requests",
            "Webhook requests this process answered, by outcome",
            ["outcome"],
            registry=self.registry,
        )
        self.phases = Histogram(
            "patchwarden_session_phase_seconds",
            "Session steps this process ran, by phase",
            ["phase"],
            buckets=PHASE_BUCKETS,
            registry=self.registry,
        )
        self.rate_limit = Gauge(
            "patchwarden_github_rate_limit_remaining",
            "GitHub API requests left in the window, per installation, as GitHub last said",
            ["installation"],
            registry=self.registry,
        )

    def watch_gates(self, gates: Mapping[int | None, Any]) -> None:
        """Count the GitHub rate-limit gates' pauses and held requests at each scrape."""
        self.registry.register(_Gates(gates))

    async def render(self, store: Store, *, max_age: float = CACHE_SECONDS) -> bytes:
        """The text a scrape gets: the database as read at most ``max_age`` seconds ago
        (scrapes in a burst share one read), and this process's figures."""
        now = time.monotonic()
        if self._database.snapshot is None or now - self._read_at > max_age:
            self._database.snapshot = await store.metrics()
            self._read_at = now
        return generate_latest(self.registry)
