"""A session's result kept in the store (app/sessions/stored.py, ``store.queue``): any
process opened on the same database reads what another saved, and a second attempt's
result replaces the first's; on SQLite and PostgreSQL."""

from __future__ import annotations

from app.sessions.stored import for_store, from_store
from app.store import Store, store_for_url
from tests.policy_helpers import result_for

ONE_LINE = "--- a/util.py\n+++ b/util.py\n@@ -1,2 +1 @@\n-import os\n x = 1\n"


async def test_a_result_saved_by_one_process_is_read_by_another(
    store: Store, store_url: str
) -> None:
    first = result_for(ONE_LINE, fixer="lint", job_id=5, summary="removed an unused import")
    await store.queue.save_result(5, for_store(first), version=first.schema_version)
    other = store_for_url(store_url)  # a second host on the same database
    await other.open()
    try:
        kept = await other.queue.load_result(5)
        assert kept is not None
        loaded = from_store(*kept)
        assert loaded.fix is not None
        assert loaded.fix.fixer == "lint"
        assert loaded.diff.unified == ONE_LINE
        assert loaded.cut == ""
        assert await other.queue.load_result(6) is None  # a job that kept none
        again = first.model_copy(update={"head_sha": "c" * 40})  # the retried attempt
        await other.queue.save_result(5, for_store(again), version=again.schema_version)
    finally:
        await other.close()
    kept = await store.queue.load_result(5)
    assert kept is not None
    assert from_store(*kept).head_sha == "c" * 40
