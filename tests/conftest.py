"""The one test harness: the local GitHub double and the real server, on loopback.

No mocks of HTTP or gidgethub: the server is the real aiohttp app with its real
store (a SQLite file in tmp_path) and workers, and GitHub is ``app.localforge``.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pytest_aiohttp import AiohttpServer

from app.config import Settings, load_settings
from app.fixers.registry import KNOWN
from app.git import git_env
from app.github import signing
from app.localforge import LocalForge
from app.localforge.keys import generate_app_key
from app.runtime import Runtime
from app.server import RUNTIME, create_app
from app.sessions.backends import BwrapSandbox
from app.sessions.empty_env import EMPTY
from app.sessions.mirrors import WorkspaceCache
from app.sessions.session import SessionRunner
from app.store import JobState
from tests.postgres_server import PostgresServer, Unavailable

pytest_plugins = ["tests.profiling"]  # --profile-json: where the time goes (make test-profile)

APP_ID = 4242
INSTALLATION = 7
REPO = "octo-org/widgets"
SECRET = "It's a Secret to Everybody"
FIXTURES = Path(__file__).parent / "fixtures" / "webhooks"


# Fixtures that start the GitHub double (and with it, often, the server and workers):
# a test using one is an integration story, not a unit test. ``make check`` leaves
# them out; ``make test`` runs them.
STARTS_THE_FORGE = {"make_forge"}  # every fixture that starts it depends on this one


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the forge's tests; then put the longest units of work first — the tests
    that share a worker (an ``xdist_group``: a real project's, the wheel's), then those
    that start real processes — so that ``make test``'s workers end together instead
    of one running the last real project while the other waits (the order is the same
    on every worker: a stable sort)."""
    for item in items:
        if STARTS_THE_FORGE & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.forge)
    items.sort(
        key=lambda i: (
            i.get_closest_marker("xdist_group") is None,
            i.get_closest_marker("slow") is None,
        )
    )


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No PATCHWARDEN_* from the developer's shell and no stray .env leak into tests."""
    import os

    for name in list(os.environ):
        if name.startswith("PATCHWARDEN_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the session (skipped, saying why, where it cannot
    be started); each test takes a fresh database from it."""
    try:
        server = PostgresServer()
    except Unavailable as exc:
        pytest.skip(str(exc))
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty database on each store: a SQLite file, and a PostgreSQL database.
    A test taking it is part of the store's contract: it must hold on both."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'pw.db'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database()


@pytest.fixture(scope="session")
def app_keys() -> tuple[str, str]:
    return generate_app_key()


@pytest.fixture
async def make_forge(
    app_keys: tuple[str, str],
) -> AsyncIterator[Callable[..., Awaitable[LocalForge]]]:
    """Start forges holding ``REPO`` (``add_repo`` keywords: ``source=`` a directory).

    At teardown every request, answer and delivery must have kept GitHub's published
    contract; a test that breaks it on purpose collects the violations with
    ``forge.expect_violations()``."""
    started: list[LocalForge] = []

    async def make(**repo: Any) -> LocalForge:
        f = LocalForge(app_id=APP_ID, app_public_key=app_keys[1], webhook_secret=SECRET)
        started.append(f)
        await f.start()
        f.add_repo(REPO, installation_id=INSTALLATION, **repo)
        return f

    yield make
    for f in started:
        await f.stop()
    broken = [str(v) for f in started for v in f.violations]
    assert not broken, "GitHub contract broken:\n" + "\n".join(broken)


@pytest.fixture
async def forge(make_forge: Callable[..., Awaitable[LocalForge]]) -> LocalForge:
    return await make_forge()


@pytest.fixture
def make_settings(
    tmp_path: Path, app_keys: tuple[str, str], forge: LocalForge
) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "app_id": APP_ID,
            "private_key": app_keys[0],
            "webhook_secret": SECRET,
            "github_api_url": forge.url,
            "database_url": f"sqlite:///{tmp_path / 'patchwarden.db'}",
            "poll_seconds": 0.05,
            "lease_seconds": 5,
            "retry_base_seconds": 0.05,
            "rate_limit_base_seconds": 0.05,
            "cache_dir": tmp_path / "cache",
            "dashboard_seconds": 0.2,
            # Intake tests see fix jobs queued; tests of the pipeline ask for workers.
            "workers": 0,
        }
        values.update(overrides)
        return load_settings(**values)

    return make


@dataclass
class Harness:
    """The running server plus the forge, with helpers a test reads like a story."""

    forge: LocalForge
    url: str
    runtime: Runtime
    session: aiohttp.ClientSession
    server: Any = None  # the aiohttp TestServer: ``await server.close()`` stops the process

    @property
    def store(self) -> Any:
        return self.runtime.store

    async def post_webhook(
        self,
        event: str,
        payload: dict[str, Any] | bytes,
        *,
        delivery_id: str | None = None,
        secret: str | None = SECRET,
        signature: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        h = {
            "Content-Type": "application/json",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        }
        if signature is not None:
            h["X-Hub-Signature-256"] = signature
        elif secret is not None:
            h["X-Hub-Signature-256"] = signing.sign(body, secret=secret)
        h.update(headers or {})
        data: Any = io.BytesIO(body) if len(body) > 1024 * 1024 else body
        async with self.session.post(f"{self.url}/webhooks/github", data=data, headers=h) as r:
            return r.status, await r.json(content_type=None)

    async def settle(self, within: float = 10.0, *, every_job: bool = False) -> None:
        """Wait until the forge has delivered everything and no delivery job is pending
        (``every_job``: no job of any kind — the pipeline's sessions and merges too).

        Handlers write to the forge, which sends new deliveries (the App's own
        comments come back as ``issue_comment``), so this loops until both are quiet.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        pending: list[Any] = []
        while loop.time() < deadline:
            await self.forge.settle(within=max(deadline - loop.time(), 0.1))
            jobs = await self.store.queue.list_jobs(kind=None if every_job else "delivery")
            pending = [j for j in jobs if j.state not in (JobState.SUCCEEDED, JobState.FAILED)]
            if not pending and self.forge.idle:
                return
            await asyncio.sleep(0.02)
        raise TimeoutError(f"jobs still pending: {[(j.kind, j.state) for j in pending]}")

    async def jobs(self, kind: str) -> list[Any]:
        return list(await self.store.queue.list_jobs(kind=kind))


@pytest.fixture
async def make_pw(
    aiohttp_server: AiohttpServer,
    make_settings: Callable[..., Settings],
    forge: LocalForge,
) -> AsyncIterator[Callable[..., Awaitable[Harness]]]:
    """Start the real server with settings overrides; the forge delivers to it."""
    async with aiohttp.ClientSession() as session:

        async def start(**overrides: Any) -> Harness:
            app = create_app(make_settings(**overrides))
            server = await aiohttp_server(app)
            url = str(server.make_url("")).rstrip("/")
            forge.hooks.webhook_url = f"{url}/webhooks/github"
            return Harness(
                forge=forge, url=url, runtime=app[RUNTIME], session=session, server=server
            )

        yield start


@pytest.fixture
async def pw(make_pw: Callable[..., Awaitable[Harness]]) -> Harness:
    return await make_pw()


def load_fixture(relative: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / relative).read_text())
    return data


def with_installation(
    payload: dict[str, Any], installation_id: int = INSTALLATION
) -> dict[str, Any]:
    """Point a real example payload at the test installation and repository."""
    payload = json.loads(json.dumps(payload))
    payload["installation"] = {"id": installation_id, "node_id": "MDQ6VGVzdA=="}
    return payload


# -- generated projects and coding sessions (the sessions and fixers tests) ------

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
CALC_TESTS = (
    "from calc import add, mul\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)

# Fails one run in three (the third, sixth, ...): a run counter kept in the work tree.
FLAKY_TESTS = (
    "import pathlib\n\n\ndef test_sometimes():\n"
    "    counter = pathlib.Path('runs.txt')\n"
    "    n = int(counter.read_text()) if counter.exists() else 0\n"
    "    counter.write_text(str(n + 1))\n"
    "    assert n % 3 != 2\n"
)


def git_commit(path: Path, message: str, *, author: str = "T <t@example.com>") -> str:
    """Commit everything in the work tree at ``path``; return the new sha."""
    name, email = author[: author.index(" <")], author[author.index("<") + 1 : -1]
    env = git_env(path)
    for argv in (
        ["git", "add", "-A"],
        ["git", "-c", f"user.name={name}", "-c", f"user.email={email}", "commit", "-qm", message],
    ):
        subprocess.run(argv, cwd=path, env=env, check=True, capture_output=True)
    done = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=path, env=env, check=True, capture_output=True
    )
    return done.stdout.decode().strip()


def git_in(path: Path, *args: str) -> str:
    """``git ARGS`` in the work tree at ``path`` (no global config); its stdout."""
    done = subprocess.run(
        ["git", *args], cwd=path, env=git_env(path), check=True, capture_output=True
    )
    return done.stdout.decode()


def make_project(path: Path, files: dict[str, str]) -> Path:
    """A git repository at ``path`` (branch main) with ``files`` in one commit."""
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git_in(path, "init", "-q", "-b", "main")
    git_commit(path, "init")
    return path


def running_with(marker: str) -> list[str]:
    """Command lines of host processes that contain ``marker``."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:  # not a process, or gone meanwhile
            continue
        if marker.encode() in cmdline:
            found.append(cmdline.decode(errors="replace"))
    return found


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """calc.py with a bug in add(), and its tests (test_add fails)."""
    files = {"calc.py": CALC, "test_calc.py": CALC_TESTS, "pytest.ini": "[pytest]\n"}
    return make_project(tmp_path / "calc", files)


@pytest.fixture(scope="session")
def empty_environments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder per test process for the empty environment every setup starts from
    (``python -m venv /env``, made once per interpreter: app/sessions/environment.py)."""
    return tmp_path_factory.mktemp("empty-environments")


def cache_at(root: Path, empty_environments: Path) -> WorkspaceCache:
    """A new cache at ``root`` whose environments start from ``empty_environments``
    (shared by the tests of one process: no repository has a say in it), not from an
    empty environment each test makes again in seconds."""
    root.mkdir(parents=True, exist_ok=True)
    (root / EMPTY).symlink_to(empty_environments, target_is_directory=True)
    return WorkspaceCache(root)


@pytest.fixture
def runner(tmp_path: Path, empty_environments: Path) -> SessionRunner:
    """Sessions on the real bubblewrap sandbox, with a cache in tmp_path."""
    sandbox = BwrapSandbox(state_dir=tmp_path / "sandbox")
    cache = cache_at(tmp_path / "cache", empty_environments)
    return SessionRunner(fixers=KNOWN, cache=cache, sandbox=sandbox)
