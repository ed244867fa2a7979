"""Pushing a patch to its branch on GitHub without losing anyone's commit.

A session's branch (``patchwarden/<job>-<task>``, or the open pull request's branch a
later session for the same issue updates) moves only from a head Patchwarden pushed:
none yet, the patch itself, a push this job recorded (a retried job finds its first
attempt's), or a head some outcome of the repository has. Any other head is a
person's commit (a maintainer's fix on the pull request's branch): the branch is left
as it is, the patch goes to the first free ``<branch>-2``, ``-3``…, and the audit says
why (``branch.kept``). The push itself is a lease: ``git push --force-with-lease`` with
the head seen, checked by GitHub as it updates; with ``commit_signing: api`` a new
branch is created only if it still does not exist, and an existing one is moved by the
Git Data API, which takes no expected value (the head was checked just before).
"""

from __future__ import annotations

from typing import Any

from app.errors import PermanentJobError
from app.git import Remote
from app.jobs.context import Running
from app.publish.commits import commit_through_api
from app.sessions.result import SessionResult
from app.store import AuditQuery

MAX_BRANCH_NAMES = 20


async def push_patch(
    run: Running[Any], remote: Remote, result: SessionResult, signing: str
) -> tuple[str, str]:
    """Put the patch on its branch on GitHub; the branch and the head GitHub has."""
    assert result.head_sha is not None
    pub, cache = run.pub, run.ctx.runner.cache
    mirror = cache.mirror_path(pub.repo)
    branch, lease, kept = await own_branch(run, result)
    if kept is not None:
        await run.audit(
            "branch.kept",
            reason=f"{result.branch} has commits Patchwarden did not push; the patch goes "
            f"to {branch}",
            branch=result.branch,
            head=kept,
        )
    if signing == "api":
        head = await commit_through_api(
            pub.gh,
            pub.vars,
            mirror=mirror,
            home=cache.home,
            head=result.head_sha,
            branch=branch,
            lease=lease,
        )
        await run.audit(
            "branch.pushed",
            reason="made and signed by GitHub (commit_signing: api)",
            branch=branch,
            head=head,
            patch=result.head_sha,
        )
        return branch, head
    # Recorded first: a retry of this job finds its own push even if it crashed after.
    await run.audit("branch.pushed", reason="git push", branch=branch, head=result.head_sha)
    await pub.push_branch(
        mirror=mirror,
        source=result.branch,
        branch=branch,
        lease=lease,
        remote=remote,
        home=cache.home,
    )
    return branch, result.head_sha


async def own_branch(
    run: Running[Any], result: SessionResult
) -> tuple[str, str | None, str | None]:
    """The branch to push to, its head now (None: new) and, when the session's branch
    was kept for a person's commit, that commit (this module's docstring)."""
    store = run.ctx.store
    pushed = {
        e.details.get("head")
        for e in await store.journal.query_audit(
            AuditQuery(job_id=run.job.id, action_prefix="branch.")
        )
        if e.action == "branch.pushed"
    }
    kept = None
    for n in range(1, MAX_BRANCH_NAMES + 1):
        name = result.branch if n == 1 else f"{result.branch}-{n}"
        head = await run.pub.branch_head(name)
        if head is None or head == result.head_sha or head in pushed:
            return name, head, kept
        if await store.learning.find_outcomes(repo=run.repo, head_sha=head):
            return name, head, kept
        kept = kept or head
    raise PermanentJobError(
        f"{result.branch} and {MAX_BRANCH_NAMES - 1} numbered branches after it hold commits "
        "Patchwarden did not push: delete the ones no longer needed, then ask again"
    )
