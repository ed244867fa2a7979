"""GitHub's rules: the state changes the REST API and the people on github.com share —
comments and reactions, pull requests and their mergeability, merges with their
guards, closing keywords, pushes — and the webhook payloads they send.

Over ~400 lines on purpose: GitHub's rules call each other (a push refreshes the pull
requests on it, whose mergeability a merge and every payload read); split, they would
import each other in a circle.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from app.localforge.api_errors import ApiError, custom_error
from app.localforge.bare_repo import Person
from app.localforge.deliveries import Outbox
from app.localforge.forge_base import (
    CLOSING,
    ZERO_SHA,
    ForgeState,
)
from app.localforge.forge_ci import ForgeCI
from app.localforge.state import (
    REACTIONS,
    Comment,
    Issue,
    Label,
    Merge,
    Pull,
    Reaction,
    Repo,
    User,
)


class GitHubRules:
    """How GitHub changes its state, and says so through the outbox (``hooks``); a push
    starts the required checks (``ci``) and tells :attr:`on_default_branch` when the
    default branch moved."""

    def __init__(self, state: ForgeState, hooks: Outbox, ci: ForgeCI) -> None:
        self.state = state
        self.hooks = hooks
        self.ci = ci
        self.on_default_branch: list[Callable[[Repo, str], Awaitable[None]]] = []
        self._locks: dict[str, asyncio.Lock] = {}
        self._shapes: dict[tuple[str, str, str], tuple[int, int, int, int, bool]] = {}

    # -- state changes shared by the API and the Python side ---------------------
    def new_comment(
        self, repo: Repo, issue: Issue, body: str, user: User, *, via_app: bool = False
    ) -> Comment:
        comment = Comment(self.state.next_id(), issue.number, body, user, via_app=via_app)
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
        reaction = Reaction(self.state.next_id(), content, user)
        target.append(reaction)
        return reaction, True

    def label(self, repo: Repo, name: str) -> Label:
        found = repo.labels.get(name.lower())
        if found is None:
            found = Label(self.state.next_id(), name)
            repo.labels[name.lower()] = found
        return found

    def lock(self, repo: Repo) -> asyncio.Lock:
        return self._locks.setdefault(repo.full_name, asyncio.Lock())

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
        self.hooks.emit(
            "pull_request",
            self.hooks.event(
                repo, "opened", user, number=pull.number, pull_request=self.pull_json(repo, pull)
            ),
        )
        return pull

    async def close_pull(self, repo: Repo, pull: Pull, user: User) -> None:
        issue = repo.issues[pull.number]
        issue.state = "closed"
        issue.closed_at = issue.updated_at = time.time()
        self.hooks.emit(
            "pull_request",
            self.hooks.event(
                repo, "closed", user, number=pull.number, pull_request=self.pull_json(repo, pull)
            ),
        )

    @staticmethod
    def _signatures(repo: Repo, pull: Pull, method: str, user: User) -> None:
        """Branch protection's "Require signed commits", by merge method: a merge commit
        brings the pull request's commits onto the branch, so each must be verified; a
        squash lands one new commit GitHub signs, for the pull request's author only
        (https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/managing-protected-branches/about-protected-branches#require-signed-commits);
        GitHub cannot sign the commits a rebase makes."""
        if method == "rebase":
            raise ApiError(
                405,
                "Base branch requires signed commits. "
                "Rebase merges cannot be automatically signed by GitHub",
            )
        if method == "squash":
            if user.login != repo.issues[pull.number].user.login:
                raise ApiError(405, "Commits must have verified signatures.")
            return
        commits = repo.git.commits_between(pull.base_sha, pull.head_sha)
        if any(c.sha not in repo.verified for c in commits):
            raise ApiError(405, "Commits must have verified signatures.")

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
            self._may_merge(repo, pull, sha=sha, method=method, user=user)
            commit_message = _merge_message(repo, pull, issue, method, title, message)
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
            if method != "rebase":
                repo.verified.add(merged_sha)  # GitHub signs the commit it makes
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
            self.hooks.emit(
                "pull_request",
                self.hooks.event(
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

    def _may_merge(
        self, repo: Repo, pull: Pull, *, sha: str | None, method: str, user: User
    ) -> None:
        """Raise GitHub's refusal when ``pull`` may not merge now."""
        issue = repo.issues[pull.number]
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
        if repo.signed_commits_required and pull.base == repo.default_branch:
            self._signatures(repo, pull, method, user)

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
        self.hooks.emit(
            "issues", self.hooks.event(repo, "closed", user, issue=self.issue_json(repo, issue))
        )

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
            reviewer = self.state.user(known[login.lower()])
            if any(u.id == reviewer.id for u in pull.requested_reviewers):
                continue
            pull.requested_reviewers.append(reviewer)
            repo.issues[pull.number].updated_at = time.time()
            self.hooks.emit(
                "pull_request",
                self.hooks.event(
                    repo,
                    "review_requested",
                    user,
                    number=pull.number,
                    pull_request=self.pull_json(repo, pull),
                    requested_reviewer=self.state.render.accounts.user(reviewer),
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
            payload = self.hooks.event(
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
                compare=f"{self.state.url}/{repo.full_name}/compare/"
                f"{(before or ZERO_SHA)[:12]}...{(after or ZERO_SHA)[:12]}",
                commits=[self.state.render.git.push_commit(repo, c) for c in commits[-20:]],
                head_commit=self.state.render.git.push_commit(repo, commits[-1])
                if commits
                else None,
                pusher={
                    "name": pusher.login,
                    "email": None
                    if pusher.type == "Bot"
                    else f"{pusher.login}@users.noreply.localforge",
                },
            )
            payload.pop("action")
            self.hooks.emit("push", payload)
            await self._heads_moved(repo, branch, after, pusher)
            if after is not None and branch == repo.default_branch:
                for watcher in self.on_default_branch:
                    await watcher(repo, after)
            if after is not None and repo.required_checks:
                self.ci.start(repo, branch, before, after)

    async def _heads_moved(self, repo: Repo, branch: str, after: str | None, pusher: User) -> None:
        """The open pull requests whose head is ``branch``: synchronized, or closed when
        the branch is gone."""
        for pull in list(repo.pulls.values()):
            if pull.head != branch or repo.issues[pull.number].state != "open":
                continue
            if after is None:
                await self.close_pull(repo, pull, pusher)
                continue
            old = pull.head_sha
            pull.head_sha = after
            self.refresh_pull(repo, pull)
            self.hooks.emit(
                "pull_request",
                self.hooks.event(
                    repo,
                    "synchronize",
                    pusher,
                    number=pull.number,
                    before=old,
                    after=after,
                    pull_request=self.pull_json(repo, pull),
                ),
            )

    # -- webhook payloads (event, repository_json: app/localforge/deliveries.py) ---
    def issue_json(self, repo: Repo, issue: Issue) -> dict[str, Any]:
        return self.state.render.issues.issue(repo, issue, repo.pulls.get(issue.number))

    def pull_json(self, repo: Repo, pull: Pull) -> dict[str, Any]:
        mergeable, state = self.mergeability(repo, pull)
        return self.state.render.pulls.pull(
            repo, pull, repo.issues[pull.number], mergeable=mergeable, mergeable_state=state
        )


def closing_references(repo: Repo, text: str) -> list[int]:
    """The issue numbers of ``repo`` that ``text`` says to close, in order, once each."""
    numbers: list[int] = []
    for found in CLOSING.finditer(text):
        named = f"{found['owner']}/{found['name']}" if found["owner"] else repo.full_name
        number = int(found["number"])
        if named.lower() == repo.full_name.lower() and number not in numbers:
            numbers.append(number)
    return numbers


def _merge_message(
    repo: Repo, pull: Pull, issue: Issue, method: str, title: str | None, message: str | None
) -> str:
    """The merge's commit message as GitHub writes it, unless the caller gave one."""
    default_title = {
        "merge": f"Merge pull request #{pull.number} from {repo.owner.login}/{pull.head}",
        "squash": f"{issue.title} (#{pull.number})",
        "rebase": issue.title,
    }[method]
    # GitHub's default body: the PR title for a merge commit, nothing otherwise.
    body = message or (issue.title if method == "merge" else "")
    return (title or default_title) + (f"\n\n{body}" if body else "")
