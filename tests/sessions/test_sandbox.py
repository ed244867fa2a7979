"""The sandbox holds: each escape a hostile repository would try, tried for real.

The probes run inside the real bubblewrap sandbox, set up as CI and production set it up
(Patchwarden as root: privileged bwrap, ``setpriv`` to an unprivileged uid), and each
must fail. Next to each probe a control shows the same probe working where it is
allowed (from the host, or in the workspace), so a failure is the sandbox's doing and
not a broken probe. The Docker backend has no engine here: it is checked through the
argv it builds. Secret-looking variables, ``make_sandbox`` and output capture are
tested without starting anything.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.sessions.backends import BwrapSandbox, DockerSandbox, UnsafeLocalSandbox, make_sandbox
from app.sessions.process import Completed, Limits, _Capture
from app.sessions.sandbox import (
    BASE_ENV,
    ETC_FILES,
    SYSTEM_DIRS,
    WORKSPACE,
    Mount,
    SandboxError,
    check_env,
    node_options,
)

KiB = 1024
MiB = 1024 * KiB
GHS = "ghs_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # classic shape, 36 after the prefix
CUT = re.compile(r"\n\[\.\.\. (\d+) bytes of output cut by Patchwarden \.\.\.\]\n")

BWRAP = shutil.which("bwrap")
AS_ROOT = os.geteuid() == 0


# -- looking at the host from outside -----------------------------------------------


def _proc_dirs() -> Iterator[Path]:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            yield entry


def processes_of(uid: int) -> list[int]:
    """Host pids whose real or effective uid is ``uid``."""
    found = []
    for entry in _proc_dirs():
        try:
            status = (entry / "status").read_text()
        except OSError:  # gone meanwhile
            continue
        for line in status.splitlines():
            if line.startswith("Uid:") and uid in {int(v) for v in line.split()[1:3]}:
                found.append(int(entry.name))
    return found


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains ``marker``."""
    found = []
    for entry in _proc_dirs():
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


def listing(directory: str) -> list[str]:
    """The host's entries of ``directory`` (none if this user may not list it)."""
    try:
        return sorted(os.listdir(directory))
    except PermissionError:
        return []


def bound_system_dirs() -> list[str]:
    """The system directories bwrap binds (the others are symlinks or missing)."""
    return [d for d in SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]


def on_host(path: str | Path) -> bool:
    """Whether ``path`` exists on the host (a dangling symlink counts)."""
    return os.path.lexists(path)


async def eventually(check: Callable[[], bool], *, within: float = 2.0) -> bool:
    """Whether ``check()`` becomes true within ``within`` seconds (the kernel tears a
    PID namespace down asynchronously, a few milliseconds after its init dies)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def python(sb: BwrapSandbox, code: str, *args: str) -> list[str]:
    """argv running ``code`` with the toolchain's interpreter inside the sandbox."""
    return [sb.toolchain.python, "-c", code, *args]


def report(done: Completed) -> Any:
    """The JSON a probe printed (with the run's record on failure)."""
    assert done.exit_code == 0, done
    return json.loads(done.stdout)


# -- fixtures ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def sandbox_uid() -> int:
    """A uid for this module alone, owning no process yet.

    Other sandboxes (other test modules, other sessions) may run at the same time as
    the default uid 65534; RLIMIT_NPROC counts every process of a uid host-wide, and
    the "nothing survives" checks count processes by uid, so sharing would make both
    flaky.
    """
    start = 61000 + os.getpid() % 3000
    return next(uid for uid in range(start, start + 1000) if not processes_of(uid))


@pytest.fixture(scope="module")
def sb(sandbox_uid: int, tmp_path_factory: pytest.TempPathFactory) -> BwrapSandbox:
    sandbox = BwrapSandbox(state_dir=tmp_path_factory.mktemp("sandbox"), uid=sandbox_uid)
    sandbox.check()
    return sandbox


@pytest.fixture
def workspace(tmp_path: Path, sb: BwrapSandbox) -> Path:
    tree = tmp_path / "workspace"
    tree.mkdir()
    (tree / "README.md").write_text("hello from the workspace\n")
    sb.prepare_writable(tree)
    return tree


@pytest.fixture
def mounts(workspace: Path) -> list[Mount]:
    return [Mount(workspace, WORKSPACE, writable=True)]


def host_uid(sb: BwrapSandbox) -> int | None:
    """The uid the sandbox's processes have on the host (None: a user namespace maps
    them back to the service user, which owns this test process too)."""
    return sb.uid if sb.privileged else None


# -- the probes, from inside ------------------------------------------------------

CONNECT = """
import errno, json, socket, sys
out = {}
for name, family, address in (
    ("tcp", socket.AF_INET, ("127.0.0.1", int(sys.argv[1]))),
    ("unix", socket.AF_UNIX, "\\0" + sys.argv[2]),
):
    with socket.socket(family) as s:
        s.settimeout(3)
        try:
            s.connect(address)
            out[name] = "connected"
        except OSError as e:
            out[name] = errno.errorcode.get(e.errno, str(e))
out["interfaces"] = [n for _, n in socket.if_nameindex()]
print(json.dumps(out))
"""

RESOLVE = """
import errno, json, os, socket
out = {"resolv.conf": os.path.exists("/etc/resolv.conf")}
for name in ("example.com", "github.com", "pypi.org"):
    try:
        socket.getaddrinfo(name, 443)
        out[name] = "resolved"
    except socket.gaierror:
        out[name] = "gaierror"
query = bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001")
for server in ("8.8.8.8", "1.1.1.1"):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.sendto(query, (server, 53))
            out[server] = "sent"
        except OSError as e:
            out[server] = errno.errorcode.get(e.errno, str(e))
print(json.dumps(out))
"""

ENVIRON = """
import json, os
out = {"environ": dict(os.environ)}
for path in ("/proc/self/environ", "/proc/1/environ"):
    try:
        with open(path, "rb") as f:
            out[path] = f.read().decode("utf-8", "replace")
    except OSError as e:
        out[path] = type(e).__name__
print(json.dumps(out))
"""

READ = """
import json, os, sys
out = {}
for path in sys.argv[1:]:
    try:
        if os.path.isdir(path):
            out[path] = "listed:" + ",".join(sorted(os.listdir(path)))
        else:
            with open(path, "rb") as f:
                out[path] = "read:" + f.read(4096).decode("utf-8", "replace")
    except OSError as e:
        out[path] = type(e).__name__
print(json.dumps(out))
"""

# New paths are created exclusively, existing ones only opened for writing (nothing is
# written): should the sandbox ever break, the probe still leaves the host intact.
WRITE = """
import errno, json, os, sys
out = {}
for path in sys.argv[1:]:
    try:
        if os.path.lexists(path):
            os.close(os.open(path, os.O_WRONLY))
        else:
            with open(path, "x") as f:
                f.write("written from inside\\n")
        out[path] = "written"
    except OSError as e:
        out[path] = errno.errorcode.get(e.errno, str(e))
out["mounts"] = {
    line.split()[4]: line.split()[5].split(",")[0] for line in open("/proc/self/mountinfo")
}
try:
    os.link("/usr/bin/env", "/workspace/env-hardlink")
    out["hardlink"] = "linked"
except OSError as e:
    out["hardlink"] = errno.errorcode.get(e.errno, str(e))
print(json.dumps(out))
"""

FORK_COUNT = """
import errno, json, os, time
forked, error = 0, None
while forked < 1000:
    try:
        pid = os.fork()
    except OSError as e:
        error = errno.errorcode.get(e.errno, str(e))
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    forked += 1
print(json.dumps({"forked": forked, "error": error}))
"""

WRITE_IGNORING_SIGXFSZ = """
import errno, json, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
written, error = 0, None
block = bytes(1024 * 1024)
with open("/workspace/big", "wb", buffering=0) as f:
    for _ in range(10 * 1024):
        try:
            written += f.write(block)
        except OSError as e:
            error = errno.errorcode.get(e.errno, str(e))
            break
print(json.dumps({"written": written, "error": error}))
"""

FLOOD = """
import sys
out = sys.stdout.buffer
out.write(b"<<HEAD>>")
block = b"." * (1024 * 1024)
for _ in range(100):
    out.write(block)
out.write(b"<<TAIL>>\\n")
sys.stderr.write("a little on stderr\\n")
"""

IDENTITY = """
import json, os, socket
status = dict(
    line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line
)
print(json.dumps({
    "uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups(),
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "me": os.getpid(),
    "status": {k: v.strip() for k, v in status.items()},
    "hostname": socket.gethostname(),
}))
"""


@pytest.mark.slow
@pytest.mark.skipif(BWRAP is None, reason="bubblewrap (bwrap) is not installed")
class TestInsideTheSandbox:
    async def test_no_connection_to_a_listener_on_the_hosts_loopback(
        self, sb: BwrapSandbox, mounts: list[Mount]
    ) -> None:
        abstract = f"patchwarden-test-{uuid.uuid4().hex}"
        with (
            socket.create_server(("127.0.0.1", 0)) as tcp,
            socket.socket(socket.AF_UNIX) as unix,
        ):
            unix.bind("\0" + abstract)
            unix.listen()
            tcp.setblocking(False)
            unix.setblocking(False)
            port = str(tcp.getsockname()[1])

            inside = report(await sb.run(python(sb, CONNECT, port, abstract), mounts=mounts))
            assert inside == {"tcp": "ECONNREFUSED", "unix": "ECONNREFUSED", "interfaces": ["lo"]}
            with pytest.raises(BlockingIOError):  # nothing ever reached the listeners
                tcp.accept()
            with pytest.raises(BlockingIOError):
                unix.accept()

            # Control: the same probe from the host reaches both listeners.
            host = await asyncio.create_subprocess_exec(
                sb.toolchain.python, "-c", CONNECT, port, abstract, stdout=asyncio.subprocess.PIPE
            )
            stdout, _ = await host.communicate()
            outside = json.loads(stdout)
            assert (outside["tcp"], outside["unix"]) == ("connected", "connected")

    async def test_no_dns_and_no_route_out(self, sb: BwrapSandbox, mounts: list[Mount]) -> None:
        inside = report(await sb.run(python(sb, RESOLVE), mounts=mounts, timeout=30))
        assert inside == {
            "resolv.conf": False,
            "example.com": "gaierror",
            "github.com": "gaierror",
            "pypi.org": "gaierror",
            "8.8.8.8": "ENETUNREACH",
            "1.1.1.1": "ENETUNREACH",
        }

    async def test_the_host_environment_stays_outside(
        self, sb: BwrapSandbox, mounts: list[Mount], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        host_secret = f"pw-host-only-{uuid.uuid4().hex}"
        monkeypatch.setenv("PW_HOST_ONLY_SECRET", host_secret)
        monkeypatch.setenv("GITHUB_TOKEN", GHS)
        monkeypatch.setenv("PATCHWARDEN_WEBHOOK_SECRET", host_secret)

        done = await sb.run(python(sb, ENVIRON), mounts=mounts, env={"FOO": "bar"})
        inside = report(done)
        env_done = await sb.run(["/usr/bin/env"], mounts=mounts, env={"FOO": "bar"})
        assert env_done.exit_code == 0, env_done

        for text in (done.stdout, done.stderr, env_done.stdout, env_done.stderr):
            assert host_secret not in text
            assert GHS not in text
            assert "PW_HOST_ONLY_SECRET" not in text
        # Exactly the allowlist, the PATH, what the caller passed (and bwrap's PWD).
        expected = {*BASE_ENV, *node_options(), "PATH", "FOO"}
        assert set(inside["environ"]) - {"PWD"} == expected
        names = {line.split("=", 1)[0] for line in env_done.stdout.splitlines()}
        assert names - {"PWD"} == expected
        assert inside["environ"]["FOO"] == "bar"
        # The reaper's environment (what bwrap was started with) is not readable either.
        assert inside["/proc/1/environ"] == "PermissionError"

    async def test_nothing_outside_the_workspace_can_be_read(
        self, sb: BwrapSandbox, mounts: list[Mount], tmp_path: Path
    ) -> None:
        outside = tmp_path / "outside"
        outside.mkdir()
        secret = outside / "secret.txt"
        secret.write_text(f"host secret {uuid.uuid4().hex}\n")
        secret.chmod(0o644)
        toolchain_top = {Path(p).parts[1] for p in sb.toolchain.paths}
        root_names = {Path(p).parts[2] for p in sb.toolchain.paths if p.startswith("/root/")}
        host_root = [f"/root/{n}" for n in listing("/root") if n not in root_names]
        allowed_etc = {*ETC_FILES, "passwd", "group"}
        host_etc = [f"/etc/{n}" for n in listing("/etc") if n not in allowed_etc]
        forbidden = [
            str(secret),
            str(outside),
            str(tmp_path),
            str(tmp_path.parent),
            "/etc/shadow",
            *host_root,
            *host_etc,
            str(Path(__file__)),  # Patchwarden's own tree (only its venv is in)
            "/proc/1/root/etc/shadow",
            "/proc/1/root",
            "/proc/1/cwd",
            "/proc/1/fd",
            "/sys/class/net",
            "/run",
            "/var",
            "/home",
        ]
        controls = ["/workspace/README.md", "/etc/passwd", "/", "/etc", "/root"]

        done = await sb.run(python(sb, READ, *forbidden, *controls), mounts=mounts)
        inside = report(done)

        leaked = {p: r for p, r in inside.items() if p in forbidden and ":" in r}
        assert not leaked
        assert secret.read_text() not in done.stdout
        assert inside["/proc/1/root"] == "PermissionError"  # not "listed:"
        assert inside[str(secret)] == "FileNotFoundError"
        # Controls: the workspace is readable; the rest is the sandbox's own small world.
        assert inside["/workspace/README.md"] == "read:hello from the workspace\n"
        passwd = inside["/etc/passwd"].removeprefix("read:").splitlines()
        assert [line.split(":")[0] for line in passwd] == ["root", "sandbox"]
        system = {d.lstrip("/") for d in SYSTEM_DIRS if on_host(d)}
        top = set(inside["/"].removeprefix("listed:").split(","))
        assert top == system | toolchain_top | {"dev", "etc", "proc", "tmp", "workspace"}
        assert set(inside["/etc"].removeprefix("listed:").split(",")) <= allowed_etc
        assert set(inside["/root"].removeprefix("listed:").split(",")) <= root_names

    async def test_the_system_is_read_only_and_the_workspace_writable(
        self, sb: BwrapSandbox, mounts: list[Mount], workspace: Path
    ) -> None:
        probe = f"pw-probe-{uuid.uuid4().hex}"
        venv = str(Path(sb.toolchain.bin_dir).parent)  # the toolchain verification trusts
        created = [
            f"/usr/{probe}",
            f"/usr/bin/{probe}",
            f"/etc/{probe}",
            f"/{probe}",
            f"/root/{probe}",
            f"/dev/{probe}",
            f"{venv}/{probe}",
            f"{venv}/bin/{probe}",
        ]
        opened = ["/usr/bin/env", "/etc/passwd", "/etc/hosts", sb.toolchain.python]
        allowed = [f"/workspace/{probe}", f"/tmp/{probe}", f"/dev/shm/{probe}"]

        argv = python(sb, WRITE, *created, *opened, *allowed)
        inside = report(await sb.run(argv, mounts=mounts))

        wrote = {p: inside[p] for p in created + opened if inside[p] not in ("EROFS", "EACCES")}
        assert not wrote
        assert inside["hardlink"] == "EXDEV"  # no host inode can be pulled into the tree
        # Not only permissions: the system and the toolchain are read-only mounts.
        ro = [*bound_system_dirs(), *sb.toolchain.paths, "/etc"]
        assert {m: inside["mounts"][m] for m in ro} == dict.fromkeys(ro, "ro")
        assert inside["mounts"][WORKSPACE] == "rw"
        assert inside[f"/workspace/{probe}"] == "written"
        assert inside[f"/tmp/{probe}"] == "written"
        assert inside[f"/dev/shm/{probe}"] == "written"  # private tmpfs (test below)
        for path in created:
            assert not on_host(path), path
        made = workspace / probe
        assert made.read_text() == "written from inside\n"
        if host_uid(sb) is not None:
            assert made.stat().st_uid == sb.uid
        assert not on_host(f"/tmp/{probe}")  # the sandbox's /tmp is its own
        assert not on_host(f"/dev/shm/{probe}")  # and so is its /dev/shm

    @pytest.mark.skipif(not AS_ROOT, reason="RLIMIT_NPROC per sandbox uid needs root (setpriv)")
    async def test_forking_stops_at_the_process_limit(
        self, sb: BwrapSandbox, mounts: list[Mount]
    ) -> None:
        limits = Limits(processes=64)
        done = await sb.run(python(sb, FORK_COUNT), mounts=mounts, limits=limits, timeout=20)
        inside = report(done)
        # The probe itself is one of the 64: it gets at most 63 children, then EAGAIN.
        assert inside["error"] == "EAGAIN"
        assert limits.processes // 2 < inside["forked"] < limits.processes
        assert done.duration_seconds < 10  # the sleeping children died with the run
        assert await eventually(lambda: not processes_of(sb.uid))

    @pytest.mark.skipif(not AS_ROOT, reason="RLIMIT_NPROC per sandbox uid needs root (setpriv)")
    async def test_a_fork_bomb_is_contained_and_leaves_nothing_behind(
        self, sb: BwrapSandbox, mounts: list[Mount]
    ) -> None:
        bomb = "bomb() { bomb | bomb & }; bomb; sleep 30"
        limits = Limits(processes=64)
        run = asyncio.create_task(
            sb.run(["/bin/sh", "-c", bomb], mounts=mounts, limits=limits, timeout=2)
        )
        peak = 0  # the sandbox uid's processes, seen from the host while the bomb runs
        while not run.done():
            peak = max(peak, len(processes_of(sb.uid)))
            await asyncio.sleep(0.01)
        done = await run

        assert 0 < peak <= limits.processes  # seen from the host, never above the cap
        assert done.duration_seconds < 6
        assert "Cannot fork" in done.stderr  # forks were refused, not merely slow
        assert await eventually(lambda: not processes_of(sb.uid))
        # The host and the next run are fine.
        host = await asyncio.create_subprocess_exec("/bin/true")
        assert await host.wait() == 0
        after = await sb.run(["/bin/sh", "-c", "echo fine"], mounts=mounts, timeout=10)
        assert (after.exit_code, after.stdout) == (0, "fine\n")

    async def test_a_10_gb_file_is_cut_at_the_file_size_limit(
        self, sb: BwrapSandbox, mounts: list[Mount], workspace: Path
    ) -> None:
        limits = Limits(file_size_bytes=10 * MiB)
        dd = ["/usr/bin/dd", "if=/dev/zero", f"of={WORKSPACE}/big", "bs=1M", "count=10240"]
        done = await sb.run(dd, mounts=mounts, limits=limits, timeout=30)
        assert done.killed_by == "SIGXFSZ", done
        assert not done.ok
        assert (workspace / "big").stat().st_size <= limits.file_size_bytes

        # A writer that ignores SIGXFSZ gets EFBIG instead, at the same size.
        (workspace / "big").unlink()
        done = await sb.run(
            python(sb, WRITE_IGNORING_SIGXFSZ), mounts=mounts, limits=limits, timeout=30
        )
        assert report(done) == {"written": limits.file_size_bytes, "error": "EFBIG"}
        assert (workspace / "big").stat().st_size == limits.file_size_bytes

    async def test_the_timeout_kills_a_tree_that_ignores_sigterm(
        self, sb: BwrapSandbox, mounts: list[Mount], workspace: Path
    ) -> None:
        # Pids inside are the PID namespace's own; the host finds the children by a
        # sleep duration nothing else uses.
        marker = f"987.{uuid.uuid4().int % 10**6:06d}"
        script = (
            "trap '' TERM HUP INT; "
            f"for i in 1 2 3; do sleep {marker} & echo $! >> /workspace/pids; done; "
            f"setsid sleep {marker} & "  # a new session
            f"(sleep {marker} &); "  # orphaned by a double fork
            f"sleep {marker} </dev/null >/dev/null 2>&1 & "  # holds no pipe open
            "echo started; while :; do sleep 1; done"
        )
        run = asyncio.create_task(
            sb.run(["/bin/sh", "-c", script], mounts=mounts, timeout=1.0),
        )
        # Control: while it runs, the host sees the six sleepers (and the sandbox uid).
        assert await eventually(lambda: len(processes_with(f"sleep\0{marker}")) >= 6, within=5)
        if host_uid(sb) is not None:
            assert processes_of(sb.uid)
        done = await run

        assert done.timed_out
        assert done.exit_code is None
        assert done.killed_by == "timeout"
        assert done.duration_seconds < 5
        assert done.stdout == "started\n"
        assert len((workspace / "pids").read_text().split()) == 3
        assert await eventually(lambda: not processes_with(marker))
        if host_uid(sb) is not None:
            assert await eventually(lambda: not processes_of(sb.uid))

    async def test_cancelling_the_caller_kills_the_tree_at_once(
        self, sb: BwrapSandbox, mounts: list[Mount]
    ) -> None:
        # A thread cannot be cancelled: without the kill, the tree would live on for
        # its whole timeout after the session that started it gave up.
        marker = f"985.{uuid.uuid4().int % 10**6:06d}"
        script = f"trap '' TERM; sleep {marker} & echo started; wait"
        run = asyncio.create_task(sb.run(["/bin/sh", "-c", script], mounts=mounts, timeout=600))
        assert await eventually(lambda: bool(processes_with(f"sleep\0{marker}")), within=5)
        started = asyncio.get_running_loop().time()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert asyncio.get_running_loop().time() - started < 5
        assert await eventually(lambda: not processes_with(marker))

    async def test_background_children_die_with_a_command_that_exits(
        self, sb: BwrapSandbox, mounts: list[Mount]
    ) -> None:
        marker = f"986.{uuid.uuid4().int % 10**6:06d}"
        script = f"setsid sleep {marker} </dev/null >/dev/null 2>&1 & echo detached"
        done = await sb.run(["/bin/sh", "-c", script], mounts=mounts, timeout=10)
        assert (done.exit_code, done.stdout) == (0, "detached\n")
        assert done.duration_seconds < 5
        assert await eventually(lambda: not processes_with(marker))

    async def test_100_mb_of_output_is_cut_keeping_head_and_tail(
        self, sb: BwrapSandbox, mounts: list[Mount]
    ) -> None:
        limits = Limits(output_bytes=64 * KiB)
        done = await sb.run(python(sb, FLOOD), mounts=mounts, limits=limits, timeout=60)

        assert done.exit_code == 0  # the writer was drained, never blocked
        assert done.stdout_truncated
        assert done.truncated
        assert len(done.stdout) < 64 * KiB + 100
        assert done.stdout.startswith("<<HEAD>>....")
        assert done.stdout.endswith("....<<TAIL>>\n")
        assert "cut by Patchwarden" in done.stdout
        cut = CUT.search(done.stdout)
        assert cut is not None
        total = len("<<HEAD>>") + 100 * MiB + len("<<TAIL>>\n")
        assert int(cut.group(1)) == total - 64 * KiB
        assert (done.stderr, done.stderr_truncated) == ("a little on stderr\n", False)

    async def test_an_unprivileged_uid_alone_in_its_pid_namespace(
        self, sb: BwrapSandbox, mounts: list[Mount]
    ) -> None:
        inside = report(await sb.run(python(sb, IDENTITY), mounts=mounts))
        shell = await sb.run(["/bin/sh", "-c", "id -u"], mounts=mounts)

        assert shell.stdout.strip() == str(sb.uid) != "0"
        assert inside["uid"] == inside["euid"] == inside["gid"] == sb.uid
        assert 0 not in inside["groups"]
        # Only the sandbox's reaper (pid 1) and the probe itself are visible.
        assert inside["me"] in inside["pids"]
        assert set(inside["pids"]) <= {1, 2, 3}
        status = inside["status"]
        for caps in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(status[caps], 16) == 0, caps
        assert status["NoNewPrivs"] == "1"  # setuid binaries cannot raise it back
        assert inside["hostname"] == "sandbox"

    async def test_tmp_is_private_and_does_not_outlive_the_run(
        self, sb: BwrapSandbox, mounts: list[Mount]
    ) -> None:
        name = f"/tmp/pw-private-{uuid.uuid4().hex}"
        first = await sb.run(["/bin/sh", "-c", f"echo one > {name} && cat {name}"], mounts=mounts)
        assert (first.exit_code, first.stdout) == (0, "one\n")
        assert not on_host(name)  # not the host's /tmp
        second = await sb.run(["/bin/sh", "-c", f"test -e {name}; echo $?"], mounts=mounts)
        assert second.stdout == "1\n"  # and gone for the next command

    async def test_multiprocessing_works_in_a_private_capped_dev_shm(
        self, sb: BwrapSandbox, mounts: list[Mount]
    ) -> None:
        """Locks, queues and process pools need POSIX shared memory (/dev/shm): without
        it a project that uses them fails its tests here and nowhere else (toolz's did)."""
        pool = (
            "import multiprocessing, concurrent.futures as cf\n"
            "lock = multiprocessing.Lock()\n"
            "with cf.ProcessPoolExecutor(2) as pool: print(sum(pool.map(abs, [-1, -2, 3])))"
        )
        done = await sb.run(python(sb, pool), mounts=mounts)
        assert (done.exit_code, done.stdout) == (0, "6\n"), done.stderr
        name = f"/dev/shm/pw-private-{uuid.uuid4().hex}"
        wrote = await sb.run(["/bin/sh", "-c", f"echo one > {name} && cat {name}"], mounts=mounts)
        assert (wrote.exit_code, wrote.stdout) == (0, "one\n")
        assert not on_host(name)  # not the host's
        fill = ["/bin/sh", "-c", "head -c 3M /dev/zero > /dev/shm/fill; echo $?"]
        done = await sb.run(fill, mounts=mounts, limits=Limits(tmp_bytes=1 * MiB))
        assert done.stdout == "1\n"
        assert "No space left on device" in done.stderr

    async def test_tmp_memory_and_cpu_are_capped(
        self, sb: BwrapSandbox, mounts: list[Mount]
    ) -> None:
        fill = ["/bin/sh", "-c", "head -c 3M /dev/zero > /tmp/fill; echo $?"]
        done = await sb.run(fill, mounts=mounts, limits=Limits(tmp_bytes=1 * MiB))
        assert done.stdout == "1\n"
        assert "No space left on device" in done.stderr

        hog = python(sb, "b = bytearray(1024 ** 3)")
        done = await sb.run(hog, mounts=mounts, limits=Limits(memory_bytes=256 * MiB))
        assert done.exit_code == 1
        assert "MemoryError" in done.stderr

        spin = python(sb, "while True: pass")
        done = await sb.run(spin, mounts=mounts, limits=Limits(cpu_seconds=1), timeout=30)
        assert not done.timed_out
        assert done.killed_by in ("SIGXCPU", "SIGKILL")
        assert done.duration_seconds < 10

    @pytest.mark.skipif(not AS_ROOT, reason="starting a host process as the sandbox uid")
    async def test_host_processes_of_the_same_uid_cannot_be_signalled(
        self, sb: BwrapSandbox, mounts: list[Mount]
    ) -> None:
        victim = await asyncio.create_subprocess_exec(
            "/usr/bin/setpriv",
            f"--reuid={sb.uid}",
            f"--regid={sb.uid}",
            "--clear-groups",
            "/bin/sleep",
            "30",
        )
        try:
            assert await eventually(lambda: victim.pid in processes_of(sb.uid))
            done = await sb.run(
                ["/bin/sh", "-c", "kill -KILL -1; echo survived"], mounts=mounts, timeout=10
            )
            assert done.stdout == "survived\n"
            await asyncio.sleep(0.1)
            assert victim.returncode is None
            assert victim.pid in processes_of(sb.uid)
        finally:
            victim.kill()
            await victim.wait()

    async def test_refusals_happen_before_anything_starts(
        self, sb: BwrapSandbox, mounts: list[Mount], tmp_path: Path
    ) -> None:
        with pytest.raises(SandboxError, match="empty command"):
            await sb.run([], mounts=mounts)
        with pytest.raises(SandboxError, match="GITHUB_TOKEN"):
            await sb.run(["/bin/true"], mounts=mounts, env={"GITHUB_TOKEN": "x"})
        with pytest.raises(SandboxError, match="absolute"):
            await sb.run(["/bin/true"], mounts=[Mount(tmp_path, "workspace")])
        with pytest.raises(SandboxError, match="absolute"):
            await sb.run(["/bin/true"], mounts=[Mount(tmp_path, "/workspace/../etc")])
        with pytest.raises(SandboxError, match="does not exist"):
            await sb.run(["/bin/true"], mounts=[Mount(tmp_path / "nope", "/workspace")])


# -- the argv each backend builds (no sandbox started) --------------------------------


def values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


def test_bwrap_argv_unshares_the_network_and_clears_the_environment(tmp_path: Path) -> None:
    sb = BwrapSandbox(state_dir=tmp_path / "state", bwrap="/usr/bin/bwrap", uid=12345)
    limits = Limits(cpu_seconds=7, memory_bytes=300 * MiB, processes=33, file_size_bytes=5 * MiB)
    mounts = [Mount(tmp_path, WORKSPACE, writable=True)]

    argv, host_env, cwd, on_timeout, stdin = sb.wrap(
        ["pytest"], mounts=mounts, cwd=WORKSPACE, env={"A": "b"}, limits=limits, network=False
    )
    assert argv[0].endswith("prlimit")
    assert {"--cpu=7", f"--as={300 * MiB}", "--nproc=33", f"--fsize={5 * MiB}"} <= set(argv)
    assert {"--die-with-parent", "--new-session", "--clearenv"} <= set(argv)
    assert argv[-1] == "pytest"
    assert values(argv, "--bind") == [str(tmp_path)]
    # The environment goes through stdin (`--args 0`), never argv: the allowlist only.
    assert values(argv, "--args") == ["0"]
    assert "--setenv" not in argv
    assert stdin is not None
    passed = stdin.decode().split("\0")[:-1]
    assert values(passed, "--setenv") == [*BASE_ENV, *node_options(), "PATH", "A"]
    etc = next(
        argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind" and argv[i + 2] == "/etc"
    )
    assert (Path(etc) / "passwd").read_text().count("\n") == 2  # synthetic, not the host's
    assert not (Path(etc) / "resolv.conf").exists()  # no name resolution without a network
    assert host_env == {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # nothing of ours
    assert (cwd, on_timeout) == (None, ())
    if sb.privileged:
        assert "--unshare-net" in argv
        tail = argv[argv.index("--clearenv") :]
        assert {"--reuid=12345", "--regid=12345", "--no-new-privs"} <= set(tail)
        assert {"--bounding-set=-all", "--inh-caps=-all", "--clear-groups"} <= set(tail)
    else:
        assert {"--unshare-all", "--disable-userns"} <= set(argv)
        assert "--share-net" not in argv

    online, *_ = sb.wrap(["pip"], mounts=mounts, cwd=WORKSPACE, env={}, limits=limits, network=True)
    assert "--unshare-net" not in online
    binds = zip(online, online[1:], online[2:], strict=False)
    etc = next(src for flag, src, dest in binds if flag == "--ro-bind" and dest == "/etc")
    assert (Path(etc) / "resolv.conf").exists() == Path("/etc/resolv.conf").exists()


def test_docker_argv_is_locked_down(tmp_path: Path) -> None:
    limits = Limits(cpu_seconds=60, memory_bytes=512 * MiB, processes=77, tmp_bytes=8 * MiB)
    sb = DockerSandbox(limits=limits, docker="/opt/docker/bin/docker", cpus=1.5, image="pw:test")
    mounts = [
        Mount(Path("/srv/tree"), WORKSPACE, writable=True),
        Mount(Path("/srv/env"), "/env"),
    ]

    argv, host_env, cwd, on_timeout, _ = sb.wrap(
        ["pytest", "-q"], mounts=mounts, cwd=WORKSPACE, env={"A": "b"}, limits=limits, network=False
    )
    assert argv[:2] == ["/opt/docker/bin/docker", "run"]
    # Every option comes before the image; what follows it is the command.
    image = argv.index("pw:test")
    assert argv[image:] == ["pw:test", "pytest", "-q"]
    options = argv[:image]
    assert values(options, "--network") == ["none"]
    assert "--read-only" in options
    assert values(options, "--cap-drop") == ["ALL"]
    assert values(options, "--security-opt") == ["no-new-privileges"]
    assert values(options, "--pids-limit") == ["77"]
    assert values(options, "--memory") == [str(512 * MiB)]
    assert values(options, "--memory-swap") == [str(512 * MiB)]
    assert values(options, "--cpus") == ["1.5"]
    assert values(options, "--user") == ["65534:65534"]
    assert set(values(options, "--ulimit")) == {
        "cpu=60",
        f"fsize={limits.file_size_bytes}",
        "core=0",
    }
    assert values(options, "--tmpfs") == [f"/tmp:rw,nosuid,nodev,size={8 * MiB}"]
    assert values(options, "--mount") == [
        "type=bind,source=/srv/tree,target=/workspace,rw",
        "type=bind,source=/srv/env,target=/env,ro",
    ]
    assert values(options, "--workdir") == [WORKSPACE]
    env = values(options, "--env")
    assert [e.split("=", 1)[0] for e in env] == [*BASE_ENV, *node_options(), "PATH", "A"]
    # Values travel in docker's own environment (`--env NAME`), never in argv; only
    # PATH, HOME and LANG, which the docker client itself needs, are written out.
    assert env[-1] == "A"
    assert not [e for e in env if "=" in e and e.split("=")[0] not in ("PATH", "HOME", "LANG")]
    assert "--privileged" not in argv
    assert host_env["A"] == "b"
    assert set(host_env) == {
        "PATH",
        "LANG",
        *(k for k in [*BASE_ENV, *node_options()] if k not in ("HOME", "LANG")),
        "A",
    }
    assert cwd is None
    # At the timeout the container is killed by name, not just the docker client.
    assert on_timeout == (("/opt/docker/bin/docker", "kill", values(options, "--name")[0]),)

    online, *_ = sb.wrap(["pip"], mounts=[], cwd=WORKSPACE, env={}, limits=limits, network=True)
    assert values(online, "--network") != ["none"]
    assert values(online, "--network") == ["bridge"]


def test_docker_without_an_engine_says_so() -> None:
    with pytest.raises(SandboxError, match="docker is not installed"):
        DockerSandbox(docker="/nonexistent/docker").check()


# -- choosing a backend and what may enter ---------------------------------------------


def test_unsafe_local_needs_the_explicit_flag(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="PATCHWARDEN_SANDBOX_ALLOW_UNSAFE=true"):
        make_sandbox("unsafe-local", state_dir=tmp_path)


def test_make_sandbox_gives_each_backend(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert isinstance(make_sandbox("bwrap", state_dir=tmp_path), BwrapSandbox)
    assert isinstance(make_sandbox("docker", state_dir=tmp_path), DockerSandbox)
    unsafe = make_sandbox("unsafe-local", state_dir=tmp_path, allow_unsafe=True)
    assert isinstance(unsafe, UnsafeLocalSandbox)
    assert not unsafe.isolated
    assert "NO isolation" in caplog.text
    with pytest.raises(SandboxError, match="unknown sandbox backend"):
        make_sandbox("chroot", state_dir=tmp_path)  # type: ignore[arg-type]


async def test_unsafe_local_runs_on_the_host_with_paths_rewritten(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PW_HOST_ONLY_SECRET", "not-for-children")
    sb = UnsafeLocalSandbox()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f").write_text("")
    script = 'pwd; echo "$PW_HOST_ONLY_SECRET"; ls "$1"; echo "$HOME"'
    done = await sb.run(
        ["/bin/sh", "-c", script, "sh", "/workspace/sub"],
        mounts=[Mount(tmp_path, WORKSPACE, writable=True)],
    )
    *lines, _home = done.stdout.splitlines()
    assert lines == [str(tmp_path), "", "f"]
    assert "UNSAFE" in caplog.text


async def test_unsafe_local_leaves_no_home_directory_behind(tmp_path: Path) -> None:
    sb = UnsafeLocalSandbox()
    script = 'echo "$HOME"; echo "$TMPDIR"'
    done = await sb.run(["/bin/sh", "-c", script], mounts=[], cwd=str(tmp_path))
    home, tmpdir = done.stdout.split()
    leaked = on_host(Path(home))
    if leaked and Path(home).name.startswith("patchwarden-tmp-"):
        shutil.rmtree(home)
    assert Path(home).name.startswith("patchwarden-tmp-")  # a throwaway, not the host's
    assert tmpdir == home
    assert not leaked


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ({"GITHUB_TOKEN": "x"}, "GITHUB_TOKEN"),
        ({"GH_TOKEN": "x"}, "GH_TOKEN"),
        ({"PATCHWARDEN_X": "1"}, "PATCHWARDEN_X"),
        ({"OPENAI_API_KEY": "sk-x"}, "OPENAI_API_KEY"),
        ({"AWS_SECRET_ACCESS_KEY": "x"}, "AWS_SECRET_ACCESS_KEY"),
        ({"DB_PASSWORD": "x"}, "DB_PASSWORD"),
        ({"private_key_path": "/k"}, "private_key_path"),
        ({"GIT_CREDENTIALS": "x"}, "GIT_CREDENTIALS"),
        ({"HTTP_AUTH": "x"}, "HTTP_AUTH"),
        ({"FOO": GHS}, "holds a credential"),
        ({"FOO": f"https://x-access-token:{GHS}@github.com/o/r"}, "holds a credential"),
        ({"GIT_CONFIG_VALUE_0": "Authorization: Basic eC1hY2Nlc3M="}, "holds a credential"),
        ({"FOO": "AKIAIOSFODNN7EXAMPLE"}, "holds a credential"),
        ({"A=B": "x"}, "not a valid name"),
        ({"1X": "x"}, "not a valid name"),
        ({"X\nY": "x"}, "not a valid name"),
        ({"": "x"}, "not a valid name"),
    ],
)
def test_check_env_refuses_what_could_carry_a_credential(env: dict[str, str], why: str) -> None:
    with pytest.raises(SandboxError, match=re.escape(why)):
        check_env({"SAFE": "1", **env})


def test_check_env_passes_ordinary_variables() -> None:
    env = {"PYTHONPATH": "/workspace/src", "DJANGO_SETTINGS_MODULE": "site.settings", "X": ""}
    assert check_env(env) == env


# -- output capture --------------------------------------------------------------------


def cut_text(head: str, cut: int, tail: str) -> str:
    return f"{head}\n[... {cut} bytes of output cut by Patchwarden ...]\n{tail}"


@pytest.mark.parametrize(
    ("cap", "chunks", "text", "truncated"),
    [
        (10, [b"hello"], "hello", False),
        (10, [b"0123456789"], "0123456789", False),
        (10, [b"01234", b"56789"], "0123456789", False),
        (10, [b"0123456789A"], cut_text("01234", 1, "6789A"), True),
        (8, [b"ab"] * 10, cut_text("abab", 12, "abab"), True),
        (8, [b"x" * 1000, b"END"], cut_text("xxxx", 995, "xEND"), True),
        (1, [b"abc"], cut_text("", 2, "c"), True),
        (0, [b"abc"], cut_text("", 3, ""), True),
        (10, [], "", False),
    ],
)
def test_capture_keeps_head_and_tail(
    cap: int, chunks: list[bytes], text: str, truncated: bool
) -> None:
    capture = _Capture(cap)
    for chunk in chunks:
        capture.feed(chunk)
    assert capture.text() == text
    assert capture.truncated is truncated
    assert capture.total == sum(map(len, chunks))


@given(
    cap=st.integers(min_value=0, max_value=64),
    chunks=st.lists(st.binary(max_size=40).map(lambda b: bytes(x % 26 + 97 for x in b))),
)
def test_capture_property(cap: int, chunks: list[bytes]) -> None:
    capture = _Capture(cap)
    for chunk in chunks:
        capture.feed(chunk)
        assert len(capture.head) <= capture.head_cap
        assert len(capture.tail) <= 2 * capture.tail_cap  # bounded memory
    data = b"".join(chunks).decode()
    if len(data) <= cap:
        assert capture.text() == data
        assert not capture.truncated
    else:
        head, tail_cap = data[: cap // 2], cap - cap // 2
        tail = data[len(data) - tail_cap :]
        assert capture.text() == cut_text(head, len(data) - cap, tail)
        assert capture.truncated


def test_capture_memory_stays_bounded_under_a_flood() -> None:
    capture = _Capture(64 * KiB)
    block = b"." * 65536
    for _ in range(1600):  # 100 MiB
        capture.feed(block)
    assert len(capture.head) + len(capture.tail) <= 3 * 32 * KiB
    assert capture.total == 100 * MiB


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("/srv/tree,readonly=false", "/workspace"),
        ("/srv/tree", "/workspace,bind-propagation=shared"),
        ("/srv/tree\n", "/workspace"),
    ],
)
def test_a_mount_path_cannot_smuggle_options_into_docker(source: str, target: str) -> None:
    with pytest.raises(SandboxError, match="comma or newline"):
        Mount(Path(source), target)


def _normalised(path: Path) -> str:
    return os.path.normpath(str(path))


@pytest.mark.skipif(BWRAP is None, reason="bubblewrap is not installed")
async def test_an_interpreter_started_through_dot_dot_still_runs_in_the_sandbox(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sandbox_uid: int, mounts: list[Mount]
) -> None:
    """`../.venv/bin/python` leaves `..` in sys.executable; inside the sandbox the folder
    it steps out of does not exist, so the toolchain must be normalised (not resolved:
    a venv's python is a symlink out of the venv)."""
    import sys

    from app.sessions.sandbox import Toolchain

    bin_dir = Path(sys.executable).parent
    detour = f"{bin_dir}/../{bin_dir.name}/{Path(sys.executable).name}"
    monkeypatch.setattr(sys, "executable", detour)
    toolchain = Toolchain.current()
    assert ".." not in toolchain.bin_dir
    assert toolchain.bin_dir == _normalised(bin_dir)
    sandbox = BwrapSandbox(state_dir=tmp_path / "s", uid=sandbox_uid, toolchain=toolchain)
    done = await sandbox.run(["python", "-c", "print('ran')"], mounts=mounts, timeout=30)
    assert done.stderr == ""
    assert done.stdout == "ran\n"
