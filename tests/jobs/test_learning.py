"""Earned autonomy end to end on the local forge: lint fixes that keep merging cleanly
earn the right to merge themselves, a revert takes it back, a person closing one
unmerged counts against it, and a maintainer's ``trust reset`` forgets the record.

Everything runs for real, as in test_lifecycle.py: the server and its workers, lint
sessions in bubblewrap, pushes over HTTP, the forge's required CI, signed webhooks.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable

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
    entries = await pw.store.query_audit(AuditQuery(repo=REPO, limit=1_000_000))
    return [e.action for e in entries if e.action.startswith("trust.")]


async def test_the_tenth_lint_fix_waits_the_eleventh_merges_itself_and_a_revert_takes_it_back(
    story: Callable[..., Awaitable[Harness]],  # noqa: F811
) -> None:
    pw = await story(autonomy="review", extra=LEARN.format(n=10))
    forge = pw.forge
    for i in range(1, 11):
        number = await lint_round(pw, i)
        pull = forge.pull(REPO, number)
        assert not pull.merged, f"lint fix {i} merged itself with {i - 1} merged before it"
        assert "approval" in merge_said(forge, number)
        assert f"{i - 1} merged in 30 days" in body(forge, number)
        await forge.post_comment(REPO, number, "@patchwarden ship it", author="carol")
        await settle(pw)
        assert forge.pull(REPO, number).merged, f"lint fix {i} was approved but did not merge"
    assert await trust_actions(pw) == []

    eleventh = await lint_round(pw, 11)
    assert forge.pull(REPO, eleventh).merged  # nobody approved it
    assert "lint fixes merge themselves here: 10 merged in 30 days, 0 reverted" in body(
        forge, eleventh
    )
    assert await trust_actions(pw) == ["trust.promoted"]

    # A maintainer reverts it: the revert merges itself (it undoes Patchwarden's own
    # merge), and lint fixes are sent back to review.
    await forge.post_comment(REPO, eleventh, "@patchwarden revert", author="alice")
    await settle(pw)
    (revert,) = [p for p in forge.pulls(REPO) if f"Reverts #{eleventh}" in body(forge, p.number)]
    assert forge.pull(REPO, revert.number).merged

    twelfth = await lint_round(pw, 12)
    assert not forge.pull(REPO, twelfth).merged
    assert "lint fixes wait for a review here after a setback" in body(forge, twelfth)
    assert "1 reverted" in body(forge, twelfth)
    assert await trust_actions(pw) == ["trust.promoted", "trust.demoted"]
    (standing,) = [s for s in await pw.store.standings(REPO) if s.category == "lint"]
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
    fourth = await lint_round(pw, 4)
    await forge.post_comment(REPO, fourth, "@patchwarden ship it", author="carol")
    await settle(pw)
    assert forge.pull(REPO, third).merged
    assert forge.pull(REPO, fourth).merged
    fifth = await lint_round(pw, 5)
    assert forge.pull(REPO, fifth).merged
    assert "lint fixes merge themselves here: 2 merged" in body(forge, fifth)
    assert (await trust_actions(pw))[-1] == "trust.promoted"

    # A writer cannot reset trust; a maintainer can, and it is audited.
    await forge.post_comment(REPO, fifth, "@patchwarden trust reset", author="carol")
    await settle(pw)
    assert any("needs more access" in c for c in bot_comments(forge, fifth))
    await forge.post_comment(REPO, fifth, "@patchwarden trust reset lint", author="alice")
    await settle(pw)
    assert any("Trust reset by @alice: `lint` changes" in c for c in bot_comments(forge, fifth))
    assert (await trust_actions(pw))[-1] == "trust.reset"
    sixth = await lint_round(pw, 6)
    assert not forge.pull(REPO, sixth).merged  # the record it had earned by is forgotten
    assert "0 merged in 30 days" in body(forge, sixth)
