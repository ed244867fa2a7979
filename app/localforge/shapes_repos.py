"""A repository as GitHub renders it (full-repository, and the webhook ``repository``
once projected), and the installation token that lists them."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from app.localforge.shapes import APP_PERMISSIONS, Json, Links, iso, node_id
from app.localforge.shapes_accounts import Accounts

if TYPE_CHECKING:
    from app.localforge.state import Repo


# full-repository's links under its API url (uri templates, as GitHub writes them).
_API_URLS = {
    "archive_url": "/{archive_format}{/ref}",
    "assignees_url": "/assignees{/user}",
    "blobs_url": "/git/blobs{/sha}",
    "branches_url": "/branches{/branch}",
    "collaborators_url": "/collaborators{/collaborator}",
    "comments_url": "/comments{/number}",
    "commits_url": "/commits{/sha}",
    "compare_url": "/compare/{base}...{head}",
    "contents_url": "/contents/{+path}",
    "contributors_url": "/contributors",
    "deployments_url": "/deployments",
    "downloads_url": "/downloads",
    "events_url": "/events",
    "forks_url": "/forks",
    "git_commits_url": "/git/commits{/sha}",
    "git_refs_url": "/git/refs{/sha}",
    "git_tags_url": "/git/tags{/sha}",
    "issue_comment_url": "/issues/comments{/number}",
    "issue_events_url": "/issues/events{/number}",
    "issues_url": "/issues{/number}",
    "keys_url": "/keys{/key_id}",
    "labels_url": "/labels{/name}",
    "languages_url": "/languages",
    "merges_url": "/merges",
    "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}",
    "pulls_url": "/pulls{/number}",
    "releases_url": "/releases{/id}",
    "stargazers_url": "/stargazers",
    "statuses_url": "/statuses/{sha}",
    "subscribers_url": "/subscribers",
    "subscription_url": "/subscription",
    "tags_url": "/tags",
    "teams_url": "/teams",
    "trees_url": "/git/trees{/sha}",
    "hooks_url": "/hooks",
}
# What the forge does not model: the same for every repository, as a new one has them.
_SETTINGS: Json = {
    "description": None,
    "fork": False,
    "mirror_url": None,
    "homepage": None,
    "language": None,
    "forks_count": 0,
    "stargazers_count": 0,
    "watchers_count": 0,
    "size": 0,
    "is_template": False,
    "topics": [],
    "has_issues": True,
    "has_projects": False,
    "has_wiki": False,
    "has_pages": False,
    "has_downloads": True,
    "has_discussions": False,
    "archived": False,
    "disabled": False,
    "allow_rebase_merge": True,
    "allow_squash_merge": True,
    "allow_merge_commit": True,
    "allow_auto_merge": False,
    "delete_branch_on_merge": False,
    "allow_update_branch": False,
    "use_squash_pr_title_as_default": False,
    "squash_merge_commit_title": "COMMIT_OR_PR_TITLE",
    "squash_merge_commit_message": "COMMIT_MESSAGES",
    "merge_commit_title": "MERGE_MESSAGE",
    "merge_commit_message": "PR_TITLE",
    "allow_forking": True,
    "web_commit_signoff_required": False,
    "subscribers_count": 0,
    "network_count": 0,
    "license": None,
    "forks": 0,
    "watchers": 0,
    "custom_properties": {},
}


class Repositories:
    def __init__(self, links: Links, accounts: Accounts):
        self.links = links
        self.accounts = accounts

    def repository(self, repo: Repo, *, open_issues: int | None = None) -> Json:
        """full-repository; also the webhook ``repository`` once projected by ``hook``.

        Without ``open_issues``, counts the open issues and pull requests, as GitHub does.
        """
        if open_issues is None:
            open_issues = sum(1 for i in repo.issues.values() if i.state == "open")
        api, html = self.links.api(repo), self.links.html(repo)
        clone = f"{html}.git"  # the forge speaks git over HTTP only
        return {
            "id": repo.id,
            "node_id": node_id("Repository", repo.id),
            "name": repo.name,
            "full_name": repo.full_name,
            "private": repo.private,
            "owner": self.accounts.user(repo.owner),
            "html_url": html,
            "url": api,
            **{key: api + path for key, path in _API_URLS.items()},
            "git_url": clone,
            "clone_url": clone,
            "ssh_url": f"git@{urlsplit(self.links.base).hostname}:{repo.full_name}.git",
            "svn_url": html,
            "default_branch": repo.default_branch,
            "open_issues_count": open_issues,
            "open_issues": open_issues,
            "visibility": "private" if repo.private else "public",
            "pushed_at": iso(repo.pushed_at),
            "created_at": iso(repo.created_at),
            "updated_at": iso(max(repo.created_at, repo.pushed_at)),
            **_SETTINGS,
        }

    def access_token(self, token: str, expires_at: float, repos: list[Repo]) -> Json:
        """installation-token."""
        return {
            "token": token,
            "expires_at": iso(expires_at),
            "permissions": dict(APP_PERMISSIONS),
            "repository_selection": "selected",
            "repositories": [self.repository(r) for r in repos],
        }
