"""Monitoring alerts: the pure parser, then ``POST /alerts`` on the real server."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from app.alerts import ParsedAlerts, parse_alerts
from app.errors import AlertFormatError
from app.github import signing
from app.store import AuditQuery
from tests.conftest import INSTALLATION, REPO, Harness
from tests.intake.test_intake_fuzz import HOSTILE, _mutate, _paths

ALERTS_SECRET = "alerts-token-7f3c9e1d"
BILLING = "octo-org/billing"
ROUTES = {"DiskAlmostFull": REPO, "service=billing": BILLING}
GENERIC = {"repo": REPO, "title": "Nightly export failed", "body": "exit 3 at step 2"}
GENERATOR = "http://prometheus.example.org:9090/graph?g0.expr=rate%28http_errors%5B5m%5D%29"


# -- building realistic Alertmanager (v4) webhook bodies ---------------------


def am_alert(
    alertname: str,
    *,
    status: str = "firing",
    summary: str | None = None,
    description: str | None = None,
    fingerprint: str | None = None,
    starts_at: str = "2026-11-22T10:00:00.000Z",
    **labels: str,
) -> dict[str, Any]:
    annotations = {}
    if summary is not None:
        annotations["summary"] = summary
    if description is not None:
        annotations["description"] = description
    alert: dict[str, Any] = {
        "status": status,
        "labels": {"alertname": alertname, "severity": "critical", **labels},
        "annotations": annotations,
        "startsAt": starts_at,
        "endsAt": "0001-01-01T00:00:00Z" if status == "firing" else "2026-11-22T10:30:00Z",
        "generatorURL": GENERATOR,
    }
    if fingerprint is not None:
        alert["fingerprint"] = fingerprint
    return alert


def am_body(*alerts: dict[str, Any], status: str = "firing") -> dict[str, Any]:
    return {
        "version": "4",
        "groupKey": '{}:{alertname="HighErrorRate"}',
        "truncatedAlerts": 0,
        "status": status,
        "receiver": "patchwarden",
        "groupLabels": {"alertname": "HighErrorRate"},
        "commonLabels": {"severity": "critical"},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager.example.org:9093",
        "alerts": list(alerts),
    }


def parse(body: Any, routes: dict[str, str] | None = None) -> ParsedAlerts:
    return parse_alerts(body, repo_label="repository", routes=routes or {})


HIGH_ERRORS = am_alert(
    "HighErrorRate",
    summary="5xx rate above 5% on api",
    description="The api has answered 7.3% of requests with a 5xx for 10 minutes.",
    fingerprint="b1c2d3e4f5a60718",
    repository=REPO,
    instance="api-1:8080",
)
SLOW_QUERIES = am_alert(
    "SlowQueries",
    summary="p99 query latency above 2s",
    description="SELECT on orders takes 2.4s at p99 since the last deploy.",
    fingerprint="0a1b2c3d4e5f6071",
    repository=BILLING,
)


# -- parse_alerts: Alertmanager ----------------------------------------------

# (case id, body, routes, expected [(repo, title, text in body)], expected words in skipped)
AM_CASES: list[
    tuple[str, dict[str, Any], dict[str, str], list[tuple[str, str, str]], list[str]]
] = [
    (
        "two firing alerts with a repository label",
        am_body(HIGH_ERRORS, SLOW_QUERIES),
        {},
        [
            (REPO, "5xx rate above 5% on api", "7.3% of requests"),
            (BILLING, "p99 query latency above 2s", "2.4s at p99"),
        ],
        [],
    ),
    (
        "a resolved group starts nothing",
        am_body(
            am_alert("HighErrorRate", status="resolved", summary="s", repository=REPO),
            status="resolved",
        ),
        {},
        [],
        ["HighErrorRate", "resolved", "firing"],
    ),
    (
        "a resolved alert inside a firing group is skipped, the firing one kept",
        am_body(HIGH_ERRORS, am_alert("SlowQueries", status="resolved", repository=BILLING)),
        {},
        [(REPO, "5xx rate above 5% on api", "7.3% of requests")],
        ["SlowQueries", "resolved"],
    ),
    (
        "no repository label: routed by alertname",
        am_body(am_alert("DiskAlmostFull", summary="/var at 93%", description="grows 2%/h")),
        ROUTES,
        [(REPO, "/var at 93%", "grows 2%/h")],
        [],
    ),
    (
        "no repository label: routed by label=value",
        am_body(am_alert("QueueBacklog", summary="backlog", description="9k", service="billing")),
        ROUTES,
        [(BILLING, "backlog", "9k")],
        [],
    ),
    (
        "no summary: the title is the alertname",
        am_body(am_alert("HighErrorRate", description="d", repository=REPO)),
        {},
        [(REPO, "HighErrorRate", "d")],
        [],
    ),
    (
        "unmapped: skipped with a hint at PATCHWARDEN_ALERT_ROUTES",
        am_body(am_alert("CpuHot", summary="cpu", service="search")),
        ROUTES,
        [],
        ["CpuHot", "PATCHWARDEN_ALERT_ROUTES", "repository"],
    ),
    (
        "a repository label that is not owner/name is skipped",
        am_body(am_alert("HighErrorRate", summary="s", repository="just-a-name")),
        {},
        [],
        ["HighErrorRate", "just-a-name", "owner/name"],
    ),
]


@pytest.mark.parametrize(
    ("body", "routes", "expected", "skipped_words"),
    [case[1:] for case in AM_CASES],
    ids=[case[0] for case in AM_CASES],
)
def test_parse_alertmanager(
    body: dict[str, Any],
    routes: dict[str, str],
    expected: list[tuple[str, str, str]],
    skipped_words: list[str],
) -> None:
    parsed = parse(body, routes)
    assert [(i.repo, i.title) for i in parsed.items] == [(r, t) for r, t, _ in expected]
    for item, (_, _, text) in zip(parsed.items, expected, strict=True):
        assert text in item.body
        assert item.source == "alertmanager"
        assert item.url == GENERATOR
        assert item.labels["severity"] == "critical"
    if skipped_words:
        assert len(parsed.skipped) == 1
        for word in skipped_words:
            assert word in parsed.skipped[0]
    else:
        assert parsed.skipped == []


def test_alertmanager_body_lists_the_labels() -> None:
    (item,) = parse(am_body(HIGH_ERRORS)).items
    assert "instance: api-1:8080" in item.body
    assert "alertname: HighErrorRate" in item.body


def test_same_alert_twice_has_the_same_key_and_a_new_firing_a_new_one() -> None:
    first = parse(am_body(HIGH_ERRORS)).items[0]
    again = parse(am_body(json.loads(json.dumps(HIGH_ERRORS)))).items[0]
    refired = parse(am_body({**HIGH_ERRORS, "startsAt": "2026-11-23T08:00:00Z"})).items[0]
    assert first.key == again.key
    assert refired.key != first.key


def test_alert_without_fingerprint_is_keyed_by_its_labels() -> None:
    alert = am_alert("DiskAlmostFull", summary="s", repository=REPO)
    other = am_alert("DiskAlmostFull", summary="s", repository=REPO, mountpoint="/data")
    assert parse(am_body(alert)).items[0].key == parse(am_body(dict(alert))).items[0].key
    assert parse(am_body(alert)).items[0].key != parse(am_body(other)).items[0].key


@pytest.mark.parametrize(
    "bad_alert",
    [
        {"status": "firing", "labels": ["repository", REPO]},
        {"status": "firing", "labels": {"repository": REPO}, "annotations": "summary"},
    ],
    ids=["labels-list", "annotations-string"],
)
def test_alertmanager_alert_with_wrong_types_is_reported_not_crashing(
    bad_alert: dict[str, Any],
) -> None:
    try:
        parsed = parse(am_body(bad_alert))
    except AlertFormatError:
        return
    assert parsed.items == []
    assert len(parsed.skipped) == 1


def test_what_a_sender_wrote_is_quoted_short_in_the_reasons_and_bounded_in_the_job() -> None:
    huge = "x" * 300_000
    parsed = parse(
        am_body(
            am_alert("A", status=huge, repository=REPO),  # type: ignore[arg-type]
            am_alert("B", repository="o" * 40 + "/r"),  # owners have at most 39 characters
            am_alert("C", repository=REPO, fingerprint=huge, summary=huge),
        )
    )
    assert [len(r) < 200 for r in parsed.skipped] == [True, True]
    assert "is not owner/name" in parsed.skipped[1]
    (item,) = parsed.items
    assert len(item.title) == 500
    assert len(item.key) < 300


# -- parse_alerts: generic and unreadable ----------------------------------


def test_generic_alert() -> None:
    parsed = parse(GENERIC)
    (item,) = parsed.items
    assert (item.repo, item.title, item.body, item.source) == (
        REPO,
        "Nightly export failed",
        "exit 3 at step 2",
        "generic",
    )
    assert parsed.skipped == []
    assert parse(dict(GENERIC)).items[0].key == item.key
    assert parse({"repo": REPO, "title": "t", "id": "ticket-9"}).items[0].key == "generic:ticket-9"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"repo": REPO, "body": "no title"}, "title"),
        ({"repo": REPO, "title": "   "}, "title"),
        ({"repo": "octo-org", "title": "t"}, "repo"),
        ({"repo": "octo org/widgets", "title": "t"}, "repo"),
        ({"title": "t"}, "repo"),
        ({"repo": 42, "title": "t"}, "repo"),
        ({"repo": REPO, "title": ["t"]}, "title"),
        ({"repo": REPO, "title": "t", "body": {"text": "x"}}, "body"),
    ],
    ids=[
        "missing-title",
        "blank-title",
        "repo-without-owner",
        "repo-with-space",
        "missing-repo",
        "repo-int",
        "title-list",
        "body-object",
    ],
)
def test_generic_alert_errors_name_the_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(AlertFormatError, match=f"'{field}'"):
        parse(body)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"event": "deploy", "service": "api"}, "unknown alert format"),
        ([{"repo": REPO, "title": "t"}], "JSON object"),
        ("firing", "JSON object"),
        ({"alerts": {"0": HIGH_ERRORS}}, "'alerts' must be a list"),
    ],
    ids=["unknown-object", "list", "string", "alerts-not-list"],
)
def test_unreadable_bodies_raise(body: Any, words: str) -> None:
    with pytest.raises(AlertFormatError, match=words):
        parse(body)


# -- POST /alerts on the real server -----------------------------------------


@pytest.fixture
async def alerts_pw(make_pw: Callable[..., Awaitable[Harness]]) -> Harness:
    """The server with alerts on, installed on both repositories the alerts name."""
    pw = await make_pw(alerts_secret=ALERTS_SECRET, alert_routes=ROUTES)
    pw.forge.add_repo(BILLING, installation_id=INSTALLATION)
    pw.forge.add_user(BILLING, "alice", "admin")
    await pw.forge.install(INSTALLATION, by="alice")
    await pw.settle()
    assert await pw.store.repos.installation_for_repo(BILLING) == INSTALLATION
    return pw


async def post_alert(
    h: Harness,
    payload: Any,
    *,
    bearer: str | None = ALERTS_SECRET,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    sent = {"Content-Type": "application/json"}
    if bearer is not None:
        sent["Authorization"] = f"Bearer {bearer}"
    sent.update(headers or {})
    async with h.session.post(f"{h.url}/alerts", data=body, headers=sent) as r:
        text = await r.text()
    try:
        answer = json.loads(text)
    except ValueError:
        answer = {"error": text}  # e.g. aiohttp's plain-text 500 page
    return r.status, answer


async def test_alerts_disabled_without_secret(pw: Harness) -> None:
    status, answer = await post_alert(pw, GENERIC, bearer="anything")
    assert status == 503
    assert "PATCHWARDEN_ALERTS_SECRET" in answer["error"]
    assert await pw.jobs("alert") == []


async def test_alert_without_auth_is_401(alerts_pw: Harness) -> None:
    status, answer = await post_alert(alerts_pw, GENERIC, bearer=None)
    assert status == 401
    assert "Bearer" in answer["error"]
    assert await alerts_pw.jobs("alert") == []


@pytest.mark.parametrize(
    "authorization",
    ["Bearer wrong-token", f"Basic {ALERTS_SECRET}", "Bearer ", f"Bearer {ALERTS_SECRET}x"],
    ids=["wrong-token", "basic-scheme", "empty-token", "longer-token"],
)
async def test_alert_with_wrong_bearer_is_401(alerts_pw: Harness, authorization: str) -> None:
    status, answer = await post_alert(
        alerts_pw, GENERIC, bearer=None, headers={"Authorization": authorization}
    )
    assert status == 401
    assert ALERTS_SECRET not in json.dumps(answer)
    assert await alerts_pw.jobs("alert") == []


async def test_alert_with_bearer_makes_one_alert_job(alerts_pw: Harness) -> None:
    status, answer = await post_alert(alerts_pw, GENERIC)
    assert status == 202
    assert answer["accepted"] == [{"repo": REPO, "title": "Nightly export failed"}]
    assert answer["skipped"] == []
    (job,) = await alerts_pw.jobs("alert")
    assert (job.repo, job.queue) == (REPO, "sessions")
    assert job.payload["repo"] == REPO
    assert job.payload["title"] == "Nightly export failed"
    assert job.payload["body"] == "exit 3 at step 2"
    assert job.delivery_id == answer["delivery"]


async def test_an_alert_for_a_repository_without_the_app_starts_nothing_and_says_so(
    alerts_pw: Harness,
) -> None:
    elsewhere = {**GENERIC, "repo": "octo-org/not-installed"}
    status, answer = await post_alert(alerts_pw, elsewhere)
    assert status == 422
    assert answer["accepted"] == []
    (reason,) = answer["skipped"]
    assert "the App is not installed on octo-org/not-installed" in reason
    assert await alerts_pw.jobs("alert") == []
    # One of two: the installed repository's alert starts its job, the other is named.
    both = am_body(HIGH_ERRORS, am_alert("X", summary="s", repository="octo-org/not-installed"))
    status, answer = await post_alert(alerts_pw, both)
    assert status == 202
    assert answer["accepted"] == [{"repo": REPO, "title": "5xx rate above 5% on api"}]
    assert ["not installed on octo-org/not-installed" in r for r in answer["skipped"]] == [True]
    assert [j.repo for j in await alerts_pw.jobs("alert")] == [REPO]


async def test_a_repository_is_matched_whatever_its_letter_case(alerts_pw: Harness) -> None:
    status, answer = await post_alert(alerts_pw, {**GENERIC, "repo": REPO.upper()})
    assert status == 202, answer
    (job,) = await alerts_pw.jobs("alert")
    assert job.installation_id == INSTALLATION


async def test_what_cannot_be_authorised_is_refused_before_the_body_is_read(
    alerts_pw: Harness,
) -> None:
    big = b"{" + b" " * (3 * 1024 * 1024) + b"}"
    for headers, says in [
        ({"Authorization": "Bearer wrong"}, "does not match"),
        ({"X-Patchwarden-Signature-256": "sha256=xyz"}, "64 hex digits"),
        (
            {"Authorization": f"Bearer {ALERTS_SECRET}", "Content-Encoding": "gzip"},
            "Content-Encoding",
        ),
    ]:
        sent = {"Content-Type": "application/json", **headers}
        async with alerts_pw.session.post(
            f"{alerts_pw.url}/alerts", data=io.BytesIO(big), headers=sent
        ) as r:
            assert r.status in (401, 415)
            assert says in (await r.json())["error"]
    status, _ = await post_alert(alerts_pw, GENERIC, headers={"Content-Encoding": "deflate"})
    assert status == 415
    assert await alerts_pw.jobs("alert") == []


async def test_a_flood_of_alerts_is_bounded(alerts_pw: Harness) -> None:
    status, answer = await post_alert(alerts_pw, am_body(*[0] * 1001))  # type: ignore[arg-type]
    assert status == 422
    assert "1001 alerts; at most 1000" in answer["error"]
    status, answer = await post_alert(alerts_pw, am_body(*[0] * 1000))  # type: ignore[arg-type]
    assert status == 422
    assert len(answer["skipped"]) == 51
    assert answer["skipped"][-1] == "and 950 more"
    audit = await alerts_pw.store.journal.query_audit(AuditQuery())
    assert len([e for e in audit if e.action == "alert.skipped"]) == 1


async def test_alert_with_hmac_signature_is_accepted(alerts_pw: Harness) -> None:
    body = json.dumps(am_body(HIGH_ERRORS)).encode()
    signature = signing.sign(body, secret=ALERTS_SECRET)
    status, answer = await post_alert(
        alerts_pw, body, bearer=None, headers={"X-Patchwarden-Signature-256": signature}
    )
    assert status == 202
    assert answer["accepted"] == [{"repo": REPO, "title": "5xx rate above 5% on api"}]
    (job,) = await alerts_pw.jobs("alert")
    assert "7.3% of requests" in job.payload["body"]


@pytest.mark.parametrize(
    "make_signature",
    [
        lambda body: signing.sign(body, secret="not-the-alerts-secret"),
        lambda body: signing.sign(body + b" ", secret=ALERTS_SECRET),
        lambda body: signing.sign(body, secret=ALERTS_SECRET).removeprefix("sha256="),
    ],
    ids=["other-secret", "other-body", "no-prefix"],
)
async def test_alert_with_wrong_hmac_is_401(
    alerts_pw: Harness, make_signature: Callable[[bytes], str]
) -> None:
    body = json.dumps(GENERIC).encode()
    status, answer = await post_alert(
        alerts_pw,
        body,
        bearer=None,
        headers={"X-Patchwarden-Signature-256": make_signature(body)},
    )
    assert status == 401
    error = answer["error"]
    assert "X-Hub-Signature-256" not in error  # the alerts header is the one to fix
    assert "X-Patchwarden-Signature-256 must be 'sha256='" in error or "does not match" in error
    assert await alerts_pw.jobs("alert") == []


async def test_alert_that_is_not_json_is_400(alerts_pw: Harness) -> None:
    status, answer = await post_alert(alerts_pw, b"alertname=HighErrorRate severity=critical")
    assert status == 400
    assert "JSON" in answer["error"]
    assert await alerts_pw.jobs("alert") == []


async def test_alert_in_a_bad_format_is_422_naming_the_field(alerts_pw: Harness) -> None:
    status, answer = await post_alert(alerts_pw, {"repo": REPO, "body": "no title"})
    assert status == 422
    assert "'title'" in answer["error"]
    assert await alerts_pw.jobs("alert") == []


async def test_same_alertmanager_alert_twice_makes_one_job(alerts_pw: Harness) -> None:
    first = await post_alert(alerts_pw, am_body(HIGH_ERRORS, SLOW_QUERIES))
    second = await post_alert(alerts_pw, am_body(HIGH_ERRORS))
    assert first[0] == second[0] == 202
    jobs = await alerts_pw.jobs("alert")
    assert sorted(j.repo for j in jobs) == sorted([REPO, BILLING])
    assert [j.payload["title"] for j in jobs if j.repo == REPO] == ["5xx rate above 5% on api"]


async def test_routed_alert_reaches_the_routed_repo(alerts_pw: Harness) -> None:
    status, answer = await post_alert(
        alerts_pw, am_body(am_alert("QueueBacklog", summary="backlog 9k", service="billing"))
    )
    assert status == 202
    assert answer["accepted"] == [{"repo": BILLING, "title": "backlog 9k"}]
    assert [j.repo for j in await alerts_pw.jobs("alert")] == [BILLING]


async def test_unmapped_alerts_are_422_but_recorded_and_audited(alerts_pw: Harness) -> None:
    before = await alerts_pw.store.journal.count_deliveries()
    status, answer = await post_alert(
        alerts_pw, am_body(am_alert("CpuHot", summary="cpu at 99%", service="search"))
    )
    assert status == 422
    assert answer["accepted"] == []
    assert "PATCHWARDEN_ALERT_ROUTES" in answer["skipped"][0]
    assert await alerts_pw.store.journal.count_deliveries() == before + 1
    assert await alerts_pw.jobs("alert") == []
    skipped = [
        e
        for e in await alerts_pw.store.journal.query_audit(AuditQuery())
        if e.action == "alert.skipped"
    ]
    assert len(skipped) == 1
    assert skipped[0].delivery_id == answer["delivery"]
    assert "CpuHot" in (skipped[0].reason or "")


async def test_mixed_alerts_accept_some_and_report_the_rest(alerts_pw: Harness) -> None:
    status, answer = await post_alert(
        alerts_pw, am_body(HIGH_ERRORS, am_alert("CpuHot", summary="cpu", service="search"))
    )
    assert status == 202
    assert [a["repo"] for a in answer["accepted"]] == [REPO]
    assert len(answer["skipped"]) == 1
    assert "CpuHot" in answer["skipped"][0]


async def test_alertmanager_alert_with_wrong_types_is_422_not_500(alerts_pw: Harness) -> None:
    status, _ = await post_alert(
        alerts_pw, am_body({"status": "firing", "labels": ["repository", REPO]})
    )
    assert status == 422
    assert await alerts_pw.jobs("alert") == []


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (json.dumps({"repo": REPO, "title": "x", "extra": "\ud800"}).encode(), "lone surrogate"),
        (json.dumps({"repo": REPO, "title": "x\ud800"}).encode(), "lone surrogate"),
        (b'{"repo":' + b"[" * 100 + b"]" * 100 + b"}", "deeper than 32"),
        (b'{"repo":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests too deep"),
    ],
    ids=["surrogate-unread-field", "surrogate-title", "deep", "very-deep"],
)
async def test_an_unusable_alert_body_is_a_clear_400(
    alerts_pw: Harness, body: bytes, says: str
) -> None:
    """The same soundness checks as webhook intake: nothing stored, no job, the reason."""
    status, answer = await post_alert(alerts_pw, body)
    assert status == 400
    assert says in answer["error"]
    assert await alerts_pw.jobs("alert") == []


# -- fuzz: hostile alert bodies with the right token -------------------------------------

FUZZ_BASES: list[dict[str, Any]] = [
    am_body(HIGH_ERRORS, SLOW_QUERIES),
    am_body(am_alert("DiskAlmostFull", summary="disk 97% full", fingerprint="f1")),
    {**GENERIC, "id": "nightly-7"},
]


def _hostile_body(data: st.DataObject) -> bytes:
    """One alert body gone wrong: a real one with a field replaced or removed, any JSON
    value at all, a deep nest, or bytes that are not JSON."""
    kind = data.draw(st.sampled_from(["mutate", "mutate", "mutate", "json", "deep", "bytes"]))
    if kind == "deep":
        depth = data.draw(st.sampled_from([40, 1_000, 100_000]))
        return ('{"alerts":' + "[" * depth + "]" * depth + "}").encode()
    if kind == "bytes":
        return data.draw(st.binary(max_size=200))
    if kind == "json":
        return json.dumps(data.draw(JSON_VALUES)).encode()
    body = json.loads(json.dumps(data.draw(st.sampled_from(FUZZ_BASES))))
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(body)
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        how = data.draw(st.sampled_from(["set", "set", "delete"]))
        _mutate(body, path, how, copy.deepcopy(data.draw(st.sampled_from(HOSTILE))))
    return json.dumps(body).encode()


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.data())
async def test_hostile_alerts_never_crash_and_start_only_sound_jobs(
    alerts_pw: Harness, data: st.DataObject
) -> None:
    before = {j.id for j in await alerts_pw.jobs("alert")}
    status, answer = await post_alert(alerts_pw, _hostile_body(data))
    assert status in (202, 400, 422), (status, answer)
    event(f"answered {status}")
    assert isinstance(answer.get("error", ""), str)
    assert len(json.dumps(answer)) < 20_000, "the answer echoes the body"
    new = [j for j in await alerts_pw.jobs("alert") if j.id not in before]
    if status != 202:
        assert answer.get("error"), answer
        assert new == [], "a refused alert started a job"
        return
    assert len(new) <= len(answer["accepted"])  # an alert already queued is not queued twice
    for job in new:
        assert job.delivery_id == answer["delivery"]
        assert job.installation_id == INSTALLATION
        assert job.repo in (REPO, BILLING)
        assert len(job.key) <= 400, job.key[:80]
        p = job.payload
        assert isinstance(p["title"], str)
        assert 0 < len(p["title"]) <= 500
        assert isinstance(p["body"], str)
        assert len(p["body"]) <= 25_000
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in p["labels"].items())
        assert p["url"] is None or isinstance(p["url"], str)
