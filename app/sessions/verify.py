"""Verification: the repository's tests, ruff, semgrep and bandit, on base and patch.

Every step runs in the sandbox with no network. Tests run once per tree; the three
linters run once each over the changed files of *both* trees (the base tree mounted
at ``/base``, the patched one at ``/workspace``), so semgrep's start-up is paid once,
and their JSON is split back into base and head findings by :mod:`reports`. Any pytest
the test command runs writes a JUnit report (through ``PYTEST_ADDOPTS``), so outcomes
are per test whatever the command looks like.

The linters use Patchwarden's rules, not the repository's configuration: ruff runs
``--isolated`` with a fixed selection and semgrep with the packs in
``policies/semgrep/``, so a patch cannot change the rules that judge it.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from app.config import SHIPPED_POLICIES
from app.policy.evidence import Finding, FindingsDelta, TestRun, Tool
from app.redact import redact
from app.sessions import eslint, reports
from app.sessions.files import read_confined
from app.sessions.process import Completed
from app.sessions.repo_commands import RepoCommands
from app.sessions.result import Diff, Phase, Step, Tree
from app.sessions.sandbox import WORKSPACE, Mount, Sandbox
from app.sessions.test_command import (
    REPORTS_MOUNT,
    read_test_report,
    reported_test_command,
    tree_mounts,
    writes_report,
)

BASE_MOUNT = "/base"
RULES_MOUNT = "/rules"
RUFF_SELECT = "E4,E7,E9,F,B"
# --disable-nosem (and ruff's --ignore-noqa, bandit's --ignore-nosec): a suppression
# comment in the patch must not hide the patch's own findings.
SEMGREP_FLAGS = (
    "--metrics=off",
    "--disable-version-check",
    "--quiet",
    "--no-git-ignore",
    "--disable-nosem",
)
# osemgrep, semgrep's own OCaml command line, instead of its Python one: the same rules,
# results and JSON, started in 0.2 s instead of 2.2 s (docs/decisions/010).
SEMGREP_ENGINE = "--experimental"
DEFAULT_RULES = SHIPPED_POLICIES / "semgrep"
Parser = Callable[..., list[tuple[Tree, Finding]]]
TOOL_OUTPUT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Timeouts:
    """Seconds each kind of step may take before its process tree is killed."""

    setup: float = 900.0
    tests: float = 900.0
    tools: float = 300.0
    fix: float = 1800.0


def make_step(
    done: Completed,
    *,
    name: str,
    phase: Phase,
    tree: Tree | None,
    secrets: Sequence[str],
    include_stdout: bool = True,
    cached: bool = False,
) -> Step:
    """A stored step: output truncated (by the sandbox) and redacted (here)."""
    parts = []
    if include_stdout and done.stdout:
        parts.append(done.stdout)
    if done.stderr:
        parts.append(done.stderr)
    return Step(
        name=name,
        phase=phase,
        tree=tree,
        argv=[redact(a, known=secrets) for a in done.argv],
        exit_code=done.exit_code,
        duration_seconds=done.duration_seconds,
        timed_out=done.timed_out,
        killed_by=done.killed_by,
        output=redact("\n".join(parts), known=secrets),
        output_truncated=done.truncated,
        usage=done.usage,
        cached=cached,
    )


class Verifier:
    def __init__(
        self,
        sandbox: Sandbox,
        *,
        rules_dir: Path = DEFAULT_RULES,
        timeouts: Timeouts | None = None,
        secrets: Sequence[str] = (),
        scratch: Path,
    ) -> None:
        self.sandbox = sandbox
        self.rules_dir = rules_dir
        self.timeouts = timeouts or Timeouts()
        self.secrets = list(secrets)
        self.scratch = scratch

    async def tests(
        self,
        tree: Path,
        env_dir: Path | None,
        commands: RepoCommands,
        *,
        label: Tree,
        extra: Sequence[str] = (),
        name: str = "tests",
        addopts: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        mounts: Sequence[Mount] = (),
    ) -> tuple[Step, TestRun]:
        """Run the repository's test command (plus ``extra``) on ``tree`` (mounted at
        /workspace); ``addopts`` go to pytest with the report's, ``env`` and ``mounts``
        (a folder at /reports replaces the report's own) to the sandbox."""
        reports_dir = Path(tempfile.mkdtemp(prefix=f"reports-{label}-", dir=self.scratch))
        self.sandbox.prepare_writable(reports_dir)
        argv, test_env = reported_test_command(commands, env_dir, extra, addopts=addopts)
        mine = {m.target for m in mounts}
        if REPORTS_MOUNT in mine:
            reports_dir = next(m.source for m in mounts if m.target == REPORTS_MOUNT)
        else:
            mounts = [*mounts, Mount(reports_dir, REPORTS_MOUNT, writable=True)]
        done = await self.sandbox.run(
            argv,
            mounts=[*tree_mounts(tree, env_dir), *mounts],
            env={**test_env, **(env or {})},
            timeout=self.timeouts.tests,
        )
        step = make_step(done, name=name, phase="verify", tree=label, secrets=self.secrets)
        run = TestRun(exit_code=done.exit_code, timed_out=done.timed_out)
        try:
            if writes_report(commands):
                run = read_test_report(commands.node_runner, reports_dir, run)
        except reports.ReportError as exc:
            step = step.model_copy(update={"output": f"{step.output}\n[{exc}]"})
        return step, run

    async def run_tool(
        self,
        argv: Sequence[str],
        *,
        mounts: Sequence[Mount],
        timeout: float,  # noqa: ASYNC109 - enforced by killing the tree, not by cancelling
    ) -> Completed:
        """A tool whose standard output is data to read (up to the tools' cap)."""
        limits = replace(self.sandbox.limits, output_bytes=TOOL_OUTPUT_BYTES)
        return await self.sandbox.run(
            argv, mounts=mounts, timeout=min(timeout, self.timeouts.tools), limits=limits
        )

    async def linters(
        self,
        base: Path,
        head: Path,
        diff: Diff,
        *,
        is_test: Callable[[str], bool] = lambda _: False,
        envs: tuple[Path | None, Path | None] = (None, None),
    ) -> tuple[list[Step], list[FindingsDelta]]:
        """ruff, bandit and semgrep over the changed files of both trees, concurrently,
        and an npm project's own eslint (its rules, from ``envs``: the base's and the
        patch's environments) over its changed JavaScript and TypeScript. An ``assert``
        in a test file (``is_test``) is what a test is made of, not a finding (bandit's
        B101)."""
        text = [f for f in diff.files if not f.binary]
        base_files = [f.old_path or f.path for f in text if f.status != "added"]
        head_files = [f.path for f in text if f.status != "removed"]
        mounts = [Mount(base, BASE_MOUNT), Mount(head, WORKSPACE)]
        roots: dict[str, Tree] = {BASE_MOUNT: "base", WORKSPACE: "head"}
        reader = _LineReader(base, head)
        jobs: list[tuple[Tool, list[str], list[Mount], str, Parser]] = []
        py_targets = _targets(base_files, head_files, suffix=".py")
        bin_dir = self.sandbox.toolchain.bin_dir
        if py_targets:
            ruff = [f"{bin_dir}/ruff", "check", "--isolated", "--select", RUFF_SELECT]
            ruff += ["--ignore-noqa", "--output-format", "json", "--no-cache", "--exit-zero"]
            jobs.append(("ruff", [*ruff, *py_targets], mounts, "/", reports.parse_ruff))
            bandit = [f"{bin_dir}/bandit", "-f", "json", "-q", "--ignore-nosec", *py_targets]
            jobs.append(("bandit", bandit, mounts, "/", reports.parse_bandit))
        all_targets = _targets(base_files, head_files, suffix="")
        packs = rule_packs(self.rules_dir)
        if all_targets and packs:
            # Run from the rules directory, naming each top-level pack (not the directory:
            # semgrep would also load autofix/ and prefix rule ids with their folder).
            semgrep = semgrep_scan(bin_dir, packs, *SEMGREP_FLAGS, *all_targets)
            semgrep_mounts = [*mounts, Mount(self.rules_dir, RULES_MOUNT)]
            jobs.append(("semgrep", semgrep, semgrep_mounts, RULES_MOUNT, reports.parse_semgrep))
        js_base = [t for t in _targets(base_files, [], suffix="") if t.endswith(eslint.JS_SUFFIXES)]
        js_head = [t for t in _targets([], head_files, suffix="") if t.endswith(eslint.JS_SUFFIXES)]
        checks_js = bool(js_base or js_head) and eslint.eslint_config(base) is not None
        gathered = [self._tool(*job, roots, reader) for job in jobs]
        if checks_js and all(eslint.installed(e, "eslint") for e in envs):
            gathered.append(self._eslint(base, head, js_base, js_head, envs, reader))
        types = any(t.endswith((".ts", ".tsx", ".mts", ".cts")) for t in js_base + js_head)
        typed = read_confined(base, "tsconfig.json") is not None
        if types and typed and all(eslint.installed(e, "tsc") for e in envs):
            gathered.append(self._tsc(base, head, envs, reader))
        results = await asyncio.gather(*gathered)
        steps = [step for done, _ in results for step in done]
        deltas = {delta.tool: _without_test_asserts(delta, is_test) for _, delta in results}
        files = {"ruff": len(py_targets), "bandit": len(py_targets), "semgrep": len(all_targets)}
        files["eslint"] = len(js_base) + len(js_head) if "eslint" in deltas else 0
        files["tsc"] = len(js_base) + len(js_head) if "tsc" in deltas else 0
        tools: tuple[Tool, ...] = ("ruff", "semgrep", "bandit", "eslint", "tsc")
        ordered = [deltas.get(t) or FindingsDelta(tool=t, ran=False) for t in tools]
        return steps, [d.model_copy(update={"files": files[d.tool]}) for d in ordered]

    async def _eslint(
        self,
        base: Path,
        head: Path,
        base_targets: list[str],
        head_targets: list[str],
        envs: tuple[Path | None, Path | None],
        reader: _LineReader,
    ) -> tuple[list[Step], FindingsDelta]:
        """The project's eslint on each tree from the tree's own top (where its flat
        configuration is looked for), with that tree's packages; one delta of both."""
        roots: dict[str, Tree] = {BASE_MOUNT: "base", WORKSPACE: "head"}
        runs = [(base, BASE_MOUNT, base_targets, envs[0]), (head, WORKSPACE, head_targets, envs[1])]
        pairs: list[tuple[Tree, Finding]] = []
        steps: list[Step] = []
        # The base's flat configuration judges the patch too; each tree's .eslintrc its own.
        rules = eslint.eslint_config(base) or ""
        base_rules, legacy = f"{BASE_MOUNT}/{rules}", not eslint.flat(rules)
        for tree, at, targets, env in runs:
            packages = eslint.packages_of(env)
            if not targets or packages is None:
                continue
            files = [t.removeprefix(f"{at}/") for t in targets]
            mounts = [Mount(tree, at), Mount(packages, eslint.PACKAGES_MOUNT)]
            config = base_rules if at == WORKSPACE and not legacy else None
            if config:
                mounts.append(Mount(base, BASE_MOUNT))
            limits = replace(self.sandbox.limits, output_bytes=TOOL_OUTPUT_BYTES)
            done = await self.sandbox.run(
                eslint.check_command(files, config=config, legacy=legacy), mounts=mounts, cwd=at,
                timeout=self.timeouts.tools, limits=limits,
            )  # fmt: skip
            steps.append(make_step(done, name="eslint", phase="verify", tree=roots[at],
                                    secrets=self.secrets, include_stdout=False))  # fmt: skip
            if done.timed_out or done.stdout_truncated or done.exit_code not in (0, 1):
                why = _cut_short(done) or f"exited {done.exit_code}"
                tail = redact(done.stderr.strip()[-300:], known=self.secrets)
                return steps, FindingsDelta(tool="eslint", error=f"eslint {why}: {tail}")
            try:
                found = reports.parse_eslint(done.stdout, roots=roots, read_line=reader, cwd=at)
            except reports.ReportError as exc:
                return steps, FindingsDelta(tool="eslint", error=str(exc))
            pairs += [(t, _redacted(f, self.secrets)) for t, f in found]
        return steps, reports.findings_delta("eslint", pairs)

    async def _tsc(
        self,
        base: Path,
        head: Path,
        envs: tuple[Path | None, Path | None],
        reader: _LineReader,
    ) -> tuple[list[Step], FindingsDelta]:
        """``tsc --noEmit`` on each whole tree (a type error may land in a file the
        change did not touch), from its top, with that tree's packages."""
        roots: dict[str, Tree] = {BASE_MOUNT: "base", WORKSPACE: "head"}
        pairs: list[tuple[Tree, Finding]] = []
        steps: list[Step] = []
        for tree, at, env in ((base, BASE_MOUNT, envs[0]), (head, WORKSPACE, envs[1])):
            packages = eslint.packages_of(env)
            if packages is None:
                continue
            mounts = [Mount(tree, at), Mount(packages, eslint.PACKAGES_MOUNT)]
            limits = replace(self.sandbox.limits, output_bytes=TOOL_OUTPUT_BYTES)
            done = await self.sandbox.run(
                eslint.tsc_command(), mounts=mounts, cwd=at, timeout=self.timeouts.tools,
                limits=limits,
            )  # fmt: skip
            steps.append(make_step(done, name="tsc", phase="verify", tree=roots[at],
                                   secrets=self.secrets, include_stdout=False))  # fmt: skip
            # 0: no error, 2: errors found; anything else, or no line read, did not check
            found = reports.parse_tsc(done.stdout, roots=roots, read_line=reader, cwd=at)
            if done.timed_out or done.stdout_truncated or done.exit_code not in (0, 1, 2):
                why = "timed out" if done.timed_out else f"exited {done.exit_code}"
                tail = redact((done.stdout + done.stderr).strip()[-300:], known=self.secrets)
                return steps, FindingsDelta(tool="tsc", error=f"tsc {why}: {tail}")
            if done.exit_code and not found:
                tail = redact((done.stdout + done.stderr).strip()[-300:], known=self.secrets)
                return steps, FindingsDelta(tool="tsc", error=f"tsc failed: {tail}")
            pairs += [(t, _redacted(f, self.secrets)) for t, f in found]
        return steps, reports.findings_delta("tsc", pairs)

    async def _tool(
        self,
        name: Tool,
        argv: list[str],
        mounts: list[Mount],
        cwd: str,
        parse: Parser,
        roots: dict[str, Tree],
        reader: _LineReader,
    ) -> tuple[list[Step], FindingsDelta]:
        # The JSON is parsed, not stored: allow far more of it than of a step's output.
        limits = replace(self.sandbox.limits, output_bytes=TOOL_OUTPUT_BYTES)
        done = await self.sandbox.run(
            argv, mounts=mounts, cwd=cwd, timeout=self.timeouts.tools, limits=limits
        )
        step = make_step(
            done, name=name, phase="verify", tree=None, secrets=self.secrets, include_stdout=False
        )
        why = _cut_short(done)
        if why:
            return [step], FindingsDelta(tool=name, error=f"{name} {why}")
        try:
            pairs = parse(done.stdout, roots=roots, read_line=reader, cwd=cwd)
        except reports.ReportError as exc:
            return [step], FindingsDelta(tool=name, error=str(exc))
        pairs = [(tree, _redacted(f, self.secrets)) for tree, f in pairs]
        return [step], reports.findings_delta(name, pairs)


TEST_ASSERT = "B101"  # bandit's assert_used


def _without_test_asserts(delta: FindingsDelta, is_test: Callable[[str], bool]) -> FindingsDelta:
    def kept(found: list[Finding]) -> list[Finding]:
        return [f for f in found if not (f.rule == TEST_ASSERT and is_test(f.path))]

    if delta.tool != "bandit":
        return delta
    return delta.model_copy(update={"new": kept(delta.new), "fixed": kept(delta.fixed)})


def _redacted(finding: Finding, secrets: Sequence[str]) -> Finding:
    return finding.model_copy(
        update={
            "snippet": redact(finding.snippet, known=secrets),
            "message": redact(finding.message, known=secrets),
        }
    )


def semgrep_scan(bin_dir: str, packs: Sequence[str], *args: str) -> list[str]:
    """``semgrep scan --json`` with each rule file of ``packs`` (names, run from their
    folder: semgrep prefixes the ids of rules found through a path with that path)."""
    configs = [a for pack in packs for a in ("--config", pack)]
    return [f"{bin_dir}/semgrep", "scan", SEMGREP_ENGINE, *configs, "--json", *args]


def rule_packs(rules_dir: Path) -> list[str]:
    """The rule files at the top of ``rules_dir`` (a semgrep start costs ~3 s: with
    none there is nothing to run). ``autofix/`` below it is the lint fixer's pack."""
    if not rules_dir.is_dir():
        return []
    return sorted(p.name for p in rules_dir.glob("*.y*ml") if p.is_file())


def _targets(base_files: list[str], head_files: list[str], *, suffix: str) -> list[str]:
    chosen = [f"{BASE_MOUNT}/{p}" for p in base_files if p.endswith(suffix)]
    chosen += [f"{WORKSPACE}/{p}" for p in head_files if p.endswith(suffix)]
    return chosen


class _LineReader:
    """Source lines for findings' snippets, read on the host from the two trees."""

    def __init__(self, base: Path, head: Path) -> None:
        self.trees = {"base": base, "head": head}
        self._cache: dict[tuple[str, str], list[str]] = {}

    def __call__(self, tree: Tree, path: str, line: int) -> str:
        key = (tree, path)
        if key not in self._cache:
            data = read_confined(self.trees[tree], path)
            self._cache[key] = [] if data is None else data.decode("utf-8", "replace").splitlines()
        lines = self._cache[key]
        return lines[line - 1] if 0 < line <= len(lines) else ""


def _cut_short(done: Completed) -> str:
    """Why a tool's output cannot be read whole ("" when it can)."""
    if done.timed_out:
        return "timed out"
    return "printed more than the output cap" if done.stdout_truncated else ""
