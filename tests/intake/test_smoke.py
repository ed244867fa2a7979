from tests.conftest import REPO, Harness


async def test_fix_comment_by_maintainer_queues_one_job_and_reacts(pw: Harness) -> None:
    pw.forge.add_user(REPO, "alice", "maintain")
    issue = pw.forge.open_issue(REPO, "Crash", author="alice")
    comment = await pw.forge.post_comment(
        REPO, issue.number, "@patchwarden fix this", author="alice"
    )
    await pw.settle()
    jobs = await pw.jobs("fix")
    assert [j.payload["requested_by"] for j in jobs] == ["alice"]
    assert pw.forge.comment_reactions(comment.id) == ["eyes"]
