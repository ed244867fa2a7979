"""Issues, comments, labels and reactions as GitHub renders them."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from app.localforge.shapes import PER_REPO, Json, Links, iso, node_id
from app.localforge.shapes_accounts import Accounts
from app.localforge.state import REACTIONS

if TYPE_CHECKING:
    from app.localforge.state import Comment, Issue, Label, Pull, Reaction, Repo


class Issues:
    def __init__(self, links: Links, accounts: Accounts):
        self.links = links
        self.accounts = accounts

    def label(self, repo: Repo, label: Label) -> Json:
        return {
            "id": label.id,
            "node_id": node_id("Label", label.id),
            "url": f"{self.links.api(repo)}/labels/{quote(label.name, safe='')}",
            "name": label.name,
            "description": label.description,
            "color": label.color,
            "default": False,
        }

    def reaction(self, r: Reaction) -> Json:
        return {
            "id": r.id,
            "node_id": node_id("Reaction", r.id),
            "user": self.accounts.user(r.user),
            "content": r.content,
            "created_at": iso(r.created_at),
        }

    def reaction_rollup(self, reactions: list[Reaction], url: str) -> Json:
        counts = {content: 0 for content in REACTIONS}
        for r in reactions:
            counts[r.content] = counts.get(r.content, 0) + 1
        return {"url": url, "total_count": len(reactions), **counts}

    def issue(self, repo: Repo, issue: Issue, pull: Pull | None = None) -> Json:
        """issue; a pull request's issue carries ``pull_request`` (``pull`` or the repo's)."""
        api, n = self.links.api(repo), issue.number
        url = f"{api}/issues/{n}"
        rendered: Json = {
            "id": repo.id * PER_REPO + n,
            "node_id": node_id("Issue", repo.id * PER_REPO + n),
            "url": url,
            "repository_url": api,
            "labels_url": f"{url}/labels{{/name}}",
            "comments_url": f"{url}/comments",
            "events_url": f"{url}/events",
            "html_url": f"{self.links.html(repo)}/{'pull' if issue.is_pull else 'issues'}/{n}",
            "number": n,
            "state": issue.state,
            "state_reason": issue.state_reason,
            "title": issue.title,
            "body": issue.body,
            "user": self.accounts.user(issue.user),
            "labels": [self.label(repo, label) for label in issue.labels],
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "locked": False,
            "active_lock_reason": None,
            "comments": len(issue.comments),
            "closed_at": iso(issue.closed_at) if issue.closed_at is not None else None,
            "created_at": iso(issue.created_at),
            "updated_at": iso(issue.updated_at),
            "timeline_url": f"{url}/timeline",
            "performed_via_github_app": None,
            "author_association": self.links.association(repo, issue.user.login),
            "reactions": self.reaction_rollup(issue.reactions, f"{url}/reactions"),
        }
        if issue.is_pull:
            pull = pull or repo.pulls.get(n)
            html = f"{self.links.html(repo)}/pull/{n}"
            merged_at = pull.merged_at if pull is not None else None
            rendered["pull_request"] = {
                "url": f"{api}/pulls/{n}",
                "html_url": html,
                "diff_url": f"{html}.diff",
                "patch_url": f"{html}.patch",
                "merged_at": iso(merged_at) if merged_at is not None else None,
            }
            rendered["draft"] = pull.draft if pull is not None else False
        return rendered

    def comment(self, repo: Repo, c: Comment) -> Json:
        """issue-comment."""
        api = self.links.api(repo)
        issue = repo.issues.get(c.issue_number)
        page = "pull" if issue is not None and issue.is_pull else "issues"
        url = f"{api}/issues/comments/{c.id}"
        return {
            "id": c.id,
            "node_id": node_id("IssueComment", c.id),
            "url": url,
            "html_url": f"{self.links.html(repo)}/{page}/{c.issue_number}#issuecomment-{c.id}",
            "issue_url": f"{api}/issues/{c.issue_number}",
            "body": c.body,
            "user": self.accounts.user(c.user),
            "created_at": iso(c.created_at),
            "updated_at": iso(c.updated_at),
            "author_association": self.links.association(repo, c.user.login),
            "performed_via_github_app": self.accounts.app() if c.via_app else None,
            "reactions": self.reaction_rollup(c.reactions, f"{url}/reactions"),
        }
