"""Monitoring alerts posted to ``POST /alerts``, mapped to repositories. Pure.

Three shapes are accepted:
- Prometheus Alertmanager's webhook JSON (``version`` "4", a list of ``alerts``),
  https://prometheus.io/docs/alerting/latest/configuration/#webhook_config
- Sentry's integration-platform webhooks (:func:`parse_sentry`): issue alerts
  (``event_alert``), errors (``error``) and new or regressed issues (``issue``),
  https://docs.sentry.io/organization/integrations/integration-platform/webhooks/
- a generic ``{"repo": "owner/name", "title": "...", "body": "...", "id": "optional"}``.

An Alertmanager alert names its repository with a label (``repository`` by default,
``PATCHWARDEN_ALERT_REPO_LABEL``) or through ``PATCHWARDEN_ALERT_ROUTES``, a table whose
keys are an ``alertname`` or a ``label=value`` pair. A Sentry alert is routed by its
project only (``sentry_project=<slug>``, ``sentry_project_id=<id>`` or
``sentry_org=<slug>`` in the same table): everything else in it comes from the event,
which anyone holding the project's public DSN can send.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from app.errors import AlertFormatError

# GitHub: an owner of at most 39 characters, a repository name of at most 100.
REPO_RE = re.compile(r"[A-Za-z0-9_.-]{1,39}/[A-Za-z0-9_.-]{1,100}\Z")
MAX_TEXT = 20_000
MAX_ALERTS = 1000  # per request; Alertmanager groups far fewer (its max_alerts is 0 = all)
MAX_LABELS = 100


@dataclass(frozen=True)
class Frame:
    """A stack frame of the application's own code (Sentry's ``in_app``), as it named it."""

    path: str  # the frame's filename (or its module as a path)
    line: int | None = None
    function: str | None = None


@dataclass(frozen=True)
class AlertItem:
    repo: str
    title: str
    body: str
    key: str  # stable identity: the same alert twice makes one job
    source: str  # "alertmanager" | "sentry" | "generic"
    labels: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    frames: tuple[Frame, ...] = ()  # the application's frames, the innermost first


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
    if repo_label and labels.get(repo_label):
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


# -- Sentry ----------------------------------------------------------------------------

SENTRY_RESOURCES = ("event_alert", "error", "issue")
MAX_FRAMES = 30
_SENTRY_PROJECT = re.compile(r"/projects/([\w.-]{1,100})/([\w.-]{1,100})/events/")
_FRAME_PATH = re.compile(r"[\w./@+-]{1,300}")


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _frames(event: Mapping[str, Any]) -> tuple[list[Frame], list[str]]:
    """The in-app frames of the event's exceptions, innermost first, and lines saying
    what was raised where. Sentry lists each stack oldest frame first."""
    frames: list[Frame] = []
    lines: list[str] = []
    exception = event.get("exception")
    values = exception.get("values") if isinstance(exception, Mapping) else None
    for value in values[-5:] if isinstance(values, list) else []:
        if not isinstance(value, Mapping):
            continue
        kind, text = _text(value.get("type"), 200), _text(value.get("value"), 2000)
        lines.append(f"{kind}: {text}" if kind else text)
        trace = value.get("stacktrace")
        raw = trace.get("frames") if isinstance(trace, Mapping) else None
        for frame in reversed(raw[-200:] if isinstance(raw, list) else []):
            if not isinstance(frame, Mapping):
                continue
            path = frame.get("filename") or frame.get("module")
            line = frame.get("lineno")
            function = _text(frame.get("function"), 200) or None
            where = f"{_text(path, 300)}:{line}" if isinstance(line, int) else _text(path, 300)
            lines.append(f"  at {where}" + (f" in {function}" if function else ""))
            if frame.get("in_app") is not True or not isinstance(path, str):
                continue
            if frame.get("filename") is None:
                path = path.replace(".", "/") + ".py"  # a module, as Python names it
            path = path.removeprefix("./")
            if _FRAME_PATH.fullmatch(path) and ".." not in path.split("/"):
                frames.append(
                    Frame(path, line if isinstance(line, int) and line > 0 else None, function)
                )
    return frames[:MAX_FRAMES], lines


def _sentry_event(event: Mapping[str, Any], data: Mapping[str, Any]) -> tuple[dict[str, str], str]:
    """Routing labels and a stable identity for an event (``event_alert``, ``error``)."""
    labels: dict[str, str] = {}
    found = _SENTRY_PROJECT.search(_text(event.get("url"), 2000))
    if found:
        labels["sentry_org"], labels["sentry_project"] = found.group(1), found.group(2)
    if isinstance(event.get("project"), int | str):
        labels["sentry_project_id"] = _text(event["project"], 40)
    issue = _text(event.get("issue_id"), 40) or _text(event.get("event_id"), 64)
    return labels, issue


class _SentryRead(NamedTuple):
    """What a Sentry webhook says about the problem, before it is routed."""

    labels: dict[str, str]
    identity: str  # the issue's (or the event's) id
    title: str
    frames: list[Frame]
    lines: list[str]  # the body's first lines: the exception, where
    facts: list[tuple[str, Any]]  # (what, value) lines after them
    url: str | None


def _sentry_issue(data: Mapping[str, Any]) -> _SentryRead:
    """``issue`` (``created`` or ``unresolved``): the issue alone, no event."""
    issue = data.get("issue")
    if not isinstance(issue, Mapping):
        raise AlertFormatError("Sentry issue webhook: 'data.issue' must be an object")
    project = _obj(issue.get("project"))
    labels = {
        k: _text(project.get(v), 100)
        for k, v in (("sentry_project", "slug"), ("sentry_project_id", "id"))
        if project.get(v) is not None
    }
    lines = []
    metadata = _obj(issue.get("metadata"))
    if metadata.get("type") or metadata.get("value"):
        lines.append(f"{_text(metadata.get('type'), 200)}: {_text(metadata.get('value'), 2000)}")
    if metadata.get("filename"):
        lines.append(f"  in {_text(metadata.get('filename'), 300)}")
    status = issue.get("status")
    facts = [
        ("culprit", issue.get("culprit")),
        ("level", issue.get("level")),
        ("status", f"{status} ({issue.get('substatus')})" if issue.get("substatus") else status),
        ("first seen", issue.get("firstSeen")),
        ("first release", _obj(issue.get("firstRelease")).get("version")),
        ("events", issue.get("count")),
    ]
    url = _url(issue.get("permalink")) or _url(issue.get("web_url"))
    identity, title = _text(issue.get("id"), 40), _text(issue.get("title"), 500)
    return _SentryRead(labels, identity, title, [], lines, facts, url)


def _sentry_fired(resource: str, data: Mapping[str, Any]) -> _SentryRead:
    """``event_alert`` (an issue alert rule fired) and ``error``: the event, with its
    exception, stack frames and release."""
    key = "event" if resource == "event_alert" else "error"
    event = data.get(key)
    if not isinstance(event, Mapping):
        raise AlertFormatError(f"Sentry {resource} webhook: 'data.{key}' must be an object")
    labels, identity = _sentry_event(event, data)
    frames, lines = _frames(event)
    facts = [
        ("culprit", event.get("culprit")),
        ("level", event.get("level")),
        ("release", event.get("release")),
        ("environment", event.get("environment")),
        ("seen at", event.get("datetime")),
        ("alert rule", data.get("triggered_rule")),
    ]
    title = _text(event.get("title"), 500)
    return _SentryRead(labels, identity, title, frames, lines, facts, _url(event.get("web_url")))


def parse_sentry(
    body: Any, *, resource: str, routes: Mapping[str, str], day: str = ""
) -> ParsedAlerts:
    """A Sentry webhook (``Sentry-Hook-Resource: resource``) as at most one alert.

    ``event_alert`` (an issue alert rule fired) and ``error`` carry the event: its
    exception, stack frames and release; ``issue`` (``created`` or ``unresolved``: new,
    or back) carries the issue alone. Other resources and actions start nothing, said in
    ``skipped``. ``day`` (``2026-11-26``, when it arrived) is part of the key: one job
    per Sentry issue per day. Raises :class:`AlertFormatError` on a body that is not
    Sentry's."""
    if not isinstance(body, Mapping) or not isinstance(body.get("data"), Mapping):
        raise AlertFormatError("Sentry webhook: the body must be an object with 'data'")
    data, action = body["data"], _text(body.get("action"), 40)
    if resource not in SENTRY_RESOURCES:
        return ParsedAlerts([], [f"Sentry {shown(resource)} webhooks start no job"])
    wanted = {
        "event_alert": ("triggered",),
        "error": ("created",),
        "issue": ("created", "unresolved"),
    }
    if action not in wanted[resource]:
        return ParsedAlerts([], [f"Sentry {resource} {shown(action)} starts no job"])
    read = _sentry_issue(data) if resource == "issue" else _sentry_fired(resource, data)
    labels, identity, title, frames, lines, facts, url = read
    name = shown(title or f"Sentry {resource}")
    if not identity:
        raise AlertFormatError(f"Sentry {resource} webhook: no issue or event id")
    repo = route_for(labels, repo_label="", routes=routes)
    if repo is None:
        where = ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "no project"
        return ParsedAlerts(
            [],
            [
                f"{name}: no route for this Sentry project ({where}); add one to "
                'PATCHWARDEN_ALERT_ROUTES, e.g. {"sentry_project=<slug>": "owner/name"}'
            ],
        )
    if not REPO_RE.match(repo):
        return ParsedAlerts([], [f"{name}: {shown(repo)} is not owner/name"])
    lines += [f"{k}: {_text(v, 500)}" for k, v in facts if v not in (None, "")]
    item = AlertItem(
        repo=repo,
        title=title or f"Sentry {resource} in {labels.get('sentry_project', 'a project')}",
        body="\n".join(lines)[:MAX_TEXT],
        # One job per Sentry issue per day (UTC): an alert rule firing again, or the issue
        # coming back after it was resolved, on a later day is a new job.
        key=f"sentry:{labels.get('sentry_project_id') or labels.get('sentry_project')}:"
        f"{identity}:{day}",
        source="sentry",
        labels=labels,
        url=url,
        frames=tuple(frames),
    )
    return ParsedAlerts([item], [])
