"""Bodies on LocalForge's pages read as they would on GitHub: folds, hidden comments,
linked references, task boxes; and no markup beyond GitHub's allow-list is obeyed."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.localforge.bare_repo import BareRepo, Person
from app.localforge.github_markdown import Links, clean_html, render
from app.localforge.state import Comment, Issue, Repo, User
from app.localforge.view import page
from tests.localforge.test_forge_view import Parsed, ok

ISSUES = {1: "issues", 2: "pull"}
LINKS = Links(
    issue=lambda n: f"/o/r/{ISSUES[n]}/{n}" if n in ISSUES else None,
    commit=lambda sha: f"/o/r/commit/{sha}" if sha.startswith("3a19") else None,
    user=lambda login: f"/{login}" if login == "alice" else None,
)


def test_details_fold_and_comments_are_hidden() -> None:
    body = (
        "**Risk 8/100** <!-- patchwarden:job=4 -->\n\n"
        "<details><summary>Why</summary>\n\n| factor | points |\n|---|---|\n| size | 5 |\n\n"
        "</details>\n\n<!-- patchwarden:marker -->\n"
    )
    shown = Parsed(render(body, LINKS))
    assert [tag for tag, _ in shown.tags] == [
        "p", "strong", "details", "summary", "table", "thead", "tr", "th", "th",
        "tbody", "tr", "td", "td",
    ]  # fmt: skip
    assert shown.text == "Risk 8/100 Why factor points size 5"


def test_references_link_only_to_what_exists() -> None:
    text = (
        "Fixes #1, see #2 and #99; 3a19abf26d1d by @alice with @bob; 1234567 is a number; 3a19abf."
    )
    shown = Parsed(render(text, LINKS))
    assert shown.hrefs() == [
        "/o/r/issues/1",
        "/o/r/pull/2",
        "/o/r/commit/3a19abf26d1d",
        "/alice",
        "/o/r/commit/3a19abf",
    ]
    assert shown.text == (
        "Fixes #1, see #2 and #99; 3a19abf by @alice with @bob; 1234567 is a number; 3a19abf."
    )


@pytest.mark.parametrize(
    "text",
    [
        "`#1 3a19abf26d1d @alice`",
        "    #1 @alice\n",
        "[#1 @alice](https://example.org)",
        "a#1 b@alice",
    ],
)
def test_no_reference_links_inside_code_links_or_words(text: str) -> None:
    assert [h for h in Parsed(render(text, LINKS)).hrefs() if h.startswith("/")] == []


def test_task_lists_are_boxes() -> None:
    shown = Parsed(render("- [ ] write the test\n- [x] fix #1\n- [y] not a task\n", LINKS))
    boxes = [attrs for tag, attrs in shown.tags if tag == "input"]
    assert boxes == [
        {"type": "checkbox", "disabled": None},
        {"type": "checkbox", "disabled": None, "checked": None},
    ]
    assert shown.text == "write the test fix #1 [y] not a task"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("<img src=x onerror=alert(2)>", "&lt;img src=x onerror=alert(2)&gt;"),
        ('<a href="javascript:alert(1)" onclick="x()">go</a>', "<a>go</a>"),
        ('<a href="https://x.io/y" title="t">go</a>', '<a href="https://x.io/y" title="t">go</a>'),
        ('<details open onclick="x()"><summary style="x">s</summary></details>',
         "<details open><summary>s</summary></details>"),
        ("<b>bold</b><br/><kbd>Ctrl</kbd>", "<b>bold</b><br><kbd>Ctrl</kbd>"),
        ("<!-- hidden --><sub>small</sub>", "<sub>small</sub>"),
        ("<iframe src=//x></iframe>", "&lt;iframe src=//x&gt;&lt;/iframe&gt;"),
    ],
)  # fmt: skip
def test_raw_html_keeps_only_what_github_allows(raw: str, expected: str) -> None:
    assert clean_html(raw) == expected


# ---- pages over a real repository ------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    source = tmp_path / "src"
    source.mkdir()
    (source / "util.py").write_text("import os\n\n\ndef greet():\n    return 'hi'\n")
    git = BareRepo.from_directory(tmp_path / "widgets.git", source, message="Import")
    base = git.resolve("main")
    assert base is not None
    fix = git.commit_files(
        "main",
        {"util.py": "def greet():\n    return 'hi'\n"},
        message="Drop os\n\nUnused.",
        author=Person("Alice", "alice@example.com"),
    )
    alice = User("alice", 2)
    repo = Repo(id=1, owner=User("octo-org", 1, "Organization"), name="widgets",
                installation_id=7, git=git)  # fmt: skip
    repo.issues[1] = Issue(
        number=1,
        title="util imports os",
        body=f"Since {base[:12]}; see #1 and #7. cc @alice @patchwarden[bot]\n\n- [x] found",
        user=alice,
        comments=[Comment(10, 1, f"Fixed by {fix}", User("patchwarden[bot]", 3, "Bot"))],
    )
    return repo


def test_issue_page_links_shas_issues_and_people(repo: Repo) -> None:
    shown = ok({repo.full_name: repo}, "/octo-org/widgets/issues/1")
    base, fix = repo.git.resolve("main~1"), repo.git.resolve("main")
    assert f"/octo-org/widgets/commit/{base}" in shown.hrefs()
    assert f"/octo-org/widgets/commit/{fix}" in shown.hrefs()
    assert "/octo-org/widgets/issues/1" in shown.hrefs()
    assert "/alice" in shown.hrefs()
    assert not any(h.endswith("/7") or "[bot]" in h for h in shown.hrefs())
    assert "Fixed by " + str(fix)[:7] in shown.text


def test_commit_page_shows_message_author_and_patch(repo: Repo) -> None:
    fix = repo.git.resolve("main")
    shown = ok({repo.full_name: repo}, f"/octo-org/widgets/commit/{fix}"[:-30])
    assert "Drop os" in shown.text
    assert "Unused." in shown.text
    assert "util.py modified +0 -3" in shown.text
    assert "-import os" in shown.text
    missing = page({repo.full_name: repo}, "/octo-org/widgets/commit/" + "ab" * 20)
    assert missing is not None
    assert missing[0] == 404


def test_user_page_lists_what_they_opened_and_apps_have_none(repo: Repo) -> None:
    repos = {repo.full_name: repo}
    shown = ok(repos, "/alice")
    assert "octo-org/widgets #1 util imports os" in shown.text
    assert page(repos, "/nobody") is None  # not a person here: the API answers the path
    assert page(repos, "/patchwarden[bot]") is None
