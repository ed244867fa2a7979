"""The GitHub App manifest: what the App asks for when it is created.

https://docs.github.com/en/apps/sharing-github-apps/registering-a-github-app-from-a-manifest
No ``workflows`` permission (the bot must never edit CI) and no ``administration``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from app.errors import ConfigError

# Events the App subscribes to (the manifest lists them; installation events are
# always sent to Apps and cannot be subscribed to).
SUBSCRIBED_EVENTS = (
    "check_run",
    "check_suite",
    "issue_comment",
    "issues",
    "pull_request",
    "pull_request_review",
    "push",
    "status",
    "workflow_run",
)

PERMISSIONS = {
    "contents": "write",
    "pull_requests": "write",
    "issues": "write",
    "checks": "write",
    "statuses": "read",
    "metadata": "read",
    # workflow_run events are only delivered to Apps with Actions read access.
    "actions": "read",
}


def build_manifest(*, url: str, name: str = "Patchwarden", public: bool = False) -> dict[str, Any]:
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise ConfigError(
            f"--url must be the server's public base URL, e.g. https://pw.example.org, not {url!r}"
        )
    base = url.rstrip("/")
    return {
        "name": name,
        "url": base,
        "hook_attributes": {"url": f"{base}/webhooks/github", "active": True},
        "redirect_url": f"{base}/",
        "description": "Guarded auto-PRs: risk-scored, verified, reversible fixes.",
        "public": public,
        "default_permissions": dict(PERMISSIONS),
        "default_events": list(SUBSCRIBED_EVENTS),
    }
