"""Accounts and Apps as GitHub renders them: users, collaborators, organizations, this
App and others, installations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from app.localforge.shapes import (
    APP_EVENTS,
    APP_PERMISSIONS,
    OTHER_APP_PERMISSIONS,
    Json,
    Links,
    iso,
    node_id,
    stable_id,
)
from app.localforge.state import User

if TYPE_CHECKING:
    from app.localforge.state import Repo


class Accounts:
    def __init__(self, links: Links):
        self.links = links

    def user(self, u: User) -> Json:
        """simple-user."""
        api = f"{self.links.base}/users/{u.login}"
        html = f"{self.links.base}/{u.login}"
        if u.type == "Bot" and u.login.endswith("[bot]"):
            html = f"{self.links.base}/apps/{u.login.removesuffix('[bot]')}"
        return {
            "login": u.login,
            "id": u.id,
            "node_id": node_id(u.type, u.id),
            "avatar_url": f"{self.links.base}/{u.login}.png",
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
        api = f"{self.links.base}/orgs/{org.login}"
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
            "avatar_url": f"{self.links.base}/{org.login}.png",
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
        return self._integration(
            self.links.app_slug, self.links.app_id, APP_PERMISSIONS, APP_EVENTS
        )

    def app_for(self, slug: str) -> Json:
        if slug == self.links.app_slug:
            return self.app()
        return self._integration(slug, stable_id(slug), OTHER_APP_PERMISSIONS, [])

    def _integration(
        self, slug: str, app_id: int, permissions: Mapping[str, str], events: Sequence[str]
    ) -> Json:
        html = f"{self.links.base}/apps/{slug}"
        return {
            "id": app_id,
            "slug": slug,
            "node_id": node_id("App", app_id),
            "owner": self.user(self.links.app_owner),
            "name": slug,
            "description": None,
            "external_url": html,
            "html_url": html,
            "created_at": iso(self.links.app_created_at),
            "updated_at": iso(self.links.app_created_at),
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
        base = self.links.base
        settings = "organizations/" + account.login + "/" if account.type == "Organization" else ""
        return {
            "id": installation_id,
            "node_id": node_id("Installation", installation_id),
            "account": self.user(account),
            "repository_selection": "selected",
            "access_tokens_url": f"{base}/app/installations/{installation_id}/access_tokens",
            "repositories_url": f"{self.links.base}/installation/repositories",
            "html_url": f"{self.links.base}/{settings}settings/installations/{installation_id}",
            "app_id": self.links.app_id,
            "app_slug": self.links.app_slug,
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
