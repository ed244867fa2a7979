"""The forge over HTTP: REST (each request and answer checked against GitHub's
published contract, App JWT and installation-token auth, rate-limit headers) and git
over smart HTTP (``git http-backend``, the installation token as the password)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import jwt
from aiohttp import web

from app.localforge import view
from app.localforge.api_errors import ApiError
from app.localforge.forge_base import (
    GIT_PATH,
    Fault,
    Recorded,
    Violation,
)
from app.localforge.git_http import http_backend
from app.localforge.rest import HANDLERS, Answer, Auth, Call
from app.localforge.world import World

# Operations GitHub answers without credentials: the manifest's code is the credential
# itself; a user's public profile is public.
ANONYMOUS = {"apps/create-from-manifest", "users/get-by-username"}


class HTTPFront:
    """The forge's HTTP entry, REST and git, over a :class:`World`: every request goes
    through :meth:`entry`. Counts the pushes it is receiving (:attr:`pushing`)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.state = world.state
        self.pushing = 0  # git pushes being received

    # -- HTTP ------------------------------------------------------------------
    def _rate_headers(self) -> dict[str, str]:
        self.state.rate_remaining = max(self.state.rate_remaining - 1, 0)
        return {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(self.state.rate_remaining),
            "x-ratelimit-reset": str(int(time.time()) + 3600),
            "x-ratelimit-used": str(5000 - self.state.rate_remaining),
            "x-ratelimit-resource": "core",
            "x-github-api-version-selected": "2022-11-28",
        }

    def _json(
        self, body: Any, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> web.Response:
        all_headers = self._rate_headers() | dict(headers or {})
        if body is None:
            return web.Response(status=status, headers=all_headers)
        return web.json_response(body, status=status, headers=all_headers)

    def _auth(self, request: web.Request) -> Auth | ApiError:
        header = request.headers.get("Authorization", "")
        scheme, _, credential = header.partition(" ")
        if scheme.lower() == "bearer" and credential.count(".") == 2:
            try:
                claims = jwt.decode(
                    credential,
                    self.state.app_public_key,
                    algorithms=["RS256"],
                    options={"require": ["iat", "exp", "iss"]},
                )
            except jwt.PyJWTError as exc:
                return ApiError(401, f"A JSON web token could not be decoded: {exc}")
            if claims["exp"] - time.time() > 600 + 5 or claims["iat"] > time.time() + 60:
                return ApiError(401, "'Expiration time' claim ('exp') is too far in the future")
            if str(claims["iss"]) != str(self.state.app_id):
                return ApiError(401, "Integration not found")
            return Auth("app")
        if scheme.lower() in {"token", "bearer"} and credential in self.state.tokens:
            installation_id, expires = self.state.tokens[credential]
            if expires < time.time():
                return ApiError(401, "Bad credentials")
            return Auth("installation", installation_id)
        return ApiError(401, "Bad credentials" if header else "Requires authentication")

    def _basic_auth(self, request: web.Request) -> int | None:
        """The installation a git client's token belongs to, or None."""
        scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            _, _, password = base64.b64decode(credential).decode().partition(":")
        except ValueError:
            return None
        found = self.state.tokens.get(password)
        if found is None or found[1] < time.time():
            return None
        return found[0]

    async def entry(self, request: web.Request) -> web.StreamResponse:
        self.state.arrivals.append(f"{request.method} {request.path}")
        git = GIT_PATH.match(request.path)
        if git:
            return await self._git(request, f"{git['owner']}/{git['name']}", git["rest"])
        if request.method == "GET":
            page = view.page(self.state.repos, request.path)
            if page is not None:
                return web.Response(status=page[0], text=page[1], content_type="text/html")
        raw = await request.read() if request.can_read_body else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            return self._json({"message": "Problems parsing JSON"}, 400)
        await self._delay(request.path)
        auth = self._auth(request)
        auth_kind = auth.kind if isinstance(auth, Auth) else None
        found = self.state.contract.match(request.method, request.path)
        op_id = found[0].id if found else None

        def record(status: int) -> None:
            self.state.requests.append(
                Recorded(
                    request.method, request.path_qs, status, body, time.time(), auth_kind, op_id
                )
            )

        fault = self._fault(request)
        if fault is not None:
            record(fault.status)
            return web.json_response(
                fault.body, status=fault.status, headers=self._rate_headers() | fault.headers
            )
        if found is None:
            record(404)
            return self._unknown(request)
        op, params = found
        if (
            isinstance(auth, ApiError)
            and op.id in ANONYMOUS
            and not request.headers.get("Authorization")
        ):
            auth = Auth("anonymous")  # GitHub answers these without credentials
        if isinstance(auth, ApiError):
            record(auth.status)
            return self._json(self._error_body(op, auth), auth.status)
        problems = self.state.contract.request_problems(op, request.query, body)
        if problems:
            record(422)
            return self._invalid(request, op, problems)
        answer = await self._answer(
            request, Call(self.world, op, params, request.query, body, auth, request), record
        )
        record(answer.status)
        return self._json(answer.body, answer.status, answer.headers)

    async def _delay(self, path: str) -> None:
        """Wait as a test asked requests to ``path`` to wait (or until the forge stops)."""
        for entry in self.state.delays:
            pattern, seconds, times = entry
            if pattern.search(path) and (times is None or times > 0):
                if times is not None:
                    entry[2] = times - 1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.state.stopping.wait(), seconds)

    def _fault(self, request: web.Request) -> Fault | None:
        """The fault a test injected for this request, counted down, or ``None``."""
        for fault in self.state.faults:
            if (
                fault.times > 0
                and fault.method == request.method
                and fault.path.search(request.path)
            ):
                fault.times -= 1
                return fault
        return None

    def _unknown(self, request: web.Request) -> web.Response:
        self.state.violations.append(
            Violation(
                "unknown-operation",
                f"{request.method} {request.path}",
                ["GitHub has no such operation (or LocalForge does not implement it)"],
            )
        )
        return self._json(
            {
                "message": "Not Found",
                "documentation_url": "https://docs.github.com/rest",
                "status": "404",
            },
            404,
        )

    def _invalid(self, request: web.Request, op: Any, problems: list[str]) -> web.Response:
        self.state.violations.append(
            Violation("request", f"{request.method} {request.path} ({op.id})", problems)
        )
        message = "Invalid request.\n\n" + "\n".join(problems)
        return self._json(
            {"message": message, "documentation_url": op.documentation_url, "status": "422"},
            422,
        )

    async def _answer(
        self, request: web.Request, call: Call, record: Callable[[int], None]
    ) -> Answer:
        """The operation's handler's answer, checked against GitHub's description."""
        op = call.op
        try:
            answer = await HANDLERS[op.id](call)
        except ApiError as exc:
            answer = Answer(exc.status, self._error_body(op, exc))
        except Exception as exc:  # a bug in the forge: fail the test that found it, loudly
            where = f"{request.method} {request.path} ({op.id})"
            self.state.violations.append(
                Violation("crash", where, [f"{type(exc).__name__}: {exc}"])
            )
            record(500)
            raise
        documented = str(answer.status) in op.responses
        if documented or answer.status < 400:
            problems = self.state.contract.response_problems(op, answer.status, answer.body)
            if problems:
                self.state.violations.append(
                    Violation(
                        "response",
                        f"{request.method} {request.path} ({op.id}) {answer.status}",
                        problems,
                    )
                )
        return answer

    @staticmethod
    def _error_body(op: Any, exc: ApiError) -> dict[str, Any]:
        body: dict[str, Any] = {
            "message": exc.message,
            "documentation_url": op.documentation_url,
            "status": str(exc.status),
        }
        if exc.errors is not None:
            body["errors"] = exc.errors
        return body

    async def _git(self, request: web.Request, full_name: str, rest: str) -> web.StreamResponse:
        repo = self.state.repos.get(full_name)
        installation = self._basic_auth(request)
        if installation is None:
            self.state.requests.append(
                Recorded(request.method, request.path_qs, 401, None, time.time(), None, "git")
            )
            return web.Response(
                status=401,
                text="Invalid username or token.\n",
                headers={"WWW-Authenticate": 'Basic realm="GitHub"'},
            )
        if repo is None or repo.installation_id != installation:
            self.state.requests.append(
                Recorded(
                    request.method, request.path_qs, 404, None, time.time(), "installation", "git"
                )
            )
            return web.Response(status=404, text="Repository not found.\n")
        pushing = rest.endswith("/git-receive-pack") and request.method == "POST"
        user = self.state.bot.login
        if not pushing:
            response = await http_backend(request, repo.git, path_info=rest, remote_user=user)
        else:
            self.pushing += 1  # settle() waits for what this push sets off
            try:
                async with self.world.rules.lock(repo):
                    before = repo.git.refs()
                    response = await http_backend(
                        request, repo.git, path_info=rest, remote_user=user
                    )
                    after = repo.git.refs()
                    changes = {
                        ref: (before.get(ref), after.get(ref))
                        for ref in before.keys() | after.keys()
                        if before.get(ref) != after.get(ref)
                    }
                    if changes:
                        await self.world.rules.after_push(repo, changes, self.state.bot)
            finally:
                self.pushing -= 1
        self.state.requests.append(
            Recorded(
                request.method,
                request.path_qs,
                response.status,
                None,
                time.time(),
                "installation",
                "git",
            )
        )
        return response
