"""Typed job kinds (app/contract/kinds.py): the payload a job is queued with is the one its
handler reads back; jobs queued before kinds were typed still run after an upgrade;
a payload no version could have written fails the job for good, saying why."""

from __future__ import annotations

import time
from typing import Any

import pytest

from app.contract.kinds import (
    KINDS,
    AlertJob,
    DeliveryJob,
    FailureNotice,
    FixJob,
    JobKind,
    MergeJob,
    RevertJob,
    UpdateJob,
    parse,
)
from app.errors import PermanentJobError
from app.store import Job, JobState

REPO = "octo-org/widgets"
SHA = "a" * 40


def job_of(kind: str, payload: dict[str, Any], job_id: int = 5) -> Job:
    now = time.time()
    return Job(
        id=job_id,
        kind=kind,
        queue="sessions",
        key="k",
        repo=REPO,
        installation_id=1,
        delivery_id=None,
        payload=payload,
        state=JobState.RUNNING,
        attempts=1,
        max_attempts=3,
        run_after=now,
        lease_owner="w",
        lease_expires_at=now + 60,
        last_error=None,
        result=None,
        created_at=now,
        updated_at=now,
    )


EVERY_KIND: list[JobKind] = [
    DeliveryJob(delivery_id="d-1", repo=REPO),
    FixJob(
        repo=REPO,
        issue_number=3,
        ref="comment:77",
        issue_title="greet() is rude",
        trigger="comment",
        comment_id=77,
        requested_by="alice",
        instructions="be kind",
        mode="lint",
    ),
    AlertJob(
        repo=REPO,
        source="check_run",
        fingerprint=f"ci:{SHA}",
        sha=SHA,
        branch="main",
        name="tests",
        conclusion="failure",
        url="https://ci.example/1",
    ),
    AlertJob(
        repo=REPO,
        source="alertmanager",
        fingerprint="abc123",
        title="HighErrorRate",
        body="5xx over 5%",
        labels={"severity": "page"},
    ),
    RevertJob(repo=REPO, pr=9, trigger="canary", why="tests failed on main"),
    UpdateJob(repo=REPO, pr=9, job=4, base=SHA),
    MergeJob(repo=REPO, pr=9, reason="ship-it", actor="bob", ref="d-2"),
    FailureNotice(job_id=4),
]


@pytest.mark.parametrize("kind", EVERY_KIND, ids=lambda k: k.kind)
def test_what_a_kind_queues_is_what_its_handler_reads(kind: JobKind) -> None:
    new = kind.new_job(installation_id=1, delivery_id="d-1")
    assert (new.kind, new.queue, new.key) == (kind.kind, kind.queue, kind.key)
    assert KINDS[new.kind] is type(kind)
    assert parse(job_of(new.kind, new.payload)) == kind


@pytest.mark.parametrize(
    ("kind", "key"),
    [
        (EVERY_KIND[0], "delivery:d-1"),
        (EVERY_KIND[1], f"fix:{REPO}#3:comment:77"),
        (EVERY_KIND[2], f"alert:{REPO}:ci:{SHA}"),
        (EVERY_KIND[3], f"alert:{REPO}:abc123"),
        (EVERY_KIND[4], f"revert:{REPO}#9"),
        (EVERY_KIND[5], f"update:{REPO}#9:{SHA}"),
        (EVERY_KIND[6], f"merge:{REPO}#9:ship-it:d-2"),
        (EVERY_KIND[7], "failure_notice:4"),
    ],
)
def test_keys_are_what_earlier_versions_used(kind: JobKind, key: str) -> None:
    """Idempotency across an upgrade: a request already queued by the last version is
    not queued a second time by this one."""
    assert kind.key == key


def test_the_canary_and_a_person_share_one_revert_per_merge() -> None:
    canary = RevertJob(repo=REPO, pr=9, trigger="canary", why="bisect blamed it")
    asked = RevertJob(repo=REPO, pr=9, trigger="request", requested_by="alice")
    assert canary.key == asked.key


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        # As the version before typed kinds queued them (no ref, fingerprint or base).
        (
            "fix",
            {
                "repo": REPO,
                "issue_number": 3,
                "issue_title": "t",
                "trigger": "label",
                "comment_id": None,
                "requested_by": "alice",
                "instructions": "",
                "mode": "fix",
            },
        ),
        ("alert", {"repo": REPO, "source": "status", "sha": SHA, "name": "ci", "url": None}),
        ("revert", {"repo": REPO, "pr": 9, "trigger": "request", "requested_by": "alice"}),
        ("update", {"repo": REPO, "pr": 9, "job": 4}),
        ("merge", {"repo": REPO, "pr": 9, "reason": "opened"}),
        ("failure_notice", {"job_id": 4}),
        ("delivery", {"delivery_id": "d-1"}),
    ],
)
def test_a_job_queued_by_the_last_version_still_runs(kind: str, payload: dict[str, Any]) -> None:
    parsed = parse(job_of(kind, payload))
    assert parsed.kind == kind


@pytest.mark.parametrize(
    ("kind", "payload", "said"),
    [
        ("fix", {"repo": REPO}, "issue_number: Field required"),
        ("fix", {"repo": REPO, "issue_number": "three"}, "issue_number"),
        ("merge", {"repo": REPO, "pr": 9, "reason": "because"}, "reason"),
        ("revert", {"repo": REPO, "pr": 9, "trigger": "someone"}, "trigger"),
        ("alert", {"repo": REPO, "source": "x", "labels": {"a": ["b"]}}, "labels.a"),
    ],
)
def test_an_unreadable_payload_fails_the_job_saying_what_is_wrong(
    kind: str, payload: dict[str, Any], said: str
) -> None:
    with pytest.raises(PermanentJobError) as caught:
        parse(job_of(kind, payload, job_id=12))
    message = str(caught.value)
    assert f"job 12 ({kind})" in message
    assert said in message
    assert "another version, or by hand" in message


def test_a_kind_this_version_does_not_know_fails_the_job() -> None:
    with pytest.raises(PermanentJobError, match="does not know: rebase"):
        parse(job_of("rebase", {"repo": REPO}))


def test_a_handler_refuses_a_job_of_another_kind() -> None:
    with pytest.raises(PermanentJobError, match="is a 'merge' job, not 'fix'"):
        FixJob.of(job_of("merge", {"repo": REPO, "pr": 1, "reason": "opened"}))


@pytest.mark.parametrize(
    ("kind", "thread", "requester"),
    [
        (EVERY_KIND[1], 3, "alice"),
        (EVERY_KIND[2], None, None),
        (EVERY_KIND[4], 9, None),
        (RevertJob(repo=REPO, pr=9, requested_by="carol"), 9, "carol"),
        (EVERY_KIND[5], 9, None),
        (EVERY_KIND[6], 9, None),
        (EVERY_KIND[7], None, None),
    ],
)
def test_where_a_person_waits_to_hear_of_a_job(
    kind: JobKind, thread: int | None, requester: str | None
) -> None:
    """The failure notice speaks on ``thread``; the audit names ``requester``."""
    assert (kind.thread, kind.requester) == (thread, requester)


def test_a_monitoring_alert_is_one_without_a_commit() -> None:
    ci, monitoring = EVERY_KIND[2], EVERY_KIND[3]
    assert isinstance(ci, AlertJob)
    assert isinstance(monitoring, AlertJob)
    assert monitoring.monitoring
    assert not ci.monitoring


def test_the_dashboard_follows_the_jobs_that_change_a_repository_s_record() -> None:
    """A job kind says whether the dashboard is brought up to date after it: not after a
    delivery (the App's own dashboard edit comes back as one) nor after the dashboard's
    or the watch's own jobs."""
    after = sorted(name for name, kind in KINDS.items() if kind.updates_dashboard)
    assert after == [
        "alert", "failure_notice", "fix", "merge", "revert", "security_alert", "update"
    ]  # fmt: skip
