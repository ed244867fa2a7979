"""A local double of GitHub for tests and the offline demo — the first rooms of it.

This version answers the calls the webhook handlers make, as GitHub does:
App JWT auth and installation access tokens, collaborator permission, issue
comments (list, create), reactions (issue and comment), and rate-limit headers on
every answer. It sends signed webhook deliveries like GitHub. Tests can make it
misbehave on purpose (``fail``: answer a status with headers; ``delay``: answer late).
The full double (git over HTTP, pulls, checks, OpenAPI contract checks) grows here.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import secrets
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiohttp
import jwt
from aiohttp import web

from app import signing

JSON_BODY = web.RequestKey("json_body", dict)
AUTH = web.RequestKey("auth", tuple)

ROLES = {
    # role_name -> legacy ``permission`` GitHub folds it into
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
}


@dataclass
class Fault:
    method: str
    path: re.Pattern[str]
    status: int
    headers: dict[str, str]
    body: dict[str, Any]
    times: int


@dataclass
class Recorded:
    method: str
    path: str
    status: int
    body: Any
    at: float
    auth_kind: str | None  # "installation" | "app" | None


@dataclass
class Issue:
    number: int
    title: str
    body: str
    author: str
    comments: list[dict[str, Any]] = field(default_factory=list)
    reactions: list[dict[str, Any]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)


@dataclass
class Repo:
    id: int
    full_name: str
    default_branch: str
    installation_id: int
    collaborators: dict[str, str] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class LocalForge:
    """In-memory GitHub. Start with :meth:`start`; point Patchwarden at :attr:`url`."""

    def __init__(
        self,
        *,
        app_id: int,
        app_public_key: str,
        app_slug: str = "patchwarden",
        webhook_url: str | None = None,
        webhook_secret: str | None = None,
        token_lifetime_seconds: float = 3600.0,
    ) -> None:
        self.app_id = app_id
        self.app_slug = app_slug
        self._public_key = app_public_key
        self.webhook_url = webhook_url
        self.webhook_secret = webhook_secret
        self.token_lifetime_seconds = token_lifetime_seconds
        self.repos: dict[str, Repo] = {}
        self.tokens: dict[str, tuple[int, float]] = {}
        self.requests: list[Recorded] = []
        self.deliveries: list[tuple[str, str, int]] = []  # (event, delivery id, status)
        self.faults: list[Fault] = []
        self.delays: list[list[Any]] = []  # [pattern, seconds, times left or None]
        self.arrivals: list[str] = []  # "METHOD path", recorded before any delay
        self.rate_remaining = 5000
        self.comment_reacts: dict[int, list[dict[str, Any]]] = {}
        self._ids = itertools.count(1000)
        self._runner: web.AppRunner | None = None
        self.url = ""

    # -- lifecycle ----------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        sock = site._server.sockets[0]  # type: ignore[union-attr]
        self.url = f"http://{host}:{sock.getsockname()[1]}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- the test and demo API ---------------------------------------------
    def add_repo(
        self, full_name: str, *, installation_id: int = 1, default_branch: str = "main"
    ) -> Repo:
        repo = Repo(next(self._ids), full_name, default_branch, installation_id)
        self.repos[full_name] = repo
        return repo

    def add_user(self, repo: str, login: str, role: str) -> None:
        if role not in ROLES:
            raise ValueError(f"role must be one of {sorted(ROLES)}")
        self.repos[repo].collaborators[login] = role

    def open_issue(self, repo: str, title: str, body: str = "", *, author: str) -> Issue:
        r = self.repos[repo]
        issue = Issue(len(r.issues) + 1, title, body, author)
        r.issues[issue.number] = issue
        return issue

    def fail(
        self,
        method: str,
        path: str,
        status: int,
        *,
        headers: dict[str, str] | None = None,
        message: str = "failure injected by the test",
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` matching requests with ``status`` and ``headers``."""
        self.faults.append(
            Fault(
                method.upper(), re.compile(path), status, headers or {}, {"message": message}, times
            )
        )

    def delay(self, path: str, seconds: float, *, times: int | None = None) -> None:
        """Answer matching requests ``seconds`` late (the next ``times`` ones, or all)."""
        self.delays.append([re.compile(path), seconds, times])

    def calls(self, method: str, path_re: str) -> list[Recorded]:
        pattern = re.compile(path_re)
        return [r for r in self.requests if r.method == method and pattern.search(r.path)]

    def user(self, login: str) -> dict[str, Any]:
        kind = "Bot" if login.endswith("[bot]") else "User"
        return {"login": login, "id": abs(hash(login)) % 10**8, "type": kind, "site_admin": False}

    def repository_payload(self, repo: Repo) -> dict[str, Any]:
        owner, name = repo.full_name.split("/")
        return {
            "id": repo.id,
            "name": name,
            "full_name": repo.full_name,
            "private": False,
            "owner": self.user(owner) | {"type": "Organization"},
            "default_branch": repo.default_branch,
            "html_url": f"https://github.test/{repo.full_name}",
        }

    def issue_payload(self, repo: Repo, issue: Issue) -> dict[str, Any]:
        return {
            "id": issue.number + repo.id * 1000,
            "number": issue.number,
            "title": issue.title,
            "body": issue.body,
            "user": self.user(issue.author),
            "state": "open",
            "labels": [{"name": name} for name in issue.labels],
            "html_url": f"https://github.test/{repo.full_name}/issues/{issue.number}",
        }

    async def post_comment(
        self, repo: str, number: int, body: str, *, author: str, send: bool = True
    ) -> dict[str, Any]:
        """A user comments on an issue; GitHub sends ``issue_comment`` (created)."""
        r = self.repos[repo]
        issue = r.issues[number]
        comment = self._new_comment(r, issue, body, author)
        if send:
            await self.send("issue_comment", self.comment_event(repo, number, comment))
        return comment

    def comment_event(
        self, repo: str, number: int, comment: dict[str, Any], *, action: str = "created"
    ) -> dict[str, Any]:
        """The ``issue_comment`` payload GitHub sends for ``comment`` on issue ``number``."""
        r = self.repos[repo]
        return {
            "action": action,
            "issue": self.issue_payload(r, r.issues[number]),
            "comment": comment,
            "repository": self.repository_payload(r),
            "sender": comment["user"],
            "installation": {"id": r.installation_id, "node_id": "MDQ6VGVzdA=="},
        }

    async def add_label(self, repo: str, number: int, label: str, *, actor: str) -> None:
        r = self.repos[repo]
        issue = r.issues[number]
        issue.labels.append(label)
        await self.send(
            "issues",
            {
                "action": "labeled",
                "issue": self.issue_payload(r, issue),
                "label": {"name": label, "color": "ededed"},
                "repository": self.repository_payload(r),
                "sender": self.user(actor),
                "installation": {"id": r.installation_id, "node_id": "MDQ6VGVzdA=="},
            },
        )

    async def send(
        self, event: str, payload: dict[str, Any], *, delivery_id: str | None = None
    ) -> int:
        """POST a signed delivery to ``webhook_url``, as GitHub does; return the status."""
        if not self.webhook_url or not self.webhook_secret:
            raise RuntimeError("set webhook_url and webhook_secret before sending deliveries")
        body = json.dumps(payload).encode()
        delivery_id = delivery_id or str(uuid.uuid4())
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/localforge",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery_id,
            "X-GitHub-Hook-ID": "1",
            "X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-GitHub-Hook-Installation-Target-ID": str(self.app_id),
            "X-Hub-Signature-256": signing.sign(body, secret=self.webhook_secret),
        }
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.webhook_url, data=body, headers=headers) as response,
        ):
            self.deliveries.append((event, delivery_id, response.status))
            return response.status

    # -- the HTTP side ------------------------------------------------------
    def _new_comment(self, repo: Repo, issue: Issue, body: str, author: str) -> dict[str, Any]:
        cid = next(self._ids)
        comment = {
            "id": cid,
            "node_id": f"IC_{cid}",
            "body": body,
            "user": self.user(author),
            "html_url": f"https://github.test/{repo.full_name}/issues/{issue.number}#issuecomment-{cid}",
            "created_at": _iso(time.time()),
            "updated_at": _iso(time.time()),
            "author_association": "MEMBER" if author in repo.collaborators else "NONE",
        }
        issue.comments.append(comment)
        return comment

    def _rate_headers(self) -> dict[str, str]:
        self.rate_remaining = max(self.rate_remaining - 1, 0)
        return {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(self.rate_remaining),
            "x-ratelimit-reset": str(int(time.time()) + 3600),
            "x-ratelimit-used": str(5000 - self.rate_remaining),
            "x-ratelimit-resource": "core",
        }

    def _auth(self, request: web.Request) -> tuple[str, Any] | web.Response:
        header = request.headers.get("Authorization", "")
        scheme, _, credential = header.partition(" ")
        if scheme.lower() == "bearer" and credential.count(".") == 2:
            try:
                claims = jwt.decode(
                    credential,
                    self._public_key,
                    algorithms=["RS256"],
                    options={"require": ["iat", "exp", "iss"]},
                )
            except jwt.PyJWTError as exc:
                return self._json({"message": f"A JSON web token could not be decoded: {exc}"}, 401)
            if claims["exp"] - time.time() > 600 + 5 or claims["iat"] > time.time() + 60:
                return self._json(
                    {"message": "'Expiration time' claim ('exp') is too far in the future"}, 401
                )
            if str(claims["iss"]) != str(self.app_id):
                return self._json({"message": "Integration not found"}, 401)
            return "app", claims
        if scheme.lower() in {"token", "bearer"} and credential in self.tokens:
            installation_id, expires = self.tokens[credential]
            if expires < time.time():
                return self._json({"message": "Bad credentials"}, 401)
            return "installation", installation_id
        return self._json({"message": "Bad credentials"}, 401)

    def _json(self, body: Any, status: int = 200) -> web.Response:
        return web.json_response(body, status=status, headers=self._rate_headers())

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        body: Any = None
        if request.can_read_body:
            raw = await request.read()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                return self._json({"message": "Problems parsing JSON"}, 400)
        request[JSON_BODY] = body if isinstance(body, dict) else {}
        self.arrivals.append(f"{request.method} {request.path}")
        for entry in self.delays:
            pattern, seconds, times = entry
            if pattern.search(request.path) and (times is None or times > 0):
                if times is not None:
                    entry[2] = times - 1
                await asyncio.sleep(seconds)
        auth = self._auth(request)
        auth_kind = auth[0] if isinstance(auth, tuple) else None
        for fault in self.faults:
            if (
                fault.times > 0
                and fault.method == request.method
                and fault.path.search(request.path)
            ):
                fault.times -= 1
                headers = self._rate_headers() | fault.headers
                self.requests.append(
                    Recorded(
                        request.method, request.path_qs, fault.status, body, time.time(), auth_kind
                    )
                )
                return web.json_response(fault.body, status=fault.status, headers=headers)
        if isinstance(auth, web.Response):
            response: web.StreamResponse = auth
        else:
            request[AUTH] = auth
            response = await handler(request)
        self.requests.append(
            Recorded(request.method, request.path_qs, response.status, body, time.time(), auth_kind)
        )
        return response

    def _repo(self, request: web.Request) -> Repo | web.Response:
        full = f"{request.match_info['owner']}/{request.match_info['repo']}"
        repo = self.repos.get(full)
        kind, value = request[AUTH]
        if repo is None or kind != "installation" or value != repo.installation_id:
            return self._json({"message": "Not Found"}, 404)
        return repo

    def _issue(self, request: web.Request) -> tuple[Repo, Issue] | web.Response:
        repo = self._repo(request)
        if isinstance(repo, web.Response):
            return repo
        issue = repo.issues.get(int(request.match_info["number"]))
        if issue is None:
            return self._json({"message": "Not Found"}, 404)
        return repo, issue

    async def _access_token(self, request: web.Request) -> web.Response:
        kind, _ = request[AUTH]
        if kind != "app":
            return self._json({"message": "A JSON web token could not be decoded"}, 401)
        installation_id = int(request.match_info["installation_id"])
        if not any(r.installation_id == installation_id for r in self.repos.values()):
            return self._json({"message": "Not Found"}, 404)
        token = "ghs_" + secrets.token_urlsafe(27).replace("-", "a").replace("_", "b")[:36]
        expires = time.time() + self.token_lifetime_seconds
        self.tokens[token] = (installation_id, expires)
        return self._json(
            {
                "token": token,
                "expires_at": _iso(expires),
                "permissions": {"issues": "write", "contents": "write"},
                "repository_selection": "all",
            },
            201,
        )

    async def _permission(self, request: web.Request) -> web.Response:
        repo = self._repo(request)
        if isinstance(repo, web.Response):
            return repo
        login = request.match_info["username"]
        role = repo.collaborators.get(login)
        if role is None:
            return self._json({"message": f"{login} is not a user"}, 404)
        return self._json({"permission": ROLES[role], "role_name": role, "user": self.user(login)})

    async def _list_comments(self, request: web.Request) -> web.Response:
        found = self._issue(request)
        if isinstance(found, web.Response):
            return found
        return self._json(found[1].comments)

    async def _create_comment(self, request: web.Request) -> web.Response:
        found = self._issue(request)
        if isinstance(found, web.Response):
            return found
        body = request[JSON_BODY]
        if not isinstance(body.get("body"), str):
            return self._json({"message": 'Invalid request.\n\n"body" wasn\'t supplied.'}, 422)
        repo, issue = found
        return self._json(
            self._new_comment(repo, issue, body["body"], f"{self.app_slug}[bot]"), 201
        )

    def _react(self, target: list[dict[str, Any]], content: str) -> web.Response:
        if content not in {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}:
            return self._json({"message": "Validation Failed"}, 422)
        bot = f"{self.app_slug}[bot]"
        for reaction in target:
            if reaction["content"] == content and reaction["user"]["login"] == bot:
                return self._json(reaction, 200)
        reaction = {"id": next(self._ids), "content": content, "user": self.user(bot)}
        target.append(reaction)
        return self._json(reaction, 201)

    async def _comment_reaction(self, request: web.Request) -> web.Response:
        repo = self._repo(request)
        if isinstance(repo, web.Response):
            return repo
        cid = int(request.match_info["comment_id"])
        for issue in repo.issues.values():
            for comment in issue.comments:
                if comment["id"] == cid:
                    reactions = self.comment_reacts.setdefault(cid, [])
                    return self._react(reactions, request[JSON_BODY].get("content", ""))
        return self._json({"message": "Not Found"}, 404)

    async def _issue_reaction(self, request: web.Request) -> web.Response:
        found = self._issue(request)
        if isinstance(found, web.Response):
            return found
        return self._react(found[1].reactions, request[JSON_BODY].get("content", ""))

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware])
        r = app.router
        r.add_post("/app/installations/{installation_id}/access_tokens", self._access_token)
        base = "/repos/{owner}/{repo}"
        r.add_get(base + "/collaborators/{username}/permission", self._permission)
        r.add_get(base + "/issues/{number}/comments", self._list_comments)
        r.add_post(base + "/issues/{number}/comments", self._create_comment)
        r.add_post(base + "/issues/{number}/reactions", self._issue_reaction)
        r.add_post(base + "/issues/comments/{comment_id}/reactions", self._comment_reaction)
        return app

    # -- reading state ------------------------------------------------------
    def comment_reactions(self, comment_id: int) -> list[str]:
        return [r["content"] for r in self.comment_reacts.get(comment_id, [])]
