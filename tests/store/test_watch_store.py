"""The watch's records, on SQLite and on a real PostgreSQL server: checks completed on
the default branch (a redelivery is one record) and the issue kept per finding."""

from __future__ import annotations

from app.store import AuditQuery, CheckRecord, Store, WatchFinding

REPO = "octo-org/widgets"
T0 = 1_800_000_000.0


def check(i: int, **kw: object) -> CheckRecord:
    values: dict[str, object] = {
        "repo": REPO,
        "check": "tests",
        "sha": f"{i:040x}",
        "conclusion": "success",
        "completed_at": T0 + i,
        "started_at": T0 + i - 30,
        "external_id": str(1000 + i),
    }
    values.update(kw)
    return CheckRecord(**values)  # type: ignore[arg-type]


async def test_checks_are_kept_once_each_oldest_first(store: Store) -> None:
    assert await store.checks.record_check(check(2))
    assert await store.checks.record_check(check(1, conclusion="failure"))
    assert not await store.checks.record_check(check(1, conclusion="failure"))  # redelivered
    # a status with the same id is another record: ids are per source
    assert await store.checks.record_check(
        check(3, source="status", external_id="1001", started_at=None)
    )
    assert await store.checks.record_check(check(4, repo="someone/else"))
    got = await store.checks.check_history(REPO, since=T0)
    assert [(c.sha[-1], c.conclusion, c.source) for c in got] == [
        ("1", "failure", "check_run"),
        ("2", "success", "check_run"),
        ("3", "success", "status"),
    ]
    assert got[0].started_at == T0 - 29
    assert got[2].started_at is None
    assert [c.sha[-1] for c in await store.checks.check_history(REPO, since=T0 + 2)] == ["2", "3"]


async def test_a_finding_keeps_its_issue_and_is_audited_when_asked(store: Store) -> None:
    first = WatchFinding(REPO, "flaky:tests", 12, "open", "Flaky check: tests", T0, T0, "a")
    await store.checks.save_finding(first, audit="watch.opened")
    await store.checks.save_finding(
        WatchFinding(REPO, "flaky:tests", 12, "ignored", "Flaky check: tests", T0 + 9, T0 + 5, "b"),
        audit="watch.ignored",
    )
    (kept,) = await store.checks.watch_findings(REPO)
    assert (kept.state, kept.first_seen, kept.last_seen, kept.body_sha) == (
        "ignored",
        T0,
        T0 + 5,
        "b",
    )
    # a watch run that read it as open before the ignore, and writes after: still ignored
    await store.checks.save_finding(
        WatchFinding(REPO, "flaky:tests", 12, "open", "Flaky check: tests", T0, T0 + 7, "c")
    )
    (kept,) = await store.checks.watch_findings(REPO)
    assert (kept.state, kept.body_sha) == ("ignored", "c")
    actions = [e.action for e in await store.journal.query_audit(AuditQuery(repo=REPO))]
    assert actions == ["watch.opened", "watch.ignored"]
    assert await store.checks.watch_findings("someone/else") == []
