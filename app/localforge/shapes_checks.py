"""Check suites, check runs and commit statuses as GitHub renders them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.localforge.shapes import Json, Links, iso, node_id, utc
from app.localforge.shapes_accounts import Accounts
from app.localforge.shapes_pulls import Pulls
from app.localforge.shapes_repos import Repositories

if TYPE_CHECKING:
    from app.localforge.bare_repo import CommitInfo
    from app.localforge.state import CheckRun, CheckSuite, CommitStatus, Issue, Pull, Repo


class Checks:
    def __init__(self, links: Links, accounts: Accounts, repos: Repositories, pulls: Pulls) -> None:
        self.links = links
        self.accounts = accounts
        self.repos = repos
        self.pulls = pulls

    def _suite_core(self, repo: Repo, suite: CheckSuite, pulls: list[tuple[Pull, Issue]]) -> Json:
        return {
            "id": suite.id,
            "node_id": node_id("CheckSuite", suite.id),
            "head_branch": suite.head_branch,
            "head_sha": suite.head_sha,
            "status": suite.status,
            "conclusion": suite.conclusion,
            "url": f"{self.links.api(repo)}/check-suites/{suite.id}",
            "before": suite.before,
            "after": suite.after,
            "pull_requests": [self.pulls.pull_minimal(repo, p) for p, _ in pulls],
            "app": self.accounts.app_for(suite.app_slug),
            "created_at": iso(suite.created_at),
            "updated_at": iso(suite.updated_at),
        }

    def check_suite(
        self,
        repo: Repo,
        suite: CheckSuite,
        runs_count: int,
        pulls: list[tuple[Pull, Issue]],
        *,
        head_commit: CommitInfo,
    ) -> Json:
        """check-suite; ``head_commit`` is the commit at ``suite.head_sha``."""
        return {
            **self._suite_core(repo, suite, pulls),
            "repository": self.repos.repository(repo),
            "head_commit": {
                "id": head_commit.sha,
                "tree_id": head_commit.tree,
                "message": head_commit.message,
                "timestamp": utc(head_commit.authored_at),
                "author": {"name": head_commit.author.name, "email": head_commit.author.email},
                "committer": {
                    "name": head_commit.committer.name,
                    "email": head_commit.committer.email,
                },
            },
            "latest_check_runs_count": runs_count,
            "check_runs_url": f"{self.links.api(repo)}/check-suites/{suite.id}/check-runs",
        }

    def check_run(self, repo: Repo, run: CheckRun, pulls: list[tuple[Pull, Issue]]) -> Json:
        """check-run; its ``check_suite`` is the whole suite, as webhooks need it."""
        url = f"{self.links.api(repo)}/check-runs/{run.id}"
        app = self.accounts.app_for(run.app_slug)
        return {
            "id": run.id,
            "node_id": node_id("CheckRun", run.id),
            "head_sha": run.head_sha,
            "external_id": run.external_id or "",
            "url": url,
            "html_url": f"{self.links.html(repo)}/runs/{run.id}",
            # Without one, GitHub shows the App's homepage.
            "details_url": run.details_url or app["external_url"],
            "status": run.status,
            "conclusion": run.conclusion,
            "started_at": iso(run.started_at),
            "completed_at": iso(run.completed_at) if run.completed_at is not None else None,
            "output": {
                "title": run.output.title,
                "summary": run.output.summary,
                "text": run.output.text,
                "annotations_count": 0,
                "annotations_url": f"{url}/annotations",
            },
            "name": run.name,
            "check_suite": self._suite_core(repo, run.suite, pulls),
            "app": app,
            "pull_requests": [self.pulls.pull_minimal(repo, p) for p, _ in pulls],
        }

    def commit_status(self, repo: Repo, s: CommitStatus) -> Json:
        """status (``POST /statuses/{sha}``)."""
        return {**self._status(repo, s), "creator": self.accounts.user(s.creator)}

    def _status(self, repo: Repo, s: CommitStatus) -> Json:
        return {
            "url": f"{self.links.api(repo)}/statuses/{s.sha}",
            "avatar_url": f"{self.links.base}/{s.creator.login}.png",
            "id": s.id,
            "node_id": node_id("StatusContext", s.id),
            "state": s.state,
            "description": s.description,
            "target_url": s.target_url,
            "context": s.context,
            "created_at": iso(s.created_at),
            "updated_at": iso(s.updated_at),
        }

    def combined_status(self, repo: Repo, sha: str, statuses: list[CommitStatus]) -> Json:
        """combined-commit-status: the latest status per context of ``sha``.

        ``failure`` if any is failure or error, ``pending`` if there are none or any is
        pending, else ``success``.
        """
        latest: dict[str, CommitStatus] = {}
        for s in sorted((s for s in statuses if s.sha == sha), key=lambda s: (s.updated_at, s.id)):
            latest[s.context] = s
        states = {s.state for s in latest.values()}
        if states & {"failure", "error"}:
            state = "failure"
        elif not states or "pending" in states:
            state = "pending"
        else:
            state = "success"
        api = self.links.api(repo)
        return {
            "state": state,
            "statuses": [self._status(repo, s) for s in latest.values()],
            "sha": sha,
            "total_count": len(latest),
            "repository": self.repos.repository(repo),
            "commit_url": f"{api}/commits/{sha}",
            "url": f"{api}/commits/{sha}/status",
        }
