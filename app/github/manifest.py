"""The GitHub App manifest: what the App asks for when it is created.

https://docs.github.com/en/apps/sharing-github-apps/registering-a-github-app-from-a-manifest
No ``workflows`` permission (the bot must never edit CI) and no ``administration``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlsplit

from app.errors import ConfigError

# Events the App subscribes to (the manifest lists them; installation events are
# always sent to Apps and cannot be subscribed to).
SUBSCRIBED_EVENTS = (
    "check_run",
    "check_suite",
    "code_scanning_alert",
    "dependabot_alert",
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
    # dependabot_alert events need "Dependabot alerts" read, code_scanning_alert events
    # "Code scanning alerts" read (GitHub names the permission security_events).
    "vulnerability_alerts": "read",
    "security_events": "read",
}
# What a permission is called on GitHub's settings pages, where an owner accepts it.
PERMISSION_NAMES = {
    "vulnerability_alerts": "Dependabot alerts",
    "security_events": "Code scanning alerts",
}
_LEVELS = {"read": 1, "write": 2, "admin": 3}


def lacking(permissions: Mapping[str, str], events: Sequence[str]) -> list[str]:
    """What an installation was not granted of what the manifest asks for: a permission
    missing or below the level asked (``vulnerability_alerts: read (Dependabot
    alerts)``), an event it is not sent (``the dependabot_alert event``). An App that
    asks for more after it was installed gets it only when the owner accepts:
    https://docs.github.com/en/apps/using-github-apps/approving-updated-permissions-for-a-github-app
    """
    found = []
    for name, level in PERMISSIONS.items():
        granted = _LEVELS.get(str(permissions.get(name)), 0)
        if granted < _LEVELS[level]:
            label = f" ({PERMISSION_NAMES[name]})" if name in PERMISSION_NAMES else ""
            found.append(f"{name}: {level}{label}")
    found += [f"the {e} event" for e in SUBSCRIBED_EVENTS if e not in events]
    return found


LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}
SETUP_PATH = "/setup"
CALLBACK_PATH = "/setup/callback"


def public_base(url: str, *, option: str = "--url") -> tuple[str, list[str]]:
    """The server's public base URL, and warnings. GitHub sends webhooks (with the
    secret's signature, and repository contents) to it: ``https://`` only, except on
    this machine (``http://localhost``, for trying it out), which is a warning."""
    parts = urlsplit(url)
    example = "e.g. https://pw.example.org"
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ConfigError(f"{option} must be the server's public base URL, {example}, not {url!r}")
    if parts.query or parts.fragment:
        raise ConfigError(f"{option} takes a base URL without ?query or #fragment, {example}")
    warnings = []
    if parts.scheme == "http":
        if parts.hostname not in LOCAL_HOSTS:
            raise ConfigError(
                f"{option} {url!r} is plain http: GitHub would send webhooks unencrypted. "
                f"Put TLS in front of the server and use https://, {example}"
            )
        warnings.append(
            f"{url} is plain http on this machine: fine for trying Patchwarden out; "
            "GitHub cannot deliver webhooks to it from outside"
        )
    return url.rstrip("/"), warnings


def browser_base(url: str) -> str:
    """A base URL only the person's browser goes to (never GitHub's servers): plain
    ``http://`` on any host is fine, as for the setup page itself."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(f"not a base URL a browser can go back to: {url!r}")
    return url.rstrip("/")


def build_manifest(
    *, url: str, name: str = "Patchwarden", public: bool = False, back_to: str | None = None
) -> dict[str, Any]:
    """The manifest for ``url``, the server's public base URL: the App's homepage and
    ``hook_attributes.url``, where GitHub's servers post webhooks.

    GitHub sends the person who creates the App back to ``redirect_url``
    (``back_to`` + ``/setup/callback``, ``url`` by default) with a code that
    ``patchwarden setup`` exchanges for the App's id, key and webhook secret. That is a
    redirect of the person's browser, not a call from GitHub's servers, so ``back_to``
    may be the address the browser reached setup on, e.g. ``http://localhost:8080``
    (GitHub's docs: "The full URL to redirect to after a user initiates the
    registration of a GitHub App from a manifest")."""
    base, _ = public_base(url)
    back = base if back_to is None else browser_base(back_to)
    return {
        "name": name,
        "url": base,
        "hook_attributes": {"url": f"{base}/webhooks/github", "active": True},
        "redirect_url": f"{back}{CALLBACK_PATH}",
        "description": "Guarded auto-PRs: risk-scored, verified, reversible fixes.",
        "public": public,
        "default_permissions": dict(PERMISSIONS),
        "default_events": list(SUBSCRIBED_EVENTS),
    }


def web_url(api_url: str) -> str:
    """GitHub's web root for an API root: github.com for api.github.com, the host of a
    GitHub Enterprise Server (``https://HOST/api/v3``), LocalForge's own root."""
    api = api_url.rstrip("/")
    if api == "https://api.github.com":
        return "https://github.com"
    return api.removesuffix("/api/v3")


def apps_url(api_url: str, *, org: str | None) -> str:
    """The settings page listing the Apps of the person, or of ``org``."""
    owner = f"/organizations/{quote(org, safe='')}" if org else ""
    return f"{web_url(api_url)}{owner}/settings/apps"


def new_app_url(api_url: str, *, org: str | None, state: str) -> str:
    """Where the manifest form is posted: a personal App, or one owned by ``org``."""
    return f"{apps_url(api_url, org=org)}/new?state={quote(state, safe='')}"


async def convert_manifest(session: Any, api_url: str, code: str) -> dict[str, Any]:
    """``POST /app-manifests/{code}/conversions``: the App GitHub created from the
    manifest, with its ``id``, ``slug``, ``pem``, ``webhook_secret`` and ``html_url``.
    Unauthenticated (the code is the credential, good once, for an hour)."""
    url = f"{api_url.rstrip('/')}/app-manifests/{quote(code, safe='')}/conversions"
    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
    async with session.post(url, headers=headers) as response:
        body = await response.json(content_type=None)
        if response.status != 201:
            message = body.get("message") if isinstance(body, dict) else None
            raise ConfigError(
                f"GitHub refused the App's code ({response.status}: {message or 'no message'}):"
                " it is good once, for an hour. Start again from the setup page."
            )
    missing = [k for k in ("id", "slug", "pem", "webhook_secret") if not body.get(k)]
    if missing:
        raise ConfigError(f"GitHub's answer lacks {', '.join(missing)}: start again")
    return dict(body)
