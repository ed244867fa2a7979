"""What LocalForge remembers: users, repositories, issues, pulls, reviews, checks.

Plain dataclasses, no I/O. Times are epoch seconds; ``render`` turns these into
the JSON shapes GitHub sends. Issue and pull request numbers share one sequence per
repository, as on GitHub: a pull request is also an issue (its comments and labels
live on the issue).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Literal

from app.localforge.bare_repo import BareRepo

Role = Literal["admin", "maintain", "write", "triage", "read"]
ROLES: dict[str, str] = {
    # role_name -> the legacy ``permission`` GitHub folds it into
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
}
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


@dataclass
class User:
    login: str
    id: int
    type: Literal["User", "Bot", "Organization"] = "User"


@dataclass
class Reaction:
    id: int
    content: str
    user: User
    created_at: float = field(default_factory=time.time)


@dataclass
class Comment:
    id: int
    issue_number: int
    body: str
    user: User
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    reactions: list[Reaction] = field(default_factory=list)
    via_app: bool = False  # written by the App's installation token


@dataclass
class Label:
    id: int
    name: str
    color: str = "ededed"
    description: str | None = None


@dataclass
class Issue:
    number: int
    title: str
    body: str | None
    user: User
    state: Literal["open", "closed"] = "open"
    state_reason: str | None = None
    labels: list[Label] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    reactions: list[Reaction] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    closed_at: float | None = None
    closed_by_pull: int | None = None  # the PR whose merge closed it (a closing keyword)
    is_pull: bool = False

    def label_names(self) -> list[str]:
        return [label.name for label in self.labels]


@dataclass
class Review:
    id: int
    user: User
    state: Literal["APPROVED", "CHANGES_REQUESTED", "COMMENTED", "PENDING"]
    body: str
    commit_id: str
    submitted_at: float = field(default_factory=time.time)


@dataclass
class Pull:
    number: int
    head: str  # branch name in the same repository
    head_sha: str
    base: str
    base_sha: str  # the base branch tip when last computed
    draft: bool = False
    merged: bool = False
    merged_at: float | None = None
    merged_by: User | None = None
    merge_commit_sha: str | None = None
    reviews: list[Review] = field(default_factory=list)
    requested_reviewers: list[User] = field(default_factory=list)  # until they review
    additions: int = 0
    deletions: int = 0
    changed_files: int = 0
    commits: int = 0


@dataclass
class CheckOutput:
    title: str | None = None
    summary: str | None = None
    text: str | None = None


@dataclass
class CheckSuite:
    id: int
    head_sha: str
    head_branch: str | None
    app_slug: str
    before: str | None = None
    after: str | None = None
    status: Literal["queued", "in_progress", "completed"] = "queued"
    conclusion: str | None = None
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)


@dataclass
class CheckRun:
    id: int
    name: str
    head_sha: str
    suite: CheckSuite
    app_slug: str
    status: Literal["queued", "in_progress", "completed"] = "queued"
    conclusion: str | None = None
    started_at: float = field(default_factory=time.time)
    completed_at: float | None = None
    output: CheckOutput = field(default_factory=CheckOutput)
    details_url: str | None = None
    external_id: str | None = None


@dataclass
class CommitStatus:
    id: int
    sha: str
    state: Literal["error", "failure", "pending", "success"]
    context: str
    description: str | None
    target_url: str | None
    creator: User
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)


@dataclass
class RequiredCheck:
    """A check the forge itself runs on every pushed head, like a CI workflow would;
    with ``only_on``, only on pushes to those branches (a post-merge workflow, ``on:
    push: branches: [main]``), and then no merge waits for it."""

    name: str
    command: tuple[str, ...]
    timeout: float = 300.0
    only_on: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        return not self.only_on


@dataclass
class Merge:
    """One merge through the API, for tests and the read-only view."""

    number: int
    sha: str
    method: str
    base: str
    by: str
    at: float = field(default_factory=time.time)


@dataclass
class Repo:
    id: int
    owner: User
    name: str
    installation_id: int
    git: BareRepo
    default_branch: str = "main"
    private: bool = False
    created_at: float = field(default_factory=time.time)
    pushed_at: float = field(default_factory=time.time)
    collaborators: dict[str, str] = field(default_factory=dict)  # login -> role
    issues: dict[int, Issue] = field(default_factory=dict)
    pulls: dict[int, Pull] = field(default_factory=dict)
    labels: dict[str, Label] = field(default_factory=dict)
    check_suites: list[CheckSuite] = field(default_factory=list)
    check_runs: list[CheckRun] = field(default_factory=list)
    statuses: list[CommitStatus] = field(default_factory=list)
    required_checks: list[RequiredCheck] = field(default_factory=list)
    merges: list[Merge] = field(default_factory=list)
    # Branch protection's "Require signed commits" on the default branch, and the
    # commits GitHub signed (made through the Git Data API as the App, or merges).
    signed_commits_required: bool = False
    verified: set[str] = field(default_factory=set)

    @property
    def full_name(self) -> str:
        return f"{self.owner.login}/{self.name}"

    def next_number(self) -> int:
        return len(self.issues) + 1

    def comment(self, comment_id: int) -> Comment | None:
        for issue in self.issues.values():
            for comment in issue.comments:
                if comment.id == comment_id:
                    return comment
        return None

    def runs_for(self, sha: str) -> list[CheckRun]:
        return [run for run in self.check_runs if run.head_sha == sha]

    def commit_of(self, ref: str) -> str | None:
        """A sha, branch name, tag name or full ref → its commit's sha, as the REST API
        reads a ``ref`` parameter; ``None`` when there is none."""
        if re.fullmatch(r"[0-9a-f]{40}", ref) or ref.startswith("refs/"):
            return self.git.resolve(ref)
        return self.git.resolve(f"refs/heads/{ref}") or self.git.resolve(f"refs/tags/{ref}")
