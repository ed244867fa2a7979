"""The forge's world, as tests and the demo drive it: users, repositories and
installations; people opening issues, commenting, labelling, reviewing and pushing (as
they do on github.com, without HTTP); reading its state; misbehaving on purpose.

Over ~400 lines on purpose: it is one vocabulary, everything a test says a person or
an outside system does; each method is a few lines over the rules in ``rules.py``."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from app.localforge.bare_repo import BareRepo, Person
from app.localforge.check_events import check_run_changed, suite_for
from app.localforge.deliveries import Outbox
from app.localforge.forge_base import (
    Delivery,
    Fault,
    ForgeState,
    Recorded,
    Violation,
)
from app.localforge.forge_ci import ForgeCI
from app.localforge.render import Renderer
from app.localforge.rules import GitHubRules
from app.localforge.security import SecurityAlerts
from app.localforge.state import (
    ROLES,
    CheckRun,
    Comment,
    Issue,
    Merge,
    Pull,
    Repo,
    RequiredCheck,
    Review,
    User,
)


class World:
    """The test-facing API over the forge's parts, each owning what it holds:
    :attr:`state` (the App, users, repositories, tokens, requests), :attr:`hooks` (the
    webhooks it delivers), :attr:`ci` (its own CI runs), :attr:`rules` (how GitHub
    changes its state) and :attr:`security` (Dependabot and code scanning alerts)."""

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
        self.state = ForgeState(
            app_id=app_id,
            app_public_key=app_public_key,
            app_slug=app_slug,
            token_lifetime_seconds=token_lifetime_seconds,
            root=root,
        )
        self.hooks = Outbox(self.state, webhook_url=webhook_url, webhook_secret=webhook_secret)
        self.ci = ForgeCI(self.hooks)
        self.rules = GitHubRules(self.state, self.hooks, self.ci)
        self.security = SecurityAlerts(self.state, self.hooks)
        self.rules.on_default_branch.append(self.security.default_branch_moved)

    # -- what tests read most ---------------------------------------------------
    @property
    def repos(self) -> dict[str, Repo]:
        return self.state.repos

    @property
    def url(self) -> str:
        return self.state.url

    @property
    def render(self) -> Renderer:
        return self.state.render

    @property
    def requests(self) -> list[Recorded]:
        return self.state.requests

    @property
    def violations(self) -> list[Violation]:
        return self.state.violations

    @property
    def deliveries(self) -> list[Delivery]:
        return self.hooks.deliveries

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
        owner = self.state.user(owner_login)
        owner.type = "Organization" if owner_type == "Organization" else "User"
        path = self.state.root / owner_login / f"{name}.git"
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
        repo = Repo(
            self.state.next_id(), owner, name, installation_id, git, default_branch, private
        )
        self.repos[full_name] = repo
        return repo

    def add_user(self, repo: str, login: str, role: str) -> User:
        if role not in ROLES:
            raise ValueError(f"role must be one of {sorted(ROLES)}, not {role!r}")
        self.repos[repo].collaborators[login] = role
        return self.state.user(login)

    def require_check(
        self, repo: str, name: str, command: Sequence[str], *, timeout: float = 300
    ) -> None:
        """Run ``command`` (the repository's own tests) on every pushed head as check ``name``,
        and refuse merges until it passes — a required status check on the default branch."""
        self.repos[repo].required_checks.append(RequiredCheck(name, tuple(command), timeout))

    def require_signed_commits(self, repo: str) -> None:
        """Branch protection's "Require signed commits" on the default branch: a pull
        request merges only when GitHub verified every one of its commits (the App's
        commits made through the Git Data API are; commits pushed with git are not)."""
        self.repos[repo].signed_commits_required = True

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
        sender = self.state.user(by)
        self.hooks.emit(
            "installation",
            {
                "action": "created",
                "installation": self.render.accounts.installation(
                    installation_id, repos[0].owner, repos
                ),
                "repositories": [self.hooks.repository_json(r) for r in repos],
                "sender": self.render.accounts.user(sender),
            },
        )
        await self.hooks.flush()

    # -- issues, comments, labels (people acting on github.com) --------------
    def open_issue(
        self, repo: str, title: str, body: str = "", *, author: str, labels: Sequence[str] = ()
    ) -> Issue:
        """An issue that already exists; no delivery (see :meth:`report_issue`)."""
        r = self.repos[repo]
        issue = Issue(r.next_number(), title, body, self.state.user(author))
        issue.labels = [self.rules.label(r, name) for name in labels]
        r.issues[issue.number] = issue
        return issue

    async def report_issue(self, repo: str, title: str, body: str = "", *, author: str) -> Issue:
        """A user opens an issue; GitHub sends ``issues`` (opened)."""
        issue = self.open_issue(repo, title, body, author=author)
        r = self.repos[repo]
        self.hooks.emit(
            "issues",
            self.hooks.event(r, "opened", issue.user, issue=self.rules.issue_json(r, issue)),
        )
        await self.hooks.flush()
        return issue

    async def post_comment(
        self, repo: str, number: int, body: str, *, author: str, send: bool = True
    ) -> Comment:
        """A user comments on an issue or PR; GitHub sends ``issue_comment`` (created)."""
        r = self.repos[repo]
        comment = self.rules.new_comment(r, r.issues[number], body, self.state.user(author))
        if send:
            self.emit_comment(r, comment, "created", comment.user)
            await self.hooks.flush()
        return comment

    def comment_event(
        self, repo: str, number: int, comment: Comment, *, action: str = "created"
    ) -> dict[str, Any]:
        """The ``issue_comment`` payload GitHub sends for ``comment`` on issue ``number``."""
        r = self.repos[repo]
        return self.render.webhooks.hook(
            "issue_comment", self._comment_payload(r, comment, action, comment.user)
        )

    def _comment_payload(
        self, repo: Repo, comment: Comment, action: str, sender: User, **extra: Any
    ) -> dict[str, Any]:
        issue = repo.issues[comment.issue_number]
        return self.hooks.event(
            repo,
            action,
            sender,
            **extra,
            issue=self.rules.issue_json(repo, issue),
            comment=self.render.issues.comment(repo, comment),
        )

    def emit_comment(
        self, repo: Repo, comment: Comment, action: str, sender: User, **extra: Any
    ) -> None:
        self.hooks.emit(
            "issue_comment", self._comment_payload(repo, comment, action, sender, **extra)
        )

    async def add_label(self, repo: str, number: int, label: str, *, actor: str) -> None:
        """A user labels an issue; GitHub sends ``issues`` (labeled)."""
        r = self.repos[repo]
        issue = r.issues[number]
        added = self.rules.label(r, label)
        if added not in issue.labels:
            issue.labels.append(added)
        self.hooks.emit(
            "issues",
            self.hooks.event(
                r,
                "labeled",
                self.state.user(actor),
                issue=self.rules.issue_json(r, issue),
                label=self.render.issues.label(r, added),
            ),
        )
        await self.hooks.flush()

    # -- pull requests, reviews, pushes (people acting on github.com) --------
    async def approve(self, repo: str, number: int, *, user: str, body: str = "") -> Review:
        """A user approves a PR; GitHub sends ``pull_request_review`` (submitted)."""
        review = self.submit_review(
            repo, number, user=self.state.user(user), state="APPROVED", body=body
        )
        await self.hooks.flush()
        return review

    def submit_review(self, repo: str, number: int, *, user: User, state: str, body: str) -> Review:
        r = self.repos[repo]
        pull = r.pulls[number]
        review = Review(self.state.next_id(), user, state, body, pull.head_sha)  # type: ignore[arg-type]
        pull.reviews.append(review)
        if state != "PENDING":  # GitHub drops a reviewer's request once they review
            pull.requested_reviewers = [u for u in pull.requested_reviewers if u.id != user.id]
        self.hooks.emit(
            "pull_request_review",
            self.hooks.event(
                r,
                "submitted",
                user,
                review=self.render.pulls.review(r, pull, review),
                pull_request=self.rules.pull_json(r, pull),
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
        async with self.rules.lock(r):
            before = r.git.resolve(ref)
            after = await asyncio.to_thread(
                r.git.commit_files, branch, files, message=message, author=person
            )
            await self.rules.after_push(r, {ref: (before, after)}, self.state.user(author))
        await self.hooks.flush()
        return after

    async def open_pull(
        self, repo: str, *, head: str, base: str | None, title: str, body: str = "", author: str
    ) -> Pull:
        """A user opens a PR from ``head`` (a branch of the repository)."""
        r = self.repos[repo]
        pull = await self.rules.create_pull(
            r, head, base or r.default_branch, title, body, self.state.user(author), draft=False
        )
        await self.hooks.flush()
        return pull

    async def report_check(
        self,
        repo: str,
        sha: str,
        name: str,
        *,
        conclusion: str,
        started_at: float,
        completed_at: float,
        app: str = "outside-ci",
    ) -> CheckRun:
        """An outside CI app reports a check run on ``sha`` that ran from ``started_at``
        to ``completed_at``; GitHub sends ``check_run`` ``completed`` (and the suite's)."""
        r = self.repos[repo]
        suite = suite_for(self.hooks, r, sha, app, r.default_branch)
        run = CheckRun(
            self.state.next_id(),
            name,
            sha,
            suite,
            app,
            status="completed",
            conclusion=conclusion,
            started_at=started_at,
            completed_at=completed_at,
        )
        r.check_runs.append(run)
        await check_run_changed(self.hooks, r, run, "completed", self.state.user(f"{app}[bot]"))
        await self.hooks.flush()
        return run

    async def merge_by(self, repo: str, number: int, *, by: str, method: str = "merge") -> str:
        """A user presses *Merge* on an open pull request (GitHub's rules apply: required
        checks, mergeability); returns the merge commit."""
        r = self.repos[repo]
        sha = await self.rules.merge_pull(
            r,
            r.pulls[number],
            sha=None,
            method=method,
            title=None,
            message=None,
            user=self.state.user(by),
        )
        await self.hooks.flush()
        return sha

    async def close_unmerged(self, repo: str, number: int, *, by: str) -> None:
        """A user closes an open pull request without merging it."""
        r = self.repos[repo]
        pull = r.pulls[number]
        if pull.merged or r.issues[number].state == "closed":
            raise ValueError(f"#{number} is not open")
        await self.rules.close_pull(r, pull, self.state.user(by))
        await self.hooks.flush()

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
        sha = r.commit_of(ref)
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
        self.state.tokens[token] = (
            installation_id,
            time.time() + (lifetime or self.state.token_lifetime_seconds),
        )
        return token

    # -- creating the App from a manifest ------------------------------------------
    def submit_manifest(self, manifest: Mapping[str, Any]) -> str:
        """What a person does on github.com with Patchwarden's setup form: posts the
        manifest and confirms. GitHub then redirects to the manifest's ``redirect_url``
        with ``?code=...&state=...``; this returns the code."""
        code = uuid.uuid4().hex[:20]
        self.state.manifest_codes[code] = (dict(manifest), time.time())
        return code

    def convert_manifest(self, code: str) -> dict[str, Any] | None:
        """The code exchanged (once, within an hour): the forge's App becomes the one
        the manifest describes, with a new key and webhook secret, as on GitHub."""
        from app.localforge.keys import generate_app_key

        found = self.state.manifest_codes.pop(code, None)
        if found is None or time.time() - found[1] > 3600:
            return None
        manifest, _ = found
        private, public = generate_app_key()
        self.state.app_public_key = public
        self.hooks.webhook_secret = uuid.uuid4().hex
        hook = manifest.get("hook_attributes") or {}
        self.state.created_from_manifest.append(manifest)
        return {
            "client_id": "Iv1." + uuid.uuid4().hex[:16],
            "client_secret": uuid.uuid4().hex + uuid.uuid4().hex[:8],
            "webhook_secret": self.hooks.webhook_secret,
            "pem": private,
            "hook_url": hook.get("url"),
        }

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
        self.state.faults.append(
            Fault(
                method.upper(), re.compile(path), status, headers or {}, {"message": message}, times
            )
        )

    def delay(self, path: str, seconds: float, *, times: int | None = None) -> None:
        """Answer matching requests ``seconds`` late (the next ``times`` ones, or all)."""
        self.state.delays.append([re.compile(path), seconds, times])

    @contextlib.contextmanager
    def expect_violations(self) -> Iterator[list[Violation]]:
        """For tests that break the contract on purpose: collect instead of failing."""
        before = len(self.violations)
        found: list[Violation] = []
        yield found
        found.extend(self.violations[before:])
        del self.violations[before:]
