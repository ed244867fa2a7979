"""LocalForge as Patchwarden meets it: git over smart HTTP, the REST contract,
pull requests merged with the sha guard, required checks run by the forge's CI,
and signed deliveries that validate against GitHub's webhook schemas.

Everything goes over real HTTP on loopback: the git CLI, the project's own
gidgethub client, and an aiohttp receiver standing in for the App.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import gidgethub
import pytest
from aiohttp import web
from pytest_aiohttp import AiohttpServer

from app.github import signing
from app.github.client import GitHubApp, GitHubClient
from app.localforge import LocalForge
from app.localforge.bare_repo import git_env
from app.localforge.contract import RestContract, WebhookContract
from app.localforge.rest import HANDLERS
from tests.conftest import APP_ID, INSTALLATION, REPO, SECRET, Harness

OWNER, NAME = REPO.split("/")
R = {"owner": OWNER, "repo": NAME}
PULLS = "/repos/{owner}/{repo}/pulls"
PULL = "/repos/{owner}/{repo}/pulls/{number}"
MERGE = "/repos/{owner}/{repo}/pulls/{number}/merge"


# -- helpers -------------------------------------------------------------------------------


@pytest.fixture
def askpass(tmp_path: Path) -> Path:
    """A GIT_ASKPASS helper that answers with $FORGE_TOKEN: the token never touches argv."""
    script = tmp_path / "askpass.sh"
    script.write_text(
        '#!/bin/sh\ncase "$1" in Username*) echo x-access-token ;; *) echo "$FORGE_TOKEN" ;; esac\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


@pytest.fixture
def git(askpass: Path, tmp_path: Path) -> Callable[..., Any]:
    async def run(*args: str, cwd: Path | None = None, token: str = "") -> tuple[int, str]:
        env = git_env(tmp_path) | {
            "GIT_ASKPASS": str(askpass),
            "FORGE_TOKEN": token,
            "GIT_AUTHOR_NAME": "Patchwarden",
            "GIT_AUTHOR_EMAIL": "bot@example.invalid",
            "GIT_COMMITTER_NAME": "Patchwarden",
            "GIT_COMMITTER_EMAIL": "bot@example.invalid",
        }
        proc = await asyncio.create_subprocess_exec(
            "git",
            *args,
            cwd=cwd,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
        assert proc.returncode is not None
        return proc.returncode, out.decode()

    return run


async def branch_with(
    forge: LocalForge, gh: GitHubClient, branch: str, files: dict[str, str]
) -> str:
    """A branch made through the API from main, then a user's commit on it."""
    main = await gh.getitem("/repos/{owner}/{repo}/git/ref/{ref}", {**R, "ref": "heads/main"})
    await gh.post(
        "/repos/{owner}/{repo}/git/refs",
        R,
        data={"ref": f"refs/heads/{branch}", "sha": main["object"]["sha"]},
    )
    return await forge.push(REPO, files, author="alice", branch=branch, message=f"edit on {branch}")


async def open_pr(
    gh: GitHubClient,
    head: str = "fix",
    title: str = "Fix the parser",
    *,
    body: str = "## Risk: low",
    base: str = "main",
) -> dict[str, Any]:
    pr: dict[str, Any] = await gh.post(
        PULLS, R, data={"title": title, "head": head, "base": base, "body": body}
    )
    return pr


def source_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    for name, text in files.items():
        (src / name).write_text(text)
    return src


# -- git over smart HTTP --------------------------------------------------------------------


async def test_clone_branch_commit_and_push_with_an_installation_token(
    forge: LocalForge, git: Callable[..., Any], tmp_path: Path
) -> None:
    token = forge.token_for(INSTALLATION)
    work = tmp_path / "work"
    code, out = await git("clone", f"{forge.url}/{REPO}.git", str(work), token=token)
    assert code == 0, out
    assert (work / "README.md").read_text() == "# widgets\n"

    await git("checkout", "-b", "patchwarden/fix-1", cwd=work)
    (work / "parser.py").write_text("def parse(s):\n    return s.split() if s else []\n")
    await git("add", "parser.py", cwd=work)
    await git("commit", "-m", "Guard the empty string", cwd=work)
    code, out = await git("push", "origin", "patchwarden/fix-1", cwd=work, token=token)
    assert code == 0, out
    _, head = await git("rev-parse", "HEAD", cwd=work)
    await forge.settle()

    repo = forge.repos[REPO]
    assert repo.git.resolve("refs/heads/patchwarden/fix-1") == head.strip()
    push = [d for d in forge.deliveries if d.event == "push"][-1]
    assert push.payload["ref"] == "refs/heads/patchwarden/fix-1"
    assert push.payload["created"] is True
    assert [c["message"] for c in push.payload["commits"]][-1].startswith("Guard the empty string")
    # the token travelled in the Authorization header, never in a URL the forge saw
    assert all(token not in r.path for r in forge.requests)


@pytest.mark.parametrize("kind", ["wrong", "expired", "other-installation"])
async def test_a_bad_token_cannot_clone_or_push(
    forge: LocalForge, git: Callable[..., Any], tmp_path: Path, kind: str
) -> None:
    good = forge.token_for(INSTALLATION)
    work = tmp_path / "work"
    assert (await git("clone", f"{forge.url}/{REPO}.git", str(work), token=good))[0] == 0
    forge.add_repo("someone/else", installation_id=INSTALLATION + 1)
    bad = {
        "wrong": "ghs_" + "x" * 36,
        "expired": forge.token_for(INSTALLATION, lifetime=-1),
        "other-installation": forge.token_for(INSTALLATION + 1),
    }[kind]
    (work / "evil.txt").write_text("nope\n")
    await git("add", "evil.txt", cwd=work)
    await git("commit", "-m", "evil", cwd=work)
    before = forge.repos[REPO].git.refs()

    code, out = await git("push", "origin", "HEAD:main", cwd=work, token=bad)
    assert code != 0
    assert "Authentication failed" in out or "not found" in out
    code, _ = await git("clone", f"{forge.url}/{REPO}.git", str(tmp_path / "again"), token=bad)
    assert code != 0
    assert forge.repos[REPO].git.refs() == before


async def test_a_push_to_a_pr_branch_moves_the_pr_head_and_says_synchronize(
    forge: LocalForge, gh: GitHubClient, git: Callable[..., Any], tmp_path: Path
) -> None:
    await branch_with(forge, gh, "fix", {"a.txt": "one\n"})
    pr = await open_pr(gh, "fix")
    token = forge.token_for(INSTALLATION)
    work = tmp_path / "work"
    await git("clone", "--branch", "fix", f"{forge.url}/{REPO}.git", str(work), token=token)
    (work / "a.txt").write_text("two\n")
    await git("commit", "-am", "second thought", cwd=work)
    assert (await git("push", cwd=work, token=token))[0] == 0
    await forge.settle()

    _, head = await git("rev-parse", "HEAD", cwd=work)
    fresh = await gh.getitem(PULL, {**R, "number": pr["number"]})
    assert fresh["head"]["sha"] == head.strip() != pr["head"]["sha"]
    sync = [d for d in forge.deliveries if d.event == "pull_request"][-1]
    assert (sync.action, sync.payload["before"], sync.payload["after"]) == (
        "synchronize",
        pr["head"]["sha"],
        head.strip(),
    )


# -- pull requests over REST ------------------------------------------------------------------


async def test_open_list_read_files_and_merge_a_pull_request(
    forge: LocalForge, gh: GitHubClient
) -> None:
    head = await branch_with(forge, gh, "fix", {"parser.py": "x = 1\n"})
    pr = await open_pr(gh)
    assert (pr["number"], pr["state"], pr["head"]["ref"], pr["head"]["sha"]) == (
        1,
        "open",
        "fix",
        head,
    )
    listed = await gh.getitem(PULLS + "?head={head}", {**R, "head": f"{OWNER}:fix"})
    assert [p["number"] for p in listed] == [1]
    files = [f async for f in gh.getiter(PULL + "/files", {**R, "number": 1})]
    assert [(f["filename"], f["status"], f["additions"]) for f in files] == [
        ("parser.py", "added", 1)
    ]
    fresh = await gh.getitem(PULL, {**R, "number": 1})
    assert (fresh["mergeable"], fresh["mergeable_state"]) == (True, "clean")

    result = await gh.put(MERGE, {**R, "number": 1}, data={"sha": head, "merge_method": "squash"})
    assert result["merged"] is True
    repo = forge.repos[REPO]
    tip = repo.git.resolve("refs/heads/main")
    assert tip == result["sha"]
    assert len(repo.git.commit(tip).parents) == 1  # squash
    assert repo.git.entry(tip, "parser.py") is not None
    merged = await gh.getitem(PULL, {**R, "number": 1})
    assert (merged["merged"], merged["state"], merged["merge_commit_sha"]) == (True, "closed", tip)
    await forge.settle()
    closed = [d for d in forge.deliveries if d.event == "pull_request" and d.action == "closed"]
    assert closed[-1].payload["pull_request"]["merged"] is True
    assert forge.merges(REPO)[-1].method == "squash"


async def test_a_merge_commit_has_both_parents(forge: LocalForge, gh: GitHubClient) -> None:
    head = await branch_with(forge, gh, "fix", {"a.txt": "a\n"})
    main_before = forge.repos[REPO].git.resolve("refs/heads/main")
    await open_pr(gh)
    result = await gh.put(MERGE, {**R, "number": 1}, data={"sha": head})
    parents = forge.repos[REPO].git.commit(result["sha"]).parents
    assert parents == (main_before, head)


async def test_merge_with_a_stale_sha_is_409_and_changes_nothing(
    forge: LocalForge, gh: GitHubClient
) -> None:
    old = await branch_with(forge, gh, "fix", {"a.txt": "a\n"})
    await open_pr(gh)
    await forge.push(REPO, {"a.txt": "b\n"}, author="alice", branch="fix")
    main = forge.repos[REPO].git.resolve("refs/heads/main")
    with pytest.raises(gidgethub.BadRequest) as raised:
        await gh.put(MERGE, {**R, "number": 1}, data={"sha": old})
    assert raised.value.status_code == 409
    assert "Head branch was modified" in str(raised.value)
    assert forge.repos[REPO].git.resolve("refs/heads/main") == main


async def test_a_conflicting_pr_is_dirty_and_its_merge_is_405(
    forge: LocalForge, gh: GitHubClient
) -> None:
    first = await branch_with(forge, gh, "one", {"README.md": "# one\n"})
    second = await branch_with(forge, gh, "two", {"README.md": "# two\n"})
    await open_pr(gh, "one")
    await open_pr(gh, "two")
    await gh.put(MERGE, {**R, "number": 1}, data={"sha": first})
    pr = await gh.getitem(PULL, {**R, "number": 2})
    assert (pr["mergeable"], pr["mergeable_state"]) == (False, "dirty")
    with pytest.raises(gidgethub.BadRequest) as raised:
        await gh.put(MERGE, {**R, "number": 2}, data={"sha": second})
    assert raised.value.status_code == 405
    assert "not mergeable" in str(raised.value)


async def test_a_missing_head_is_422_and_counts_as_a_contract_violation(
    forge: LocalForge, gh: GitHubClient
) -> None:
    with forge.expect_violations() as seen, pytest.raises(gidgethub.BadRequest) as raised:
        await gh.post(PULLS, R, data={"title": "x", "base": "main"})
    assert raised.value.status_code == 422
    assert '"head" wasn\'t supplied' in str(raised.value)
    assert [v.kind for v in seen] == ["request"]


async def test_a_second_pr_for_the_same_branch_is_refused(
    forge: LocalForge, gh: GitHubClient
) -> None:
    await branch_with(forge, gh, "fix", {"a.txt": "a\n"})
    await open_pr(gh)
    with pytest.raises(gidgethub.BadRequest) as raised:
        await open_pr(gh)
    assert raised.value.status_code == 422
    assert "already exists" in str(raised.value.errors)


async def test_reviews_comments_labels_and_issue_state(forge: LocalForge, gh: GitHubClient) -> None:
    await branch_with(forge, gh, "fix", {"a.txt": "a\n"})
    await open_pr(gh)
    forge.add_user(REPO, "alice", "maintain")
    await forge.approve(REPO, 1, user="alice", body="ship it")
    reviews = await gh.getitem(PULL + "/reviews", {**R, "number": 1})
    assert [(r["user"]["login"], r["state"]) for r in reviews] == [("alice", "APPROVED")]
    with pytest.raises(gidgethub.BadRequest) as raised:
        await gh.post(PULL + "/reviews", {**R, "number": 1}, data={"event": "APPROVE"})
    assert "your own pull request" in str(raised.value)
    note = {"event": "COMMENT", "body": "Risk 12/100"}
    mine = await gh.post(PULL + "/reviews", {**R, "number": 1}, data=note)
    assert (mine["state"], mine["user"]["login"]) == ("COMMENTED", "patchwarden[bot]")

    url = "/repos/{owner}/{repo}/issues/{number}"
    await gh.post(url + "/labels", {**R, "number": 1}, data={"labels": ["patchwarden", "risk:low"]})
    comment = await gh.post(url + "/comments", {**R, "number": 1}, data={"body": "Verified."})
    await gh.patch(
        "/repos/{owner}/{repo}/issues/comments/{id}",
        {**R, "id": comment["id"]},
        data={"body": "Edited."},
    )
    await gh.delete(url + "/labels/{name}", {**R, "number": 1, "name": "risk:low"})
    assert forge.labels(REPO, 1) == ["patchwarden"]
    assert [c.body for c in forge.comments(REPO, 1)] == ["Edited."]
    issue = await gh.post("/repos/{owner}/{repo}/issues", R, data={"title": "Canary: main broke"})
    await gh.patch(url, {**R, "number": issue["number"]}, data={"state": "closed"})
    assert forge.issue(REPO, issue["number"]).state == "closed"
    await forge.settle()
    edited = [d for d in forge.deliveries if d.event == "issue_comment" and d.action == "edited"]
    assert edited[-1].payload["changes"]["body"]["from"] == "Verified."


async def test_contents_refs_and_branches(forge: LocalForge, gh: GitHubClient) -> None:
    await forge.push(REPO, {".github/patchwarden.yml": "automerge: false\n"}, author="alice")
    found = await gh.getitem(
        "/repos/{owner}/{repo}/contents/{path}", {**R, "path": ".github/patchwarden.yml"}
    )
    import base64

    assert base64.b64decode(found["content"]) == b"automerge: false\n"
    listing = await gh.getitem("/repos/{owner}/{repo}/contents/{path}", {**R, "path": ".github"})
    assert [e["name"] for e in listing] == ["patchwarden.yml"]
    with pytest.raises(gidgethub.BadRequest) as raised:
        await gh.getitem("/repos/{owner}/{repo}/contents/{path}", {**R, "path": "nope.yml"})
    assert raised.value.status_code == 404
    branch = await gh.getitem("/repos/{owner}/{repo}/branches/{b}", {**R, "b": "main"})
    assert branch["commit"]["sha"] == forge.repos[REPO].git.resolve("refs/heads/main")
    repo = await gh.getitem("/repos/{owner}/{repo}", R)
    assert (repo["default_branch"], repo["full_name"]) == ("main", REPO)
    await gh.delete("/repos/{owner}/{repo}/git/refs/{ref}", {**R, "ref": "heads/main"})
    with pytest.raises(gidgethub.BadRequest):
        await gh.getitem("/repos/{owner}/{repo}/git/ref/{ref}", {**R, "ref": "heads/main"})


# -- CI: required checks run by the forge ------------------------------------------------------

CHECK = "import pathlib, sys\nsys.exit(1 if 'bug' in pathlib.Path('app.txt').read_text() else 0)\n"


class TestRequiredChecks:
    """A repository whose own test (check.py) fails when app.txt mentions a bug."""

    @pytest.fixture
    async def forge(
        self, make_forge: Callable[..., Awaitable[LocalForge]], tmp_path: Path
    ) -> LocalForge:
        source = source_repo(tmp_path, {"check.py": CHECK, "app.txt": "ok\n"})
        forge = await make_forge(source=source)
        forge.require_check(REPO, "tests", [sys.executable, "check.py"], timeout=60)
        return forge

    async def test_a_failing_check_blocks_the_merge_and_a_passing_one_allows_it(
        self, forge: LocalForge, gh: GitHubClient
    ) -> None:
        bad = await branch_with(forge, gh, "bad", {"app.txt": "a bug\n"})
        good = await branch_with(forge, gh, "good", {"app.txt": "fine\n"})
        await open_pr(gh, "bad")
        await open_pr(gh, "good")
        await forge.settle()

        runs = await gh.getitem("/repos/{owner}/{repo}/commits/{ref}/check-runs", {**R, "ref": bad})
        assert [(r["name"], r["conclusion"]) for r in runs["check_runs"]] == [("tests", "failure")]
        pr = await gh.getitem(PULL, {**R, "number": 1})
        assert pr["mergeable_state"] == "blocked"
        with pytest.raises(gidgethub.BadRequest) as raised:
            await gh.put(MERGE, {**R, "number": 1}, data={"sha": bad})
        assert raised.value.status_code == 405
        assert 'Required status check "tests" is failing' in str(raised.value)

        result = await gh.put(MERGE, {**R, "number": 2}, data={"sha": good})
        await forge.settle()
        # the forge's CI ran again on the new tip of main: the post-merge canary's signal
        tip_runs = forge.check_runs(REPO, "main")
        assert tip_runs[-1].head_sha == result["sha"]
        assert tip_runs[-1].conclusion == "success"
        suites = {
            (d.payload["check_suite"]["head_sha"], d.payload["check_suite"]["conclusion"])
            for d in forge.deliveries
            if d.event == "check_suite"
        }
        assert suites >= {(bad, "failure"), (result["sha"], "success")}

    async def test_a_hanging_check_times_out(self, forge: LocalForge) -> None:
        forge.repos[REPO].required_checks.clear()
        forge.require_check(
            REPO, "slow", [sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5
        )
        sha = await forge.push(REPO, {"app.txt": "still ok\n"}, author="alice")
        await forge.settle(within=10)
        (run,) = forge.check_runs(REPO, sha)
        assert (run.name, run.conclusion) == ("slow", "timed_out")


async def test_checks_and_statuses_written_by_the_app(forge: LocalForge, gh: GitHubClient) -> None:
    sha = forge.repos[REPO].git.resolve("refs/heads/main")
    run = await gh.post(
        "/repos/{owner}/{repo}/check-runs",
        R,
        data={"name": "patchwarden/risk", "head_sha": sha, "status": "in_progress"},
    )
    await gh.patch(
        "/repos/{owner}/{repo}/check-runs/{id}",
        {**R, "id": run["id"]},
        data={"conclusion": "success", "output": {"title": "Risk 12/100", "summary": "low"}},
    )
    fetched = await gh.getitem("/repos/{owner}/{repo}/check-runs/{id}", {**R, "id": run["id"]})
    assert (fetched["status"], fetched["conclusion"], fetched["output"]["title"]) == (
        "completed",
        "success",
        "Risk 12/100",
    )
    await gh.post(
        "/repos/{owner}/{repo}/statuses/{sha}",
        {**R, "sha": sha},
        data={"state": "failure", "context": "lint"},
    )
    combined = await gh.getitem("/repos/{owner}/{repo}/commits/{ref}/status", {**R, "ref": "main"})
    assert (combined["state"], combined["total_count"]) == ("failure", 1)
    suites = await gh.getitem("/repos/{owner}/{repo}/commits/{ref}/check-suites", {**R, "ref": sha})
    assert [s["conclusion"] for s in suites["check_suites"]] == ["success"]


# -- closing keywords, review requests, PR comments --------------------------------------------

ISSUE = "/repos/{owner}/{repo}/issues/{number}"
REVIEWERS = PULL + "/requested_reviewers"


def issues_closed(forge: LocalForge) -> list[int]:
    return [
        d.payload["issue"]["number"]
        for d in forge.deliveries
        if (d.event, d.action) == ("issues", "closed")
    ]


@pytest.mark.parametrize(
    ("title", "body", "closes"),
    [
        ("Fix the parser", "Fixes #1", True),
        ("Fix the parser", "Risk: low.\n\nfixes: octo-org/widgets#1", True),
        ("Fix the parser", "This closes #1.", True),
        ("Fix the parser", "RESOLVED:  #1", True),
        ("Close #1: guard the empty string", "", True),
        ("Fix the parser", "prefixes #1", False),
        ("Fix the parser", "Fixes #10", False),
        ("Fix the parser", "See #1", False),
        ("Fix the parser", "fixes someone/else#1", False),
    ],
)
async def test_merging_into_the_default_branch_closes_the_issues_a_keyword_names(
    forge: LocalForge, gh: GitHubClient, title: str, body: str, closes: bool
) -> None:
    forge.open_issue(REPO, "Parser crashes on empty input", author="alice")
    head = await branch_with(forge, gh, "fix", {"parser.py": "x = 1\n"})
    pr = await open_pr(gh, title=title, body=body)
    await gh.put(MERGE, {**R, "number": pr["number"]}, data={"sha": head})
    await forge.settle()

    issue = await gh.getitem(ISSUE, {**R, "number": 1})
    if not closes:
        assert (issue["state"], issue["closed_at"]) == ("open", None)
        assert issues_closed(forge) == []
        return
    assert (issue["state"], issue["state_reason"]) == ("closed", "completed")
    assert issue["closed_at"] is not None
    assert issues_closed(forge) == [1]
    delivery = forge.deliveries[-1]  # after the merge's pull_request.closed and push
    assert (delivery.event, delivery.action) == ("issues", "closed")
    assert delivery.payload["sender"]["login"] == "patchwarden[bot]"  # who merged
    assert delivery.payload["issue"]["state"] == "closed"
    assert "pull_request" not in delivery.payload["issue"]
    assert WebhookContract.load().problems("issues", delivery.payload) == []
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{forge.url}/{REPO}/issues/1") as page,
    ):
        text = await page.text()
    assert f'by <a href="/{REPO}/pull/2">#2</a>' in text


async def test_only_open_issues_are_closed_each_once_and_never_a_pr(
    forge: LocalForge, gh: GitHubClient
) -> None:
    forge.open_issue(REPO, "one", author="alice")
    forge.open_issue(REPO, "two", author="alice")
    done = forge.open_issue(REPO, "three", author="alice")
    done.state, done.state_reason = "closed", "not_planned"
    await branch_with(forge, gh, "other", {"b.txt": "b\n"})
    await open_pr(gh, "other", "An open PR")  # #4
    head = await branch_with(forge, gh, "fix", {"a.txt": "a\n"})
    body = "Fixes #1\nfixes #1, closes #2 and #3.\nCloses #3, resolves #4, fixes #99"
    pr = await open_pr(gh, body=body)  # #5
    await gh.put(MERGE, {**R, "number": pr["number"]}, data={"sha": head})
    await forge.settle()

    assert issues_closed(forge) == [1, 2]
    assert forge.issue(REPO, 3).state_reason == "not_planned"
    assert forge.issue(REPO, 4).state == "open"


async def test_a_merge_into_another_branch_closes_nothing(
    forge: LocalForge, gh: GitHubClient
) -> None:
    forge.open_issue(REPO, "Parser crashes on empty input", author="alice")
    main = forge.repos[REPO].git.resolve("refs/heads/main")
    await gh.post(
        "/repos/{owner}/{repo}/git/refs", R, data={"ref": "refs/heads/release", "sha": main}
    )
    head = await branch_with(forge, gh, "fix", {"parser.py": "x = 1\n"})
    pr = await open_pr(gh, body="Fixes #1", base="release")
    await gh.put(MERGE, {**R, "number": pr["number"]}, data={"sha": head})
    await forge.settle()

    assert forge.repos[REPO].git.resolve("refs/heads/release") != main
    assert forge.issue(REPO, 1).state == "open"
    assert issues_closed(forge) == []


async def test_closing_an_issue_through_the_api_says_issues_closed(
    forge: LocalForge, gh: GitHubClient
) -> None:
    issue = await gh.post("/repos/{owner}/{repo}/issues", R, data={"title": "Canary: main broke"})
    n = {**R, "number": issue["number"]}
    data = {"state": "closed", "state_reason": "not_planned", "labels": ["canary"]}
    closed = await gh.patch(ISSUE, n, data=data)
    assert (closed["state"], closed["state_reason"]) == ("closed", "not_planned")
    await forge.settle()
    delivery = forge.deliveries[-1]
    assert (delivery.event, delivery.action) == ("issues", "closed")
    assert delivery.payload["issue"]["state_reason"] == "not_planned"
    assert [x["name"] for x in delivery.payload["issue"]["labels"]] == ["canary"]
    await gh.patch(ISSUE, n, data={"state": "closed"})  # already closed: nothing to say
    await forge.settle()
    assert issues_closed(forge) == [issue["number"]]


async def test_review_requests_are_kept_shown_and_announced_until_the_review(
    forge: LocalForge, gh: GitHubClient
) -> None:
    await branch_with(forge, gh, "fix", {"a.txt": "a\n"})
    await open_pr(gh)
    forge.add_user(REPO, "alice", "write")
    forge.add_user(REPO, "bob", "read")
    n = {**R, "number": 1}
    await gh.post(ISSUE + "/labels", n, data={"labels": ["patchwarden"]})  # no description

    answer = await gh.post(REVIEWERS, n, data={"reviewers": ["alice", "Bob"]})
    assert [x["name"] for x in answer["labels"]] == ["patchwarden"]
    assert [u["login"] for u in answer["requested_reviewers"]] == ["alice", "bob"]
    await gh.post(REVIEWERS, n, data={"reviewers": ["alice"]})  # already requested
    fresh = await gh.getitem(PULL, n)
    assert [u["login"] for u in fresh["requested_reviewers"]] == ["alice", "bob"]
    await forge.settle()
    requested = [d for d in forge.deliveries if d.action == "review_requested"]
    assert [d.payload["requested_reviewer"]["login"] for d in requested] == ["alice", "bob"]
    assert {d.event for d in requested} == {"pull_request"}
    assert requested[0].payload["sender"]["login"] == "patchwarden[bot]"
    assert [u["login"] for u in requested[-1].payload["pull_request"]["requested_reviewers"]] == [
        "alice",
        "bob",
    ]

    await forge.approve(REPO, 1, user="alice")  # her review ends her request
    fresh = await gh.getitem(PULL, n)
    assert [u["login"] for u in fresh["requested_reviewers"]] == ["bob"]
    submitted = forge.deliveries[-1]
    assert submitted.event == "pull_request_review"
    assert [u["login"] for u in submitted.payload["pull_request"]["requested_reviewers"]] == ["bob"]


@pytest.mark.parametrize(
    ("reviewers", "says"),
    [
        (
            ["mallory"],
            "Reviews may only be requested from collaborators. One or more of the users or "
            f"teams you specified is not a collaborator of the {REPO} repository.",
        ),
        (["alice", "mallory"], "Reviews may only be requested from collaborators."),
        (["patchwarden[bot]"], "Review cannot be requested from pull request author."),
    ],
)
async def test_a_review_request_github_refuses_is_422_and_requests_no_one(
    forge: LocalForge, gh: GitHubClient, reviewers: list[str], says: str
) -> None:
    await branch_with(forge, gh, "fix", {"a.txt": "a\n"})
    await open_pr(gh)  # by the App
    forge.add_user(REPO, "alice", "write")
    with pytest.raises(gidgethub.BadRequest) as raised:
        await gh.post(REVIEWERS, {**R, "number": 1}, data={"reviewers": reviewers})
    assert raised.value.status_code == 422
    assert says in str(raised.value)
    await forge.settle()
    assert forge.pull(REPO, 1).requested_reviewers == []
    assert [d for d in forge.deliveries if d.action == "review_requested"] == []


async def test_a_comment_on_a_pr_is_an_issue_comment_on_a_pull_request(
    forge: LocalForge, gh: GitHubClient
) -> None:
    await branch_with(forge, gh, "fix", {"a.txt": "a\n"})
    await open_pr(gh)
    await forge.post_comment(REPO, 1, "@patchwarden why this change?", author="alice")
    (delivery,) = [d for d in forge.deliveries if d.event == "issue_comment"]
    assert delivery.payload["issue"]["number"] == 1
    assert delivery.payload["issue"]["pull_request"]["url"] == f"{forge.url}/repos/{REPO}/pulls/1"
    assert WebhookContract.load().problems("issue_comment", delivery.payload) == []


# -- the contract itself ------------------------------------------------------------------------


def test_every_contract_operation_has_a_handler_and_no_handler_is_off_contract() -> None:
    assert set(HANDLERS) == {op.id for op in RestContract.load().operations}


def test_the_contract_files_record_where_they_came_from() -> None:
    assert RestContract.load().source["package"] == "@octokit/openapi"
    assert RestContract.load().source["version"]
    assert WebhookContract.load().source["package"] == "@octokit/webhooks-schemas"


async def test_an_unknown_path_is_404_and_a_violation(forge: LocalForge, gh: GitHubClient) -> None:
    with forge.expect_violations() as seen, pytest.raises(gidgethub.BadRequest) as raised:
        await gh.getitem("/repos/{owner}/{repo}/pulls/1/commits", R)
    assert raised.value.status_code == 404
    assert [v.kind for v in seen] == ["unknown-operation"]


async def test_a_wrong_type_is_422_in_githubs_words(forge: LocalForge, gh: GitHubClient) -> None:
    issue = forge.open_issue(REPO, "t", author="alice")
    with forge.expect_violations() as seen, pytest.raises(gidgethub.BadRequest) as raised:
        await gh.post(
            "/repos/{owner}/{repo}/issues/{n}/comments", {**R, "n": issue.number}, data={"body": 5}
        )
    assert raised.value.status_code == 422
    assert "For 'properties/body', 5 is not a string." in str(raised.value)
    assert forge.comments(REPO, issue.number) == []
    assert len(seen) == 1


async def test_an_answer_off_contract_is_caught(
    forge: LocalForge, gh: GitHubClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    forge.open_issue(REPO, "t", author="alice", labels=["bug"])
    monkeypatch.setattr(forge.render.issues, "label", lambda repo, label: {"name": label.name})
    with forge.expect_violations() as seen:
        await gh.getitem("/repos/{owner}/{repo}/labels/{name}", {**R, "name": "bug"})
    assert [v.kind for v in seen] == ["response"]
    assert "wasn't supplied" in str(seen[0])


# -- webhooks ---------------------------------------------------------------------------------


async def test_a_comment_arrives_signed_and_on_schema(
    forge: LocalForge, aiohttp_server: AiohttpServer
) -> None:
    received: list[tuple[dict[str, str], bytes]] = []

    async def receive(request: web.Request) -> web.Response:
        received.append((dict(request.headers), await request.read()))
        return web.Response(status=202)

    app = web.Application()
    app.router.add_post("/hook", receive)
    server = await aiohttp_server(app)
    forge.hooks.webhook_url = str(server.make_url("/hook"))
    issue = forge.open_issue(REPO, "Crash", author="alice")
    await forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="alice")

    ((headers, body),) = received
    assert headers["X-GitHub-Event"] == "issue_comment"
    assert headers["X-GitHub-Delivery"]
    signing.verify(body, signature=headers["X-Hub-Signature-256"], secret=SECRET)
    import json

    payload = json.loads(body)
    assert WebhookContract.load().problems("issue_comment", payload) == []
    assert payload["comment"]["body"] == "@patchwarden fix this"
    assert payload["installation"]["id"] == INSTALLATION


async def test_patchwarden_accepts_the_forges_delivery_and_queues_a_fix(pw: Harness) -> None:
    pw.forge.add_user(REPO, "alice", "write")
    issue = await pw.forge.report_issue(REPO, "Parser crashes on empty input", author="alice")
    await pw.forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="alice")
    await pw.settle()
    assert [d.status for d in pw.forge.deliveries] == [202, 202]
    (job,) = await pw.jobs("fix")
    assert job.payload["issue_number"] == issue.number


# -- the view and the command ---------------------------------------------------------------------


async def test_the_read_only_view_shows_the_pr(forge: LocalForge, gh: GitHubClient) -> None:
    await branch_with(forge, gh, "fix", {"a.txt": "a\n"})
    await open_pr(gh)
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{forge.url}/") as index:
            assert index.status == 200
            assert REPO in await index.text()
        async with session.get(f"{forge.url}/{REPO}/pull/1") as page:
            text = await page.text()
    assert "Fix the parser" in text
    assert "<h2>Risk: low</h2>" in text


@pytest.mark.slow  # a forge process
async def test_python_m_app_localforge_serves_a_repository(
    app_keys: tuple[str, str], tmp_path: Path
) -> None:
    key = tmp_path / "app.pem"
    key.write_text(app_keys[0])
    env = dict(os.environ, PATCHWARDEN_APP_ID=str(APP_ID), PATCHWARDEN_PRIVATE_KEY_PATH=str(key))
    src = source_repo(tmp_path, {"hello.txt": "hi\n"})
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.localforge",
        "--port",
        "0",
        "--repo",
        f"octo/hello={src}",
        "--user",
        "octo/hello:alice:write",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode()
        url = line.split()[2]
        async with aiohttp.ClientSession() as session, session.get(f"{url}/octo/hello") as page:
            assert page.status == 200
            assert "octo/hello" in await page.text()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 20) == 0


async def test_every_operation_is_answered_on_contract(
    forge: LocalForge, gh: GitHubClient, github_app: GitHubApp
) -> None:
    """One pass over every operation the forge implements; the fixture checks each answer
    against its response schema, and this test checks none was left out."""
    head = await branch_with(forge, gh, "fix", {"a.txt": "a\n"})
    await open_pr(gh)
    n = {**R, "number": 1}
    await gh.patch(PULL, n, data={"title": "Fix the parser, really", "body": "## Risk: low\n"})
    await gh.getitem(PULL + "/reviews", n)
    await gh.getitem(PULL, n)
    assert [p["number"] for p in await gh.getitem(PULLS + "?state=all", R)] == [1]
    await gh.post(PULL + "/reviews", n, data={"event": "COMMENT", "body": "verified"})
    files = [f async for f in gh.getiter(PULL + "/files", n)]
    assert files
    issue = await gh.post("/repos/{owner}/{repo}/issues", R, data={"title": "t", "labels": ["bug"]})
    i = {**R, "number": issue["number"]}
    url = "/repos/{owner}/{repo}/issues/{number}"
    await gh.getitem(url, i)
    await gh.patch(url, i, data={"labels": ["bug", "help"], "body": "more"})
    await gh.post(url + "/reactions", i, data={"content": "eyes"})
    comment = await gh.post(url + "/comments", i, data={"body": "looking"})
    await gh.post(
        "/repos/{owner}/{repo}/issues/comments/{id}/reactions",
        {**R, "id": comment["id"]},
        data={"content": "rocket"},
    )
    await gh.patch(
        "/repos/{owner}/{repo}/issues/comments/{id}",
        {**R, "id": comment["id"]},
        data={"body": "ok"},
    )
    await gh.getitem(url + "/comments?since=2000-01-01T00:00:00Z", i)
    await gh.post(url + "/labels", i, data={"labels": ["triaged"]})
    await gh.delete(url + "/labels/{name}", {**i, "name": "help"})
    await gh.post("/repos/{owner}/{repo}/labels", R, data={"name": "risk:high", "color": "d73a4a"})
    with pytest.raises(gidgethub.BadRequest) as raised:
        await gh.post("/repos/{owner}/{repo}/labels", R, data={"name": "risk:high"})
    assert raised.value.status_code == 422
    await gh.getitem("/repos/{owner}/{repo}/labels/{name}", {**R, "name": "risk:high"})
    forge.add_user(REPO, "carol", "triage")
    await gh.getitem("/repos/{owner}/{repo}/collaborators/{u}/permission", {**R, "u": "carol"})
    await gh.post(PULL + "/requested_reviewers", n, data={"reviewers": ["carol"]})
    await gh.post(
        "/repos/{owner}/{repo}/check-runs",
        R,
        data={"name": "risk", "head_sha": head, "conclusion": "neutral"},
    )
    runs = await gh.getitem("/repos/{owner}/{repo}/commits/{ref}/check-runs", {**R, "ref": head})
    await gh.patch(
        "/repos/{owner}/{repo}/check-runs/{id}",
        {**R, "id": runs["check_runs"][0]["id"]},
        data={"output": {"title": "t", "summary": "s"}},
    )
    await gh.getitem(
        "/repos/{owner}/{repo}/check-runs/{id}", {**R, "id": runs["check_runs"][0]["id"]}
    )
    await gh.getitem("/repos/{owner}/{repo}/commits/{ref}/check-suites", {**R, "ref": "fix"})
    await gh.post(
        "/repos/{owner}/{repo}/statuses/{sha}", {**R, "sha": head}, data={"state": "success"}
    )
    await gh.getitem("/repos/{owner}/{repo}/commits/{ref}/status", {**R, "ref": head})
    await gh.getitem("/repos/{owner}/{repo}", R)
    await gh.getitem("/repos/{owner}/{repo}/contents/{path}", {**R, "path": "README.md"})
    await gh.getitem("/repos/{owner}/{repo}/branches/{b}", {**R, "b": "fix"})
    await gh.put(MERGE, n, data={"sha": head, "merge_method": "rebase"})
    git_data = "/repos/{owner}/{repo}/git/"
    blob = await gh.post(git_data + "blobs", R, data={"content": "b\n"})
    entry = {"path": "b.txt", "mode": "100644", "type": "blob", "sha": blob["sha"]}
    tree = await gh.post(git_data + "trees", R, data={"tree": [entry]})
    made = await gh.post(
        git_data + "commits", R, data={"message": "m", "tree": tree["sha"], "parents": [head]}
    )
    await gh.patch(git_data + "refs/{+ref}", {**R, "ref": "heads/fix"}, data={"sha": made["sha"]})
    await gh.delete("/repos/{owner}/{repo}/git/refs/{ref}", {**R, "ref": "heads/fix"})
    assert (await github_app.as_app().getitem("/app"))["id"] == APP_ID
    found = await github_app.as_app().getitem("/repos/{owner}/{repo}/installation", R)
    assert found["id"] == INSTALLATION
    installations = await github_app.as_app().getitem("/app/installations")
    assert [i["id"] for i in installations] == [INSTALLATION]
    bot = await gh.getitem("/users/{u}", {"u": f"{forge.state.app_slug}[bot]"})
    assert (bot["login"], bot["type"]) == (f"{forge.state.app_slug}[bot]", "Bot")
    code = forge.submit_manifest({"name": "Patchwarden", "url": "https://pw.example.org"})
    created = await gh.post("/app-manifests/{code}/conversions", {"code": code}, data={})
    assert created["id"] == APP_ID
    assert created["pem"].startswith("-----BEGIN")
    await forge.settle()

    seen = {r.operation for r in forge.requests if r.status < 300}
    assert {op.id for op in RestContract.load().operations} - seen == set()


async def test_installing_the_app_sends_installation_created(pw: Harness) -> None:
    await pw.forge.install(INSTALLATION, by="octocat")
    await pw.settle()
    (delivery,) = pw.forge.deliveries
    assert (delivery.event, delivery.action, delivery.status) == ("installation", "created", 202)
    assert [r["full_name"] for r in delivery.payload["repositories"]] == [REPO]


def test_patchwarden_forge_without_the_app_key_says_what_to_set(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from app.cli import main

    assert main(["forge", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "PATCHWARDEN_APP_ID" in err
    assert "PATCHWARDEN_PRIVATE_KEY_PATH" in err


async def test_a_bug_in_a_handler_is_a_500_and_a_violation(
    forge: LocalForge, gh: GitHubClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(call: Any) -> Any:
        raise KeyError("oops")

    monkeypatch.setitem(HANDLERS, "repos/get", broken)
    with forge.expect_violations() as seen, pytest.raises(gidgethub.GitHubException):
        await gh.getitem("/repos/{owner}/{repo}", R)
    assert [(v.kind, v.problems) for v in seen] == [("crash", ["KeyError: 'oops'"])]


async def test_a_bad_since_is_422_not_a_crash(forge: LocalForge, gh: GitHubClient) -> None:
    issue = forge.open_issue(REPO, "t", author="alice")
    with pytest.raises(gidgethub.BadRequest) as raised:
        await gh.getitem(
            "/repos/{owner}/{repo}/issues/{n}/comments?since=yesterday", {**R, "n": issue.number}
        )
    assert raised.value.status_code == 422
    assert "not a timestamp" in str(raised.value)


async def test_a_user_opens_a_pr_from_a_pushed_branch(forge: LocalForge) -> None:
    await forge.push(REPO, {"a.txt": "a\n"}, author="alice", branch="main")
    main = forge.repos[REPO].git.resolve("refs/heads/main")
    assert main is not None
    forge.repos[REPO].git.create_ref("refs/heads/feature", main)
    await forge.push(REPO, {"a.txt": "b\n"}, author="alice", branch="feature")
    pull = await forge.open_pull(REPO, head="feature", base=None, title="B", author="alice")
    assert [p.number for p in forge.pulls(REPO)] == [pull.number]
    assert (pull.base, pull.changed_files, pull.additions, pull.deletions) == ("main", 1, 1, 1)
    opened = [d for d in forge.deliveries if d.event == "pull_request"]
    assert opened[-1].payload["sender"]["login"] == "alice"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--user", "octo/x:alice:write"], "no --repo octo/x"),
        (["--repo", "octo/x", "--user", "octo/x:alice:boss"], "role must be one of"),
        (
            ["--repo", "octo/x", "--require-check", "tests", "pytest 'unclosed"],
            "No closing quotation",
        ),
    ],
)
async def test_the_forge_command_refuses_bad_input_clearly(
    app_keys: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    says: str,
) -> None:
    from app.localforge.__main__ import build_parser, serve

    key = tmp_path / "app.pem"
    key.write_text(app_keys[0])
    monkeypatch.setenv("PATCHWARDEN_APP_ID", str(APP_ID))
    monkeypatch.setenv("PATCHWARDEN_PRIVATE_KEY_PATH", str(key))
    assert await serve(build_parser().parse_args(["--port", "0", *argv])) == 2
    assert says in capsys.readouterr().err


def test_a_repo_argument_must_be_owner_slash_name(capsys: pytest.CaptureFixture[str]) -> None:
    from app.localforge.__main__ import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["--repo", "widgets"])
    assert "--repo takes owner/name[=DIR]" in capsys.readouterr().err
