"""Writing to GitHub for a job: the branch, the pull request, its labels and reviewers,
the ``patchwarden`` Check Run, marker comments, and the merge.

Every write is idempotent, so a retried job (a worker restarted mid-job, a redelivered
event) finds what an earlier attempt made instead of making a second one:
- the branch name is deterministic, and moved only from a head Patchwarden pushed
  (``--force-with-lease``; app/jobs/to_pull.py picks another name otherwise);
- a pull request is found by its head branch before one is opened;
- a comment carries an HTML marker (``<!-- patchwarden:… -->``) and is edited in place,
  or, for an answer to a request, posted once and left as it is;
- the Check Run is found by name on the head commit before one is created.

Git pushes go through host-side git with the installation token in git's
*environment* (``http.<origin>.extraHeader``), never in the URL or argv.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import gidgethub

from app.git import Remote, git_env, run_git
from app.github import GitHubClient
from app.github.repos import repo_vars

log = logging.getLogger(__name__)

CHECK_NAME = "patchwarden"


def marker(key: str) -> str:
    """The HTML comment that lets Patchwarden find its own comment again."""
    return f"<!-- patchwarden:{key} -->"


@dataclass(frozen=True)
class MergeAnswer:
    merged: bool
    sha: str | None = None
    status: int | None = None  # GitHub's status when it refused (405, 409, 422)
    message: str = ""


class Publisher:
    """GitHub writes for one repository, as one installation."""

    def __init__(self, gh: GitHubClient, repo: str, *, bot_login: str) -> None:
        self.gh = gh
        self.repo = repo
        self.owner = repo.partition("/")[0]
        self.vars = repo_vars(repo)
        self.bot_login = bot_login

    # -- the repository ----------------------------------------------------------
    async def bot_user_id(self) -> int | None:
        """The App's bot user's id (``GET /users/{slug}[bot]``), or None if GitHub has no
        such user (a wrong PATCHWARDEN_BOT_NAME)."""
        try:
            user = await self.gh.getitem("/users/{login}", {"login": self.bot_login})
        except gidgethub.BadRequest as exc:
            if exc.status_code == 404:
                return None
            raise
        return int(user["id"])

    async def default_branch_file(self, path: str) -> str | None:
        """A file of the default branch as text (None: no such file)."""
        import base64

        try:
            entry = await self.gh.getitem(
                "/repos/{owner}/{repo}/contents/{path}", {**self.vars, "path": path}
            )
        except gidgethub.BadRequest as exc:
            if exc.status_code == 404:
                return None
            raise
        if not isinstance(entry, dict) or entry.get("encoding") != "base64":
            return None
        return base64.b64decode(entry.get("content") or "").decode("utf-8", "replace")

    async def open_pulls(self) -> list[dict[str, Any]]:
        """The repository's open pull requests Patchwarden opened: by its bot user, from
        one of its branches in this repository (a fork's ``patchwarden/x`` is not one)."""
        found = []
        async for pull in self.gh.getiter("/repos/{owner}/{repo}/pulls?state=open", self.vars):
            head = pull.get("head") or {}
            same_repo = ((head.get("repo") or {}).get("full_name") or "").lower()
            if (
                (pull.get("user") or {}).get("login") == self.bot_login
                and str(head.get("ref", "")).startswith("patchwarden/")
                and same_repo == self.repo.lower()
            ):
                found.append(pull)
        return found

    async def upsert_dashboard(self, number: int | None, title: str, body: str) -> int:
        """Edit the dashboard issue ``number`` (its title and body only: a maintainer may
        have closed it, and it stays closed), or open it; its number."""
        made, _ = await self.upsert_issue(number, title, body)
        return made

    async def upsert_issue(self, number: int | None, title: str, body: str) -> tuple[int, str]:
        """Edit Patchwarden's own issue ``number`` (title and body only: a maintainer may
        have closed it, and it stays closed), or open it (also when it was deleted or
        transferred); its number and state (``open`` / ``closed``)."""
        if number is not None:
            try:
                edited = await self.gh.patch(
                    "/repos/{owner}/{repo}/issues/{number}",
                    {**self.vars, "number": number},
                    data={"title": title, "body": body},
                )
                return number, str(edited.get("state") or "open")
            except gidgethub.BadRequest as exc:
                if exc.status_code not in (404, 410):  # deleted or transferred: a new one
                    raise
        created = await self.gh.post(
            "/repos/{owner}/{repo}/issues", self.vars, data={"title": title, "body": body}
        )
        return int(created["number"]), "open"

    async def repository(self) -> dict[str, Any]:
        answer: dict[str, Any] = await self.gh.getitem("/repos/{owner}/{repo}", self.vars)
        return answer

    async def branch_sha(self, branch: str) -> str:
        answer = await self.gh.getitem(
            "/repos/{owner}/{repo}/branches/{branch}", {**self.vars, "branch": branch}
        )
        return str(answer["commit"]["sha"])

    async def branch_head(self, branch: str) -> str | None:
        """The commit ``branch`` points at on GitHub; None when there is no such branch
        (the exact ref: ``GET /branches/`` follows a renamed branch's redirect)."""
        try:
            answer = await self.gh.getitem(
                "/repos/{owner}/{repo}/git/ref/{+ref}", {**self.vars, "ref": f"heads/{branch}"}
            )
        except gidgethub.BadRequest as exc:
            if exc.status_code == 404:
                return None
            raise
        return str(answer["object"]["sha"])

    async def push_branch(
        self,
        *,
        mirror: Path,
        source: str,
        branch: str,
        lease: str | None,
        remote: Remote,
        home: Path,
    ) -> None:
        """Push the session's patch commit (kept in the mirror as ``refs/patchwarden/
        <source>``) as ``branch``, only if GitHub's ``branch`` is still at ``lease`` (or
        absent, for None): ``--force-with-lease``, checked by GitHub as it updates."""
        refspec = f"refs/patchwarden/{source}:refs/heads/{branch}"
        await run_git(
            [
                *("--git-dir", str(mirror), "push", "--quiet", "--no-verify"),
                f"--force-with-lease=refs/heads/{branch}:{lease or ''}",
                remote.url,
                refspec,
            ],
            env=git_env(home, remote=remote),
            secrets=[remote.token] if remote.token else (),
        )

    # -- comments ------------------------------------------------------------------
    async def upsert_comment(
        self, number: int, key: str, body: str, *, comment_id: int | None = None
    ) -> int:
        """Create or edit the bot's one comment with ``key``'s marker on issue/PR ``number``."""
        mark = marker(key)
        text = f"{body.rstrip()}\n\n{mark}\n"
        url_vars: dict[str, str | int] = {**self.vars, "number": number}
        if comment_id is None:
            comment_id = await self._find_comment(number, mark)
        if comment_id is not None:
            try:
                await self.gh.patch(
                    "/repos/{owner}/{repo}/issues/comments/{comment_id}",
                    {**self.vars, "comment_id": comment_id},
                    data={"body": text},
                )
                return comment_id
            except gidgethub.BadRequest as exc:
                if int(exc.status_code) != 404:  # deleted by someone: post a new one
                    raise
        made = await self.gh.post(
            "/repos/{owner}/{repo}/issues/{number}/comments", url_vars, data={"body": text}
        )
        return int(made["id"])

    async def post_once(self, number: int, key: str, body: str) -> bool:
        """Post ``body`` on issue/PR ``number`` unless the bot's comment with ``key``'s
        marker is there already (an answer is given once, never edited); True if posted."""
        mark = marker(key)
        if await self._find_comment(number, mark) is not None:
            return False
        await self.gh.post(
            "/repos/{owner}/{repo}/issues/{number}/comments",
            {**self.vars, "number": number},
            data={"body": f"{body.rstrip()}\n\n{mark}\n"},
        )
        return True

    async def react(self, url: str, url_vars: dict[str, str | int], content: str) -> None:
        """Add a reaction (``eyes``…) to the issue or comment at ``url``."""
        await self.gh.post(url, {**self.vars, **url_vars}, data={"content": content})

    async def _find_comment(self, number: int, mark: str) -> int | None:
        url_vars: dict[str, str | int] = {**self.vars, "number": number}
        async for comment in self.gh.getiter(
            "/repos/{owner}/{repo}/issues/{number}/comments", url_vars
        ):
            if (comment.get("user") or {}).get("login") == self.bot_login and mark in str(
                comment.get("body") or ""
            ):
                return int(comment["id"])
        return None

    # -- the check run -------------------------------------------------------------
    async def check_run(
        self,
        head_sha: str,
        *,
        status: Literal["queued", "in_progress", "completed"],
        title: str,
        summary: str,
        conclusion: str | None = None,
        external_id: str | None = None,
        run_id: int | None = None,
        details_url: str | None = None,
    ) -> int:
        """Create or update the ``patchwarden`` check run on ``head_sha``; ``run_id`` (what
        an earlier call returned) saves looking it up again."""
        data: dict[str, Any] = {
            "name": CHECK_NAME,
            "status": status,
            "output": {"title": title[:255], "summary": summary[:60_000]},
        }
        if conclusion is not None:
            data["conclusion"] = conclusion
        if external_id is not None:
            data["external_id"] = external_id
        if details_url is not None:
            data["details_url"] = details_url
        existing = run_id if run_id is not None else await self._find_check_run(head_sha)
        if existing is None:
            made = await self.gh.post(
                "/repos/{owner}/{repo}/check-runs", self.vars, data={**data, "head_sha": head_sha}
            )
            return int(made["id"])
        await self.gh.patch(
            "/repos/{owner}/{repo}/check-runs/{check_run_id}",
            {**self.vars, "check_run_id": existing},
            data=data,
        )
        return existing

    async def _find_check_run(self, head_sha: str) -> int | None:
        slug = self.bot_login.removesuffix("[bot]")
        answer = await self.gh.getitem(
            "/repos/{owner}/{repo}/commits/{ref}/check-runs?check_name=" + CHECK_NAME,
            {**self.vars, "ref": head_sha},
        )
        for run in answer.get("check_runs") or []:
            if run.get("name") == CHECK_NAME and (run.get("app") or {}).get("slug") == slug:
                return int(run["id"])
        return None

    # -- the pull request ------------------------------------------------------------
    async def find_pull(self, branch: str) -> dict[str, Any] | None:
        """The pull request from ``branch``, open ones first (a retried job finds it)."""
        found: list[dict[str, Any]] = []
        async for pull in self.gh.getiter(
            "/repos/{owner}/{repo}/pulls?state=all&head=" + f"{self.owner}:{branch}", self.vars
        ):
            if (pull.get("head") or {}).get("ref") == branch:
                found.append(pull)
        found.sort(key=lambda p: (p.get("state") != "open", -int(p["number"])))
        return found[0] if found else None

    async def upsert_pull(
        self, *, branch: str, base: str, title: str, body: str, draft: bool
    ) -> tuple[dict[str, Any], bool]:
        """Open the pull request from ``branch``, or update the open one; (pull, created)."""
        existing = await self.find_pull(branch)
        if existing is not None and existing.get("state") == "open":
            pull: dict[str, Any] = await self.gh.patch(
                "/repos/{owner}/{repo}/pulls/{number}",
                {**self.vars, "number": existing["number"]},
                data={"title": title, "body": body},
            )
            return pull, False
        made: dict[str, Any] = await self.gh.post(
            "/repos/{owner}/{repo}/pulls",
            self.vars,
            data={"title": title, "head": branch, "base": base, "body": body, "draft": draft},
        )
        return made, True

    async def get_pull(self, number: int) -> dict[str, Any]:
        pull: dict[str, Any] = await self.gh.getitem(
            "/repos/{owner}/{repo}/pulls/{number}", {**self.vars, "number": number}
        )
        return pull

    async def update_body(self, number: int, body: str) -> None:
        await self.gh.patch(
            "/repos/{owner}/{repo}/pulls/{number}",
            {**self.vars, "number": number},
            data={"body": body},
        )

    async def set_labels(self, number: int, labels: Sequence[str], *, prefix: str) -> None:
        """Add ``labels``; drop the bot's stale ones that start with ``prefix`` (``risk:``)."""
        url_vars: dict[str, str | int] = {**self.vars, "number": number}
        issue = await self.gh.getitem("/repos/{owner}/{repo}/issues/{number}", url_vars)
        for label in issue.get("labels") or []:
            name = str(label.get("name") if isinstance(label, dict) else label)
            if name.startswith(prefix) and name not in labels:
                try:
                    await self.gh.delete(
                        "/repos/{owner}/{repo}/issues/{number}/labels/{name}",
                        {**url_vars, "name": name},
                    )
                except gidgethub.BadRequest as exc:
                    if int(exc.status_code) != 404:
                        raise
        await self.gh.post(
            "/repos/{owner}/{repo}/issues/{number}/labels", url_vars, data={"labels": list(labels)}
        )

    async def request_review(self, number: int, login: str) -> str | None:
        """Ask ``login`` to review; GitHub's refusal (not a collaborator, the author) is
        returned, not raised: a review request is a courtesy, not a gate."""
        try:
            await self.gh.post(
                "/repos/{owner}/{repo}/pulls/{number}/requested_reviewers",
                {**self.vars, "number": number},
                data={"reviewers": [login]},
            )
        except gidgethub.BadRequest as exc:
            return f"GitHub answered {exc.status_code}: {exc}"
        return None

    # -- reading what decides a merge -------------------------------------------------
    async def checks(self, sha: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Check runs (everyone's) and commit statuses (latest per context) on ``sha``."""
        runs: list[dict[str, Any]] = []
        async for run in self.gh.getiter(
            "/repos/{owner}/{repo}/commits/{ref}/check-runs",
            {**self.vars, "ref": sha},
            iterable_key="check_runs",
        ):
            runs.append(run)
        combined = await self.gh.getitem(
            "/repos/{owner}/{repo}/commits/{ref}/status", {**self.vars, "ref": sha}
        )
        return runs, list(combined.get("statuses") or [])

    async def reviews(self, number: int) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        async for review in self.gh.getiter(
            "/repos/{owner}/{repo}/pulls/{number}/reviews", {**self.vars, "number": number}
        ):
            found.append(review)
        return found

    # -- merging ----------------------------------------------------------------------
    async def merge(self, number: int, *, sha: str, method: str, title: str) -> MergeAnswer:
        """Merge with the head-sha guard. A refusal is returned, never retried here:
        409 means the head moved, 405 that GitHub will not merge it as it stands."""
        try:
            answer = await self.gh.put(
                "/repos/{owner}/{repo}/pulls/{number}/merge",
                {**self.vars, "number": number},
                data={"sha": sha, "merge_method": method, "commit_title": title},
            )
        except gidgethub.BadRequest as exc:
            return MergeAnswer(False, status=int(exc.status_code), message=str(exc))
        return MergeAnswer(bool(answer.get("merged")), sha=answer.get("sha"))
