"""Whether a Patchwarden pull request merges: the pure decision ladder and what feeds it
(checks, approvals, a revert's score, a pause), table-driven without a server."""

from __future__ import annotations

from typing import Any

import pytest

from app.contract.lifecycle_rules import pause_reason
from app.jobs.pull_request import body_links
from app.policy.score import Score, Trigger, score_session
from app.publish.merge_decision import Check, Facts, Verdict, approvers_of, checks_of, decide
from app.store.models import Outcome, Pause
from tests.policy_helpers import gdiff, policy_with, result_for

BOT = "patchwarden"
HEAD = "0123456789abcdef" * 2 + "01234567"  # 40 hex digits, as GitHub sends them
MOVED = "fedcba9876543210" * 2 + "fedcba98"
GREEN_CI = Check("ci/test", "passed")


# -- decide: the ladder, question by question ------------------------------------------


def facts(**changes: Any) -> Facts:
    """A pull request that merges: reviewed, approved by a second writer, checks green."""
    base: dict[str, Any] = {
        "decision": "review",
        "state": "open",
        "merged": False,
        "draft": False,
        "head_sha": HEAD,
        "scored_sha": HEAD,
        "base_moved": False,
        "checks": (GREEN_CI,),
        "approvers": frozenset({"bob"}),
        "requested_by": "alice",
        "two_person": True,
    }
    return Facts(**{**base, **changes})


NOBODY: frozenset[str] = frozenset()
FAILED = Check("lint", "failed")
PENDING = Check("ci/build", "pending")
PAUSED = "Patchwarden is paused on octo-org/widgets (by @carol)"

# (id, changes to facts(), action, words the reason has, how)
LADDER: list[tuple[str, dict[str, Any], str, tuple[str, ...], str | None]] = [
    ("merged", {"merged": True, "state": "closed"}, "done", ("already merged",), None),
    (
        "merged-beats-pause-and-moved-head",
        {"merged": True, "state": "closed", "paused": PAUSED, "head_sha": MOVED},
        "done",
        ("already merged",),
        None,
    ),
    ("closed", {"state": "closed"}, "done", ("closed",), None),
    ("closed-beats-pause", {"state": "closed", "paused": PAUSED}, "done", ("closed",), None),
    ("paused-even-approved", {"paused": PAUSED}, "refuse", (PAUSED,), None),
    (
        "paused-automerge-green",
        {"paused": PAUSED, "decision": "automerge", "approvers": NOBODY},
        "refuse",
        (PAUSED,),
        None,
    ),
    ("paused-beats-moved-head", {"paused": PAUSED, "head_sha": MOVED}, "refuse", (PAUSED,), None),
    (
        "head-moved-approved",
        {"head_sha": MOVED},
        "refuse",
        (f"moved to {MOVED[:12]}", f"scored {HEAD[:12]}"),
        None,
    ),
    (
        "head-moved-automerge-green",
        {"head_sha": MOVED, "decision": "automerge", "approvers": NOBODY},
        "refuse",
        (MOVED[:12], HEAD[:12], "did not score"),
        None,
    ),
    (
        "head-moved-beats-reject",
        {"head_sha": MOVED, "decision": "reject"},
        "refuse",
        ("did not score",),
        None,
    ),
    ("reject-even-approved", {"decision": "reject"}, "refuse", ("rejected",), None),
    (
        "reject-approved-by-everyone",
        {"decision": "reject", "approvers": frozenset({"alice", "bob", "carol"})},
        "refuse",
        ("rejected",),
        None,
    ),
    (
        "only-the-requester-approved",
        {"approvers": frozenset({"alice"})},
        "wait",
        ("@alice", "second writer", "merge.two_person"),
        None,
    ),
    (
        "requester-alone-suffices-without-two-person",
        {"approvers": frozenset({"alice"}), "two_person": False},
        "merge",
        ("every check passed",),
        "approved",
    ),
    (
        "requester-and-another-writer",
        {"approvers": frozenset({"alice", "bob"})},
        "merge",
        ("every check passed",),
        "approved",
    ),
    ("another-writer-approved", {}, "merge", ("every check passed",), "approved"),
    (
        "approved-beats-automerge",
        {"decision": "automerge"},
        "merge",
        ("every check passed",),
        "approved",
    ),
    (
        "automerge-no-approval",
        {"decision": "automerge", "approvers": NOBODY},
        "merge",
        ("every check passed",),
        "auto",
    ),
    (
        "automerge-requester-approval-does-not-block",
        {"decision": "automerge", "approvers": frozenset({"alice"})},
        "merge",
        ("every check passed",),
        "auto",
    ),
    (
        "review-no-approval",
        {"approvers": NOBODY},
        "wait",
        ("writer's approval", "`@patchwarden ship it`"),
        None,
    ),
    (
        "review-no-approval-names-the-configured-bot",
        {"approvers": NOBODY, "bot": "pw-staging"},
        "wait",
        ("`@pw-staging ship it`",),
        None,
    ),
    (
        "draft-decision-no-approval",
        {"decision": "draft", "draft": True, "approvers": NOBODY},
        "wait",
        ("writer's approval",),
        None,
    ),
    ("draft-pr-approved", {"draft": True}, "wait", ("draft", "ready for review"), None),
    (
        "draft-pr-automerge",
        {"draft": True, "decision": "automerge", "approvers": NOBODY},
        "wait",
        ("draft",),
        None,
    ),
    (
        "draft-asked-before-checks",
        {"draft": True, "checks": (FAILED,)},
        "wait",
        ("draft",),
        None,
    ),
    ("failed-check", {"checks": (GREEN_CI, FAILED)}, "wait", ("checks failed: `lint`",), None),
    (
        "failed-check-automerge",
        {"checks": (FAILED,), "decision": "automerge", "approvers": NOBODY},
        "wait",
        ("checks failed: `lint`",),
        None,
    ),
    (
        "failed-asked-before-pending",
        {"checks": (PENDING, FAILED)},
        "wait",
        ("checks failed: `lint`",),
        None,
    ),
    (
        "many-failed-checks-are-counted",
        {"checks": tuple(Check(f"c{i}", "failed") for i in range(7))},
        "wait",
        ("`c0`, `c1`, `c2`, `c3`, `c4` and 2 more",),
        None,
    ),
    (
        "pending-check",
        {"checks": (GREEN_CI, PENDING)},
        "wait",
        ("waiting for checks: `ci/build`",),
        None,
    ),
    (
        "no-checks-automerge",
        {"checks": (), "decision": "automerge", "approvers": NOBODY},
        "wait",
        ("no checks ran", "never merged automatically", "`@patchwarden ship it`"),
        None,
    ),
    (
        "no-checks-automerge-names-the-configured-bot",
        {"checks": (), "decision": "automerge", "approvers": NOBODY, "bot": "pw-staging"},
        "wait",
        ("`@pw-staging ship it`",),
        None,
    ),
    (
        "no-checks-automerge-asked-before-base-moved",
        {"checks": (), "decision": "automerge", "approvers": NOBODY, "base_moved": True},
        "wait",
        ("never merged automatically",),
        None,
    ),
    ("no-checks-approved", {"checks": ()}, "merge", ("approved",), "approved"),
    (
        "base-moved-checks-failed",
        {"base_moved": True, "checks": (FAILED,)},
        "wait",
        ("checks failed",),
        None,
    ),
    (
        "base-moved-checks-pending",
        {"base_moved": True, "checks": (PENDING,)},
        "wait",
        ("waiting for checks",),
        None,
    ),
    (
        "base-moved-approved",
        {"base_moved": True},
        "update",
        ("base branch moved",),
        "approved",
    ),
    (
        "base-moved-automerge",
        {"base_moved": True, "decision": "automerge", "approvers": NOBODY},
        "update",
        ("base branch moved",),
        "auto",
    ),
    (
        "base-moved-no-checks-approved",
        {"base_moved": True, "checks": ()},
        "update",
        ("base branch moved",),
        "approved",
    ),
    (
        "all-green",
        {"checks": (GREEN_CI, Check("lint", "passed"), Check("ci/build", "passed"))},
        "merge",
        ("every check passed",),
        "approved",
    ),
]


@pytest.mark.parametrize(
    ("changes", "action", "says", "how"),
    [row[1:] for row in LADDER],
    ids=[row[0] for row in LADDER],
)
def test_the_merge_ladder(
    changes: dict[str, Any], action: str, says: tuple[str, ...], how: str | None
) -> None:
    verdict = decide(facts(**changes))
    assert (verdict.action, verdict.how) == (action, how), verdict
    for words in says:
        assert words in verdict.reason, verdict


def test_a_moved_head_names_both_commits_shortened() -> None:
    verdict = decide(facts(head_sha=MOVED, decision="automerge", approvers=NOBODY))
    assert verdict == Verdict("refuse", verdict.reason)
    for sha in (MOVED, HEAD):
        assert sha[:12] in verdict.reason
        assert sha[:13] not in verdict.reason


def test_the_checks_named_are_only_those_in_that_state() -> None:
    verdict = decide(facts(checks=(Check("zeta", "failed"), GREEN_CI, Check("alpha", "failed"))))
    assert verdict.reason == "checks failed: `alpha`, `zeta`"


# -- checks_of: check runs and statuses as GitHub sends them ---------------------------


def run(
    name: str,
    run_id: int,
    *,
    status: str = "completed",
    conclusion: str | None = "success",
    app: str | None = "github-actions",
) -> dict[str, Any]:
    """A check run, trimmed from GET /repos/{o}/{r}/commits/{ref}/check-runs."""
    return {
        "id": run_id,
        "name": name,
        "status": status,
        "conclusion": conclusion if status == "completed" else None,
        "app": {"slug": app, "name": app} if app else None,
    }


def status(context: str, state: str) -> dict[str, Any]:
    """A status, from the ``statuses`` of GET /repos/{o}/{r}/commits/{ref}/status."""
    return {"context": context, "state": state, "target_url": None}


CHECKS: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], list[tuple[str, str]]]] = [
    ("nothing", [], [], []),
    (
        "the-bots-own-runs-left-out",
        [
            run("patchwarden", 1, conclusion="failure", app=BOT),
            run("patchwarden/score", 2, status="in_progress", app=BOT),
            run("test", 3),
        ],
        [],
        [("test", "passed")],
    ),
    (
        "another-apps-run-named-like-the-bot-stays",
        [run("patchwarden", 1, conclusion="failure", app="circleci")],
        [],
        [("patchwarden", "failed")],
    ),
    ("a-run-without-an-app-stays", [run("test", 1, app=None)], [], [("test", "passed")]),
    (
        "a-rerun-that-passed-wins",
        [run("test", 5, conclusion="failure"), run("test", 9)],
        [],
        [("test", "passed")],
    ),
    (
        "a-rerun-that-passed-wins-listed-first",
        [run("test", 9), run("test", 5, conclusion="failure")],
        [],
        [("test", "passed")],
    ),
    (
        "a-rerun-that-failed-wins",
        [run("test", 5), run("test", 9, conclusion="failure")],
        [],
        [("test", "failed")],
    ),
    (
        "a-rerun-in-progress-wins",
        [run("test", 9, status="in_progress"), run("test", 5)],
        [],
        [("test", "pending")],
    ),
    (
        "latest-per-name-not-overall",
        [
            run("test", 1),
            run("lint", 2, conclusion="failure"),
            run("test", 3, conclusion="failure"),
        ],
        [],
        [("lint", "failed"), ("test", "failed")],
    ),
    ("queued", [run("test", 1, status="queued")], [], [("test", "pending")]),
    ("in-progress", [run("test", 1, status="in_progress")], [], [("test", "pending")]),
    ("waiting", [run("test", 1, status="waiting")], [], [("test", "pending")]),
    ("status-success", [], [status("ci/jenkins", "success")], [("ci/jenkins", "passed")]),
    ("status-pending", [], [status("ci/jenkins", "pending")], [("ci/jenkins", "pending")]),
    ("status-failure", [], [status("ci/jenkins", "failure")], [("ci/jenkins", "failed")]),
    ("status-error", [], [status("ci/jenkins", "error")], [("ci/jenkins", "failed")]),
    (
        "runs-and-statuses-together",
        [run("test", 1), run("lint", 2, status="queued")],
        [status("ci/jenkins", "failure"), status("coverage", "success")],
        [("ci/jenkins", "failed"), ("coverage", "passed"), ("lint", "pending"), ("test", "passed")],
    ),
]


@pytest.mark.parametrize(
    ("runs", "statuses", "expected"), [c[1:] for c in CHECKS], ids=[c[0] for c in CHECKS]
)
def test_checks_of(
    runs: list[dict[str, Any]], statuses: list[dict[str, Any]], expected: list[tuple[str, str]]
) -> None:
    found = checks_of(runs, statuses, bot_slug=BOT)
    assert sorted((c.name, c.state) for c in found) == expected


@pytest.mark.parametrize(
    ("conclusion", "state"),
    [
        ("success", "passed"),
        ("neutral", "passed"),
        ("skipped", "passed"),
        ("failure", "failed"),
        ("cancelled", "failed"),
        ("timed_out", "failed"),
        ("action_required", "failed"),
        ("stale", "failed"),
        ("startup_failure", "failed"),
        (None, "failed"),
    ],
)
def test_a_completed_runs_conclusion(conclusion: str | None, state: str) -> None:
    assert checks_of([run("test", 1, conclusion=conclusion)], [], bot_slug=BOT) == (
        Check("test", state),  # type: ignore[arg-type]
    )


# -- approvers_of: whose review approves the current head ------------------------------

ROLES: dict[str, str | None] = {
    "alice": "write",
    "bob": "maintain",
    "carol": "admin",
    "dave": "read",
    "frank": "triage",
    "erin": None,  # the permission lookup failed
}


def review(login: str | None, state: str, commit: str = HEAD) -> dict[str, Any]:
    """A review, trimmed from GET /repos/{o}/{r}/pulls/{n}/reviews (oldest first)."""
    return {
        "user": {"login": login, "type": "User"} if login else None,
        "state": state,
        "commit_id": commit,
    }


APPROVALS: list[tuple[str, list[dict[str, Any]], set[str]]] = [
    ("none", [], set()),
    ("a-writer-approves-the-head", [review("alice", "APPROVED")], {"alice"}),
    (
        "admin-maintain-write-all-count",
        [review("alice", "APPROVED"), review("bob", "APPROVED"), review("carol", "APPROVED")],
        {"alice", "bob", "carol"},
    ),
    ("an-approval-of-an-older-commit", [review("alice", "APPROVED", MOVED)], set()),
    (
        "an-older-approval-then-one-of-the-head",
        [review("alice", "APPROVED", MOVED), review("alice", "APPROVED")],
        {"alice"},
    ),
    (
        "changes-requested-later-undoes-it",
        [review("alice", "APPROVED"), review("alice", "CHANGES_REQUESTED")],
        set(),
    ),
    (
        "dismissed-later-undoes-it",
        [review("alice", "APPROVED"), review("alice", "DISMISSED")],
        set(),
    ),
    ("a-dismissed-approval", [review("alice", "DISMISSED")], set()),
    (
        "a-comment-later-does-not-undo-it",
        [review("alice", "APPROVED"), review("alice", "COMMENTED")],
        {"alice"},
    ),
    (
        "a-pending-review-later-does-not-undo-it",
        [review("alice", "APPROVED"), review("alice", "PENDING")],
        {"alice"},
    ),
    (
        "approved-after-requesting-changes",
        [review("alice", "CHANGES_REQUESTED"), review("alice", "APPROVED")],
        {"alice"},
    ),
    (
        "someone-elses-change-request-does-not-undo-it",
        [review("alice", "APPROVED"), review("bob", "CHANGES_REQUESTED")],
        {"alice"},
    ),
    ("a-commented-review-is-no-approval", [review("alice", "COMMENTED")], set()),
    ("a-readers-approval", [review("dave", "APPROVED")], set()),
    ("a-triagers-approval", [review("frank", "APPROVED")], set()),
    ("a-failed-role-lookup", [review("erin", "APPROVED")], set()),
    ("a-login-with-no-role-looked-up", [review("mallory", "APPROVED")], set()),
    ("a-deleted-account", [review(None, "APPROVED"), review("alice", "APPROVED")], {"alice"}),
]


@pytest.mark.parametrize(
    ("reviews", "expected"), [a[1:] for a in APPROVALS], ids=[a[0] for a in APPROVALS]
)
def test_approvers_of(reviews: list[dict[str, Any]], expected: set[str]) -> None:
    assert approvers_of(reviews, head_sha=HEAD, roles=ROLES) == frozenset(expected)


# -- a revert's score: Trigger.reverts -------------------------------------------------

SMALL_REVERT = gdiff("src/calc.py", ["return a + b"], ["return a - b"])
# Low by every other measure, but deletes and binary files push the score past review.
BIG_REVERT = (
    "".join(gdiff(f"src/m{i}.py", ["x = 1"] * 30) for i in range(3))
    + "".join(gdiff(f"src/old{i}.py", remove=["y = 2"], deleted=True) for i in range(3))
    + "".join(gdiff(f"assets/i{i}.png", binary=True) for i in range(3))
)


def revert_scored(diff: str, repo_yaml: str, trigger: Trigger) -> Score:
    policy = policy_with(repo_yaml)
    return score_session(result_for(diff, fixer="revert", policy=policy), policy, trigger=trigger)


# (id, diff, the repository's policy file, trigger, decision, risk, rules that fired)
REVERTS: list[tuple[str, str, str, Trigger, str, str, list[str]]] = [
    (
        "own-merge-under-review-automerges",
        SMALL_REVERT,
        "",
        Trigger("canary", reverts="bot"),
        "automerge",
        "low",
        [],
    ),
    (
        "own-merge-with-revert-automerge-off",
        SMALL_REVERT,
        "merge: {revert_automerge: false}\n",
        Trigger("canary", reverts="bot"),
        "review",
        "low",
        ["autonomy"],
    ),
    (
        "not-a-revert-is-capped-by-autonomy",
        SMALL_REVERT,
        "",
        Trigger("canary"),
        "review",
        "low",
        ["autonomy"],
    ),
    (
        "own-merge-under-propose-automerges",
        SMALL_REVERT,
        "autonomy: propose\n",
        Trigger("canary", reverts="bot"),
        "automerge",
        "low",
        [],
    ),
    (
        "a-persons-commit-under-automerge-needs-review",
        SMALL_REVERT,
        "autonomy: automerge\n",
        Trigger("canary", reverts="human"),
        "review",
        "low",
        ["reverts_person"],
    ),
    (
        "a-persons-commit-under-propose-stays-draft",
        SMALL_REVERT,
        "autonomy: propose\n",
        Trigger("canary", reverts="human"),
        "draft",
        "low",
        ["autonomy"],
    ),
    (
        "a-high-risk-revert-is-not-raised",
        BIG_REVERT,
        "",
        Trigger("canary", reverts="bot"),
        "draft",
        "high",
        [],
    ),
    (
        "a-high-risk-revert-is-not-raised-under-automerge",
        BIG_REVERT,
        "autonomy: automerge\n",
        Trigger("canary", reverts="bot"),
        "draft",
        "high",
        [],
    ),
]


@pytest.mark.parametrize(
    ("diff", "repo_yaml", "trigger", "decision", "risk", "rules"),
    [r[1:] for r in REVERTS],
    ids=[r[0] for r in REVERTS],
)
def test_a_reverts_decision(
    diff: str, repo_yaml: str, trigger: Trigger, decision: str, risk: str, rules: list[str]
) -> None:
    s = revert_scored(diff, repo_yaml, trigger)
    assert (s.decision, s.risk) == (decision, risk), s.rules
    assert [r.rule for r in s.rules] == rules


def test_the_big_revert_is_high_risk_by_score_alone() -> None:
    # What the "not raised" rows rely on: the thresholds, not a hard rule, make it a draft.
    s = revert_scored(BIG_REVERT, "", Trigger("canary", reverts="bot"))
    assert s.by_score == "draft"
    assert s.score > s.thresholds.review


def test_reverting_a_person_says_why() -> None:
    s = revert_scored(SMALL_REVERT, "autonomy: automerge\n", Trigger("canary", reverts="human"))
    hit = next(r for r in s.rules if r.rule == "reverts_person")
    assert hit.decision == "review"
    assert "person" in hit.reason


# -- pause_reason ------------------------------------------------------------------------

REPO = "octo-org/widgets"
CAROLS = Pause(repo=REPO, actor="carol", at=1_800_000_000.0, reason="release freeze")

PAUSES: list[tuple[str, Pause | None, bool, str, tuple[str, ...], tuple[str, ...]]] = [
    (
        "global-wins-over-a-repo-pause",
        CAROLS,
        True,
        "patchwarden",
        ("every repository", "PATCHWARDEN_PAUSED"),
        ("@carol", "resume"),
    ),
    ("global-alone", None, True, "patchwarden", ("every repository",), ()),
    (
        "repo-pause",
        CAROLS,
        False,
        "patchwarden",
        (REPO, "@carol", "`@patchwarden resume`"),
        ("every repository",),
    ),
    (
        "repo-pause-names-the-configured-bot",
        CAROLS,
        False,
        "pw-staging",
        ("`@pw-staging resume`",),
        ("@patchwarden",),
    ),
]


@pytest.mark.parametrize(
    ("pause", "globally", "bot", "has", "lacks"),
    [p[1:] for p in PAUSES],
    ids=[p[0] for p in PAUSES],
)
def test_pause_reason(
    pause: Pause | None, globally: bool, bot: str, has: tuple[str, ...], lacks: tuple[str, ...]
) -> None:
    reason = pause_reason(pause, globally=globally, repo=REPO, bot=bot)
    assert reason is not None
    for words in has:
        assert words in reason
    for words in lacks:
        assert words not in reason


def test_nothing_paused_is_no_reason() -> None:
    assert pause_reason(None, globally=False, repo=REPO, bot=BOT) is None


def test_a_failing_check_is_not_hidden_by_another_apps_check_of_the_same_name() -> None:
    runs = [
        {
            "id": 1,
            "name": "build",
            "status": "completed",
            "conclusion": "failure",
            "app": {"slug": "circleci"},
        },
        {
            "id": 2,
            "name": "build",
            "status": "completed",
            "conclusion": "success",
            "app": {"slug": "github-actions"},
        },
    ]
    found = checks_of(runs, [], bot_slug="patchwarden")
    assert sorted(c.state for c in found) == ["failed", "passed"]


@pytest.mark.parametrize(
    ("changes", "action"),
    [
        pytest.param({"refused_before": "405: not mergeable"}, "wait", id="refused-event"),
        pytest.param(
            {"refused_before": "405: not mergeable", "person_asked": True}, "merge", id="asked"
        ),
        pytest.param({"refused_before": None}, "merge", id="never-refused"),
        pytest.param(
            {"refused_before": "409: moved", "person_asked": True, "checks": ()},
            "merge",
            id="asked-no-checks",
        ),
    ],
)
def test_a_head_github_refused_waits_for_a_person(changes: dict[str, Any], action: str) -> None:
    verdict = decide(facts(**changes))
    assert verdict.action == action, verdict
    if action == "wait":
        assert "not retried until a writer approves" in verdict.reason


@pytest.mark.parametrize(
    ("refusal", "hinted"),
    [
        ("405: Commits must have verified signatures.", True),
        ("405: Commits must have valid signatures.", True),  # GitHub's older words
        (
            "405: Base branch requires signed commits. "
            "Rebase merges cannot be automatically signed by GitHub",
            True,
        ),
        ("405: Pull Request is not mergeable", False),
    ],
)
def test_a_refusal_for_want_of_signatures_names_the_setting_to_change(
    refusal: str, hinted: bool
) -> None:
    verdict = decide(facts(refused_before=refusal))
    assert verdict.action == "wait"
    assert ("`commit_signing: api`" in verdict.reason) is hinted
    assert not verdict.reason.endswith(".")  # the caller ends the sentence


# -- the lines Patchwarden adds to a body ------------------------------------------


def _merged_pr(number: int, sha: str) -> Outcome:
    return Outcome(job_id=1, repo="o/r", kind="fix", trigger="comment", created_at=0.0,
                   pr_number=number, merge_sha=sha)  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "lines"),
    [
        pytest.param({"closes": 12, "mergeable": True}, ["Fixes #12"], id="closes-when-mergeable"),
        # A draft must not close the issue by being merged half-done.
        pytest.param({"closes": 12, "mergeable": False}, ["For #12"], id="draft-only-refers"),
        pytest.param({"closes": None, "mergeable": True}, [], id="alert-no-issue"),
        pytest.param(
            {"closes": None, "mergeable": True, "revert_of": _merged_pr(7, "a" * 40)},
            ["Reverts #7 (merged as aaaaaaaaaaaa)"],
            id="revert",
        ),
    ],
)
def test_body_links(kwargs: dict[str, Any], lines: list[str]) -> None:
    assert list(body_links(**{"revert_of": None, **kwargs})) == lines
