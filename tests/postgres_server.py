"""A real PostgreSQL server for the tests and benchmarks, started by them.

Debian's ``postgresql`` package gives the binaries (``/usr/lib/postgresql/N/bin``);
``initdb`` and ``pg_ctl`` run as a non-root user (``postgres`` when the tests run as
root, as CI does), on a free loopback port, in a throwaway folder, with a password (so
the URLs the store gets are the URLs users write). ``make test`` installs the package
when it runs as root; elsewhere the PostgreSQL tests are skipped with the reason.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

USER = "patchwarden"
PASSWORD = "pw-test-only"


class Unavailable(Exception):
    """PostgreSQL cannot be started here; the message says why and what to install."""


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise Unavailable(
        "PostgreSQL is not installed (no initdb): apt-get install postgresql "
        "(`make test` does it when run as root)"
    )


def _version(path: str) -> int:
    part = Path(path).parent.parent.name
    return int(part) if part.isdigit() else 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="patchwarden-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise Unavailable("running as root and there is no 'postgres' user") from None
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        self._names = itertools.count(1)
        self._start()

    def _run(self, *argv: str) -> None:
        out = subprocess.run(
            [*self._as, *argv], capture_output=True, text=True, timeout=120, check=False
        )
        if out.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise Unavailable(f"{argv[0]} failed: {out.stderr.strip() or out.stdout}\n{tail}")

    def _start(self) -> None:
        pwfile = self.root / "pwfile"
        pwfile.write_text(PASSWORD + "\n")
        if self._as:
            owner = pwd.getpwnam("postgres")
            os.chown(pwfile, owner.pw_uid, owner.pw_gid)
        pwfile.chmod(0o600)
        self._run(
            str(self.bin / "initdb"),
            "-D", str(self.data),
            "-U", USER,
            f"--pwfile={pwfile}",
            "--auth-host=scram-sha-256",
            "--auth-local=trust",
            "-E", "UTF8",
            "--no-sync",
        )  # fmt: skip
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            str(self.bin / "pg_ctl"),
            "-D", str(self.data),
            "-l", str(self.root / "server.log"),
            "-o", options,
            "-w",
            "start",
        )  # fmt: skip

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def create_database(self, prefix: str = "t") -> str:
        """A new empty database; its URL."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        with contextlib.suppress(Unavailable, subprocess.TimeoutExpired):
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        yield server
    finally:
        server.stop()
