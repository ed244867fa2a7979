"""Webhook intake: signatures, real payloads, deduplication, limits."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import uuid
from typing import Any
from urllib.parse import urlencode

import pytest

from app.errors import SignatureError
from app.github import signing
from app.store import AuditQuery, JobState
from tests.conftest import FIXTURES, INSTALLATION, REPO, SECRET, Harness, with_installation

INDEX = json.loads((FIXTURES / "index.json").read_text())
ALL_FIXTURES = [f["file"] for f in INDEX["fixtures"]]


def test_github_published_test_vector() -> None:
    # https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signing.sign(b"Hello, World!", secret="It's a Secret to Everybody") == expected
    signing.verify(b"Hello, World!", signature=expected, secret="It's a Secret to Everybody")


@pytest.mark.parametrize(
    ("signature", "message"),
    [
        (None, "missing"),
        ("", "missing"),
        ("sha1=" + hashlib.sha1(b"x").hexdigest(), "sha256="),  # noqa: S324 - the point
        ("sha256=" + "0" * 64, "does not match"),
        ("sha256=zz", "does not match"),
        ("sha256=\u00e9", "does not match"),
    ],
)
def test_bad_signatures_are_rejected(signature: str | None, message: str) -> None:
    with pytest.raises(SignatureError, match=message):
        signing.verify(b"x", signature=signature, secret="s")


def _prepare(pw: Harness, relative: str) -> tuple[str, dict[str, Any]]:
    """A real example payload, made answerable by the double (repo, user, issue)."""
    event = relative.split("/")[0]
    payload = with_installation(json.loads((FIXTURES / relative).read_text()))
    repo = (payload.get("repository") or {}).get("full_name")
    if repo and repo not in pw.forge.repos:
        pw.forge.add_repo(repo, installation_id=INSTALLATION)
    sender = (payload.get("sender") or {}).get("login")
    if repo and sender:
        pw.forge.add_user(repo, sender, "write")
    issue = payload.get("issue")
    if repo and issue:
        while len(pw.forge.repos[repo].issues) < issue["number"]:
            pw.forge.open_issue(repo, "fixture", author=sender or "x")
    return event, payload


@pytest.mark.parametrize("relative", ALL_FIXTURES)
async def test_every_real_payload_is_accepted_and_routed(pw: Harness, relative: str) -> None:
    event, payload = _prepare(pw, relative)
    delivery_id = str(uuid.uuid4())
    status, answer = await pw.post_webhook(event, payload, delivery_id=delivery_id)
    assert status == 202, answer
    assert answer == {"delivery": delivery_id, "duplicate": False}
    await pw.settle()
    [job] = [j for j in await pw.jobs("delivery") if j.delivery_id == delivery_id]
    assert job.state == JobState.SUCCEEDED, job.last_error
    stored = await pw.store.journal.get_delivery(delivery_id)
    assert stored is not None
    assert stored.event == event
    assert stored.payload == payload
    actions = {
        e.action
        for e in await pw.store.journal.query_audit(AuditQuery())
        if e.delivery_id == delivery_id
    }
    assert "delivery.received" in actions
    # Every delivery ends in a recorded decision: a trigger verdict, an ignore, or bookkeeping.
    assert actions - {"delivery.received", "job.enqueued"}, actions


EXPECTED_JOBS = [
    ("issue_comment/created-fix-command.json", "fix"),
    ("issues/labeled-patchwarden-fix.json", "fix"),
    ("check_run/completed-failure-default-branch.json", "alert"),
    ("workflow_run/completed-failure-default-branch.json", "alert"),
]


@pytest.mark.parametrize(("relative", "kind"), EXPECTED_JOBS)
async def test_trigger_payloads_enqueue_their_job(pw: Harness, relative: str, kind: str) -> None:
    event, payload = _prepare(pw, relative)
    status, _ = await pw.post_webhook(event, payload)
    assert status == 202
    await pw.settle()
    jobs = await pw.jobs(kind)
    assert len(jobs) == 1
    assert jobs[0].repo == payload["repository"]["full_name"]
    assert jobs[0].installation_id == INSTALLATION
    assert jobs[0].state == JobState.QUEUED  # waits for a session runner


async def test_failing_check_and_workflow_on_one_commit_make_one_alert(pw: Harness) -> None:
    sha = "deadbeef" * 5
    for relative in (EXPECTED_JOBS[2][0], EXPECTED_JOBS[3][0]):
        event, payload = _prepare(pw, relative)
        payload["repository"]["full_name"] = REPO
        run = payload.get("check_run") or payload["workflow_run"]
        run["head_sha"] = sha
        if "workflow_run" in payload:
            run["head_repository"]["full_name"] = REPO
        assert (await pw.post_webhook(event, payload))[0] == 202
    await pw.settle()
    assert [j.key for j in await pw.jobs("alert")] == [f"alert:{REPO}:ci:{sha}"]


async def test_installation_events_record_repositories(pw: Harness) -> None:
    _, created = _prepare(pw, "installation/created-1.json")
    created["installation"] = {"id": 99, "account": {"login": "octo-org"}}
    created["repositories"] = [{"full_name": "octo-org/a"}, {"full_name": "octo-org/b"}]
    await pw.post_webhook("installation", created)
    await pw.settle()
    assert await pw.store.repos.installed_repos() == {"octo-org/a": 99, "octo-org/b": 99}

    _, removed = _prepare(pw, "installation_repositories/removed-1.json")
    removed["installation"] = {"id": 99, "account": {"login": "octo-org"}}
    removed["repositories_removed"] = [{"full_name": "octo-org/a"}]
    removed["repositories_added"] = [{"full_name": "octo-org/c"}]
    await pw.post_webhook("installation_repositories", removed)
    await pw.settle()
    assert await pw.store.repos.installed_repos() == {"octo-org/b": 99, "octo-org/c": 99}

    _, deleted = _prepare(pw, "installation/deleted-1.json")
    deleted["installation"] = {"id": 99}
    await pw.post_webhook("installation", deleted)
    await pw.settle()
    assert await pw.store.repos.installed_repos() == {}


def _mis_signings(body: bytes) -> dict[str, dict[str, str]]:
    good = signing.sign(body, secret=SECRET)
    return {
        "wrong secret": {"X-Hub-Signature-256": signing.sign(body, secret="not the secret")},
        "truncated body": {"X-Hub-Signature-256": good, "x-truncate": "1"},
        "sha1 only": {
            "X-Hub-Signature": "sha1=" + hmac.new(SECRET.encode(), body, "sha1").hexdigest()
        },
        "missing": {},
        "uppercase hex": {"X-Hub-Signature-256": good.upper()},
    }


@pytest.mark.parametrize("relative", ALL_FIXTURES)
async def test_every_payload_is_rejected_when_mis_signed(pw: Harness, relative: str) -> None:
    event, payload = _prepare(pw, relative)
    body = json.dumps(payload).encode()
    for name, headers in _mis_signings(body).items():
        sent = body[:-10] if headers.pop("x-truncate", None) else body
        status, answer = await pw.post_webhook(
            event, sent, secret=None, headers=headers, delivery_id=str(uuid.uuid4())
        )
        assert status == 401, name
        assert "error" in answer
    assert await pw.store.journal.count_deliveries() == 0
    assert await pw.jobs("delivery") == []


async def test_same_delivery_100_times_20_at_once_makes_one_job(pw: Harness) -> None:
    pw.forge.add_user(REPO, "alice", "write")
    issue = pw.forge.open_issue(REPO, "Crash", author="alice")
    comment = await pw.forge.post_comment(
        REPO, issue.number, "@patchwarden fix this", author="alice", send=False
    )
    payload = pw.forge.comment_event(REPO, issue.number, comment)
    delivery_id = str(uuid.uuid4())
    gate = asyncio.Semaphore(20)

    async def send() -> tuple[int, dict[str, Any]]:
        async with gate:
            return await pw.post_webhook("issue_comment", payload, delivery_id=delivery_id)

    answers = await asyncio.gather(*(send() for _ in range(100)))
    assert {status for status, _ in answers} == {202}
    assert sum(1 for _, a in answers if not a["duplicate"]) == 1
    await pw.settle()
    assert len(await pw.jobs("delivery")) == 1
    assert len(await pw.jobs("fix")) == 1
    assert await pw.store.journal.count_deliveries() == 1
    assert pw.forge.comment_reactions(comment.id) == ["eyes"]
    assert len(pw.forge.calls("POST", "/reactions")) == 1


async def test_same_comment_under_new_delivery_ids_makes_one_fix_job(pw: Harness) -> None:
    pw.forge.add_user(REPO, "alice", "write")
    issue = pw.forge.open_issue(REPO, "Crash", author="alice")
    comment = await pw.forge.post_comment(REPO, issue.number, "/fix", author="alice")
    payload = pw.forge.comment_event(REPO, issue.number, comment)
    for _ in range(3):
        await pw.post_webhook("issue_comment", payload)
    await pw.settle()
    assert len(await pw.jobs("delivery")) == 4
    assert len(await pw.jobs("fix")) == 1


async def test_unknown_events_are_stored_acknowledged_and_ignored(pw: Harness) -> None:
    status, _ = await pw.post_webhook(
        "star", {"action": "created", "sender": {"login": "x"}, "installation": {"id": 7}}
    )
    assert status == 202
    status, _ = await pw.post_webhook(
        "issues", {"action": "transferred", "installation": {"id": 7}}
    )
    assert status == 202
    await pw.settle()
    assert await pw.store.journal.count_deliveries() == 2
    entries = await pw.store.journal.query_audit(AuditQuery())
    ignored = [e.reason for e in entries if e.action == "delivery.ignored"]
    assert "no handler for star.created" in ignored
    assert "no handler for issues.transferred" in ignored


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        ({"X-GitHub-Event": ""}, b"{}", 400),
        ({"X-GitHub-Delivery": ""}, b"{}", 400),
        ({}, b"not json", 400),
        ({}, b"[1, 2]", 400),
    ],
)
async def test_malformed_but_signed_requests_get_400(
    pw: Harness, headers: dict[str, str], body: bytes, status: int
) -> None:
    got, answer = await pw.post_webhook("issues", body, headers=headers)
    assert got == status
    assert answer["error"]


async def test_form_encoded_payloads_are_accepted(pw: Harness) -> None:
    body = urlencode({"payload": json.dumps({"zen": "Keep it logically awesome."})}).encode()
    status, _ = await pw.post_webhook(
        "ping", body, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert status == 202
    assert await pw.store.journal.count_deliveries() == 1


async def test_large_payloads_up_to_githubs_cap_are_accepted(pw: Harness) -> None:
    big = {"action": "created", "filler": "x" * (5 * 1024 * 1024)}  # 5 MiB > aiohttp's 1 MiB
    status, _ = await pw.post_webhook("push", big)
    assert status == 202
    too_big = b'{"x": "' + b"y" * (26 * 1024 * 1024) + b'"}'
    status, _ = await pw.post_webhook("push", too_big)
    assert status == 413


async def test_healthz(pw: Harness) -> None:
    async with pw.session.get(f"{pw.url}/healthz") as response:
        assert response.status == 200
        assert (await response.json())["store"] == "ok"
