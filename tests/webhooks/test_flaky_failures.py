"""When a failure on the default branch is a flaky check's (app/webhooks/ci.py): not
handed to the culprit finder only when every check that failed on that commit is flaky,
and never while one of Patchwarden's merges is in its canary window. On a real store."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.store import CheckRecord, NewJob, Outcome, Store, store_for_url
from app.webhooks.ci import _only_flaky
from app.webhooks.context import HandlerContext
from app.webhooks.triggers import CiFailure

REPO = "octo-org/widgets"
A, B = "a" * 40, "b" * 40


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[HandlerContext]:
    store = store_for_url(f"sqlite:///{tmp_path / 'pw.db'}")
    await store.open()
    yield HandlerContext(store=store, bot_name="patchwarden", delivery_id="d1")
    await store.close()


async def ran(store: Store, check: str, sha: str, conclusion: str, n: int) -> None:
    now = time.time() - 3600 + n
    await store.checks.record_check(
        CheckRecord(REPO, check, sha, conclusion, now, now - 30, external_id=str(n))
    )


def failed(check: str, sha: str = B) -> CiFailure:
    return CiFailure(repo=REPO, sha=sha, branch="main", name=check, conclusion="failure", url=None)


async def test_a_flaky_checks_failure_is_held_back_unless_something_else_failed_too(
    ctx: HandlerContext,
) -> None:
    await ran(ctx.store, "unit", A, "failure", 1)
    await ran(ctx.store, "unit", A, "success", 2)  # a re-run passed: flaky
    await ran(ctx.store, "unit", B, "failure", 3)
    assert await _only_flaky(ctx, failed("unit"), check_run=True) == "unit is"
    # a workflow run is judged by its jobs' check runs on that commit
    assert await _only_flaky(ctx, failed("CI"), check_run=False) == "unit is"
    # another check failed on the same commit: that is not a flake
    await ran(ctx.store, "e2e", B, "failure", 4)
    assert await _only_flaky(ctx, failed("CI"), check_run=False) is None
    assert await _only_flaky(ctx, failed("unit"), check_run=True) is None
    # a check never seen to flake is a failure
    assert await _only_flaky(ctx, failed("lint", "c" * 40), check_run=True) is None


async def test_never_held_back_while_a_merge_is_in_its_canary_window(ctx: HandlerContext) -> None:
    await ran(ctx.store, "unit", A, "failure", 1)
    await ran(ctx.store, "unit", A, "success", 2)
    await ran(ctx.store, "unit", B, "failure", 3)
    job, _ = await ctx.store.queue.enqueue(NewJob(kind="fix", key="k"))
    await ctx.store.learning.save_outcome(
        Outcome(
            job_id=job.id,
            repo=REPO,
            kind="fix",
            trigger="comment",
            created_at=time.time() - 120,
            pr_number=5,
            merged_at=time.time() - 60,
            merge_sha=B,
            canary_minutes=60,
        )
    )
    assert await _only_flaky(ctx, failed("unit"), check_run=True) is None
