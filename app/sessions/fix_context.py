"""What a fixer is given (``FixContext``): the tree to edit, the repository's commands
and environment, and a way to run commands in the sandbox, each recorded as a step."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.sessions.environment import Environment, EnvironmentBuilder
from app.sessions.process import Completed
from app.sessions.repo_commands import RepoCommands
from app.sessions.result import FixOutcome, Step
from app.sessions.sandbox import WORKSPACE, Mount, Sandbox
from app.sessions.task import Budget, Progress, SessionSpec, Task, quiet
from app.sessions.test_command import repo_test_command, tree_mounts
from app.sessions.verify import Timeouts, make_step
from app.sessions.workspace import Workspace


@dataclass
class FixContext:
    """What a fixer gets: the tree to edit and a way to run commands in the sandbox."""

    spec: SessionSpec
    tree: Path  # host path of the tree; edits here become the patch
    commands: RepoCommands
    sandbox: Sandbox
    environment: Environment | None  # the repository's, from the setup phase
    timeouts: Timeouts
    secrets: list[str]
    workspace: Workspace  # host-side git on the session's repository (never sandboxed)
    progress: Progress = quiet
    steps: list[Step] = field(default_factory=list)
    environments: EnvironmentBuilder | None = None  # for other commits (the culprit finder)

    @property
    def env_dir(self) -> Path | None:
        """Where the environment is on the host (mounted at /env); None without one."""
        return self.environment.path if self.environment is not None else None

    @property
    def base_tree(self) -> Path:
        """The base commit's tree as it was (trusted: the repository's configuration is
        read from here, never from the tree a fixer edits)."""
        return self.workspace.base_tree

    @property
    def task(self) -> Task:
        return self.spec.task

    @property
    def budget(self) -> Budget:
        return self.spec.budget

    @property
    def mounts(self) -> list[Mount]:
        return tree_mounts(self.tree, self.env_dir)

    async def run(
        self,
        argv: Sequence[str],
        *,
        name: str = "fix",
        timeout: float | None = None,  # noqa: ASYNC109 - the sandbox kills the tree
        env: Mapping[str, str] | None = None,
        mounts: Sequence[Mount] | None = None,
        cwd: str = WORKSPACE,
        output_bytes: int | None = None,
        keep_stdout: bool = True,
    ) -> Completed:
        """Run ``argv`` in the sandbox (no network) and record the step; by default on
        the tree at /workspace with the repository's environment at /env. A command
        whose stdout is data to parse (``output_bytes`` raised for it) should not keep
        it in the stored step (``keep_stdout=False``)."""
        limits = None
        if output_bytes is not None:
            limits = replace(self.sandbox.limits, output_bytes=output_bytes)
        done = await self.sandbox.run(
            argv,
            mounts=self.mounts if mounts is None else mounts,
            cwd=cwd,
            env=env,
            timeout=timeout or self.timeouts.fix,
            limits=limits,
        )
        self.steps.append(
            make_step(
                done,
                name=name,
                phase="fix",
                tree="head" if mounts is None else None,  # elsewhere: not the patch's tree
                secrets=self.secrets,
                include_stdout=keep_stdout,
            )
        )
        return done

    async def run_tests(self, extra: Sequence[str] = (), *, name: str = "fix-tests") -> Completed:
        """The repository's test command (plus ``extra``) on the tree, in the sandbox."""
        argv, env = repo_test_command(self.commands, self.env_dir, extra)
        return await self.run(argv, name=name, env=env, timeout=self.timeouts.tests)

    async def changed_paths(self) -> list[str]:
        """Paths of the tree that differ from the base commit (untracked ones included)."""
        return await self.workspace.changed_paths()

    async def restore(self, paths: Sequence[str]) -> None:
        """Put ``paths`` back as the base commit has them (new files are deleted)."""
        await self.workspace.restore(paths)


FixerCall = Callable[[FixContext], Awaitable[FixOutcome]]
