"""The one interface every fixer has: ``fix(task, workspace, budget) -> FixOutcome``.

``workspace`` is the session's :class:`~app.sessions.session.FixContext`: the tree to
edit (host path), the sandbox to run commands in (:meth:`FixContext.run`, no network,
no secrets), the repository's commands and host-side git for the session's own
repository. A fixer edits the tree and returns what it did; the session commits,
verifies and records it. A fixer never talks to GitHub.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

from app.sessions.result import FixOutcome
from app.sessions.session import Budget, FixContext, Task


class Fixer(abc.ABC):
    name: ClassVar[str]

    async def __call__(self, ctx: FixContext) -> FixOutcome:
        """What :class:`~app.sessions.session.SessionRunner` calls."""
        return await self.fix(ctx.task, ctx, ctx.budget)

    @abc.abstractmethod
    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        """Edit ``workspace.tree`` for ``task`` within ``budget``."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release what the fixer holds (a model client's connections)."""

    def gave_up(self, reason: str, **fields: Any) -> FixOutcome:
        return FixOutcome(fixer=self.name, ok=False, reason=reason, **fields)
