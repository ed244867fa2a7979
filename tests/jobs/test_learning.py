"""Earned autonomy end to end on the local forge: lint fixes that keep merging cleanly
earn the right to merge themselves, a revert takes it back, a person closing one
unmerged counts against it, and a maintainer's ``trust reset`` forgets the record.

Everything runs for real, as in test_lifecycle.py: the server and its workers, lint
sessions in bubblewrap, pushes over HTTP, the forge's required CI, signed webhooks.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from app.localforge import LocalForge
from app.store import AuditQuery
from tests.conftest import REPO, Harness
from tests.jobs.test_lifecycle import bot_comments, merge_said, settle, story  # noqa: F401 (the fixture)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap sessions"),
]

LEARN = "learn:\n  ceiling: automerge\n  promote_after: {n}\n"


async def lint_round(pw: Harness, i: int) -> int:
    """A person adds a module with an unused import and asks for the fix; the number
    of the pull request Patchwarden opens for it."""
    forge = pw.forge
    module = f"import os\n\n\ndef f{i}():\n    return {i}\n"
    await forge.push(REPO, {f"mod{i}.py": module}, author="alice", message=f"Add mod{i}")
    issue = forge.open_issue(REPO, f"mod{i}.py imports os and never uses it", author="bob")
    await forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="alice")
    await settle(pw)
    pulls = [
        p
        for p in forge.pulls(REPO)
        if f"#{issue.number}" in (forge.issue(REPO, p.number).body or "")
    ]
    assert len(pulls) == 1, f"round {i}: {[p.number for p in forge.pulls(REPO)]}"
    return pulls[0].number


def body(forge: LocalForge, number: int) -> str:
    return forge.issue(REPO, number).body or ""


async def trust_actions(pw: Harness) -> list[str]:
    entries = await pw.store.journal.query_audit(AuditQuery(repo=REPO, limit=1_000_000))
    return [e.action for e in entries if e.action.startswith("trust.")]


# Clean merges a kind needs before it merges itself in the first story: the rule is the
# same for any count (tests/policy/test_learn.py tables it, the default of 10 included);
# each round here is a whole session, so the story counts to three.
PROMOTE_AFTER = 3


async def test_the_third_lint_fix_waits_the_fourth_merges_itself_and_a_revert_takes_it_back(
    story: Callable[..., Awaitable[Harness]],  # noqa: F811
) -> None:
    pw = await story(autonomy="review", extra=LEARN.format(n=PROMOTE_AFTER))
    forge = pw.forge
    for i in range(1, PROMOTE_AFTER + 1):
        number = await lint_round(pw, i)
        pull = forge.pull(REPO, number)
        assert not pull.merged, f"lint fix {i} merged itself with {i - 1} merged before it"
        assert "approval" in merge_said(forge, number)
        assert f"{i - 1} merged in 30 days" in body(forge, number)
        await forge.post_comment(REPO, number, "@patchwarden ship it", author="carol")
        await settle(pw)
        assert forge.pull(REPO, number).merged, f"lint fix {i} was approved but did not merge"
    assert await trust_actions(pw) == []

    promoted = await lint_round(pw, PROMOTE_AFTER + 1)
    assert forge.pull(REPO, promoted).merged  # nobody approved it
    said = f"lint fixes merge themselves here: {PROMOTE_AFTER} merged in 30 days, 0 reverted"
    assert said in body(forge, promoted)
    assert await trust_actions(pw) == ["trust.promoted"]

    # A maintainer reverts it: the revert merges itself (it undoes Patchwarden's own
    # merge), and lint fixes are sent back to review.
    await forge.post_comment(REPO, promoted, "@patchwarden revert", author="alice")
    await settle(pw)
    (revert,) = [p for p in forge.pulls(REPO) if f"Reverts #{promoted}" in body(forge, p.number)]
    assert forge.pull(REPO, revert.number).merged

    after_revert = await lint_round(pw, PROMOTE_AFTER + 2)
    assert not forge.pull(REPO, after_revert).merged
    assert "lint fixes wait for a review here after a setback" in body(forge, after_revert)
    assert "1 reverted" in body(forge, after_revert)
    assert await trust_actions(pw) == ["trust.promoted", "trust.demoted"]
    (standing,) = [s for s in await pw.store.learning.standings(REPO) if s.category == "lint"]
    assert (standing.state, standing.autonomy) == ("demoted", "review")


async def test_rejections_demote_earning_it_back_promotes_and_a_maintainer_resets_it(
    story: Callable[..., Awaitable[Harness]],  # noqa: F811
) -> None:
    pw = await story(autonomy="review", extra=LEARN.format(n=2))
    forge = pw.forge
    # A person closes two lint fixes unmerged: lint fixes are demoted.
    for i in (1, 2):
        number = await lint_round(pw, i)
        await forge.close_unmerged(REPO, number, by="alice")
        await settle(pw)
    third = await lint_round(pw, 3)
    assert not forge.pull(REPO, third).merged
    assert "after a setback" in body(forge, third)
    assert "2 closed unmerged" in body(forge, third)
    assert await trust_actions(pw) == ["trust.rejected", "trust.rejected", "trust.demoted"]

    # Two clean merges earn it back (promote_after: 2): the fifth merges itself.
    await forge.post_comment(REPO, third, "@patchwarden ship it", author="carol")
    await settle(pw)
    assert forge.pull(REPO, third).merged
    fourth = await lint_round(pw, 4)
    await forge.post_comment(REPO, fourth, "@patchwarden ship it", author="carol")
    await settle(pw)
    assert forge.pull(REPO, fourth).merged
    fifth = await lint_round(pw, 5)
    assert forge.pull(REPO, fifth).merged
    assert "lint fixes merge themselves here: 2 merged" in body(forge, fifth)
    assert (await trust_actions(pw))[-1] == "trust.promoted"

    # A writer cannot reset trust; a maintainer can, only for a kind there is.
    await forge.post_comment(REPO, fifth, "@patchwarden trust reset", author="carol")
    await forge.post_comment(REPO, fifth, "@patchwarden trust reset lnit", author="alice")
    await settle(pw)
    said = bot_comments(forge, fifth)
    assert any("needs more access" in c for c in said)
    assert any("`lnit` is no kind of change" in c and "`lint`" in c for c in said)
    assert "trust.reset" not in await trust_actions(pw)

    # A lint fix scored to merge itself waits on CI; the maintainer resets trust before
    # its checks finish: it no longer merges by itself.
    gate = pw.runtime.settings.cache_dir / "ci-gate"
    waiter = (
        f"import pathlib,time\nwhile not pathlib.Path({str(gate)!r}).exists(): time.sleep(0.05)"
    )
    forge.require_check(REPO, "gate", [sys.executable, "-c", waiter])
    await forge.push(REPO, {"mod6.py": "import os\n\n\ndef f6():\n    return 6\n"}, author="alice")
    issue = forge.open_issue(REPO, "mod6.py imports os and never uses it", author="bob")
    await forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="alice")
    sixth = await until(lambda: scored_automerge(pw, issue.number))
    await forge.post_comment(REPO, fifth, "@patchwarden trust reset lint", author="alice")
    await until(lambda: reset_recorded(pw))
    gate.write_text("open")
    await settle(pw)
    assert any("Trust reset by @alice: `lint` changes" in c for c in bot_comments(forge, fifth))
    assert not forge.pull(REPO, sixth).merged
    assert "approval" in merge_said(forge, sixth)
    assert "merge.held" in [
        e.action for e in await pw.store.journal.query_audit(AuditQuery(repo=REPO, limit=1_000_000))
    ]
    seventh = await lint_round(pw, 7)
    assert not forge.pull(REPO, seventh).merged  # the record it had earned by is forgotten
    assert "0 merged in 30 days" in body(forge, seventh)


async def until(found: Callable[[], Awaitable[Any]], within: float = 120.0) -> Any:
    """Poll ``found`` until it returns something truthy (the server runs meanwhile)."""
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        value = await found()
        if value:
            return value
        await asyncio.sleep(0.1)
    raise TimeoutError("not found in time")


async def scored_automerge(pw: Harness, issue: int) -> int | None:
    """The pull request opened for ``issue`` once its outcome says it may merge itself."""
    for o in await pw.store.learning.find_outcomes(repo=REPO):
        if o.issue_number == issue and o.pr_number and o.decision == "automerge":
            return int(o.pr_number)
    return None


async def reset_recorded(pw: Harness) -> bool:
    return any(e.what == "reset" for e in await pw.store.learning.trust_events(REPO))


async def test_a_persons_revert_made_with_githubs_revert_button_counts_too(
    story: Callable[..., Awaitable[Harness]],  # noqa: F811
) -> None:
    pw = await story(autonomy="review", extra=LEARN.format(n=1))
    forge = pw.forge
    first = await lint_round(pw, 1)
    await forge.post_comment(REPO, first, "@patchwarden ship it", author="carol")
    await settle(pw)
    second = await lint_round(pw, 2)
    assert forge.pull(REPO, second).merged  # earned with one clean merge
    # GitHub's Revert button: a branch with the revert, a pull request whose body is
    # "Reverts owner/name#N", merged by a person.
    git = forge.repos[REPO].git
    git.create_ref("refs/heads/revert-2", str(git.resolve("refs/heads/main")))
    module = "import os\n\n\ndef f2():\n    return 2\n"
    await forge.push(REPO, {"mod2.py": module}, author="alice", branch="revert-2")
    revert = await forge.open_pull(
        REPO,
        head="revert-2",
        base="main",
        title='Revert "mod2.py imports os and never uses it"',
        body=f"Reverts {REPO}#{second}",
        author="alice",
    )
    await settle(pw)
    await forge.merge_by(REPO, revert.number, by="alice")
    await settle(pw)
    assert "trust.reverted" in await trust_actions(pw)
    third = await lint_round(pw, 3)
    assert not forge.pull(REPO, third).merged
    assert "after a setback" in body(forge, third)
