"""``patchwarden run``: the whole pipeline on a local repository, no GitHub needed.

session → fixer → verification → the patch left in the repository as the branch
``patchwarden/<slug>`` (never checked out; your work tree is not touched) and the PR
body written to a file in git's directory (``.git/patchwarden/``). Progress goes to
stderr, one line per step with the time since the start; ``--json`` prints the
SessionResult on stdout.

Exit codes: 0 a verified patch (the tests pass on it and none broke), 1 the fixer gave
up or its patch did not verify, 2 bad input (not a git repository, uncommitted
changes, an unknown fixer, a missing model) with a one-line reason.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from app.config import Settings, load_settings
from app.errors import BadInput, ConfigError
from app.fixers.choose import budget_from, make_fixer
from app.fixers.registry import KNOWN
from app.git import Remote, git_env, run_git
from app.policy.score import Trigger, score_session
from app.publish.body import render_body
from app.sessions.factory import runner_from
from app.sessions.result import SessionResult
from app.sessions.task import SessionSpec, Task
from app.words import plural


def run_local(args: argparse.Namespace, *, settings: Settings | None = None) -> int:
    settings = settings or load_settings()
    clock = _Clock()
    try:
        if not args.repo.is_dir():
            raise BadInput(f"{args.repo} is not a directory")
        return asyncio.run(_run(args, settings, clock))
    except BadInput as exc:
        print(f"patchwarden run: {exc}", file=sys.stderr)
        return 2


class _Clock:
    def __init__(self) -> None:
        self.started = time.monotonic()

    def show(self, line: str) -> None:
        print(f"[{time.monotonic() - self.started:6.1f}s] {line}", file=sys.stderr, flush=True)


TITLE_CHARS = 200  # a pull request title's room, with some to spare


async def _run(args: argparse.Namespace, settings: Settings, clock: _Clock) -> int:
    checkout = await _work_tree(args.repo)
    top = checkout.top
    task_text = str(args.task).strip()
    if not task_text:
        raise BadInput("--task is empty: say what to fix")
    try:
        fixer = make_fixer(args.fixer, settings, strategy=args.strategy)
    except ConfigError as exc:
        raise BadInput(f"--fixer {args.fixer}: {exc}") from None
    task = _task(args, task_text)
    overrides: dict[str, object] = {}
    if args.setup:
        overrides["setup"] = list(args.setup)
    if args.test:
        overrides["test"] = args.test
    spec = SessionSpec(
        remote=Remote(_repo_name(top), str(top)),
        task=task,
        base=checkout.head,
        commands=overrides,
        budget=budget_from(settings),
    )
    runner = runner_from(settings, fixers=KNOWN)
    try:
        result = await runner.run(spec, fixer, progress=clock.show)
    finally:
        await fixer.aclose()
    if result.error_kind == "config":  # what `patchwarden validate` would refuse
        raise BadInput(f"{result.error} (check it with: patchwarden validate)")
    policy = result.policy
    if result.head_sha and policy is not None:
        branch = await _leave_branch(top, runner.cache.mirror_path(result.repo), result)
        if branch != result.branch:
            clock.show(
                f"{result.branch} has commits Patchwarden did not make (or is checked out): "
                f"left as it is; the patch is on {branch}"
            )
            result = result.model_copy(update={"branch": branch})
        body = _write_body(args, settings, checkout, result, spec, clock)
        clock.show(f"branch {result.branch} in {top}; PR body in {body}")
    verified, verdict = _verdict(result)
    clock.show(verdict)
    if not verified and not args.json:
        for line in _failed_tail(result):
            print(f"    {line}", file=sys.stderr)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    elif result.fix is not None and result.fix.summary:
        print(result.fix.summary)
    return 0 if verified else 1


def _task(args: argparse.Namespace, task_text: str) -> Task:
    title = task_text.splitlines()[0][:TITLE_CHARS]  # whole: the subject line shortens it
    return Task(
        title,
        kind="alert" if args.alert else "fix",
        fixer=None if args.fixer == "auto" else args.fixer,
        instructions=task_text,
        check=args.check,
        good=args.good,
    )


def _write_body(
    args: argparse.Namespace,
    settings: Settings,
    checkout: _Checkout,
    result: SessionResult,
    spec: SessionSpec,
    clock: _Clock,
) -> Path:
    """Score the session as the App would, and write the PR body it would open."""
    assert result.policy is not None
    score = score_session(
        result,
        result.policy,
        trigger=Trigger("manual"),
        max_tokens=spec.budget.max_tokens,
        max_cost_usd=spec.budget.max_cost_usd,
    )
    clock.show(f"risk {score.score}/100 ({score.risk}): {score.decision}")
    name = result.branch.replace("/", "-") + ".md"
    body: Path = args.body or checkout.git_dir / "patchwarden" / name
    body.parent.mkdir(parents=True, exist_ok=True)
    body.write_text(render_body(result, score, title=spec.task.title, bot=settings.bot_name))
    return body


@dataclass(frozen=True)
class _Checkout:
    top: Path  # the work tree's top directory
    git_dir: Path  # where git keeps its files (not top/.git in a worktree or submodule)
    head: str


async def _work_tree(path: Path) -> _Checkout:
    """The repository's work tree, git directory and HEAD commit; BadInput if unusable."""
    env = git_env(Path.home())
    done = await run_git(["-C", str(path), "rev-parse", "--show-toplevel"], env=env, check=False)
    if done.returncode != 0:
        raise BadInput(f"{path} is not a git repository (git init, then commit what to fix)")
    top = Path(done.stdout.decode().strip())
    head = await run_git(
        ["-C", str(top), "rev-parse", "--verify", "--quiet", "HEAD"], env=env, check=False
    )
    if head.returncode != 0:
        raise BadInput(f"{top} has no commits yet: the session starts from HEAD")
    status = await run_git(
        ["-C", str(top), "status", "--porcelain", "--untracked-files=no"], env=env, check=False
    )
    if status.stdout.strip():
        changed = len(status.stdout.decode().splitlines())
        raise BadInput(
            f"{top} has uncommitted changes ({plural(changed, 'file')}): "
            "commit or stash them first; "
            "the session starts from HEAD and would not see them"
        )
    git_dir = await run_git(["-C", str(top), "rev-parse", "--absolute-git-dir"], env=env)
    return _Checkout(top, Path(git_dir.stdout.decode().strip()), head.stdout.decode().strip())


def _repo_name(top: Path) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", top.name).strip("-.") or "repo"
    return f"local/{slug}"


MAX_NAMES = 100


async def _leave_branch(top: Path, mirror: Path, result: SessionResult) -> str:
    """Put the patch commit in the user's repository as ``result.branch``, and return
    the branch name used.

    The branch moves only when its head is the commit Patchwarden itself left there
    (recorded as ``refs/patchwarden/left/<branch>``) and no work tree has it checked
    out: a commit a person made on it since, or a branch Patchwarden never left, is
    never overwritten — the patch goes to the first free ``<branch>-2``, ``-3``…
    instead. The branch and the record move together, only from the head seen (one
    ``git update-ref --stdin`` transaction: a compare-and-swap)."""
    assert result.head_sha is not None
    env = git_env(Path.home())

    async def git(*args: str, stdin: bytes | None = None) -> str:
        done = await run_git(["-C", str(top), *args], env=env, check=False, stdin=stdin)
        return done.stdout.decode().strip() if done.returncode == 0 else ""

    await run_git(
        [
            "-C",
            str(top),
            "fetch",
            "--quiet",
            "--no-tags",
            str(mirror),
            f"refs/patchwarden/{result.branch}",
        ],
        env=env,
    )
    new = result.head_sha  # not FETCH_HEAD: another fetch may have written it since
    worktrees = await git("worktree", "list", "--porcelain")
    checked_out = {
        ln.removeprefix("branch ") for ln in worktrees.splitlines() if ln.startswith("branch ")
    }
    for n in range(1, MAX_NAMES + 1):
        name = result.branch if n == 1 else f"{result.branch}-{n}"
        ref = f"refs/heads/{name}"
        head = await git("rev-parse", "--verify", "--quiet", ref)
        left = await git("rev-parse", "--verify", "--quiet", f"refs/patchwarden/left/{name}")
        if head and (head not in (left, new) or ref in checked_out):
            continue  # a person's commit, or a branch someone works on: not Patchwarden's
        # An empty old value: the ref must not exist yet (SHA-1 and SHA-256 alike).
        moves = (
            f"start\nupdate {ref} {new} {head}\nupdate refs/patchwarden/left/{name} {new}\ncommit\n"
        )
        done = await run_git(
            ["-C", str(top), "update-ref", "-m", "patchwarden run", "--stdin"],
            env=env,
            check=False,
            stdin=moves.encode(),
        )
        if done.returncode == 0:
            return name
        # It moved since we looked (or the name cannot be a branch): the next name.
    raise BadInput(
        f"{result.branch} and {MAX_NAMES - 1} numbered names after it hold commits that are "
        f"not Patchwarden's: delete the ones you no longer need (git branch -D)"
    )


def _failed_tail(result: SessionResult, lines: int = 15) -> list[str]:
    """The last lines of the step that failed (setup, the tests), to read without --json."""
    # The reproduction run fails on purpose: the patch's tests against the base code.
    steps = [s for s in result.steps if s.name != "reproduce"]
    failed = [s for s in steps if s.exit_code not in (0, None) or s.timed_out]
    if not failed:
        return []
    step = failed[-1]
    text = [ln for ln in step.output.splitlines() if ln.strip()][-lines:]
    return [f"`{' '.join(step.argv)}` ({step.phase}, exit {step.exit_code}) ended with:", *text]


def _verdict(result: SessionResult) -> tuple[bool, str]:
    if result.status == "failed":
        return False, f"no patch: {result.error}"
    if result.status == "no-change":
        return False, "no patch: the fixer changed nothing"
    tests = result.tests
    if tests is not None and tests.broken:
        return False, f"the patch breaks {', '.join(tests.broken[:5])}"
    if tests is not None and not tests.passing:
        return False, "the patch does not pass the tests"
    checked = "the tests pass" if tests is not None else "no test command is known"
    if tests is not None and tests.only_already_failing:
        n, names = len(tests.already_failing), ", ".join(tests.already_failing[:3])
        more = " and more" if n > 3 else ""
        checked += f" but for {n} already failing on the base alike ({names}{more})"
    return True, f"verified patch {result.head_sha and result.head_sha[:12]}: {checked}"
