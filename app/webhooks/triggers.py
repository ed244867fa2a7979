"""Who may trigger what, decided from data alone. No I/O, no clock.

The handlers in this package call these functions and then act (look up a
permission, react, enqueue). Everything here is tested table-driven. A user's role
(``role_of``) and the role names live in :mod:`app.github.repos`, shared with the
pipeline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from app.fixers import registry
from app.github.repos import MAINTAINER_ROLES, WRITE_ROLES
from app.store.models import CheckRecord
from app.untrusted.markdown import visible_text
from app.webhooks.payloads import (
    CheckRunEvent,
    Envelope,
    IssueCommentEvent,
    IssuesEvent,
    StatusEvent,
    User,
    WorkflowRunEvent,
)

FAILED_CONCLUSIONS = frozenset({"failure", "timed_out", "startup_failure"})
FIX_LABEL = "patchwarden:fix"


@dataclass(frozen=True)
class Rule:
    """One comment command: where it works, who may give it, the words after the
    mention that give it (a regular expression), and how to ask for it, for the answer
    to someone who may not (``{bot}``: the App's name)."""

    where: Literal["issue", "pull request", "anywhere"]
    who: Literal["write", "maintain"]  # admin, maintain or write; or admin or maintain
    words: str
    ask: str = "ask"


# Patchwarden's own ``@patchwarden …`` commands, one record each; its handler is in
# app/webhooks/commands.py under the same name.
BUILT_IN: dict[str, Rule] = {
    "fix": Rule(  # a coding session (also `/fix`)
        "issue",
        "write",
        r"fix(?:\s+this)?",
        f"comment `@{{bot}} fix this` on this issue or add the `{FIX_LABEL}` label",
    ),
    "ship": Rule("pull request", "write", r"ship\s+it"),  # merge when the checks pass
    "revert": Rule("pull request", "write", "revert"),  # revert a merged change
    "pause": Rule("anywhere", "maintain", "pause"),  # nothing starts or merges here
    "resume": Rule("anywhere", "maintain", "resume"),
    "trust": Rule("anywhere", "maintain", "trust"),  # trust reset [kind]
    "ignore": Rule("anywhere", "write", "ignore"),  # on a watch's issue: not raised again
}


def with_fixer_words(words: Iterable[str]) -> dict[str, Rule]:
    """Every command: Patchwarden's own, and one per fixer word (its handler is
    ``fix``'s). ValueError when a word is already a command: it would replace it."""
    taken = sorted(set(words) & BUILT_IN.keys())
    if taken:
        raise ValueError(f"fixer words that are commands already: {', '.join(taken)}")
    return BUILT_IN | {
        word: Rule("issue", "write", re.escape(word), f"comment `@{{bot}} {word}` on this issue")
        for word in words
    }


# A fixer's own words (its record's) ask for a fix by that fixer: `@patchwarden lint`.
FIXER_WORDS: dict[str, str] = {w: r.name for r in registry.RECORDS.values() for w in r.words}
COMMANDS: dict[str, Rule] = with_fixer_words(FIXER_WORDS)


@dataclass(frozen=True)
class Command:
    """A command addressed to the bot: ``name`` and free-text ``instructions``."""

    name: str
    instructions: str = ""


@dataclass(frozen=True)
class Screen:
    """What to do with an event before any lookup: ignore it, or check the sender."""

    verdict: Literal["ignore", "check_permission"]
    reason: str
    command: Command | None = None


AUDIT_ACTIONS = {
    "trigger": "trigger.accepted",
    "refuse": "trigger.refused",
    "error": "trigger.failed_closed",
}


@dataclass(frozen=True)
class Admission:
    verdict: Literal["trigger", "refuse", "error"]
    reason: str

    @property
    def audit_action(self) -> str:
        return AUDIT_ACTIONS[self.verdict]


def _command_patterns(bot_name: str) -> list[tuple[str, re.Pattern[str]]]:
    bot = re.escape(bot_name)
    mention = rf"@{bot}(?:\[bot\])?"
    end = r"(?![\w-])(?P<rest>.*)$"
    slash = {"fix": "|/fix"}  # GitHub's slash-command habit, for fix alone
    return [
        (name, re.compile(rf"^(?:{mention}\s+{rule.words}{slash.get(name, '')}){end}", re.I))
        for name, rule in COMMANDS.items()
    ]


def _live_lines(body: str) -> list[str]:
    """The lines a human wrote as their own words, read as GitHub shows the comment
    (:func:`app.untrusted.markdown.visible_text`): quotes (a ``>`` block with its lazy
    continuation lines, ``<blockquote>``), code (spans stay as code, blocks and
    ``<pre>``/``<code>`` go), HTML comments, hidden elements and raw HTML blocks are
    not; list items and headings keep their markers, so no command starts those lines.
    """
    return visible_text(body, own_words=True).split("\n")


def parse_command(body: str | None, *, bot_name: str) -> Command | None:
    """Find the first command line in a comment, e.g. ``@patchwarden fix this: use utf-8``.

    A command must start a line of a paragraph the commenter wrote, as GitHub renders
    it: plain text, also inside ``<details>``. Quotes (``> …`` and the lines that
    continue it lazily, ``<blockquote>``), code (spans, fenced or indented blocks,
    ``<pre>``, ``<code>``), HTML comments, hidden elements, list items, headings and
    tables never count, so quoting someone else's command does nothing. The
    instructions are the rest of the command's line and the live lines after it.
    """
    if not body:
        return None
    lines = _live_lines(body)
    patterns = _command_patterns(bot_name)
    for index, line in enumerate(lines):
        for name, pattern in patterns:
            match = pattern.match(line)
            if match is None:
                continue
            first = match.group("rest").strip().lstrip(":,.!\u2013\u2014-").strip()
            more = "\n".join(lines[index + 1 :]).strip()
            instructions = "\n\n".join(part for part in (first, more) if part)
            return Command(name=name, instructions=instructions[:4000])
    return None


def is_bot(user: User | None) -> bool:
    """Bots (including this App) never trigger anything."""
    if user is None:
        return True
    return user.type == "Bot" or user.login.lower().endswith("[bot]")


def screen_comment(data: IssueCommentEvent, *, bot_name: str) -> Screen:
    """Decide whether a new comment gives the bot a command it can take where it was
    written (``COMMANDS``): every command is screened here, before any lookup."""
    if data.action != "created":
        return Screen("ignore", f"comment {data.action}, only new comments count")
    if is_bot(data.sender) or is_bot(data.comment.user):
        return Screen("ignore", "comment by a bot")
    command = parse_command(data.comment.body, bot_name=bot_name)
    if command is None:
        return Screen("ignore", "no command for the bot in the comment")
    on_pull = bool(data.issue.pull_request)
    where = COMMANDS[command.name].where
    if where == "issue" and on_pull:
        return Screen("ignore", f"`{command.name}` on a pull request: it works on an issue")
    if where == "pull request" and not on_pull:
        return Screen("ignore", f"`{command.name}` only works on a pull request")
    return Screen("check_permission", f"{command.name} requested", command)


_REVERTS = re.compile(r"\AReverts ([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(\d{1,10})\s*\Z")


def reverted_by_button(body: str | None, *, repo: str) -> int | None:
    """The pull request a pull request made with GitHub's *Revert* button reverts: its
    body is exactly ``Reverts owner/name#N`` (of the same repository), until someone
    edits it; None otherwise."""
    found = _REVERTS.match((body or "").strip())
    if found is None or found.group(1).lower() != repo.lower():
        return None
    return int(found.group(2))


TRUST_KIND = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,39}")


def parse_trust(instructions: str) -> str | None:
    """``trust reset`` -> ``*`` (every kind), ``trust reset lint`` -> ``lint``; None for
    anything else (the handler answers with the usage)."""
    words = instructions.split()
    if not words or words[0].lower() != "reset" or len(words) > 2:
        return None
    if len(words) == 1:
        return "*"
    kind = words[1].strip("`")  # as the policy names it: categories keep their case
    return kind if TRUST_KIND.fullmatch(kind) else None


def decide_maintainer(role: str | None, *, error: str | None = None) -> Admission:
    """Pausing, resuming and resetting trust on a repository: admin or maintain only."""
    if error is not None:
        return Admission("error", f"could not check permission: {error}")
    if role in MAINTAINER_ROLES:
        return Admission("trigger", f"{role} access")
    return Admission("refuse", f"{role or 'no'} access; admin or maintain is needed")


def screen_issue_label(data: IssuesEvent) -> Screen:
    """Decide whether an ``issues`` event is the fix label being added."""
    if data.action != "labeled":
        return Screen("ignore", f"issues.{data.action} is not handled")
    label = data.label.name if data.label is not None else None
    if label != FIX_LABEL:
        return Screen("ignore", f"label {label!r} is not {FIX_LABEL!r}")
    if is_bot(data.sender):
        return Screen("ignore", "label added by a bot")
    return Screen("check_permission", "fix requested by label", Command("fix"))


def decide(name: str, role: str | None, *, error: str | None = None) -> Admission:
    """Whether someone with ``role`` may give command ``name`` (``COMMANDS``)."""
    if COMMANDS[name].who == "maintain":
        return decide_maintainer(role, error=error)
    return decide_permission(role, error=error)


def decide_permission(role: str | None, *, error: str | None = None) -> Admission:
    """Only admin, maintain and write may trigger; a failed lookup triggers nothing."""
    if error is not None:
        return Admission("error", f"could not check permission: {error}")
    if role in WRITE_ROLES:
        return Admission("trigger", f"{role} access")
    return Admission("refuse", f"{role or 'no'} access; admin, maintain or write is needed")


def _when(value: Any) -> float | None:
    """GitHub's ISO 8601 time (``2026-11-26T09:13:11Z``) as epoch seconds, or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def screen_check_done(data: Envelope, *, bot_name: str) -> CheckRecord | str:
    """A completed check run, or a final commit status, on the default branch; or why
    it is not one the watch keeps."""
    repo = data.repository
    if repo is None or not repo.default_branch:
        return "payload has no repository or default branch"
    default = repo.default_branch
    if isinstance(data, StatusEvent):
        if data.state not in ("success", "failure", "error"):
            return f"status {data.state!r} is not final"
        if default not in [b.name for b in data.branches]:
            return "status not on the default branch"
        check, sha, external = data.context, data.sha, data.id
        completed, started, conclusion = _when(data.updated_at), None, data.state
    elif isinstance(data, CheckRunEvent):
        run, suite = data.check_run, data.check_run.check_suite
        if data.action != "completed" or run.status != "completed":
            return "check run not completed"
        if run.app is not None and run.app.slug == bot_name:
            return "check run is Patchwarden's own"
        if suite is None or suite.head_branch != default or suite.pull_requests:
            return "check run not on the default branch"
        check, sha, external = run.name, run.head_sha, run.id
        completed, started = _when(run.completed_at), _when(run.started_at)
        conclusion = str(run.conclusion)
    else:
        return f"{event_of(data)} is not a check the watch keeps"
    if not check or completed is None or external is None:
        return "check has no name, completion time or id"
    return CheckRecord(
        repo=repo.full_name,
        check=check[:200],
        sha=sha,
        conclusion=conclusion[:40],
        completed_at=completed,
        started_at=started,
        source=event_of(data),
        external_id=str(external)[:40],
    )


@dataclass(frozen=True)
class CiFailure:
    repo: str
    sha: str
    branch: str
    name: str
    conclusion: str
    url: str | None


def screen_ci_failure(data: Envelope, *, bot_name: str) -> CiFailure | str:
    """A failed check or workflow run on the default branch, or why it is ignored."""
    repo = data.repository
    default = repo.default_branch if repo is not None else None
    if isinstance(data, StatusEvent):
        return _screen_status(data, default)
    if not isinstance(data, CheckRunEvent | WorkflowRunEvent):
        return f"{event_of(data)} is not a CI event"
    if data.action != "completed":
        return f"{event_of(data)}.{data.action} is not a completion"
    name: str | None
    if isinstance(data, CheckRunEvent):
        run, suite = data.check_run, data.check_run.check_suite
        branch = suite.head_branch if suite is not None else None
        sha, name, conclusion, url = run.head_sha, run.name, run.conclusion, run.html_url
        if run.app is not None and run.app.slug == bot_name:
            return "check run is Patchwarden's own"
        if (suite is not None and suite.pull_requests) or run.pull_requests:
            return "check run belongs to a pull request"
    else:
        wf = data.workflow_run
        branch, sha, name, conclusion, url = (
            wf.head_branch, wf.head_sha, wf.name, wf.conclusion, wf.html_url
        )  # fmt: skip
        head_repo = wf.head_repository.full_name if wf.head_repository else None
        if head_repo != data.repository.full_name:
            return "workflow run comes from a fork"
    if conclusion not in FAILED_CONCLUSIONS:
        return f"conclusion {conclusion!r} is not a failure"
    if not default or branch != default:
        return f"branch {branch!r} is not the default branch {default!r}"
    return CiFailure(
        repo=data.repository.full_name,
        sha=sha,
        branch=branch,
        name=name or event_of(data),
        conclusion=str(conclusion),
        url=url,
    )


def event_of(data: Envelope) -> str:
    """The event a CI delivery's model was read from (``check_run``, ...)."""
    names = {CheckRunEvent: "check_run", WorkflowRunEvent: "workflow_run", StatusEvent: "status"}
    return names.get(type(data), type(data).__name__)


def _screen_status(data: StatusEvent, default: str | None) -> CiFailure | str:
    """A commit status (the older API some CI systems use) that failed on the default
    branch. ``branches`` names the branches whose tip is at or contains the commit."""
    if data.state not in {"failure", "error"}:
        return f"status {data.state!r} is not a failure"
    branches = [b.name for b in data.branches]
    if not default or default not in branches:
        return f"status on {', '.join(branches) or 'no branch'}, not the default branch {default!r}"
    return CiFailure(
        repo=data.repository.full_name,
        sha=data.sha,
        branch=default,
        name=data.context or "status",
        conclusion=data.state,
        url=data.target_url,
    )
