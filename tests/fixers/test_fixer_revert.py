"""The revert fixer on generated histories: real git bisect in the real sandbox."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from app.fixers.culprit import RevertFixer, classify
from app.fixers.registry import KNOWN
from app.git import Remote, git_env
from app.policy.evidence import TestCounts, TestRun
from app.sessions.backends import BwrapSandbox
from app.sessions.pkgconfig import PackageConfig
from app.sessions.result import SessionResult
from app.sessions.sandbox import Mount
from app.sessions.session import SessionRunner
from app.sessions.task import SessionSpec, Task
from tests.conftest import CALC, CALC_TESTS, FLAKY_TESTS, cache_at, git_commit, make_project

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

FIXED_CALC = CALC.replace("a - b", "a + b")
BROKEN_CALC = FIXED_CALC.replace("a + b", "a + b + 1")
ALERT = Task("tests fail on main", kind="alert", check="tests")


def history(tmp_path: Path, commits: int, *, breaks_at: int) -> tuple[Path, dict[int, str]]:
    """A repository whose commit ``breaks_at`` (of ``commits``) breaks test_add; every
    other commit changes a file of its own. Returns the shas by commit number."""
    repo = make_project(tmp_path / "history", {"calc.py": FIXED_CALC, "test_calc.py": CALC_TESTS})
    shas = {1: _head(repo)}
    for n in range(2, commits + 1):
        if n == breaks_at:
            (repo / "calc.py").write_text(BROKEN_CALC)
            shas[n] = git_commit(repo, f"commit {n}: speed up add()", author="Mallory <m@ex.org>")
        else:
            (repo / "notes").mkdir(exist_ok=True)
            (repo / "notes" / f"{n}.txt").write_text(f"note {n}\n")
            shas[n] = git_commit(repo, f"commit {n}: note {n}")
    return repo, shas


def _head(repo: Path) -> str:
    done = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, env=git_env(repo), capture_output=True, check=True
    )
    return done.stdout.decode().strip()


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        env=git_env(repo),
        capture_output=True,
        check=True,
    )


def alert_spec(repo: Path, task: Task = ALERT) -> SessionSpec:
    return SessionSpec(remote=Remote("octo/history", str(repo)), task=task, job_id=5)


async def test_commit_17_of_30_is_found_and_reverted_and_the_tests_pass_again(
    runner: SessionRunner, tmp_path: Path
) -> None:
    repo, shas = history(tmp_path, 30, breaks_at=17)
    shown: list[str] = []
    result = await runner.run(alert_spec(repo), RevertFixer(), progress=shown.append)

    assert result.status == "patched", result.error
    assert result.fix is not None
    culprit = result.fix.culprit
    assert culprit is not None
    assert culprit.sha == shas[17]
    assert culprit.subject == "commit 17: speed up add()"
    assert culprit.author == "Mallory <m@ex.org>"
    assert culprit.merge is False
    assert f"# first bad commit: [{shas[17]}]" in culprit.bisect_log
    # The revert undoes commit 17 only; the 13 later commits stay.
    assert [f.path for f in result.diff.files] == ["calc.py"]
    assert "-    return a + b + 1\n+    return a + b" in result.diff.unified
    assert result.tests is not None
    assert result.tests.base is not None
    assert not result.tests.base.ok
    assert result.tests.fixed == ["test_calc::test_add"]
    assert result.tests.broken == []
    assert result.fix.summary.startswith(f"Reverts {shas[17][:12]} (commit 17: speed up add())")
    assert "reproduced in 3 of 3 runs" in result.fix.summary
    # 3 reproductions, probes 1, 2, 4, 8 (failing) and 16 back (commit 14, passing), then
    # bisect over commits 15-22: the summary says what ran, and counts it right.
    probes = [s for s in result.steps if s.name == "probe"]
    assert len(probes) == 5
    steps = len([s for s in result.steps if s.name == "bisect"])
    assert steps == 3  # 8 commits
    assert "; 5 commits tested looking back for it, then 3 bisect steps between them (" in (
        result.fix.summary
    )
    assert culprit.tested == 3 + 5 + steps
    assert f"({culprit.tested} test runs in all)" in result.fix.summary
    assert {s.tree for s in result.steps if s.name in ("reproduce", "probe")} == {None}
    assert any("bisecting 8 commits" in line for line in shown)
    # The failure is which tests fail, and every probe's verdict is in the log.
    assert "# failing on" in culprit.bisect_log
    assert "test_calc::test_add" in culprit.bisect_log
    assert culprit.bisect_log.count("\ngit bisect ") == 5 + steps
    assert "the first commit on which `test_calc::test_add` of `" in result.fix.summary
    assert "` fails. The failure reproduced" in result.fix.summary
    message = _message(runner, result)
    assert message == f'Revert "commit 17: speed up add()"\n\nThis reverts commit {shas[17]}.\n'


def _message(runner: SessionRunner, result: SessionResult) -> str:
    mirror = runner.cache.mirror_path(result.repo)
    done = subprocess.run(
        ["git", "--git-dir", str(mirror), "log", "-1", "--format=%B", result.head_sha or ""],
        env=git_env(mirror),
        capture_output=True,
        check=True,
    )
    return done.stdout.decode().rstrip("\n") + "\n"


async def test_a_flaky_test_is_recognised_and_not_reverted(
    runner: SessionRunner, tmp_path: Path
) -> None:
    # Fails one run in three: the third run of the reproduction fails, the others pass.
    repo = make_project(tmp_path / "flaky", {"calc.py": FIXED_CALC, "test_flaky.py": FLAKY_TESTS})
    (repo / "calc.py").write_text(BROKEN_CALC)  # a change bisect could wrongly blame
    git_commit(repo, "touch calc")
    result = await runner.run(alert_spec(repo), RevertFixer())

    assert result.status == "failed"
    assert result.error is not None
    assert result.error.startswith("flaky: `")
    assert "failed 1 of 3 runs" in result.error
    assert result.fix is not None
    assert result.fix.final is True
    assert result.fix.culprit is None
    assert result.head_sha is None
    assert [s.name for s in result.steps].count("reproduce") == 3
    assert not any(s.name == "git bisect" for s in result.steps)


async def test_a_merged_pull_request_is_reverted_as_a_whole_with_mainline_1(
    runner: SessionRunner, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "merges", {"calc.py": FIXED_CALC, "test_calc.py": CALC_TESTS})
    for n in range(2, 6):
        (repo / f"n{n}.txt").write_text(str(n))
        git_commit(repo, f"main {n}")
    good = _head(repo)
    _git(repo, "checkout", "-q", "-b", "feature")
    (repo / "calc.py").write_text(BROKEN_CALC)
    git_commit(repo, "feature: faster add")
    (repo / "feature.txt").write_text("more\n")
    git_commit(repo, "feature: docs")
    _git(repo, "checkout", "-q", "main")
    (repo / "main6.txt").write_text("6")
    git_commit(repo, "main 6")
    _git(
        repo, "merge", "-q", "--no-ff", "-m", "Merge pull request #42 from octo/feature", "feature"
    )
    merge = _head(repo)
    (repo / "after.txt").write_text("after\n")
    git_commit(repo, "after the merge")

    result = await runner.run(alert_spec(repo, Task("ci", kind="alert", good=good)), RevertFixer())

    assert result.status == "patched", result.error
    assert result.fix is not None
    assert result.fix.culprit is not None
    assert result.fix.culprit.sha == merge
    assert result.fix.culprit.merge is True
    assert result.fix.culprit.pull_request == 42
    assert result.fix.culprit.good == good
    assert {f.path for f in result.diff.files} == {"calc.py", "feature.txt"}
    assert result.tests is not None
    assert result.tests.fixed == ["test_calc::test_add"]
    assert "PR #42" in result.fix.summary
    message = _message(runner, result)
    assert message.startswith('Revert "Merge pull request #42 from octo/feature"\n\n')
    assert f"This reverts commit {merge}, reversing\nchanges made to " in message


async def test_a_failure_that_does_not_reproduce_reverts_nothing(
    runner: SessionRunner, tmp_path: Path
) -> None:
    repo, _ = history(tmp_path, 5, breaks_at=99)
    result = await runner.run(alert_spec(repo), RevertFixer())
    assert result.status == "failed"
    assert result.error is not None
    assert "the failure does not reproduce" in result.error
    assert "passed 3 of 3 runs" in result.error
    assert result.fix is not None
    assert result.fix.final is True


async def test_a_culprit_found_one_step_back_says_nothing_was_left_to_bisect(
    runner: SessionRunner, tmp_path: Path
) -> None:
    repo, shas = history(tmp_path, 3, breaks_at=3)
    result = await runner.run(alert_spec(repo), RevertFixer())
    assert result.status == "patched", result.error
    assert result.fix is not None
    assert result.fix.culprit is not None
    assert result.fix.culprit.sha == shas[3]
    assert [s.name for s in result.steps].count("bisect") == 0
    assert (
        f"{shas[2][:12]} passes; 1 commit tested looking back for it, and no commit was left "
        "between them to bisect (4 test runs in all)."
    ) in result.fix.summary


async def test_a_revert_that_conflicts_is_left_to_a_human(
    runner: SessionRunner, tmp_path: Path
) -> None:
    repo, shas = history(tmp_path, 8, breaks_at=4)
    # A later commit edits the very line commit 4 broke: the revert cannot apply.
    (repo / "calc.py").write_text(BROKEN_CALC.replace("a + b + 1", "(a + b) + 1"))
    git_commit(repo, "commit 9: parenthesise")
    result = await runner.run(alert_spec(repo), RevertFixer())

    assert result.status == "failed"
    assert result.error is not None
    assert f"the revert of {shas[4][:12]}" in result.error
    assert "conflicts with later changes in calc.py" in result.error
    assert result.fix is not None
    assert result.fix.culprit is not None
    assert result.fix.culprit.sha == shas[4]
    assert result.head_sha is None


async def test_a_check_named_in_the_config_is_the_command_bisect_runs(
    runner: SessionRunner, tmp_path: Path
) -> None:
    repo, shas = history(tmp_path, 6, breaks_at=3)
    config = 'revert:\n  reruns: 2\n  checks:\n    unit: "python -m pytest -q test_calc.py"\n'
    (repo / ".github").mkdir()
    (repo / ".github" / "patchwarden.yml").write_text(config)
    git_commit(repo, "commit 7: config")
    result = await runner.run(
        alert_spec(repo, Task("unit fails", kind="alert", check="unit")), RevertFixer()
    )
    assert result.status == "patched", result.error
    assert result.fix is not None
    assert result.fix.culprit is not None
    assert result.fix.culprit.sha == shas[3]
    reproduce = [s for s in result.steps if s.name == "reproduce"]
    assert len(reproduce) == 2
    assert reproduce[0].argv == ["python", "-m", "pytest", "-q", "test_calc.py"]


def _outcomes(**outcomes: str) -> TestRun:
    ids = {k.replace("__", "::").replace("_DOT_", "."): v for k, v in outcomes.items()}
    return TestRun(
        exit_code=1,
        counts=TestCounts(
            passed=sum(o == "passed" for o in ids.values()),
            failed=sum(o == "failed" for o in ids.values()),
            errored=sum(o == "errored" for o in ids.values()),
        ),
        outcomes=ids,  # type: ignore[arg-type]
    )


TARGET = frozenset({"t::add"})


@pytest.mark.parametrize(
    ("run", "target", "ok", "verdict"),
    [
        pytest.param(_outcomes(t__add="failed"), TARGET, False, "bad", id="fails-again"),
        pytest.param(_outcomes(t__add="errored"), TARGET, False, "bad", id="errors-again"),
        pytest.param(
            _outcomes(t__add="passed", t__mul="failed"),
            TARGET,
            False,
            "good",
            id="another-failure-is-not-this-one",
        ),
        pytest.param(
            _outcomes(t__add="passed", extra="errored"),
            TARGET,
            False,
            "good",
            id="an-unimportable-other-module-does-not-hide-the-answer",
        ),
        pytest.param(_outcomes(t="errored"), TARGET, False, "skip", id="cannot-collect-it"),
        pytest.param(TestRun(exit_code=4), TARGET, False, "skip", id="no-report-at-all"),
        pytest.param(_outcomes(u__x="passed"), TARGET, True, "good", id="not-there-yet"),
        pytest.param(TestRun(exit_code=1), None, False, "bad", id="no-reports-anywhere-fails"),
        pytest.param(TestRun(exit_code=0), None, True, "good", id="no-reports-anywhere-passes"),
    ],
)
def test_a_probe_reproduces_only_when_the_same_tests_fail(
    run: TestRun, target: frozenset[str] | None, ok: bool, verdict: str
) -> None:
    assert classify(run, target, ok=ok).verdict == verdict


def _commits(tmp_path: Path, changes: dict[int, dict[str, str]], total: int) -> dict[int, str]:
    repo = make_project(tmp_path / "history", {"calc.py": FIXED_CALC, "test_calc.py": CALC_TESTS})
    shas = {1: _head(repo)}
    for n in range(2, total + 1):
        files = changes.get(n, {f"notes/{n}.txt": f"note {n}\n"})
        for name, text in files.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        shas[n] = git_commit(repo, f"commit {n}")
    return shas


async def test_a_commit_that_only_adds_an_unimportable_test_is_not_blamed(
    runner: SessionRunner, tmp_path: Path
) -> None:
    # Commit 5 adds a test module that cannot import until commit 8 adds its helper;
    # commit 6 breaks add(). "Any failure" would blame commit 5.
    shas = _commits(
        tmp_path,
        {
            5: {"test_extra.py": "import helpers\n\n\ndef test_h():\n    assert helpers.X\n"},
            6: {"calc.py": BROKEN_CALC},
            8: {"helpers.py": "X = 1\n"},
        },
        total=12,
    )
    result = await runner.run(alert_spec(tmp_path / "history"), RevertFixer())

    assert result.status == "patched", result.error
    assert result.fix is not None
    assert result.fix.culprit is not None
    assert result.fix.culprit.sha == shas[6]
    assert f"git bisect good {shas[5]}" in result.fix.culprit.bisect_log


async def test_commits_whose_tests_cannot_be_collected_are_skipped_never_blamed(
    runner: SessionRunner, tmp_path: Path
) -> None:
    # In commits 5-7 test_calc.py itself cannot import; commit 6 breaks add() too.
    # Nothing tells 5, 6, 7 and 8 apart: say so, and revert nothing.
    unimportable = "import helpers  # noqa: F401\n" + CALC_TESTS
    shas = _commits(
        tmp_path,
        {
            5: {"test_calc.py": unimportable},
            6: {"calc.py": BROKEN_CALC},
            8: {"test_calc.py": CALC_TESTS},
        },
        total=12,
    )
    result = await runner.run(alert_spec(tmp_path / "history"), RevertFixer())

    assert result.status == "failed"
    assert result.error is not None
    assert "bisect cannot tell which of" in result.error
    assert shas[8][:12] in result.error
    assert shas[5][:12] in result.error
    assert "cannot collect test_calc here" in result.error
    assert result.head_sha is None


async def test_a_probe_whose_dependencies_differ_gets_its_own_setup(
    tmp_path: Path, empty_environments: Path
) -> None:
    # helper 1.0 until commit 6 pins helper 2.0 (and the code follows it); commit 8
    # breaks add(). With the base's environment (helper 2.0) every probe before
    # commit 6 would fail too, and no commit would look good.
    from tests.sessions.test_pkgconfig import _wheel

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for version in ("1.0", "2.0"):
        name, data = _wheel("pw_helper", version)
        (wheels / name).write_bytes(data)
    uses = "import pw_helper\n\nVERSION = {!r}\n\n\n" + FIXED_CALC
    # No index here (so no pytest to install): a plain command is the check.
    check = (
        "test: python -c 'import calc, pw_helper; assert pw_helper.VERSION == calc.VERSION; "
        "assert calc.add(2, 3) == 5'\n"
    )
    shas = _commits(
        tmp_path,
        {
            2: {
                "requirements.txt": "pw-helper==1.0\n",
                "calc.py": uses.format("1.0"),
                ".github/patchwarden.yml": check,
            },
            6: {"requirements.txt": "pw-helper==2.0\n", "calc.py": uses.format("2.0")},
            8: {"calc.py": uses.format("2.0").replace("a + b", "a + b + 1")},
        },
        total=12,
    )
    packages = PackageConfig(
        env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "/wheels"},
        mounts=(Mount(wheels, "/wheels"),),
    )
    runner = SessionRunner(
        fixers=KNOWN,
        cache=cache_at(tmp_path / "cache", empty_environments),
        sandbox=BwrapSandbox(state_dir=tmp_path / "sandbox"),
        packages=packages,
    )
    result = await runner.run(alert_spec(tmp_path / "history"), RevertFixer())

    assert result.fix is not None, (result.error, [s.output[-600:] for s in result.steps])
    assert result.fix.culprit is not None, result.error
    assert result.fix.culprit.sha == shas[8], result.fix.culprit.bisect_log
    assert f"git bisect good {shas[4]}" in result.fix.culprit.bisect_log
    assert len(list((tmp_path / "cache" / "envs" / "octo" / "history").glob("*/.complete"))) == 2


NODE_TESTS = """\
const test = require('node:test');
const assert = require('node:assert');
const { add, mul } = require('../calc');

test('adds', () => assert.strictEqual(add(2, 3), 5));
test('multiplies', () => assert.strictEqual(mul(2, 3), 6));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
async def test_on_an_npm_project_the_culprit_is_found_by_the_tests_it_fails(
    runner: SessionRunner, tmp_path: Path
) -> None:
    """`node --test` counted one by one, as pytest's tests are: commit 4 breaks
    `multiplies`, commit 7 adds a test that fails from then on. The bisect names the
    tests it chases, blames commit 4, and the revert fixes `multiplies` and leaves the
    other failure as it was."""
    package = '{"name": "calc", "version": "1.0.0", "scripts": {"test": "node --test"}}\n'
    calc = "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"
    repo = make_project(
        tmp_path / "history",
        {"package.json": package, "calc.js": calc, "test/calc.test.js": NODE_TESTS},
    )
    shas = {1: _head(repo)}
    for n in range(2, 11):
        if n == 4:
            (repo / "calc.js").write_text(calc.replace("a * b", "a * b + 1"))
        elif n == 7:
            (repo / "test" / "later.test.js").write_text(
                "require('node:test')('is pending', () => { throw new Error('not yet'); });\n"
            )
        else:
            (repo / f"note{n}.txt").write_text(f"note {n}\n")
        shas[n] = git_commit(repo, f"commit {n}")
    result = await runner.run(alert_spec(repo), RevertFixer())

    assert result.status == "patched", result.error
    assert result.fix is not None
    culprit = result.fix.culprit
    assert culprit is not None
    assert culprit.sha == shas[4]
    assert "# failing on " in culprit.bisect_log
    assert "is pending, multiplies" in culprit.bisect_log
    assert "of `node --test` fail" in result.fix.summary  # the command as the repository has it
    assert result.tests is not None
    assert result.tests.fixed == ["multiplies"]
    assert result.tests.already_failing == ["is pending"]
