"""GitHub's rate limits shared by the processes of a deployment (app/github/client.py):
a pause one process records holds for every process, and only ever grows."""

from __future__ import annotations

from app.store import AuditQuery, Store


async def test_a_pause_is_read_back_and_only_extended(store: Store) -> None:
    assert await store.repos.requests_paused_until("7") == 0.0  # never paused
    await store.repos.pause_requests("7", 1000.5)
    await store.repos.pause_requests("7", 900.0)  # an earlier reset does not shorten it
    assert await store.repos.requests_paused_until("7") == 1000.5
    await store.repos.pause_requests("7", 1200.0)
    assert await store.repos.requests_paused_until("7") == 1200.0
    assert await store.repos.requests_paused_until("app") == 0.0  # each scope its own
    said = [
        e
        for e in await store.journal.query_audit(AuditQuery())
        if e.action == "github.rate_limited"
    ]
    assert len(said) == 2  # the pause and its extension; the shorter one changed nothing
    assert "every request of installation 7 waits" in (said[0].reason or "")
