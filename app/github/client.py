"""The GitHub API client: gidgethub over the process's one aiohttp session.

What this adds to gidgethub:
- installation-token auth: the current token is put on every request, and a 401
  refreshes it once and retries once;
- rate limits handled as GitHub documents them (see ``ratelimit.py``), with bounded
  retries, through gidgethub's ``handle_rate_limit_error`` hook;
- mutating requests (POST/PATCH/PUT/DELETE) serialised per installation, as GitHub
  asks of integrations (https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#avoid-concurrent-requests):
  a write holds the installation's lock for the whole logical request — its rate-limit
  waits and retries included — so writes made after it leave after it, in the order
  they were made; the lock is released when the write succeeds, is refused
  (not a rate limit: no retry), runs out of retries, raises or is cancelled;
- one rate-limit gate per installation (and one for the App's JWT calls): a rate limit
  one request meets pauses every request of that installation until GitHub's reset, as
  GitHub asks ("stop making requests until the reset"), not just the request that met
  it — in this process,
  and through the store (``shared``) in every other process of the deployment, which
  looks at most once a second per installation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import gidgethub
import gidgethub.aiohttp
from gidgethub.abc import JSON_CONTENT_TYPE

from app import __version__
from app.github.auth import AppAuth
from app.github.ratelimit import rate_limit_wait

log = logging.getLogger(__name__)

MUTATING = frozenset({"POST", "PATCH", "PUT", "DELETE"})
USER_AGENT = f"patchwarden/{__version__}"


# The pause this task already slept through (its own rate limit): its retry goes at once.
_WAITED: ContextVar[float] = ContextVar("patchwarden_github_waited", default=0.0)

# The installation write lock this task holds for its whole request (retries included),
# so the request's own HTTP attempts do not queue behind themselves.
_HOLDING: ContextVar[asyncio.Lock | None] = ContextVar("patchwarden_github_holding", default=None)


SHARED_CHECK_SECONDS = 1.0  # how often a process reads the other processes' pauses


class SharedPauses(Protocol):
    """Where the processes of a deployment tell each other of rate limits (the store)."""

    async def pause_requests(self, scope: str, until: float) -> None: ...

    async def requests_paused_until(self, scope: str) -> float: ...


class Gate:
    """Until when no request of one installation (or of the App) may leave."""

    def __init__(self) -> None:
        self.until = 0.0  # epoch seconds
        self.pauses = 0  # rate limits that moved it (for /metrics)
        self.held = 0  # requests that waited at it for another's rate limit
        self.checked = 0.0  # when the shared pauses were last read

    def pause(self, until: float) -> None:
        if until > self.until:
            self.until = until
            self.pauses += 1


@dataclass(frozen=True)
class RetryPolicy:
    base_seconds: float = 60.0
    max_retries: int = 5
    max_wait_seconds: float = 900.0


class GitHubClient(gidgethub.aiohttp.GitHubAPI):
    """gidgethub's client, acting as one installation of the App (or as the App)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        base_url: str,
        token: Callable[[], Awaitable[str]] | None = None,
        refresh: Callable[[], None] | None = None,
        scheme: str = "token",
        mutation_lock: asyncio.Lock | None = None,
        gate: Gate | None = None,
        shared: SharedPauses | None = None,
        scope: str = "app",
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(session, USER_AGENT, base_url=base_url)
        self._shared = shared
        self._scope = scope
        self._token = token
        self._refresh = refresh
        self._scheme = scheme
        self._mutation_lock = mutation_lock
        self.gate = gate or Gate()
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._clock = clock
        self.waits: list[float] = []  # every rate-limit wait, for doctor and tests

    async def sleep(self, seconds: float) -> None:
        await self._sleep(seconds)

    async def _send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Mapping[str, str], bytes]:
        request_headers = dict(headers)
        request_headers.setdefault("x-github-api-version", "2022-11-28")
        if self._token is not None:
            request_headers["authorization"] = f"{self._scheme} {await self._token()}"
        return await super()._request(method, url, request_headers, body)

    @contextlib.asynccontextmanager
    async def _in_turn(self, method: str) -> AsyncIterator[None]:
        """Hold the installation's write lock for a mutating request (FIFO: writes go in
        the order they asked); reads, App calls and a task already holding it pass."""
        lock = self._mutation_lock
        if lock is None or method.upper() not in MUTATING or _HOLDING.get() is lock:
            yield
            return
        async with lock:  # released on return, exception and cancellation alike
            held = _HOLDING.set(lock)
            try:
                yield
            finally:
                _HOLDING.reset(held)

    async def _make_request(
        self,
        method: str,
        url: str,
        url_vars: Mapping[str, Any] | None,
        data: Any,
        accept: str,
        jwt: str | None = None,
        oauth_token: str | None = None,
        content_type: str = JSON_CONTENT_TYPE,
        extra_headers: dict[str, str] | None = None,
    ) -> tuple[bytes, str | None, int]:
        """gidgethub's request with its retry loop, a write holding its turn throughout:
        a write queued behind one that waits out a rate limit goes after that one's retry."""
        async with self._in_turn(method):
            return await super()._make_request(
                method,
                url,
                url_vars,
                data,
                accept,
                jwt=jwt,
                oauth_token=oauth_token,
                content_type=content_type,
                extra_headers=extra_headers,
            )

    async def _request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> tuple[int, Mapping[str, str], bytes]:
        # One HTTP attempt. A write coming through _make_request already holds its turn;
        # one that does not (gidgethub's graphql) takes it here.
        async with self._in_turn(method):
            await self._at_gate(method, url)
            return await self._request_with_auth(method, url, headers, body)

    async def _at_gate(self, method: str, url: str) -> None:
        """Wait out a rate limit another request of this installation met (in this
        process, or in another: read from the store at most once a second)."""
        gate = self.gate
        now = self._clock()
        if self._shared is not None and now - gate.checked >= SHARED_CHECK_SECONDS:
            gate.checked = now
            try:
                gate.until = max(gate.until, await self._shared.requests_paused_until(self._scope))
            except Exception as exc:  # the database blinked: this process's own gate holds
                log.warning("rate-limit pauses unreadable from the store: %s", exc)
        delay = gate.until - self._clock()
        if delay > 0 and gate.until > _WAITED.get():
            gate.held += 1
            log.info("%s %s: held %.1fs, the installation is rate limited", method, url, delay)
            await self.sleep(delay)

    async def _request_with_auth(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Mapping[str, str], bytes]:
        status, response_headers, response_body = await self._send(method, url, headers, body)
        if status == 401 and self._refresh is not None:
            # The token was revoked or expired early: mint a new one, try once more.
            log.info("GitHub answered 401 to %s %s; refreshing the token once", method, url)
            self._refresh()
            status, response_headers, response_body = await self._send(method, url, headers, body)
        return status, response_headers, response_body

    async def handle_rate_limit_error(
        self,
        *,
        method: str,
        url: str,
        exception: gidgethub.HTTPException,
        attempt: int,
    ) -> bool:
        wait = rate_limit_wait(
            int(exception.status_code),
            exception.headers or {},
            str(exception),
            attempt=attempt,
            now=self._clock(),
            base_seconds=self.policy.base_seconds,
        )
        if wait is None:
            return False
        if attempt > self.policy.max_retries:
            log.warning(
                "%s %s: still rate limited after %d retries; giving up", method, url, attempt - 1
            )
            return False
        if wait > self.policy.max_wait_seconds:
            log.warning(
                "%s %s: GitHub asks to wait %.0fs, more than the %.0fs allowed; giving up",
                method,
                url,
                wait,
                self.policy.max_wait_seconds,
            )
            return False
        log.warning(
            "%s %s: rate limited (HTTP %s); waiting %.1fs", method, url, exception.status_code, wait
        )
        self.waits.append(wait)
        self.gate.pause(self._clock() + wait)  # every request of the installation waits
        _WAITED.set(self.gate.until)
        if self._shared is not None:  # ... in every process
            try:
                await self._shared.pause_requests(self._scope, self.gate.until)
            except Exception as exc:
                log.warning("rate-limit pause not shared through the store: %s", exc)
        await self.sleep(wait)
        return True


class GitHubApp:
    """The App: its auth, one lock per installation, and clients on the shared session."""

    def __init__(
        self,
        *,
        app_id: int,
        private_key: str,
        api_url: str,
        session: aiohttp.ClientSession,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        shared: SharedPauses | None = None,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.shared = shared
        self.session = session
        self.auth = AppAuth(
            app_id=app_id,
            private_key=private_key,
            api_url=self.api_url,
            session=session,
            user_agent=USER_AGENT,
        )
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._locks: dict[int, asyncio.Lock] = {}
        self.gates: dict[int | None, Gate] = {}  # None: the App's own (JWT) calls

    def installation(self, installation_id: int) -> GitHubClient:
        """A client acting as the installation (an installation access token)."""

        async def token() -> str:
            return await self.auth.installation_token(installation_id)

        return GitHubClient(
            self.session,
            base_url=self.api_url,
            token=token,
            refresh=lambda: self.auth.invalidate(installation_id),
            mutation_lock=self._locks.setdefault(installation_id, asyncio.Lock()),
            gate=self.gates.setdefault(installation_id, Gate()),
            shared=self.shared,
            scope=str(installation_id),
            policy=self.policy,
            sleep=self._sleep,
        )

    def as_app(self) -> GitHubClient:
        """A client acting as the App itself (its JWT), for /app endpoints."""

        async def token() -> str:
            return self.auth.jwt()

        return GitHubClient(
            self.session,
            base_url=self.api_url,
            token=token,
            scheme="Bearer",
            gate=self.gates.setdefault(None, Gate()),
            shared=self.shared,
            scope="app",
            policy=self.policy,
            sleep=self._sleep,
        )
