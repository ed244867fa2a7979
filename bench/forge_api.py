"""REST and git latency of LocalForge, the local GitHub double that every test talks to.

Run: ``.venv/bin/python bench/forge_api.py [--requests 300] [--json]`` (``make bench`` runs
it after webhook_ack.py). bench/README.md says what it measures and how to read it.

Two processes besides this one, on loopback, both stopped on exit (Ctrl-C included):
LocalForge with its contract checks as shipped (this file, ``--role forge``), and a second
one whose checks are monkeypatched away inside that process only (``--checks off``); each
phase runs against the first and right after against the second, so the difference is the
cost of checking. This process is the client: Patchwarden's own
``GitHubApp(...).installation(7)`` (gidgethub over aiohttp) for REST, the git CLI for git.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import functools
import gc
import json
import os
import platform
import random
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import gidgethub
from procstat import (
    NOISE_PERCENT,
    announce,
    cpu_seconds,
    die_with_parent,
    machine_busy_seconds,
    pct,
)

from app.git import Remote, git_env
from app.github.client import GitHubApp, GitHubClient
from app.localforge.bare_repo import BareRepo
from app.localforge.contract import RestContract, WebhookContract
from app.localforge.forge_server import LocalForge
from app.localforge.keys import generate_app_key

HOST = "127.0.0.1"
REPO = "octo-org/widgets"
INSTALLATION_ID = 7
APP_ID = 4242
USER = "alice"
CLIENTS = 10  # concurrent callers in the "conc" rows
WARMUP = 20  # requests per operation before measuring (token, validators, connections)
WARMUP_SECONDS = 1.0  # ... or fewer, if they take longer than this
LISTED_COMMENTS = 10  # comments on the issue whose comments are listed (one page)
REPO_FILES = 200
REPO_BYTES = 2 * 1024 * 1024
REPO_COMMITS = 25  # history, so a new branch's push event lists its 20 latest commits
GIT_RUNS = 5
REQUEST_TIMEOUT = 10.0
TARGET_P99_MS = 25.0  # REST, sequential, contract checks on, every operation
TARGET_CLONE_S = 1.0  # median of GIT_RUNS
TARGET_PUSH_S = 1.0  # median of GIT_RUNS


# --------------------------------------------------------------------------------------
# The forge process. It prints one JSON line when it listens, answers "reset", "stats" and
# "settle" lines on stdin, and stops when stdin closes or on SIGTERM.
# --------------------------------------------------------------------------------------
class Meters:
    """Time spent in the forge's three contract checks and in its git processes.

    Patches the classes inside the forge process only (app code is untouched). With
    ``checks=False`` the check wrappers answer ``[]`` without checking: the "checks off"
    forge."""

    CHECKS = ("request", "response", "webhook")

    def __init__(self, *, checks: bool) -> None:
        self.seconds: dict[str, float] = {}  # request | response | webhook | git
        self.calls: dict[str, int] = {}
        self._patch(RestContract, "request_problems", "request", skip=not checks)
        self._patch(RestContract, "response_problems", "response", skip=not checks)
        self._patch(WebhookContract, "problems", "webhook", skip=not checks)
        self._patch(BareRepo, "_git", "git", skip=False)

    def _patch(self, cls: type, name: str, kind: str, *, skip: bool) -> None:
        original = getattr(cls, name)
        seconds, calls = self.seconds, self.calls

        def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return [] if skip else original(self, *args, **kwargs)
            finally:
                seconds[kind] = seconds.get(kind, 0.0) + time.perf_counter() - t
                calls[kind] = calls.get(kind, 0) + 1

        setattr(cls, name, timed)

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()


def _history(rng: random.Random) -> list[dict[str, str]]:
    """REPO_COMMITS commits that end with REPO_FILES text files, REPO_BYTES in all."""
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(3, 10)))
        for _ in range(600)
    ]
    per_file = REPO_BYTES // REPO_FILES

    def text(n: int) -> str:
        lines, size = [], 0
        while size < per_file:
            indent = "    " * rng.randint(0, 3)
            line = f"{indent}{' '.join(rng.choices(words, k=rng.randint(3, 12)))}\n"
            lines.append(line)
            size += len(line)
        return f"# module {n}\n" + "".join(lines)

    paths = [f"src/pkg{n % 8}/mod_{n:03d}.py" for n in range(REPO_FILES - 1)] + ["README.md"]
    commits: list[dict[str, str]] = [{p: text(i) for i, p in enumerate(paths[:100])}]
    rest = paths[100:]
    step = -(-len(rest) // (REPO_COMMITS - 1))
    for i in range(REPO_COMMITS - 1):
        files = {p: text(100 + i) for p in rest[i * step : (i + 1) * step]}
        files |= {p: text(i) for p in rng.sample(paths[:100], 2)}  # edits, like real history
        commits.append(files)
    return commits


def _make_source(work: Path) -> Path:
    """A git work tree with the bench repository's history (deterministic)."""
    source = work / "source"
    env = _git_env(work / "home", token=None)
    _git(env, "init", "-q", "-b", "main", str(source))
    for n, files in enumerate(_history(random.Random(7)), 1):
        for path, content in files.items():
            target = source / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        _git(env, "add", "-A", cwd=source)
        _git(env, "commit", "-q", "-m", f"Change {n}", cwd=source)
    return source


async def _forge_main(args: argparse.Namespace, public_key: str) -> None:
    meters = Meters(checks=args.checks == "on")
    forge = LocalForge(
        app_id=APP_ID,
        app_public_key=public_key,
        webhook_secret=None,  # no webhook_url either: deliveries are recorded, not sent
        root=Path(args.root),  # inside the bench's temporary folder
    )
    forge.state.rate_remaining = 10**9  # keep the quota headers positive
    url = await forge.start(HOST, 0)
    repo = forge.add_repo(REPO, installation_id=INSTALLATION_ID, source=Path(args.source))
    forge.add_user(REPO, USER, "write")
    main_sha = repo.git.resolve("refs/heads/main")
    assert main_sha is not None
    repo.git.create_ref("refs/heads/fix-parser", main_sha)
    await forge.push(
        REPO,
        {
            "src/pkg0/mod_000.py": "def parse(text):\n    return text.split() if text else []\n",
            "src/pkg1/mod_001.py": None,
            "tests/test_parse.py": "from pkg0.mod_000 import parse\n\n"
            "def test_empty():\n    assert parse('') == []\n",
        },
        author=USER,
        branch="fix-parser",
        message="Fix the parser on empty input",
    )
    pull = await forge.open_pull(
        REPO, head="fix-parser", base=None, title="Fix the parser on empty input", author=USER
    )
    listed = forge.open_issue(REPO, "Parser crashes on empty input", author=USER)
    for n in range(LISTED_COMMENTS):
        await forge.post_comment(
            REPO, listed.number, f"Seen here too ({n})", author=USER, send=False
        )
    commented = forge.open_issue(REPO, "Where the bench posts its comments", author=USER)
    await forge.hooks.flush()
    first_request = len(forge.requests)

    def stats() -> dict[str, Any]:
        seen = forge.requests[first_request:]
        return {
            "seconds": dict(meters.seconds),
            "calls": dict(meters.calls),
            "requests": len(seen),
            "non_2xx": sum(1 for r in seen if r.status >= 300 and r.operation != "git"),
            "violations": [str(v) for v in forge.violations],
            "deliveries": len(forge.deliveries),
        }

    profiler = cProfile.Profile() if args.profile_out else None
    announce(
        {"url": url, "pull": pull.number, "listed": listed.number, "commented": commented.number}
    )
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        if profiler is not None:
            profiler.enable()
        while line := await asyncio.to_thread(sys.stdin.readline):
            if line.strip() == "reset":
                meters.reset()
                announce({"ok": True})
            elif line.strip() == "stats":
                announce(stats())
            elif line.strip() == "settle":  # what a test's forge.settle() waits for
                await forge.settle(within=30.0)
                announce({"ok": True})
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile_out)
        await forge.stop()


# --------------------------------------------------------------------------------------
# Process plumbing
# --------------------------------------------------------------------------------------
class Forge:
    """One forge subprocess, talked to over its stdin and stdout."""

    def __init__(self, cmd: Sequence[str]) -> None:
        self.proc = subprocess.Popen(
            list(cmd),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,  # Ctrl-C reaches the bench only; it stops the forge
            preexec_fn=die_with_parent if sys.platform == "linux" else None,
        )

    def read(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            raise RuntimeError(
                f"the forge did not answer within {timeout:.0f}s (exit {self.proc.poll()})"
            )
        data: dict[str, Any] = json.loads(line)
        return data

    def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.read(10.0)

    def stop(self) -> None:
        """Close stdin (the forge stops by itself), then SIGTERM, then SIGKILL."""
        proc = self.proc
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        for sig, wait in ((None, 5.0), (signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
            if sig is not None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(sig)
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        if proc.stdout is not None:
            proc.stdout.close()


class CpuMeter:
    """CPU used during a phase by the forge, this client and everything else (% of a core)."""

    def __init__(self, forge_pid: int) -> None:
        self.pids: dict[str, int | None] = {"forge": forge_pid, "bench": None}

    def __enter__(self) -> CpuMeter:
        self.start = {name: cpu_seconds(pid, children=True) for name, pid in self.pids.items()}
        self.start["machine"] = machine_busy_seconds()
        self.t = time.perf_counter()
        return self

    def __exit__(self, *_: object) -> None:
        wall = time.perf_counter() - self.t
        now = {name: cpu_seconds(pid, children=True) for name, pid in self.pids.items()}
        now["machine"] = machine_busy_seconds()
        self.percent: dict[str, float] = {}
        for name, after in now.items():
            before = self.start.get(name)
            if before is not None and after is not None:
                self.percent[name] = round(100 * (after - before) / wall, 1)
        if "machine" in self.percent:
            mine = self.percent.get("forge", 0.0) + self.percent.get("bench", 0.0)
            self.percent["other"] = round(max(self.percent["machine"] - mine, 0.0), 1)


# --------------------------------------------------------------------------------------
# REST
# --------------------------------------------------------------------------------------
@dataclass
class RestResult:
    operation: str
    checks: str  # "on" | "off"
    mode: str  # "seq" | "conc"
    clients: int
    count: int
    errors: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    requests_per_s: float
    checks_ms: dict[str, float]  # mean per request inside request / response / webhook checks
    git_processes: float  # git processes the forge ran per request (BareRepo._git)
    git_ms: float  # mean per request spent waiting for them
    cpu_percent: dict[str, float] = field(default_factory=dict)
    error_kinds: dict[str, int] = field(default_factory=dict)


Call = Callable[[], Awaitable[Any]]


def _operations(gh: GitHubClient, hello: dict[str, Any]) -> dict[str, Call]:
    """The four operations, by OpenAPI operationId, as Patchwarden's client calls them."""
    api = f"/repos/{REPO}"
    body = {"body": "<!-- patchwarden:job=bench -->\nWorking on it."}
    return {
        "pulls/get": lambda: gh.getitem(f"{api}/pulls/{hello['pull']}"),
        "issues/list-comments": lambda: gh.getitem(f"{api}/issues/{hello['listed']}/comments"),
        "issues/create-comment": lambda: gh.post(
            f"{api}/issues/{hello['commented']}/comments", data=body
        ),
        "repos/get-collaborator-permission-level": lambda: gh.getitem(
            f"{api}/collaborators/{USER}/permission"
        ),
    }


async def _closed_loop(
    call: Call, n: int, clients: int, max_seconds: float = float("inf")
) -> tuple[list[float], float, dict[str, int]]:
    """``n`` calls by ``clients`` callers, each sending its next call when the last returns;
    no new call after ``max_seconds``."""
    latencies: list[float] = []
    errors: dict[str, int] = {}
    left = n

    async def caller() -> None:
        nonlocal left
        while left > 0 and time.perf_counter() - t0 < max_seconds:
            left -= 1
            t = time.perf_counter()
            try:
                await call()
            except (gidgethub.GitHubException, aiohttp.ClientError, TimeoutError) as exc:
                kind = type(exc).__name__
                errors[kind] = errors.get(kind, 0) + 1
            latencies.append((time.perf_counter() - t) * 1000)

    gc.collect()
    t0 = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(clients)))
    return latencies, time.perf_counter() - t0, errors


async def _phase(
    args: argparse.Namespace, forge: Forge, call: Call, name: str, checks: str, clients: int
) -> RestResult:
    mode = "seq" if clients == 1 else "conc"
    _log(args, f"{name} {mode}, checks {checks}")
    forge.ask("reset")
    with CpuMeter(forge.proc.pid) as meter:
        lat, wall, errors = await _closed_loop(call, args.requests, clients, args.max_seconds)
    seen = forge.ask("stats")
    lat.sort()
    return RestResult(
        operation=name,
        checks=checks,
        mode=mode,
        clients=clients,
        count=len(lat),
        errors=sum(errors.values()),
        p50_ms=pct(lat, 0.50),
        p99_ms=pct(lat, 0.99),
        max_ms=lat[-1],
        requests_per_s=len(lat) / wall,
        checks_ms={k: 1000 * seen["seconds"].get(k, 0.0) / len(lat) for k in Meters.CHECKS},
        git_processes=seen["calls"].get("git", 0) / len(lat),
        git_ms=1000 * seen["seconds"].get("git", 0.0) / len(lat),
        cpu_percent=meter.percent,
        error_kinds=errors,
    )


async def _rest(
    args: argparse.Namespace, forges: dict[str, Forge], hellos: dict[str, Any], private_key: str
) -> tuple[list[RestResult], str]:
    """Each operation sequentially, then with CLIENTS callers, each time against the checks-on
    forge and right after against the checks-off one (so both see the same machine). Returns
    the results and a fresh installation token of the checks-on forge (for the git phase)."""
    results: list[RestResult] = []
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        apps = {
            checks: GitHubApp(
                app_id=APP_ID, private_key=private_key, api_url=hello["url"], session=session
            )
            for checks, hello in hellos.items()
        }
        calls = {
            checks: _operations(app.installation(INSTALLATION_ID), hellos[checks])
            for checks, app in apps.items()
        }
        for name in calls["on"]:
            for checks in forges:
                _, _, errors = await _closed_loop(
                    calls[checks][name], WARMUP, CLIENTS, WARMUP_SECONDS
                )
                if errors:
                    raise RuntimeError(f"{name} fails during warm-up (checks {checks}): {errors}")
            for clients in (1, CLIENTS):
                for checks, forge in forges.items():
                    call = calls[checks][name]
                    results.append(await _phase(args, forge, call, name, checks, clients))
        token = await apps["on"].auth.installation_token(INSTALLATION_ID)
    return results, token


# --------------------------------------------------------------------------------------
# git over smart HTTP
# --------------------------------------------------------------------------------------
def _git_env(home: Path, *, token: str | None = None, url: str = "") -> dict[str, str]:
    """Patchwarden's own git environment (app/git.py: the token in an http.extraHeader
    for ``url``'s origin, never in the URL or argv), with a fixed author."""
    env = git_env(home, remote=Remote(REPO, url, token) if token is not None else None)
    return env | {
        "GIT_AUTHOR_NAME": "Patchwarden",
        "GIT_AUTHOR_EMAIL": "bot@example.invalid",
        "GIT_COMMITTER_NAME": "Patchwarden",
        "GIT_COMMITTER_EMAIL": "bot@example.invalid",
    }


@functools.cache
def _git_exe() -> str:
    found = shutil.which("git")
    if found is None:
        raise RuntimeError("git is not installed (sudo apt-get install git)")
    return found


def _git(env: dict[str, str], *args: str, cwd: Path | None = None) -> tuple[float, str]:
    """Run git; return its wall time in seconds and its output."""
    t = time.perf_counter()
    proc = subprocess.run(
        [_git_exe(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed, proc.stdout


def _git_phase(
    args: argparse.Namespace, work: Path, forge: Forge, url: str, token: str
) -> dict[str, Any]:
    remote = f"{url}/{REPO}.git"
    env = _git_env(work / "home", token=token, url=remote)
    clones = []
    for n in range(GIT_RUNS):
        _log(args, f"git clone {n + 1}/{GIT_RUNS}")
        clones.append(_git(env, "clone", "-q", remote, str(work / f"clone{n}"))[0])
    clone = work / "clone0"
    sizes = _git(env, "count-objects", "-v", cwd=clone)[1]
    pack_kib = int(next(ln.split()[1] for ln in sizes.splitlines() if ln.startswith("size-pack")))
    files = [p for p in clone.rglob("*") if p.is_file() and ".git" not in p.parts]
    pushes, settled, push_git, push_git_ms = [], [], [], []
    for n in range(GIT_RUNS):
        _log(args, f"git push {n + 1}/{GIT_RUNS}")
        _git(env, "switch", "-q", "-c", f"bench-{n}", "origin/main", cwd=clone)
        (clone / "notes").mkdir(exist_ok=True)
        (clone / f"notes/push-{n}.md").write_text(f"push {n}\n", encoding="utf-8")
        _git(env, "add", "-A", cwd=clone)
        _git(env, "commit", "-q", "-m", f"Bench push {n}", cwd=clone)  # one new commit
        forge.ask("settle")  # nothing left over from the push before
        forge.ask("reset")
        t = time.perf_counter()
        pushes.append(_git(env, "push", "-q", "origin", f"bench-{n}", cwd=clone)[0])
        forge.ask("settle")  # the forge answers the push first, then makes its push event
        settled.append(time.perf_counter() - t)
        seen = forge.ask("stats")
        push_git.append(seen["calls"].get("git", 0))
        push_git_ms.append(round(1000 * seen["seconds"].get("git", 0.0), 1))
    return {
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
        "commits": REPO_COMMITS,
        "pack_kib": pack_kib,
        "clone_s": clones,
        "push_s": pushes,
        "clone_median_s": statistics.median(clones),
        "push_median_s": statistics.median(pushes),
        "push_settled_s": settled,  # from the push's start until the forge is idle again
        "push_settled_median_s": statistics.median(settled),
        "push_git_processes": push_git,  # BareRepo._git calls in the forge for one push
        "push_git_ms": push_git_ms,
    }


# --------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------
def _log(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(f"[bench] {message}", file=sys.stderr, flush=True)


def _spawn(args: argparse.Namespace, work: Path, checks: str) -> Forge:
    root = work / f"forge-{checks}"
    root.mkdir()
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--role=forge",
        f"--checks={checks}",
        f"--public-key={work / 'app.pub.pem'}",
        f"--source={work / 'source'}",
        f"--root={root}",
    ]
    if args.profile and checks == "on":
        cmd.append(f"--profile-out={Path(args.profile).resolve()}")
    return Forge(cmd)


def _targets(rest: list[RestResult], git: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for r in rest:
        if r.checks == "on" and r.mode == "seq":
            out.append(
                {
                    "target": f"{r.operation} p99 <= {TARGET_P99_MS:g} ms, sequential",
                    "met": r.p99_ms <= TARGET_P99_MS and r.errors == 0,
                    "measured": round(r.p99_ms, 2),
                    "limit": TARGET_P99_MS,
                    "unit": "ms",
                }
            )
    for what, key, limit in (
        ("clone", "clone_median_s", TARGET_CLONE_S),
        ("push (until the forge is idle again)", "push_settled_median_s", TARGET_PUSH_S),
    ):
        measured = git[key]
        out.append(
            {
                "target": f"git {what}, median of {GIT_RUNS} <= {limit:g} s",
                "met": measured <= limit,
                "measured": round(measured, 3),
                "limit": limit,
                "unit": "s",
            }
        )
    return out


def _share(rest: list[RestResult]) -> list[dict[str, Any]]:
    """Per operation: sequential p50 with checks on and off, and the time inside the checks."""
    out = []
    for on in (r for r in rest if r.checks == "on" and r.mode == "seq"):
        off = next(
            r for r in rest if (r.operation, r.checks, r.mode) == (on.operation, "off", "seq")
        )
        inside = sum(on.checks_ms.values())
        out.append(
            {
                "operation": on.operation,
                "p50_on_ms": round(on.p50_ms, 2),
                "p50_off_ms": round(off.p50_ms, 2),
                "p50_share_percent": round(100 * (on.p50_ms - off.p50_ms) / on.p50_ms, 1),
                "mean_in_checks_ms": round(inside, 2),
                "in_checks": {k: round(v, 2) for k, v in on.checks_ms.items() if v},
                "in_checks_percent_of_p50": round(100 * inside / on.p50_ms, 1),
            }
        )
    return out


def _machine() -> dict[str, Any]:
    git = _git(_git_env(Path(os.devnull), token=None), "--version")[1]
    return {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "aiohttp": aiohttp.__version__,
        "git": git.strip().removeprefix("git version "),
        "loadavg_after": [round(v, 2) for v in os.getloadavg()],
    }


def _report(doc: dict[str, Any]) -> str:
    head = (
        f"{'operation':<39} {'checks':>6} {'mode':>4} {'n':>5} {'err':>3} {'p50':>7} "
        f"{'p99':>7} {'max':>7} {'req/s':>6} | {'checks':>6} {'git':>4} {'git ms':>6} "
        f"{'cpu% forge/client/other':<23}"
    )
    lines = [head, "-" * len(head)]
    requested = doc["config"]["requests"]
    for r in doc["rest"]:
        cpu = r["cpu_percent"]
        cpus = "/".join(f"{cpu[k]:.0f}" if k in cpu else "?" for k in ("forge", "bench", "other"))
        n = f"{r['count']}{'*' if r['count'] < requested else ''}"
        lines.append(
            f"{r['operation']:<39} {r['checks']:>6} {r['mode']:>4} {n:>5} {r['errors']:>3} "
            f"{r['p50_ms']:>7.2f} {r['p99_ms']:>7.2f} {r['max_ms']:>7.2f} "
            f"{r['requests_per_s']:>6.0f} | {sum(r['checks_ms'].values()):>6.2f} "
            f"{r['git_processes']:>4.1f} {r['git_ms']:>6.2f} {cpus:<23}"
        )
    lines.append(
        f"p50/p99/max: ms per call of GitHubApp.installation({INSTALLATION_ID}), client included;"
        f" seq = one caller, conc = {CLIENTS} callers sharing the App's session (its POSTs queue"
        " on the per-installation lock); n* = stopped at the phase's time limit"
        f" ({doc['config']['max_seconds']:g} s). Inside the forge, per request: checks = ms in the"
        " request/response/webhook schema checks, git = git processes run and git ms = time"
        " waiting for them (the event loop is blocked meanwhile). cpu% of one core: the forge"
        " with its git processes / this client / everything else on the machine"
    )
    lines += [
        "",
        "contract checks: sequential p50 with checks on -> off (end to end, so machine noise"
        " shows), and the mean time measured inside the checks:",
    ]
    for s in doc["contract_share"]:
        parts = ", ".join(f"{k} {v:.2f}" for k, v in s["in_checks"].items())
        lines.append(
            f"  {s['operation']:<40} {s['p50_on_ms']:>6.2f} -> {s['p50_off_ms']:>6.2f} ms"
            f" ({s['p50_share_percent']:>5.1f}% of p50); in checks {s['mean_in_checks_ms']:.2f} ms"
            f" ({s['in_checks_percent_of_p50']:.1f}%: {parts})"
        )
    g = doc["git"]

    def runs(key: str) -> str:
        return (
            f"median {g[key + '_median_s']:.3f} s ({' '.join(f'{v:.3f}' for v in g[key + '_s'])})"
        )

    lines += [
        "",
        f"git over smart HTTP: {g['files']} files, {g['bytes'] / 1e6:.1f} MB, {g['commits']}"
        f" commits, pack {g['pack_kib']} KiB",
        f"  clone                      {runs('clone')}",
        f"  push, new branch + 1 commit {runs('push')}  as the git client sees it",
        f"    ... until the forge is idle {runs('push_settled')}  (its push event:"
        f" {statistics.median(g['push_git_processes']):.0f} git processes,"
        f" {statistics.median(g['push_git_ms']):.0f} ms)",
        "",
    ]
    for t in doc["targets"]:
        verdict = "MET" if t["met"] else "MISSED"
        lines.append(
            f"target: {t['target']}: {verdict} ({t['measured']} {t['unit']} vs {t['limit']})"
        )
    for checks, seen in doc["forge"].items():
        if seen["violations"] or seen["non_2xx"]:
            lines.append(
                f"forge (checks {checks}): {seen['non_2xx']} non-2xx answers,"
                f" {len(seen['violations'])} contract violations: {seen['violations'][:3]}"
            )
    noise = max((r["cpu_percent"].get("other", 0.0) for r in doc["rest"]), default=0.0)
    if noise > NOISE_PERCENT:
        lines.append(
            f"warning: other processes used up to {noise:.0f}% of a core during a phase;"
            " the figures are noisy, run again on a quiet machine"
        )
    if doc["config"]["profile"]:
        lines.append(
            f"profile of the checks-on forge: {doc['config']['profile']} (cProfile slows the"
            " forge down: these figures are not comparable to a normal run)"
        )
    m = doc["machine"]
    lines.append(
        f"machine: nproc {m['nproc']}, Python {m['python']}, aiohttp {m['aiohttp']},"
        f" git {m['git']}, {m['platform']}; load average before {m['loadavg_before']},"
        f" after {m['loadavg_after']}; took {doc['seconds']:.0f} s"
    )
    return "\n".join(lines)


def _run(args: argparse.Namespace, work: Path, started: list[Forge]) -> int:
    t0 = time.perf_counter()
    load_before = [round(v, 2) for v in os.getloadavg()]
    private, public = generate_app_key()
    (work / "app.pub.pem").write_text(public, encoding="utf-8")
    (work / "home").mkdir()
    _log(args, f"making the repository ({REPO_FILES} files, {REPO_COMMITS} commits)")
    _make_source(work)
    forges = {checks: _spawn(args, work, checks) for checks in ("on", "off")}
    started += forges.values()
    hellos = {checks: forge.read(30.0) for checks, forge in forges.items()}
    rest, token = asyncio.run(_rest(args, forges, hellos, private))
    git = _git_phase(args, work, forges["on"], hellos["on"]["url"], token)
    forge_seen = {checks: forge.ask("stats") for checks, forge in forges.items()}
    for forge in forges.values():
        forge.stop()
    doc: dict[str, Any] = {
        "benchmark": "forge_api",
        "config": {
            "requests": args.requests,
            "max_seconds": args.max_seconds,
            "clients": CLIENTS,
            "warmup": WARMUP,
            "listed_comments": LISTED_COMMENTS,
            "git_runs": GIT_RUNS,
            "profile": args.profile,
        },
        "rest": [asdict(r) for r in rest],
        "contract_share": _share(rest),
        "git": git,
        "targets": _targets(rest, git),
        "forge": forge_seen,
        "machine": _machine() | {"loadavg_before": load_before},
        "seconds": time.perf_counter() - t0,
    }
    report = _report(doc)
    if args.json:
        print(report, file=sys.stderr)
        print(json.dumps(doc, indent=2))
    else:
        print(report)
    if any(seen["violations"] for seen in forge_seen.values()):
        return 1  # the bench itself broke GitHub's contract: its figures mean nothing
    return 0 if all(t["met"] for t in doc["targets"]) else 1


def run_bench(args: argparse.Namespace) -> int:
    started: list[Forge] = []
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        with tempfile.TemporaryDirectory(prefix="patchwarden-forge-bench-") as tmp:
            try:
                return _run(args, Path(tmp), started)
            finally:
                for forge in started:  # before the folder (and the forge's repos) goes away
                    forge.stop()
    finally:
        signal.signal(signal.SIGTERM, previous)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--requests", type=int, default=300, help="requests per operation and mode (default 300)"
    )
    p.add_argument(
        "--max-seconds",
        type=float,
        default=4.0,
        help="time limit per operation and mode, whatever --requests says (default 4)",
    )
    p.add_argument("--json", action="store_true", help="JSON on stdout, the table on stderr")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument(
        "--profile",
        metavar="FILE",
        help="diagnosis: cProfile the checks-on forge into FILE (read it with python -m pstats)",
    )
    p.add_argument("--role", choices=["bench", "forge"], default="bench", help=argparse.SUPPRESS)
    p.add_argument("--checks", choices=["on", "off"], default="on", help=argparse.SUPPRESS)
    p.add_argument("--public-key", help=argparse.SUPPRESS)
    p.add_argument("--source", help=argparse.SUPPRESS)
    p.add_argument("--root", help=argparse.SUPPRESS)
    p.add_argument("--profile-out", help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.role == "forge":
        public_key = Path(args.public_key).read_text(encoding="utf-8")
        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(_forge_main(args, public_key))
        return 0
    if args.requests < 1:
        print("--requests must be positive", file=sys.stderr)
        return 2
    try:
        return run_bench(args)
    except KeyboardInterrupt:
        print("interrupted; the forge and its files are gone", file=sys.stderr)
        return 130
    except (RuntimeError, subprocess.SubprocessError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
