"""The forge's state: the App, its users and repositories, its tokens, and the requests
it was asked (one part of :class:`~app.localforge.world.World`)."""

from __future__ import annotations

import asyncio
import base64
import itertools
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.localforge.contract import RestContract, WebhookContract
from app.localforge.render import Renderer
from app.localforge.state import (
    Repo,
    User,
)

ZERO_SHA = "0" * 40
GIT_PATH = re.compile(r"^/(?P<owner>[^/]+)/(?P<name>[^/]+?)\.git(?P<rest>/.*)$")
# GitHub's closing keywords, an optional colon, then ``#N`` or ``owner/repo#N``:
# https://docs.github.com/en/issues/tracking-your-work-with-issues/using-issues/linking-a-pull-request-to-an-issue
CLOSING = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)(?:\s*:\s*|\s+)"
    r"(?:(?P<owner>[\w.-]+)/(?P<name>[\w.-]+))?#(?P<number>[0-9]+)\b",
    re.IGNORECASE,
)


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
    """One request the forge received, for assertions."""

    method: str
    path: str  # with the query string
    status: int
    body: Any
    at: float
    auth_kind: str | None  # "installation" | "app" | None
    operation: str | None = None  # the OpenAPI operationId, when it matched one


@dataclass
class Delivery:
    """One webhook delivery the forge made (or tried to)."""

    id: str
    event: str
    action: str | None
    payload: dict[str, Any]
    status: int | None = None  # None: not delivered (no URL, or the receiver was down)
    error: str | None = None


@dataclass
class Violation:
    """A request, answer or delivery that breaks GitHub's published contract."""

    kind: str  # "unknown-operation" | "request" | "response" | "webhook" | "crash"
    where: str
    problems: list[str]

    def __str__(self) -> str:
        return f"{self.kind} {self.where}: {' '.join(self.problems[:5])}"


class ForgeState:
    """What the forge holds: the App, users, repositories, tokens, and the requests it
    was asked with what a test made of them (faults, delays, violations)."""

    def __init__(
        self,
        *,
        app_id: int,
        app_public_key: str,
        app_slug: str = "patchwarden",
        token_lifetime_seconds: float = 3600.0,
        root: Path | None = None,
    ) -> None:
        self.app_id = app_id
        self.app_slug = app_slug
        self.app_public_key = app_public_key
        self.token_lifetime_seconds = token_lifetime_seconds
        self.contract = RestContract.load()
        self.hook_contract = WebhookContract.load()
        self.users: dict[str, User] = {}
        self.repos: dict[str, Repo] = {}
        self.tokens: dict[str, tuple[int, float]] = {}
        self.requests: list[Recorded] = []
        self.violations: list[Violation] = []
        self.faults: list[Fault] = []
        self.delays: list[list[Any]] = []  # [pattern, seconds, times left or None]
        # Set by stop(): a delayed answer ends then, so shutting down never waits it out.
        self.stopping = asyncio.Event()
        self.arrivals: list[str] = []  # "METHOD path", recorded before any delay
        # Apps created from a manifest (world.submit_manifest): code -> (manifest, when)
        self.manifest_codes: dict[str, tuple[dict[str, Any], float]] = {}
        self.created_from_manifest: list[dict[str, Any]] = []
        self.rate_remaining = 5000
        # An installation whose owner has not accepted what the App asks for now:
        # installation id -> (its permissions, its events), as GET /app/installations
        # lists them. Others have everything the manifest asks for.
        self.grants: dict[int, tuple[dict[str, str], list[str]]] = {}
        self._ids = itertools.count(1000)
        self.own_root = root is None
        self.root = root or Path(tempfile.mkdtemp(prefix="localforge-"))
        self.url = ""
        self.born = time.time()  # when the App (and its bot user) was created
        self.render = Renderer(
            base_url="http://localforge.invalid", app_id=app_id, app_slug=app_slug
        )

    def next_id(self) -> int:
        return next(self._ids)

    def user(self, login: str) -> User:
        found = self.users.get(login)
        if found is None:
            found = User(login, self.next_id(), "Bot" if login.endswith("[bot]") else "User")
            self.users[login] = found
        return found

    @property
    def bot(self) -> User:
        return self.user(f"{self.app_slug}[bot]")


def _node_id(kind: str, number: int) -> str:
    return base64.b64encode(f"0:{kind}{number}".encode()).decode()
