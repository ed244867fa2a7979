"""LocalForge's state as the JSON GitHub answers and delivers.

Pure functions over ``state`` and ``git`` records: no git, no clock, and no I/O but
reading the contract's webhook schemas once, for ``hook``. Each
renderer returns the REST shape of the operation that answers it (a superset where
the webhook form of the same object needs more, as for ``check_run.check_suite``);
``Renderer.hook`` projects a payload assembled from those shapes onto the webhook
schema of its event. Ids, numbers, urls and times come from the state, never from
the schemas. API urls have api.github.com's paths under the forge's own address;
html urls have github.com's paths, and the forge's read-only view answers the
repository, issue and pull request pages among them.

Over ~400 lines on purpose: one renderer per GitHub object, side by side because they
nest (a pull request holds a repository, users, its head and base) and must agree.
"""

from __future__ import annotations

import base64
import time
import zlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import jsonschema

from app.github import manifest
from app.github.manifest import SUBSCRIBED_EVENTS
from app.localforge.contract import WebhookContract
from app.localforge.state import REACTIONS, User

if TYPE_CHECKING:
    from app.localforge.git_http import CommitInfo, Entry, FileChange
    from app.localforge.state import (
        CheckRun,
        CheckSuite,
        Comment,
        CommitStatus,
        Issue,
        Label,
        Pull,
        Reaction,
        Repo,
        Review,
    )

Json = dict[str, Any]

# GitHub knows the App as it was registered: from Patchwarden's manifest.
APP_PERMISSIONS = dict(manifest.PERMISSIONS)
APP_EVENTS = list(SUBSCRIBED_EVENTS)
# What another App (the forge's own CI, say) is shown to hold; the forge keeps no record.
OTHER_APP_PERMISSIONS = {"checks": "write", "metadata": "read"}
# Issue and pull request ids are not in the state: both derive from the repository id
# and the shared number, in disjoint ranges, so each is stable and unique per kind.
_PER_REPO = 1_000_000
_PULL_OFFSET = _PER_REPO // 2


_PGP = ("-----BEGIN PGP SIGNATURE-----", "-----END PGP SIGNATURE-----")


def iso(ts: float) -> str:
    """Epoch seconds as GitHub writes times: ``2026-11-22T10:00:00Z``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utc(stamp: str) -> str:
    """A git ISO 8601 date with an offset, in UTC as the REST API writes it."""
    return iso(datetime.fromisoformat(stamp).timestamp())


def node_id(kind: str, key: int | str) -> str:
    """GitHub's legacy global node id: base64 of ``"<len(kind):02>:<kind><key>"``."""
    return base64.b64encode(f"{len(kind):02d}:{kind}{key}".encode()).decode()


def _stable_id(name: str) -> int:
    """An id for an account or App the state has no record of, equal on every render."""
    return zlib.crc32(name.encode()) or 1


def _base64_lines(data: bytes) -> str:
    """Base64 with a newline after every 60 characters, as the contents API sends it."""
    encoded = base64.b64encode(data).decode()
    return "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60))


def _outside_enum(item: Any, schema: Mapping[str, Any]) -> bool:
    """A string a list's items' own enum (no reference followed) does not name."""
    enum = schema.get("enum")
    return isinstance(item, str) and isinstance(enum, list) and item not in enum


def _webhook_definitions() -> Mapping[str, Any]:
    return WebhookContract.load().definitions


class Renderer:
    """Turns LocalForge state into GitHub's JSON, with urls on the forge's address."""

    def __init__(
        self,
        *,
        base_url: str,
        app_id: int,
        app_slug: str,
        app_owner: str | User = "patchwarden-dev",
        app_created_at: float = 0.0,
    ) -> None:
        self.base = base_url.rstrip("/")
        self.app_id = app_id
        self.app_slug = app_slug
        if isinstance(app_owner, str):
            app_owner = User(app_owner, _stable_id(app_owner), "Organization")
        self.app_owner = app_owner
        self.app_created_at = app_created_at  # the epoch says "not known"
        self._validators: dict[int, jsonschema.protocols.Validator] = {}

    # -- urls ----------------------------------------------------------------------
    def _api(self, repo: Repo) -> str:
        return f"{self.base}/repos/{repo.full_name}"

    def _html(self, repo: Repo) -> str:
        return f"{self.base}/{repo.full_name}"

    # -- accounts and Apps ---------------------------------------------------------
    def user(self, u: User) -> Json:
        """simple-user."""
        api = f"{self.base}/users/{u.login}"
        html = f"{self.base}/{u.login}"
        if u.type == "Bot" and u.login.endswith("[bot]"):
            html = f"{self.base}/apps/{u.login.removesuffix('[bot]')}"
        return {
            "login": u.login,
            "id": u.id,
            "node_id": node_id(u.type, u.id),
            "avatar_url": f"{self.base}/{u.login}.png",
            "gravatar_id": "",
            "url": api,
            "html_url": html,
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": u.type,
            "site_admin": False,
        }

    def collaborator(self, u: User, role: str) -> Json:
        """nullable-collaborator: the user with what ``role`` allows on the repository."""
        granted = {
            "pull": True,
            "triage": role in ("triage", "write", "maintain", "admin"),
            "push": role in ("write", "maintain", "admin"),
            "maintain": role in ("maintain", "admin"),
            "admin": role == "admin",
        }
        return {**self.user(u), "permissions": granted, "role_name": role}

    def organization(self, org: User) -> Json:
        """The ``organization`` object webhooks carry for an organization's repository."""
        api = f"{self.base}/orgs/{org.login}"
        return {
            "login": org.login,
            "id": org.id,
            "node_id": node_id("Organization", org.id),
            "url": api,
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events",
            "hooks_url": f"{api}/hooks",
            "issues_url": f"{api}/issues",
            "members_url": f"{api}/members{{/member}}",
            "public_members_url": f"{api}/public_members{{/member}}",
            "avatar_url": f"{self.base}/{org.login}.png",
            "description": None,
        }

    def public_user(self, u: User, *, created_at: float) -> Json:
        """public-user (``GET /users/{username}``): a bot's too, as GitHub answers for
        ``slug[bot]`` (its id is what a commit author's noreply address uses)."""
        return self.user(u) | {
            "name": None,
            "company": None,
            "blog": "",
            "location": None,
            "email": None,
            "hireable": None,
            "bio": None,
            "public_repos": 0,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": iso(created_at),
            "updated_at": iso(created_at),
        }

    def app(self) -> Json:
        """integration (``GET /app``): this App."""
        return self._integration(self.app_slug, self.app_id, APP_PERMISSIONS, APP_EVENTS)

    def _app_for(self, slug: str) -> Json:
        if slug == self.app_slug:
            return self.app()
        return self._integration(slug, _stable_id(slug), OTHER_APP_PERMISSIONS, [])

    def _integration(
        self, slug: str, app_id: int, permissions: Mapping[str, str], events: Sequence[str]
    ) -> Json:
        html = f"{self.base}/apps/{slug}"
        return {
            "id": app_id,
            "slug": slug,
            "node_id": node_id("App", app_id),
            "owner": self.user(self.app_owner),
            "name": slug,
            "description": None,
            "external_url": html,
            "html_url": html,
            "created_at": iso(self.app_created_at),
            "updated_at": iso(self.app_created_at),
            "permissions": dict(permissions),
            "events": list(events),
        }

    def installation(
        self,
        installation_id: int,
        account: User,
        repos: list[Repo],
        *,
        created_at: float | None = None,
    ) -> Json:
        """installation; without ``created_at``, dated by its oldest repository."""
        at = iso(
            created_at if created_at is not None else min((r.created_at for r in repos), default=0)
        )
        settings = "organizations/" + account.login + "/" if account.type == "Organization" else ""
        return {
            "id": installation_id,
            "node_id": node_id("Installation", installation_id),
            "account": self.user(account),
            "repository_selection": "selected",
            "access_tokens_url": f"{self.base}/app/installations/{installation_id}/access_tokens",
            "repositories_url": f"{self.base}/installation/repositories",
            "html_url": f"{self.base}/{settings}settings/installations/{installation_id}",
            "app_id": self.app_id,
            "app_slug": self.app_slug,
            "target_id": account.id,
            "target_type": account.type,
            "permissions": dict(APP_PERMISSIONS),
            "events": list(APP_EVENTS),
            "created_at": at,
            "updated_at": at,
            "single_file_name": None,
            "has_multiple_single_files": False,
            "single_file_paths": [],
            "suspended_by": None,
            "suspended_at": None,
        }

    def listed_installation(self, installation_id: int, account: User, repos: list[Repo]) -> Json:
        """installation as ``GET /app/installations`` lists it. GitHub's description of
        this answer (only) types ``account`` as simple-user AND enterprise
        (github/rest-api-description#1397): the enterprise keys it requires are added,
        with the account's own values, so the answer keeps the published contract."""
        found = self.installation(installation_id, account, repos)
        found["account"] |= {
            "name": account.login,
            "slug": account.login,
            "created_at": found["created_at"],
            "updated_at": None,
        }
        return found

    def access_token(self, token: str, expires_at: float, repos: list[Repo]) -> Json:
        """installation-token."""
        return {
            "token": token,
            "expires_at": iso(expires_at),
            "permissions": dict(APP_PERMISSIONS),
            "repository_selection": "selected",
            "repositories": [self.repository(r) for r in repos],
        }

    # -- repositories --------------------------------------------------------------
    def repository(self, repo: Repo, *, open_issues: int | None = None) -> Json:
        """full-repository; also the webhook ``repository`` once projected by ``hook``.

        Without ``open_issues``, counts the open issues and pull requests, as GitHub does.
        """
        if open_issues is None:
            open_issues = sum(1 for i in repo.issues.values() if i.state == "open")
        api, html = self._api(repo), self._html(repo)
        clone = f"{html}.git"
        return {
            "id": repo.id,
            "node_id": node_id("Repository", repo.id),
            "name": repo.name,
            "full_name": repo.full_name,
            "private": repo.private,
            "owner": self.user(repo.owner),
            "html_url": html,
            "description": None,
            "fork": False,
            "url": api,
            "archive_url": f"{api}/{{archive_format}}{{/ref}}",
            "assignees_url": f"{api}/assignees{{/user}}",
            "blobs_url": f"{api}/git/blobs{{/sha}}",
            "branches_url": f"{api}/branches{{/branch}}",
            "collaborators_url": f"{api}/collaborators{{/collaborator}}",
            "comments_url": f"{api}/comments{{/number}}",
            "commits_url": f"{api}/commits{{/sha}}",
            "compare_url": f"{api}/compare/{{base}}...{{head}}",
            "contents_url": f"{api}/contents/{{+path}}",
            "contributors_url": f"{api}/contributors",
            "deployments_url": f"{api}/deployments",
            "downloads_url": f"{api}/downloads",
            "events_url": f"{api}/events",
            "forks_url": f"{api}/forks",
            "git_commits_url": f"{api}/git/commits{{/sha}}",
            "git_refs_url": f"{api}/git/refs{{/sha}}",
            "git_tags_url": f"{api}/git/tags{{/sha}}",
            "git_url": clone,  # the forge speaks git over HTTP only
            "issue_comment_url": f"{api}/issues/comments{{/number}}",
            "issue_events_url": f"{api}/issues/events{{/number}}",
            "issues_url": f"{api}/issues{{/number}}",
            "keys_url": f"{api}/keys{{/key_id}}",
            "labels_url": f"{api}/labels{{/name}}",
            "languages_url": f"{api}/languages",
            "merges_url": f"{api}/merges",
            "milestones_url": f"{api}/milestones{{/number}}",
            "notifications_url": f"{api}/notifications{{?since,all,participating}}",
            "pulls_url": f"{api}/pulls{{/number}}",
            "releases_url": f"{api}/releases{{/id}}",
            "ssh_url": f"git@{urlsplit(self.base).hostname}:{repo.full_name}.git",
            "stargazers_url": f"{api}/stargazers",
            "statuses_url": f"{api}/statuses/{{sha}}",
            "subscribers_url": f"{api}/subscribers",
            "subscription_url": f"{api}/subscription",
            "tags_url": f"{api}/tags",
            "teams_url": f"{api}/teams",
            "trees_url": f"{api}/git/trees{{/sha}}",
            "clone_url": clone,
            "mirror_url": None,
            "hooks_url": f"{api}/hooks",
            "svn_url": html,
            "homepage": None,
            "language": None,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "size": 0,
            "default_branch": repo.default_branch,
            "open_issues_count": open_issues,
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
            "visibility": "private" if repo.private else "public",
            "pushed_at": iso(repo.pushed_at),
            "created_at": iso(repo.created_at),
            "updated_at": iso(max(repo.created_at, repo.pushed_at)),
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
            "open_issues": open_issues,
            "watchers": 0,
            "custom_properties": {},
        }

    def _association(self, repo: Repo, login: str) -> str:
        """author_association: OWNER, MEMBER (organization) or COLLABORATOR, else NONE."""
        if login == repo.owner.login:
            return "OWNER"
        if login in repo.collaborators:
            return "MEMBER" if repo.owner.type == "Organization" else "COLLABORATOR"
        return "NONE"

    # -- issues, comments, labels, reactions ---------------------------------------
    def label(self, repo: Repo, label: Label) -> Json:
        return {
            "id": label.id,
            "node_id": node_id("Label", label.id),
            "url": f"{self._api(repo)}/labels/{quote(label.name, safe='')}",
            "name": label.name,
            "description": label.description,
            "color": label.color,
            "default": False,
        }

    def reaction(self, r: Reaction) -> Json:
        return {
            "id": r.id,
            "node_id": node_id("Reaction", r.id),
            "user": self.user(r.user),
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
        api, n = self._api(repo), issue.number
        url = f"{api}/issues/{n}"
        rendered: Json = {
            "id": repo.id * _PER_REPO + n,
            "node_id": node_id("Issue", repo.id * _PER_REPO + n),
            "url": url,
            "repository_url": api,
            "labels_url": f"{url}/labels{{/name}}",
            "comments_url": f"{url}/comments",
            "events_url": f"{url}/events",
            "html_url": f"{self._html(repo)}/{'pull' if issue.is_pull else 'issues'}/{n}",
            "number": n,
            "state": issue.state,
            "state_reason": issue.state_reason,
            "title": issue.title,
            "body": issue.body,
            "user": self.user(issue.user),
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
            "author_association": self._association(repo, issue.user.login),
            "reactions": self.reaction_rollup(issue.reactions, f"{url}/reactions"),
        }
        if issue.is_pull:
            pull = pull or repo.pulls.get(n)
            html = f"{self._html(repo)}/pull/{n}"
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
        api = self._api(repo)
        issue = repo.issues.get(c.issue_number)
        page = "pull" if issue is not None and issue.is_pull else "issues"
        url = f"{api}/issues/comments/{c.id}"
        return {
            "id": c.id,
            "node_id": node_id("IssueComment", c.id),
            "url": url,
            "html_url": f"{self._html(repo)}/{page}/{c.issue_number}#issuecomment-{c.id}",
            "issue_url": f"{api}/issues/{c.issue_number}",
            "body": c.body,
            "user": self.user(c.user),
            "created_at": iso(c.created_at),
            "updated_at": iso(c.updated_at),
            "author_association": self._association(repo, c.user.login),
            "performed_via_github_app": self.app() if c.via_app else None,
            "reactions": self.reaction_rollup(c.reactions, f"{url}/reactions"),
        }

    # -- pull requests -------------------------------------------------------------
    def _pull_core(self, repo: Repo, pull: Pull, issue: Issue) -> Json:
        api, n = self._api(repo), pull.number
        url, html = f"{api}/pulls/{n}", f"{self._html(repo)}/pull/{n}"
        pull_id = repo.id * _PER_REPO + _PULL_OFFSET + n
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
            "user": self.user(issue.user),
            "body": issue.body,
            "labels": [self.label(repo, label) for label in issue.labels],
            "milestone": None,
            "active_lock_reason": None,
            "created_at": iso(issue.created_at),
            "updated_at": iso(issue.updated_at),
            "closed_at": iso(issue.closed_at) if issue.closed_at is not None else None,
            "merged_at": iso(pull.merged_at) if pull.merged_at is not None else None,
            "merge_commit_sha": pull.merge_commit_sha,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [self.user(u) for u in pull.requested_reviewers],
            "requested_teams": [],
            "head": self._pull_end(repo, pull.head, pull.head_sha),
            "base": self._pull_end(repo, pull.base, pull.base_sha),
            "_links": {name: {"href": href} for name, href in links.items()},
            "author_association": self._association(repo, issue.user.login),
            "auto_merge": None,
            "draft": pull.draft,
        }

    def _pull_end(self, repo: Repo, branch: str, sha: str) -> Json:
        return {
            "label": f"{repo.owner.login}:{branch}",
            "ref": branch,
            "sha": sha,
            "user": self.user(repo.owner),
            "repo": self.repository(repo),
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
            "merged_by": self.user(pull.merged_by) if pull.merged_by is not None else None,
            "comments": len(issue.comments),
            "review_comments": 0,
            "maintainer_can_modify": False,  # head and base share the repository
            "commits": pull.commits,
            "additions": pull.additions,
            "deletions": pull.deletions,
            "changed_files": pull.changed_files,
        }

    def _pull_minimal(self, repo: Repo, pull: Pull) -> Json:
        ref = {"id": repo.id, "url": self._api(repo), "name": repo.name}
        return {
            "id": repo.id * _PER_REPO + _PULL_OFFSET + pull.number,
            "number": pull.number,
            "url": f"{self._api(repo)}/pulls/{pull.number}",
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
            "blob_url": f"{self._html(repo)}/blob/{head_sha}/{path}",
            "raw_url": f"{self._html(repo)}/raw/{head_sha}/{path}",
            "contents_url": f"{self._api(repo)}/contents/{path}?ref={head_sha}",
        }
        if change.patch is not None:
            rendered["patch"] = change.patch
        if change.previous_filename is not None:
            rendered["previous_filename"] = change.previous_filename
        return rendered

    def review(self, repo: Repo, pull: Pull, review: Review) -> Json:
        """pull-request-review. A pending review has no ``submitted_at``, as on GitHub."""
        pull_url = f"{self._api(repo)}/pulls/{pull.number}"
        html = f"{self._html(repo)}/pull/{pull.number}#pullrequestreview-{review.id}"
        rendered: Json = {
            "id": review.id,
            "node_id": node_id("PullRequestReview", review.id),
            "user": self.user(review.user),
            "body": review.body,
            "state": review.state,
            "html_url": html,
            "pull_request_url": pull_url,
            "_links": {"html": {"href": html}, "pull_request": {"href": pull_url}},
            "commit_id": review.commit_id,
            "author_association": self._association(repo, review.user.login),
        }
        if review.state != "PENDING":
            rendered["submitted_at"] = iso(review.submitted_at)
        return rendered

    # -- checks and statuses -------------------------------------------------------
    def _suite_core(self, repo: Repo, suite: CheckSuite, pulls: list[tuple[Pull, Issue]]) -> Json:
        return {
            "id": suite.id,
            "node_id": node_id("CheckSuite", suite.id),
            "head_branch": suite.head_branch,
            "head_sha": suite.head_sha,
            "status": suite.status,
            "conclusion": suite.conclusion,
            "url": f"{self._api(repo)}/check-suites/{suite.id}",
            "before": suite.before,
            "after": suite.after,
            "pull_requests": [self._pull_minimal(repo, p) for p, _ in pulls],
            "app": self._app_for(suite.app_slug),
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
            "repository": self.repository(repo),
            "head_commit": {
                "id": head_commit.sha,
                "tree_id": head_commit.tree,
                "message": head_commit.message,
                "timestamp": _utc(head_commit.authored_at),
                "author": {"name": head_commit.author.name, "email": head_commit.author.email},
                "committer": {
                    "name": head_commit.committer.name,
                    "email": head_commit.committer.email,
                },
            },
            "latest_check_runs_count": runs_count,
            "check_runs_url": f"{self._api(repo)}/check-suites/{suite.id}/check-runs",
        }

    def check_run(self, repo: Repo, run: CheckRun, pulls: list[tuple[Pull, Issue]]) -> Json:
        """check-run; its ``check_suite`` is the whole suite, as webhooks need it."""
        url = f"{self._api(repo)}/check-runs/{run.id}"
        app = self._app_for(run.app_slug)
        return {
            "id": run.id,
            "node_id": node_id("CheckRun", run.id),
            "head_sha": run.head_sha,
            "external_id": run.external_id or "",
            "url": url,
            "html_url": f"{self._html(repo)}/runs/{run.id}",
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
            "pull_requests": [self._pull_minimal(repo, p) for p, _ in pulls],
        }

    def commit_status(self, repo: Repo, s: CommitStatus) -> Json:
        """status (``POST /statuses/{sha}``)."""
        return {**self._status(repo, s), "creator": self.user(s.creator)}

    def _status(self, repo: Repo, s: CommitStatus) -> Json:
        return {
            "url": f"{self._api(repo)}/statuses/{s.sha}",
            "avatar_url": f"{self.base}/{s.creator.login}.png",
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
        api = self._api(repo)
        return {
            "state": state,
            "statuses": [self._status(repo, s) for s in latest.values()],
            "sha": sha,
            "total_count": len(latest),
            "repository": self.repository(repo),
            "commit_url": f"{api}/commits/{sha}",
            "url": f"{api}/commits/{sha}/status",
        }

    # -- git: contents, refs, branches, commits ------------------------------------
    def content(
        self, repo: Repo, entry: Entry, ref: str, *, submodule_git_url: str | None = None
    ) -> Json | list[Json]:
        """content-file, -symlink or -submodule, or content-directory (a list) for a dir.

        A symlink is described as itself; answering with its target's file instead, as
        GitHub does for a link to a file, is the caller's choice (it needs the tree).
        """
        if entry.kind == "dir":
            return [self._content_item(repo, child, ref, listing=True) for child in entry.children]
        rendered = self._content_item(repo, entry, ref, listing=False)
        if entry.kind == "file":
            rendered["content"] = _base64_lines(entry.content or b"")
            rendered["encoding"] = "base64"
        elif entry.kind == "symlink":
            rendered["target"] = (entry.content or b"").decode(errors="surrogateescape")
        elif entry.kind == "submodule":
            if submodule_git_url is None:
                raise ValueError(f"{entry.path}: a submodule needs its url from .gitmodules")
            rendered["submodule_git_url"] = submodule_git_url
        return rendered

    def _content_item(self, repo: Repo, entry: Entry, ref: str, *, listing: bool) -> Json:
        api, html, path = self._api(repo), self._html(repo), quote(entry.path)
        ref_q = quote(ref, safe="/")
        url = f"{api}/contents/{path}?ref={quote(ref, safe='')}"
        git_url: str | None = f"{api}/git/{'trees' if entry.kind == 'dir' else 'blobs'}/{entry.sha}"
        html_url: str | None = f"{html}/{'tree' if entry.kind == 'dir' else 'blob'}/{ref_q}/{path}"
        download: str | None = f"{html}/raw/{ref_q}/{path}"
        kind = entry.kind
        if kind == "dir":
            download = None
        elif kind == "submodule":
            # The commit lives in another repository the forge does not know.
            git_url = html_url = download = None
            # GitHub lists submodules as "file" in a directory, for compatibility:
            # https://docs.github.com/rest/repos/contents#get-repository-content
            kind = "file" if listing else "submodule"
        return {
            "type": kind,
            "size": entry.size,
            "name": entry.path.rsplit("/", 1)[-1],
            "path": entry.path,
            "sha": entry.sha,
            "url": url,
            "git_url": git_url,
            "html_url": html_url,
            "download_url": download,
            "_links": {"self": url, "git": git_url, "html": html_url},
        }

    def git_ref(self, repo: Repo, ref: str, sha: str) -> Json:
        """git-ref; ``ref`` with or without its ``refs/`` prefix."""
        ref = ref if ref.startswith("refs/") else f"refs/{ref}"
        api = self._api(repo)
        return {
            "ref": ref,
            "node_id": node_id("Ref", ref),
            "url": f"{api}/git/{quote(ref)}",
            "object": {"type": "commit", "sha": sha, "url": f"{api}/git/commits/{sha}"},
        }

    def verification(self, repo: Repo, sha: str) -> Json:
        """A commit's signature check: "valid" for the commits the forge signed itself
        (GitHub signs what it makes: API commits made as the App, merges), else unsigned."""
        if sha in repo.verified:
            return {
                "verified": True,
                "reason": "valid",
                "signature": f"{_PGP[0]}\n\n{sha}\n{_PGP[1]}\n",
                "payload": f"tree {sha}\n",
                "verified_at": iso(time.time()),
            }
        return {
            "verified": False,
            "reason": "unsigned",
            "signature": None,
            "payload": None,
            "verified_at": None,
        }

    def git_commit(self, repo: Repo, c: CommitInfo) -> Json:
        """git-commit (as in ``POST /git/commits``)."""
        api, html = self._api(repo), self._html(repo)
        return {
            "sha": c.sha,
            "node_id": node_id("Commit", f"{repo.id}:{c.sha}"),
            "url": f"{api}/git/commits/{c.sha}",
            "html_url": f"{html}/commit/{c.sha}",
            "author": {"name": c.author.name, "email": c.author.email, "date": _utc(c.authored_at)},
            "committer": {
                "name": c.committer.name,
                "email": c.committer.email,
                "date": _utc(c.committed_at),
            },
            "tree": {"sha": c.tree, "url": f"{api}/git/trees/{c.tree}"},
            "message": c.message,
            "parents": [
                {"sha": p, "url": f"{api}/git/commits/{p}", "html_url": f"{html}/commit/{p}"}
                for p in c.parents
            ],
            "verification": self.verification(repo, c.sha),
        }

    def short_blob(self, repo: Repo, sha: str) -> Json:
        return {"sha": sha, "url": f"{self._api(repo)}/git/blobs/{sha}"}

    def git_tree(self, repo: Repo, sha: str, entries: Sequence[tuple[str, Entry]]) -> Json:
        """git-tree: the tree's top-level entries, as ``POST /git/trees`` answers."""
        api = self._api(repo)
        kinds = {"dir": "tree", "submodule": "commit"}
        listed = []
        for mode, e in entries:
            kind = kinds.get(e.kind, "blob")
            item: dict[str, Any] = {"path": e.path, "mode": mode, "type": kind, "sha": e.sha}
            if kind == "blob":
                item |= {"size": e.size, "url": f"{api}/git/blobs/{e.sha}"}
            elif kind == "tree":
                item["url"] = f"{api}/git/trees/{e.sha}"
            listed.append(item)
        return {"sha": sha, "url": f"{api}/git/trees/{sha}", "tree": listed, "truncated": False}

    def commit(self, repo: Repo, c: CommitInfo) -> Json:
        """commit (as in ``GET /commits/{sha}``), without files or stats.

        ``author`` and ``committer`` (the GitHub accounts) are null: the forge does not
        match commit emails to users.
        """
        api, html = self._api(repo), self._html(repo)
        return {
            "url": f"{api}/commits/{c.sha}",
            "sha": c.sha,
            "node_id": node_id("Commit", f"{repo.id}:{c.sha}"),
            "html_url": f"{html}/commit/{c.sha}",
            "comments_url": f"{api}/commits/{c.sha}/comments",
            "commit": {
                "url": f"{api}/git/commits/{c.sha}",
                "author": {
                    "name": c.author.name,
                    "email": c.author.email,
                    "date": _utc(c.authored_at),
                },
                "committer": {
                    "name": c.committer.name,
                    "email": c.committer.email,
                    "date": _utc(c.committed_at),
                },
                "message": c.message,
                "comment_count": 0,
                "tree": {"sha": c.tree, "url": f"{api}/git/trees/{c.tree}"},
                "verification": self.verification(repo, c.sha),
            },
            "author": None,
            "committer": None,
            "parents": [
                {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{html}/commit/{p}"}
                for p in c.parents
            ],
            "files": [],
        }

    def branch(self, repo: Repo, name: str, head: CommitInfo, *, protected: bool) -> Json:
        """branch-with-protection; a protected branch requires the repo's checks."""
        api = self._api(repo)
        url = f"{api}/branches/{quote(name)}"
        contexts = [c.name for c in repo.required_checks if c.required] if protected else []
        return {
            "name": name,
            "commit": self.commit(repo, head),
            "_links": {"self": url, "html": f"{self._html(repo)}/tree/{quote(name)}"},
            "protected": protected,
            "protection": {
                "enabled": protected,
                "required_status_checks": {
                    "enforcement_level": "non_admins" if protected else "off",
                    "contexts": contexts,
                    "checks": [{"context": c, "app_id": None} for c in contexts],
                },
            },
            "protection_url": f"{url}/protection",
        }

    def push_commit(self, repo: Repo, c: CommitInfo, *, distinct: bool = True) -> Json:
        """One commit of a ``push`` payload (its time keeps the author's offset)."""
        return {
            "id": c.sha,
            "tree_id": c.tree,
            "distinct": distinct,
            "message": c.message,
            "timestamp": c.authored_at,
            "url": f"{self._html(repo)}/commit/{c.sha}",
            "author": {"name": c.author.name, "email": c.author.email},
            "committer": {"name": c.committer.name, "email": c.committer.email},
            "added": list(c.added),
            "removed": list(c.removed),
            "modified": list(c.modified),
        }

    # -- webhooks ------------------------------------------------------------------
    def hook(self, event: str, payload: Json) -> Json:
        """``payload`` (built from the REST shapes) as GitHub delivers ``event``.

        Keys the webhook schema does not allow are dropped, recursively; oneOf/anyOf
        take the first branch the projected value fits. Webhooks write enum values in
        lower case where REST uses upper case (``review.state``: ``APPROVED`` →
        ``approved``), so a value that fits its enum only in lower case is lowered.
        Nothing is added: what a webhook needs beyond REST, the renderers produce.
        The schema lags the events an App may subscribe to (``installation.events`` has
        no ``dependabot_alert`` in @octokit/webhooks-schemas 7.6.1, while ``app.events``
        has it): a string in a list that its items' enum lacks is dropped, as a key is.
        """
        key = "push$event" if event == "push" else f"{event}${payload.get('action')}"
        schema = _webhook_definitions().get(key)
        if schema is None:  # not in the contract: sent as is, for the contract check to name
            return dict(payload)
        projected: Json = self._project(payload, schema)
        return projected

    def _project(self, value: Any, schema: Mapping[str, Any]) -> Any:
        while "$ref" in schema:
            schema = _webhook_definitions()[schema["$ref"].removeprefix("#/definitions/")]
        for part in schema.get("allOf", ()):
            value = self._project(value, part)
        branches = schema.get("oneOf") or schema.get("anyOf")
        if branches:
            if value is None:
                return None
            for branch in branches:
                candidate = self._project(value, branch)
                if self._fits(candidate, branch):
                    return candidate
            return value  # fits no branch: left for the contract check to report
        if isinstance(value, dict):
            props = schema.get("properties", {})
            closed = schema.get("additionalProperties") is False
            return {
                k: self._project(v, props[k]) if k in props else v
                for k, v in value.items()
                if k in props or not closed
            }
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            return [
                self._project(item, schema["items"])
                for item in value
                if not _outside_enum(item, schema["items"])
            ]
        enum = schema.get("enum")
        if isinstance(value, str) and enum and value not in enum and value.lower() in enum:
            return value.lower()
        return value

    def _fits(self, value: Any, schema: Mapping[str, Any]) -> bool:
        validator = self._validators.get(id(schema))
        if validator is None:
            root = {"definitions": _webhook_definitions(), "allOf": [schema]}
            validator = self._validators[id(schema)] = jsonschema.Draft7Validator(root)
        return bool(validator.is_valid(value))
