"""A session's result kept in the store (app/sessions/stored.py, ``store.queue``): any
process opened on the same database reads what another saved, and a second attempt's
result replaces the first's; on SQLite and PostgreSQL."""

from __future__ import annotations

import json

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


async def test_a_result_this_version_cannot_read_is_done_without(store: Store) -> None:
    """A result an older Patchwarden kept in another shape is read as none (and said in
    the log): the merge leaves the body as it is rather than failing after the merge."""
    from app.config import Settings
    from app.jobs.context import JobContext

    old = result_for(ONE_LINE, fixer="lint", job_id=7).to_json()
    del old["policy"]["learn"]  # as results were kept before `learn` existed
    await store.queue.save_result(7, json.dumps(old), version=2)
    ctx = JobContext(settings=Settings(), store=store, github=None, runner=None)  # type: ignore[arg-type]
    assert await ctx.load_result(7) is None
    await store.queue.save_result(8, for_store(result_for(ONE_LINE, job_id=8)), version=2)
    assert await ctx.load_result(8) is not None
