"""Sentry's webhooks on ``POST /alerts``: the documented payloads (tests/fixtures/sentry,
taken from Sentry's docs by scripts/extract_sentry_examples.py) parsed and routed by
project, then signed and mis-signed on the real server."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from app.alerts import Frame, parse_sentry
from app.contract.kinds import AlertJob
from app.errors import AlertFormatError
from tests.conftest import INSTALLATION, REPO, Harness

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sentry"
CLIENT_SECRET = "the-integrations-client-secret"
ROUTES = {"sentry_project=front-end": REPO}


def documented(resource: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{resource}.json").read_text())


def python_error() -> dict[str, Any]:
    """The documented ``error`` payload with a Python stack, as the Python SDK reports
    one: in-app frames by relative filename, a library frame, the release."""
    body = documented("error")
    event = body["data"]["error"]
    event["platform"] = "python"
    event["release"] = "widgets@2.4.1"
    event["title"] = "ZeroDivisionError: division by zero"
    (value,) = event["exception"]["values"]
    value.update(type="ZeroDivisionError", value="division by zero")
    value["stacktrace"]["frames"] = [  # Sentry lists the oldest frame first
        {"filename": "flask/app.py", "lineno": 880, "function": "dispatch", "in_app": False},
        {"filename": "widgets/views.py", "lineno": 12, "function": "average", "in_app": True},
        {"filename": "widgets/stats.py", "lineno": 7, "function": "mean", "in_app": True},
    ]
    return body


@pytest.mark.parametrize(
    ("resource", "title", "key"),
    [
        ("event_alert", "ReferenceError: heck is not defined", "sentry:1:1117540176:"),
        ("error", "ReferenceError: blooopy is not defined", "sentry:1:1170820242:"),
        ("issue", "ReferenceError: blooopy is not defined", "sentry:1:1170820242:"),
    ],
)
def test_each_documented_payload_becomes_one_alert_routed_by_its_project(
    resource: str, title: str, key: str
) -> None:
    (item,) = parse_sentry(documented(resource), resource=resource, routes=ROUTES).items
    assert (item.repo, item.title, item.key, item.source) == (REPO, title, key, "sentry")
    assert item.labels["sentry_project"] == "front-end"
    assert "ReferenceError: " in item.body
    assert item.frames == ()  # the documented events are a browser's: no in-app frame
    if resource != "issue":
        assert item.url is not None
        assert item.url.startswith("https://sentry.io/organizations/test-org/issues/")
        assert "  at /js/prod/runner-4.1.7.min.js:1" in item.body or "  at /runner:3" in item.body


def test_one_job_per_sentry_issue_per_day() -> None:
    body = documented("event_alert")
    keys = {
        parse_sentry(body, resource="event_alert", routes=ROUTES, day=day).items[0].key
        for day in ("2026-11-26", "2026-11-26", "2026-11-27")
    }
    assert keys == {"sentry:1:1117540176:2026-11-26", "sentry:1:1117540176:2026-11-27"}


def test_the_project_id_routes_too_and_an_unrouted_project_says_how_to_route_it() -> None:
    by_id = parse_sentry(
        documented("issue"), resource="issue", routes={"sentry_project_id=1": "octo-org/web"}
    )
    assert [i.repo for i in by_id.items] == ["octo-org/web"]
    unrouted = parse_sentry(documented("event_alert"), resource="event_alert", routes={})
    assert unrouted.items == []
    (why,) = unrouted.skipped
    assert "sentry_project=front-end" in why
    assert "PATCHWARDEN_ALERT_ROUTES" in why


def test_the_events_own_words_never_choose_the_repository() -> None:
    """Anyone with a project's public DSN can send it events: tags, titles and URLs in
    the event route nothing."""
    body = documented("error")
    event = body["data"]["error"]
    event["tags"].append(["repository", "victim/repo"])
    event["title"] = "repository=victim/repo"
    routes = {**ROUTES, "repository=victim/repo": "victim/repo"}
    (item,) = parse_sentry(body, resource="error", routes=routes).items
    assert item.repo == REPO
    assert "victim" not in json.dumps(item.labels)


def test_a_python_stack_gives_its_in_app_frames_innermost_first_and_the_release() -> None:
    (item,) = parse_sentry(python_error(), resource="error", routes=ROUTES).items
    assert item.frames == (
        Frame("widgets/stats.py", 7, "mean"),
        Frame("widgets/views.py", 12, "average"),
    )
    assert item.body.splitlines()[:4] == [
        "ZeroDivisionError: division by zero",
        "  at widgets/stats.py:7 in mean",
        "  at widgets/views.py:12 in average",
        "  at flask/app.py:880 in dispatch",
    ]
    assert "release: widgets@2.4.1" in item.body


def test_frames_that_leave_the_tree_or_are_no_paths_are_dropped() -> None:
    body = python_error()
    frames = body["data"]["error"]["exception"]["values"][0]["stacktrace"]["frames"]
    frames += [
        {"filename": "../../etc/passwd", "lineno": 1, "in_app": True},
        {"filename": "widgets/$(reboot).py", "lineno": 1, "in_app": True},
        {"filename": "x" * 400 + ".py", "lineno": 1, "in_app": True},
        {"module": "widgets.models", "lineno": 3, "function": "save", "in_app": True},
    ]
    (item,) = parse_sentry(body, resource="error", routes=ROUTES).items
    assert [f.path for f in item.frames] == [
        "widgets/models.py",  # a module, as Python names it
        "widgets/stats.py",
        "widgets/views.py",
    ]


@pytest.mark.parametrize(
    ("resource", "edit", "says"),
    [
        ("installation", None, "Sentry 'installation' webhooks start no job"),
        ("metric_alert", None, "Sentry 'metric_alert' webhooks start no job"),
        ("issue", {"action": "resolved"}, "Sentry issue 'resolved' starts no job"),
        ("issue", {"action": "assigned"}, "Sentry issue 'assigned' starts no job"),
    ],
)
def test_what_is_not_a_new_error_starts_nothing_and_says_so(
    resource: str, edit: dict[str, Any] | None, says: str
) -> None:
    body = {**documented("issue"), **(edit or {})}
    parsed = parse_sentry(body, resource=resource, routes=ROUTES)
    assert parsed.items == []
    assert parsed.skipped == [says]


@pytest.mark.parametrize(
    "body", [[], {"action": "created"}, {"data": []}, {"action": "created", "data": {}}]
)
def test_a_body_that_is_not_sentrys_is_refused(body: Any) -> None:
    with pytest.raises(AlertFormatError, match="Sentry"):
        parse_sentry(body, resource="error", routes=ROUTES)


# -- on the real server -----------------------------------------------------------------


def sign(body: bytes, secret: str = CLIENT_SECRET) -> str:
    """As Sentry signs: HMAC-SHA256 of the body with the Client Secret, in hex."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


async def post_sentry(
    h: Harness, body: bytes, *, resource: str, signature: str | None
) -> tuple[int, dict[str, Any]]:
    headers = {
        "Content-Type": "application/json",
        "Request-ID": "0d4b5f8e-2f33-4c3a-9c59-4f3a3f6d7e21",
        "Sentry-Hook-Resource": resource,
        "Sentry-Hook-Timestamp": "1566248777",
    }
    if signature is not None:
        headers["Sentry-Hook-Signature"] = signature
    async with h.session.post(f"{h.url}/alerts", data=body, headers=headers) as r:
        return r.status, json.loads(await r.text())


@pytest.fixture
async def sentry_pw(make_pw: Callable[..., Awaitable[Harness]]) -> Harness:
    pw = await make_pw(sentry_client_secret=CLIENT_SECRET, alert_routes=ROUTES)
    await pw.forge.install(INSTALLATION, by="alice")
    await pw.settle()
    return pw


@pytest.mark.parametrize("resource", ["event_alert", "error", "issue"])
async def test_a_signed_documented_payload_starts_one_alert_job(
    sentry_pw: Harness, resource: str
) -> None:
    body = json.dumps(documented(resource), indent=2).encode()  # signed as sent
    status, answer = await post_sentry(sentry_pw, body, resource=resource, signature=sign(body))
    assert status == 202, answer
    assert answer["accepted"] == [{"repo": REPO, "title": answer["accepted"][0]["title"]}]
    (job,) = await sentry_pw.jobs("alert")
    alert = AlertJob.of(job)
    assert alert.source == "sentry"
    assert "ReferenceError" in alert.body
    # the same Sentry issue again (the rule fires twice): no second job
    status, _ = await post_sentry(sentry_pw, body, resource=resource, signature=sign(body))
    assert status == 202
    assert len(await sentry_pw.jobs("alert")) == 1


async def test_the_frames_reach_the_job(sentry_pw: Harness) -> None:
    body = json.dumps(python_error()).encode()
    status, _ = await post_sentry(sentry_pw, body, resource="error", signature=sign(body))
    assert status == 202
    (job,) = await sentry_pw.jobs("alert")
    assert [(f.path, f.line) for f in AlertJob.of(job).frames] == [
        ("widgets/stats.py", 7),
        ("widgets/views.py", 12),
    ]


@pytest.mark.parametrize(
    "signature",
    [
        lambda body: sign(body, "not-the-client-secret"),
        lambda body: sign(body + b" "),
        lambda body: "sha256=" + sign(body),
        lambda body: sign(body)[:-1],
        lambda body: None,
    ],
    ids=["other-secret", "other-body", "prefixed", "short", "unsigned"],
)
async def test_a_mis_signed_payload_is_refused_and_starts_nothing(
    sentry_pw: Harness, signature: Callable[[bytes], str | None]
) -> None:
    body = json.dumps(documented("event_alert")).encode()
    status, answer = await post_sentry(
        sentry_pw, body, resource="event_alert", signature=signature(body)
    )
    assert status == 401
    assert "Sentry-Hook-Signature" in answer["error"]
    assert CLIENT_SECRET not in json.dumps(answer)
    assert await sentry_pw.jobs("alert") == []


@pytest.mark.parametrize("secret", [None, "", "   "], ids=["unset", "empty", "blank"])
async def test_sentry_is_off_until_its_client_secret_is_set(
    make_pw: Callable[..., Awaitable[Harness]], secret: str | None
) -> None:
    """An empty secret is no secret: anyone can sign a body with it."""
    pw = await make_pw(sentry_client_secret=secret, alert_routes=ROUTES)
    assert pw.runtime.settings.sentry_client_secret is None
    body = json.dumps(documented("error")).encode()
    status, answer = await post_sentry(pw, body, resource="error", signature=sign(body, ""))
    assert status == 503
    assert "PATCHWARDEN_SENTRY_CLIENT_SECRET" in answer["error"]
    assert await pw.jobs("alert") == []


async def test_an_installation_webhook_is_answered_and_starts_nothing(sentry_pw: Harness) -> None:
    payload = copy.deepcopy(documented("issue"))
    payload["action"] = "created"
    payload["data"] = {"installation": {"uuid": payload["installation"]["uuid"]}}
    body = json.dumps(payload).encode()
    status, answer = await post_sentry(
        sentry_pw, body, resource="installation", signature=sign(body)
    )
    assert status == 200
    assert answer["accepted"] == []
    assert await sentry_pw.jobs("alert") == []
