"""Earned autonomy's records, on SQLite and on a real PostgreSQL server: trust events
(rejections, resets), the standings last scored, and the audit of every change of state."""

from __future__ import annotations

from app.store import AuditQuery, NewJob, Outcome, Store, TrustEvent, TrustStanding

REPO = "octo-org/widgets"
T0 = 1_800_000_000.0


def lint(state: str, autonomy: str, at: float) -> TrustStanding:
    return TrustStanding(
        repo=REPO, category="lint", autonomy=autonomy, state=state, explanation=state, at=at
    )


async def actions(store: Store) -> list[tuple[str, str | None]]:
    entries = await store.journal.query_audit(AuditQuery(repo=REPO))
    return [
        (e.action, (e.details or {}).get("category"))
        for e in entries
        if e.action.startswith("trust.")
    ]


async def test_a_change_of_standing_is_kept_and_audited_once(store: Store) -> None:
    assert await store.learning.set_standing(lint("base", "review", T0), job_id=7) is None
    assert await actions(store) == []  # never earned anything: nothing changed
    assert (
        await store.learning.set_standing(lint("earned", "automerge", T0 + 1), job_id=8) is not None
    )
    again = await store.learning.set_standing(lint("earned", "automerge", T0 + 2), job_id=9)
    assert again is not None
    assert again.state == "earned"
    await store.learning.set_standing(lint("demoted", "review", T0 + 3), job_id=10)
    assert await actions(store) == [("trust.promoted", "lint"), ("trust.demoted", "lint")]
    (kept,) = await store.learning.standings(REPO)
    assert (kept.state, kept.autonomy, kept.at) == ("demoted", "review", T0 + 3)
    assert await store.learning.standings("someone/else") == []


async def test_a_reset_forgets_the_standings_it_covers_and_is_audited(store: Store) -> None:
    await store.learning.set_standing(lint("earned", "automerge", T0))
    docs = TrustStanding(REPO, "docs", "automerge", "earned", "docs earned", T0)
    await store.learning.set_standing(docs)
    await store.learning.add_trust_event(TrustEvent(REPO, "reset", "lint", T0 + 5, actor="alice"))
    assert [s.category for s in await store.learning.standings(REPO)] == ["docs"]
    await store.learning.add_trust_event(TrustEvent(REPO, "reset", "*", T0 + 6, actor="alice"))
    assert await store.learning.standings(REPO) == []
    await store.learning.add_trust_event(
        TrustEvent(REPO, "rejected", "lint", T0 + 7, actor="carol", pr_number=12)
    )
    events = await store.learning.trust_events(REPO, since=T0 + 6)
    assert [(e.what, e.category, e.actor, e.pr_number) for e in events] == [
        ("reset", "*", "alice", None),
        ("rejected", "lint", "carol", 12),
    ]
    assert [a for a, _ in await actions(store)][-3:] == [
        "trust.reset",
        "trust.reset",
        "trust.rejected",
    ]


async def test_an_outcome_keeps_its_kind_of_change(store: Store) -> None:
    job, _ = await store.queue.enqueue(NewJob(kind="fix", key="k"))
    await store.learning.save_outcome(
        Outcome(
            job_id=job.id, repo=REPO, kind="fix", trigger="comment", created_at=T0, category="lint"
        )
    )
    got = await store.learning.get_outcome(job.id)
    assert got is not None
    assert got.category == "lint"


async def test_the_audit_reads_by_action_prefix_literally(store: Store) -> None:
    for action in ("trust.reset", "trust_x.reset", "watch.opened", "trust.promoted"):
        await store.journal.audit(action, repo=REPO)
    got = await store.journal.query_audit(AuditQuery(repo=REPO, action_prefix="trust."))
    assert [e.action for e in got] == ["trust.reset", "trust.promoted"]
    got = await store.journal.query_audit(AuditQuery(repo=REPO, action_prefix="trust_"))
    assert [e.action for e in got] == ["trust_x.reset"]
