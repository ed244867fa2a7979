"""Build bench/realbugs/bugs.json: collect BugsInPy's bugs, then verify each here.

    .venv/bin/python bench/realbugs/build.py collect --bugsinpy DIR
    .venv/bin/python bench/realbugs/build.py verify --sources DIR [--only ID ...] [--project P]
        [--again | --retry]

``collect`` reads a clone of soarsmu/BugsInPy (a work tree or a bare one) for the nine
projects this set uses and writes one entry per bug: the commits, the fail-to-pass
tests (``run_test.sh``'s ``unittest`` names and pytest node ids, as pytest node ids),
the test files, the non-test files the fix changes (the paths ``bug_patch.txt`` names:
no code is copied) and the project's setup for Python 3.11 (:data:`SETUP`). An entry
already in the manifest keeps what was verified and its issue text.

``verify`` builds each bug's ``ci`` task from the project's clone under ``--sources``
and runs, in the sandbox (setup with the network, the tests without): the
fail-to-pass tests on the buggy tree (each must fail or error) and on the fix's tree
(each must pass). Only a bug that does both is used by the eval; what was seen is
written into the manifest after each bug, so a run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE.parent), str(ROOT)]

from app.fixers.registry import KNOWN  # noqa: E402
from app.sessions.backends import BwrapSandbox  # noqa: E402
from app.sessions.environment import Environment, SetupFailed  # noqa: E402
from app.sessions.mirrors import WorkspaceCache  # noqa: E402
from app.sessions.repo_commands import detect  # noqa: E402
from app.sessions.session import SessionRunner  # noqa: E402
from app.sessions.verify import Verifier  # noqa: E402
from realbugs import (  # noqa: E402
    GIT,
    MANIFEST,
    RealBug,
    config_of,
    extract,
    load,
    materialise,
    save,
    source_of,
)

PROJECTS = {
    "youtube-dl": "https://github.com/ytdl-org/youtube-dl",
    "black": "https://github.com/psf/black",
    "luigi": "https://github.com/spotify/luigi",
    "cookiecutter": "https://github.com/cookiecutter/cookiecutter",
    "httpie": "https://github.com/httpie/cli",
    "fastapi": "https://github.com/tiangolo/fastapi",
    "sanic": "https://github.com/sanic-org/sanic",
    "tornado": "https://github.com/tornadoweb/tornado",
    "scrapy": "https://github.com/scrapy/scrapy",
}
# What setup installs for each project on Python 3.11, as a maintainer would write it
# (`python -m venv /env` comes first by itself). Projects that need nothing but the
# standard library run from the tree.
SETUP: dict[str, tuple[str, ...]] = {
    "youtube-dl": ("pip install pytest",),
    "tornado": ("pip install pytest",),
    "httpie": ("pip install pytest pytest-httpbin mock", "pip install -e ."),
    "cookiecutter": ("pip install pytest pytest-mock pytest-cov freezegun", "pip install -e ."),
    "black": ("pip install pytest aiohttp", "pip install -e ."),
    "fastapi": (
        "pip install pytest requests sqlalchemy databases[sqlite] orjson ujson "
        "email_validator python-multipart aiofiles passlib pyjwt async_exit_stack "
        "async_generator",
        "pip install -e .",
    ),
    "sanic": ("pip install pytest pytest-sanic pytest-benchmark httpx", "pip install -e ."),
    "luigi": ("pip install pytest mock", "pip install -e ."),
    "scrapy": ("pip install pytest testfixtures pyftpdlib", "pip install -e ."),
}
_UNITTEST = re.compile(r"python -m unittest(?: -q)? ([\w.]+)")
_PYTEST = re.compile(r"(?:pytest|tox)\s+(\S+::\S+|\S+\.py)")
_PATCHED = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)
_TEST_PATH = re.compile(r"(?:^|/)tests?/")


def _show(repo: Path, path: str) -> str:
    done = subprocess.run(
        [GIT, "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, check=False
    )
    data = done.stdout if done.returncode == 0 else b""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    return data.decode("utf-8", "replace")


def _names(repo: Path, folder: str) -> list[str]:
    done = subprocess.run(
        [GIT, "-C", str(repo), "ls-tree", "--name-only", f"HEAD:{folder}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.split()


def node_ids(run_test: str, test_files: Sequence[str]) -> list[str]:
    """``run_test.sh``'s tests as pytest node ids: ``python -m unittest
    test.test_utils.TestUtil.test_x`` is ``test/test_utils.py::TestUtil::test_x`` (the
    test file whose module the dotted name starts with)."""
    found: list[str] = []
    for line in run_test.splitlines():
        m = _UNITTEST.search(line)
        if m:
            dotted = m.group(1)
            for test_file in test_files:
                module = test_file.removesuffix(".py").replace("/", ".")
                if dotted == module or dotted.startswith(module + "."):
                    rest = dotted.removeprefix(module).lstrip(".")
                    found.append("::".join([test_file, *rest.split(".")]) if rest else test_file)
                    break
            continue
        m = _PYTEST.search(line)
        if m:
            found.append(m.group(1))
    return list(dict.fromkeys(found))


def collect(bugsinpy: Path) -> list[RealBug]:
    """Every bug of the nine projects in a BugsInPy clone, with what the manifest
    already knows of each kept."""
    known = {b.id: b for b in load(verified_only=False)} if MANIFEST.exists() else {}
    bugs = []
    for project, url in PROJECTS.items():
        for number in sorted(_names(bugsinpy, f"projects/{project}/bugs"), key=int):
            folder = f"projects/{project}/bugs/{number}"
            info = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', _show(bugsinpy, f"{folder}/bug.info")))
            named = [t.strip() for t in info.get("test_file", "").split(";") if t.strip()]
            tests = node_ids(_show(bugsinpy, f"{folder}/run_test.sh"), named)
            patched = {b for _, b in _PATCHED.findall(_show(bugsinpy, f"{folder}/bug_patch.txt"))}
            # The fix's test side: the files BugsInPy names and what the fix changes under a
            # test folder (data files the tests read)
            test_files = sorted({*named, *(p for p in patched if _TEST_PATH.search(p))})
            bug = RealBug(
                id=f"{project}-{number}",
                project=project,
                repository=url,
                buggy=info["buggy_commit_id"],
                fixed=info["fixed_commit_id"],
                test_files=tuple(test_files),
                tests=tuple(tests),
                files=tuple(sorted(p for p in patched if p not in test_files)),
                setup=SETUP[project],
            )
            old = known.get(bug.id)
            if old is not None:
                bug = replace(bug, verified=old.verified)
                if old.setup != SETUP[project] and old.verified.get("ok"):
                    bug = replace(bug, setup=old.setup)  # what it was verified with
            bugs.append(bug)
    return bugs


async def verify_one(bug: RealBug, sources: Path, runner: SessionRunner, work: Path) -> dict:
    """What the fail-to-pass tests do on the buggy tree and on the fix, in the sandbox."""
    started = time.monotonic()
    buggy = materialise(bug, sources, work / "buggy", kind="ci")
    fixed = work / "fixed"
    fixed.mkdir()
    extract(source_of(bug, sources), bug.fixed, fixed)
    (fixed / ".github").mkdir(exist_ok=True)
    (fixed / ".github" / "patchwarden.yml").write_text(config_of(bug))
    base_python = runner.sandbox.toolchain.base_python
    commands = detect(buggy, base_python=base_python)
    runner.sandbox.prepare_writable(buggy)  # setup may write into the tree (a version file)
    try:
        env = await runner.environments.ensure(
            f"realbugs/{bug.project}", commands, buggy, steps=[], secrets=[]
        )
    except SetupFailed as exc:
        return {"ok": False, "why": f"setup: {str(exc)[-400:]}"}
    seen: dict[str, dict[str, Any]] = {}
    for label, tree in (("buggy", buggy), ("fixed", fixed)):
        seen[label], tail = await fail_to_pass(bug, tree, env, runner, work)
        if seen[label]["exit"] not in (0, 1):  # not a test's verdict: say what pytest said
            seen[label]["tail"] = tail.splitlines()[-8:]
    b, f = seen["buggy"], seen["fixed"]
    ok = bool(b["failing"]) and f["exit"] == 0 and not f["failing"] and f["passing"] > 0
    return {
        "ok": ok,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "seconds": round(time.monotonic() - started, 1),
        **seen,
    }


async def fail_to_pass(
    bug: RealBug, tree: Path, env: Environment | None, runner: SessionRunner, scratch: Path
) -> tuple[dict[str, Any], str]:
    """The bug's fail-to-pass tests run on ``tree`` with ``env`` (its generated files put
    in first), in the sandbox: the exit status, the failing ids (ten at most), how many
    passed, and the run's output. Verification and the eval's hidden check both read it."""
    if env is not None:
        env.apply(tree)
    runner.sandbox.prepare_writable(tree)
    commands = detect(tree, base_python=runner.sandbox.toolchain.base_python)
    exact = replace(commands, test=["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"])
    step, run = await Verifier(runner.sandbox, scratch=scratch).tests(
        tree, env.path if env else None, exact, label="base", extra=list(bug.tests)
    )
    bad = sorted(t for t, o in run.outcomes.items() if o in ("failed", "errored"))
    good = sum(1 for o in run.outcomes.values() if o == "passed")
    seen = {"exit": run.exit_code, "failing": bad[:10], "passing": good}
    return seen | ({"timed_out": True} if run.timed_out else {}), step.output.strip()


async def verify(
    sources: Path, only: list[str], project: str | None, *, again: bool, retry: bool
) -> int:
    bugs = load(verified_only=False)
    runner = SessionRunner(
        fixers=KNOWN,
        cache=WorkspaceCache(ROOT / ".eval" / "realbugs-cache"),
        sandbox=BwrapSandbox(state_dir=ROOT / ".eval" / "realbugs-sandbox"),
    )
    for n, bug in enumerate(bugs):
        if (only and bug.id not in only) or (project and bug.project != project):
            continue
        if bug.verified and not again and not only and not (retry and not bug.verified["ok"]):
            continue
        with tempfile.TemporaryDirectory(prefix=f"realbug-{bug.id}-") as tmp:
            try:
                seen = await verify_one(bug, sources, runner, Path(tmp))
            except (RuntimeError, OSError) as exc:
                seen = {"ok": False, "why": str(exc)[-400:]}
        bugs[n] = replace(bug, verified=seen)
        # Read again before writing: another verify (another project) may run beside this one
        save([bugs[n] if b.id == bug.id else b for b in load(verified_only=False)])
        print(f"[realbugs] {bug.id}: {'verified' if seen['ok'] else 'NOT verified'} {seen}")
    print(f"verified: {sum(1 for b in bugs if b.verified.get('ok'))} of {len(bugs)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    c = verbs.add_parser("collect", help="read BugsInPy into the manifest")
    c.add_argument("--bugsinpy", type=Path, required=True)
    v = verbs.add_parser("verify", help="check each bug fails before and passes after")
    v.add_argument("--sources", type=Path, required=True, help="a clone per project")
    v.add_argument("--only", action="append", default=[])
    v.add_argument("--project")
    v.add_argument("--again", action="store_true", help="verify bugs verified before too")
    v.add_argument("--retry", action="store_true", help="verify again the bugs that failed")
    args = parser.parse_args()
    if args.verb == "collect":
        bugs = collect(args.bugsinpy)
        save(bugs)
        print(f"{len(bugs)} bugs collected into {MANIFEST}")
        return 0
    if shutil.which("bwrap") is None:
        print("verify needs bubblewrap (apt-get install bubblewrap)")
        return 2
    return asyncio.run(
        verify(args.sources, args.only, args.project, again=args.again, retry=args.retry)
    )


if __name__ == "__main__":
    sys.exit(main())
