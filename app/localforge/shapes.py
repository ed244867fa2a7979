"""What every one of LocalForge's JSON shapes shares: GitHub's time format, node ids,
stable ids for what the state has no record of, and the urls of the forge's address
(api.github.com's paths under it for the API, github.com's for html)."""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from app.github import manifest
from app.github.manifest import SUBSCRIBED_EVENTS
from app.localforge.state import User

if TYPE_CHECKING:
    from app.localforge.state import Repo

Json = dict[str, Any]

# GitHub knows the App as it was registered: from Patchwarden's manifest.
APP_PERMISSIONS = dict(manifest.PERMISSIONS)
APP_EVENTS = list(SUBSCRIBED_EVENTS)
# What another App (the forge's own CI, say) is shown to hold; the forge keeps no record.
OTHER_APP_PERMISSIONS = {"checks": "write", "metadata": "read"}
# Issue and pull request ids are not in the state: both derive from the repository id
# and the shared number, in disjoint ranges, so each is stable and unique per kind.
PER_REPO = 1_000_000
PULL_OFFSET = PER_REPO // 2


def iso(ts: float) -> str:
    """Epoch seconds as GitHub writes times: ``2026-11-22T10:00:00Z``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc(stamp: str) -> str:
    """A git ISO 8601 date with an offset, in UTC as the REST API writes it."""
    return iso(datetime.fromisoformat(stamp).timestamp())


def node_id(kind: str, key: int | str) -> str:
    """GitHub's legacy global node id: base64 of ``"<len(kind):02>:<kind><key>"``."""
    return base64.b64encode(f"{len(kind):02d}:{kind}{key}".encode()).decode()


def stable_id(name: str) -> int:
    """An id for an account or App the state has no record of, equal on every render."""
    return zlib.crc32(name.encode()) or 1


@dataclass(frozen=True)
class Links:
    """The forge's address and the App it serves, as every shape links to them."""

    base: str
    app_id: int
    app_slug: str
    app_owner: User
    app_created_at: float  # the epoch says "not known"

    def api(self, repo: Repo) -> str:
        return f"{self.base}/repos/{repo.full_name}"

    def html(self, repo: Repo) -> str:
        return f"{self.base}/{repo.full_name}"

    def association(self, repo: Repo, login: str) -> str:
        """author_association: OWNER, MEMBER (organization) or COLLABORATOR, else NONE."""
        if login == repo.owner.login:
            return "OWNER"
        if login in repo.collaborators:
            return "MEMBER" if repo.owner.type == "Organization" else "COLLABORATOR"
        return "NONE"
