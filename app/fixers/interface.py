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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from app.sessions.fix_context import FixContext
from app.sessions.result import FixOutcome
from app.sessions.task import Budget, Task

if TYPE_CHECKING:
    from app.config import Settings
    from app.fixers import Strategy

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


@dataclass(frozen=True)
class Made:
    """What building a fixer may use besides the settings: where model spend is kept,
    the job's audit, and an llm strategy forced by ``patchwarden run --strategy``."""

    ledger: Any = None  # app.fixers.llm.spend.Ledger
    audit: Audit = no_audit
    strategy: Strategy | None = None


@dataclass(frozen=True)
class FixerRecord:
    """All the house needs to know of a fixer, declared once beside its class.

    ``app/fixers/registry.py`` collects the records: fixer choice, ``patchwarden run
    --fixer``, the comment commands, ``validate`` and the schema read them, and every
    outcome of the fixer carries ``category``, ``model`` and ``reason`` to the policy,
    which therefore needs no list of fixer names.
    """

    name: str  # `run --fixer NAME`, `weights.fixer.NAME`, the PR body's "fixer" row
    reason: str  # one line for the PR body: what kind of author this is
    # The kind of change it makes, for learning and for the weights when the policy
    # has none of its own (`weights.fixer.<category>`); None: the kind its files have.
    category: str | None = None
    # A model writes its changes: contained to what the task explains. True unless the
    # record says otherwise (fail closed: a fixer that forgets is treated as a model).
    model: bool = True
    words: tuple[str, ...] = ()  # `@patchwarden WORD` on an issue asks for this fixer
    closes_issue: bool = True  # its pull request says "Fixes #N"
    section: str | None = None  # its key in .github/patchwarden.yml
    settings: type[BaseModel] | None = None  # that section's schema
    # Builds it for `run --fixer` and a command word; None: only its own job builds it.
    build: Callable[[Settings, Made], Fixer] | None = None

    def stamp(self, outcome: FixOutcome) -> FixOutcome:
        """``outcome`` with what the policy reads of this fixer."""
        return outcome.model_copy(
            update={"category": self.category, "model": self.model, "about": self.reason}
        )


class Fixer(abc.ABC):
    name: ClassVar[str]
    # A fixer a person or a job can choose has a record (app/fixers/registry.py); the
    # wrappers (auto, carry) and the llm fixer's two strategies have none.
    record: ClassVar[FixerRecord | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("record") is not None:
            cls.name = cls.__dict__["record"].name

    async def __call__(self, ctx: FixContext) -> FixOutcome:
        """What :class:`~app.sessions.session.SessionRunner` calls: the outcome carries
        this fixer's record."""
        outcome = await self.fix(ctx.task, ctx, ctx.budget)
        if self.record is not None and outcome.fixer == self.name:
            return self.record.stamp(outcome)
        return outcome

    @abc.abstractmethod
    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        """Edit ``workspace.tree`` for ``task`` within ``budget``."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release what the fixer holds (a model client's connections)."""

    def gave_up(self, reason: str, **fields: Any) -> FixOutcome:
        return FixOutcome(fixer=self.name, ok=False, reason=reason, **fields)
