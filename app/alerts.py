"""Monitoring alerts posted to ``POST /alerts``, mapped to repositories. Pure.

Two shapes are accepted:
- Prometheus Alertmanager's webhook JSON (``version`` "4", a list of ``alerts``),
  https://prometheus.io/docs/alerting/latest/configuration/#webhook_config
- a generic ``{"repo": "owner/name", "title": "...", "body": "...", "id": "optional"}``.

An Alertmanager alert names its repository with a label (``repository`` by default,
``PATCHWARDEN_ALERT_REPO_LABEL``) or through ``PATCHWARDEN_ALERT_ROUTES``, a table whose
keys are an ``alertname`` or a ``label=value`` pair.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.errors import AlertFormatError

# GitHub: an owner of at most 39 characters, a repository name of at most 100.
REPO_RE = re.compile(r"[A-Za-z0-9_.-]{1,39}/[A-Za-z0-9_.-]{1,100}\Z")
MAX_TEXT = 20_000
MAX_ALERTS = 1000  # per request; Alertmanager groups far fewer (its max_alerts is 0 = all)
MAX_LABELS = 100


@dataclass(frozen=True)
class AlertItem:
    repo: str
    title: str
    body: str
    key: str  # stable identity: the same alert twice makes one job
    source: str  # "alertmanager" | "generic"
    labels: dict[str, str] = field(default_factory=dict)
    url: str | None = None


@dataclass(frozen=True)
class ParsedAlerts:
    items: list[AlertItem]
    skipped: list[str]  # human-readable reasons, one per alert not turned into a job


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    return str(value if value is not None else "")[:limit]


def _url(value: Any) -> str | None:
    return value[:2000] if isinstance(value, str) and value else None


def shown(value: Any, limit: int = 80) -> str:
    """``value`` quoted for a reason the sender reads, cut short: never the body back."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def route_for(
    labels: Mapping[str, str], *, repo_label: str, routes: Mapping[str, str]
) -> str | None:
    """The repository an Alertmanager alert belongs to, or ``None``."""
    if labels.get(repo_label):
        return labels[repo_label]
    for key, repo in routes.items():
        name, sep, value = key.partition("=")
        if sep and labels.get(name.strip()) == value.strip():
            return repo
        if not sep and labels.get("alertname") == key:
            return repo
    return None


def _alertmanager(
    body: Mapping[str, Any], *, repo_label: str, routes: Mapping[str, str]
) -> ParsedAlerts:
    alerts = body.get("alerts")
    if not isinstance(alerts, list):
        raise AlertFormatError("Alertmanager payload: 'alerts' must be a list")
    if len(alerts) > MAX_ALERTS:
        raise AlertFormatError(
            f"Alertmanager payload: {len(alerts)} alerts; at most {MAX_ALERTS} a request "
            "(set max_alerts in the webhook_config)"
        )
    items: list[AlertItem] = []
    skipped: list[str] = []
    for index, alert in enumerate(alerts):
        if not isinstance(alert, Mapping):
            skipped.append(f"alerts[{index}]: not an object")
            continue
        raw_labels, raw_annotations = alert.get("labels") or {}, alert.get("annotations") or {}
        if not isinstance(raw_labels, Mapping) or not isinstance(raw_annotations, Mapping):
            skipped.append(f"alerts[{index}]: 'labels' and 'annotations' must be objects")
            continue
        labels = {str(k)[:100]: _text(v, 500) for k, v in list(raw_labels.items())[:MAX_LABELS]}
        annotations = {str(k): _text(v) for k, v in raw_annotations.items()}
        alertname = labels.get("alertname") or f"alert {index}"
        name = shown(alertname)  # in reasons
        if alert.get("status", body.get("status")) != "firing":
            skipped.append(
                f"{name}: status {shown(alert.get('status'))}, only firing alerts start jobs"
            )
            continue
        repo = route_for(labels, repo_label=repo_label, routes=routes)
        if repo is None:
            skipped.append(
                f"{name}: no repository; add a {repo_label!r} label or a route in "
                "PATCHWARDEN_ALERT_ROUTES"
            )
            continue
        if not REPO_RE.match(repo):
            skipped.append(f"{name}: {shown(repo)} is not owner/name")
            continue
        identity = (
            alert.get("fingerprint")
            or hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:16]
        )
        lines = [annotations.get("description", "")]
        lines += [f"{k}: {v}" for k, v in sorted(labels.items())]
        items.append(
            AlertItem(
                repo=repo,
                title=_text(annotations.get("summary"), 500) or alertname,
                body="\n".join(line for line in lines if line),
                key=f"alertmanager:{_text(identity, 200)}:{_text(alert.get('startsAt'), 64)}",
                source="alertmanager",
                labels=labels,
                url=_url(alert.get("generatorURL")),
            )
        )
    return ParsedAlerts(items, skipped)


def _generic(body: Mapping[str, Any]) -> ParsedAlerts:
    problems = [
        f"'{name}' must be a non-empty string"
        for name in ("repo", "title")
        if not isinstance(body.get(name), str) or not body[name].strip()
    ]
    if "body" in body and not isinstance(body["body"], str):
        problems.append("'body' must be a string")
    if problems:
        raise AlertFormatError("generic alert: " + "; ".join(problems))
    repo = body["repo"].strip()
    if not REPO_RE.match(repo):
        raise AlertFormatError(f"generic alert: 'repo' must be owner/name, not {shown(repo)}")
    title, text = _text(body["title"], 500), _text(body.get("body"))
    identity = str(body.get("id") or hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()[:16])
    return ParsedAlerts(
        [
            AlertItem(
                repo=repo, title=title, body=text, key=f"generic:{identity[:200]}", source="generic"
            )
        ],
        [],
    )


def parse_alerts(body: Any, *, repo_label: str, routes: Mapping[str, str]) -> ParsedAlerts:
    """Turn an alert request body into items; raise :class:`AlertFormatError` if unreadable."""
    if not isinstance(body, Mapping):
        raise AlertFormatError("the body must be a JSON object")
    if "alerts" in body:
        return _alertmanager(body, repo_label=repo_label, routes=routes)
    if "repo" in body or "title" in body:
        return _generic(body)
    raise AlertFormatError(
        "unknown alert format: send Alertmanager's webhook JSON (with 'alerts') or "
        '{"repo": "owner/name", "title": "...", "body": "..."}'
    )
