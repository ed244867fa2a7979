"""Pull requests, their files and reviews as GitHub renders them."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from app.localforge.shapes import PER_REPO, PULL_OFFSET, Json, Links, iso, node_id
from app.localforge.shapes_accounts import Accounts
from app.localforge.shapes_issues import Issues
from app.localforge.shapes_repos import Repositories

if TYPE_CHECKING:
    from app.localforge.bare_repo import FileChange
    from app.localforge.state import Issue, Pull, Repo, Review


class Pulls:
    def __init__(
        self, links: Links, accounts: Accounts, repos: Repositories, issues: Issues
    ) -> None:
        self.links = links
        self.accounts = accounts
        self.repos = repos
        self.issues = issues

    def _pull_core(self, repo: Repo, pull: Pull, issue: Issue) -> Json:
        api, n = self.links.api(repo), pull.number
        url, html = f"{api}/pulls/{n}", f"{self.links.html(repo)}/pull/{n}"
        pull_id = repo.id * PER_REPO + PULL_OFFSET + n
        links = {
            "self": url,
            "html": html,
            "issue": f"{api}/issues/{n}",
            "comments": f"{api}/issues/{n}/comments",
            "review_comments": f"{url}/comments",
            "review_comment": f"{api}/pulls/comments{{/number}}",
            "commits": f"{url}/commits",
            "statuses": f"{api}/statuses/{pull.head_sha}",
        }
        return {
            "url": url,
            "id": pull_id,
            "node_id": node_id("PullRequest", pull_id),
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "issue_url": links["issue"],
            "commits_url": links["commits"],
            "review_comments_url": links["review_comments"],
            "review_comment_url": links["review_comment"],
            "comments_url": links["comments"],
            "statuses_url": links["statuses"],
            "number": n,
            "state": issue.state,
            "locked": False,
            "title": issue.title,
            "user": self.accounts.user(issue.user),
            "body": issue.body,
            "labels": [self.issues.label(repo, label) for label in issue.labels],
            "milestone": None,
            "active_lock_reason": None,
            "created_at": iso(issue.created_at),
            "updated_at": iso(issue.updated_at),
            "closed_at": iso(issue.closed_at) if issue.closed_at is not None else None,
            "merged_at": iso(pull.merged_at) if pull.merged_at is not None else None,
            "merge_commit_sha": pull.merge_commit_sha,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [self.accounts.user(u) for u in pull.requested_reviewers],
            "requested_teams": [],
            "head": self._pull_end(repo, pull.head, pull.head_sha),
            "base": self._pull_end(repo, pull.base, pull.base_sha),
            "_links": {name: {"href": href} for name, href in links.items()},
            "author_association": self.links.association(repo, issue.user.login),
            "auto_merge": None,
            "draft": pull.draft,
        }

    def _pull_end(self, repo: Repo, branch: str, sha: str) -> Json:
        return {
            "label": f"{repo.owner.login}:{branch}",
            "ref": branch,
            "sha": sha,
            "user": self.accounts.user(repo.owner),
            "repo": self.repos.repository(repo),
        }

    def pull_simple(self, repo: Repo, pull: Pull, issue: Issue) -> Json:
        """pull-request-simple (``GET /pulls``, ``POST .../requested_reviewers``).

        Its labels need a string ``description`` where pull-request allows null: a label
        without one has ``""`` here."""
        rendered = self._pull_core(repo, pull, issue)
        for label in rendered["labels"]:
            if label["description"] is None:
                label["description"] = ""
        return rendered

    def pull(
        self, repo: Repo, pull: Pull, issue: Issue, *, mergeable: bool | None, mergeable_state: str
    ) -> Json:
        """pull-request; ``mergeable`` None while the forge has not computed it."""
        return {
            **self._pull_core(repo, pull, issue),
            "merged": pull.merged,
            "mergeable": mergeable,
            "rebaseable": None,  # not computed by the forge
            "mergeable_state": mergeable_state,
            "merged_by": self.accounts.user(pull.merged_by) if pull.merged_by is not None else None,
            "comments": len(issue.comments),
            "review_comments": 0,
            "maintainer_can_modify": False,  # head and base share the repository
            "commits": pull.commits,
            "additions": pull.additions,
            "deletions": pull.deletions,
            "changed_files": pull.changed_files,
        }

    def pull_minimal(self, repo: Repo, pull: Pull) -> Json:
        ref = {"id": repo.id, "url": self.links.api(repo), "name": repo.name}
        return {
            "id": repo.id * PER_REPO + PULL_OFFSET + pull.number,
            "number": pull.number,
            "url": f"{self.links.api(repo)}/pulls/{pull.number}",
            "head": {"ref": pull.head, "sha": pull.head_sha, "repo": ref},
            "base": {"ref": pull.base, "sha": pull.base_sha, "repo": ref},
        }

    def pull_file(self, repo: Repo, head_sha: str, change: FileChange) -> Json:
        """diff-entry (``GET /pulls/{n}/files``)."""
        path = quote(change.filename)
        rendered: Json = {
            "sha": change.sha,
            "filename": change.filename,
            "status": change.status,
            "additions": change.additions,
            "deletions": change.deletions,
            "changes": change.changes,
            "blob_url": f"{self.links.html(repo)}/blob/{head_sha}/{path}",
            "raw_url": f"{self.links.html(repo)}/raw/{head_sha}/{path}",
            "contents_url": f"{self.links.api(repo)}/contents/{path}?ref={head_sha}",
        }
        if change.patch is not None:
            rendered["patch"] = change.patch
        if change.previous_filename is not None:
            rendered["previous_filename"] = change.previous_filename
        return rendered

    def review(self, repo: Repo, pull: Pull, review: Review) -> Json:
        """pull-request-review. A pending review has no ``submitted_at``, as on GitHub."""
        pull_url = f"{self.links.api(repo)}/pulls/{pull.number}"
        html = f"{self.links.html(repo)}/pull/{pull.number}#pullrequestreview-{review.id}"
        rendered: Json = {
            "id": review.id,
            "node_id": node_id("PullRequestReview", review.id),
            "user": self.accounts.user(review.user),
            "body": review.body,
            "state": review.state,
            "html_url": html,
            "pull_request_url": pull_url,
            "_links": {"html": {"href": html}, "pull_request": {"href": pull_url}},
            "commit_id": review.commit_id,
            "author_association": self.links.association(repo, review.user.login),
        }
        if review.state != "PENDING":
            rendered["submitted_at"] = iso(review.submitted_at)
        return rendered
