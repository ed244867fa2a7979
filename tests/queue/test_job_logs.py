"""Each job says in one log line what it decided, and with PATCHWARDEN_LOG_FORMAT=json
every line is a JSON object carrying the job's (or delivery's) ids, secrets masked."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app import logs
from app.queue import Lane, WorkerPool
from app.queue.worker import decided
from app.store import NewJob, store_for_url


@pytest.mark.parametrize(
    ("result", "line"),
    [
        (
            {"status": "published", "decision": "review", "score": 34, "pr": 12, "x": 1},
            "status=published decision=review score=34 pr=12",
        ),
        ({"handlers": ["commands"]}, "handlers=['commands']"),
        ({}, "nothing to report"),
        ({"status": "rejected", "reason": "two\nlines"}, "status=rejected reason=two lines"),
    ],
)
def test_what_a_job_decided_in_one_line(result: dict[str, Any], line: str) -> None:
    assert decided(result) == line


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """The root logger as `configure(fmt="json")` sets it up, into a buffer."""
    out = io.StringIO()
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    logs.configure("INFO", secrets=["hunter2-secret"], fmt="json")
    handler = root.handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(out)
    yield out
    root.handlers[:], level = saved
    root.setLevel(level)


async def test_json_lines_carry_the_job_s_ids_and_mask_secrets(
    tmp_path: Path, captured: io.StringIO
) -> None:
    store = store_for_url(f"sqlite:///{tmp_path / 'pw.db'}")
    await store.open()

    async def work(job: Any) -> dict[str, Any]:
        logging.getLogger("app.jobs.fix").info("working with hunter2-secret")
        await asyncio.sleep(0)
        return {"status": "published", "decision": "automerge", "pr": 3}

    pool = WorkerPool(store, {"fix": ("q", work)}, [Lane("q", 1)], lease_seconds=5)
    await store.queue.enqueue(
        NewJob(kind="fix", key="k", queue="q", repo="o/r", installation_id=7, payload={})
    )
    await pool.run_until_idle()
    await store.close()
    lines = [json.loads(line) for line in captured.getvalue().splitlines()]
    mine = [line for line in lines if line.get("job_id") == 1]
    assert {line["logger"] for line in mine} >= {"app.jobs.fix", "app.queue.worker"}
    for line in mine:
        assert (line["kind"], line["repo"], line["installation_id"]) == ("fix", "o/r", 7)
        assert {"ts", "level", "message"} <= set(line)
    assert any(line["message"] == "working with ***" for line in mine)
    assert "hunter2-secret" not in captured.getvalue()
    [done] = [line for line in mine if " done: " in line["message"]]
    assert done["message"].endswith("done: status=published decision=automerge pr=3")
    outside = [line for line in lines if "job_id" not in line]
    logging.getLogger("x").warning("after the job")
    assert "job_id" not in json.loads(captured.getvalue().splitlines()[-1])
    assert all("job_id" not in line for line in outside)
