"""Webhook acknowledgement latency of the real ``patchwarden serve`` while its workers are busy.

Run: ``.venv/bin/python bench/webhook_ack.py [--rates 50,200,500] [--seconds 5] [--json]``
(``make bench`` runs exactly that). bench/README.md says what it measures and how to read it.

Three processes besides this one, all on loopback, all stopped on exit (Ctrl-C included):
the local GitHub double (this file, ``--role forge``), ``patchwarden serve`` (the console
script next to this interpreter) and a bare aiohttp handler that only answers 202 (this
file, ``--role bare``). This process is the open-loop load generator.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import hashlib
import hmac
import json
import os
import platform
import secrets
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import aiohttp
from aiohttp import web
from procstat import (
    NOISE_PERCENT,
    announce,
    cpu_seconds,
    die_with_parent,
    machine_busy_seconds,
    pct,
)

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests/fixtures/webhooks/issue_comment/created-fix-command.json"
HOST = "127.0.0.1"
REPO = "octo-org/widgets"
INSTALLATION_ID = 7
APP_ID = 4242
USER = "alice"
PERMISSION_PATH = r"/collaborators/[^/]+/permission$"
POOL_LIMIT = 100
REQUEST_TIMEOUT = 10.0
WARMUP_SECONDS = 1.0
TARGET_RATE = 200
TARGET_P99_MS = 25.0
TARGET_RATIO = 2.0


# --------------------------------------------------------------------------------------
# Child processes: the GitHub double and the bare handler. Each prints one JSON line when
# it listens, answers "stats" lines on stdin, and exits when stdin closes (so it cannot
# outlive the bench even if the bench is killed).
# --------------------------------------------------------------------------------------
async def _serve_stdin(stats: Callable[[], dict[str, Any]]) -> None:
    while True:
        line = await asyncio.to_thread(sys.stdin.readline)
        if not line:
            return
        if line.strip() == "stats":
            announce(stats())


async def _forge_main(args: argparse.Namespace, public_key: str) -> None:
    from app.localforge.forge_server import LocalForge

    forge = LocalForge(
        app_id=APP_ID,
        app_public_key=public_key,
        webhook_secret=None,
    )
    # The bench measures acknowledgements, not rate limiting: keep the quota headers positive.
    forge.state.rate_remaining = 10**9
    url = await forge.start(HOST, 0)
    forge.add_repo(REPO, installation_id=INSTALLATION_ID)
    forge.add_user(REPO, USER, "write")
    issue = forge.open_issue(REPO, "Parser crashes on empty input", author=USER)
    ids = []
    for _ in range(args.comments):
        comment = await forge.post_comment(
            REPO, issue.number, "@patchwarden fix this", author=USER, send=False
        )
        ids.append(comment.id)
    forge.delay(PERMISSION_PATH, args.delay_ms / 1000)

    def stats() -> dict[str, Any]:
        return {
            "permission_lookups": len(forge.calls("GET", PERMISSION_PATH)),
            "reactions": sum(len(forge.comment_reactions(cid)) for cid in ids),
            "tokens_minted": len(forge.calls("POST", r"/access_tokens$")),
            "requests": len(forge.requests),
            "non_2xx": sum(1 for r in forge.requests if r.status >= 300),
        }

    announce({"url": url, "issue": issue.number, "comment_ids": ids})
    try:
        await _serve_stdin(stats)
    finally:
        await forge.stop()


async def _bare_main(_: argparse.Namespace) -> None:
    answered = 0

    async def webhook(request: web.Request) -> web.Response:
        nonlocal answered
        await request.read()
        answered += 1
        return web.Response(status=202)

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application(client_max_size=25 * 1024 * 1024)
    app.router.add_post("/webhooks/github", webhook)
    app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, HOST, 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    announce({"url": f"http://{HOST}:{port}"})
    try:
        await _serve_stdin(lambda: {"answered": answered})
    finally:
        await runner.cleanup()


# --------------------------------------------------------------------------------------
# Process management
# --------------------------------------------------------------------------------------
@dataclass
class Child:
    name: str
    proc: subprocess.Popen[str]
    stop_timeout: float
    log: Path | None = None


@dataclass
class Children:
    items: list[Child] = field(default_factory=list)

    def spawn(
        self,
        name: str,
        cmd: Sequence[str],
        *,
        stop_timeout: float = 3.0,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        log: Path | None = None,
    ) -> Child:
        out: IO[str] | int = subprocess.PIPE
        if log is not None:
            out = log.open("w", encoding="utf-8")
        try:
            proc = subprocess.Popen(
                list(cmd),
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=subprocess.STDOUT if log is not None else None,
                text=True,
                env=env,
                cwd=cwd,
                start_new_session=True,  # Ctrl-C reaches the bench only; it stops the others
                preexec_fn=die_with_parent if sys.platform == "linux" else None,
            )
        finally:
            if log is not None and not isinstance(out, int):
                out.close()
        child = Child(name, proc, stop_timeout, log)
        self.items.append(child)
        return child

    def stop_all(self) -> None:
        for child in reversed(self.items):
            proc = child.proc
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    if proc.stdin is not None:
                        proc.stdin.close()
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
        for child in reversed(self.items):
            try:
                child.proc.wait(timeout=child.stop_timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    child.proc.kill()
                child.proc.wait(timeout=5)
        self.items.clear()


def _read_json_line(child: Child, timeout: float) -> dict[str, Any]:
    proc = child.proc
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else ""
    if not line:
        raise RuntimeError(
            f"{child.name} did not answer within {timeout:.0f}s (exit {proc.poll()})"
        )
    data: dict[str, Any] = json.loads(line)
    return data


def _ask_stats(child: Child) -> dict[str, Any]:
    proc = child.proc
    if proc.poll() is not None or proc.stdin is None:
        return {}
    try:
        proc.stdin.write("stats\n")
        proc.stdin.flush()
        return _read_json_line(child, 5.0)
    except (OSError, RuntimeError, ValueError):
        return {}


class CpuMeter:
    """CPU used by each process during a phase, as a percentage of one core."""

    def __init__(self, pids: dict[str, int | None]) -> None:
        self.pids = pids
        self.start: dict[str, float | None] = {}
        self.t = 0.0

    def __enter__(self) -> CpuMeter:
        self.start = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        self.start["machine"] = machine_busy_seconds()
        self.t = time.perf_counter()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall = time.perf_counter() - self.t

    def percent(self) -> dict[str, float]:
        out = {}
        for name, pid in self.pids.items():
            before, after = self.start.get(name), cpu_seconds(pid)
            if before is not None and after is not None:
                out[name] = round(100 * (after - before) / self.wall, 1)
        before, after = self.start.get("machine"), machine_busy_seconds()
        if before is not None and after is not None:
            out["machine"] = round(100 * (after - before) / self.wall, 1)
            # Everything else on the machine (other users, tests): noise for this bench.
            out["other"] = round(max(out["machine"] - sum(out[n] for n in self.pids), 0.0), 1)
        return out


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _patchwarden_command() -> list[str]:
    script = Path(sys.executable).parent / "patchwarden"
    if script.exists():
        return [str(script), "serve"]
    return [sys.executable, "-m", "app", "serve"]


# --------------------------------------------------------------------------------------
# Load
# --------------------------------------------------------------------------------------
def _base_payload() -> dict[str, Any]:
    text = FIXTURE.read_text(encoding="utf-8")
    text = text.replace("Codertocat/Hello-World", REPO).replace("Hello-World", "widgets")
    text = text.replace("Octocoders", "octo-org")
    payload: dict[str, Any] = json.loads(text)
    payload["action"] = "created"
    payload["installation"]["id"] = INSTALLATION_ID
    repo = payload["repository"]
    repo["full_name"], repo["name"] = REPO, REPO.split("/")[1]
    repo["owner"]["login"], repo["owner"]["type"] = REPO.split("/")[0], "Organization"
    for user in (payload["sender"], payload["comment"]["user"]):
        user["login"], user["type"] = USER, "User"
    payload["comment"]["body"] = "@patchwarden fix this"
    payload["comment"]["author_association"] = "MEMBER"
    payload["issue"]["number"] = 1
    return payload


@dataclass
class Prepared:
    body: bytes
    headers: dict[str, str]


class Deliveries:
    """Signed ``issue_comment`` deliveries, each with its own comment and delivery id."""

    def __init__(self, secret: str, comment_ids: Sequence[int], issue: int) -> None:
        self.secret = secret.encode()
        self.payload = _base_payload()
        self.payload["issue"]["number"] = issue
        self.ids = list(comment_ids)
        self.next = 0

    def take(self, n: int) -> list[Prepared]:
        if self.next + n > len(self.ids):
            raise RuntimeError("ran out of comment ids; the forge made too few comments")
        out = []
        comment = self.payload["comment"]
        for cid in self.ids[self.next : self.next + n]:
            comment["id"] = cid
            comment["node_id"] = f"IC_{cid}"
            comment["html_url"] = f"https://github.test/{REPO}/issues/1#issuecomment-{cid}"
            body = json.dumps(self.payload).encode()
            sig = hmac.new(self.secret, body, hashlib.sha256).hexdigest()
            out.append(
                Prepared(
                    body,
                    {
                        "Content-Type": "application/json",
                        "User-Agent": "GitHub-Hookshot/bench",
                        "X-GitHub-Event": "issue_comment",
                        "X-GitHub-Delivery": str(uuid.uuid4()),
                        "X-GitHub-Hook-ID": "1",
                        "X-Hub-Signature-256": "sha256=" + sig,
                    },
                )
            )
        self.next += n
        return out


@dataclass
class Sample:
    scheduled: float
    sent: float
    done: float
    status: int  # HTTP status, or -1 for a client-side error / timeout


@dataclass
class PhaseResult:
    target: str
    rate: int
    seconds: float
    count: int
    errors: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    service_p50_ms: float
    service_p99_ms: float
    service_max_ms: float
    send_lag_p99_ms: float
    achieved_rate: float
    backlog_after: int | None = None
    error_kinds: dict[str, int] = field(default_factory=dict)
    cpu_percent: dict[str, float] = field(default_factory=dict)  # of one core, per process


def _summarise(
    target: str, rate: int, seconds: float, samples: list[Sample], t0: float
) -> PhaseResult:
    lat = sorted((s.done - s.scheduled) * 1000 for s in samples)
    svc = sorted((s.done - s.sent) * 1000 for s in samples)
    lag = sorted((s.sent - s.scheduled) * 1000 for s in samples)
    kinds: dict[str, int] = {}
    for s in samples:
        if s.status != 202:
            kinds[str(s.status)] = kinds.get(str(s.status), 0) + 1
    last_sent = max((s.sent for s in samples), default=t0)
    span = max(last_sent - t0, 1e-9)
    return PhaseResult(
        target=target,
        rate=rate,
        seconds=seconds,
        count=len(samples),
        errors=sum(kinds.values()),
        p50_ms=pct(lat, 0.50),
        p99_ms=pct(lat, 0.99),
        max_ms=lat[-1] if lat else float("nan"),
        service_p50_ms=pct(svc, 0.50),
        service_p99_ms=pct(svc, 0.99),
        service_max_ms=svc[-1] if svc else float("nan"),
        send_lag_p99_ms=pct(lag, 0.99),
        achieved_rate=(len(samples) - 1) / span if len(samples) > 1 else 0.0,
        error_kinds=kinds,
    )


async def _send(
    session: aiohttp.ClientSession, url: str, req: Prepared, scheduled: float, out: list[Sample]
) -> None:
    sent = time.perf_counter()
    status = -1
    try:
        async with session.post(url, data=req.body, headers=req.headers) as response:
            await response.read()
            status = response.status
    except (aiohttp.ClientError, TimeoutError):
        status = -1
    out.append(Sample(scheduled, sent, time.perf_counter(), status))


async def _open_loop(
    session: aiohttp.ClientSession, url: str, requests: list[Prepared], rate: float
) -> tuple[list[Sample], float]:
    """Send request i at t0 + i/rate whatever happened to the earlier ones."""
    samples: list[Sample] = []
    tasks: set[asyncio.Task[None]] = set()
    gc.collect()
    t0 = time.perf_counter() + 0.05
    i, n = 0, len(requests)
    while i < n:
        now = time.perf_counter()
        while i < n and t0 + i / rate <= now:
            task = asyncio.create_task(_send(session, url, requests[i], t0 + i / rate, samples))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            i += 1
        if i < n:
            await asyncio.sleep(max(t0 + i / rate - time.perf_counter(), 0.0))
    if tasks:
        await asyncio.wait(set(tasks), timeout=REQUEST_TIMEOUT + 1)
    return samples, t0


# --------------------------------------------------------------------------------------
# The server's database, read-only
# --------------------------------------------------------------------------------------
def _ro(url: str) -> Any:
    """A read-only DB-API connection to the server's database (SQLite or PostgreSQL)."""
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        return sqlite3.connect(path.as_uri() + "?mode=ro", uri=True, timeout=5)
    import psycopg

    return psycopg.connect(url, autocommit=True)


def _delivery_backlog(db: str) -> int:
    with contextlib.closing(_ro(db)) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM jobs WHERE kind = 'delivery' AND state IN ('queued', 'running')"
        ).fetchone()
        return int(row[0])


def _server_work(db: str) -> dict[str, Any]:
    with contextlib.closing(_ro(db)) as conn:
        deliveries = conn.execute("SELECT COUNT(*) FROM deliveries").fetchone()[0]
        jobs: dict[str, dict[str, int]] = {}
        for kind, state, count in conn.execute(
            "SELECT kind, state, COUNT(*) FROM jobs WHERE delivery_id NOT LIKE 'history-%'"
            " GROUP BY kind, state ORDER BY kind, state"
        ).fetchall():
            jobs.setdefault(kind, {})[state] = count
        accepted = conn.execute(
            "SELECT COUNT(*) FROM audit WHERE action = 'trigger.accepted'"
        ).fetchone()[0]
        other = dict(
            conn.execute(
                "SELECT action, COUNT(*) FROM audit WHERE action LIKE 'trigger.%'"
                " AND action != 'trigger.accepted' GROUP BY action"
            ).fetchall()
        )
    return {
        "deliveries": deliveries,
        "jobs": jobs,
        "triggers_accepted": accepted,
        "triggers_other": other,
    }


def _seed_history(db: str, n: int) -> None:
    """``n`` finished delivery jobs, as a server that has run for a while has."""
    from app.store import store_for_url

    now = time.time() - 86400
    rows = [
        (
            f"delivery:history-{i}",
            REPO,
            INSTALLATION_ID,
            f"history-{i}",
            json.dumps({"delivery_id": f"history-{i}"}),
            now + i,
            now + i,
            now + i,
        )
        for i in range(n)
    ]

    async def seed() -> None:
        store = store_for_url(db)  # migrated, and the rows in the store's own dialect
        await store.open()
        try:
            await store.database.run(
                lambda: store.database.tx(
                    lambda conn: conn.executemany(
                        "INSERT INTO jobs (kind, queue, idempotency_key, repo, installation_id,"
                        " delivery_id, payload, state, attempts, max_attempts, run_after,"
                        " result, created_at, updated_at) VALUES ('delivery', 'events', ?, ?,"
                        " ?, ?, ?, 'succeeded', 1, 3, ?, '{}', ?, ?)",
                        rows,
                    )
                )
            )
        finally:
            await store.close()

    asyncio.run(seed())


async def _wait_drained(db: str, limit: float) -> int:
    deadline = time.monotonic() + limit
    backlog = await asyncio.to_thread(_delivery_backlog, db)
    while backlog and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        backlog = await asyncio.to_thread(_delivery_backlog, db)
    return backlog


async def _wait_healthy(
    session: aiohttp.ClientSession, url: str, child: Child, limit: float
) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if child.proc.poll() is not None:
            raise RuntimeError(f"{child.name} exited with {child.proc.returncode}")
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            async with session.get(url + "/healthz") as response:
                if response.status == 200:
                    return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{child.name} was not healthy after {limit:.0f}s")


# --------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------
@dataclass
class Setup:
    bare_url: str
    pw_url: str
    db: str  # the server's PATCHWARDEN_DATABASE_URL
    deliveries: Deliveries
    bare_deliveries: Deliveries
    serve: Child
    forge: Child
    bare: Child


async def _measure(args: argparse.Namespace, s: Setup) -> list[PhaseResult]:
    results: list[PhaseResult] = []
    connector = aiohttp.TCPConnector(limit=POOL_LIMIT)
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await _wait_healthy(session, s.bare_url, s.bare, 10)
        await _wait_healthy(session, s.pw_url, s.serve, 20)
        pids: dict[str, int | None] = {
            "serve": s.serve.proc.pid,
            "forge": s.forge.proc.pid,
            "bare": s.bare.proc.pid,
            "bench": None,
        }
        targets = [
            ("bare", s.bare_url, s.bare_deliveries),
            ("patchwarden", s.pw_url, s.deliveries),
        ]
        for name, base, source in targets:
            url = base + "/webhooks/github"
            warm = source.take(int(args.rates[0] * WARMUP_SECONDS))
            _log(args, f"{name}: warm-up {WARMUP_SECONDS:.0f}s at {args.rates[0]}/s")
            await _open_loop(session, url, warm, args.rates[0])
            for rate in args.rates:
                if name == "patchwarden" and not args.no_workers:
                    await _wait_drained(s.db, args.drain_seconds)
                requests = source.take(int(rate * args.seconds))
                _log(args, f"{name}: {rate}/s for {args.seconds:g}s ({len(requests)} deliveries)")
                with CpuMeter(pids) as meter:
                    samples, t0 = await _open_loop(session, url, requests, rate)
                result = _summarise(name, rate, args.seconds, samples, t0)
                result.cpu_percent = meter.percent()
                if name == "patchwarden":
                    result.backlog_after = await asyncio.to_thread(_delivery_backlog, s.db)
                results.append(result)
    return results


def _log(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(f"[bench] {message}", file=sys.stderr, flush=True)


def _loadavg() -> list[float] | None:
    return [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None


def _machine() -> dict[str, Any]:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "nproc": os.cpu_count(),
        "usable_cpus": affinity,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "aiohttp": aiohttp.__version__,
        "sqlite": sqlite3.sqlite_version,
        "loadavg_after": _loadavg(),
    }


def _targets(results: list[PhaseResult]) -> list[dict[str, Any]]:
    pw = next((r for r in results if r.target == "patchwarden" and r.rate == TARGET_RATE), None)
    bare = next((r for r in results if r.target == "bare" and r.rate == TARGET_RATE), None)
    if pw is None or bare is None:
        why = f"not measured (add {TARGET_RATE} to --rates)"
        return [
            {"target": f"p99 <= {TARGET_P99_MS:g} ms at {TARGET_RATE}/s", "met": None, "why": why},
            {"target": f"p99 <= {TARGET_RATIO:g}x bare", "met": None, "why": why},
        ]
    limit = TARGET_RATIO * bare.p99_ms
    return [
        {
            "target": f"p99 <= {TARGET_P99_MS:g} ms at {TARGET_RATE}/s",
            "met": pw.p99_ms <= TARGET_P99_MS and pw.errors == 0,
            "measured_ms": round(pw.p99_ms, 2),
            "limit_ms": TARGET_P99_MS,
        },
        {
            "target": f"p99 <= {TARGET_RATIO:g}x the bare handler's p99 at {TARGET_RATE}/s",
            "met": pw.p99_ms <= limit and pw.errors == 0,
            "measured_ms": round(pw.p99_ms, 2),
            "limit_ms": round(limit, 2),
        },
    ]


def _table(results: list[PhaseResult]) -> str:
    head = (
        f"{'target':<12} {'rate/s':>6} {'sent/s':>7} {'count':>6} {'errors':>6} "
        f"{'p50':>7} {'p99':>7} {'max':>7} | {'svc p50':>7} {'svc p99':>7} "
        f"{'lag p99':>7} {'backlog':>7}  {'cpu% srv/gh/gen/other':<21}"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        backlog = "-" if r.backlog_after is None else str(r.backlog_after)
        cpu = r.cpu_percent
        server_cpu = cpu.get("serve" if r.target == "patchwarden" else "bare")
        cpus = "/".join(
            "?" if v is None else f"{v:.0f}"
            for v in (server_cpu, cpu.get("forge"), cpu.get("bench"), cpu.get("other"))
        )
        lines.append(
            f"{r.target:<12} {r.rate:>6} {r.achieved_rate:>7.0f} {r.count:>6} {r.errors:>6} "
            f"{r.p50_ms:>7.2f} {r.p99_ms:>7.2f} {r.max_ms:>7.2f} | {r.service_p50_ms:>7.2f} "
            f"{r.service_p99_ms:>7.2f} {r.send_lag_p99_ms:>7.2f} {backlog:>7}  {cpus:<21}"
        )
    lines.append(
        "latencies in ms; p50/p99/max from the scheduled send time (no coordinated omission),"
        " svc = from the actual send, lag = generator lateness, backlog = delivery jobs"
        " queued or running when the phase ended; cpu% of one core used by the server under"
        " test / the GitHub double / this load generator / everything else on the machine"
    )
    return "\n".join(lines)


def _report(doc: dict[str, Any], results: list[PhaseResult]) -> str:
    out = [_table(results), ""]
    for t in doc["targets"]:
        verdict = {True: "MET", False: "MISSED", None: "n/a"}[t["met"]]
        detail = f"{t['measured_ms']} ms vs {t['limit_ms']} ms" if "measured_ms" in t else t["why"]
        out.append(f"target: {t['target']}: {verdict} ({detail})")
    work, forge = doc["server_work"], doc["forge"]
    jobs = work["jobs"]
    out.append(
        f"server stored {work['deliveries']} deliveries; delivery jobs {jobs.get('delivery', {})};"
        f" fix jobs {sum(jobs.get('fix', {}).values())}"
        f" (triggers accepted {work['triggers_accepted']}, other {work['triggers_other'] or 0})"
    )
    out.append(
        f"forge saw {forge.get('permission_lookups', '?')} permission lookups"
        f" ({doc['config']['permission_delay_ms']:g} ms each), {forge.get('reactions', '?')}"
        f" reactions, {forge.get('tokens_minted', '?')} token(s) minted,"
        f" {forge.get('non_2xx', '?')} non-2xx answers"
    )
    if doc["server_log_problems"]:
        out.append(f"server log: {len(doc['server_log_problems'])} warning/error line(s), first:")
        out.extend("  " + line for line in doc["server_log_problems"][:3])
    noise = max((r.cpu_percent.get("other", 0.0) for r in results), default=0.0)
    if noise > NOISE_PERCENT:
        out.append(
            f"warning: other processes used up to {noise:.0f}% of a core during a phase;"
            " the figures are noisy, run again on a quiet machine"
        )
    m = doc["machine"]
    out.append(
        f"machine: nproc {m['nproc']} (usable {m['usable_cpus']}), {m['implementation']}"
        f" {m['python']}, aiohttp {m['aiohttp']}, store {doc['config']['database']}"
        f" (SQLite {m['sqlite']}), {m['platform']};"
        f" load average before {m['loadavg_before']}, after {m['loadavg_after']};"
        f" event workers {doc['config']['event_workers']}"
    )
    return "\n".join(out)


def _parse_rates(value: str) -> list[int]:
    try:
        rates = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("--rates takes integers such as 50,200,500") from None
    if not rates or any(r <= 0 for r in rates):
        raise argparse.ArgumentTypeError("--rates must be positive")
    return rates


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rates", type=_parse_rates, default=[50, 200, 500], help="req/s list")
    p.add_argument("--seconds", type=float, default=5.0, help="seconds per rate (default 5)")
    p.add_argument("--json", action="store_true", help="JSON on stdout, the table on stderr")
    p.add_argument("--delay-ms", type=float, default=20.0, help="forge permission-lookup delay")
    p.add_argument("--event-workers", type=int, default=None, help="PATCHWARDEN_EVENT_WORKERS")
    p.add_argument(
        "--no-workers",
        action="store_true",
        help="diagnosis: serve --no-workers (intake alone, nothing drains the queue)",
    )
    p.add_argument(
        "--history",
        type=int,
        default=0,
        help="finished delivery jobs to put in the database first (a server that ran a while)",
    )
    p.add_argument(
        "--database",
        choices=["sqlite", "postgres"],
        default="sqlite",
        help="the server's store: a SQLite file, or a PostgreSQL server this bench starts",
    )
    p.add_argument("--database-url", help=argparse.SUPPRESS)  # set by --database postgres
    p.add_argument("--drain-seconds", type=float, default=3.0, help="max wait between rates")
    p.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument(
        "--role", choices=["bench", "forge", "bare"], default="bench", help=argparse.SUPPRESS
    )
    p.add_argument("--public-key", help=argparse.SUPPRESS)
    p.add_argument("--comments", type=int, default=0, help=argparse.SUPPRESS)
    return p


def _server_problems(log: Path | None) -> list[str]:
    if log is None or not log.exists():
        return []
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return [ln for ln in lines if "WARNING" in ln or "ERROR" in ln or "Traceback" in ln]


def _spawn_all(args: argparse.Namespace, work: Path, children: Children) -> Setup:
    from app.localforge.keys import generate_app_key

    private, public = generate_app_key()
    key_path, pub_path = work / "app.pem", work / "app.pub.pem"
    key_path.write_text(private, encoding="utf-8")
    key_path.chmod(0o600)
    pub_path.write_text(public, encoding="utf-8")
    secret = secrets.token_hex(20)
    needed = int(args.rates[0] * WARMUP_SECONDS) + sum(int(r * args.seconds) for r in args.rates)
    me = [sys.executable, str(Path(__file__).resolve())]
    forge = children.spawn(
        "forge",
        [
            *me,
            "--role=forge",
            f"--public-key={pub_path}",
            f"--comments={needed}",
            f"--delay-ms={args.delay_ms}",
        ],
    )
    bare = children.spawn("bare handler", [*me, "--role=bare"])
    hello = _read_json_line(forge, 30)
    bare_url = str(_read_json_line(bare, 30)["url"])
    forge_url = str(hello["url"])
    loopback = f"http://{HOST}:"
    if not (forge_url.startswith(loopback) and bare_url.startswith(loopback)):
        raise RuntimeError(f"children must listen on {HOST}: {forge_url} {bare_url}")

    db = args.database_url or f"sqlite:///{work / 'patchwarden.db'}"
    if args.history:
        _log(args, f"seeding {args.history} finished delivery jobs")
        _seed_history(db, args.history)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHWARDEN_")}
    env.update(
        PATCHWARDEN_APP_ID=str(APP_ID),
        PATCHWARDEN_PRIVATE_KEY_PATH=str(key_path),
        PATCHWARDEN_WEBHOOK_SECRET=secret,
        PATCHWARDEN_GITHUB_API_URL=forge_url,
        PATCHWARDEN_DATABASE_URL=db,
        PATCHWARDEN_HOST=HOST,
        PATCHWARDEN_PORT=str(port),
        PATCHWARDEN_LOG_LEVEL="WARNING",
        PATCHWARDEN_DRAIN_SECONDS="2",
    )
    if args.event_workers is not None:
        env["PATCHWARDEN_EVENT_WORKERS"] = str(args.event_workers)
    serve = children.spawn(
        "patchwarden serve",
        _patchwarden_command() + (["--no-workers"] if args.no_workers else []),
        env=env,
        cwd=str(work),  # no stray .env file from the checkout
        log=work / "serve.log",
        stop_timeout=10,
    )
    setup = Setup(
        bare_url=bare_url,
        pw_url=f"http://{HOST}:{port}",
        db=db,
        deliveries=Deliveries(secret, hello["comment_ids"], hello["issue"]),
        bare_deliveries=Deliveries(secret, range(10**8, 10**8 + needed), 1),
        serve=serve,
        forge=forge,
        bare=bare,
    )
    _log(args, f"forge {forge_url}, bare {bare_url}, patchwarden {setup.pw_url}")
    return setup


def _run(args: argparse.Namespace, work: Path, children: Children, load_before: Any) -> int:
    setup = _spawn_all(args, work, children)
    try:
        results = asyncio.run(_measure(args, setup))
    except RuntimeError as exc:
        problems = "\n".join(_server_problems(setup.serve.log)[-20:])
        raise RuntimeError(f"{exc}\n{problems}".strip()) from None
    if not args.no_workers:
        _log(args, "waiting for the workers to finish the backlog (10 s at most)")
    left = asyncio.run(_wait_drained(setup.db, 0.0 if args.no_workers else 10.0))
    doc: dict[str, Any] = {
        "benchmark": "webhook_ack",
        "config": {
            "rates": args.rates,
            "seconds": args.seconds,
            "warmup_seconds": WARMUP_SECONDS,
            "permission_delay_ms": args.delay_ms,
            "history_jobs": args.history,
            "database": args.database,
            "event_workers": 0 if args.no_workers else (args.event_workers or "default (4)"),
            "pool_limit": POOL_LIMIT,
            "payload_bytes": len(json.dumps(_base_payload()).encode()),
        },
        "results": [asdict(r) for r in results],
        "targets": _targets(results),
        "server_work": _server_work(setup.db),
        "backlog_after_final_wait": left,
        "forge": _ask_stats(setup.forge),
        "bare": _ask_stats(setup.bare),
        "server_log_problems": _server_problems(setup.serve.log),
        "machine": _machine() | {"loadavg_before": load_before},
    }
    report = _report(doc, results)
    if args.json:
        print(report, file=sys.stderr)
        print(json.dumps(doc, indent=2))
    else:
        print(report)
    if args.check and not all(t["met"] for t in doc["targets"]):
        return 1
    return 0


def run_bench(args: argparse.Namespace) -> int:
    children = Children()
    load_before = _loadavg()
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        with (
            tempfile.TemporaryDirectory(prefix="patchwarden-bench-") as tmp,
            contextlib.ExitStack() as stack,
        ):
            if args.database == "postgres" and not args.database_url:
                sys.path.insert(0, str(ROOT))
                from tests.postgres_server import postgres_server

                server = stack.enter_context(postgres_server())
                args.database_url = server.create_database("bench")
            try:
                return _run(args, Path(tmp), children, load_before)
            finally:
                children.stop_all()  # before the folder (and the database) goes away
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.role == "forge":
        asyncio.run(_forge_main(args, Path(args.public_key).read_text(encoding="utf-8")))
        return 0
    if args.role == "bare":
        asyncio.run(_bare_main(args))
        return 0
    try:
        return run_bench(args)
    except KeyboardInterrupt:
        print("interrupted; every process the bench started was stopped", file=sys.stderr)
        return 130
    except RuntimeError as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
