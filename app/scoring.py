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
import json
import subprocess
import sys
from pathlib import Path

from app.errors import PatchwardenError
from app.policy.config import LADDER, REPO_SOURCE, Policy, PolicyError, load_policy
from app.policy.score import Score, Trigger, score_diff
from app.publish.body import render_score
from app.sessions.policyfile import default_policy_text

FAIL_ON = ("reject", "draft", "review", "never")
GIT_TIMEOUT = 120.0


class ScoreInputError(PatchwardenError):
    """What ``patchwarden score`` was given cannot be scored; exit 2."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--diff", help="a unified diff file (git diff output), or - for stdin")
    source.add_argument("--repo", type=Path, help="a git repository: score --base...--head")
    parser.add_argument("--base", help="with --repo: the base revision (the PR's base)")
    parser.add_argument("--head", default="HEAD", help="with --repo: the head (default HEAD)")
    parser.add_argument(
        "--policy",
        type=Path,
        help="a policy file merged over the default, instead of the base's .github/patchwarden.yml",
    )
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown")
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="reject",
        help="exit 1 when the decision is this or more cautious (default: reject)",
    )
    parser.add_argument(
        "--summary",
        type=Path,
        help="also append the markdown verdict to this file (GitHub's $GITHUB_STEP_SUMMARY)",
    )
    parser.add_argument(
        "--default-policy", type=Path, help="the default policy file (default: the shipped one)"
    )


def run_score(args: argparse.Namespace) -> int:
    try:
        policy, text = _inputs(args)
    except (PatchwardenError, OSError) as exc:
        print(f"patchwarden score: {exc}", file=sys.stderr)
        return 2
    if not text.strip():
        print("patchwarden score: the change is empty: nothing to score", file=sys.stderr)
        return 2
    score = score_diff(text, policy, trigger=Trigger("human"))
    markdown = render_score(score)
    if args.summary is not None:
        with args.summary.open("a", encoding="utf-8") as out:
            out.write(markdown + "\n")
    if args.format == "json":
        print(json.dumps(score.to_json(), indent=2))
    else:
        print(markdown, end="")
    return 1 if fails(score, args.fail_on) else 0


def fails(score: Score, fail_on: str) -> bool:
    """Whether ``score``'s decision is ``fail_on`` or more cautious."""
    if fail_on == "never":
        return False
    return LADDER.index(score.decision) <= LADDER.index(fail_on)  # type: ignore[arg-type,unused-ignore]


def _inputs(args: argparse.Namespace) -> tuple[Policy, str]:
    default = default_policy_text(args.default_policy) if args.default_policy else None
    if default is None:
        default = default_policy_text()
    repo_text: str | None = None
    repo_source = REPO_SOURCE
    if args.policy is not None:
        repo_text = _read(args.policy, "--policy")
        repo_source = str(args.policy)
    if args.repo is not None:
        if not args.base:
            raise ScoreInputError("--repo needs --base (the revision the change is based on)")
        top = args.repo
        for rev in (args.base, args.head):
            _git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", what=rev)
        if args.policy is None:
            repo_text = _git_show(top, args.base, REPO_SOURCE)
            repo_source = f"{REPO_SOURCE} (at {args.base})"
        text = _git(
            top,
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
            raise ScoreInputError("--base goes with --repo; a --diff file is scored as it is")
        text = sys.stdin.read() if args.diff == "-" else _read(Path(args.diff), "--diff")
    try:
        policy = load_policy(default, repo_text, repo_source=repo_source)
    except PolicyError as exc:
        raise ScoreInputError(f"the policy is invalid: {exc}") from None
    return policy, text


def _read(path: Path, flag: str) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ScoreInputError(f"{flag} {path}: {exc.strerror}") from None


def _git(top: Path, *argv: str, what: str) -> str:
    try:
        done = subprocess.run(  # noqa: S603 - an argument list, no shell
            ["git", "-C", str(top), *argv],  # noqa: S607 - git from PATH, as everywhere
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ScoreInputError(f"git failed on {top}: {exc}") from None
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = reason[-1] if reason else f"exit code {done.returncode}"
        raise ScoreInputError(f"{top}: git does not know {what!r} ({detail})")
    return done.stdout.decode("utf-8", "replace")


def _git_show(top: Path, rev: str, path: str) -> str | None:
    """``path`` at ``rev``, or None if it is not there (any other failure is an error:
    scoring with the default policy because git failed would loosen the repository's)."""
    try:
        _git(top, "cat-file", "-e", f"{rev}:{path}", what=f"{rev}:{path}")
    except ScoreInputError:
        return None
    return _git(top, "show", f"{rev}:{path}", what=f"{rev}:{path}")
