"""Correctly signed, malformed deliveries: intake answers 202 or 400, never 5xx; a
handler never raises; invalid input creates no job.

Each example is one of GitHub's real example payloads (tests/fixtures/webhooks) with one
hostile change: a field set to a value of the wrong type or out of bounds, a field
removed, a lone surrogate, or a body nested far deeper than any GitHub sends. It is
signed with the App's secret, so only the payload checks stand between it and the
handlers. The server, the queue, the handlers and the forge they call are the real ones.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.store import AuditQuery, JobState
from tests.conftest import FIXTURES, SECRET, Harness
from tests.webhooks.test_webhooks import ALL_FIXTURES, _prepare

HOSTILE: list[Any] = [
    None, True, 0, -1, 2**31, 2**63, 2**64, -(2**63) - 1, 1.5, float("1e308"), "", "x",
    "1; DROP TABLE jobs", "\ud800", "\x00", "a" * 300_000, [], [7], ["created"], {},
    {"id": [7]}, {"login": None}, {"full_name": "../../etc/passwd"}, "owner/" + "r" * 5000,
]  # fmt: skip


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node[:3]):
            out += _paths(value, (*prefix, i))
    return out


def _mutate(payload: dict[str, Any], path: tuple[Any, ...], how: str, value: Any) -> None:
    parent: Any = payload
    for part in path[:-1]:
        parent = parent[part]
    if how == "delete" and isinstance(parent, dict):
        parent.pop(path[-1], None)
    else:
        parent[path[-1]] = value


# Fields every handler reads first: mutated more often than a random leaf.
HOT = [
    ("action",), ("installation",), ("installation", "id"), ("repository",),
    ("repository", "full_name"), ("sender",), ("sender", "login"), ("issue",),
    ("issue", "number"), ("issue", "title"), ("comment",), ("comment", "id"),
    ("comment", "body"), ("label", "name"), ("pull_request", "number"), ("review", "state"),
    ("check_run", "head_sha"), ("workflow_run", "head_sha"), ("sha",), ("branches",),
]  # fmt: skip


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[str, str]:
    relative = draw(st.sampled_from(ALL_FIXTURES))
    return relative, draw(st.sampled_from(["mutate", "mutate", "mutate", "deep", "hot"]))


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(deliveries(), st.data())
async def test_signed_malformed_deliveries_never_crash_or_make_jobs(
    pw: Harness, delivery: tuple[str, str], data: st.DataObject
) -> None:
    relative, kind = delivery
    event, payload = _prepare(pw, relative)
    if kind == "deep":
        depth = data.draw(st.sampled_from([40, 1_000, 100_000]))
        body = ('{"action":"created","x":' + "[" * depth + "]" * depth + "}").encode()
    else:
        if kind == "hot":
            present = [p for p in HOT if _has(payload, p[:-1])]
            path = data.draw(st.sampled_from(present or [("action",)]))
        else:
            path = data.draw(st.sampled_from(_paths(payload)))
        how = data.draw(st.sampled_from(["set", "set", "delete"]))
        _mutate(payload, path, how, data.draw(st.sampled_from(HOSTILE)))
        body = json.dumps(payload).encode()
    delivery_id = str(uuid.uuid4())
    status, answer = await pw.post_webhook(event, body, delivery_id=delivery_id)
    assert status in (202, 400), (status, answer)
    await pw.settle()
    jobs = [
        j for kind_ in ("delivery", "fix", "merge", "alert", "revert") for j in await pw.jobs(kind_)
    ]
    mine = [j for j in jobs if j.delivery_id == delivery_id]
    if status == 400:
        assert not mine, "an invalid delivery made a job"
        audit = await pw.store.journal.query_audit(AuditQuery())
        assert any(e.action == "delivery.invalid" and e.delivery_id == delivery_id for e in audit)
        return
    for job in mine:
        assert job.state != JobState.FAILED, (relative, job.kind, job.last_error)
        assert len(job.key) <= 400, job.key[:80]
        if job.kind == "fix":
            assert isinstance(job.payload["issue_number"], int)
            assert job.payload["issue_number"] > 0


def _has(payload: dict[str, Any], path: tuple[Any, ...]) -> bool:
    node: Any = payload
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return isinstance(node, dict)


async def test_the_issue_s_crashers_are_each_a_clear_400(pw: Harness) -> None:
    """The bodies the issue's fuzzing found, each answered 400 with what is wrong."""
    comment = json.loads((FIXTURES / "issue_comment/created-fix-command.json").read_text())
    cases: list[tuple[str, dict[str, Any] | bytes, str]] = [
        ("issue_comment", {**comment, "action": ["created"]}, "`action`"),
        ("issue_comment", {**comment, "repository": "x"}, "`repository`"),
        ("issue_comment", {**comment, "installation": {"id": [7]}}, "`installation.id`"),
        ("issue_comment", {**comment, "installation": {"id": 2**64}}, "`installation.id`"),
        ("issue_comment", {**comment, "issue": {**comment["issue"], "number": "1; DROP"}},
         "`issue.number`"),
        ("issue_comment", {**comment, "comment": {"body": "/fix"}}, "`comment.id`: missing"),
        ("issue_comment", {**comment, "repository": {"full_name": "o/" + "r" * 3_000_000}},
         "`repository.full_name`"),
        ("issue_comment", json.dumps({**comment, "x": "\ud800"}).encode(), "lone surrogate"),
        ("issue_comment", b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "nest"),
    ]  # fmt: skip
    for event, payload, says in cases:
        status, answer = await pw.post_webhook(event, payload)
        assert status == 400, (says, answer)
        assert says in answer["error"], answer
    await pw.settle()
    assert await pw.jobs("delivery") == []
    assert await pw.jobs("fix") == []
    assert SECRET not in json.dumps(
        [e.details for e in await pw.store.journal.query_audit(AuditQuery())]
    )


async def test_large_bodies_are_read_a_few_at_a_time_before_the_signature_check(
    pw: Harness, monkeypatch: Any
) -> None:
    """Unsigned traffic cannot make the server hold many large bodies at once: two are
    read at a time, a third waits and is turned away; small deliveries are not held up."""
    import asyncio

    from app import server

    monkeypatch.setattr(server, "LARGE_READ_WAIT", 0.3)
    release = asyncio.Event()

    async def slow_body() -> Any:
        yield b"{" + b" " * (2 * 1024 * 1024)
        await release.wait()
        yield b"}"

    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": "slow",
        "X-Hub-Signature-256": "sha256=" + "0" * 64,  # wrong: found out only after the read
    }
    url = f"{pw.url}/webhooks/github"
    slow = [
        asyncio.create_task(pw.session.post(url, data=slow_body(), headers=headers))
        for _ in range(server.MAX_LARGE_READS)
    ]
    await asyncio.sleep(0.2)
    async with pw.session.post(url, data=slow_body(), headers=headers) as third:
        assert third.status == 503
        assert "large" in (await third.json())["error"]
    status, _ = await pw.post_webhook("ping", {"zen": "small deliveries still get in"})
    assert status == 202
    release.set()
    for task in slow:
        async with await task as answer:
            assert answer.status == 401  # read, then refused: the signature is wrong


async def test_a_delivery_without_a_signature_is_refused_before_its_body_is_read(
    pw: Harness,
) -> None:
    status, answer = await pw.post_webhook("ping", b"{" + b" " * 3_000_000 + b"}", secret=None)
    assert status == 401
    assert "missing" in answer["error"]


async def test_a_body_of_unknown_length_over_github_s_cap_is_refused_as_it_is_read(
    pw: Harness,
) -> None:
    async def endless() -> Any:
        for _ in range(30):  # 30 MiB, no Content-Length: chunked
            yield b" " * (1024 * 1024)

    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": "chunked",
        "X-Hub-Signature-256": "sha256=" + "0" * 64,
    }
    async with pw.session.post(
        f"{pw.url}/webhooks/github", data=endless(), headers=headers
    ) as answer:
        assert answer.status == 413
        assert "GitHub's webhook payload cap" in (await answer.json())["error"]


async def test_a_compressed_body_is_refused_before_it_is_unpacked(pw: Harness) -> None:
    """24 KiB of gzip unpacks to 24 MiB: its length would take no read slot."""
    import gzip

    packed = gzip.compress(b"{" + b" " * (24 * 1024 * 1024) + b"}")
    headers = {
        "Content-Type": "application/json",
        "Content-Encoding": "gzip",
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": "gzip",
        "X-Hub-Signature-256": "sha256=" + "0" * 64,
    }
    async with pw.session.post(f"{pw.url}/webhooks/github", data=packed, headers=headers) as r:
        assert r.status == 415
        assert "Content-Encoding 'gzip'" in (await r.json())["error"]


async def test_a_body_that_trickles_in_loses_its_read_slot(pw: Harness, monkeypatch: Any) -> None:
    import asyncio

    from app import server

    monkeypatch.setattr(server, "READ_DEADLINE", 0.3)

    async def trickle() -> Any:
        for _ in range(50):
            yield b" "
            await asyncio.sleep(0.1)

    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": "trickle",
        "X-Hub-Signature-256": "sha256=" + "0" * 64,
    }
    async with pw.session.post(f"{pw.url}/webhooks/github", data=trickle(), headers=headers) as r:
        assert r.status == 408
    status, _ = await pw.post_webhook("ping", b"{" + b" " * (2 * 1024 * 1024) + b"}")
    assert status == 202  # both large-read slots are free again
