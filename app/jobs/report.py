"""Where a job speaks: its one comment on the issue or pull request, edited in place as
it goes (with the session's phase, at most every few seconds), or nowhere."""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from app.publish.body import inline
from app.publish.github import Publisher

log = logging.getLogger(__name__)


class Report(Protocol):
    async def say(self, text: str) -> None: ...


class Silent:
    """A CI alert has no issue to talk on: its pull request says it all."""

    async def say(self, text: str) -> None:
        return None


class Comment:
    """One comment of Patchwarden's on an issue or pull request, found by its marker
    ``key`` and edited in place as the job goes (its id kept after the first say)."""

    def __init__(self, pub: Publisher, number: int, key: str, prefix: str) -> None:
        self.pub, self.number, self.key, self.prefix = pub, number, key, prefix
        self.comment_id: int | None = None

    async def say(self, text: str) -> None:
        if self.number:
            self.comment_id = await self.pub.upsert_comment(
                self.number, self.key, self.prefix + text, comment_id=self.comment_id
            )


def job_comment(pub: Publisher, number: int, job_id: int) -> Comment:
    """The job's one comment on its issue."""
    return Comment(pub, number, f"job={job_id}", f"**Patchwarden** (job {job_id}): ")


def report_for(pub: Publisher, kind: str, job_id: int, number: int) -> Comment:
    """The comment a job of ``kind`` speaks through on ``number`` (and a notice of its
    failure edits): a revert's on the reverted pull request, the merge comment for a
    merge or an update, else the job's own."""
    if kind == "revert":
        return Comment(pub, number, f"revert={number}", "**Patchwarden**: ")
    if kind in ("merge", "update"):
        return Comment(pub, number, "merge", "**Patchwarden**: ")
    return job_comment(pub, number, job_id)


class Ticker:
    """The session's phase, shown in the job's comment as it goes (at most every
    ``every`` seconds: one edit per phase, not a stream of comments)."""

    def __init__(self, report: Report, *, every: float) -> None:
        self.report = report
        self.every = every
        self.latest: str | None = None
        self.shown: str | None = None

    def hear(self, line: str) -> None:
        self.latest = line

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            line = self.latest
            if line is None or line == self.shown:
                continue
            self.shown = line
            try:
                await self.report.say(f"Working on it: {inline(line)}")
            except Exception as exc:  # progress is a courtesy; the job goes on
                log.warning("could not show progress: %s", exc)
