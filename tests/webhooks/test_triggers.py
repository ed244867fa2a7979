"""Who may trigger a fix: the pure decisions, then the same table end to end."""

from __future__ import annotations

from typing import Any

import pytest

from app.github.repos import role_of
from app.webhooks import triggers
from app.webhooks.payloads import MODELS, IssueCommentEvent, StatusEvent
from tests.conftest import REPO, Harness, load_fixture, with_installation

BOT = "patchwarden"


@pytest.mark.parametrize(
    ("body", "instructions"),
    [
        ("@patchwarden fix this", ""),
        ("@patchwarden fix", ""),
        ("/fix", ""),
        ("@Patchwarden FIX THIS", ""),
        ("@patchwarden[bot] fix this", ""),
        ("@patchwarden fix this: use utf-8", "use utf-8"),
        ("/fix the off-by-one in parse()", "the off-by-one in parse()"),
        ("Thanks!\n\n@patchwarden fix this\n\nGuard the empty string.", "Guard the empty string."),
        ("  @patchwarden fix this", ""),
        ("\r\n@patchwarden fix this\r\n", ""),
        # the commenter's own paragraph, wherever GitHub shows it as one
        ("> quoted\n\n@patchwarden fix this", ""),  # a blank line ends the quote
        ("<!-- note -->\n@patchwarden fix this", ""),
        ("<details>\n<summary>Why</summary>\n\n@patchwarden fix this\n\n</details>", ""),
        ("<b>@patchwarden fix this</b>", ""),
        ("<blockquote>\n\nquoted\n\n</blockquote>\n\n@patchwarden fix this", ""),
        ("`@patchwarden fix this`\n@patchwarden fix this", ""),
        # the instructions: the rest of the line and the live lines after it
        ("Thanks\n@patchwarden fix this\nGuard the empty string.", "Guard the empty string."),
        ("@patchwarden fix this: use `utf-8`", "use `utf-8`"),
        ("@patchwarden fix this\n\n- guard empty\n- add a test", "- guard empty\n- add a test"),
        ("@patchwarden fix this\n\n> someone else's words\n\nmine", "mine"),
        ("@patchwarden fix this\n```\nexample()\n```\nafter", "after"),
        ("@patchwarden fix this\n\n<!-- hidden -->\n<div hidden>no</div>\n\nyes", "yes"),
    ],
)
def test_commands_that_trigger(body: str, instructions: str) -> None:
    command = triggers.parse_command(body, bot_name=BOT)
    assert command is not None
    assert command.name == "fix"
    assert command.instructions == instructions


@pytest.mark.parametrize(
    "body",
    [
        "",
        "please @patchwarden fix this",  # not at the start of a line
        "> @patchwarden fix this",  # quoting someone
        ">> @patchwarden fix this",
        "```\n@patchwarden fix this\n```",  # fenced code
        "~~~\n@patchwarden fix this\n~~~",
        "````\n```\n@patchwarden fix this\n````",  # longer fence stays open
        "    @patchwarden fix this",  # indented code
        "\t@patchwarden fix this",
        "<!-- @patchwarden fix this -->",
        "<!--\n@patchwarden fix this\n-->",
        "<!-- unterminated\n@patchwarden fix this",
        "`@patchwarden fix this`",
        "@patchwarden fixed it already",
        "@patchwarden fixes",
        "@otherbot fix this",
        "@patchwardenx fix this",
        "/fixture",
        "/fix-it",
        # a lazy continuation line belongs to the quote above it
        "> quoted\n@patchwarden fix this",
        "> a\n> b\n@patchwarden fix this",
        "> @patchwarden revert\n@patchwarden ship it",
        "- a\n  > quoted\n  @patchwarden fix this",
        # quotes and code written as HTML
        "<blockquote>\n\n@patchwarden fix this\n\n</blockquote>",
        "<blockquote>@patchwarden fix this</blockquote>",
        "<pre>\n@patchwarden fix this\n</pre>",
        "<pre>\n\n@patchwarden fix this\n\n</pre>",
        "<code>@patchwarden fix this</code>",
        "<q>\n@patchwarden fix this</q>",
        "<samp>\n@patchwarden fix this\n</samp>",
        # an unclosed fence runs to the end
        "```\n@patchwarden fix this",
        # hidden on the page
        "<div hidden>\n\n@patchwarden fix this\n\n</div>",
        '<span style="display:none">\n@patchwarden fix this</span>',
        "<!-- x -- y -->\n<!-- unterminated\n\n@patchwarden fix this",
        "<template>\n\n@patchwarden fix this\n\n</template>",
        # not a paragraph of the commenter's: list items, headings, tables, raw HTML
        "- @patchwarden fix this",
        "1. @patchwarden fix this",
        "- item\n  @patchwarden fix this",
        "# @patchwarden fix this",
        "| @patchwarden fix this |\n| --- |",
        "<div>\n@patchwarden fix this\n</div>",
        "[@patchwarden fix this](https://example.com)",
    ],
)
def test_text_that_never_triggers(body: str) -> None:
    assert triggers.parse_command(body, bot_name=BOT) is None


@pytest.mark.parametrize(
    ("role", "verdict"),
    [
        ("admin", "trigger"),
        ("maintain", "trigger"),
        ("write", "trigger"),
        ("triage", "refuse"),
        ("read", "refuse"),
        ("none", "refuse"),
        (None, "refuse"),
        ("custom-role", "refuse"),
    ],
)
def test_permission_table(role: str | None, verdict: str) -> None:
    assert triggers.decide_permission(role).verdict == verdict


def test_failed_lookup_fails_closed() -> None:
    decision = triggers.decide_permission("admin", error="GitHub answered 502")
    assert decision.verdict == "error"
    assert "502" in decision.reason


def test_role_name_beats_the_folded_permission() -> None:
    # GitHub folds triage into "read" and maintain into "write" in `permission`.
    assert role_of({"permission": "read", "role_name": "triage"}) == "triage"
    assert role_of({"permission": "write", "role_name": "maintain"}) == "maintain"
    assert role_of({"permission": "admin"}) == "admin"


def _comment_payload(**changes: Any) -> dict[str, Any]:
    payload = load_fixture("issue_comment/created-fix-command.json")
    for key, value in changes.items():
        payload[key] = value
    return payload


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (_comment_payload(action="edited"), "only new comments"),
        (_comment_payload(action="deleted"), "only new comments"),
        (
            {
                **load_fixture("issue_comment/created-on-pr.json"),
                "comment": {
                    **load_fixture("issue_comment/created-on-pr.json")["comment"],
                    "body": "@patchwarden fix this",
                },
            },
            "pull request",
        ),
        (load_fixture("issue_comment/created-by-bot.json"), "bot"),
        (
            _comment_payload(sender={"login": "patchwarden[bot]", "type": "Bot"}),
            "bot",
        ),
        (load_fixture("issue_comment/created-1.json"), "no command"),
    ],
)
def test_comments_screened_out_before_any_lookup(payload: dict[str, Any], reason: str) -> None:
    screen = triggers.screen_comment(IssueCommentEvent.model_validate(payload), bot_name=BOT)
    assert screen.verdict == "ignore"
    assert reason in screen.reason


def test_fix_command_fixture_asks_for_a_permission_check() -> None:
    screen = triggers.screen_comment(
        IssueCommentEvent.model_validate(load_fixture("issue_comment/created-fix-command.json")),
        bot_name=BOT,
    )
    assert screen.verdict == "check_permission"
    assert screen.command == triggers.Command("fix", "The parser crashes on empty input.")


# -- lifecycle commands: ship it, revert, pause, resume ------------------------------------


@pytest.mark.parametrize(
    ("body", "name", "instructions"),
    [
        ("@patchwarden ship it", "ship", ""),
        ("@Patchwarden SHIP IT", "ship", ""),
        ("@patchwarden[bot] ship it", "ship", ""),
        ("@patchwarden  ship   it!", "ship", ""),
        ("LGTM, thanks.\n\n@patchwarden ship it", "ship", ""),
        ("> @patchwarden revert\n\n@patchwarden ship it", "ship", ""),  # the quote never counts
        ("@patchwarden revert", "revert", ""),
        ("@PATCHWARDEN[BOT] Revert", "revert", ""),
        ("@patchwarden revert: it broke the nightly build", "revert", "it broke the nightly build"),
        ("@patchwarden pause", "pause", ""),
        ("@patchwarden[bot] pause - release freeze", "pause", "release freeze"),
        ("@patchwarden resume", "resume", ""),
        ("@Patchwarden Resume.", "resume", ""),
        ("@patchwarden fix this", "fix", ""),  # the old command is still the old command
    ],
)
def test_lifecycle_commands(body: str, name: str, instructions: str) -> None:
    assert triggers.parse_command(body, bot_name=BOT) == triggers.Command(name, instructions)


@pytest.mark.parametrize(
    "body",
    [
        "@patchwarden shipit",
        "@patchwarden ship",
        "@patchwarden ship items",
        "@patchwarden ship-it",
        "@patchwarden revert-all",
        "@patchwarden reverted",
        "@patchwarden revert_all",
        "@patchwarden pauses",
        "@patchwarden resumed",
        "please @patchwarden ship it",
        "> @patchwarden ship it",
        "> LGTM\n@patchwarden ship it",
        "<blockquote>@patchwarden revert</blockquote>",
        "<pre>\n@patchwarden pause\n</pre>",
        "```\n@patchwarden revert\n```",
        "    @patchwarden pause",
        "<!-- @patchwarden resume -->",
        "`@patchwarden ship it`",
        "@otherbot revert",
        "@patchwardenx pause",
        "/revert",
        "/ship it",
    ],
)
def test_text_that_is_no_lifecycle_command(body: str) -> None:
    assert triggers.parse_command(body, bot_name=BOT) is None


def _lifecycle_payload(body: str, *, on_pull: bool, **changes: Any) -> dict[str, Any]:
    """A new comment by a person, on a pull request or on an issue, saying ``body``."""
    payload = load_fixture(
        "issue_comment/created-on-pr.json" if on_pull else "issue_comment/created-1.json"
    )
    payload["comment"]["body"] = body
    payload.update(changes)
    return payload


APP_USER = {"login": "patchwarden[bot]", "type": "Bot"}

LIFECYCLE_SCREENS: list[tuple[str, dict[str, Any], str, str, str | None]] = [
    # (id, payload, verdict, words the reason has, command)
    ("ship-it-on-a-pr", _lifecycle_payload("@patchwarden ship it", on_pull=True),
     "check_permission", "ship requested", "ship"),
    ("revert-on-a-pr", _lifecycle_payload("@patchwarden revert", on_pull=True),
     "check_permission", "revert requested", "revert"),
    ("ship-it-on-an-issue", _lifecycle_payload("@patchwarden ship it", on_pull=False),
     "ignore", "only works on a pull request", None),
    ("revert-on-an-issue", _lifecycle_payload("@patchwarden revert", on_pull=False),
     "ignore", "only works on a pull request", None),
    ("pause-on-an-issue", _lifecycle_payload("@patchwarden pause", on_pull=False),
     "check_permission", "pause requested", "pause"),
    ("pause-on-a-pr", _lifecycle_payload("@patchwarden pause", on_pull=True),
     "check_permission", "pause requested", "pause"),
    ("resume-on-an-issue", _lifecycle_payload("@patchwarden resume", on_pull=False),
     "check_permission", "resume requested", "resume"),
    ("resume-on-a-pr", _lifecycle_payload("@patchwarden resume", on_pull=True),
     "check_permission", "resume requested", "resume"),
    ("edited", _lifecycle_payload("@patchwarden ship it", on_pull=True, action="edited"),
     "ignore", "only new comments", None),
    ("deleted", _lifecycle_payload("@patchwarden pause", on_pull=False, action="deleted"),
     "ignore", "only new comments", None),
    ("sent-by-the-app", _lifecycle_payload("@patchwarden ship it", on_pull=True, sender=APP_USER),
     "ignore", "bot", None),
    (
        "sent-by-another-bot",
        _lifecycle_payload(
            "@patchwarden revert", on_pull=True, sender={"login": "renovate", "type": "Bot"}
        ),
        "ignore", "bot", None,
    ),
    (
        "written-by-a-bot",
        {
            **load_fixture("issue_comment/created-by-bot.json"),
            "comment": {
                **load_fixture("issue_comment/created-by-bot.json")["comment"],
                "body": "@patchwarden pause",
            },
        },
        "ignore", "bot", None,
    ),
    ("fix-on-an-issue", _lifecycle_payload("@patchwarden fix this", on_pull=False),
     "check_permission", "fix requested", "fix"),
    ("fix-on-a-pr", _lifecycle_payload("@patchwarden fix this", on_pull=True),
     "ignore", "it works on an issue", None),
    ("lint-on-a-pr", _lifecycle_payload("@patchwarden lint", on_pull=True),
     "ignore", "it works on an issue", None),
    ("ignore-on-an-issue", _lifecycle_payload("@patchwarden ignore", on_pull=False),
     "check_permission", "ignore requested", "ignore"),
    ("quoted-ship-it", _lifecycle_payload("> @patchwarden ship it", on_pull=True),
     "ignore", "no command", None),
    ("no-command", _lifecycle_payload("Looks good to me", on_pull=True),
     "ignore", "no command", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("payload", "verdict", "reason", "command"),
    [s[1:] for s in LIFECYCLE_SCREENS],
    ids=[s[0] for s in LIFECYCLE_SCREENS],
)
def test_lifecycle_comments_screened(
    payload: dict[str, Any], verdict: str, reason: str, command: str | None
) -> None:
    screen = triggers.screen_comment(IssueCommentEvent.model_validate(payload), bot_name=BOT)
    assert screen.verdict == verdict
    assert reason in screen.reason
    assert (screen.command.name if screen.command else None) == command


@pytest.mark.parametrize(
    "body",
    ["@patchwarden ship it", "@patchwarden revert", "@patchwarden pause", "@patchwarden resume"],
)
def test_every_command_has_a_rule_and_one_handler(body: str) -> None:
    """The words, the rule (where, who) and the handler of a command are one table
    each, and they name the same commands."""
    from app.webhooks.commands import HANDLERS

    command = triggers.parse_command(body, bot_name=BOT)
    assert command is not None
    assert command.name in triggers.COMMANDS
    assert HANDLERS.keys() == triggers.COMMANDS.keys()
    assert {name for name, _ in triggers._command_patterns(BOT)} == set(triggers.COMMANDS)


@pytest.mark.parametrize(
    ("role", "verdict"),
    [
        ("admin", "trigger"),
        ("maintain", "trigger"),
        ("write", "refuse"),
        ("triage", "refuse"),
        ("read", "refuse"),
        ("none", "refuse"),
        (None, "refuse"),
        ("custom-role", "refuse"),
    ],
)
def test_pausing_takes_a_maintainer(role: str | None, verdict: str) -> None:
    decision = triggers.decide_maintainer(role)
    assert decision.verdict == verdict
    if verdict == "refuse":
        assert "admin or maintain" in decision.reason


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("@patchwarden trust reset", "*"),
        ("@patchwarden trust reset lint", "lint"),
        ("@patchwarden trust RESET `Docs`", "Docs"),  # as the policy names it
        ("@patchwarden trust reset lint docs", None),  # one kind at a time
        ("@patchwarden trust", None),
        ("@patchwarden trust me", None),
        ("@patchwarden trust reset ../../etc", None),
        ("@patchwarden trust reset " + "x" * 41, None),
    ],
)
def test_trust_reset_names_every_kind_or_one(body: str, kind: str | None) -> None:
    command = triggers.parse_command(body, bot_name=BOT)
    assert command is not None
    assert command.name == "trust"
    assert triggers.parse_trust(command.instructions) == kind
    comment = {
        "action": "created",
        "repository": {"full_name": "o/r"},
        "issue": {"number": 1},
        "comment": {"id": 1, "body": body, "user": {"login": "a"}},
        "sender": {"login": "a"},
    }
    screen = triggers.screen_comment(IssueCommentEvent.model_validate(comment), bot_name=BOT)
    assert screen.verdict == "check_permission"  # on an issue or a pull request alike


@pytest.mark.parametrize("role", ["admin", "maintain", None])
def test_a_failed_maintainer_lookup_fails_closed(role: str | None) -> None:
    decision = triggers.decide_maintainer(role, error="GitHub answered 502")
    assert (decision.verdict, decision.audit_action) == ("error", "trigger.failed_closed")
    assert "502" in decision.reason


def test_ci_failure_on_default_branch_is_an_alert() -> None:
    for name in ("check_run", "workflow_run"):
        payload = load_fixture(f"{name}/completed-failure-default-branch.json")
        found = triggers.screen_ci_failure(MODELS[name].model_validate(payload), bot_name=BOT)
        assert isinstance(found, triggers.CiFailure), found
        assert found.branch == payload["repository"]["default_branch"]


@pytest.mark.parametrize(
    ("event", "edit", "reason"),
    [
        ("workflow_run", lambda p: p["workflow_run"].update(conclusion="success"), "not a failure"),
        (
            "workflow_run",
            lambda p: p["workflow_run"].update(head_branch="feature"),
            "not the default",
        ),
        (
            "workflow_run",
            lambda p: p["workflow_run"]["head_repository"].update(full_name="evil/fork"),
            "fork",
        ),
        (
            "check_run",
            lambda p: p["check_run"]["check_suite"].update(head_branch="x"),
            "not the default",
        ),
        (
            "check_run",
            lambda p: p["check_run"]["check_suite"].update(pull_requests=[{"number": 1}]),
            "pull request",
        ),
        ("check_run", lambda p: p["check_run"]["app"].update(slug="patchwarden"), "own"),
        ("check_run", lambda p: p.update(action="created"), "not a completion"),
    ],
)
def test_ci_events_that_are_not_alerts(event: str, edit: Any, reason: str) -> None:
    payload = load_fixture(f"{event}/completed-failure-default-branch.json")
    edit(payload)
    found = triggers.screen_ci_failure(MODELS[event].model_validate(payload), bot_name=BOT)
    assert isinstance(found, str)
    assert reason in found


def _status(**changes: Any) -> dict[str, Any]:
    payload = load_fixture("status/event-1.json")  # success on master, changes, gh-pages
    payload.update(changes)
    return payload


@pytest.mark.parametrize(
    ("payload", "found"),
    [
        pytest.param(_status(state="failure"), "alert", id="failure-on-default"),
        pytest.param(_status(state="error"), "alert", id="error-on-default"),
        pytest.param(_status(), "not a failure", id="success"),
        pytest.param(_status(state="pending"), "not a failure", id="pending"),
        pytest.param(
            _status(state="failure", branches=[{"name": "feature", "commit": {}}]),
            "not the default",
            id="other-branch",
        ),
        pytest.param(_status(state="failure", branches=[]), "no branch", id="no-branch"),
    ],
)
def test_a_failed_commit_status_on_the_default_branch_is_an_alert(
    payload: dict[str, Any], found: str
) -> None:
    screened = triggers.screen_ci_failure(StatusEvent.model_validate(payload), bot_name=BOT)
    if found == "alert":
        assert isinstance(screened, triggers.CiFailure), screened
        assert (screened.sha, screened.branch) == (payload["sha"], "master")
        assert screened.name == payload["context"]
    else:
        assert isinstance(screened, str)
        assert found in screened


# -- the same table, end to end: real server, real store, GitHub double over HTTP ----------


@pytest.mark.parametrize(
    ("role", "triggered"),
    [
        ("admin", True),
        ("maintain", True),
        ("write", True),
        ("triage", False),
        ("read", False),
        (None, False),  # not a collaborator: GitHub answers 404
    ],
)
async def test_trigger_authorisation_end_to_end(
    pw: Harness, role: str | None, triggered: bool
) -> None:
    if role is not None:
        pw.forge.add_user(REPO, "carol", role)
    issue = pw.forge.open_issue(REPO, "Crash on empty input", author="carol")
    comment = await pw.forge.post_comment(
        REPO, issue.number, "@patchwarden fix this", author="carol"
    )
    await pw.settle()
    jobs = await pw.jobs("fix")
    comments = pw.forge.repos[REPO].issues[issue.number].comments
    bot_comments = [c for c in comments if c.user.login == "patchwarden[bot]"]
    if triggered:
        assert len(jobs) == 1
        assert jobs[0].payload["issue_number"] == issue.number
        assert pw.forge.comment_reactions(comment.id) == ["eyes"]
        assert bot_comments == []
    else:
        assert jobs == []
        assert pw.forge.comment_reactions(comment.id) == []
        assert len(bot_comments) == 1
        assert "write access" in bot_comments[0].body
        assert "@carol" in bot_comments[0].body


@pytest.mark.parametrize(
    "body",
    ["> @patchwarden fix this", "```\n@patchwarden fix this\n```", "nothing to see here"],
)
async def test_quoted_or_fenced_commands_do_nothing_end_to_end(pw: Harness, body: str) -> None:
    pw.forge.add_user(REPO, "alice", "admin")
    issue = pw.forge.open_issue(REPO, "t", author="alice")
    await pw.forge.post_comment(REPO, issue.number, body, author="alice")
    await pw.settle()
    assert await pw.jobs("fix") == []
    # no permission lookup is made for text that is not a command
    assert pw.forge.calls("GET", "/permission") == []


async def test_bot_and_app_comments_never_trigger(pw: Harness) -> None:
    for login in ("dependabot[bot]", "patchwarden[bot]"):
        pw.forge.add_user(REPO, login, "admin")
        issue = pw.forge.open_issue(REPO, "t", author=login)
        await pw.forge.post_comment(REPO, issue.number, "@patchwarden fix this", author=login)
    await pw.settle()
    assert await pw.jobs("fix") == []
    assert pw.forge.calls("GET", "/permission") == []


async def test_edited_comment_does_not_trigger(pw: Harness) -> None:
    pw.forge.add_user(REPO, "alice", "admin")
    payload = with_installation(load_fixture("issue_comment/created-fix-command.json"))
    payload["action"] = "edited"
    payload["repository"]["full_name"] = REPO
    status, _ = await pw.post_webhook("issue_comment", payload)
    assert status == 202
    await pw.settle()
    assert await pw.jobs("fix") == []


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_permission_lookup_5xx_triggers_nothing_and_is_audited(
    pw: Harness, status: int
) -> None:
    from app.store import AuditQuery

    pw.forge.add_user(REPO, "alice", "admin")
    pw.forge.fail("GET", "/collaborators/alice/permission", status, times=100)
    issue = pw.forge.open_issue(REPO, "t", author="alice")
    comment = await pw.forge.post_comment(
        REPO, issue.number, "@patchwarden fix this", author="alice"
    )
    await pw.settle()
    assert await pw.jobs("fix") == []
    assert pw.forge.comment_reactions(comment.id) == []
    entries = await pw.store.journal.query_audit(AuditQuery(repo=REPO))
    failed = [e for e in entries if e.action == "trigger.failed_closed"]
    assert len(failed) == 1
    assert str(status) in (failed[0].reason or "")


async def test_label_by_writer_triggers_and_by_reader_is_refused(pw: Harness) -> None:
    pw.forge.add_user(REPO, "alice", "write")
    pw.forge.add_user(REPO, "bob", "read")
    first = pw.forge.open_issue(REPO, "one", author="bob")
    second = pw.forge.open_issue(REPO, "two", author="bob")
    await pw.forge.add_label(REPO, first.number, "patchwarden:fix", actor="alice")
    await pw.forge.add_label(REPO, second.number, "patchwarden:fix", actor="bob")
    await pw.forge.add_label(REPO, second.number, "bug", actor="alice")
    await pw.settle()
    jobs = await pw.jobs("fix")
    assert [(j.payload["issue_number"], j.payload["trigger"]) for j in jobs] == [
        (first.number, "label")
    ]
    assert pw.forge.repos[REPO].issues[first.number].reactions[0].content == "eyes"
    refusals = pw.forge.repos[REPO].issues[second.number].comments
    assert len(refusals) == 1
    assert "@bob" in refusals[0].body


async def test_a_refusal_github_failed_to_take_is_posted_by_the_retry(pw: Harness) -> None:
    pw.forge.add_user(REPO, "bob", "read")
    issue = pw.forge.open_issue(REPO, "t", author="bob")
    comment = await pw.forge.post_comment(REPO, issue.number, "/fix", author="bob")
    pw.forge.fail("POST", rf"/repos/{REPO}/issues/{issue.number}/comments", 502)
    event = pw.forge.comment_event(REPO, issue.number, comment)
    assert (await pw.post_webhook("issue_comment", event))[0] == 202
    await pw.settle()
    bot = [c for c in pw.forge.repos[REPO].issues[issue.number].comments if "[bot]" in c.user.login]
    assert len(bot) == 1
    assert "@bob" in bot[0].body


async def test_a_refusal_is_answered_once_however_often_github_redelivers(pw: Harness) -> None:
    pw.forge.add_user(REPO, "bob", "read")
    issue = pw.forge.open_issue(REPO, "t", author="bob")
    comment = await pw.forge.post_comment(REPO, issue.number, "/fix", author="bob")
    event = pw.forge.comment_event(REPO, issue.number, comment)
    # GitHub answers slowly: all three deliveries are past their look for an earlier
    # answer before any of them has posted one (the event workers run them at once).
    pw.forge.delay(rf"/repos/{REPO}/issues/{issue.number}/comments", 0.3)
    for _ in range(3):  # GitHub's "redeliver" and retries arrive under new delivery ids
        assert (await pw.post_webhook("issue_comment", event))[0] == 202
    await pw.settle()
    bot = [c for c in pw.forge.repos[REPO].issues[issue.number].comments if "[bot]" in c.user.login]
    assert len(bot) == 1
    assert await pw.jobs("fix") == []


async def test_a_user_cannot_silence_refusals_by_pasting_the_marker(pw: Harness) -> None:
    pw.forge.add_user(REPO, "bob", "read")
    issue = pw.forge.open_issue(REPO, "t", author="bob")
    comment = await pw.forge.post_comment(REPO, issue.number, "/fix", author="bob", send=False)
    await pw.forge.post_comment(
        REPO,
        issue.number,
        f"<!-- patchwarden:refused comment:{comment.id} -->",
        author="bob",
        send=False,
    )
    await pw.post_webhook("issue_comment", pw.forge.comment_event(REPO, issue.number, comment))
    await pw.settle()
    bot = [c for c in pw.forge.repos[REPO].issues[issue.number].comments if "[bot]" in c.user.login]
    assert len(bot) == 1


async def test_a_bot_adding_the_fix_label_triggers_nothing(pw: Harness) -> None:
    pw.forge.add_user(REPO, "renovate[bot]", "admin")
    issue = pw.forge.open_issue(REPO, "t", author="alice")
    await pw.forge.add_label(REPO, issue.number, "patchwarden:fix", actor="renovate[bot]")
    await pw.settle()
    assert await pw.jobs("fix") == []
    assert pw.forge.calls("GET", "/permission") == []
    assert pw.forge.repos[REPO].issues[issue.number].comments == []


def test_a_fixer_word_cannot_take_a_command_s_place() -> None:
    """A fixer whose word is already a command (``revert``) would silently turn the
    command into a fix request: refused when the commands are built."""
    assert "typo" in triggers.with_fixer_words(["typo"])
    with pytest.raises(ValueError, match="fixer words that are commands already: revert"):
        triggers.with_fixer_words(["typo", "revert"])
