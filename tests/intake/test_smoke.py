from collections.abc import Awaitable, Callable

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


async def test_metrics_answer_prometheus_and_keep_to_their_token(
    make_pw: Callable[..., Awaitable[Harness]],
) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    token = "metrics-" + "t0ken-for-tests"
    pw = await make_pw(metrics_token=token)
    async with pw.session.get(f"{pw.url}/metrics") as response:
        assert response.status == 401
    headers = {"Authorization": f"Bearer {token}"}
    async with pw.session.get(f"{pw.url}/metrics", headers=headers) as response:
        assert response.status == 200
        text = await response.text()
    names = {family.name for family in text_string_to_metric_families(text)}
    assert {"patchwarden_jobs", "patchwarden_webhook_requests", "patchwarden_queue_depth"} <= names
    assert "octo-org" not in text  # no repository names in labels
