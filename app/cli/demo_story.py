"""What the demo's stories share: the narrator (:class:`Story`), which waits for each
step on the forge and tells what it sees, and the failure of a step that never came."""

from __future__ import annotations

import asyncio
import textwrap
import time
from collections.abc import Callable
from typing import Any

from app.localforge import LocalForge

INSTALLATION = 7
STEP_SECONDS = 300.0


class StepFailed(Exception):
    """A step of the story did not happen in time."""


class Story:
    def __init__(self, forge: LocalForge, started: float, repo: str) -> None:
        self.forge = forge
        self.started = started
        self.repo = repo
        self.last = 6  # the number of the story's last step before the dashboard
        self.seen: set[str] = set()

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:6.1f}s] {text}", flush=True)

    def show(self, text: str, indent: str = "    │ ") -> None:
        for line in text.rstrip().splitlines():
            print(f"{indent}{line}", flush=True)

    async def until(self, what: str, check: Callable[[], Any], within: float = STEP_SECONDS) -> Any:
        """Wait for ``check()`` to be truthy, narrating what the forge sees meanwhile."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            self.narrate()
            value = check()
            if value:
                return value
            await asyncio.sleep(0.2)
        raise StepFailed(f"{what}: did not happen within {within:.0f} s")

    def narrate(self) -> None:
        """One line per new thing on the forge: comments, PRs, checks, merges."""
        repo = self.forge.repos[self.repo]
        for issue in sorted(repo.issues.values(), key=lambda i: i.number):
            kind = "PR" if issue.is_pull else "issue"
            for comment in issue.comments:
                key = f"comment:{comment.id}:{hash(comment.body)}"
                if key in self.seen or comment.user.type != "Bot":
                    continue
                self.seen.add(key)
                first = next((ln for ln in comment.body.splitlines() if ln.strip()), "")
                first = textwrap.shorten(first, 140, placeholder=" …")
                self.say(f"{comment.user.login} on {kind} #{issue.number}: {first}")
        for run in repo.check_runs:
            if run.status != "completed":
                continue
            key = f"run:{run.id}"
            if key in self.seen:
                continue
            self.seen.add(key)
            title = run.output.title if run.output else ""
            self.say(f"check `{run.name}` on {run.head_sha[:7]}: {run.conclusion} {title}")
        for merge in repo.merges:
            key = f"merge:{merge.number}"
            if key not in self.seen:
                self.seen.add(key)
                self.say(f"#{merge.number} merged by {merge.by} as {merge.sha[:7]}")


def pull_by(forge: LocalForge, predicate: Callable[[Any], bool], repo: str) -> Any:
    return next((p for p in forge.pulls(repo) if predicate(p)), None)
