"""What every LocalForge REST handler is given and gives back: the call (the matched
operation, its parameters and body, who asks) and the answer, and the registry of
handlers by GitHub's operationId (``op``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

from aiohttp import web

from app.localforge.api_errors import ApiError
from app.localforge.contract import Operation
from app.localforge.state import (
    Issue,
    Pull,
    Repo,
    User,
)

if TYPE_CHECKING:
    from app.localforge.world import World


@dataclass
class Auth:
    kind: str  # "installation" | "app" | "anonymous" (ANONYMOUS operations only)
    installation_id: int | None = None


@dataclass
class Answer:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[["Call"], Awaitable[Answer]]
HANDLERS: dict[str, Handler] = {}
T = TypeVar("T")


def op(op_id: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        HANDLERS[op_id] = handler
        return handler

    return register


@dataclass
class Call:
    forge: World
    op: Operation
    params: dict[str, str]
    query: Mapping[str, str]
    body: Any
    auth: Auth
    request: web.Request

    @property
    def repo(self) -> Repo:
        """The repository in the path, if this installation may see it (404 otherwise)."""
        repo = self.forge.repos.get(f"{self.params['owner']}/{self.params['repo']}")
        if self.auth.kind != "installation":
            raise ApiError(403, "Resource not accessible by integration")
        if repo is None or repo.installation_id != self.auth.installation_id:
            raise ApiError(404, "Not Found")
        return repo

    @property
    def bot(self) -> User:
        return self.forge.state.bot

    def field(self, name: str, default: Any = None) -> Any:
        return self.body.get(name, default) if isinstance(self.body, dict) else default

    def issue(self, repo: Repo, key: str = "issue_number") -> Issue:
        issue = repo.issues.get(int(self.params[key]))
        if issue is None:
            raise ApiError(404, "Not Found")
        return issue

    def pull(self, repo: Repo) -> Pull:
        pull = repo.pulls.get(int(self.params["pull_number"]))
        if pull is None:
            raise ApiError(404, "Not Found")
        return pull

    def page(self, items: Sequence[T]) -> tuple[list[T], dict[str, str]]:
        """One page of ``items`` (``per_page``, ``page``) and GitHub's Link header."""
        per_page = min(max(int(self.query.get("per_page", 30)), 1), 100)
        page = max(int(self.query.get("page", 1)), 1)
        chunk = list(items[(page - 1) * per_page : page * per_page])
        last = max((len(items) + per_page - 1) // per_page, 1)
        links = []
        base = f"{self.forge.url}{self.request.path}"
        for rel, number in (("next", page + 1), ("last", last), ("prev", page - 1), ("first", 1)):
            if (rel in {"next", "last"} and page < last) or (rel in {"prev", "first"} and page > 1):
                query = dict(self.query) | {"per_page": str(per_page), "page": str(number)}
                links.append(f'<{base}?{urlencode(query)}>; rel="{rel}"')
        return chunk, ({"Link": ", ".join(links)} if links else {})

    def sha(self, repo: Repo, ref: str) -> str:
        sha = repo.commit_of(ref)
        if sha is None:
            raise ApiError(422, f"No commit found for SHA: {ref}")
        return sha


def validation(resource: str, field: str, code: str = "invalid") -> ApiError:
    return ApiError(
        422, "Validation Failed", errors=[{"resource": resource, "field": field, "code": code}]
    )
