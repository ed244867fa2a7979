"""LocalForge's state as the JSON GitHub answers and delivers, one renderer per kind
of resource, composed here.

Pure functions over ``state`` and ``git`` records: no git, no clock, and no I/O but
reading the contract's webhook schemas once, for ``webhooks.hook``. Each renderer
returns the REST shape of the operation that answers it (a superset where the webhook
form of the same object needs more, as for ``check_run.check_suite``);
``webhooks.hook`` projects a payload assembled from those shapes onto the webhook
schema of its event. Ids, numbers, urls and times come from the state, never from the
schemas. API urls have api.github.com's paths under the forge's own address; html
urls have github.com's paths, and the forge's read-only view answers the repository,
issue and pull request pages among them.

The renderers nest as GitHub's objects do (a pull request holds a repository, users,
its head and base), each given the ones it holds: ``accounts`` → ``repos`` and
``issues`` → ``pulls`` → ``checks``; ``git`` and ``webhooks`` stand alone.
"""

from __future__ import annotations

from app.localforge.shapes import Links, stable_id
from app.localforge.shapes_accounts import Accounts
from app.localforge.shapes_checks import Checks
from app.localforge.shapes_git import GitObjects
from app.localforge.shapes_issues import Issues
from app.localforge.shapes_pulls import Pulls
from app.localforge.shapes_repos import Repositories
from app.localforge.state import User
from app.localforge.webhook_shapes import WebhookShapes


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
        if isinstance(app_owner, str):
            app_owner = User(app_owner, stable_id(app_owner), "Organization")
        links = Links(base_url.rstrip("/"), app_id, app_slug, app_owner, app_created_at)
        self.base = links.base
        self.accounts = Accounts(links)
        self.repos = Repositories(links, self.accounts)
        self.issues = Issues(links, self.accounts)
        self.pulls = Pulls(links, self.accounts, self.repos, self.issues)
        self.checks = Checks(links, self.accounts, self.repos, self.pulls)
        self.git = GitObjects(links)
        self.webhooks = WebhookShapes()
