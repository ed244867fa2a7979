"""The arguments of the verbs that do more than call the service (``run``, ``score``),
kept apart from the verbs themselves so that building the parser imports nothing heavy:
``patchwarden --version`` or ``audit`` does not load the openai SDK or the sandbox."""

from __future__ import annotations

import argparse
import re
import time
from datetime import UTC, datetime
from pathlib import Path

from app.fixers import STRATEGIES

FAIL_ON = ("reject", "draft", "review", "never")


def run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", required=True, type=Path, help="a local git repository")
    parser.add_argument("--task", required=True, help="what to fix, in your own words")
    parser.add_argument(
        "--fixer",
        default="auto",
        metavar="NAME",
        help="auto (default): llm if a model is configured, else lint for a lint task; "
        "revert first with --alert. Or a fixer by name: llm, lint, revert, or any other "
        "the registry has (a wrong name lists them)",
    )
    parser.add_argument(
        "--strategy",
        choices=STRATEGIES,
        help="the llm fixer's strategy for this run, instead of the repository's "
        "fixers.llm.strategy: repair (localize, reproduce, sample whole functions, the "
        "tests choose), agent (a tool loop, for strong models), auto (repair, then the agent)",
    )
    parser.add_argument(
        "--alert",
        action="store_true",
        help="the task is a failing check on HEAD: find the culprit commit and revert it",
    )
    parser.add_argument("--check", help="with --alert: the failing check's name")
    parser.add_argument("--good", help="with --alert: a commit known to pass")
    parser.add_argument(
        "--body", type=Path, help="where to write the PR body (default: .git/patchwarden/)"
    )
    parser.add_argument(
        "--setup",
        action="append",
        metavar="CMD",
        help="a setup command for this run instead of the repository's `setup:` (repeat "
        "for several); pip, python and pytest in it mean the session's environment",
    )
    parser.add_argument(
        "--test", metavar="CMD", help="the test command for this run instead of `test:`"
    )
    parser.add_argument("--json", action="store_true", help="print the SessionResult as JSON")


def score_arguments(parser: argparse.ArgumentParser) -> None:
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


_RELATIVE = re.compile(r"^(\d+)\s*([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(value: str, *, now: float | None = None) -> float:
    """``30m``, ``2h``, ``7d`` ago, or an ISO 8601 time (UTC unless it says otherwise)."""
    now = time.time() if now is None else now
    match = _RELATIVE.match(value.strip())
    if match:
        return now - int(match.group(1)) * _UNITS[match.group(2)]
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--since takes 30m, 2h, 7d or an ISO time like 2026-11-22T10:00, not {value!r}"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()
