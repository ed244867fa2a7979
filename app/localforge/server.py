"""LocalForge: a local double of GitHub for tests and the offline demo.

It is honest where Patchwarden depends on GitHub's behaviour:

* **REST**: the operations Patchwarden calls (``rest.py``), each request checked
  against GitHub's OpenAPI description (unknown path → 404, missing or mistyped
  field → 422) and each answer against the response schema; App JWT auth and
  expiring installation tokens; rate-limit headers on every answer.
* **git**: every repository is a bare repository served over smart HTTP by
  ``git http-backend``, with the installation token as the password. A push moves
  branches and PR heads and sends ``push`` and ``pull_request`` (synchronize).
* **webhooks**: state changes are delivered as signed requests, one at a time, in
  order, shaped like GitHub's and checked against ``@octokit/webhooks-schemas``.
* **CI**: a repository can have required checks that the forge runs itself on
  every pushed head (``ci.py``), reported as check runs; merging waits for them.

Anything that breaks the contract is recorded in :attr:`LocalForge.violations`;
the test fixture fails the test that caused it. Tests and the demo drive the
forge through the Python API below (users act without HTTP, as people do on
github.com), and read its state directly.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import jwt
from aiohttp import web

from app.github import signing
from app.localforge import view
from app.localforge.ci import run_required_checks
from app.localforge.contract import RestContract, WebhookContract
from app.localforge.git import BareRepo, Person, http_backend
from app.localforge.render import Renderer
from app.localforge.rest import HANDLERS, Answer, ApiError, Auth, Call, custom_error
from app.localforge.state import (
    REACTIONS,
    ROLES,
    CheckRun,
    Comment,
    Issue,
    Label,
    Merge,
    Pull,
    Reaction,
    Repo,
    RequiredCheck,
    Review,
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


class LocalForge:
    """GitHub with real git, in one process. :meth:`start` it; point Patchwarden at :attr:`url`."""

    def __init__(
        self,
        *,
        app_id: int,
        app_public_key: str,
        app_slug: str = "patchwarden",
        webhook_url: str | None = None,
        webhook_secret: str | None = None,
        token_lifetime_seconds: float = 3600.0,
        root: Path | None = None,
    ) -> None:
        self.app_id = app_id
        self.app_slug = app_slug
        self._public_key = app_public_key
        self.webhook_url = webhook_url
        self.webhook_secret = webhook_secret
        self.token_lifetime_seconds = token_lifetime_seconds
        self.contract = RestContract.load()
        self.hook_contract = WebhookContract.load()
        self.users: dict[str, User] = {}
        self.repos: dict[str, Repo] = {}
        self.tokens: dict[str, tuple[int, float]] = {}
        self.requests: list[Recorded] = []
        self.deliveries: list[Delivery] = []
        self.violations: list[Violation] = []
        self.faults: list[Fault] = []
        self.delays: list[list[Any]] = []  # [pattern, seconds, times left or None]
        self.arrivals: list[str] = []  # "METHOD path", recorded before any delay
        self.rate_remaining = 5000
        # Tests of idempotency: each delivery is posted again under a new
        # X-GitHub-Delivery id (what a second hook, or a replay tool, would send).
        self.echo_deliveries = False
        self._ids = itertools.count(1000)
        self._own_root = root is None
        self.root = root or Path(tempfile.mkdtemp(prefix="localforge-"))
        self._runner: web.AppRunner | None = None
        self._outbox: asyncio.Queue[Delivery] | None = None
        self._sender: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._repo_locks: dict[str, asyncio.Lock] = {}
        self._in_flight = 0  # deliveries queued and not yet made
        self._pushing = 0  # git pushes being received
        self._shapes: dict[tuple[str, str, str], tuple[int, int, int, int, bool]] = {}
        self.url = ""
        self._born = time.time()
        self.render = Renderer(
            base_url="http://localforge.invalid", app_id=app_id, app_slug=app_slug
        )

    # -- lifecycle ----------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound_port = self._runner.addresses[0][1]  # the port the OS chose for port 0
        self.url = f"http://{host}:{bound_port}"
        self.render = Renderer(
            base_url=self.url,
            app_id=self.app_id,
            app_slug=self.app_slug,
            app_created_at=self._born,
        )
        self._outbox = asyncio.Queue()
        self._sender = asyncio.create_task(self._send_loop())
        return self.url

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
            self._sender = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    async def settle(self, within: float = 60.0) -> None:
        """Wait until every CI run has finished and every queued delivery was made."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not self.idle:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(
                    f"forge still busy: {len(self._tasks)} CI run(s), {self._in_flight} deliveries"
                )
            if self._tasks:
                await asyncio.wait(list(self._tasks), timeout=remaining)
            elif self._in_flight:
                await self.flush(within=remaining)
            else:
                await asyncio.sleep(0.01)

    @property
    def idle(self) -> bool:
        """No CI run going and no delivery waiting."""
        return not self._tasks and self._in_flight == 0 and self._pushing == 0

    def app(self) -> web.Application:
        app = web.Application(client_max_size=200 * 1024**2)
        app.router.add_route("*", "/{tail:.*}", self._entry)
        return app

    # -- users and repositories ---------------------------------------------
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

    def add_repo(
        self,
        full_name: str,
        *,
        installation_id: int = 1,
        default_branch: str = "main",
        source: Path | None = None,
        private: bool = False,
        owner_type: str = "Organization",
    ) -> Repo:
        """A repository with real git history: ``source`` (a directory or a git work
        tree) or a README-only first commit."""
        owner_login, _, name = full_name.partition("/")
        if not name or "/" in name:
            raise ValueError(f"repository name must be owner/name, not {full_name!r}")
        owner = self.user(owner_login)
        owner.type = "Organization" if owner_type == "Organization" else "User"
        path = self.root / owner_login / f"{name}.git"
        if path.exists():
            raise ValueError(f"{full_name} already exists")
        path.parent.mkdir(parents=True, exist_ok=True)
        if source is not None:
            git = BareRepo.from_directory(path, source, default_branch=default_branch)
        else:
            git = BareRepo.create(path, default_branch=default_branch)
            git.commit_files(
                default_branch,
                {"README.md": f"# {name}\n"},
                message="Initial commit",
                author=Person(owner_login, f"{owner_login}@users.noreply.localforge"),
            )
        repo = Repo(self.next_id(), owner, name, installation_id, git, default_branch, private)
        self.repos[full_name] = repo
        return repo

    def add_user(self, repo: str, login: str, role: str) -> User:
        if role not in ROLES:
            raise ValueError(f"role must be one of {sorted(ROLES)}, not {role!r}")
        self.repos[repo].collaborators[login] = role
        return self.user(login)

    def require_check(
        self, repo: str, name: str, command: Sequence[str], *, timeout: float = 300
    ) -> None:
        """Run ``command`` (the repository's own tests) on every pushed head as check ``name``,
        and refuse merges until it passes — a required status check on the default branch."""
        self.repos[repo].required_checks.append(RequiredCheck(name, tuple(command), timeout))

    def post_merge_check(
        self, repo: str, name: str, command: Sequence[str], *, timeout: float = 300
    ) -> None:
        """Run ``command`` as check ``name`` on pushes to the default branch only (a
        workflow ``on: push: branches: [main]``): no pull request waits for it, so it
        is what the post-merge canary hears."""
        branch = self.repos[repo].default_branch
        check = RequiredCheck(name, tuple(command), timeout, only_on=(branch,))
        self.repos[repo].required_checks.append(check)

    async def install(self, installation_id: int, *, by: str) -> None:
        """``by`` installs the App on every repository with this ``installation_id``;
        GitHub sends ``installation`` (created)."""
        repos = [r for r in self.repos.values() if r.installation_id == installation_id]
        if not repos:
            raise ValueError(f"no repository has installation_id {installation_id}")
        sender = self.user(by)
        self.emit(
            "installation",
            {
                "action": "created",
                "installation": self.render.installation(installation_id, repos[0].owner, repos),
                "repositories": [self.repository_json(r) for r in repos],
                "sender": self.render.user(sender),
            },
        )
        await self.flush()

    # -- issues, comments, labels (people acting on github.com) --------------
    def open_issue(
        self, repo: str, title: str, body: str = "", *, author: str, labels: Sequence[str] = ()
    ) -> Issue:
        """An issue that already exists; no delivery (see :meth:`report_issue`)."""
        r = self.repos[repo]
        issue = Issue(r.next_number(), title, body, self.user(author))
        issue.labels = [self.label(r, name) for name in labels]
        r.issues[issue.number] = issue
        return issue

    async def report_issue(self, repo: str, title: str, body: str = "", *, author: str) -> Issue:
        """A user opens an issue; GitHub sends ``issues`` (opened)."""
        issue = self.open_issue(repo, title, body, author=author)
        r = self.repos[repo]
        self.emit("issues", self.event(r, "opened", issue.user, issue=self.issue_json(r, issue)))
        await self.flush()
        return issue

    async def post_comment(
        self, repo: str, number: int, body: str, *, author: str, send: bool = True
    ) -> Comment:
        """A user comments on an issue or PR; GitHub sends ``issue_comment`` (created)."""
        r = self.repos[repo]
        comment = self.new_comment(r, r.issues[number], body, self.user(author))
        if send:
            self.emit_comment(r, comment, "created", comment.user)
            await self.flush()
        return comment

    def comment_event(
        self, repo: str, number: int, comment: Comment, *, action: str = "created"
    ) -> dict[str, Any]:
        """The ``issue_comment`` payload GitHub sends for ``comment`` on issue ``number``."""
        r = self.repos[repo]
        return self.render.hook(
            "issue_comment", self._comment_payload(r, comment, action, comment.user)
        )

    def _comment_payload(
        self, repo: Repo, comment: Comment, action: str, sender: User, **extra: Any
    ) -> dict[str, Any]:
        issue = repo.issues[comment.issue_number]
        return self.event(
            repo,
            action,
            sender,
            **extra,
            issue=self.issue_json(repo, issue),
            comment=self.render.comment(repo, comment),
        )

    def emit_comment(
        self, repo: Repo, comment: Comment, action: str, sender: User, **extra: Any
    ) -> None:
        self.emit("issue_comment", self._comment_payload(repo, comment, action, sender, **extra))

    async def add_label(self, repo: str, number: int, label: str, *, actor: str) -> None:
        """A user labels an issue; GitHub sends ``issues`` (labeled)."""
        r = self.repos[repo]
        issue = r.issues[number]
        added = self.label(r, label)
        if added not in issue.labels:
            issue.labels.append(added)
        self.emit(
            "issues",
            self.event(
                r,
                "labeled",
                self.user(actor),
                issue=self.issue_json(r, issue),
                label=self.render.label(r, added),
            ),
        )
        await self.flush()

    # -- pull requests, reviews, pushes (people acting on github.com) --------
    async def approve(self, repo: str, number: int, *, user: str, body: str = "") -> Review:
        """A user approves a PR; GitHub sends ``pull_request_review`` (submitted)."""
        review = self.submit_review(repo, number, user=self.user(user), state="APPROVED", body=body)
        await self.flush()
        return review

    def submit_review(self, repo: str, number: int, *, user: User, state: str, body: str) -> Review:
        r = self.repos[repo]
        pull = r.pulls[number]
        review = Review(self.next_id(), user, state, body, pull.head_sha)  # type: ignore[arg-type]
        pull.reviews.append(review)
        if state != "PENDING":  # GitHub drops a reviewer's request once they review
            pull.requested_reviewers = [u for u in pull.requested_reviewers if u.id != user.id]
        self.emit(
            "pull_request_review",
            self.event(
                r,
                "submitted",
                user,
                review=self.render.review(r, pull, review),
                pull_request=self.pull_json(r, pull),
            ),
        )
        return review

    async def push(
        self,
        repo: str,
        files: Mapping[str, str | bytes | None],
        *,
        author: str,
        message: str = "Update",
        branch: str | None = None,
    ) -> str:
        """A user pushes one commit (``None`` deletes a file); returns its sha."""
        r = self.repos[repo]
        branch = branch or r.default_branch
        ref = f"refs/heads/{branch}"
        person = Person(author, f"{author}@users.noreply.localforge")
        async with self.lock(r):
            before = r.git.resolve(ref)
            after = await asyncio.to_thread(
                r.git.commit_files, branch, files, message=message, author=person
            )
            await self.after_push(r, {ref: (before, after)}, self.user(author))
        await self.flush()
        return after

    async def open_pull(
        self, repo: str, *, head: str, base: str | None, title: str, body: str = "", author: str
    ) -> Pull:
        """A user opens a PR from ``head`` (a branch of the repository)."""
        r = self.repos[repo]
        pull = await self.create_pull(
            r, head, base or r.default_branch, title, body, self.user(author), draft=False
        )
        await self.flush()
        return pull

    # -- reading state ------------------------------------------------------
    def pull(self, repo: str, number: int) -> Pull:
        return self.repos[repo].pulls[number]

    def pulls(self, repo: str) -> list[Pull]:
        return list(self.repos[repo].pulls.values())

    def issue(self, repo: str, number: int) -> Issue:
        return self.repos[repo].issues[number]

    def comments(self, repo: str, number: int) -> list[Comment]:
        return self.repos[repo].issues[number].comments

    def labels(self, repo: str, number: int) -> list[str]:
        return self.repos[repo].issues[number].label_names()

    def check_runs(self, repo: str, ref: str) -> list[CheckRun]:
        r = self.repos[repo]
        sha = self.resolve(r, ref)
        return r.runs_for(sha) if sha else []

    def merges(self, repo: str) -> list[Merge]:
        return self.repos[repo].merges

    def comment_reactions(self, comment_id: int) -> list[str]:
        for repo in self.repos.values():
            comment = repo.comment(comment_id)
            if comment is not None:
                return [reaction.content for reaction in comment.reactions]
        return []

    def calls(self, method: str, path_re: str) -> list[Recorded]:
        pattern = re.compile(path_re)
        return [r for r in self.requests if r.method == method and pattern.search(r.path)]

    def token_for(self, installation_id: int, *, lifetime: float | None = None) -> str:
        """Mint an installation token without the JWT dance (for git clients in tests)."""
        token = "ghs_" + uuid.uuid4().hex + uuid.uuid4().hex[:4]
        self.tokens[token] = (
            installation_id,
            time.time() + (lifetime or self.token_lifetime_seconds),
        )
        return token

    # -- misbehaviour on purpose ------------------------------------------------
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

    # -- state changes shared by the API and the Python side ---------------------
    def new_comment(
        self, repo: Repo, issue: Issue, body: str, user: User, *, via_app: bool = False
    ) -> Comment:
        comment = Comment(self.next_id(), issue.number, body, user, via_app=via_app)
        issue.comments.append(comment)
        issue.updated_at = time.time()
        return comment

    def react(self, target: list[Reaction], content: str, user: User) -> tuple[Reaction, bool]:
        if content not in REACTIONS:
            raise ApiError(
                422,
                "Validation Failed",
                errors=[{"resource": "Reaction", "code": "invalid", "field": "content"}],
            )
        for reaction in target:
            if reaction.content == content and reaction.user.login == user.login:
                return reaction, False
        reaction = Reaction(self.next_id(), content, user)
        target.append(reaction)
        return reaction, True

    def label(self, repo: Repo, name: str) -> Label:
        found = repo.labels.get(name.lower())
        if found is None:
            found = Label(self.next_id(), name)
            repo.labels[name.lower()] = found
        return found

    def resolve(self, repo: Repo, ref: str) -> str | None:
        """A sha, branch name or ref → commit sha."""
        if re.fullmatch(r"[0-9a-f]{40}", ref) or ref.startswith("refs/"):
            return repo.git.resolve(ref)
        return repo.git.resolve(f"refs/heads/{ref}") or repo.git.resolve(f"refs/tags/{ref}")

    def lock(self, repo: Repo) -> asyncio.Lock:
        return self._repo_locks.setdefault(repo.full_name, asyncio.Lock())

    def refresh_pull(self, repo: Repo, pull: Pull) -> None:
        """Recompute what depends on git (base tip, size) for an open PR."""
        if pull.merged or repo.issues[pull.number].state == "closed":
            return
        base_sha = repo.git.resolve(f"refs/heads/{pull.base}")
        if base_sha is None:
            return
        pull.base_sha = base_sha
        shape = self._shape(repo, base_sha, pull.head_sha)
        pull.additions, pull.deletions, pull.changed_files, pull.commits = shape[:4]

    def _shape(self, repo: Repo, base: str, head: str) -> tuple[int, int, int, int, bool]:
        """Size and mergeability of head against base: fixed for a pair of commits, so
        computed once (git is the cost of every PR read)."""
        key = (repo.full_name, base, head)
        found = self._shapes.get(key)
        if found is None:
            files = repo.git.diff_files(base, head)
            merge_base = repo.git.merge_base(base, head)
            commits = len(repo.git.commits_between(merge_base, head)) if merge_base else 0
            found = (
                sum(f.additions for f in files),
                sum(f.deletions for f in files),
                len(files),
                commits,
                repo.git.mergeable(base, head),
            )
            self._shapes[key] = found
        return found

    def required_state(self, repo: Repo, sha: str) -> dict[str, str]:
        """Each required check → "passing" | "failing" | "pending" | "expected"."""
        states: dict[str, str] = {}
        for check in (c for c in repo.required_checks if c.required):
            runs = [run for run in repo.runs_for(sha) if run.name == check.name]
            statuses = [s for s in repo.statuses if s.sha == sha and s.context == check.name]
            if runs:
                run = runs[-1]
                if run.status != "completed":
                    states[check.name] = "pending"
                elif run.conclusion in {"success", "neutral", "skipped"}:
                    states[check.name] = "passing"
                else:
                    states[check.name] = "failing"
            elif statuses:
                state = statuses[-1].state
                states[check.name] = {"success": "passing", "pending": "pending"}.get(
                    state, "failing"
                )
            else:
                states[check.name] = "expected"
        return states

    def mergeability(self, repo: Repo, pull: Pull) -> tuple[bool | None, str]:
        issue = repo.issues[pull.number]
        if pull.merged or issue.state == "closed":
            return None, "unknown"
        if not self._shape(repo, pull.base_sha, pull.head_sha)[4]:
            return False, "dirty"
        if pull.draft:
            return True, "draft"
        if any(state != "passing" for state in self.required_state(repo, pull.head_sha).values()):
            return True, "blocked"
        if any(
            run.status == "completed" and run.conclusion in {"failure", "timed_out", "cancelled"}
            for run in repo.runs_for(pull.head_sha)
        ):
            return True, "unstable"
        return True, "clean"

    async def create_pull(
        self,
        repo: Repo,
        head: str,
        base: str,
        title: str,
        body: str | None,
        user: User,
        *,
        draft: bool,
    ) -> Pull:
        head_sha = repo.git.resolve(f"refs/heads/{head}")
        base_sha = repo.git.resolve(f"refs/heads/{base}")
        if head_sha is None:
            raise ApiError(
                422,
                "Validation Failed",
                errors=[{"resource": "PullRequest", "field": "head", "code": "invalid"}],
            )
        if base_sha is None:
            raise ApiError(
                422,
                "Validation Failed",
                errors=[{"resource": "PullRequest", "field": "base", "code": "invalid"}],
            )
        for other in repo.pulls.values():
            if (
                other.head == head
                and other.base == base
                and repo.issues[other.number].state == "open"
            ):
                raise custom_error(
                    "PullRequest", f"A pull request already exists for {repo.owner.login}:{head}."
                )
        if repo.git.is_ancestor(head_sha, base_sha):
            raise custom_error("PullRequest", f"No commits between {base} and {head}")
        issue = Issue(repo.next_number(), title, body, user, is_pull=True)
        repo.issues[issue.number] = issue
        pull = Pull(issue.number, head, head_sha, base, base_sha, draft=draft)
        repo.pulls[pull.number] = pull
        self.refresh_pull(repo, pull)
        self.emit(
            "pull_request",
            self.event(
                repo, "opened", user, number=pull.number, pull_request=self.pull_json(repo, pull)
            ),
        )
        return pull

    async def close_pull(self, repo: Repo, pull: Pull, user: User) -> None:
        issue = repo.issues[pull.number]
        issue.state = "closed"
        issue.closed_at = issue.updated_at = time.time()
        self.emit(
            "pull_request",
            self.event(
                repo, "closed", user, number=pull.number, pull_request=self.pull_json(repo, pull)
            ),
        )

    async def merge_pull(
        self,
        repo: Repo,
        pull: Pull,
        *,
        sha: str | None,
        method: str,
        title: str | None,
        message: str | None,
        user: User,
    ) -> str:
        """Merge as GitHub does: the ``sha`` guard, mergeability, required checks."""
        issue = repo.issues[pull.number]
        async with self.lock(repo):
            self.refresh_pull(repo, pull)
            if pull.merged or issue.state == "closed":
                raise ApiError(405, "Pull Request is not mergeable")
            if sha is not None and sha != pull.head_sha:
                raise ApiError(409, "Head branch was modified. Review and try the merge again.")
            for name, state in self.required_state(repo, pull.head_sha).items():
                if state != "passing":
                    word = {"failing": "is failing", "pending": "is in progress"}.get(
                        state, "is expected"
                    )
                    raise ApiError(405, f'Required status check "{name}" {word}.')
            default_title = {
                "merge": f"Merge pull request #{pull.number} from {repo.owner.login}/{pull.head}",
                "squash": f"{issue.title} (#{pull.number})",
                "rebase": issue.title,
            }[method]
            # GitHub's default body: the PR title for a merge commit, nothing otherwise.
            body = message or (issue.title if method == "merge" else "")
            commit_message = (title or default_title) + (f"\n\n{body}" if body else "")
            person = Person(user.login, f"{user.login}@users.noreply.localforge")
            merged_sha = await asyncio.to_thread(
                repo.git.merge,
                pull.base_sha,
                pull.head_sha,
                method=method,
                message=commit_message,
                author=person,
                committer=Person("GitHub", "noreply@github.com"),
            )
            if merged_sha is None:
                raise ApiError(405, "Pull Request is not mergeable")
            ref = f"refs/heads/{pull.base}"
            if not repo.git.update_ref(ref, merged_sha, pull.base_sha):
                raise ApiError(405, "Base branch was modified. Review and try the merge again.")
            before = pull.base_sha
            pull.merged, pull.merged_at, pull.merged_by = True, time.time(), user
            pull.merge_commit_sha = merged_sha
            issue.state, issue.closed_at, issue.updated_at = (
                "closed",
                pull.merged_at,
                pull.merged_at,
            )
            repo.merges.append(Merge(pull.number, merged_sha, method, pull.base, user.login))
            self.emit(
                "pull_request",
                self.event(
                    repo,
                    "closed",
                    user,
                    number=pull.number,
                    pull_request=self.pull_json(repo, pull),
                ),
            )
            await self.after_push(repo, {ref: (before, merged_sha)}, user)
            if pull.base == repo.default_branch:
                for number in closing_references(repo, f"{issue.title}\n{issue.body or ''}"):
                    target = repo.issues.get(number)
                    if target is not None and not target.is_pull and target.state == "open":
                        self.close_issue(repo, target, user, by_pull=pull.number)
        return merged_sha

    def close_issue(
        self,
        repo: Repo,
        issue: Issue,
        user: User,
        *,
        reason: str = "completed",
        by_pull: int | None = None,
    ) -> None:
        """Close an issue (not a PR); GitHub sends ``issues`` (closed)."""
        issue.state, issue.state_reason, issue.closed_by_pull = "closed", reason, by_pull
        issue.closed_at = issue.updated_at = time.time()
        self.emit("issues", self.event(repo, "closed", user, issue=self.issue_json(repo, issue)))

    def request_reviewers(
        self, repo: Repo, pull: Pull, logins: Sequence[str], *, user: User, teams: Sequence[str]
    ) -> None:
        """Request reviews as GitHub does: collaborators only, never the PR's author, all or
        nothing; each new request sends ``pull_request`` (review_requested)."""
        author = repo.issues[pull.number].user
        if any(login.lower() == author.login.lower() for login in logins):
            raise ApiError(422, "Review cannot be requested from pull request author.")
        known = {login.lower(): login for login in repo.collaborators}
        if repo.owner.type == "User":
            known[repo.owner.login.lower()] = repo.owner.login
        if teams or any(login.lower() not in known for login in logins):
            raise ApiError(
                422,
                "Reviews may only be requested from collaborators. One or more of the users "
                "or teams you specified is not a collaborator of the "
                f"{repo.full_name} repository.",
            )
        for login in logins:
            reviewer = self.user(known[login.lower()])
            if any(u.id == reviewer.id for u in pull.requested_reviewers):
                continue
            pull.requested_reviewers.append(reviewer)
            repo.issues[pull.number].updated_at = time.time()
            self.emit(
                "pull_request",
                self.event(
                    repo,
                    "review_requested",
                    user,
                    number=pull.number,
                    pull_request=self.pull_json(repo, pull),
                    requested_reviewer=self.render.user(reviewer),
                ),
            )

    async def after_push(
        self, repo: Repo, changes: Mapping[str, tuple[str | None, str | None]], pusher: User
    ) -> None:
        """What GitHub does after refs move: ``push``, PR heads (synchronize/closed), CI."""
        repo.pushed_at = time.time()
        for ref, (before, after) in changes.items():
            if not ref.startswith("refs/heads/") or before == after:
                continue
            branch = ref.removeprefix("refs/heads/")
            commits = (
                await asyncio.to_thread(repo.git.commits_between, before, after) if after else []
            )
            forced = bool(before and after and not repo.git.is_ancestor(before, after))
            payload = self.event(
                repo,
                None,
                pusher,
                ref=ref,
                before=before or ZERO_SHA,
                after=after or ZERO_SHA,
                created=before is None,
                deleted=after is None,
                forced=forced,
                base_ref=None,
                compare=f"{self.url}/{repo.full_name}/compare/"
                f"{(before or ZERO_SHA)[:12]}...{(after or ZERO_SHA)[:12]}",
                commits=[self.render.push_commit(repo, c) for c in commits[-20:]],
                head_commit=self.render.push_commit(repo, commits[-1]) if commits else None,
                pusher={
                    "name": pusher.login,
                    "email": None
                    if pusher.type == "Bot"
                    else f"{pusher.login}@users.noreply.localforge",
                },
            )
            payload.pop("action")
            self.emit("push", payload)
            for pull in list(repo.pulls.values()):
                if pull.head != branch or repo.issues[pull.number].state != "open":
                    continue
                if after is None:
                    await self.close_pull(repo, pull, pusher)
                    continue
                old = pull.head_sha
                pull.head_sha = after
                self.refresh_pull(repo, pull)
                self.emit(
                    "pull_request",
                    self.event(
                        repo,
                        "synchronize",
                        pusher,
                        number=pull.number,
                        before=old,
                        after=after,
                        pull_request=self.pull_json(repo, pull),
                    ),
                )
            if after is not None and repo.required_checks:
                task = asyncio.create_task(run_required_checks(self, repo, branch, before, after))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    # -- webhooks -------------------------------------------------------------
    def event(self, repo: Repo, action: str | None, sender: User, **fields: Any) -> dict[str, Any]:
        payload: dict[str, Any] = {"action": action, **fields}
        payload["repository"] = self.repository_json(repo)
        payload["sender"] = self.render.user(sender)
        payload["installation"] = {
            "id": repo.installation_id,
            "node_id": _node_id("Installation", repo.installation_id),
        }
        return payload

    def repository_json(self, repo: Repo) -> dict[str, Any]:
        open_issues = sum(1 for i in repo.issues.values() if i.state == "open")
        return self.render.repository(repo, open_issues=open_issues)

    def issue_json(self, repo: Repo, issue: Issue) -> dict[str, Any]:
        return self.render.issue(repo, issue, repo.pulls.get(issue.number))

    def pull_json(self, repo: Repo, pull: Pull) -> dict[str, Any]:
        mergeable, state = self.mergeability(repo, pull)
        return self.render.pull(
            repo, pull, repo.issues[pull.number], mergeable=mergeable, mergeable_state=state
        )

    def emit(self, event: str, payload: dict[str, Any]) -> Delivery:
        """Queue a delivery, checked against the webhook schema; it goes out in order."""
        hook = self.render.hook(event, payload)
        problems = self.hook_contract.problems(event, hook)
        if problems:
            self.violations.append(
                Violation("webhook", f"{event}.{hook.get('action', '')}", problems)
            )
        delivery = Delivery(str(uuid.uuid4()), event, hook.get("action"), hook)
        self.deliveries.append(delivery)
        if self._outbox is not None:
            self._in_flight += 1
            self._outbox.put_nowait(delivery)
        return delivery

    async def flush(self, within: float = 30.0) -> None:
        """Wait until every queued delivery has been made (not for CI runs: see settle)."""
        if self._outbox is not None:
            await asyncio.wait_for(self._outbox.join(), timeout=within)

    async def _send_loop(self) -> None:
        assert self._outbox is not None
        while True:
            delivery = await self._outbox.get()
            try:
                copies = [delivery]
                if self.echo_deliveries:
                    echo = Delivery(
                        str(uuid.uuid4()), delivery.event, delivery.action, delivery.payload
                    )
                    self.deliveries.append(echo)
                    copies.append(echo)
                for copy in copies:
                    await self._attempt(copy)
            finally:
                self._in_flight -= 1
                self._outbox.task_done()

    async def _attempt(self, delivery: Delivery) -> None:
        if not (self.webhook_url and self.webhook_secret):
            return
        try:
            await self._post(delivery)
            delivery.error = None
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            delivery.error = f"{type(exc).__name__}: {exc}"

    async def redeliver_failed(self) -> int:
        """Post again, under the same X-GitHub-Delivery id, every delivery that got no
        2xx answer (the receiver was down, say), as GitHub's "Redeliver" does; return
        how many. https://docs.github.com/en/webhooks/testing-and-troubleshooting-webhooks/redelivering-webhooks"""
        failed = [d for d in self.deliveries if d.status is None or d.status >= 300]
        for delivery in failed:
            await self._attempt(delivery)
        return len(failed)

    async def send(
        self, event: str, payload: dict[str, Any], *, delivery_id: str | None = None
    ) -> int:
        """POST a signed delivery to ``webhook_url`` now, as GitHub does; return the status.

        For replaying a payload (``delivery_id`` repeats a delivery). State changes
        send their deliveries themselves."""
        if not self.webhook_url or not self.webhook_secret:
            raise RuntimeError("set webhook_url and webhook_secret before sending deliveries")
        delivery = Delivery(delivery_id or str(uuid.uuid4()), event, payload.get("action"), payload)
        self.deliveries.append(delivery)
        await self._post(delivery)
        assert delivery.status is not None
        return delivery.status

    async def _post(self, delivery: Delivery) -> None:
        assert self.webhook_url is not None
        assert self.webhook_secret is not None
        body = json.dumps(delivery.payload).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/localforge",
            "X-GitHub-Event": delivery.event,
            "X-GitHub-Delivery": delivery.id,
            "X-GitHub-Hook-ID": "1",
            "X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-GitHub-Hook-Installation-Target-ID": str(self.app_id),
            "X-Hub-Signature-256": signing.sign(body, secret=self.webhook_secret),
        }
        timeout = aiohttp.ClientTimeout(total=10)  # GitHub gives up after 10 s
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(self.webhook_url, data=body, headers=headers) as response,
        ):
            delivery.status = response.status

    # -- HTTP ------------------------------------------------------------------
    def _rate_headers(self) -> dict[str, str]:
        self.rate_remaining = max(self.rate_remaining - 1, 0)
        return {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(self.rate_remaining),
            "x-ratelimit-reset": str(int(time.time()) + 3600),
            "x-ratelimit-used": str(5000 - self.rate_remaining),
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
                    self._public_key,
                    algorithms=["RS256"],
                    options={"require": ["iat", "exp", "iss"]},
                )
            except jwt.PyJWTError as exc:
                return ApiError(401, f"A JSON web token could not be decoded: {exc}")
            if claims["exp"] - time.time() > 600 + 5 or claims["iat"] > time.time() + 60:
                return ApiError(401, "'Expiration time' claim ('exp') is too far in the future")
            if str(claims["iss"]) != str(self.app_id):
                return ApiError(401, "Integration not found")
            return Auth("app")
        if scheme.lower() in {"token", "bearer"} and credential in self.tokens:
            installation_id, expires = self.tokens[credential]
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
        found = self.tokens.get(password)
        if found is None or found[1] < time.time():
            return None
        return found[0]

    async def _entry(self, request: web.Request) -> web.StreamResponse:
        self.arrivals.append(f"{request.method} {request.path}")
        git = GIT_PATH.match(request.path)
        if git:
            return await self._git(request, f"{git['owner']}/{git['name']}", git["rest"])
        if request.method == "GET":
            page = view.page(self.repos, request.path)
            if page is not None:
                return web.Response(status=page[0], text=page[1], content_type="text/html")
        body: Any = None
        raw = await request.read() if request.can_read_body else b""
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                return self._json({"message": "Problems parsing JSON"}, 400)
        for entry in self.delays:
            pattern, seconds, times = entry
            if pattern.search(request.path) and (times is None or times > 0):
                if times is not None:
                    entry[2] = times - 1
                await asyncio.sleep(seconds)
        auth = self._auth(request)
        auth_kind = auth.kind if isinstance(auth, Auth) else None
        found = self.contract.match(request.method, request.path)
        op_id = found[0].id if found else None

        def record(status: int) -> None:
            self.requests.append(
                Recorded(
                    request.method, request.path_qs, status, body, time.time(), auth_kind, op_id
                )
            )

        for fault in self.faults:
            if (
                fault.times > 0
                and fault.method == request.method
                and fault.path.search(request.path)
            ):
                fault.times -= 1
                record(fault.status)
                return web.json_response(
                    fault.body, status=fault.status, headers=self._rate_headers() | fault.headers
                )
        if found is None:
            self.violations.append(
                Violation(
                    "unknown-operation",
                    f"{request.method} {request.path}",
                    ["GitHub has no such operation (or LocalForge does not implement it)"],
                )
            )
            record(404)
            return self._json(
                {
                    "message": "Not Found",
                    "documentation_url": "https://docs.github.com/rest",
                    "status": "404",
                },
                404,
            )
        op, params = found
        if isinstance(auth, ApiError):
            record(auth.status)
            return self._json(self._error_body(op, auth), auth.status)
        problems = self.contract.request_problems(op, request.query, body)
        if problems:
            self.violations.append(
                Violation("request", f"{request.method} {request.path} ({op.id})", problems)
            )
            record(422)
            message = "Invalid request.\n\n" + "\n".join(problems)
            return self._json(
                {"message": message, "documentation_url": op.documentation_url, "status": "422"},
                422,
            )
        call = Call(self, op, params, request.query, body, auth, request)
        try:
            answer = await HANDLERS[op.id](call)
        except ApiError as exc:
            answer = Answer(exc.status, self._error_body(op, exc))
        except Exception as exc:  # a bug in the forge: fail the test that found it, loudly
            where = f"{request.method} {request.path} ({op.id})"
            self.violations.append(Violation("crash", where, [f"{type(exc).__name__}: {exc}"]))
            record(500)
            raise
        documented = str(answer.status) in op.responses
        if documented or answer.status < 400:
            problems = self.contract.response_problems(op, answer.status, answer.body)
            if problems:
                self.violations.append(
                    Violation(
                        "response",
                        f"{request.method} {request.path} ({op.id}) {answer.status}",
                        problems,
                    )
                )
        record(answer.status)
        return self._json(answer.body, answer.status, answer.headers)

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
        repo = self.repos.get(full_name)
        installation = self._basic_auth(request)
        if installation is None:
            self.requests.append(
                Recorded(request.method, request.path_qs, 401, None, time.time(), None, "git")
            )
            return web.Response(
                status=401,
                text="Invalid username or token.\n",
                headers={"WWW-Authenticate": 'Basic realm="GitHub"'},
            )
        if repo is None or repo.installation_id != installation:
            self.requests.append(
                Recorded(
                    request.method, request.path_qs, 404, None, time.time(), "installation", "git"
                )
            )
            return web.Response(status=404, text="Repository not found.\n")
        pushing = rest.endswith("/git-receive-pack") and request.method == "POST"
        user = self.bot.login
        if not pushing:
            response = await http_backend(request, repo.git, path_info=rest, remote_user=user)
        else:
            self._pushing += 1  # settle() waits for what this push sets off
            try:
                async with self.lock(repo):
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
                        await self.after_push(repo, changes, self.bot)
            finally:
                self._pushing -= 1
        self.requests.append(
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

    @contextlib.contextmanager
    def expect_violations(self) -> Iterator[list[Violation]]:
        """For tests that break the contract on purpose: collect instead of failing."""
        before = len(self.violations)
        found: list[Violation] = []
        yield found
        found.extend(self.violations[before:])
        del self.violations[before:]


def closing_references(repo: Repo, text: str) -> list[int]:
    """The issue numbers of ``repo`` that ``text`` says to close, in order, once each."""
    numbers: list[int] = []
    for found in CLOSING.finditer(text):
        named = f"{found['owner']}/{found['name']}" if found["owner"] else repo.full_name
        number = int(found["number"])
        if named.lower() == repo.full_name.lower() and number not in numbers:
            numbers.append(number)
    return numbers


def _node_id(kind: str, number: int) -> str:
    return base64.b64encode(f"0:{kind}{number}".encode()).decode()
