"""The ``carry`` fixer: an already scored patch commit, carried onto a newer base.

``update`` jobs use it when the base branch moved under a Patchwarden pull request:
the session cherry-picks the patch commit (kept in the mirror, whose objects the
session's git directory borrows) onto the new base, then verifies it and the policy
scores it again, as a new patch. A conflict ends the job with a clear reason.
"""

from __future__ import annotations

from app.fixers.interface import Fixer
from app.git import run_git
from app.policy.evidence import Bump
from app.sessions.fix_context import FixContext
from app.sessions.result import FixOutcome
from app.sessions.task import Budget, Task


class CarryFixer(Fixer):
    """Carries an already scored patch commit onto a newer base (``update`` jobs): the
    session verifies and the policy scores it again, as a new patch."""

    name = "carry"

    def __init__(
        self, commit: str, *, fixer_name: str, summary: str, bump: Bump | None = None
    ) -> None:
        self.commit = commit
        self.fixer_name = fixer_name  # scored as the fixer that wrote the patch
        self.summary = summary
        self.bump = bump  # a security update's, carried with it (its rules hold it again)

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
        return FixOutcome(
            fixer=self.fixer_name,
            summary=self.summary,
            commit_message=message.strip(),
            bump=self.bump,
        )
