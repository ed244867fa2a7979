"""What unsigned traffic costs `patchwarden serve` in memory: many large uploads at once.

Run: ``.venv/bin/python bench/upload_memory.py [--uploads 20] [--mib 24] [--json] [--check]``

The body of a webhook is read before its signature can be checked, so an attacker who
knows the URL (and not the secret) can make the server read. Intake bounds that
(``app/server.py``: ``_read``): a request without ``X-Hub-Signature-256`` is refused
before its body is read; bodies over 1 MiB (or of unknown length) are read at most
``MAX_LARGE_READS`` (2) at a time, the others wait with their bytes in the socket, and
after ``LARGE_READ_WAIT`` (30 s) get a 503.

The real console script runs in a temporary folder with its own settings (a SQLite
file, a new App key, a random webhook secret; ``--no-workers``: nothing here needs
GitHub). Then, each phase ``--uploads`` (20) concurrent uploads of ``--mib`` (24) MiB
each, sent as fast as loopback takes them:

1. **no signature**: no ``X-Hub-Signature-256`` header;
2. **wrong signature**: a well-formed ``sha256=`` header that does not match, so the
   body must be read before it is refused — the case the bound is for;
3. **unknown length**: chunked uploads (no ``Content-Length``) with a wrong signature;
4. **gzip**: the same body gzipped (24 KiB that would unpack to 24 MiB), with
   ``Content-Encoding: gzip`` and a wrong signature.

Meanwhile a correctly signed ``ping`` is sent every 100 ms: its answer time shows
whether small deliveries still get in. The server's resident memory is read from
``/proc/<pid>/status`` every 5 ms (``VmRSS``) and its peak (``VmHWM``, reset through
``/proc/<pid>/clear_refs`` before each phase where the kernel allows it).

Target: the peak resident memory of every phase at most 150 MiB above the idle server
before the first phase (20 uploads of 24 MiB would be 480 MiB of bodies alone; the issue
measured 85 → 861 MiB before the bound), every upload answered 401, 415 or 503 (a
connection cut before the answer counts as a miss), and every signed ping answered 202
within 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import hashlib
import hmac
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
from procstat import OtherCpu, common_options, finish, guarded, loadavg, log, machine

HOST = "127.0.0.1"
TARGET_GROWTH_MIB = 150
TARGET_PING_SECONDS = 1.0
CHUNK = 256 * 1024


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {field}")


def _reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


async def _chunks(size: int) -> AsyncIterator[bytes]:
    block = b"{" + b" " * (CHUNK - 1)
    sent = 0
    while sent < size:
        part = block[: min(CHUNK, size - sent)]
        sent += len(part)
        yield part


async def _upload(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    *,
    signature: str | None,
    chunked: bool,
    gzipped: bool,
) -> tuple[int, float]:
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": str(uuid.uuid4()),
    }
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    if gzipped:
        headers["Content-Encoding"] = "gzip"
    started = time.monotonic()
    data: Any = _chunks(len(body)) if chunked else body
    try:
        async with session.post(url, data=data, headers=headers) as response:
            await response.read()
            return response.status, time.monotonic() - started
    except (aiohttp.ClientError, ConnectionError):
        # the server may answer and close before the whole body is sent
        return -1, time.monotonic() - started


async def _pings(
    session: aiohttp.ClientSession, url: str, secret: str, stop: asyncio.Event
) -> list[tuple[int, float]]:
    got = []
    while not stop.is_set():
        body = json.dumps({"zen": "small deliveries still get in", "hook_id": 1}).encode()
        headers = {
            "Content-Type": "application/json",
            "X-GitHub-Event": "ping",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": _sign(body, secret),
        }
        started = time.monotonic()
        async with session.post(url, data=body, headers=headers) as response:
            await response.read()
            got.append((response.status, time.monotonic() - started))
        await asyncio.sleep(0.1)
    return got


async def _sample_rss(pid: int, stop: asyncio.Event) -> int:
    peak = 0
    while not stop.is_set():
        peak = max(peak, _status_kib(pid, "VmRSS"))
        await asyncio.sleep(0.005)
    return peak


async def _phase(
    args: argparse.Namespace, pid: int, url: str, secret: str, name: str
) -> dict[str, Any]:
    size = args.mib * 1024 * 1024
    body = b"{" + b" " * (size - 2) + b"}"
    if name == "gzip":
        body = gzip.compress(body)
    signature = None if name == "no signature" else "sha256=" + "0" * 64
    reset = _reset_peak(pid)
    idle_kib = _status_kib(pid, "VmRSS")
    stop = asyncio.Event()
    connector = aiohttp.TCPConnector(limit=args.uploads + 4)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        sampler = asyncio.create_task(_sample_rss(pid, stop))
        pinger = asyncio.create_task(_pings(session, url, secret, stop))
        started = time.monotonic()
        uploads = await asyncio.gather(
            *(
                _upload(
                    session,
                    url,
                    body,
                    signature=signature,
                    chunked=name == "unknown length",
                    gzipped=name == "gzip",
                )
                for _ in range(args.uploads)
            )
        )
        wall = time.monotonic() - started
        await asyncio.sleep(0.2)  # one more ping after the uploads
        stop.set()
        sampled_kib = await sampler
        pings = await pinger
    hwm_kib = _status_kib(pid, "VmHWM") if reset else 0
    peak_kib = max(sampled_kib, hwm_kib)
    ping_times = sorted(t for _, t in pings)
    return {
        "phase": name,
        "uploads": args.uploads,
        "mib_each": args.mib,
        "idle_mib": round(idle_kib / 1024, 1),
        "peak_mib": round(peak_kib / 1024, 1),
        "growth_mib": round((peak_kib - idle_kib) / 1024, 1),
        "peak_from": "VmHWM" if reset and hwm_kib >= sampled_kib else "VmRSS every 5 ms",
        "answers": dict(Counter(str(s) for s, _ in uploads)),
        "upload_seconds": {
            "median": round(statistics.median(t for _, t in uploads), 3),
            "max": round(max(t for _, t in uploads), 3),
        },
        "wall_seconds": round(wall, 2),
        "pings": len(pings),
        "pings_ok": sum(1 for s, _ in pings if s == 202),
        "ping_max_seconds": round(ping_times[-1], 3) if ping_times else None,
    }


def _start(work: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    from app.localforge.keys import generate_app_key

    private, _ = generate_app_key()
    key = work / "app.pem"
    key.write_text(private, encoding="utf-8")
    key.chmod(0o600)
    secret = secrets.token_hex(20)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHWARDEN_")}
    env.update(
        PATCHWARDEN_APP_ID="4242",
        PATCHWARDEN_PRIVATE_KEY_PATH=str(key),
        PATCHWARDEN_WEBHOOK_SECRET=secret,
        PATCHWARDEN_GITHUB_API_URL=f"http://{HOST}:9",  # never called: --no-workers
        PATCHWARDEN_DATABASE_URL=f"sqlite:///{work / 'patchwarden.db'}",
        PATCHWARDEN_HOST=HOST,
        PATCHWARDEN_PORT=str(port),
        PATCHWARDEN_LOG_LEVEL="WARNING",
    )
    script = Path(sys.executable).parent / "patchwarden"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "app"]
    with (work / "serve.log").open("wb") as out:
        proc = subprocess.Popen(
            [*command, "serve", "--no-workers"],
            env=env,
            cwd=str(work),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return proc, f"http://{HOST}:{port}", secret


async def _healthy(url: str, proc: subprocess.Popen[bytes], limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"patchwarden serve exited with {proc.returncode}")
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(url + "/healthz") as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"patchwarden serve was not healthy after {limit:.0f} s")


async def _measure(args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    proc, url, secret = _start(work)
    try:
        await _healthy(url, proc)
        phases = []
        for name in ("no signature", "wrong signature", "unknown length", "gzip"):
            log(args, f"{name}: {args.uploads} uploads of {args.mib} MiB at once")
            phases.append(await _phase(args, proc.pid, url + "/webhooks/github", secret, name))
        return phases
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _met(phase: dict[str, Any], baseline_mib: float) -> bool:
    answers = set(phase["answers"])
    return (
        phase["peak_mib"] - baseline_mib <= TARGET_GROWTH_MIB
        and answers <= {"401", "415", "503"}
        and phase["pings"] > 0
        and phase["pings_ok"] == phase["pings"]
        and (phase["ping_max_seconds"] or 0) <= TARGET_PING_SECONDS
    )


def _report(doc: dict[str, Any]) -> str:
    lines = [
        f"patchwarden serve under {doc['phases'][0]['uploads']} concurrent unsigned uploads of "
        f"{doc['phases'][0]['mib_each']} MiB each",
        "",
        "| phase | idle MiB | peak MiB | growth MiB | answers | slowest upload s | pings ok |"
        " slowest ping s |",
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for p in doc["phases"]:
        answers = ", ".join(f"{k} x{v}" for k, v in sorted(p["answers"].items()))
        lines.append(
            f"| {p['phase']} | {p['idle_mib']} | {p['peak_mib']} | {p['growth_mib']} | "
            f"{answers} | {p['upload_seconds']['max']} | {p['pings_ok']}/{p['pings']} | "
            f"{p['ping_max_seconds']} |"
        )
    t = doc["target"]
    lines += ["", f"target: {t['description']}: {t['value']} — {'MET' if t['met'] else 'MISSED'}"]
    return "\n".join(lines)


def run_bench(args: argparse.Namespace) -> int:
    if not Path("/proc/self/status").exists():
        raise RuntimeError("this benchmark reads /proc: Linux only")
    load_before = loadavg()
    others = OtherCpu()
    with tempfile.TemporaryDirectory(prefix="pw-upload-bench-") as tmp:
        phases = asyncio.run(_measure(args, Path(tmp)))
    baseline = phases[0]["idle_mib"]
    worst = round(max(p["peak_mib"] for p in phases) - baseline, 1)
    doc = {
        "bench": "upload_memory",
        "phases": phases,
        "target": {
            "description": f"peak resident memory ≤ {TARGET_GROWTH_MIB} MiB above the idle "
            f"server, uploads answered 401/415/503, signed pings 202 within "
            f"{TARGET_PING_SECONDS:g} s",
            "value": f"worst peak {worst} MiB above the idle {baseline} MiB",
            "met": all(_met(p, baseline) for p in phases),
        },
        "machine": machine(load_before, others, aiohttp=aiohttp.__version__),
    }
    return finish(doc, _report(doc), args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uploads", type=int, default=20, help="concurrent uploads per phase")
    parser.add_argument("--mib", type=int, default=24, help="size of each upload (MiB, < 25)")
    return common_options(parser)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not 1 <= args.mib < 25 or args.uploads < 1:
        print("--mib must be 1 to 24 (GitHub's cap is 25 MB) and --uploads at least 1")
        return 2
    return guarded(run_bench, args)


if __name__ == "__main__":
    sys.exit(main())
