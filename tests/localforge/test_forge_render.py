"""LocalForge's renderers against GitHub's published contract, and the values people see.

Every REST shape is checked with the response schema of the operation that returns
it, every webhook payload with the schema of its event, both from GitHub's own
descriptions (``app/localforge/contract``). Values are checked where a user would
notice them: who "owns" a comment, the combined status, file contents, links.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from app.localforge.bare_repo import BareRepo, CommitInfo, Entry, FileChange, Person
from app.localforge.contract import RestContract, WebhookContract
from app.localforge.render import Renderer
from app.localforge.security import (
    PEOPLES_ACTIONS,
    SecurityAlert,
    alert_fields,
    apply,
    github_account,
)
from app.localforge.shapes import iso
from app.localforge.state import (
    CheckOutput,
    CheckRun,
    CheckSuite,
    Comment,
    CommitStatus,
    Issue,
    Label,
    Pull,
    Reaction,
    Repo,
    Review,
    User,
)
from app.localforge.view import page

BASE_URL = "http://127.0.0.1:8123"
APP_ID = 4242
APP_SLUG = "patchwarden-dev"
AT = 1795341600.0  # 2026-11-22T10:00:00Z
BASE = "b" * 40
HEAD = "f00dfacecafe" + "0" * 28
MERGED = "5eed1234abcd" + "2" * 28
TREE = "7" * 40
FILE_BYTES = b"def widget():\n    return 'a line long enough to need more than one base64 line'\n"


@dataclass
class World:
    r: Renderer
    repo: Repo
    org: User
    alice: User  # a member of octo-org (collaborator)
    bob: User  # nobody in particular
    bot: User
    issue: Issue
    pr: Issue
    pull: Pull
    suite: CheckSuite
    run: CheckRun
    queued_run: CheckRun  # the forge's own CI, another App
    statuses: list[CommitStatus]
    head: CommitInfo
    file: Entry
    tree: Entry
    change: FileChange

    @property
    def pulls(self) -> list[tuple[Pull, Issue]]:
        return [(self.pull, self.pr)]

    def pull_json(self) -> dict[str, Any]:
        return self.r.pulls.pull(
            self.repo, self.pull, self.pr, mergeable=True, mergeable_state="clean"
        )


@pytest.fixture
def w(tmp_path: Path) -> World:
    org = User("octo-org", 10, "Organization")
    alice, bob = User("alice", 11), User("bob", 12)
    bot = User(f"{APP_SLUG}[bot]", 13, "Bot")
    bug = Label(1, "bug", "d73a4a", "Something isn't working")
    repo = Repo(
        id=100,
        owner=org,
        name="widgets",
        installation_id=7,
        git=BareRepo(tmp_path / "widgets.git"),
        created_at=AT,
        pushed_at=AT + 60,
        collaborators={"alice": "write"},
        labels={"bug": bug},
    )
    issue = Issue(1, "Widget breaks", "It breaks.", bob, labels=[bug], created_at=AT, updated_at=AT)
    issue.reactions.append(Reaction(30, "+1", alice, created_at=AT + 1))
    comment = Comment(20, 1, "Confirmed.", alice, created_at=AT + 2, updated_at=AT + 3)
    comment.reactions.append(Reaction(31, "eyes", bob, created_at=AT + 4))
    issue.comments.append(comment)
    pr = Issue(2, "Fix the widget", "Fixes #1", alice, is_pull=True)
    pr.created_at = pr.updated_at = AT + 10
    pr.comments.append(Comment(21, 2, "Verified.", bot, AT + 11, AT + 11, via_app=True))
    pull = Pull(2, "fix-widget", HEAD, "main", BASE, additions=3, deletions=1, changed_files=1)
    pull.commits = 1
    pull.reviews.append(Review(40, alice, "APPROVED", "LGTM", HEAD, submitted_at=AT + 20))
    repo.issues = {1: issue, 2: pr}
    repo.pulls = {2: pull}
    suite = CheckSuite(
        500,
        HEAD,
        "fix-widget",
        APP_SLUG,
        before=BASE,
        after=HEAD,
        status="completed",
        conclusion="success",
        created_at=AT + 30,
        updated_at=AT + 40,
    )
    run = CheckRun(
        600,
        "patchwarden/verify",
        HEAD,
        suite,
        APP_SLUG,
        status="completed",
        conclusion="success",
        started_at=AT + 30,
        completed_at=AT + 40,
        output=CheckOutput("Verified", "All good", None),
        external_id="job-1",
    )
    ci_suite = CheckSuite(501, HEAD, "fix-widget", "localforge-ci", created_at=AT, updated_at=AT)
    queued_run = CheckRun(601, "tests", HEAD, ci_suite, "localforge-ci", started_at=AT + 31)
    later = AT + 5
    statuses = [
        CommitStatus(70, HEAD, "pending", "ci/lint", None, None, bot, AT, AT),
        CommitStatus(71, HEAD, "success", "ci/lint", "clean", f"{BASE_URL}/ci", bot, later, later),
    ]
    repo.check_suites, repo.check_runs, repo.statuses = (
        [suite, ci_suite],
        [run, queued_run],
        statuses,
    )
    person = Person("Alice", "alice@example.com")
    head = CommitInfo(
        HEAD,
        TREE,
        (BASE,),
        "Fix the widget\n\nCloses #1",
        person,
        "2026-11-22T11:00:00+01:00",
        person,
        "2026-11-22T11:05:00+01:00",
        ("src/new.py",),
        (),
        ("src/widget.py",),
    )
    file = Entry("src/widget.py", "file", "c" * 40, len(FILE_BYTES), FILE_BYTES, ())
    tree = Entry(
        "src",
        "dir",
        "d" * 40,
        0,
        None,
        (
            replace(file, content=None),
            Entry("src/lib", "dir", "e" * 40, 0, None, ()),
            Entry("src/link.py", "symlink", "f" * 40, 9, None, ()),
            Entry("src/vendor", "submodule", "a" * 40, 0, None, ()),
        ),
    )
    change = FileChange(
        "src/widget.py", "modified", 3, 1, 4, "@@ -1 +1,3 @@\n-x\n+y", "c" * 40, None
    )
    r = Renderer(base_url=BASE_URL, app_id=APP_ID, app_slug=APP_SLUG, app_created_at=AT - 86400)
    return World(
        r,
        repo,
        org,
        alice,
        bob,
        bot,
        issue,
        pr,
        pull,
        suite,
        run,
        queued_run,
        statuses,
        head,
        file,
        tree,
        change,
    )


def review_requested(w: World) -> World:
    w.pull.requested_reviewers = [w.alice]
    return w


def labelled(w: World) -> World:
    """The PR with a label that has no description (pull-request-simple wants a string)."""
    w.pr.labels.append(Label(2, "patchwarden", "ededed", None))
    return w


# -- REST: each shape against the operation that answers with it ------------------------

Render = Callable[[World], Any]


def signed(w: World, render: Callable[[Repo, CommitInfo], Any]) -> Callable[..., Any]:
    """``render`` with the head commit among those GitHub signed (verification filled)."""
    w.repo.verified.add(w.head.sha)
    return render


REST: list[tuple[str, int, Render]] = [
    ("apps/get-authenticated", 200, lambda w: w.r.accounts.app()),
    (
        "apps/create-installation-access-token",
        201,
        lambda w: w.r.repos.access_token("ghs_forge", AT + 3600, [w.repo]),
    ),
    ("apps/get-repo-installation", 200, lambda w: w.r.accounts.installation(7, w.org, [w.repo])),
    (
        "apps/list-installations",
        200,
        lambda w: [w.r.accounts.listed_installation(7, w.org, [w.repo])],
    ),
    (
        "apps/create-from-manifest",
        201,
        lambda w: (
            w.r.accounts.app()
            | {"client_id": "Iv1.x", "client_secret": "s", "webhook_secret": "w", "pem": "k"}
        ),
    ),
    ("users/get-by-username", 200, lambda w: w.r.accounts.public_user(w.bot, created_at=AT)),
    ("users/get-by-username", 200, lambda w: w.r.accounts.public_user(w.alice, created_at=AT)),
    ("repos/get", 200, lambda w: w.r.repos.repository(w.repo)),
    ("repos/get-content", 200, lambda w: w.r.git.content(w.repo, w.file, "main")),
    ("repos/get-content", 200, lambda w: w.r.git.content(w.repo, w.tree, "main")),
    (
        "repos/get-content",
        200,
        lambda w: w.r.git.content(
            w.repo, Entry("l", "symlink", "f" * 40, 9, b"widget.py", ()), "main"
        ),
    ),
    (
        "repos/get-content",
        200,
        lambda w: w.r.git.content(
            w.repo, w.tree.children[3], "main", submodule_git_url="https://example.com/v.git"
        ),
    ),
    (
        "repos/get-collaborator-permission-level",
        200,
        lambda w: {
            "permission": "write",
            "role_name": "maintain",
            "user": w.r.accounts.collaborator(w.alice, "maintain"),
        },
    ),
    ("repos/get-branch", 200, lambda w: w.r.git.branch(w.repo, "main", w.head, protected=True)),
    ("repos/get-branch", 200, lambda w: w.r.git.branch(w.repo, "a/b", w.head, protected=False)),
    ("git/get-ref", 200, lambda w: w.r.git.git_ref(w.repo, "heads/fix-widget", HEAD)),
    ("git/create-ref", 201, lambda w: w.r.git.git_ref(w.repo, "refs/heads/fix-widget", HEAD)),
    ("git/update-ref", 200, lambda w: w.r.git.git_ref(w.repo, "heads/patchwarden/1-x", HEAD)),
    ("git/create-blob", 201, lambda w: w.r.git.short_blob(w.repo, "b" * 40)),
    (
        "git/create-tree",
        201,
        lambda w: w.r.git.git_tree(w.repo, "t" * 40, [("100644", w.file), ("040000", w.tree)]),
    ),
    ("git/create-commit", 201, lambda w: w.r.git.git_commit(w.repo, w.head)),
    ("git/create-commit", 201, lambda w: signed(w, w.r.git.git_commit)(w.repo, w.head)),
    ("pulls/list", 200, lambda w: [w.r.pulls.pull_simple(w.repo, w.pull, labelled(w).pr)]),
    ("pulls/create", 201, lambda w: w.pull_json()),
    ("pulls/get", 200, lambda w: labelled(w).pull_json()),
    (
        "pulls/update",
        200,
        lambda w: w.r.pulls.pull(w.repo, w.pull, w.pr, mergeable=None, mergeable_state="unknown"),
    ),
    ("pulls/list-files", 200, lambda w: [w.r.pulls.pull_file(w.repo, HEAD, w.change)]),
    ("pulls/list-reviews", 200, lambda w: [w.r.pulls.review(w.repo, w.pull, w.pull.reviews[0])]),
    (
        "pulls/create-review",
        200,
        lambda w: w.r.pulls.review(w.repo, w.pull, Review(41, w.bob, "PENDING", "", HEAD)),
    ),
    (
        "pulls/request-reviewers",
        201,
        lambda w: w.r.pulls.pull_simple(w.repo, review_requested(w).pull, labelled(w).pr),
    ),
    ("issues/create", 201, lambda w: w.r.issues.issue(w.repo, w.issue)),
    ("issues/get", 200, lambda w: w.r.issues.issue(w.repo, w.pr, w.pull)),
    ("issues/update", 200, lambda w: w.r.issues.issue(w.repo, w.issue)),
    ("issues/list-comments", 200, lambda w: [w.r.issues.comment(w.repo, w.issue.comments[0])]),
    ("issues/create-comment", 201, lambda w: w.r.issues.comment(w.repo, w.pr.comments[0])),
    ("issues/update-comment", 200, lambda w: w.r.issues.comment(w.repo, w.issue.comments[0])),
    ("reactions/create-for-issue", 201, lambda w: w.r.issues.reaction(w.issue.reactions[0])),
    (
        "reactions/create-for-issue-comment",
        201,
        lambda w: w.r.issues.reaction(w.issue.comments[0].reactions[0]),
    ),
    ("issues/get-label", 200, lambda w: w.r.issues.label(w.repo, w.issue.labels[0])),
    ("issues/create-label", 201, lambda w: w.r.issues.label(w.repo, w.issue.labels[0])),
    ("issues/add-labels", 200, lambda w: [w.r.issues.label(w.repo, w.issue.labels[0])]),
    ("issues/remove-label", 200, lambda w: []),
    ("checks/create", 201, lambda w: w.r.checks.check_run(w.repo, w.queued_run, w.pulls)),
    ("checks/get", 200, lambda w: w.r.checks.check_run(w.repo, w.run, w.pulls)),
    ("checks/update", 200, lambda w: w.r.checks.check_run(w.repo, w.run, [])),
    (
        "checks/list-for-ref",
        200,
        lambda w: {"total_count": 1, "check_runs": [w.r.checks.check_run(w.repo, w.run, w.pulls)]},
    ),
    (
        "checks/list-suites-for-ref",
        200,
        lambda w: {
            "total_count": 1,
            "check_suites": [
                w.r.checks.check_suite(w.repo, w.suite, 1, w.pulls, head_commit=w.head)
            ],
        },
    ),
    (
        "repos/get-combined-status-for-ref",
        200,
        lambda w: w.r.checks.combined_status(w.repo, HEAD, w.statuses),
    ),
    ("repos/create-commit-status", 201, lambda w: w.r.checks.commit_status(w.repo, w.statuses[1])),
]


@pytest.mark.parametrize(
    ("op_id", "status", "render"), REST, ids=[f"{o}-{i}" for i, (o, _, _) in enumerate(REST)]
)
def test_rest_shapes_follow_the_response_schema(
    w: World, op_id: str, status: int, render: Render
) -> None:
    contract = RestContract.load()
    assert contract.response_problems(contract.by_id(op_id), status, render(w)) == []


def test_every_rest_operation_with_a_body_is_covered() -> None:
    contract = RestContract.load()
    answered = {
        op.id for op in contract.operations if any(op.responses.get(s) for s in ("200", "201"))
    }
    uncovered = answered - {op_id for op_id, _, _ in REST}
    # Not renderers' work: the merge result ({sha, merged, message}) is a literal answer.
    assert uncovered == {"pulls/merge"}


def test_the_contract_catches_a_broken_shape(w: World) -> None:
    """A renderer that drifts is caught: a validator that accepted anything would fail here."""
    contract = RestContract.load()
    pulls_get = contract.by_id("pulls/get")
    broken = w.pull_json()
    del broken["head"]
    broken["number"] = "2"
    problems = contract.response_problems(pulls_get, 200, broken)
    assert '"head" wasn\'t supplied.' in problems
    assert any("properties/number" in p for p in problems)
    wrong_state = {**w.r.checks.check_run(w.repo, w.run, []), "status": "done"}
    assert contract.response_problems(contract.by_id("checks/get"), 200, wrong_state) != []


# -- webhooks: payloads built from the REST shapes, projected by hook() ----------------


def event(w: World, action: str | None, sender: User, **fields: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"action": action, **fields} if action else dict(fields)
    payload["repository"] = w.r.repos.repository(w.repo)
    payload["sender"] = w.r.accounts.user(sender)
    payload["installation"] = w.r.accounts.installation(7, w.org, [w.repo])
    payload["organization"] = w.r.accounts.organization(w.org)
    return payload


def merged(w: World) -> World:
    w.pull.merged, w.pull.merged_at, w.pull.merged_by = True, AT + 50, w.alice
    w.pull.merge_commit_sha = MERGED
    w.pr.state, w.pr.closed_at, w.pr.updated_at = "closed", AT + 50, AT + 50
    return w


def closed_by_merge(w: World) -> World:
    w.issue.state, w.issue.state_reason, w.issue.closed_by_pull = "closed", "completed", 2
    w.issue.closed_at = w.issue.updated_at = AT + 51
    return w


def push(w: World) -> dict[str, Any]:
    return event(
        w,
        None,
        w.alice,
        ref="refs/heads/fix-widget",
        before=BASE,
        after=HEAD,
        created=False,
        deleted=False,
        forced=False,
        base_ref=None,
        compare=f"{BASE_URL}/octo-org/widgets/compare/{BASE}...{HEAD}",
        commits=[w.r.git.push_commit(w.repo, w.head)],
        head_commit=w.r.git.push_commit(w.repo, w.head),
        pusher={"name": "alice", "email": "alice@example.com"},
    )


DEPENDABOT = {
    "package": "requests",
    "ecosystem": "pip",
    "manifest": "requirements.txt",
    "vulnerable_range": "< 2.32.0",
    "first_patched": "2.32.0",
    "severity": "medium",
    "ghsa": "GHSA-9wx4-h78v-vm56",
    "cve": "CVE-2024-35195",
    "summary": "Requests `Session` object does not verify requests after making first request",
    "description": "When making requests through a Requests `Session`...",
}
SCANNING = {
    "tool": "semgrep",
    "rule": "python.lang.security.audit.eval-detected",
    "severity": "error",
    "description": "Detected the use of eval()",
    "full_description": "eval() on input is code injection",
    "path": "widget.py",
    "start_line": 3,
    "end_line": None,
    "message": "Detected the use of eval()",
    "ref": "refs/heads/main",
    "commit": HEAD,
}


def security_alert(event_name: str, action: str) -> Callable[[World], dict[str, Any]]:
    """A Dependabot or code scanning alert after ``action``, as the forge sends it."""

    def build(w: World) -> dict[str, Any]:
        dependabot = event_name == "dependabot_alert"
        alert = SecurityAlert(
            "dependabot" if dependabot else "code_scanning",
            1,
            dict(DEPENDABOT if dependabot else SCANNING),
            created_at=AT,
            updated_at=AT,
        )
        person = w.alice if action in PEOPLES_ACTIONS[alert.kind] else None
        apply(alert, action, by=person, now=AT + 60)
        fields = alert_fields(w.r, w.repo, alert, action)
        payload = event(w, action, person or w.bot, **fields)
        if person is None:
            payload["sender"] = github_account()
        return payload

    return build


HOOKS: dict[str, Callable[[World], dict[str, Any]]] = {
    "installation$created": lambda w: {
        "action": "created",
        "installation": w.r.accounts.installation(7, w.org, [w.repo]),
        "repositories": [w.r.repos.repository(w.repo)],
        "sender": w.r.accounts.user(w.alice),
    },
    "issue_comment$created": lambda w: event(
        w,
        "created",
        w.alice,
        issue=w.r.issues.issue(w.repo, w.issue),
        comment=w.r.issues.comment(w.repo, w.issue.comments[0]),
    ),
    "issue_comment$edited": lambda w: event(
        w,
        "edited",
        w.bot,
        changes={"body": {"from": "Checking."}},
        issue=w.r.issues.issue(w.repo, w.pr),
        comment=w.r.issues.comment(w.repo, w.pr.comments[0]),
    ),
    "issues$opened": lambda w: event(w, "opened", w.bob, issue=w.r.issues.issue(w.repo, w.issue)),
    "issues$labeled": lambda w: event(
        w,
        "labeled",
        w.alice,
        issue=w.r.issues.issue(w.repo, w.issue),
        label=w.r.issues.label(w.repo, w.issue.labels[0]),
    ),
    "issues$closed": lambda w: event(
        closed_by_merge(merged(w)), "closed", w.alice, issue=w.r.issues.issue(w.repo, w.issue)
    ),
    "pull_request$opened": lambda w: event(
        w, "opened", w.alice, number=2, pull_request=w.pull_json()
    ),
    "pull_request$synchronize": lambda w: event(
        w, "synchronize", w.alice, number=2, before=BASE, after=HEAD, pull_request=w.pull_json()
    ),
    "pull_request$edited": lambda w: event(
        w,
        "edited",
        w.alice,
        number=2,
        changes={"title": {"from": "Fix widget"}},
        pull_request=w.pull_json(),
    ),
    "pull_request$closed": lambda w: event(
        merged(w),
        "closed",
        w.alice,
        number=2,
        pull_request=w.r.pulls.pull(
            w.repo, w.pull, w.pr, mergeable=None, mergeable_state="unknown"
        ),
    ),
    "pull_request$review_requested": lambda w: event(
        review_requested(w),
        "review_requested",
        w.bot,
        number=2,
        pull_request=w.pull_json(),
        requested_reviewer=w.r.accounts.user(w.alice),
    ),
    "pull_request_review$submitted": lambda w: event(
        w,
        "submitted",
        w.alice,
        review=w.r.pulls.review(w.repo, w.pull, w.pull.reviews[0]),
        pull_request=w.pull_json(),
    ),
    "check_suite$completed": lambda w: event(
        w,
        "completed",
        w.bot,
        check_suite=w.r.checks.check_suite(w.repo, w.suite, 1, w.pulls, head_commit=w.head),
    ),
    "check_run$created": lambda w: event(
        w, "created", w.bot, check_run=w.r.checks.check_run(w.repo, w.queued_run, w.pulls)
    ),
    "check_run$completed": lambda w: event(
        w, "completed", w.bot, check_run=w.r.checks.check_run(w.repo, w.run, w.pulls)
    ),
    "push$event": push,
    **{
        f"dependabot_alert${action}": security_alert("dependabot_alert", action)
        for action in ("created", "dismissed", "fixed", "reintroduced", "reopened")
    },
    **{
        f"code_scanning_alert${action}": security_alert("code_scanning_alert", action)
        for action in (
            "created",
            "appeared_in_branch",
            "reopened",
            "reopened_by_user",
            "closed_by_user",
            "fixed",
        )
    },
}


def test_every_event_of_the_contract_has_a_payload() -> None:
    assert set(HOOKS) == set(WebhookContract.load().events)


@pytest.mark.parametrize("key", list(HOOKS))
def test_webhook_payloads_follow_the_event_schema(w: World, key: str) -> None:
    event_name = key.split("$")[0]
    raw = HOOKS[key](w)
    hooks = WebhookContract.load()
    assert hooks.problems(event_name, raw) != []  # REST shapes alone are not what GitHub sends
    delivered = w.r.webhooks.hook(event_name, raw)
    assert hooks.problems(event_name, delivered) == []


def test_hook_only_drops_what_the_schema_forbids_and_fits_enums(w: World) -> None:
    review = w.r.pulls.review(w.repo, w.pull, w.pull.reviews[0])
    raw = event(w, "submitted", w.alice, review=review, pull_request=w.pull_json())
    raw["repository"]["made_up"] = 1
    hook = w.r.webhooks.hook("pull_request_review", raw)
    assert "subscribers_count" in raw["repository"]  # full-repository has it,
    assert "subscribers_count" not in hook["repository"]  # the webhook repository does not
    assert "made_up" not in hook["repository"]
    assert "mergeable" not in hook["pull_request"]  # a simple-pull-request in this event
    assert hook["installation"] == {"id": 7, "node_id": raw["installation"]["node_id"]}
    assert review["state"] == "APPROVED"
    assert hook["review"]["state"] == "approved"  # webhooks spell review states in lower case
    assert hook["review"]["id"] == 40
    assert hook["pull_request"]["head"]["sha"] == HEAD


def test_hook_drops_an_event_the_schema_s_installation_does_not_list_yet(w: World) -> None:
    """The App subscribes to dependabot_alert; the webhook schema's ``installation``
    (7.6.1) cannot say so yet, its ``app`` can: the delivery keeps what it may say."""
    raw = HOOKS["installation$created"](w)
    assert {"dependabot_alert", "code_scanning_alert"} <= set(raw["installation"]["events"])
    events = w.r.webhooks.hook("installation", raw)["installation"]["events"]
    assert "dependabot_alert" not in events
    assert "code_scanning_alert" in events
    assert len(events) == len(raw["installation"]["events"]) - 1


def test_hook_leaves_a_payload_it_cannot_fix_for_the_contract_to_report(w: World) -> None:
    raw = event(w, "opened", w.bob, issue=w.r.issues.issue(w.repo, w.issue))
    del raw["issue"]["user"]
    raw["issue"]["assignee"] = {"login": "not-a-user"}
    hooks = WebhookContract.load()
    problems = hooks.problems("issues", w.r.webhooks.hook("issues", raw))
    assert '"user" wasn\'t supplied.' in problems
    assert len(problems) >= 2
    unknown = w.r.webhooks.hook("issues", {**raw, "action": "reopened"})
    assert unknown == {**raw, "action": "reopened"}  # no schema to project onto: sent as is
    assert hooks.problems("issues", unknown) == [
        "issues$reopened is not an event the contract knows; add it to EVENTS and re-extract"
    ]


# -- values a user notices ------------------------------------------------------------


def test_collaborator_permissions_follow_the_role(w: World) -> None:
    granted = {
        role: {k for k, v in w.r.accounts.collaborator(w.alice, role)["permissions"].items() if v}
        for role in ("read", "triage", "write", "maintain", "admin")
    }
    assert granted["read"] == {"pull"}
    assert granted["triage"] == {"pull", "triage"}
    assert granted["write"] == {"pull", "triage", "push"}
    assert granted["maintain"] == {"pull", "triage", "push", "maintain"}
    assert granted["admin"] == {"pull", "triage", "push", "maintain", "admin"}


def test_author_association_follows_ownership_and_collaboration(w: World) -> None:
    assert w.r.issues.issue(w.repo, w.issue)["author_association"] == "NONE"  # bob
    assert (
        w.r.issues.comment(w.repo, w.issue.comments[0])["author_association"] == "MEMBER"
    )  # alice
    assert w.r.pulls.review(w.repo, w.pull, w.pull.reviews[0])["author_association"] == "MEMBER"
    personal = replace(w.repo, owner=w.bob)  # bob's own repository, alice collaborates
    assert w.r.issues.issue(personal, w.issue)["author_association"] == "OWNER"
    assert w.r.issues.comment(personal, w.issue.comments[0])["author_association"] == "COLLABORATOR"
    assert w.r.repos.repository(personal)["owner"]["type"] == "User"
    assert w.r.repos.repository(w.repo)["owner"]["type"] == "Organization"


def status(n: int, state: str, context: str, at: float, sha: str = HEAD) -> CommitStatus:
    return CommitStatus(n, sha, state, context, None, None, User("ci", 5), at, at)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("statuses", "state", "count"),
    [
        ([], "pending", 0),
        ([status(1, "success", "a", AT)], "success", 1),
        ([status(1, "success", "a", AT), status(2, "pending", "b", AT)], "pending", 2),
        ([status(1, "pending", "a", AT), status(2, "error", "b", AT)], "failure", 2),
        ([status(1, "success", "a", AT), status(2, "failure", "b", AT)], "failure", 2),
        ([status(1, "failure", "a", AT), status(2, "success", "a", AT + 1)], "success", 1),
        ([status(2, "success", "a", AT + 1), status(1, "failure", "a", AT)], "success", 1),
        ([status(1, "failure", "a", AT, sha=BASE)], "pending", 0),
    ],
    ids=[
        "none",
        "one-success",
        "pending-wins",
        "error-fails",
        "failure-fails",
        "latest-per-context",
        "latest-by-time-not-order",
        "other-sha-ignored",
    ],
)
def test_combined_status(w: World, statuses: list[CommitStatus], state: str, count: int) -> None:
    combined = w.r.checks.combined_status(w.repo, HEAD, statuses)
    assert (combined["state"], combined["total_count"]) == (state, count)
    assert len(combined["statuses"]) == count


def test_file_content_is_base64_in_lines_of_sixty(w: World) -> None:
    content = w.r.git.content(w.repo, w.file, "main")
    assert isinstance(content, dict)
    lines = content["content"].split("\n")
    assert lines[-1] == ""  # every line ends in a newline, the last one too
    assert len(lines) > 2
    assert all(len(line) == 60 for line in lines[:-2])
    assert base64.b64decode(content["content"]) == FILE_BYTES
    assert content["size"] == len(FILE_BYTES)
    assert content["download_url"] == f"{BASE_URL}/octo-org/widgets/raw/main/src/widget.py"


def test_directory_lists_its_children_with_submodules_as_files(w: World) -> None:
    listing = w.r.git.content(w.repo, w.tree, "main")
    assert isinstance(listing, list)
    assert [(e["name"], e["type"]) for e in listing] == [
        ("widget.py", "file"),
        ("lib", "dir"),
        ("link.py", "symlink"),
        ("vendor", "file"),
    ]
    assert all("content" not in e for e in listing)
    assert listing[1]["download_url"] is None
    assert listing[3]["git_url"] is None  # the submodule's commit is in another repository
    with pytest.raises(ValueError, match="submodule"):
        w.r.git.content(w.repo, w.tree.children[3], "main")


def test_urls_point_at_the_forge(w: World) -> None:
    repo = w.r.repos.repository(w.repo)
    assert repo["url"] == f"{BASE_URL}/repos/octo-org/widgets"
    assert repo["clone_url"] == f"{BASE_URL}/octo-org/widgets.git"
    assert (
        w.r.issues.issue(w.repo, w.pr)["pull_request"]["url"]
        == f"{BASE_URL}/repos/octo-org/widgets/pulls/2"
    )
    html = [
        repo["html_url"],
        w.r.issues.issue(w.repo, w.issue)["html_url"],
        w.r.issues.issue(w.repo, w.pr)["html_url"],
        w.pull_json()["html_url"],
        w.r.issues.comment(w.repo, w.issue.comments[0])["html_url"],
        w.r.pulls.review(w.repo, w.pull, w.pull.reviews[0])["html_url"],
    ]
    assert html[1] == f"{BASE_URL}/octo-org/widgets/issues/1"
    assert html[2] == html[3] == f"{BASE_URL}/octo-org/widgets/pull/2"
    for url in html:  # the read-only view answers each of them
        assert url.startswith(BASE_URL)
        answer = page({w.repo.full_name: w.repo}, urlsplit(url).path)
        assert answer is not None, url
        assert answer[0] == 200, url


def test_values_come_from_the_state(w: World) -> None:
    pull = w.r.webhooks.hook("pull_request", HOOKS["pull_request$closed"](w))["pull_request"]
    assert (pull["merged"], pull["merged_at"], pull["merge_commit_sha"]) == (
        True,
        iso(AT + 50),
        MERGED,
    )
    assert pull["merged_by"]["login"] == "alice"
    assert (pull["head"]["label"], pull["base"]["ref"]) == ("octo-org:fix-widget", "main")
    assert (pull["additions"], pull["deletions"], pull["changed_files"]) == (3, 1, 1)
    issue = w.r.issues.issue(w.repo, w.pr)
    assert issue["pull_request"]["merged_at"] == iso(AT + 50)
    assert issue["id"] != pull["id"]
    rollup = w.r.issues.issue(w.repo, w.issue)["reactions"]
    assert (rollup["total_count"], rollup["+1"], rollup["eyes"]) == (1, 1, 0)
    assert w.r.issues.comment(w.repo, w.pr.comments[0])["performed_via_github_app"]["id"] == APP_ID
    assert w.r.issues.comment(w.repo, w.issue.comments[0])["performed_via_github_app"] is None
    run = w.r.checks.check_run(w.repo, w.queued_run, [])
    assert run["app"]["slug"] == "localforge-ci"
    assert run["completed_at"] is None
    assert run["details_url"] == run["app"]["external_url"]  # GitHub's default
    assert run["external_id"] == ""
    commit = w.r.git.push_commit(w.repo, w.head)
    assert commit["timestamp"] == "2026-11-22T11:00:00+01:00"
    branch = w.r.git.branch(w.repo, "main", w.head, protected=False)
    assert branch["commit"]["commit"]["author"]["date"] == "2026-11-22T10:00:00Z"
    assert w.r.git.git_ref(w.repo, "heads/x", HEAD)["ref"] == "refs/heads/x"
    assert iso(AT) == "2026-11-22T10:00:00Z"


def test_requested_reviewers_and_a_closed_issue_come_from_the_state(w: World) -> None:
    assert w.pull_json()["requested_reviewers"] == []
    requested = w.r.webhooks.hook("pull_request", HOOKS["pull_request$review_requested"](w))
    assert [u["login"] for u in requested["pull_request"]["requested_reviewers"]] == ["alice"]
    assert requested["requested_reviewer"]["login"] == "alice"
    closed = w.r.webhooks.hook("issues", HOOKS["issues$closed"](w))["issue"]
    assert (closed["state"], closed["state_reason"], closed["closed_at"]) == (
        "closed",
        "completed",
        iso(AT + 51),
    )
    assert "pull_request" not in closed
