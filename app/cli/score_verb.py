"""``patchwarden score``: the risk score of any change, a bot's or a person's.

The change comes from a diff file (``--diff FILE``, ``-`` for stdin) or a git range
(``--repo PATH --base REV [--head REV]``, the change ``head`` makes since it forked from
``base``, as GitHub shows a pull request). The policy is ``policies/default.yml`` with
the repository's ``.github/patchwarden.yml`` merged over it, read from ``base`` (never
from ``head``), or the file ``--policy`` names.

Exit codes: 0 the decision is better than ``--fail-on`` (default ``reject``: only a
rejected change fails), 1 it is not, 2 bad input (an unreadable diff file, a range git
does not know, an invalid policy), with a one-line reason.

A person's change is scored as the engine scores Patchwarden's own, minus what only a
session knows (tests and findings: CI checks those) and without ``autonomy``, which says
what Patchwarden itself may do.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path

from app.config import Settings, load_settings
from app.errors import BadInput, PatchwardenError
from app.fixers.registry import KNOWN
from app.git import git_env, run_git
from app.policy.policy_model import LADDER, REPO_SOURCE, Policy, PolicyError, load_policy
from app.policy.score import Score, Trigger, score_diff
from app.publish.body import render_score
from app.sessions.policyfile import DEFAULT_POLICY, default_policy_text


def run_score(args: argparse.Namespace, *, settings: Settings | None = None) -> int:
    try:
        settings = settings or load_settings()
        policy, text = asyncio.run(_inputs(args, settings.default_policy or DEFAULT_POLICY))
    except (PatchwardenError, OSError) as exc:
        print(f"patchwarden score: {exc}", file=sys.stderr)
        return 2
    if not text.strip():
        print("patchwarden score: the change is empty: nothing to score", file=sys.stderr)
        return 2
    score = score_diff(text, policy, trigger=Trigger("human"))
    markdown = render_score(score, person=True)
    if args.summary is not None:
        try:
            with args.summary.open("a", encoding="utf-8") as out:
                out.write(markdown + "\n")
        except OSError as exc:
            print(f"patchwarden score: --summary {args.summary}: {exc.strerror}", file=sys.stderr)
            return 2
    if args.format == "json":
        print(json.dumps(score.to_json(), indent=2))
    else:
        print(markdown, end="")
    return 1 if fails(score, args.fail_on) else 0


_DIFF_LINE = re.compile(r"^(?:diff --git |--- |\+\+\+ |Binary files )", re.M)


def fails(score: Score, fail_on: str) -> bool:
    """Whether ``score``'s decision is ``fail_on`` or more cautious."""
    if fail_on == "never":
        return False
    return LADDER.index(score.decision) <= LADDER.index(fail_on)  # type: ignore[arg-type,unused-ignore]


async def _inputs(args: argparse.Namespace, default_policy: Path) -> tuple[Policy, str]:
    default = default_policy_text(default_policy)
    repo_text: str | None = None
    repo_source = REPO_SOURCE
    if args.policy is not None:
        repo_text = _read(args.policy, "--policy")
        repo_source = str(args.policy)
    if args.repo is not None:
        if not args.base:
            raise BadInput("--repo needs --base (the revision the change is based on)")
        git = _Git(args.repo)
        for rev in (args.base, args.head):
            await git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", what=rev)
        if args.policy is None:
            # Read from the base, never the head: a change cannot loosen its own policy.
            if await git.has(f"{args.base}:{REPO_SOURCE}"):
                repo_text = await git("show", f"{args.base}:{REPO_SOURCE}", what=REPO_SOURCE)
            repo_source = f"{REPO_SOURCE} (at {args.base})"
        text = await git(
            "diff",
            "--binary",
            "-M",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            f"{args.base}...{args.head}",
            what=f"{args.base}...{args.head}",
        )
    else:
        if args.base:
            raise BadInput("--base goes with --repo; a --diff file is scored as it is")
        text = sys.stdin.read() if args.diff == "-" else _read(Path(args.diff), "--diff")
        if text.strip() and not _DIFF_LINE.search(text):
            raise BadInput(
                f"{args.diff} is not a diff (no `diff --git` or `---`/`+++` lines): give "
                "the output of `git diff`, or --repo with --base"
            )
    try:
        policy = load_policy(default, repo_text, repo_source=repo_source, fixers=KNOWN)
    except PolicyError as exc:
        raise BadInput(f"the policy is invalid: {exc}") from None
    return policy, text


def _read(path: Path, flag: str) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise BadInput(f"{flag} {path}: {exc.strerror}") from None


class _Git:
    """Host-side git on the repository being scored, hardened as everywhere
    (app/sessions/workspace.run_git: no hooks, no fsmonitor, no inherited config)."""

    def __init__(self, top: Path) -> None:
        self.top = top
        self.env = git_env(Path.home())

    async def __call__(self, *argv: str, what: str) -> str:
        done = await run_git(["-C", str(self.top), *argv], env=self.env, check=False)
        if done.returncode != 0:
            reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
            detail = reason[-1] if reason else f"exit code {done.returncode}"
            raise BadInput(f"{self.top}: git does not know {what!r} ({detail})")
        return done.stdout.decode("utf-8", "replace")

    async def has(self, spec: str) -> bool:
        """Whether ``rev:path`` exists (any other failure is an error, never "absent":
        scoring with the defaults because git failed would loosen the repository's policy)."""
        done = await run_git(["-C", str(self.top), "cat-file", "-e", spec], env=self.env,
                             check=False)  # fmt: skip
        return done.returncode == 0
