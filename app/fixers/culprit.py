"""The ``revert`` fixer: find the commit that broke the default branch, prepare its revert.

For an ``alert`` job (a check failed on the default branch) the session's base is the
failing commit. Then:

1. **Reproduce.** The check's test command (``revert.checks`` in the repository's
   config, else its test command) runs ``revert.reruns`` times on the failing commit
   (after the first, only the tests that failed in it). The failure is *which tests
   fail*: the ids that fail or error in every run (from the JUnit report any pytest
   writes). Failing some of the time is a flaky test and ends
   the job (``final``: no other fixer is tried); never failing means there is nothing
   to revert. A command with no per-test report falls back to its exit status.
2. **Last good commit.** The caller's (``Task.good``, e.g. the last green check), or
   found by testing first-parent ancestors 1, 2, 4, 8 … commits back.
3. **Bisect** over the first-parent history between them (a merged pull request is
   blamed as a whole, and reverted with ``-m 1``). Each probe is classified:
   *bad* when one of the failing tests fails again, *good* when none does, and
   *skipped* when the probe cannot build or collect what the failing commit could
   (a collection error elsewhere, no report at all) — never "bad" for that.
4. **Revert.** ``git revert --no-commit`` of the culprit on the session's tree; the
   session commits it with git's own revert message and verifies it like any patch.

Every probe is tested the way the base is: the throwaway clone is mounted at
``/workspace`` (where an editable install points), with the environment at ``/env``
and the files setup generated in place; once the failing tests are known, a probe runs
only them (pytest deselects the rest: app/sessions/selection.py), since its verdict
reads nothing else. When a probe's dependency files differ from
the base's, it gets its own environment (built once per set of inputs, cached).

All of the repository's code, and every git command on the throwaway clone, runs in
the sandbox: after sandboxed code has run in a repository, host-side git never
touches it again (a planted ``.git/config`` filter would run on the host). The host
reads only the probes' reports, and checks the culprit against its own git directory.

Over ~400 lines on purpose: one search (reproduce, last good, bisect, revert) and the
state it carries between its steps; its pure parts (``classify``, ``_next_probe``) are
tested alone.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from app.fixers.fixer_policy import RevertConfig, section
from app.fixers.interface import Fixer, FixerRecord
from app.git import run_git
from app.policy.evidence import TestRun
from app.sessions import junit
from app.sessions.environment import Environment, SetupFailed
from app.sessions.fix_context import FixContext
from app.sessions.process import Completed
from app.sessions.repo_commands import SETUP_PATHSPECS, detect
from app.sessions.reports import ReportError
from app.sessions.result import Culprit, FixOutcome
from app.sessions.sandbox import WORKSPACE, Mount
from app.sessions.selection import Selection, selecting
from app.sessions.task import Budget, Task
from app.sessions.test_command import (
    REPORTS_MOUNT,
    read_test_report,
    reported_test_command,
    tree_mounts,
)
from app.words import plural

_PR = (re.compile(r"^Merge pull request #(\d+)"), re.compile(r"\(#(\d+)\)\s*$"))
# git inside the sandbox: no hooks, no system config, quiet.
_GIT = (
    "git",
    "-c",
    "core.useReplaceRefs=false",
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
    record = FixerRecord(
        name="revert",
        reason="a git revert of one commit: the one bisect blamed, or the one named",
        category="revert",
        model=False,
        closes_issue=False,
        section="revert",
        settings=RevertConfig,
        build=lambda settings, made: RevertFixer(),
    )

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        config = section(workspace.base_tree, "revert", RevertConfig)
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
            return _own_command(ws)
        return self.gave_up(
            "no command reproduces the failure: set `test:` or `revert.checks` in "
            ".github/patchwarden.yml"
        )


def _own_command(ws: FixContext) -> list[str]:
    """The repository's test command as the culprit finder runs it: with its report."""
    return reported_test_command(ws.commands, ws.env_dir)[0]


Verdict = Literal["good", "bad", "skip"]


@dataclass(frozen=True)
class Probe:
    """What one run of the test command said: the ids that failed, or only a status."""

    verdict: Verdict
    why: str


def classify(run: TestRun, target: frozenset[str] | None, *, ok: bool) -> Probe:
    """Is the failure there in this run? (pure; table-tested)

    ``target``: the test ids that fail on the failing commit; None when the command
    gives no per-test report, and then its exit status decides. Probes run with
    ``--continue-on-collection-errors``, so a module that does not import at this
    commit does not hide the outcome of the failing tests themselves.
    """
    if target is None:
        return Probe("good", "passes") if ok else Probe("bad", "fails")
    if run.counts is None:
        return Probe("skip", "no test report: the tests could not run here")
    failing = sorted(t for t in target if run.outcomes.get(t) in ("failed", "errored"))
    if failing:
        more = f" and {len(failing) - 1} more" if len(failing) > 1 else ""
        return Probe("bad", f"{failing[0]}{more} fail again")
    if target & run.outcomes.keys():
        return Probe("good", "the failing tests pass")
    uncollected = junit.collection_errors(run)
    if uncollected:
        return Probe("skip", f"cannot collect {uncollected[0]} here")
    return Probe("good", "the failing tests are not there yet")


class _Search:
    """One culprit search: the throwaway clone, its sandbox runs, and what they found."""

    def __init__(
        self, fixer: RevertFixer, ws: FixContext, config: RevertConfig, test: list[str]
    ) -> None:
        self.fixer = fixer
        self.ws = ws
        self.config = config
        self.test = test
        # The repository's own test command asks its npm runner for a report
        # (reported_test_command): that runner's is read, and the command is shown as
        # the repository has it; a `revert.checks` command runs and shows as written.
        own = ws.commands.node_runner is not None and test == _own_command(ws)
        self.runner = ws.commands.node_runner if own else None
        # An npm project's `npm test` writes no report: a file there is not its own.
        self.reported = own or ws.commands.kind != "node"
        self.shown = shlex.join(ws.commands.test if own else test)
        self.bad = ws.workspace.base_sha
        self.clone = ws.workspace.root / "bisect"
        self.reports = ws.workspace.root / "bisect-reports"
        self.objects = ws.workspace.mirror / "objects"
        self.base_env: Environment | None = ws.environment
        self.envs: dict[str, Environment | None] = {}  # by probe sha
        self.setup_failed: set[str] = set()
        self.last_skip = "no report"  # why the last skipped probe was skipped
        self.target: frozenset[str] | None = None
        # Once reproduction named the failing tests, each probe runs only those.
        self.selection: Selection | None = None
        self.probes = 0
        self.bisect_steps = 0
        self.log: list[str] = []
        self.last_bad = self.bad  # the nearest commit known to fail above the good one
        self.monitoring = False  # a monitoring alert, not a failing check

    async def run(self, task: Task) -> FixOutcome:
        self.monitoring = task.monitoring
        if task.culprit:
            return await self._targeted(task.culprit, task.instructions)
        await self._make_clone()
        await self._reproduce()
        good = await self._last_good(task.good)
        culprit = await self._bisect(good)
        return await self._revert(culprit, good, "\n".join(self.log) + "\n")

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
        reason = why.strip().rstrip(".") or "asked for"
        return await self._revert(sha, parent, "", why=f"{reason}.")

    # -- the steps -------------------------------------------------------------
    async def _make_clone(self) -> None:
        """A throwaway repository borrowing the mirror's objects, checked out at ``bad``."""
        ws = self.ws.workspace
        git_dir = self.clone / ".git"
        await run_git(["init", "--quiet", str(self.clone)], env=ws.env)
        (git_dir / "objects" / "info" / "alternates").write_text(str(self.objects) + "\n")
        gd = ["--git-dir", str(git_dir), "--work-tree", str(self.clone)]
        await run_git([*gd, "update-ref", "refs/heads/failing", self.bad], env=ws.env)
        await run_git([*gd, "symbolic-ref", "HEAD", "refs/heads/failing"], env=ws.env)
        await run_git([*gd, "read-tree", "--reset", "-u", "HEAD"], env=ws.env)
        self.reports.mkdir()
        for folder in (self.clone, self.reports):
            self.ws.sandbox.prepare_writable(folder)

    async def _reproduce(self) -> None:
        runs = self.config.reruns
        self.ws.progress(f"fix: running `{self.shown}` {runs} times on {self.bad[:12]}")
        self.envs[self.bad] = self.base_env
        if self.base_env is not None:
            self._place_generated(self.base_env)
        results = [await self._tests(self.bad, name="reproduce")]
        if results[0][0].counts is not None and _bad_ids(results[0][0]):
            self._select(_bad_ids(results[0][0]))  # the runs after: the failing tests only
        results += [await self._tests(self.bad, name="reproduce") for _ in range(runs - 1)]
        self.selection = None
        reported = all(r.counts is not None for r, _ in results)
        failing_runs = [r for r, done in results if (_bad_ids(r) if reported else not done.ok)]
        where = f"on {self.bad[:12]}"
        if not failing_runs:
            # A failing check that passes here is a flake or the runner's trouble: no
            # fixer should answer it. A monitoring alert's tests pass as a rule, so
            # another fixer (the llm, where allowed) may still try.
            raise _Stop(
                self.fixer.gave_up(
                    f"the failure does not reproduce: `{self.shown}` passed {runs} of {runs} "
                    f"runs {where}; there is nothing to revert",
                    final=not self.monitoring,
                )
            )
        flaky = len(failing_runs) < runs
        if reported and not flaky:
            common = frozenset.intersection(*(frozenset(_bad_ids(r)) for r, _ in results))
            flaky = not common
            self.target = common
        if flaky:
            raise _Stop(
                self.fixer.gave_up(
                    f"flaky: `{self.shown}` failed {len(failing_runs)} of {runs} runs {where}"
                    + ("" if len(failing_runs) < runs else ", each time with other tests")
                    + ". A flaky test is not a broken commit, so nothing is reverted; the "
                    "test needs a human (or a quarantine)",
                    final=True,
                )
            )
        if self.target is not None:
            shown = ", ".join(sorted(self.target)[:3])
            more = f" and {len(self.target) - 3} more" if len(self.target) > 3 else ""
            self.log.append(f"# failing on {self.bad}: {shown}{more}")
            self._select(self.target)  # a probe's verdict reads only these tests

    def _select(self, ids: Iterable[str]) -> None:
        """The test runs from now on run only ``ids`` (pytest deselects the others)."""
        folder = self.ws.workspace.root / "bisect-selection"
        folder.mkdir(exist_ok=True)
        self.selection = selecting(ids, folder)
        self.ws.sandbox.prepare_writable(folder)

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
            self.log.append(f"git bisect good {sha} # given")
            return sha
        step = 1
        while step < len(history):
            candidate = history[step]
            self.ws.progress(f"fix: looking for a passing commit: {step} back ({candidate[:12]})")
            probe = await self._probe(candidate, name="probe")
            self.probes += 1
            if probe.verdict == "good":
                return candidate
            if probe.verdict == "bad":
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

    async def _bisect(self, good: str) -> str:
        """Binary search between ``good`` and the nearest known-bad commit, skipping
        probes that cannot build; the first bad commit."""
        span = (
            await self._host_git("rev-list", "--first-parent", f"{good}..{self.last_bad}")
        ).split()  # newest first: span[0] is bad
        self.ws.progress(
            f"fix: bisecting {len(span)} commits between {good[:12]} and {self.last_bad[:12]}"
        )
        lo, hi = 0, len(span)  # span[lo] is bad; span[hi] (or good, at len) is good
        skipped: set[int] = set()
        while hi - lo > 1:
            mid = _next_probe(lo, hi, skipped)
            if mid is None:
                names = ", ".join(c[:12] for c in span[lo:hi])
                raise _Stop(
                    self.fixer.gave_up(
                        f"bisect cannot tell which of {names} broke `{self.shown}`: the "
                        f"commits between could not be tested ({self.last_skip}); "
                        "not reverting"
                    )
                )
            probe = await self._probe(span[mid], name="bisect")
            self.bisect_steps += 1
            if probe.verdict == "skip":
                skipped.add(mid)
            elif probe.verdict == "good":
                hi = mid
            else:
                lo = mid
        culprit = span[lo]
        subject = (await self._host_git("log", "-1", "--format=%s", culprit)).strip()
        self.log.append(f"# first bad commit: [{culprit}] {subject}")
        return culprit

    async def _probe(self, sha: str, *, name: str) -> Probe:
        # Nothing of the last probe stays: not its generated files (another environment
        # may have made them), nor anything its tests left (a planted conftest.py).
        await self._git("clean", "-ffdxq")
        checkout = await self._git("checkout", "--quiet", "--force", sha)
        env = await self._environment(sha) if checkout.ok else None
        if not checkout.ok:
            probe = Probe("skip", f"git checkout failed: {checkout.stderr.strip()[:200]}")
        elif sha in self.setup_failed:
            probe = Probe("skip", "its own setup failed: it does not build here")
        else:
            if env is not None:
                self._place_generated(env)
            run, done = await self._tests(sha, name=name)
            probe = classify(run, self.target, ok=done.ok)
        self.log.append(f"git bisect {probe.verdict} {sha} # {probe.why}")
        if probe.verdict == "skip":
            self.last_skip = probe.why
        return probe

    async def _environment(self, sha: str) -> Environment | None:
        """The environment a probe of ``sha`` runs with: the base's, unless the commit's
        dependency files differ (then its own, built once per set of inputs)."""
        if sha in self.envs:
            return self.envs[sha]
        ws = self.ws.workspace
        changed = await ws.changed_between(self.bad, sha, SETUP_PATHSPECS)
        env = self.base_env
        if changed and self.ws.environments is not None:
            tree = ws.root / f"setup-{sha[:12]}"
            await ws.checkout_copy(sha, tree)
            self.ws.sandbox.prepare_writable(tree)
            commands = detect(
                tree,
                base_python=self.ws.sandbox.toolchain.base_python,
                overrides=self.ws.spec.commands,
            )
            self.ws.progress(f"fix: {sha[:12]} changes {', '.join(changed[:3])}: its own setup")
            try:
                env = await self.ws.environments.ensure(
                    ws.repo,
                    commands,
                    tree,
                    steps=self.ws.steps,
                    secrets=self.ws.secrets,
                    version=await ws.scm_version(sha),
                )
            except SetupFailed:
                env = None
                self.setup_failed.add(sha)  # its probe is skipped, never judged
        self.envs[sha] = env
        return env

    def _place_generated(self, env: Environment) -> None:
        """The files setup generated, into the clone (host side, never through a link)."""
        env.apply(self.clone)
        self.ws.sandbox.prepare_writable(self.clone)

    def _failure(self) -> str:
        if not self.target:
            return f"`{self.shown}` fails"
        names = sorted(self.target)
        more = f" and {plural(len(names) - 1, 'more test')}" if len(names) > 1 else ""
        return f"`{names[0]}`{more} of `{self.shown}` {'fail' if more else 'fails'}"

    async def _revert(self, sha: str, good: str, log: str, *, why: str | None = None) -> FixOutcome:
        parents = (await self._host_git("rev-list", "--parents", "-n", "1", sha)).split()[1:]
        subject = (await self._host_git("log", "-1", "--format=%s", sha)).strip()
        author = (await self._host_git("log", "-1", "--format=%an <%ae>", sha)).strip()
        pr = next((int(m.group(1)) for p in _PR if (m := p.search(subject))), None)
        runs, tested = self.config.reruns, self.config.reruns + self.probes + self.bisect_steps
        evidence = (
            ""
            if why is not None
            else f"the first commit on which {self._failure()}. The failure reproduced in "
            f"{runs} of {runs} runs on {self.bad[:12]}; {good[:12]} passes; {self._search()} "
            f"({tested} test runs in all)."
        )
        culprit = Culprit(
            sha=sha,
            subject=subject,
            author=author,
            pull_request=pr,
            merge=len(parents) > 1,
            good=good,
            tested=0 if why is not None else tested,
            bisect_log=log[-20_000:],
            evidence=evidence,
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
        summary = f"Reverts {sha[:12]} ({subject}) by {author}{by_pr}: {why or evidence}"
        return FixOutcome(
            fixer=self.fixer.name,
            summary=summary,
            commit_message=f'Revert "{subject}"\n\n{body}\n',
            culprit=culprit,
        )

    # -- helpers ---------------------------------------------------------------
    def _search(self) -> str:
        """What the search for the culprit ran: looking back for a passing commit, then
        bisecting what was left between (which may be nothing)."""
        back = f"{plural(self.probes, 'commit')} tested looking back for it"
        if not self.probes:
            back = "it was given"
        if not self.bisect_steps:
            return f"{back}, and no commit was left between them to bisect"
        return f"{back}, then {plural(self.bisect_steps, 'bisect step')} between them"

    async def _tests(self, sha: str, *, name: str) -> tuple[TestRun, Completed]:
        """The test command on the clone at /workspace, with the JUnit report any pytest
        writes read back (per-test outcomes), with ``sha``'s environment."""
        for old in self.reports.iterdir():
            old.unlink()
        chosen = self.selection
        env = self.envs.get(sha, self.base_env)
        _, variables = reported_test_command(
            self.ws.commands,
            env.path if env else None,
            addopts=chosen.addopts if chosen else (),
        )
        done = await self.ws.run(
            self.test,
            name=name,
            env={**variables, **(chosen.env if chosen else {})},
            mounts=[
                *self._mounts(env),
                Mount(self.reports, REPORTS_MOUNT, writable=True),
                *(chosen.mounts if chosen else ()),
            ],
            cwd=WORKSPACE,
            timeout=self.ws.timeouts.tests,
        )
        run = TestRun(exit_code=done.exit_code, timed_out=done.timed_out)
        # no usable report: the probe is skipped (or judged by its status)
        with contextlib.suppress(ReportError):
            if self.reported:
                run = read_test_report(self.runner, self.reports, run)
        return run, done

    def _mounts(self, env: Environment | None) -> list[Mount]:
        return [
            *tree_mounts(self.clone, env.path if env is not None else None),
            Mount(self.objects, str(self.objects)),
        ]

    async def _git(self, *args: str, timeout: float = 120.0) -> Completed:  # noqa: ASYNC109
        """git on the throwaway clone, in the sandbox (never on the host)."""
        return await self.ws.run(
            [*_GIT, *args],
            name="git " + (args[0] if args else ""),
            mounts=self._mounts(None),
            cwd=WORKSPACE,
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


def _bad_ids(run: TestRun) -> list[str]:
    return [t for t, o in run.outcomes.items() if o in ("failed", "errored")]


def _next_probe(lo: int, hi: int, skipped: set[int]) -> int | None:
    """The untested index strictly between ``lo`` and ``hi`` nearest their middle."""
    mid = (lo + hi) // 2
    for distance in range(hi - lo):
        for candidate in (mid - distance, mid + distance):
            if lo < candidate < hi and candidate not in skipped:
                return candidate
    return None
