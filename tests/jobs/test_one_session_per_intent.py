"""One session per intent (issue 32): 75 signed "label added" deliveries for one issue
queued 75 fix jobs, each a whole coding session updating the same pull request. Now a
request that finds a newer one queued for the same issue gives way to it, one that finds
an earlier one running waits for it, and one that finds the pull request open, made for
the same words, ends there: one session, one pull request, every request audited."""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from collections.abc import Awaitable, Callable

import pytest

from app.cli.demo import SAMPLE
from app.fixers.llm.scripted import ScriptedModel, tool
from app.jobs import fix
from app.localforge import LocalForge
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


async def test_many_label_deliveries_for_one_issue_make_one_session(
    make_pw: Callable[..., Awaitable[Harness]],
    forge: LocalForge,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fix, "WAIT_SECONDS", 0.2)  # a request behind a running one
    config = "fixers:\n  llm:\n    strategy: agent\n"
    await forge.push(REPO, {**SAMPLE, ".github/patchwarden.yml": config}, author="alice")
    forge.add_user(REPO, "alice", "maintain")
    old = "    return 'hello ' + name\n"
    script = [  # one session's worth of answers: a second session would find none
        tool("edit", path="util.py", old=old, new=f'    """Say hello."""\n{old}'),
        tool("finish", summary="greet() says what it does"),
        tool("finish", summary="greet() says what it does"),
    ]
    async with ScriptedModel(script, api_key=KEY) as model:
        pw = await make_pw(
            workers=2, llm_model="scripted", llm_base_url=model.base_url, llm_api_key=KEY
        )
        await forge.install(INSTALLATION, by="alice")
        issue = forge.open_issue(REPO, "greet() needs a docstring", author="alice")
        for _ in range(TRIGGERS):
            await forge.add_label(REPO, issue.number, "patchwarden:fix", actor="alice")
        await pw.settle(within=240, every_job=True)
        # Once more, after the pull request opened: nothing new is asked of it.
        await forge.add_label(REPO, issue.number, "patchwarden:fix", actor="alice")
        await pw.settle(within=60, every_job=True)
    assert model.violations == []
    assert model.remaining == 0  # exactly one session's answers were asked for

    jobs = await pw.jobs("fix")
    assert len(jobs) >= TRIGGERS + 1  # every delivery queued its request (waits add more)
    ended = Counter(str((j.result or {}).get("status")) for j in jobs)
    no_session = ("coalesced", "answered", "unchanged", "waiting")
    assert sum(ended[s] for s in no_session[:3]) >= TRIGGERS, ended
    sessions = [j for j in jobs if (j.result or {}).get("status") not in no_session]
    assert len(sessions) == 1, ended
    audit = await pw.store.query_audit(AuditQuery(repo=REPO))
    said = Counter(e.action for e in audit)
    assert said["fix.coalesced"] + said["fix.answered"] + said["fix.unchanged"] >= TRIGGERS
    assert said["fix.waits"] == ended["waiting"]
    assert len(forge.pulls(REPO)) == 1
    assert ended["unchanged"] >= 1  # the request after the pull request opened
