"""The ``carry`` fixer: an already scored patch commit, carried onto a newer base.

``update`` jobs use it when the base branch moved under a Patchwarden pull request:
the session cherry-picks the patch commit (kept in the mirror, whose objects the
session's git directory borrows) onto the new base, then verifies it and the policy
scores it again, as a new patch. A conflict ends the job with a clear reason.
"""

from __future__ import annotations

from app.fixers import registry
from app.fixers.interface import Fixer
from app.git import run_git
from app.sessions.fix_context import FixContext
from app.sessions.result import FixOutcome
from app.sessions.task import Budget, Task


class CarryFixer(Fixer):
    """Carries an already scored patch commit onto a newer base (``update`` jobs): the
    session verifies and the policy scores it again, as a new patch."""

    name = "carry"

    def __init__(self, commit: str, *, carried: FixOutcome | None) -> None:
        """``carried``: the outcome that made the patch (None: its result is gone); the
        change is scored as its fixer's again, and a security update's bump stays one
        (its rules hold it again)."""
        self.commit = commit
        self.carried = registry.stamped(carried) if carried is not None else None

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        ws = workspace.workspace
        gd = ["--git-dir", str(ws.git_dir), "--work-tree", str(ws.tree)]
        done = await run_git(
            [*gd, "cherry-pick", "--no-commit", self.commit], env=ws.env, check=False
        )
        if done.returncode != 0:
            await run_git([*gd, "cherry-pick", "--abort"], env=ws.env, check=False)
            await workspace.restore(await workspace.changed_paths())
            return self.gave_up(
                f"the patch {self.commit[:12]} no longer applies on the new base; ask for a new fix"
            )
        await run_git([*gd, "cherry-pick", "--quit"], env=ws.env, check=False)
        await run_git([*gd, "reset", "--quiet"], env=ws.env, check=False)
        message = await ws.git("log", "-1", "--format=%B", self.commit)
        c = self.carried
        if c is None:  # scored as a fixer with no record: contained, as a model's
            return FixOutcome(fixer=self.name, commit_message=message.strip())
        return FixOutcome(
            fixer=c.fixer,
            category=c.category,
            model=c.model,
            about=c.about,
            summary=c.summary,
            commit_message=message.strip(),
            bump=c.bump,
        )
