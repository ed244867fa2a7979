"""GitHub's security alerts in the forge: Dependabot and code scanning alerts that a test
raises, reopens, dismisses or fixes, each sent as GitHub sends its ``dependabot_alert``
or ``code_scanning_alert`` webhook: signed, in order, in the shape of
``@octokit/webhooks-examples`` and checked against the webhook schema like every
delivery (``app/localforge/contract/webhooks.json``).

When the default branch moves, its manifests are read again as GitHub's dependency
graph does: an open Dependabot alert whose manifest no longer allows a vulnerable
version of its package (every requirement naming it has a floor at or past the first
patched version, or none names it) is ``fixed``, and GitHub sends that. Code scanning
alerts close only when a test says so (no analysis runs here). Not modelled yet: the
alerts' REST endpoints.
"""

from __future__ import annotations

import json
import re
import time
import tomllib
from dataclasses import dataclass, field
from typing import Any, Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from app.localforge.deliveries import Outbox
from app.localforge.forge_base import ForgeState
from app.localforge.render import Renderer
from app.localforge.shapes import iso
from app.localforge.state import Repo, User
from app.localforge.webhook_shapes import webhook_definitions

Kind = Literal["dependabot", "code_scanning"]
# What people do to an alert; GitHub's own account (`github_account`) does the rest
# (a code scanning alert `reopened` by GitHub, a Dependabot alert by a person).
PEOPLES_ACTIONS = {
    "dependabot": ("dismissed", "reopened"),
    "code_scanning": ("closed_by_user", "reopened_by_user"),
}
STATE_AFTER = {
    "created": "open",
    "appeared_in_branch": "open",
    "reopened": "open",
    "reintroduced": "open",
    "reopened_by_user": "open",
    "dismissed": "dismissed",
    "closed_by_user": "dismissed",
    "fixed": "fixed",
}


@dataclass
class SecurityAlert:
    """One alert of a repository: ``dependabot`` (a package) or ``code_scanning`` (a
    rule at a place). ``facts`` are the fields a test chose; the rest are GitHub's."""

    kind: Kind
    number: int
    facts: dict[str, Any]
    state: str = "open"
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    dismissed: tuple[User, str | None, float] | None = None  # (by, reason, at)
    fixed_at: float | None = None


def github_account() -> dict[str, Any]:
    """GitHub's own account, the sender of the alerts it raises, fixes and reintroduces."""
    props = webhook_definitions()["github-org"]["properties"]
    return {name: p["const"] for name, p in props.items() if "const" in p}


def apply(alert: SecurityAlert, action: str, *, by: User | None, now: float) -> None:
    """``action`` changes ``alert`` as it does on GitHub (``by``: who dismissed it)."""
    alert.state, alert.updated_at = STATE_AFTER[action], now
    if alert.state == "dismissed":
        reason = "tolerable_risk" if alert.kind == "dependabot" else "won't fix"
        alert.dismissed = (by or User("octocat", 583231), reason, now)
    elif alert.state == "open":
        alert.dismissed = alert.fixed_at = None
    else:
        alert.fixed_at = now


def alert_fields(render: Renderer, repo: Repo, alert: SecurityAlert, action: str) -> dict[str, Any]:
    """The event's own fields for ``alert`` after ``action``: ``alert``, and for code
    scanning the ``ref`` and ``commit_oid`` (empty when a person acted)."""
    if alert.kind == "dependabot":
        return {"alert": _dependabot(render, repo, alert)}
    by_user = action.endswith("_by_user")
    return {
        "alert": _scanned(render, repo, alert),
        "ref": "" if by_user else alert.facts["ref"],
        "commit_oid": "" if by_user else alert.facts["commit"],
    }


class SecurityAlerts:
    """Raising alerts and acting on them, as GitHub and people do; owns the alerts
    (:attr:`alerts`: (repository, kind, number) → the alert)."""

    def __init__(self, state: ForgeState, hooks: Outbox) -> None:
        self.state = state
        self.hooks = hooks
        self.alerts: dict[tuple[str, str, int], SecurityAlert] = {}

    async def raise_dependabot_alert(
        self,
        repo: str,
        *,
        package: str,
        vulnerable_range: str,
        first_patched: str,
        severity: str = "high",
        ecosystem: str = "pip",
        manifest: str = "requirements.txt",
        ghsa: str = "GHSA-xxxx-xxxx-xxxx",
        cve: str | None = None,
        summary: str = "",
        description: str = "",
    ) -> SecurityAlert:
        """Dependabot finds a vulnerable dependency: GitHub sends ``created``. (An
        advisory with no patched version yet cannot be sent: webhook schema 7.6.1 requires
        ``first_patched_version``, though GitHub's REST description lets it be null.)"""
        facts = {k: v for k, v in locals().items() if k not in ("self", "repo")}
        return await self._raise(repo, "dependabot", facts)

    async def raise_code_scanning_alert(
        self,
        repo: str,
        *,
        rule: str,
        path: str,
        start_line: int,
        end_line: int | None = None,
        tool: str = "semgrep",
        severity: str = "error",
        description: str = "",
        full_description: str = "",
        message: str = "",
        ref: str | None = None,
    ) -> SecurityAlert:
        """An analysis of ``ref`` (the default branch) finds ``rule`` at ``path``:
        GitHub sends ``created``."""
        facts = {k: v for k, v in locals().items() if k not in ("self", "repo")}
        r = self.state.repos[repo]
        facts["ref"] = ref or f"refs/heads/{r.default_branch}"
        facts["commit"] = r.commit_of(r.default_branch) or "0" * 40
        return await self._raise(repo, "code_scanning", facts)

    async def alert_event(
        self, repo: str, alert: SecurityAlert, action: str, *, by: str | None = None
    ) -> None:
        """``action`` happens to ``alert`` (``dismissed``, ``fixed``, ``reopened``,
        ``reintroduced``; ``closed_by_user``, ``reopened_by_user``,
        ``appeared_in_branch``): its state changes and GitHub sends the webhook. ``by``
        is the person, for what people do."""
        person = self.state.user(by or "octocat") if action in PEOPLES_ACTIONS[alert.kind] else None
        apply(alert, action, by=person, now=time.time())
        await self._send(self.state.repos[repo], alert, action, person)

    async def default_branch_moved(self, repo: Repo, sha: str) -> None:
        """The dependency graph reads the manifests at ``sha``: an open Dependabot alert
        they no longer match is fixed (GitHub sends ``fixed``)."""
        for (name, kind, _), alert in list(self.alerts.items()):
            if name != repo.full_name or kind != "dependabot" or alert.state != "open":
                continue
            entry = repo.git.entry(sha, alert.facts["manifest"])
            text = (entry.content or b"").decode("utf-8", "replace") if entry else ""
            facts = alert.facts
            if not still_vulnerable(
                text, facts["package"], facts["first_patched"], path=facts["manifest"]
            ):
                apply(alert, "fixed", by=None, now=time.time())
                await self._send(repo, alert, "fixed", None, flush=False)

    async def _raise(self, repo: str, kind: Kind, facts: dict[str, Any]) -> SecurityAlert:
        same = [a for (name, k, _), a in self.alerts.items() if (name, k) == (repo, kind)]
        alert = SecurityAlert(kind, len(same) + 1, facts)
        self.alerts[(repo, kind, alert.number)] = alert
        await self._send(self.state.repos[repo], alert, "created", None)
        return alert

    async def _send(
        self,
        repo: Repo,
        alert: SecurityAlert,
        action: str,
        person: User | None,
        *,
        flush: bool = True,
    ) -> None:
        fields = alert_fields(self.state.render, repo, alert, action)
        payload = self.hooks.event(repo, action, person or self.state.bot, **fields)
        if person is None:
            payload["sender"] = github_account()
        event = "dependabot_alert" if alert.kind == "dependabot" else "code_scanning_alert"
        self.hooks.emit(event, payload)
        if flush:  # (a push's own deliveries are flushed by whoever pushed)
            await self.hooks.flush()


def still_vulnerable(manifest: str, package: str, fixed: str, *, path: str = "") -> bool:
    """Whether a manifest allows a version of ``package`` below ``fixed``: a requirement
    naming it with no lower bound, or one below the fix. Read as GitHub's dependency
    graph reads pinned manifests, simplified to what a bump changes: each line of a
    requirements file or ``setup.cfg`` list, each quoted string of a ``pyproject.toml``
    or ``setup.py``, and a Poetry ``name = "constraint"``; an npm ``package.json`` by the
    floor of each range naming it, its lock by every version it holds."""
    if path.rsplit("/", 1)[-1] in ("package.json", "package-lock.json", "npm-shrinkwrap.json"):
        return bool(_npm_below(manifest, package, fixed))
    want = canonicalize_name(package)
    if "[[package]]" in manifest:  # a TOML lock (uv.lock, poetry.lock): its versions
        return _lock_below(manifest, want, fixed)
    for line in manifest.splitlines():
        text = re.split(r"\s#", line, maxsplit=1)[0].strip()
        poetry = re.fullmatch(r'"?([A-Za-z0-9][\w.\-]*)"?\s*=\s*"([^"]*)"', text)
        if poetry and canonicalize_name(poetry.group(1)) == want:
            floor = re.search(r"\d+(?:\.\d+)*", poetry.group(2))
            if floor is None or _below(floor.group(0), fixed):
                return True
            continue
        for candidate in [text, *re.findall(r'"([^"]+)"|\'([^\']+)\'', text)]:
            item = candidate if isinstance(candidate, str) else next(c for c in candidate if c)
            try:
                req = Requirement(item.strip().rstrip(","))
            except InvalidRequirement:
                continue
            if canonicalize_name(req.name) != want:
                continue
            floors = [
                s.version
                for s in req.specifier
                if s.operator in ("==", "===", ">=", "~=", ">") and not s.version.endswith("*")
            ]
            if not floors or all(_below(f, fixed) for f in floors):
                return True
    return False


def _npm_below(text: str, package: str, fixed: str) -> bool | None:
    """An npm manifest or lock (JSON) read for ``package``; None for any other file."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    versions: list[str] = []
    if isinstance(doc.get("packages"), dict):  # package-lock.json: every place it is
        for place, entry in doc["packages"].items():
            if place.rsplit("node_modules/", 1)[-1] == package and isinstance(entry, dict):
                versions.append(str(entry.get("version", "")))
    else:  # package.json: the floor of each range
        for section in ("dependencies", "devDependencies", "optionalDependencies"):
            spec = (doc.get(section) or {}).get(package)
            if isinstance(spec, str):
                found = re.search(r"\d+\.\d+\.\d+", spec)
                versions.append(found.group(0) if found else "")
    return any(_semver(v) < _semver(fixed) for v in versions)


def _semver(version: str) -> tuple[int, ...]:
    """``MAJOR.MINOR.PATCH`` as numbers (nothing readable sorts lowest); a prerelease
    of a version sorts below it."""
    core, _, pre = version.partition("-")
    parts = core.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return (-1,)
    return (*map(int, parts), 0 if pre else 1)


def _lock_below(text: str, want: str, fixed: str) -> bool:
    try:
        entries = tomllib.loads(text).get("package", [])
    except tomllib.TOMLDecodeError:
        return True  # unreadable: GitHub would not call it fixed
    return any(
        _below(str(e.get("version", "")), fixed)
        for e in entries
        if isinstance(e, dict) and canonicalize_name(str(e.get("name", ""))) == want
    )


def _below(version: str, fixed: str) -> bool:
    """``version`` < ``fixed``; a version that does not parse counts as below."""
    try:
        return Version(version) < Version(fixed)
    except InvalidVersion:
        return True


def _urls(
    render: Renderer, repo: Repo, alert: SecurityAlert, path: str, page: str
) -> dict[str, str]:
    return {
        "url": f"{render.base}/repos/{repo.full_name}/{path}/{alert.number}",
        "html_url": f"{render.base}/{repo.full_name}/security/{page}/{alert.number}",
    }


def _dismissal(render: Renderer, alert: SecurityAlert) -> dict[str, Any]:
    if alert.dismissed is None:
        return {"dismissed_at": None, "dismissed_by": None, "dismissed_reason": None}
    by, reason, at = alert.dismissed
    return {
        "dismissed_at": iso(at),
        "dismissed_by": render.accounts.user(by),
        "dismissed_reason": reason,
    }


def _dependabot(render: Renderer, repo: Repo, alert: SecurityAlert) -> dict[str, Any]:
    f = alert.facts
    package = {"ecosystem": f["ecosystem"], "name": f["package"]}
    patched = {"identifier": f["first_patched"]}
    vulnerability = {
        "package": package,
        "severity": f["severity"],
        "vulnerable_version_range": f["vulnerable_range"],
        "first_patched_version": patched,
    }
    ids = [{"value": f["ghsa"], "type": "GHSA"}]
    ids += [{"value": f["cve"], "type": "CVE"}] if f["cve"] else []
    at = iso(alert.created_at)
    return {
        "number": alert.number,
        "state": alert.state,
        "dependency": {"package": package, "manifest_path": f["manifest"], "scope": "runtime"},
        "security_advisory": {
            "ghsa_id": f["ghsa"],
            "cve_id": f["cve"],
            "summary": f["summary"],
            "description": f["description"],
            "severity": f["severity"],
            "identifiers": ids,
            "references": [{"url": f"https://github.com/advisories/{f['ghsa']}"}],
            "published_at": at,
            "updated_at": at,
            "withdrawn_at": None,
            "vulnerabilities": [vulnerability],
            "cvss": {"vector_string": None, "score": 0.0},
            "cwes": [],
        },
        "security_vulnerability": vulnerability,
        **_urls(render, repo, alert, "dependabot/alerts", "dependabot"),
        "created_at": at,
        "updated_at": iso(alert.updated_at),
        **_dismissal(render, alert),
        "dismissed_comment": None,
        "fixed_at": iso(alert.fixed_at) if alert.fixed_at else None,
        "auto_dismissed_at": None,
    }


def _scanned(render: Renderer, repo: Repo, alert: SecurityAlert) -> dict[str, Any]:
    f = alert.facts
    instance = {
        "ref": f["ref"],
        "analysis_key": ".github/workflows/code-scanning.yml:analyze",
        "environment": "{}",
        "state": alert.state,
        "commit_sha": f["commit"],
        "message": {"text": f["message"]},
        "location": {
            "path": f["path"],
            "start_line": f["start_line"],
            "end_line": f["end_line"] or f["start_line"],
            "start_column": 1,
            "end_column": 1,
        },
        "classifications": [],
    }
    return {
        "number": alert.number,
        "created_at": iso(alert.created_at),
        **_urls(render, repo, alert, "code-scanning/alerts", "code-scanning"),
        "instances": [instance],
        "most_recent_instance": instance,
        "state": alert.state,
        **_dismissal(render, alert),
        "rule": {
            "id": f["rule"],
            "severity": f["severity"],
            "description": f["description"] or f["rule"],
            "name": f["rule"],
            "full_description": f["full_description"],
            "tags": None,
            "help": None,
        },
        "tool": {"name": f["tool"], "version": None, "guid": None},
    }
