"""One job, one coding session: workspace → setup → fix → verify → SessionResult.

::

    workspace  fresh tree/ and base/ of the base commit (mirror cache)
    setup      trusted: the base commit's own install command, network allowed,
               cached by the hash of its inputs, mounted read-only afterwards
    fix        untrusted: the fixer edits tree/; commands it runs are sandboxed,
               no network; the repository's tests run on base/ meanwhile
    commit     host-side git stages tree/ and commits it on the session branch
    verify     tests on tree/, ruff + bandit + semgrep over both trees' changed files
    result     a SessionResult, redacted; the session directory is removed

A session never talks to GitHub; the patch commit is kept in the mirror under
``refs/patchwarden/<branch>`` for the publish step.

Over ~400 lines on purpose: the phases read top to bottom in ``SessionRunner._session``,
in the order they run; each phase's work lives in its own module (``workspace``,
``environment``, ``verify``, ``junit``), and this one only sequences them.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from app.errors import PatchwardenError, RepoConfigError
from app.policy.evidence import (
    Bump,
    FindingsDelta,
    Scope,
    TestDelta,
    TestRun,
    bump_size,
    larger_bump,
)
from app.policy.features import Classifier
from app.policy.policy_model import KnownFixers, Policy
from app.redact import redact
from app.sessions import junit
from app.sessions.contain import Trees, contain
from app.sessions.environment import (
    Environment,
    EnvironmentBuilder,
    SetupFailed,
    distributions,
    npm_packages,
)
from app.sessions.files import read_confined, remove_confined
from app.sessions.fix_context import FixContext, FixerCall
from app.sessions.lockfiles import NPM_LOCKS, semver_key
from app.sessions.mirrors import WorkspaceCache
from app.sessions.pkgconfig import PackageConfig, host_package_config
from app.sessions.policyfile import DEFAULT_POLICY, policy_for_tree
from app.sessions.relock import relock_bump
from app.sessions.repo_commands import RepoCommands, detect
from app.sessions.reproduce import checks_reproduction, reproduced, test_files
from app.sessions.result import Diff, FixOutcome, ModuleScan, SessionResult, Step, Usage
from app.sessions.sandbox import Sandbox
from app.sessions.task import Progress, SessionSpec, quiet
from app.sessions.verify import (
    DEFAULT_RULES,
    Timeouts,
    Verifier,
)
from app.sessions.workspace import Workspace, branch_name
from app.words import plural

log = logging.getLogger(__name__)


class SessionRunner:
    def __init__(
        self,
        *,
        cache: WorkspaceCache,
        sandbox: Sandbox,
        fixers: KnownFixers,
        rules_dir: Path = DEFAULT_RULES,
        default_policy: Path = DEFAULT_POLICY,
        timeouts: Timeouts | None = None,
        packages: PackageConfig | None = None,
    ) -> None:
        """``packages``: the host's package configuration for the setup phase; by
        default read from this process's environment and pip's files
        (:func:`~app.sessions.pkgconfig.host_package_config`). ``fixers``: the fixers
        the policy file may name (app/fixers/registry.py's ``KNOWN``)."""
        self.cache = cache
        self.sandbox = sandbox
        self.rules_dir = rules_dir
        self.default_policy = default_policy
        self.fixers = fixers
        self.timeouts = timeouts or Timeouts()
        self.envs = cache.root / "envs"
        if packages is None:
            packages = host_package_config(
                os.environ, state_dir=cache.root / "pkgconfig", isolated=sandbox.isolated
            )
        self.packages = packages
        self.environments = EnvironmentBuilder(
            sandbox, root=self.envs, timeouts=self.timeouts, packages=packages
        )

    async def run(
        self, spec: SessionSpec, fixer: FixerCall, *, progress: Progress = quiet
    ) -> SessionResult:
        """Run the whole session; failures become a SessionResult with ``error``.

        ``progress`` hears one line per phase as it starts (and the fixer's own lines).
        """
        started_wall, started = time.time(), time.monotonic()
        branch = spec.branch or branch_name(spec.job_id, spec.task.title)
        secrets = [spec.remote.token] if spec.remote.token else []
        secrets += self.packages.secrets
        state = _State(base_sha=spec.base or "", branch=branch)
        ws: Workspace | None = None
        try:
            progress(f"workspace: {spec.remote.repo} at {spec.base or 'the default branch'}")
            ws = await self.cache.create(spec.remote, base=spec.base, branch=branch)
            state.base_sha = ws.base_sha
            await self._session(spec, ws, fixer, state, secrets, progress)
        except (PatchwardenError, OSError) as exc:
            state.error = redact(str(exc), known=secrets)
            state.status = "failed"
            state.error_kind = "config" if isinstance(exc, RepoConfigError) else None
            log.warning("session for %s failed: %s", spec.remote.repo, state.error)
        finally:
            # Work still running (the base tests when the fixer raised) is killed, and
            # awaited, before its directory goes.
            for task in state.pending:
                task.cancel()
            await asyncio.gather(*state.pending, return_exceptions=True)
            if ws is not None:
                await asyncio.to_thread(ws.remove)
        finished = time.monotonic()
        cpu = [s.usage.cpu_seconds for s in state.steps if s.usage.cpu_seconds is not None]
        return SessionResult(
            job_id=spec.job_id,
            repo=spec.remote.repo,
            base_sha=state.base_sha,
            branch=branch,
            head_sha=state.head_sha,
            status=state.status,
            error=state.error,
            error_kind=state.error_kind,
            sandbox=self.sandbox.info(),
            fix=state.fix,
            diff=state.diff,
            steps=state.steps,
            tests=state.tests,
            findings=state.findings,
            scope=state.scope,
            modules=state.modules,
            policy=state.policy,
            usage=Usage(
                wall_seconds=round(finished - started, 3),
                cpu_seconds=round(sum(cpu), 3) if cpu else None,
            ),
            started_at=started_wall,
            finished_at=started_wall + (finished - started),
        )

    async def _session(
        self,
        spec: SessionSpec,
        ws: Workspace,
        fixer: FixerCall,
        state: _State,
        secrets: list[str],
        progress: Progress,
    ) -> None:
        """The phases in the order they run; each step returns False when the session
        stops there (``state`` says why)."""
        run = await self._prepare(spec, ws, state, secrets, progress)
        if run is None:
            return
        fix = await self._fix(run, fixer)
        if fix is None or not await self._relock(run, fix):
            return
        head = await self._commit(run, run.state.fix or fix)
        if head is None or not await self._head_environment(run, head):
            return
        await self._verify(run)
        state.status = "patched"

    async def _prepare(
        self,
        spec: SessionSpec,
        ws: Workspace,
        state: _State,
        secrets: list[str],
        progress: Progress,
    ) -> _Run | None:
        """The policy first (an invalid one stops the job before anything is spent),
        the commands, then setup."""
        verifier = Verifier(
            self.sandbox,
            rules_dir=self.rules_dir,
            timeouts=self.timeouts,
            secrets=secrets,
            scratch=ws.root,
        )
        policy = policy_for_tree(ws.base_tree, default=self.default_policy, fixers=self.fixers)
        state.policy = policy
        commands = detect(
            ws.base_tree, base_python=self.sandbox.toolchain.base_python, overrides=spec.commands
        )
        for tree in (ws.tree, ws.base_tree):
            self.sandbox.prepare_writable(tree)
        env = await self._setup(spec, ws, commands, state, secrets, progress)
        if state.error is not None:
            return None
        return _Run(spec, ws, state, secrets, progress, verifier, policy, commands, env)

    async def _fix(self, run: _Run, fixer: FixerCall) -> FixOutcome | None:
        """The fixer edits tree/ while the base's tests run; a base whose tests cannot
        even collect stops the fixer (nothing it did could be judged). The fix, or None
        when the session stops."""
        spec, state, commands, progress = run.spec, run.state, run.commands, run.progress
        base_tests = None
        if commands.test:
            base_tests = asyncio.create_task(
                run.verifier.tests(run.ws.base_tree, run.env_dir, commands, label="base"),
                name=f"base-tests:{spec.remote.repo}",
            )
            state.pending.append(base_tests)
        ctx = self._fix_context(run)
        progress(f"fix: {spec.task.title}")

        async def fix_it() -> FixOutcome:
            return await fixer(ctx)

        fixing = asyncio.create_task(fix_it(), name=f"fixer:{spec.remote.repo}")
        state.pending.append(fixing)
        # An alert's base is the failing commit: its tests failing is the point.
        judge_base = base_tests is not None and spec.task.kind != "alert"
        stopped: Step | None = None
        try:
            if base_tests is not None and judge_base:
                await asyncio.wait({fixing, base_tests}, return_when=asyncio.FIRST_COMPLETED)
                if not fixing.done() and _broken(commands, *base_tests.result(), state):
                    stopped = base_tests.result()[0]
                    fixing.cancel()
                    await asyncio.gather(fixing, return_exceptions=True)
            fix = None if stopped else await fixing
        finally:
            state.steps.extend(ctx.steps)
        if stopped is not None or fix is None:
            progress(f"stop: {state.error}")
            state.steps.extend([stopped] if stopped else [])
            return None
        state.fix = fix = fix.redacted(run.secrets)
        if base_tests is not None:
            progress("verify: the tests on the base commit")
            step, run.base_run = await base_tests
            state.steps.append(step)
            if judge_base and _broken(commands, step, run.base_run, state):
                progress(f"stop: {state.error}")
                return None
        if not fix.ok:
            state.status, state.error = "failed", fix.reason or "the fixer gave up"
            state.tests = _delta(commands, run.base_run, None)
            return None
        return fix

    def _fix_context(self, run: _Run) -> FixContext:
        return FixContext(
            spec=run.spec,
            tree=run.ws.tree,
            commands=run.commands,
            sandbox=self.sandbox,
            environment=run.env,
            timeouts=self.timeouts,
            secrets=run.secrets,
            workspace=run.ws,
            progress=run.progress,
            environments=self.environments,
        )

    async def _relock(self, run: _Run, fix: FixOutcome) -> bool:
        """A security update's locks regenerated by the lock's own tool, with network:
        on a copy, and only its lock taken back."""
        if fix.bump is None or not fix.bump.locks:
            return True
        state, ws = run.state, run.ws
        run.progress(f"setup: regenerate {', '.join(fix.bump.locks)} (the lock's own tool)")
        relocked = await relock_bump(
            self.sandbox,
            self.environments.packages,
            fix.bump,
            tree=ws.tree,
            work=ws.root / "lock-head",
            seconds=self.timeouts.setup,
            secrets=run.secrets,
            version=await ws.scm_version(),
            steps=state.steps,
        )
        if isinstance(relocked, str):
            state.status = "failed"
            state.error = f"the lock was not regenerated, so nothing was published: {relocked}"
            return False
        state.fix = fix.model_copy(update={"bump": relocked})
        return True

    async def _commit(self, run: _Run, fix: FixOutcome) -> str | None:
        """Host-side git commits tree/ on the session branch: its sha, or None when the
        fixer changed nothing."""
        spec, state, ws = run.spec, run.state, run.ws
        title = (spec.task.title.strip().splitlines() or ["patch"])[0]
        subject = commit_subject(title)
        whole = f"{title}\n\n" if subject != title else ""
        message = fix.commit_message or (
            f"{subject}\n\n{whole}Patchwarden session, fixer {fix.fixer}."
        )
        head = await ws.commit_all(message, spec.author)
        if head is None:
            run.progress("commit: the fixer changed nothing")
            state.status = "no-change"
            state.tests = _delta(run.commands, run.base_run, None)
            return None
        state.head_sha = head
        state.diff = await ws.diff(head, known_secrets=run.secrets, allow=run.policy.secrets.allow)
        await ws.keep_branch(head)
        run.progress(
            f"commit: {head[:12]} on {ws.branch} ({plural(len(state.diff.files), 'file')}, "
            f"+{state.diff.lines_added} -{state.diff.lines_removed})"
        )
        run.progress("verify: the tests on the patch; ruff, bandit and semgrep on both trees")
        return head

    async def _head_environment(self, run: _Run, head: str) -> bool:
        """A security update changes what setup installs: the patch is tested with its
        own environment, never with the base's (the old version). Setup has the
        network: it runs on a patch of the manifests the fixer named, only."""
        state, fix, env = run.state, run.state.fix, run.env
        run.head_env_dir = run.env_dir
        if fix is None or fix.bump is None or env is None:
            return True
        others = sorted({f.path for f in state.diff.files} - set(fix.bump.files))
        if others:
            state.status = "failed"
            state.error = f"a security update may change its manifests only, not {others}"
            return False
        head_env = await self._patched_setup(
            run.spec,
            run.ws,
            run.commands,
            head,
            fix.bump,
            state,
            run.secrets,
            run.progress,
            base_env=env,
        )
        if head_env is None:
            return False
        state.fix = fix = fix.model_copy(update={"bump": _installed(fix.bump, env, head_env)})
        if _still_vulnerable(fix.bump, head_env, state):
            return False
        run.head_env_dir = head_env.path
        return True

    async def _verify(self, run: _Run) -> None:
        """The tests on the patch and the linters on both trees side by side; then the
        patch's new tests on the base code (did they fail there?)."""
        state, ws, commands, verifier = run.state, run.ws, run.commands, run.verifier
        is_test = Classifier(run.policy).is_test
        linters = asyncio.create_task(
            verifier.linters(
                ws.base_tree,
                ws.tree,
                state.diff,
                is_test=is_test,
                envs=(run.env_dir, run.head_env_dir),
            )
        )
        state.pending.append(linters)
        head_run: TestRun | None = None
        if commands.test:
            step, head_run = await verifier.tests(ws.tree, run.head_env_dir, commands, label="head")
            state.steps.append(step)
        lint_steps, state.findings = await linters
        state.steps.extend(lint_steps)
        state.tests = _delta(commands, run.base_run, head_run)
        if state.tests is not None:
            # Whether a new test could be checked against the base (pytest, an npm
            # runner), and should be (an alert's failing check shows the problem already).
            can = checks_reproduction(commands) and run.spec.task.kind != "alert"
            state.tests = state.tests.model_copy(update={"reproducible": can})
        new_tests = test_files(state.diff, Classifier(run.policy).is_test, commands)
        if state.tests is not None and head_run is not None and new_tests:
            # Last: it borrows the base tree, which the linters have finished with.
            run.progress(
                f"verify: the patch's tests on the base code ({plural(len(new_tests), 'file')})"
            )
            repro, shown = await reproduced(
                verifier,
                base_tree=ws.base_tree,
                head_tree=ws.tree,
                env_dir=run.env_dir,
                commands=commands,
                paths=new_tests,
                head=head_run,
            )
            state.tests = state.tests.model_copy(update={"reproduced": shown})
            state.steps.extend([repro] if repro else [])
        await self._contain(run)

    async def _contain(self, run: _Run) -> None:
        """The change's scope and its modules' values (app/sessions/contain.py); what
        they found to hide is masked in everything the result stores."""
        state, ws = run.state, run.ws
        if state.fix is None:
            return
        run.progress("verify: the change's scope, and the values its modules compute")
        trees = Trees(ws.base_tree, ws.tree, run.env_dir, run.head_env_dir)
        found = await contain(
            run.verifier,
            trees,
            task=run.spec.task,
            fix=state.fix,
            diff=state.diff,
            tests=state.tests,
            commands=run.commands,
            policy=run.policy,
        )
        state.scope, state.modules = found.scope, found.modules
        state.steps.extend(found.steps)
        diff = state.diff.model_copy(update={"secrets": [*state.diff.secrets, *found.secrets]})
        state.diff = diff
        if found.known or found.opaque:
            state.mask(found.known, found.opaque, allow=run.policy.secrets.allow)

    async def _setup(
        self,
        spec: SessionSpec,
        ws: Workspace,
        commands: RepoCommands,
        state: _State,
        secrets: list[str],
        progress: Progress,
    ) -> Environment | None:
        """The trusted setup phase (cached), then the files it generated placed in both
        trees; None when the repository has no setup. Sets ``state.error`` on failure."""
        version = await ws.scm_version() if commands.setup else None
        try:
            env = await self.environments.ensure(
                spec.remote.repo,
                commands,
                ws.base_tree,
                steps=state.steps,
                secrets=secrets,
                version=version,
                progress=progress,
            )
        except SetupFailed as exc:
            state.status, state.error = "failed", str(exc)
            return None
        if env is not None:
            for tree in (ws.base_tree, ws.tree):
                env.apply(tree)
                self.sandbox.prepare_writable(tree)
            ws.exclude(env.generated)
        return env

    async def _patched_setup(
        self,
        spec: SessionSpec,
        ws: Workspace,
        commands: RepoCommands,
        head: str,
        bump: Bump,
        state: _State,
        secrets: list[str],
        progress: Progress,
        *,
        base_env: Environment,
    ) -> Environment | None:
        """The environment of the patched tree (a security update changed what setup
        installs): the base's setup commands, run on a checkout of the patch, cached by
        its inputs like any. None, with ``state.error`` set, when it does not install."""
        tree = ws.root / "setup-head"
        await ws.checkout_copy(head, tree)
        self.sandbox.prepare_writable(tree)
        inputs = {}
        for name in sorted({*commands.inputs, *bump.files}):
            data = read_confined(tree, name)
            if data is not None:
                inputs[name] = hashlib.sha256(data).hexdigest()
        progress(f"setup: the patch changes {', '.join(bump.files)}: the patch's own environment")
        try:
            env = await self.environments.ensure(
                spec.remote.repo,
                replace(commands, inputs=inputs),
                tree,
                steps=state.steps,
                secrets=secrets,
                version=await ws.scm_version() if commands.setup else None,
                progress=progress,
                label="head",
            )
        except SetupFailed as exc:
            state.status = "failed"
            state.error = (
                f"{bump.package} {bump.new} does not install with the project's setup, so "
                f"nothing was published: {exc}"
            )
            return None
        if env is not None:
            # The files the base's setup generated go: the patch's own take their place
            # (an egg-info's requirements, a version file), as on any tree setup ran on.
            for path in base_env.generated:
                remove_confined(ws.tree, path)
            env.apply(ws.tree)
            self.sandbox.prepare_writable(ws.tree)
            ws.exclude(env.generated)
        return env


def _is_npm(bump: Bump) -> bool:
    return any(f.rsplit("/", 1)[-1] in ("package.json", *NPM_LOCKS) for f in bump.files)


def _packages(bump: Bump, env: Environment | None) -> dict[str, str]:
    """What ``env`` installs, by the bump's ecosystem: npm's packages or Python's."""
    return npm_packages(env) if _is_npm(bump) else distributions(env)


def _installed(bump: Bump, base: Environment, head: Environment | None) -> Bump:
    """The bump with what the patch's environment installs that the base's did not."""
    before, after = _packages(bump, base), _packages(bump, head)
    name = bump.package if _is_npm(bump) else canonicalize_name(bump.package)
    was, now = before.get(name), after.get(name)
    # what the environment really moved by, when larger than the manifests say
    size = larger_bump(bump.size, bump_size(was, now)) if was and now else bump.size
    return bump.model_copy(
        update={
            "size": size,
            "version": now,
            "setup": head is not None,
            "installed": [f"{n} {v}" for n, v in after.items() if n not in before],
            "upgraded": [
                f"{n} {before[n]} → {v}" for n, v in after.items() if before.get(n, v) != v
            ],
        }
    )


def _still_vulnerable(bump: Bump | None, env: Environment, state: _State) -> bool:
    """Whether the patch's environment still has a version of the package below the
    fixed one (another file pins it, say): then nothing is published (``state`` says why)."""
    if bump is None:
        return False
    npm = _is_npm(bump)
    installed = _packages(bump, env).get(bump.package if npm else canonicalize_name(bump.package))
    try:
        if npm:
            low = installed is not None and semver_key(installed) < semver_key(bump.new)
        else:
            low = installed is not None and Version(installed) < Version(bump.new)
    except (InvalidVersion, ValueError):
        low = False
    if low:
        state.status = "failed"
        state.error = (
            f"the patched tree's setup still installs {bump.package} {installed}, below "
            f"{bump.new}: something else pins it (a constraints file, another requirement); "
            "nothing was published"
        )
    return low


@dataclass
class _Run:
    """One session's run, passed from step to step of ``SessionRunner._session``."""

    spec: SessionSpec
    ws: Workspace
    state: _State
    secrets: list[str]
    progress: Progress
    verifier: Verifier
    policy: Policy
    commands: RepoCommands
    env: Environment | None
    base_run: TestRun | None = None  # the base's tests, once they ran
    head_env_dir: Path | None = None  # the environment the patch is tested with

    @property
    def env_dir(self) -> Path | None:
        return self.env.path if self.env is not None else None


@dataclass
class _State:
    """What a session has found out so far; becomes the SessionResult."""

    base_sha: str
    branch: str
    status: Literal["patched", "no-change", "failed"] = "failed"
    error: str | None = None
    error_kind: Literal["config"] | None = None
    head_sha: str | None = None
    fix: FixOutcome | None = None
    diff: Diff = field(default_factory=Diff)
    steps: list[Step] = field(default_factory=list)
    tests: TestDelta | None = None
    findings: list[FindingsDelta] = field(default_factory=list)
    policy: Policy | None = None
    scope: Scope | None = None
    modules: ModuleScan | None = None
    pending: list[asyncio.Task[Any]] = field(default_factory=list)

    def mask(self, known: list[str], opaque: list[str], *, allow: Sequence[str]) -> None:
        """Mask ``known`` (as secrets) and ``opaque`` values in everything kept so far."""

        def r(text: str) -> str:
            return redact(text, known=known, opaque=opaque, allow=allow)

        self.diff = self.diff.model_copy(update={"unified": r(self.diff.unified)})
        if self.fix is not None:
            self.fix = self.fix.redacted(known, opaque=opaque)
        self.steps = [
            s.model_copy(update={"output": r(s.output), "argv": [r(a) for a in s.argv]})
            for s in self.steps
        ]
        self.findings = [
            d.model_copy(
                update={
                    key: [f.model_copy(update={"snippet": r(f.snippet)}) for f in getattr(d, key)]
                    for key in ("new", "fixed")
                }
            )
            for d in self.findings
        ]
        self.error = r(self.error) if self.error else self.error


def _broken(commands: RepoCommands, step: Step, run: TestRun, state: _State) -> bool:
    """If the base's tests could not even import or collect, the session stops here:
    nothing a patch does can be judged against them (``state`` says why)."""
    problem = junit.environment_problem(run, step.output, pytest=commands.is_pytest)
    if problem is None:
        return False
    state.status = "failed"
    state.error = (
        f"the test environment is broken: {problem}. This is on the base commit, before "
        "any change: fix the tests or the setup (`setup:`/`test:` in "
        ".github/patchwarden.yml) and ask again."
    )
    state.tests = _delta(commands, run, None)
    return True


def _delta(commands: RepoCommands, base: TestRun | None, head: TestRun | None) -> TestDelta | None:
    if not commands.test:
        return None
    source: Literal["config", "detected"] = (
        "config" if commands.test_source == "config" else "detected"
    )
    return junit.test_delta(commands.test, source, base, head)


def commit_subject(title: str, limit: int = 72) -> str:
    """A commit's subject line from a task title: whole when it fits, else cut at a word
    and marked with "…" (a cut mid-word read as "tests/test_dates." in a real run)."""
    title = " ".join(title.split())
    if len(title) <= limit:
        return title
    cut = title[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:.") + "…"
