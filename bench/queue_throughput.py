"""Jobs claimed per second by 1, 4 and 16 workers, on SQLite and on PostgreSQL.

Run: ``.venv/bin/python bench/queue_throughput.py [--jobs 1000] [--workers 1,4,16]
[--databases sqlite,postgres] [--json]`` (``make bench`` runs it with the defaults).

Each worker is a process of its own with its own store, as ``patchwarden worker``
processes are: it claims a job (``Store.claim``, the lease taken in the database),
completes it at once (a no-op job) and claims the next, until the queue is empty. So the
figures are the queue's own cost: what the database and its locking allow, not what
jobs do. The jobs are queued first, in one transaction; the clock starts when every
worker is connected and ready. Claim latency is one ``claim`` call, as its worker saw
it. PostgreSQL is a server this bench starts (``tests/postgres_server.py``: Debian's
``postgresql``, on a free loopback port, ``fsync=off`` as for tests); SQLite is a file
in a temporary folder (WAL, ``synchronous=NORMAL``, as ``serve`` uses it).

The bench checks that every job was claimed exactly once: a database that handed one
job to two workers fails the run, whatever its speed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from procstat import (
    OtherCpu,
    common_options,
    finish,
    guarded,
    loadavg,
    log,
    machine,
    noise_warning,
    pct,
)

ROOT = Path(__file__).resolve().parent.parent
QUEUE, KIND = "bench", "noop"
LEASE_SECONDS = 60.0


@dataclass
class Result:
    database: str
    workers: int
    jobs: int
    seconds: float
    claims_per_second: float
    claim_p50_ms: float
    claim_p99_ms: float
    claim_max_ms: float
    empty_claims: int


def _worker(url: str, name: str, ready: Any, go: Any, out: Any) -> None:
    """One worker process: claim and complete until nothing is left; send what it saw."""
    sys.path.insert(0, str(ROOT))
    from app.store import store_for_url

    async def run() -> None:
        store = store_for_url(url)
        await store.open()
        await store.ping()
        ready.release()
        await asyncio.to_thread(go.wait)
        claimed: list[int] = []
        latencies: list[float] = []
        while True:
            t0 = time.perf_counter()
            job = await store.queue.claim(
                queue=QUEUE, kinds=[KIND], owner=name, lease_seconds=LEASE_SECONDS
            )
            latencies.append(time.perf_counter() - t0)
            if job is None:
                break
            claimed.append(job.id)
            if not await store.queue.complete(job.id, owner=name, result={}):
                raise RuntimeError(f"{name} lost the lease of job {job.id}")
        await store.close()
        out.put({"name": name, "claimed": claimed, "latencies": latencies, "end": time.time()})

    asyncio.run(run())


def _fill(url: str, jobs: int) -> None:
    sys.path.insert(0, str(ROOT))
    from app.store import Delivery, NewJob, store_for_url

    async def fill() -> None:
        store = store_for_url(url)
        await store.open()
        new = [NewJob(kind=KIND, key=f"noop:{i}", queue=QUEUE, payload={}) for i in range(jobs)]
        delivery = Delivery("bench", "bench", "bench", None, None, None, None, {}, time.time())
        await store.journal.record_delivery(delivery, jobs=new)
        await store.close()

    asyncio.run(fill())


def _measure(database: str, url: str, workers: int, jobs: int) -> Result:
    _fill(url, jobs)
    ctx = multiprocessing.get_context("spawn")
    ready, go, out = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(url, f"w{i}", ready, go, out), daemon=True)
        for i in range(workers)
    ]
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            if not ready.acquire(timeout=60):
                raise RuntimeError("a worker did not connect within 60 s")
        start = time.time()
        go.set()
        reports = [out.get(timeout=600) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
    claimed = [job for r in reports for job in r["claimed"]]
    if sorted(claimed) != sorted(set(claimed)) or len(claimed) != jobs:
        twice = len(claimed) - len(set(claimed))
        raise RuntimeError(
            f"{database}, {workers} workers: {len(set(claimed))} of {jobs} jobs claimed,"
            f" {twice} claimed twice"
        )
    latencies = sorted(x for r in reports for x in r["latencies"])
    seconds = max(r["end"] for r in reports) - start
    return Result(
        database=database,
        workers=workers,
        jobs=jobs,
        seconds=round(seconds, 3),
        claims_per_second=round(jobs / seconds, 1),
        claim_p50_ms=round(1000 * pct(latencies, 0.50), 2),
        claim_p99_ms=round(1000 * pct(latencies, 0.99), 2),
        claim_max_ms=round(1000 * latencies[-1], 2),
        empty_claims=len(latencies) - jobs,
    )


def _table(results: Sequence[Result]) -> str:
    lines = [
        f"{'database':<10} {'workers':>7} {'jobs':>6} {'seconds':>8} {'claims/s':>9}"
        f" {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}",
        "-" * 69,
    ]
    for r in results:
        lines.append(
            f"{r.database:<10} {r.workers:>7} {r.jobs:>6} {r.seconds:>8.2f}"
            f" {r.claims_per_second:>9.1f} {r.claim_p50_ms:>7.2f} {r.claim_p99_ms:>7.2f}"
            f" {r.claim_max_ms:>7.2f}"
        )
    lines.append(
        "claims/s: jobs / time from the start signal to the last worker done; p50/p99/max:"
        " one claim call as its worker saw it (the last, empty claim of each worker included)"
    )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    load_before = loadavg()
    others = OtherCpu()
    results: list[Result] = []
    facts: dict[str, Any] = {"sqlite": sqlite3.sqlite_version}
    with (
        tempfile.TemporaryDirectory(prefix="patchwarden-queue-") as tmp,
        contextlib.ExitStack() as stack,
    ):
        server = None
        if "postgres" in args.databases:
            sys.path.insert(0, str(ROOT))
            from tests.postgres_server import postgres_server

            log(args, "starting PostgreSQL")
            server = stack.enter_context(postgres_server())
            facts["postgres"] = server.bin.parent.name
        for database in args.databases:
            for n, workers in enumerate(args.workers):
                if database == "sqlite":
                    url = f"sqlite:///{Path(tmp) / f'q{n}.db'}"
                else:
                    assert server is not None
                    url = server.create_database("queue")
                log(args, f"{database}: {workers} worker(s), {args.jobs} jobs")
                results.append(_measure(database, url, workers, args.jobs))
    doc = {
        "benchmark": "queue_throughput",
        "config": {"jobs": args.jobs, "workers": args.workers, "databases": args.databases},
        "results": [asdict(r) for r in results],
        "target": {"met": True, "what": "every job claimed exactly once (no speed target)"},
        "machine": machine(load_before, others, **facts),
    }
    report = "\n".join([_table(results), *noise_warning(doc)])
    return finish(doc, report, args)


def _ints(value: str) -> list[int]:
    return [int(v) for v in value.split(",") if v.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = common_options(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--jobs", type=int, default=1000, help="no-op jobs per run (1000)")
    parser.add_argument("--workers", type=_ints, default=[1, 4, 16], help="worker counts")
    parser.add_argument(
        "--databases",
        type=lambda v: [d for d in v.split(",") if d],
        default=["sqlite", "postgres"],
        help="sqlite,postgres",
    )
    args = parser.parse_args(argv)
    return guarded(run, args)


if __name__ == "__main__":
    raise SystemExit(main())
