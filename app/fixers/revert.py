"""The ``revert`` fixer: find the commit that broke the default branch, prepare its revert.

For an ``alert`` job (a check failed on the default branch) the session's base is the
failing commit. Then:

1. **Reproduce.** The check's test command (``revert.checks`` in the repository's
   config, else its test command) runs ``revert.reruns`` times on the failing commit.
   Failing every time is a real failure; failing some of the time is a flaky test and
   ends the job (``final``: no other fixer is tried); never failing means there is
   nothing to revert.
2. **Last good commit.** The caller's (``Task.good``, e.g. the last green check), or
   found by testing first-parent ancestors 1, 2, 4, 8 … commits back.
3. **Bisect.** ``git bisect start --first-parent`` and ``git bisect run`` between it and
   the nearest commit above it known to fail (the failing commit, or the last probe),
   so a pull request's merge commit is blamed as a whole (and reverted with ``-m 1``).
4. **Revert.** ``git revert --no-commit`` of the culprit on the session's tree; the
   session commits it with git's own revert message and verifies it like any patch.

All of the repository's code, and every git command on the throwaway bisect clone,
runs in the sandbox: after sandboxed code has run in a repository, host-side git
never touches it again (a planted ``.git/config`` filter would run on the host). The
host reads only what the sandbox printed, and checks the culprit against its own
git directory before trusting it.
"""

from __future__ import annotations

import re
import shlex

from app.fixers.base import Fixer
from app.fixers.config import RevertConfig, fixer_settings
from app.sessions.commands import ENV_MOUNT
from app.sessions.result import Culprit, FixOutcome
from app.sessions.sandbox import Completed, Mount
from app.sessions.session import Budget, FixContext, Task
from app.sessions.verify import repo_test_command
from app.sessions.workspace import run_git

BISECT_MOUNT = "/bisect"
_FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.MULTILINE)
# One line per commit `git bisect run` tested (the `# bad:`/`# good:` marks also
# record the two commits `bisect start` was given, which it did not test).
_BISECT_STEP = re.compile(r"^git bisect (?:good|bad) ", re.MULTILINE)
_PR = (re.compile(r"^Merge pull request #(\d+)"), re.compile(r"\(#(\d+)\)\s*$"))
# git inside the sandbox: no hooks, no system config, quiet.
_GIT = (
    "git",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "safe.directory=*",
    "-c",
    "advice.detachedHead=false",
)


class _Stop(Exception):
    """The search ends here; ``outcome`` says why."""

    def __init__(self, outcome: FixOutcome) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


class RevertFixer(Fixer):
    name = "revert"

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        config = fixer_settings(workspace.workspace.base_tree).revert
        if task.culprit:  # the caller names the commit: nothing to reproduce or search
            return await _Search(self, workspace, config, []).run(task)
        test = self._test_command(task, workspace, config)
        if isinstance(test, FixOutcome):
            return test
        try:
            return await _Search(self, workspace, config, test).run(task)
        except _Stop as stop:
            return stop.outcome

    def _test_command(
        self, task: Task, ws: FixContext, config: RevertConfig
    ) -> list[str] | FixOutcome:
        if task.check and task.check in config.checks:
            try:
                return shlex.split(config.checks[task.check])
            except ValueError as exc:
                return self.gave_up(f"revert.checks[{task.check!r}] does not parse: {exc}")
        if ws.commands.test:
            argv, _ = repo_test_command(ws.commands, ws.env_dir)
            return argv
        return self.gave_up(
            "no command reproduces the failure: set `test:` or `revert.checks` in "
            ".github/patchwarden.yml"
        )


class _Search:
    """One culprit search: the bisect clone, its sandbox runs, and what they found."""

    def __init__(
        self, fixer: RevertFixer, ws: FixContext, config: RevertConfig, test: list[str]
    ) -> None:
        self.fixer = fixer
        self.ws = ws
        self.config = config
        self.test = test
        self.shown = shlex.join(test)
        self.bad = ws.workspace.base_sha
        self.clone = ws.workspace.root / "bisect"
        objects = ws.workspace.mirror / "objects"
        self.mounts = [Mount(self.clone, BISECT_MOUNT, writable=True), Mount(objects, str(objects))]
        if ws.env_dir is not None:
            self.mounts.append(Mount(ws.env_dir, ENV_MOUNT))
        _, self.env = repo_test_command(ws.commands, ws.env_dir)
        self.probes = 0
        self.bisect_steps = 0
        self.last_bad = self.bad  # the nearest commit known to fail above the good one

    async def run(self, task: Task) -> FixOutcome:
        if task.culprit:
            return await self._targeted(task.culprit, task.instructions)
        await self._make_clone()
        await self._reproduce()
        good = await self._last_good(task.good)
        culprit, log = await self._bisect(good)
        return await self._revert(culprit, good, log)

    async def _targeted(self, rev: str, why: str) -> FixOutcome:
        """Revert the commit the caller names (no search): it must be on the first-parent
        history of the base, within ``revert.max_commits``."""
        sha = await self._resolve(rev)
        history = await self._first_parents()
        if sha is None or sha not in history:
            return self.fixer.gave_up(
                f"{rev[:12]} is not on the first-parent history of {self.bad[:12]} within "
                f"{self.config.max_commits} commits; not reverting"
            )
        parent = (await self._host_git("rev-parse", f"{sha}^")).strip()
        reason = why.strip() or "asked for"
        return await self._revert(sha, parent, "", why=f"{reason}.")

    # -- the steps -------------------------------------------------------------
    async def _make_clone(self) -> None:
        """A throwaway repository borrowing the mirror's objects, checked out at ``bad``."""
        ws = self.ws.workspace
        git_dir = self.clone / ".git"
        await run_git(["init", "--quiet", str(self.clone)], env=ws.env)
        (git_dir / "objects" / "info" / "alternates").write_text(str(ws.mirror / "objects") + "\n")
        gd = ["--git-dir", str(git_dir), "--work-tree", str(self.clone)]
        await run_git([*gd, "update-ref", "refs/heads/failing", self.bad], env=ws.env)
        await run_git([*gd, "symbolic-ref", "HEAD", "refs/heads/failing"], env=ws.env)
        await run_git([*gd, "read-tree", "--reset", "-u", "HEAD"], env=ws.env)
        self.ws.sandbox.prepare_writable(self.clone)

    async def _reproduce(self) -> None:
        runs = self.config.reruns
        self.ws.progress(f"fix: running `{self.shown}` {runs} times on {self.bad[:12]}")
        failed = 0
        for _ in range(runs):
            done = await self._tests(name="reproduce")
            failed += not done.ok
        where = f"on {self.bad[:12]}"
        if failed == 0:
            raise _Stop(
                self.fixer.gave_up(
                    f"the failure does not reproduce: `{self.shown}` passed {runs} of {runs} "
                    f"runs {where}; there is nothing to revert",
                    final=True,
                )
            )
        if failed < runs:
            raise _Stop(
                self.fixer.gave_up(
                    f"flaky: `{self.shown}` failed {failed} of {runs} runs {where}. A flaky "
                    "test is not a broken commit, so nothing is reverted; the test needs a "
                    "human (or a quarantine)",
                    final=True,
                )
            )

    async def _last_good(self, given: str | None) -> str:
        history = await self._first_parents()
        if given:
            sha = await self._resolve(given)
            if sha is None or sha not in history[1:]:
                raise _Stop(
                    self.fixer.gave_up(
                        f"the last good commit {given!r} is not a first-parent ancestor of "
                        f"{self.bad[:12]} within {self.config.max_commits} commits"
                    )
                )
            return sha
        step = 1
        while step < len(history):
            candidate = history[step]
            self.ws.progress(f"fix: looking for a passing commit: {step} back ({candidate[:12]})")
            if (await self._checkout(candidate)).ok:
                self.probes += 1
                if (await self._tests(name="probe")).ok:
                    return candidate
                self.last_bad = candidate  # bisect need not look above it
            if step == len(history) - 1:
                break
            step = min(step * 2, len(history) - 1)
        raise _Stop(
            self.fixer.gave_up(
                f"no passing commit in the {len(history) - 1} first-parent commits before "
                f"{self.bad[:12]} (revert.max_commits is {self.config.max_commits}): the "
                "failure is older than what bisect may search"
            )
        )

    async def _bisect(self, good: str) -> tuple[str, str]:
        bad = self.last_bad
        self.ws.progress(f"fix: git bisect run between {good[:12]} and {bad[:12]}")
        start = await self._git("bisect", "start", "--first-parent", bad, good)
        if not start.ok:
            raise _Stop(self.fixer.gave_up(f"git bisect start failed: {start.stderr.strip()}"))
        seconds = int(self.ws.timeouts.tests)
        run = await self._git(
            "bisect",
            "run",
            "timeout",
            "-k",
            "5",
            str(seconds),
            *self.test,
            timeout=self.ws.timeouts.fix,
        )
        log = await self._git("bisect", "log")
        found = _FIRST_BAD.search(run.stdout)
        if not run.ok or found is None:
            tail = (run.stdout + run.stderr).strip()[-800:]
            raise _Stop(self.fixer.gave_up(f"git bisect run found no culprit: {tail}"))
        self.bisect_steps = len(_BISECT_STEP.findall(log.stdout))
        culprit = found.group(1)
        # Trust, but check: the culprit must be a first-parent commit in (good, bad].
        span = await self._host_git("rev-list", "--first-parent", f"{good}..{self.bad}")
        if culprit not in span.split():
            raise _Stop(
                self.fixer.gave_up(
                    f"bisect named {culprit[:12]}, which is not between {good[:12]} and "
                    f"{self.bad[:12]} on the first-parent history; not reverting"
                )
            )
        return culprit, log.stdout

    async def _revert(self, sha: str, good: str, log: str, *, why: str | None = None) -> FixOutcome:
        parents = (await self._host_git("rev-list", "--parents", "-n", "1", sha)).split()[1:]
        subject = (await self._host_git("log", "-1", "--format=%s", sha)).strip()
        author = (await self._host_git("log", "-1", "--format=%an <%ae>", sha)).strip()
        pr = next((int(m.group(1)) for p in _PR if (m := p.search(subject))), None)
        culprit = Culprit(
            sha=sha,
            subject=subject,
            author=author,
            pull_request=pr,
            merge=len(parents) > 1,
            good=good,
            tested=0 if why is not None else self.config.reruns + self.probes + self.bisect_steps,
            bisect_log=log[-20_000:],
        )
        self.ws.progress(f"fix: reverting {sha[:12]} {subject[:60]}")
        ws = self.ws.workspace
        gd = ["--git-dir", str(ws.git_dir), "--work-tree", str(ws.tree)]
        mainline = ["-m", "1"] if culprit.merge else []
        done = await run_git(
            [*gd, "revert", "--no-commit", *mainline, sha], env=ws.env, check=False
        )
        if done.returncode != 0:
            await run_git([*gd, "revert", "--abort"], env=ws.env, check=False)
            await self.ws.restore(await self.ws.changed_paths())
            conflict = done.stdout.decode("utf-8", "replace") + done.stderr.decode(
                "utf-8", "replace"
            )
            files = sorted(set(re.findall(r"Merge conflict in (\S+)", conflict)))
            return self.fixer.gave_up(
                f"the revert of {sha[:12]} ({subject}) conflicts with later changes"
                + (f" in {', '.join(files)}" if files else "")
                + "; a human has to untangle it",
                culprit=culprit,
            )
        await run_git([*gd, "revert", "--quit"], env=ws.env, check=False)
        if not await self.ws.changed_paths():
            return self.fixer.gave_up(
                f"reverting {sha[:12]} ({subject}) changes nothing: it is already undone",
                culprit=culprit,
            )
        body = f"This reverts commit {sha}"
        body += f", reversing\nchanges made to {parents[0]}." if culprit.merge else "."
        by_pr = f", PR #{pr}" if pr else ""
        runs = self.config.reruns
        summary = (
            f"Reverts {sha[:12]} ({subject}) by {author}{by_pr}: {why}"
            if why is not None
            else f"Reverts {sha[:12]} ({subject}) by {author}{by_pr}: the first commit on which "
            f"`{self.shown}` fails. The failure reproduced in {runs} of {runs} runs on "
            f"{self.bad[:12]}; {good[:12]} passes; git bisect took {self.bisect_steps} "
            f"steps between them ({culprit.tested} test runs in all)."
        )
        return FixOutcome(
            fixer=self.fixer.name,
            summary=summary,
            commit_message=f'Revert "{subject}"\n\n{body}\n',
            culprit=culprit,
        )

    # -- helpers ---------------------------------------------------------------
    async def _tests(self, *, name: str) -> Completed:
        return await self.ws.run(
            self.test,
            name=name,
            env=self.env,
            mounts=self.mounts,
            cwd=BISECT_MOUNT,
            timeout=self.ws.timeouts.tests,
        )

    async def _checkout(self, sha: str) -> Completed:
        return await self._git("checkout", "--quiet", "--force", sha)

    async def _git(self, *args: str, timeout: float = 120.0) -> Completed:  # noqa: ASYNC109
        """git on the bisect clone, in the sandbox (never on the host)."""
        return await self.ws.run(
            [*_GIT, *args],
            name="git " + (args[0] if args else ""),
            env=self.env,
            mounts=self.mounts,
            cwd=BISECT_MOUNT,
            timeout=timeout,
        )

    async def _host_git(self, *args: str) -> str:
        """Host-side git on the session's own git directory (the trusted mirror's objects)."""
        return await self.ws.workspace.git(*args)

    async def _first_parents(self) -> list[str]:
        out = await self._host_git(
            "rev-list", "--first-parent", f"--max-count={self.config.max_commits + 1}", self.bad
        )
        return out.split()

    async def _resolve(self, rev: str) -> str | None:
        if rev.startswith("-") or any(ch.isspace() for ch in rev):
            return None
        out = await self.ws.workspace.git(
            "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False
        )
        return out.strip() or None
