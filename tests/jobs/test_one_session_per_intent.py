"""One session per intent (issue 32): 75 signed "label added" deliveries for one issue
queued 75 fix jobs, each a whole coding session updating the same pull request. Now a
request that finds a newer one queued for the same issue gives way to it, one that finds
an earlier one running waits for it, and one that finds the pull request open, made for
the same words, ends there: one session, one pull request, every request audited. Other
words after the pull request opened are a new session that updates that pull request."""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections import Counter
from collections.abc import Awaitable, Callable

import pytest

from app.cli.demo import SAMPLE
from app.fixers.llm.scripted import ScriptedModel, stall, tool
from app.jobs import fix
from app.localforge import LocalForge
from app.localforge.state import Issue
from app.store import AuditQuery
from tests.conftest import INSTALLATION, REPO, Harness

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        sys.platform != "linux" or shutil.which("bwrap") is None, reason="needs bubblewrap"
    ),
]

KEY = "sk-local-test-key-0123456789"
TRIGGERS = 75


async def _sample_repository(forge: LocalForge) -> None:
    """The sample project with the agent strategy, and alice, a maintainer."""
    config = "fixers:\n  llm:\n    strategy: agent\n"
    await forge.push(REPO, {**SAMPLE, ".github/patchwarden.yml": config}, author="alice")
    forge.add_user(REPO, "alice", "maintain")


async def _installed(
    make_pw: Callable[..., Awaitable[Harness]], forge: LocalForge, model: ScriptedModel
) -> tuple[Harness, Issue]:
    """Patchwarden on ``model``, installed by alice, and her issue."""
    pw = await make_pw(
        workers=2, llm_model="scripted", llm_base_url=model.base_url, llm_api_key=KEY
    )
    await forge.install(INSTALLATION, by="alice")
    return pw, forge.open_issue(REPO, "greet() needs a docstring", author="alice")


async def test_many_label_deliveries_for_one_issue_make_one_session(
    make_pw: Callable[..., Awaitable[Harness]],
    forge: LocalForge,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fix, "WAIT_SECONDS", 0.2)  # a request behind a running one
    await _sample_repository(forge)
    old = "    return 'hello ' + name\n"
    script = [  # one session's worth of answers: a second session would find none
        tool("edit", path="util.py", old=old, new=f'    """Say hello."""\n{old}'),
        tool("finish", summary="greet() says what it does"),
        tool("finish", summary="greet() says what it does"),
        # The second session, for other words: it updates the same pull request.
        tool("edit", path="util.py", old=old, new=f'    """Say hello to name."""\n{old}'),
        tool("finish", summary="the docstring names the argument"),
        tool("finish", summary="the docstring names the argument"),
    ]
    async with ScriptedModel(script, api_key=KEY) as model:
        pw, issue = await _installed(make_pw, forge, model)
        for _ in range(TRIGGERS):
            await forge.add_label(REPO, issue.number, "patchwarden:fix", actor="alice")
        await pw.settle(within=240, every_job=True)
        # Once more, after the pull request opened: nothing new is asked of it.
        await forge.add_label(REPO, issue.number, "patchwarden:fix", actor="alice")
        await pw.settle(within=60, every_job=True)
        (pull,) = forge.pulls(REPO)
        head = pull.head_sha
        # Other words after the pull request opened: one more session, the same pull.
        words = "@patchwarden fix this\nThe docstring should name the argument."
        await forge.post_comment(REPO, issue.number, words, author="alice")
        await pw.settle(within=120, every_job=True)
    assert model.violations == []
    assert model.remaining == 0  # exactly two sessions' answers were asked for

    jobs = await pw.jobs("fix")
    assert len(jobs) >= TRIGGERS + 1  # every delivery queued its request (waits add more)
    ended = Counter(str((j.result or {}).get("status")) for j in jobs)
    no_session = ("coalesced", "answered", "unchanged", "waiting")
    assert sum(ended[s] for s in no_session[:3]) >= TRIGGERS, ended
    sessions = [j for j in jobs if (j.result or {}).get("status") not in no_session]
    assert len(sessions) == 2, ended  # the labels' one, and the other words' one
    # only the fix. actions, and all of them: under load the waits alone pass the default
    # 1,000 entries, and the oldest-first page then lacked the last coalesced ones
    audit = await pw.store.journal.query_audit(
        AuditQuery(repo=REPO, action_prefix="fix.", limit=100_000)
    )
    said = Counter(e.action for e in audit)
    assert said["fix.coalesced"] + said["fix.answered"] + said["fix.unchanged"] >= TRIGGERS
    assert said["fix.waits"] == ended["waiting"]
    (updated,) = forge.pulls(REPO)
    assert ended["unchanged"] >= 1  # the request after the pull request opened
    assert updated.number == pull.number
    assert updated.head_sha != head  # the other words' session pushed to it


async def test_a_request_behind_a_stuck_session_runs_after_its_last_look(
    make_pw: Callable[..., Awaitable[Harness]],
    forge: LocalForge,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request waits for an earlier session on its issue at most MAX_WAITS looks: one
    that hangs (its model answers after seconds) does not hold the other for ever."""
    monkeypatch.setattr(fix, "WAIT_SECONDS", 0.2)
    monkeypatch.setattr(fix, "MAX_WAITS", 2)
    await _sample_repository(forge)
    old = "    return 'hello ' + name\n"
    edit = tool("edit", path="util.py", old=old, new=f'    """Say hello."""\n{old}')
    done = tool("finish", summary="greet() says what it does")
    # Whichever session asks first waits 6 s for its answer; the other gets its own.
    script = [stall(6.0, edit), edit, done, done, done, done]
    async with ScriptedModel(script, api_key=KEY) as model:
        pw, issue = await _installed(make_pw, forge, model)
        await forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="alice")
        for _ in range(200):  # until the first session is waiting for its model
            if model.requests:
                break
            await asyncio.sleep(0.05)
        words = "@patchwarden fix this\nA one-line docstring."
        await forge.post_comment(REPO, issue.number, words, author="alice")
        await pw.settle(within=120, every_job=True)
    assert model.violations == []
    jobs = await pw.jobs("fix")
    ended = Counter(str((j.result or {}).get("status")) for j in jobs)
    assert ended["waiting"] == 2, ended  # two looks, then it ran beside the stuck one
    sessions = [j for j in jobs if (j.result or {}).get("status") not in ("waiting",)]
    assert len(sessions) == 2, ended
    audit = await pw.store.journal.query_audit(AuditQuery(repo=REPO, action_prefix="fix."))
    assert Counter(e.action for e in audit)["fix.waits"] == 2


async def test_a_maintainers_commit_on_the_pull_requests_branch_is_never_overwritten(
    make_pw: Callable[..., Awaitable[Harness]],
    forge: LocalForge,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 35: a push must not lose a person's commit. The session for other words
    updates the open pull request's branch, which was still at Patchwarden's head when
    the session began; a maintainer commits to it while the session runs. The push is
    a lease (``--force-with-lease`` from the head Patchwarden pushed): her commit stays,
    the patch goes to a new branch and pull request, and the audit says why."""
    monkeypatch.setattr(fix, "WAIT_SECONDS", 0.2)
    await _sample_repository(forge)
    old = "    return 'hello ' + name\n"
    first_done = tool("finish", summary="greet() says what it does")
    second_done = tool("finish", summary="the docstring names the argument")
    script = [
        tool("edit", path="util.py", old=old, new=f'    """Say hello."""\n{old}'),
        first_done,
        first_done,
        # The second session's first answer comes late: she commits meanwhile.
        stall(3.0, tool("edit", path="util.py", old=old, new=f'    """Hello, name."""\n{old}')),
        second_done,
        second_done,
    ]
    async with ScriptedModel(script, api_key=KEY) as model:
        pw, issue = await _installed(make_pw, forge, model)
        await forge.add_label(REPO, issue.number, "patchwarden:fix", actor="alice")
        await pw.settle(within=120, every_job=True)
        (pull,) = forge.pulls(REPO)
        asked = len(model.requests)
        words = "@patchwarden fix this\nThe docstring should say hello to name."
        await forge.post_comment(REPO, issue.number, words, author="alice")
        for _ in range(300):  # until the second session waits for its first answer
            if len(model.requests) > asked:
                break
            await asyncio.sleep(0.05)
        theirs = await forge.push(
            REPO, {"NOTES.md": "reviewed\n"}, author="alice", branch=pull.head
        )
        await pw.settle(within=120, every_job=True)
    assert model.violations == []
    first, second = sorted(forge.pulls(REPO), key=lambda p: p.number)
    assert first.number == pull.number
    assert first.head_sha == theirs  # alice's commit is where she left it
    assert second.head == f"{pull.head}-2"
    audit = await pw.store.journal.query_audit(AuditQuery(repo=REPO, action_prefix="branch.kept"))
    assert [e.reason for e in audit] == [
        f"{pull.head} has commits Patchwarden did not push; the patch goes to {pull.head}-2"
    ]


async def test_a_retried_job_updates_its_own_branch_not_a_new_one(
    make_pw: Callable[..., Awaitable[Harness]], forge: LocalForge
) -> None:
    """The push moves only from a head Patchwarden pushed: a job retried after its push
    (the pull request could not be opened) finds its first attempt's commit on the
    branch, recorded in its audit before the push, and moves it: one branch, one pull
    request, nothing 'kept'."""
    await _sample_repository(forge)
    old = "    return 'hello ' + name\n"
    edit = tool("edit", path="util.py", old=old, new=f'    """Say hello."""\n{old}')
    done = tool("finish", summary="greet() says what it does")
    forge.fail("POST", r"/repos/[^/]+/[^/]+/pulls$", 502, times=1)
    async with ScriptedModel([edit, done, done] * 2, api_key=KEY) as model:
        pw, issue = await _installed(make_pw, forge, model)
        await forge.add_label(REPO, issue.number, "patchwarden:fix", actor="alice")
        await pw.settle(within=120, every_job=True)
    assert model.violations == []
    assert model.remaining == 0  # two attempts, two sessions
    (pull,) = forge.pulls(REPO)
    assert not pull.head.endswith("-2")
    audit = await pw.store.journal.query_audit(AuditQuery(repo=REPO, action_prefix="branch."))
    pushes = [e for e in audit if e.action == "branch.pushed"]
    assert len(pushes) == 2  # each attempt recorded its push
    assert [e for e in audit if e.action == "branch.kept"] == []
    assert pull.head_sha == pushes[-1].details["head"]
