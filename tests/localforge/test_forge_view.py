"""The read-only HTML view of LocalForge: what a person running the demo sees.

Pages are parsed with the standard library's HTMLParser, so assertions are about
the elements and the text a browser would show, not about incidental spacing.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from app.localforge.bare_repo import BareRepo
from app.localforge.state import (
    CheckOutput,
    CheckRun,
    CheckSuite,
    Comment,
    CommitStatus,
    Issue,
    Label,
    Merge,
    Pull,
    Reaction,
    Repo,
    Review,
    User,
)
from app.localforge.view import page

AT = 1795341600.0  # 2026-11-22 10:00:00Z
HEAD = "f00dfacecafe" + "0" * 28
OTHER = "badc0ffee" + "1" * 31
MERGE_SHA = "5eed1234abcd" + "2" * 28
XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>"
RISK_TABLE = "Risk summary\n\n| Risk | Score |\n|------|-------|\n| low  | 0.12  |\n"


BLOCKS = {"p", "div", "h1", "h2", "nav", "table", "tr", "th", "td", "li", "br"}


class Parsed(HTMLParser):
    """Tags with their attributes, and the text a browser would show."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.chunks: list[str] = []
        self._hidden = False  # inside <title> or <style>
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._hidden = tag in ("title", "style")
        if tag in BLOCKS:
            self.chunks.append(" ")

    def handle_endtag(self, tag: str) -> None:
        self._hidden = False

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.chunks.append(data)

    @property
    def text(self) -> str:
        """The body text, whitespace collapsed, a space between blocks and cells."""
        return " ".join("".join(self.chunks).split())

    def hrefs(self) -> list[str]:
        return [str(attrs.get("href")) for tag, attrs in self.tags if tag == "a"]

    def tag_names(self) -> set[str]:
        return {tag for tag, _ in self.tags}


def ok(repos: dict[str, Repo], path: str) -> Parsed:
    answer = page(repos, path)
    assert answer is not None
    status, markup = answer
    assert status == 200
    return Parsed(markup)


@pytest.fixture
def repos(tmp_path: Path) -> dict[str, Repo]:
    alice = User("alice", 2)
    bot = User("patchwarden[bot]", 3, "Bot")
    repo = Repo(
        id=1,
        owner=User("octo-org", 1, "Organization"),
        name="widgets",
        installation_id=7,
        git=BareRepo(tmp_path / "widgets.git"),
    )
    repo.issues[1] = Issue(
        number=1,
        title="Crash on empty input",
        body="Steps: run it with `--empty`.",
        user=alice,
        labels=[Label(1, "bug")],
        created_at=AT,
        comments=[
            Comment(
                10,
                1,
                "I can reproduce **this** on main.",
                alice,
                created_at=AT + 60,
                reactions=[Reaction(1, "heart", bot), Reaction(2, "heart", alice)],
            ),
            Comment(11, 1, "Fix queued.", bot, created_at=AT + 120, via_app=True),
        ],
    )
    repo.issues[2] = Issue(
        number=2, title="Fix crash", body=RISK_TABLE, user=bot, state="closed", is_pull=True
    )
    repo.pulls[2] = Pull(
        number=2,
        head="patchwarden/fix-1",
        head_sha=HEAD,
        base="main",
        base_sha=OTHER,
        merged=True,
        merged_at=AT + 600,
        merged_by=alice,
        merge_commit_sha=MERGE_SHA,
        reviews=[Review(1, alice, "APPROVED", "Looks right.", HEAD)],
    )
    repo.merges.append(Merge(2, MERGE_SHA, "squash", "main", "alice", at=AT + 600))
    suite = CheckSuite(1, HEAD, "patchwarden/fix-1", "patchwarden")
    repo.check_runs += [
        CheckRun(
            1,
            "patchwarden/verify",
            HEAD,
            suite,
            "patchwarden",
            status="completed",
            conclusion="success",
            output=CheckOutput("All 12 checks passed", "Ran **pytest**."),
        ),
        CheckRun(2, "lint", HEAD, suite, "ci", status="completed", conclusion="failure"),
        CheckRun(
            3, "on-another-commit", OTHER, suite, "ci", status="completed", conclusion="neutral"
        ),
    ]
    repo.statuses.append(CommitStatus(1, HEAD, "success", "ci/legacy", "green", None, bot))
    repo.statuses.append(CommitStatus(2, OTHER, "failure", "ci/elsewhere", None, None, bot))
    # Hostile text in every field a user controls.
    repo.issues[3] = Issue(
        number=3,
        title=f"title {XSS}",
        body=f"body {XSS}",
        user=User(f"login{XSS}", 4),
        labels=[Label(2, f"label{XSS}")],
        comments=[Comment(12, 3, f"comment {XSS}", alice)],
    )
    repo.issues[4] = Issue(
        number=4, title=f"pr {XSS}", body=f"pr body {XSS}", user=alice, is_pull=True
    )
    repo.pulls[4] = Pull(
        number=4,
        head=f"branch{XSS}",
        head_sha=OTHER,
        base="main",
        base_sha=HEAD,
        reviews=[Review(2, alice, "COMMENTED", f"review {XSS}", OTHER)],
    )
    repo.check_runs.append(
        CheckRun(
            4,
            f"check{XSS}",
            OTHER,
            suite,
            "ci",
            output=CheckOutput(f"out {XSS}", f"summary {XSS}"),
        )
    )
    return {repo.full_name: repo}


def test_index_lists_each_repository_with_a_link_and_counts(repos: dict[str, Repo]) -> None:
    shown = ok(repos, "/")
    assert "/octo-org/widgets" in shown.hrefs()
    # repository, default branch, open issues (#1, #3), open PRs (#4), merges
    assert "octo-org/widgets main 2 1 1" in shown.text


def test_repository_page_lists_items_merges_and_recent_runs(repos: dict[str, Repo]) -> None:
    shown = ok(repos, "/octo-org/widgets")
    assert {"/octo-org/widgets/issues/1", "/octo-org/widgets/pull/2"} <= set(shown.hrefs())
    assert "#1 Crash on empty input open alice bug" in shown.text
    assert "#2 Fix crash merged patchwarden[bot]" in shown.text
    assert "#2 squash 5eed123 alice 2026-11-22 10:10:00Z" in shown.text
    assert "lint f00dfac failure" in shown.text


def test_issue_page_shows_body_comments_authors_times_and_reactions(
    repos: dict[str, Repo],
) -> None:
    answer = page(repos, "/octo-org/widgets/issues/1")
    assert answer is not None
    assert "<strong>this</strong>" in answer[1]  # comment bodies are Markdown
    shown = Parsed(answer[1])
    assert "Crash on empty input #1" in shown.text
    assert (
        "alice · 2026-11-22 10:01:00Z I can reproduce this on main. \N{HEAVY BLACK HEART}\ufe0f 2"
        in (shown.text)
    )
    assert "patchwarden[bot] · 2026-11-22 10:02:00Z Fix queued." in shown.text
    assert "bug" in shown.text


def test_pull_body_markdown_table_renders_as_a_table(repos: dict[str, Repo]) -> None:
    answer = page(repos, "/octo-org/widgets/pull/2")
    assert answer is not None
    assert "<th>Risk</th>" in answer[1]
    assert "| Risk |" not in answer[1]


def test_merged_pull_shows_merged_and_the_merge_sha(repos: dict[str, Repo]) -> None:
    shown = ok(repos, "/octo-org/widgets/pull/2")
    assert "merged as 5eed123 by alice" in shown.text
    assert "patchwarden/fix-1 → main" in shown.text
    assert "head f00dfac" in shown.text


def test_pull_shows_runs_and_statuses_for_its_head_only(repos: dict[str, Repo]) -> None:
    shown = ok(repos, "/octo-org/widgets/pull/2")
    assert "patchwarden/verify success All 12 checks passed Ran pytest." in shown.text
    assert "lint failure" in shown.text
    assert "ci/legacy success green" in shown.text
    assert "Looks right." in shown.text
    assert "on-another-commit" not in shown.text
    assert "ci/elsewhere" not in shown.text


@pytest.mark.parametrize(
    "path", ["/", "/octo-org/widgets", "/octo-org/widgets/issues/3", "/octo-org/widgets/pull/4"]
)
def test_hostile_text_is_shown_not_interpreted(repos: dict[str, Repo], path: str) -> None:
    answer = page(repos, path)
    assert answer is not None
    assert "<script" not in answer[1].lower()
    shown = Parsed(answer[1])
    assert shown.tag_names().isdisjoint({"script", "img", "iframe", "object"})
    handlers = [name for _, attrs in shown.tags for name in attrs if name.startswith("on")]
    assert handlers == []
    if path != "/":
        assert XSS in shown.text  # the reader sees what was written, as text


def test_every_hostile_field_on_item_pages_is_visible_as_text(repos: dict[str, Repo]) -> None:
    issue = ok(repos, "/octo-org/widgets/issues/3").text
    pull = ok(repos, "/octo-org/widgets/pull/4").text
    for shown in (f"title {XSS}", f"body {XSS}", f"login{XSS}", f"label{XSS}", f"comment {XSS}"):
        assert shown in issue
    for shown in (f"pr {XSS}", f"pr body {XSS}", f"branch{XSS}", f"review {XSS}", f"summary {XSS}"):
        assert shown in pull


@pytest.mark.parametrize(
    ("path", "what"),
    [
        ("/octo-org/nope", "repository octo-org/nope"),
        ("/octo-org/nope/issues/1", "repository octo-org/nope"),
        ("/octo-org/widgets/issues/99", "issue octo-org/widgets#99"),
        ("/octo-org/widgets/pull/99", "pull request octo-org/widgets#99"),
        ("/octo-org/widgets/pull/1", "pull request octo-org/widgets#1"),  # #1 is an issue
        ("/<b>x/y", "repository <b>x/y"),
    ],
)
def test_unknown_repository_or_number_is_404_saying_what(
    repos: dict[str, Repo], path: str, what: str
) -> None:
    answer = page(repos, path)
    assert answer is not None
    status, markup = answer
    assert status == 404
    assert f"No {what}." in Parsed(markup).text
    assert "<b>" not in markup


@pytest.mark.parametrize(
    "path",
    [
        "/repos/octo-org/widgets",
        "/repos/octo-org/widgets/issues/1",
        "/app",
        "/app/installations",
        "/app/installations/7/access_tokens",
        "/apps/patchwarden",
        "/octo-org/widgets.git/",
        "/octo-org/widgets.git/info/refs",
        "/octo-org/widgets.git/git-upload-pack",
        "/octo-org/widgets/issues/one",
        "/octo-org/widgets/issues/" + "9" * 5000,
        "/octo-org/widgets/issues/-1",
        "/octo-org/widgets/commits/main",
    ],
)
def test_api_git_and_other_paths_are_not_view_paths(repos: dict[str, Repo], path: str) -> None:
    assert page(repos, path) is None


def test_issue_number_of_a_pull_shows_the_pull(repos: dict[str, Repo]) -> None:
    shown = ok(repos, "/octo-org/widgets/issues/2")
    assert "merged as 5eed123" in shown.text


def test_repository_names_match_case_insensitively(repos: dict[str, Repo]) -> None:
    assert "Crash on empty input" in ok(repos, "/Octo-Org/Widgets").text


def test_title_is_the_site_name(repos: dict[str, Repo]) -> None:
    answer = page(repos, "/", title="Demo <forge>")
    assert answer is not None
    assert "<title>Demo &lt;forge&gt;</title>" in answer[1]


def test_an_owner_whose_name_starts_with_app_is_still_viewable(tmp_path: Path) -> None:
    owner = User("appsec-team", 9, "Organization")
    repo = Repo(1, owner, "scanner", 7, BareRepo(tmp_path))
    found = page({repo.full_name: repo}, "/appsec-team/scanner")
    assert found is not None
    assert found[0] == 200


def test_pull_shows_each_check_runs_details_link(repos: dict[str, Repo]) -> None:
    repo = repos["octo-org/widgets"]
    repo.check_runs[0].details_url = "http://127.0.0.1:8080/audit/octo-org/widgets/pull/2?sig=ab"
    repo.check_runs[1].details_url = "javascript:alert(1)"
    shown = ok(repos, "/octo-org/widgets/pull/2")
    assert [h for h in shown.hrefs() if "audit" in h or "javascript" in h] == [
        "http://127.0.0.1:8080/audit/octo-org/widgets/pull/2?sig=ab"
    ]
    assert "patchwarden/verify success All 12 checks passed Ran pytest. Details" in shown.text
