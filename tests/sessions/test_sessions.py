"""Coding sessions end to end: real git, the real bubblewrap sandbox, real tools.

A generated Python project with one failing test goes through the whole session:
workspace from the mirror cache, setup, a fixer's patch, and verification on the base
and the patched trees. Fixers here are plain functions that edit the tree (the LLM
and lint fixers come with their own issue).
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from app.fixers.registry import KNOWN
from app.git import GitError, Remote, git_env, run_git
from app.localforge import LocalForge
from app.sessions.backends import BwrapSandbox
from app.sessions.empty_env import EMPTY, EmptyEnvironments
from app.sessions.fix_context import FixContext
from app.sessions.mirrors import WorkspaceCache
from app.sessions.result import FixOutcome, SessionResult
from app.sessions.session import SessionRunner
from app.sessions.task import SessionSpec, Task
from app.sessions.workspace import WorkspaceError
from tests.conftest import (
    CALC,
    CALC_TESTS,
    INSTALLATION,
    REPO,
    git_commit,
    git_in,
    make_project,
    running_with,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

FIXED = CALC.replace("a - b", "a + b")
# The suppression comments must not hide the patch's own findings.
SHELL = FIXED + (
    "\n\ndef run(cmd):\n    import subprocess\n\n"
    "    return subprocess.call(cmd, shell=True)  # nosec # nosemgrep # noqa\n"
)
BROKEN_MUL = CALC.replace("a * b", "a * b + 1")


def writes(**files: str) -> Callable[[FixContext], Awaitable[FixOutcome]]:
    async def fixer(ctx: FixContext) -> FixOutcome:
        for name, text in files.items():
            (ctx.tree / name).write_text(text)
        return FixOutcome(fixer="test", summary=f"wrote {', '.join(files)}")

    return fixer


async def test_a_fix_is_reported_as_newly_passing_and_its_shell_call_as_new_findings(
    runner: SessionRunner, project: Path
) -> None:
    spec = SessionSpec(remote=Remote("octo/calc", str(project)), task=Task("Fix add()"), job_id=7)
    result = await runner.run(spec, writes(**{"calc.py": SHELL}))

    assert result.status == "patched", result.error
    assert result.branch == "patchwarden/7-fix-add"
    assert result.tests is not None
    assert result.tests.base is not None
    assert result.tests.head is not None
    assert result.tests.base.outcomes["test_calc::test_add"] == "failed"
    assert result.tests.fixed == ["test_calc::test_add"]
    assert result.tests.broken == []
    assert result.tests.head.counts is not None
    assert result.tests.head.counts.passed == 2
    assert [f.path for f in result.diff.files] == ["calc.py"]
    assert "+    return a + b" in result.diff.unified

    semgrep, bandit = result.findings_for("semgrep"), result.findings_for("bandit")
    assert semgrep is not None
    assert semgrep.error is None, semgrep
    assert "patchwarden.python.subprocess-shell-true" in {f.rule for f in semgrep.new}
    assert bandit is not None
    assert "B602" in {f.rule for f in bandit.new}
    shell = next(f for f in bandit.new if f.rule == "B602")
    assert shell.path == "calc.py"
    assert "shell=True" in shell.snippet
    assert semgrep.fixed == []
    assert bandit.fixed == []

    # The patch commit is kept in the mirror for publishing; the session dir is gone.
    mirror = runner.cache.mirror_path("octo/calc")
    ref = await run_git(
        ["--git-dir", str(mirror), "rev-parse", f"refs/patchwarden/{result.branch}"],
        env=git_env(mirror),
    )
    assert ref.stdout.decode().strip() == result.head_sha
    assert list((runner.cache.root / "sessions").iterdir()) == []
    # What is stored reads back as the same result.
    assert SessionResult.load(json.loads(json.dumps(result.to_json()))) == result


async def test_a_patch_that_breaks_another_test_says_which(
    runner: SessionRunner, project: Path
) -> None:
    spec = SessionSpec(remote=Remote("octo/calc", str(project)), task=Task("tweak mul"))
    result = await runner.run(spec, writes(**{"calc.py": BROKEN_MUL}))

    assert result.status == "patched"
    assert result.tests is not None
    assert result.tests.broken == ["test_calc::test_mul"]
    assert result.tests.fixed == []
    for tool in ("ruff", "semgrep", "bandit"):
        delta = result.findings_for(tool)  # type: ignore[arg-type]
        assert delta is not None
        assert delta.error is None, delta
        assert delta.new == [], delta


async def test_no_change_and_a_fixer_that_gives_up(runner: SessionRunner, project: Path) -> None:
    remote = Remote("octo/calc", str(project))

    async def nothing(ctx: FixContext) -> FixOutcome:
        return FixOutcome(fixer="test")

    async def gives_up(ctx: FixContext) -> FixOutcome:
        (ctx.tree / "calc.py").write_text(FIXED)
        return FixOutcome(fixer="test", ok=False, reason="could not find the bug")

    unchanged = await runner.run(SessionSpec(remote=remote, task=Task("noop")), nothing)
    assert unchanged.status == "no-change"
    assert unchanged.head_sha is None
    assert unchanged.tests is not None
    assert unchanged.tests.base is not None
    assert unchanged.tests.base.counts is not None
    assert unchanged.tests.base.counts.failed == 1

    failed = await runner.run(SessionSpec(remote=remote, task=Task("give up")), gives_up)
    assert failed.status == "failed"
    assert failed.error == "could not find the bug"
    assert failed.head_sha is None


async def test_two_sessions_of_one_repo_run_side_by_side_and_fetch_once(
    runner: SessionRunner, project: Path
) -> None:
    remote = Remote("octo/calc", str(project))
    seen: dict[str, set[str]] = {}
    both_wrote = asyncio.Barrier(2)

    def fixer(name: str) -> Callable[[FixContext], Awaitable[FixOutcome]]:
        async def edit(ctx: FixContext) -> FixOutcome:
            (ctx.tree / f"{name}.txt").write_text(f"{name}\n")
            await ctx.run(["/bin/sh", "-c", f"echo {name} >> calc.py"])
            await both_wrote.wait()
            seen[name] = {p.name for p in ctx.tree.iterdir()}
            return FixOutcome(fixer="test")

        return edit

    one, two = await asyncio.gather(
        runner.run(SessionSpec(remote=remote, task=Task("one"), job_id=1), fixer("one")),
        runner.run(SessionSpec(remote=remote, task=Task("two"), job_id=2), fixer("two")),
    )
    assert runner.cache.fetches == {"octo/calc": 1}
    assert one.status == two.status == "patched"
    assert one.base_sha == two.base_sha
    assert "two.txt" not in seen["one"]
    assert "one.txt" not in seen["two"]
    assert sorted(f.path for f in one.diff.files) == ["calc.py", "one.txt"]
    assert "+one" in one.diff.unified
    assert "two" not in one.diff.unified
    assert "+two" in two.diff.unified
    assert "one" not in two.diff.unified.replace("one.txt", "")
    assert one.branch != two.branch


async def test_setup_from_the_config_is_cached_and_mounted_read_only(
    runner: SessionRunner, tmp_path: Path
) -> None:
    # The test command is not pytest (the environment has none): a base whose tests
    # cannot collect would stop the fixer, and which finished first was a race (CI
    # saw the probe cancelled once). This one prints which python ran it.
    config = (
        'setup: "python -m venv --without-pip /env"\n'
        "test: \"python -c 'import sys; print(sys.prefix)'\"\n"
    )
    files = {"calc.py": FIXED, "test_calc.py": CALC_TESTS, ".github/patchwarden.yml": config}
    remote = Remote("octo/setup", str(make_project(tmp_path / "setup", files)))

    async def probe(ctx: FixContext) -> FixOutcome:
        done = await ctx.run(["/bin/sh", "-c", "test -x /env/bin/python && touch /env/x"])
        (ctx.tree / "note.txt").write_text("ok\n")
        return FixOutcome(fixer="test", summary=done.stderr)

    first = await runner.run(SessionSpec(remote=remote, task=Task("a")), probe)
    second = await runner.run(SessionSpec(remote=remote, task=Task("b")), probe)

    setup = [s for s in first.steps if s.phase == "setup"]
    assert [s.cached for s in setup] == [False]
    assert setup[0].argv == ["python", "-m", "venv", "--without-pip", "/env"]
    assert [s.cached for s in second.steps if s.phase == "setup"] == [True]
    assert first.fix is not None
    assert "Read-only file system" in first.fix.summary
    # The tests ran with the environment's python, as the config said.
    assert first.tests is not None
    assert first.tests.source == "config"
    tests = [s for s in first.steps if s.name == "tests"]
    assert tests, [s.name for s in first.steps]
    assert all(s.output.splitlines()[0] == "/env" for s in tests), [s.output for s in tests]


async def test_every_environment_starts_from_one_empty_environment_no_repository_made(
    tmp_path: Path,
) -> None:
    """Two repositories' setups: each `python -m venv /env` is a copy of one empty
    environment, made once on an empty workspace, so a repository's own `venv.py`
    (which `python -m venv` in its tree would run) has no say in it; the copy works, is
    the sandbox's to write, and holds nothing another setup installed."""
    write = (
        'python -c "import pathlib, sysconfig; '
        "pathlib.Path(sysconfig.get_paths()['purelib'], '{}').write_text('x')\""
    )
    hijack = "open('/env/hijacked', 'w').write('x')\n"
    seen: dict[str, str] = {}

    async def probe(ctx: FixContext) -> FixOutcome:
        pip = await ctx.run(["/env/bin/python", "-m", "pip", "--version"])
        listed = await ctx.run(
            ["/env/bin/python", "-c", "import os, sysconfig; "
             "print(sorted(os.listdir(sysconfig.get_paths()['purelib'])), os.listdir('/env'))"]
        )  # fmt: skip
        seen[ctx.task.title] = pip.stdout + listed.stdout
        (ctx.tree / "note.txt").write_text("ok\n")
        return FixOutcome(fixer="test", summary="probed")

    # A cache of its own: the empty environment is made here, next to `venv.py`.
    cache = WorkspaceCache(tmp_path / "cache")
    sandbox = BwrapSandbox(state_dir=tmp_path / "sandbox")
    runner = SessionRunner(fixers=KNOWN, cache=cache, sandbox=sandbox)
    runs = []
    for name in ("one", "two"):
        setup = json.dumps(write.format(f"{name}.txt"))  # a YAML string
        config = f"setup: {setup}\ntest: \"python -c 'print(1)'\"\n"
        files = {"calc.py": FIXED, "test_calc.py": CALC_TESTS, ".github/patchwarden.yml": config}
        files |= {"venv.py": hijack} if name == "one" else {}
        remote = Remote(f"octo/{name}", str(make_project(tmp_path / name, files)))
        runs.append(await runner.run(SessionSpec(remote=remote, task=Task(name)), probe))

    first, second = ([s for s in r.steps if s.phase == "setup"] for r in runs)
    assert first[0].argv[1:] == ["-m", "venv", "/env"]
    assert [(s.argv, s.cached) for s in (first[0], second[0])] == [(first[0].argv, True)] * 2
    assert "from the cache" in second[0].output
    assert all(s.ok for s in first + second), [s.output for s in first + second]
    assert seen["two"].startswith("pip "), seen["two"]
    assert "'two.txt'" in seen["two"], seen["two"]
    assert "one.txt" not in seen["two"], seen["two"]
    assert "'one.txt'" in seen["one"], seen["one"]
    assert "hijacked" not in seen["one"] + seen["two"]
    assert [p.name for p in (tmp_path / "cache" / EMPTY).iterdir() if p.is_dir()] != []


async def test_a_failing_setup_fails_the_session_with_the_command_named(
    runner: SessionRunner, tmp_path: Path
) -> None:
    files = {"calc.py": FIXED, ".github/patchwarden.yml": "setup: \"sh -c 'exit 3'\"\n"}
    remote = Remote("octo/badsetup", str(make_project(tmp_path / "bad", files)))
    result = await runner.run(SessionSpec(remote=remote, task=Task("x")), writes(**{"a.txt": "a"}))
    assert result.status == "failed"
    assert result.error is not None
    assert "setup failed: `sh -c exit 3` exited 3" in result.error
    assert result.fix is None  # the fixer never ran


async def test_a_fixer_that_fails_stops_the_base_tests_and_cleans_up(
    runner: SessionRunner, tmp_path: Path
) -> None:
    marker = "984.123456"
    files = {"calc.py": FIXED, ".github/patchwarden.yml": f'test: "sleep {marker}"\n'}
    remote = Remote("octo/slow", str(make_project(tmp_path / "slow", files)))

    async def crashes(ctx: FixContext) -> FixOutcome:
        await asyncio.sleep(0.5)  # the base tests (a long sleep) are running meanwhile
        raise WorkspaceError("the fixer could not read the tree")

    started = asyncio.get_running_loop().time()
    result = await runner.run(SessionSpec(remote=remote, task=Task("x")), crashes)
    assert result.status == "failed"
    assert result.error == "the fixer could not read the tree"
    assert asyncio.get_running_loop().time() - started < 30  # not the 900 s test timeout
    assert not running_with(marker)
    assert list((runner.cache.root / "sessions").iterdir()) == []


async def test_a_bad_base_is_a_clear_failure(runner: SessionRunner, project: Path) -> None:
    spec = SessionSpec(remote=Remote("octo/calc", str(project)), task=Task("x"), base="no-such-ref")
    result = await runner.run(spec, writes(**{"a.txt": "a"}))
    assert result.status == "failed"
    assert result.error == "'no-such-ref' is not a commit of octo/calc"


async def test_a_base_that_looks_like_an_option_is_refused(
    runner: SessionRunner, project: Path
) -> None:
    spec = SessionSpec(remote=Remote("octo/calc", str(project)), task=Task("x"), base="--output=/x")
    result = await runner.run(spec, writes(**{"a.txt": "a"}))
    assert result.status == "failed"
    assert result.error == "'--output=/x' is not a commit or ref name"
    assert runner.cache.fetches == {}  # refused before any git ran


async def test_a_failed_fetch_is_not_taken_for_a_fresh_mirror(
    runner: SessionRunner, project: Path, tmp_path: Path
) -> None:
    missing = Remote("octo/calc", str(tmp_path / "gone"))
    first, second = await asyncio.gather(
        runner.run(SessionSpec(remote=missing, task=Task("a")), writes(**{"a.txt": "a"})),
        runner.run(SessionSpec(remote=missing, task=Task("b")), writes(**{"b.txt": "b"})),
    )
    assert first.status == second.status == "failed"
    # Each says why: git could not clone (not "HEAD is not a commit" of an absent mirror).
    for result in (first, second):
        assert result.error is not None
        assert "git clone --mirror" in result.error, result.error
    assert runner.cache.fetches == {}
    # The repository appears: the next session clones it instead of trusting a failure.
    ok = await runner.run(
        SessionSpec(remote=Remote("octo/calc", str(project)), task=Task("c")),
        writes(**{"c.txt": "c"}),
    )
    assert ok.status == "patched", ok.error


def test_a_token_in_the_url_is_refused() -> None:
    with pytest.raises(GitError, match="carries credentials"):
        Remote("octo/calc", "https://x-access-token:ghs_abc@github.com/octo/calc.git")


async def test_the_token_never_reaches_argv_logs_the_sandbox_or_the_result(
    runner: SessionRunner,
    make_forge: Callable[..., Awaitable[LocalForge]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "calc.py").write_text(CALC)
    (source / "test_calc.py").write_text(CALC_TESTS)
    forge = await make_forge(source=source)
    token = forge.token_for(INSTALLATION)
    remote = Remote(REPO, f"{forge.url}/{REPO}.git", token=token)
    leaks: list[str] = []
    stop = threading.Event()

    def watch_argv() -> None:  # every process on the host, while the session runs
        while not stop.is_set():
            leaks.extend(running_with(token))

    async def snoop(ctx: FixContext) -> FixOutcome:
        done = await ctx.run(
            ["/bin/sh", "-c", "env; cat /proc/*/cmdline /proc/*/environ 2>/dev/null | tr '\\0' ' '"]
        )
        print(f"leaked {token}")  # a fixer that prints the token: redacted when stored
        (ctx.tree / "calc.py").write_text(FIXED + f"# {token}\n")
        return FixOutcome(fixer="test", summary=done.stdout)

    watcher = threading.Thread(target=watch_argv, daemon=True)
    caplog.set_level(logging.DEBUG)
    watcher.start()
    try:
        result = await runner.run(SessionSpec(remote=remote, task=Task("t"), job_id=9), snoop)
    finally:
        stop.set()
        watcher.join()

    assert result.status == "patched", result.error  # the clone was authenticated
    assert any(r.path.endswith("/git-upload-pack") for r in forge.requests)
    stored = json.dumps(result.to_json())
    assert token not in stored
    assert "[REDACTED:" in result.diff.unified  # the fixer's token-in-a-comment
    assert result.fix is not None
    assert token not in result.fix.summary
    assert "GIT_CONFIG" not in result.fix.summary
    assert "Authorization" not in result.fix.summary
    assert token not in caplog.text
    assert leaks == []


async def test_a_base_that_cannot_import_stops_the_session_before_anything_is_judged(
    runner: SessionRunner, tmp_path: Path
) -> None:
    project = make_project(
        tmp_path / "broken",
        {
            "calc.py": CALC,
            "test_calc.py": "import not_installed_anywhere\n" + CALC_TESTS,
            "pytest.ini": "[pytest]\n",
        },
    )
    started = asyncio.Event()

    async def slow(ctx: FixContext) -> FixOutcome:
        started.set()
        await asyncio.sleep(120)  # a model thinking: stopped once the base is known broken
        return FixOutcome(fixer="test", summary="never")

    spec = SessionSpec(remote=Remote("octo/broken", str(project)), task=Task("Fix add()"))
    result = await asyncio.wait_for(runner.run(spec, slow), timeout=60)

    assert started.is_set()
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.startswith(
        "the test environment is broken: ModuleNotFoundError: No module named "
        "'not_installed_anywhere' (collecting test_calc)"
    )
    assert result.head_sha is None  # nothing committed, nothing to score
    assert result.tests is not None
    assert result.tests.head is None


async def test_any_pytest_the_command_runs_reports_per_test(
    runner: SessionRunner, tmp_path: Path
) -> None:
    project = make_project(
        tmp_path / "shell",
        {
            "calc.py": CALC,
            "test_calc.py": CALC_TESTS,
            ".github/patchwarden.yml": "test: sh -c 'cd . && python -m pytest -q'\n",
        },
    )
    spec = SessionSpec(remote=Remote("octo/shell", str(project)), task=Task("Fix add()"))
    result = await runner.run(spec, writes(**{"calc.py": FIXED}))

    assert result.status == "patched", result.error
    assert result.tests is not None
    assert result.tests.fixed == ["test_calc::test_add"]
    assert result.tests.head is not None
    assert result.tests.head.counts is not None
    assert result.tests.head.counts.passed == 2


async def test_a_file_stored_unnormalised_is_not_part_of_the_patch(
    runner: SessionRunner, tmp_path: Path
) -> None:
    # NEWS is stored with CRLF although .gitattributes asks git to normalise it (as a
    # push from another tool leaves it): a plain `git add` would rewrite it whole.
    project = make_project(
        tmp_path / "crlf",
        {
            "calc.py": CALC,
            "test_calc.py": CALC_TESTS,
            ".gitattributes": "* text=auto\nNEWS text\n",
            "NEWS": "one\r\ntwo\r\n",
        },
    )
    env = git_env(project)
    git = ["git", "-C", str(project), "-c", "user.name=T", "-c", "user.email=t@e.org"]
    hashed = await run_git([*git[1:], "hash-object", "-w", "--no-filters", "NEWS"], env=env)
    raw = hashed.stdout.decode().strip()
    await run_git([*git[1:], "update-index", "--cacheinfo", f"100644,{raw},NEWS"], env=env)
    await run_git([*git[1:], "commit", "-qm", "NEWS as another tool pushed it"], env=env)

    async def fix_and_look(ctx: FixContext) -> FixOutcome:
        (ctx.tree / "calc.py").write_text(FIXED)
        assert await ctx.changed_paths() == ["calc.py"]  # as the lint fixer asks
        return FixOutcome(fixer="test", summary="fixed add")

    spec = SessionSpec(remote=Remote("octo/crlf", str(project)), task=Task("Fix add()"))
    result = await runner.run(spec, fix_and_look)

    assert result.status == "patched", result.error
    assert [f.path for f in result.diff.files] == ["calc.py"]


async def test_links_planted_by_setup_in_the_environment_redirect_no_host_write(
    runner: SessionRunner, tmp_path: Path
) -> None:
    """Setup runs the repository's code with /env writable: links it leaves where the
    host later writes (.generated, .complete) must not carry the host's writes away."""
    victim = tmp_path / "victim"
    victim.mkdir()
    owned = tmp_path / "owned.txt"
    plant = (
        f"sh -c 'ln -s {victim} /env/.generated && ln -s {owned} /env/.complete "
        "&& echo made > /workspace/generated.txt'"
    )
    project = make_project(
        tmp_path / "planted",
        {
            "calc.py": CALC,
            "test_calc.py": CALC_TESTS,
            ".github/patchwarden.yml": f"setup:\n  - {plant}\ntest: python -c 'import calc'\n",
        },
    )
    spec = SessionSpec(remote=Remote("octo/planted", str(project)), task=Task("Fix add()"))
    result = await runner.run(spec, writes(**{"calc.py": FIXED}))

    assert result.status == "patched", result.error
    assert list(victim.iterdir()) == []
    assert not owned.exists()
    assert [f.path for f in result.diff.files] == ["calc.py"]  # generated.txt is not ours


async def test_a_new_test_under_a_path_the_base_links_elsewhere_is_not_run_there(
    runner: SessionRunner, tmp_path: Path
) -> None:
    """The reproduction check writes the patch's test files into the base tree. Where
    the base has a symlink on the way (tests/ -> a folder on the host), nothing is
    written through it, nothing outside is removed, and the patch still verifies."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.py").write_text("x = 1\n")
    only_mul = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
    project = make_project(tmp_path / "calc", {"calc.py": CALC, "test_calc.py": only_mul})
    (project / "tests").symlink_to(outside)
    git_commit(project, "tests live elsewhere")

    async def fixer(ctx: FixContext) -> FixOutcome:
        (ctx.tree / "tests").unlink()
        (ctx.tree / "tests").mkdir()
        (ctx.tree / "tests" / "test_add.py").write_text(
            "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
        )
        (ctx.tree / "calc.py").write_text(FIXED)
        return FixOutcome(fixer="llm", summary="add adds")

    spec = SessionSpec(remote=Remote("octo/calc", str(project)), task=Task("add is wrong"))
    result = await runner.run(spec, fixer)
    assert result.status == "patched", result.error
    assert result.tests is not None
    assert result.tests.reproduced == []
    assert not [s for s in result.steps if s.name == "reproduce"]
    assert sorted(p.name for p in outside.iterdir()) == ["keep.py"]


PROBE_JS = """\
const fs = require('fs');
const net = require('net');
const said = ['secret=' + (process.env.PW_PROBE_SECRET || 'none')];
try { fs.writeFileSync(process.env.PW_ESCAPE || '/tmp/pw-escape', 'x'); said.push('tmp=written'); }
catch (e) { said.push('tmp=' + e.code); }
const done = (how) => {
  fs.appendFileSync('/workspace/report.txt', said.join(' ') + ' net=' + how + '\\n');
  process.exit(0);
};
const socket = net.connect({ host: '1.1.1.1', port: 443 });
socket.setTimeout(3000, () => done('timeout'));
socket.on('connect', () => done('open'));
socket.on('error', (e) => done(e.code));
"""


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
async def test_an_npm_packages_install_script_runs_once_offline_and_reaches_nothing(
    runner: SessionRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dependency's `postinstall` (here one that opens a socket, reads the environment
    and writes outside the tree) never runs while the setup phase's network is open
    (`npm ci --ignore-scripts`); it runs once afterwards, with no network, no secret of
    the host and no way to the host's files (`npm rebuild` in the sandbox)."""
    monkeypatch.setenv("PW_PROBE_SECRET", "s3cr3t")
    escape = tmp_path / "escaped"
    package = {
        "name": "app",
        "version": "1.0.0",
        "scripts": {"test": 'node -e "process.exit(0)"'},
        "dependencies": {"probe": "file:probe"},
    }
    probe = {"name": "probe", "version": "1.0.0", "scripts": {"postinstall": "node probe.js"}}
    files = {
        "package.json": json.dumps(package),
        "probe/package.json": json.dumps(probe),
        "probe/probe.js": PROBE_JS.replace("/tmp/pw-escape", str(escape)),
    }
    root = tmp_path / "npm-app"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    locked = await asyncio.create_subprocess_exec(
        "npm", "install", "--package-lock-only", "--ignore-scripts", "--offline", "--no-audit",
        cwd=root, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await locked.communicate()
    assert locked.returncode == 0, err.decode()
    git_in(root, "init", "-q", "-b", "main")
    git_commit(root, "an npm project whose dependency has an install script")
    remote = Remote("octo/npm-app", str(root))

    async def read(ctx: FixContext) -> FixOutcome:
        report = (ctx.tree / "report.txt").read_text() if (ctx.tree / "report.txt").exists() else ""
        return FixOutcome(fixer="test", summary=report)

    result = await runner.run(SessionSpec(remote=remote, task=Task("read")), read)
    setup = [s.argv for s in result.steps if s.phase == "setup"]
    assert setup == [
        ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
        ["npm", "rebuild", "--no-audit", "--no-fund"],
    ], result.error
    assert result.fix is not None
    lines = result.fix.summary.splitlines()
    assert len(lines) == 1, lines  # once, in the offline step
    assert lines[0].startswith("secret=none tmp=")
    assert "net=open" not in lines[0]
    assert not escape.exists()


NODE_CALC_TESTS = """\
const test = require('node:test');
const assert = require('node:assert');
const { add } = require('../calc');
const pad = require('pad');

test.describe('calc', () => {
  test.it('adds', () => assert.strictEqual(add(1, 2), 3));
});
test('pads with a package', () => assert.strictEqual(pad('7'), '00007'));
"""


PLANTS_A_REPORT = """\
const fs = require('fs');
const claim = '<testsuites><testsuite name="all" tests="1"><testcase classname="t" name="ok"/>'
  + '</testsuite></testsuites>';
for (const dir of ['/reports', process.env.PATCHWARDEN_REPORTS || '/reports']) {
  try { fs.writeFileSync(dir + '/junit.xml', claim); } catch (e) {}
}
process.exit(1);
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
async def test_a_report_an_npm_test_script_plants_is_not_believed(
    runner: SessionRunner, tmp_path: Path
) -> None:
    """`npm test` runs a script of the project's own, which writes no report: a JUnit
    file it leaves where reports are read (claiming every test passed) is not read, and
    the run is judged by its exit code (1: failed)."""
    package = {"name": "liar", "version": "1.0.0", "scripts": {"test": "node check.js"}}
    root = make_project(
        tmp_path / "liar", {"package.json": json.dumps(package), "check.js": PLANTS_A_REPORT}
    )

    async def touch(ctx: FixContext) -> FixOutcome:
        (ctx.tree / "NOTES.md").write_text("a note\n")
        return FixOutcome(fixer="test", summary="a note")

    spec = SessionSpec(remote=Remote("octo/liar", str(root)), task=Task("note"))
    result = await runner.run(spec, touch)
    tests = result.tests
    assert tests is not None, result.error
    assert tests.head is not None
    assert tests.head.exit_code == 1
    assert tests.head.outcomes == {}  # nothing read from the planted file
    assert tests.head.counts is None


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
async def test_an_npm_projects_tests_are_counted_one_by_one_with_its_packages_in_place(
    runner: SessionRunner, tmp_path: Path
) -> None:
    """`node --test` called directly with a report of its own: the tests are counted by
    name on the base and the patch, as pytest's are; the packages setup installed are
    where node looks for them in both trees, and never in the change."""
    package = {
        "name": "calc",
        "version": "1.0.0",
        "scripts": {"test": "node --test"},
        "dependencies": {"pad": "file:pad"},
    }
    files = {
        "package.json": json.dumps(package),
        "pad/package.json": json.dumps({"name": "pad", "version": "1.0.0"}),
        "pad/index.js": "module.exports = (s) => s.padStart(5, '0');\n",
        "calc.js": "exports.add = (a, b) => a - b;\n",
        "test/calc.test.js": NODE_CALC_TESTS,
    }
    root = make_project(tmp_path / "calc", files)

    async def fix(ctx: FixContext) -> FixOutcome:
        (ctx.tree / "calc.js").write_text("exports.add = (a, b) => a + b;\n")
        return FixOutcome(fixer="test", summary="add adds")

    remote = Remote("octo/calc", str(root))
    result = await runner.run(SessionSpec(remote=remote, task=Task("fix add")), fix)
    assert result.status == "patched", result.error
    tests = result.tests
    assert tests is not None
    assert tests.command[:2] == ["node", "--test"]
    assert tests.fixed == ["calc > adds"]
    assert tests.broken == []
    assert tests.base is not None
    assert tests.base.counts is not None
    assert (tests.base.counts.passed, tests.base.counts.failed) == (1, 1)
    assert [f.path for f in result.diff.files] == ["calc.js"]


PLANT_JS = """\
const fs = require('fs');
try { fs.symlinkSync(process.env.PW_HOST_DIR, '/env/node_modules'); } catch (e) {}
"""


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
async def test_a_link_setup_plants_where_the_packages_go_reaches_no_host_folder(
    runner: SessionRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An install script plants `/env/node_modules` as a link to a folder of the host:
    the packages are not moved through it into that folder, and no later run of the
    sandbox sees the folder at `node_modules`."""
    host = tmp_path / "host-folder"
    host.mkdir()
    (host / "secret.txt").write_text("the host's\n")
    monkeypatch.setenv("PW_HOST_DIR", str(host))
    package = {
        "name": "app",
        "version": "1.0.0",
        "scripts": {"test": 'node -e "process.exit(0)"'},
        "dependencies": {"plant": "file:plant"},
    }
    plant = {"name": "plant", "version": "1.0.0", "scripts": {"postinstall": "node plant.js"}}
    files = {
        "package.json": json.dumps(package),
        "plant/package.json": json.dumps(plant),
        "plant/plant.js": PLANT_JS.replace("process.env.PW_HOST_DIR", repr(str(host))),
    }
    root = make_project(tmp_path / "planted", files)

    async def look(ctx: FixContext) -> FixOutcome:
        done = await ctx.run(["ls", "-a", "/workspace/node_modules"], name="look")
        return FixOutcome(fixer="test", summary=done.stdout)

    result = await runner.run(
        SessionSpec(remote=Remote("octo/planted", str(root)), task=Task("look")), look
    )
    assert result.fix is not None
    assert "secret.txt" not in result.fix.summary
    assert "plant" in result.fix.summary  # the packages are there, in the environment
    assert sorted(p.name for p in host.iterdir()) == ["secret.txt"]  # nothing moved in


async def test_an_interpreter_inside_an_image_gets_no_empty_environment_from_the_host(
    tmp_path: Path,
) -> None:
    """Where the sandbox's interpreter is an image's (docker), the host's file at its
    path says nothing of it: `python -m venv /env` runs as it is, every time."""

    class ImageSandbox(BwrapSandbox):
        host_toolchain = False

    sandbox = ImageSandbox(state_dir=tmp_path / "sandbox")
    empty = EmptyEnvironments(sandbox, root=tmp_path / EMPTY, timeout=60)
    argv = [sandbox.toolchain.base_python, "-m", "venv", "/env"]
    assert await empty.copy(argv, tmp_path / "build", "base") is None
    assert not (tmp_path / EMPTY).exists()
    host = BwrapSandbox(state_dir=tmp_path / "sandbox2")
    on_host = EmptyEnvironments(host, root=tmp_path / EMPTY, timeout=60)
    own = ["python", "-m", "venv", "/env"]  # a repository's own command
    assert await on_host.copy(own, tmp_path / "build", "base") is None
