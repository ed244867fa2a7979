"""The one interface every fixer has: ``fix(task, workspace, budget) -> FixOutcome``.

``workspace`` is the session's :class:`~app.sessions.session.FixContext`: the tree to
edit (host path), the sandbox to run commands in (:meth:`FixContext.run`, no network,
no secrets), the repository's commands and host-side git for the session's own
repository. A fixer edits the tree and returns what it did; the session commits,
verifies and records it. A fixer never talks to GitHub.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from app.sessions.fix_context import FixContext
from app.sessions.result import FixOutcome
from app.sessions.task import Budget, Task

# What fixers record in the audit log: audit(action, *, reason=..., details=...).
Audit = Callable[..., Awaitable[None]]


async def no_audit(action: str, **_: Any) -> None:
    """The default audit: nothing recorded (``patchwarden run``, tests)."""


# Folders no fixer looks into: version control, dependencies, caches.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".eggs",
    }
)


def walk_files(top: Path, tree: Path) -> Iterator[tuple[str, bool]]:
    """Every file under ``top`` (and every symlinked folder) as (path relative to
    ``tree``, whether it is a symlink), sorted, without following links or entering
    :data:`SKIP_DIRS`."""
    for root, dirs, files in os.walk(top, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        here = Path(root)
        for name in sorted(files):
            yield (here / name).relative_to(tree).as_posix(), (here / name).is_symlink()
        for d in dirs:
            if (here / d).is_symlink():
                yield (here / d).relative_to(tree).as_posix() + "/", True


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
