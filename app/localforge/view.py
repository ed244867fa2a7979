"""A read-only HTML view of LocalForge, so a person running the demo can see what happened.

``page(repos, path)`` is a pure function from the forge state and a request path to
``(status, html)``, or ``None`` when the path belongs to the API or to git; it reads
the state and, for commit pages and sha links, the repository's git. No JavaScript,
no forms, no external assets. Every string from the state is escaped; bodies are
Markdown rendered as GitHub renders them (``markdown.py``: ``<details>`` folds, HTML
comments hidden, ``#N``, shas and ``@user`` linked). A Content-Security-Policy meta
tag forbids scripts and remote loads even if a rendering bug let markup through.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from app.localforge.bare_repo import GitError
from app.localforge.github_markdown import Links, render

if TYPE_CHECKING:
    from app.localforge.state import Comment, Issue, Pull, Reaction, Repo

RECENT_RUNS = 20
_NUMBER = re.compile(r"[0-9]{1,9}")  # int() of a 5000-digit path segment would raise
_HEX = re.compile(r"[0-9a-f]{7,40}")
_LOGIN = re.compile(r"[A-Za-z0-9](?:-?[A-Za-z0-9]){0,38}")
# The reactions GitHub offers, as it shows them.
EMOJI = {
    "+1": "\N{THUMBS UP SIGN}",
    "-1": "\N{THUMBS DOWN SIGN}",
    "laugh": "\N{SMILING FACE WITH OPEN MOUTH AND SMILING EYES}",
    "confused": "\N{CONFUSED FACE}",
    "heart": "\N{HEAVY BLACK HEART}\ufe0f",
    "hooray": "\N{PARTY POPPER}",
    "rocket": "\N{ROCKET}",
    "eyes": "\N{EYES}",
}
_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'"
_CSS = """
body { font: 14px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 1rem auto; padding: 0 1rem; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border: 1px solid #d0d7de; padding: .2rem .5rem; text-align: left; vertical-align: top; }
.label { background: #eaeef2; border-radius: 1rem; padding: 0 .5rem; margin-right: .2rem; }
.box { border: 1px solid #d0d7de; border-radius: .4rem; padding: .2rem .8rem; margin: .5rem 0; }
.meta { color: #57606a; }
code, pre { background: #f6f8fa; }
pre { padding: .5rem; overflow-x: auto; }
details { border-left: 3px solid #d0d7de; padding-left: .5rem; margin: .5rem 0; }
summary { cursor: pointer; font-weight: 600; }
li.task-list-item { list-style: none; }
"""


def page(
    repos: Mapping[str, Repo], path: str, *, title: str = "LocalForge"
) -> tuple[int, str] | None:
    """Answer a view path with ``(status, html)``; ``None`` for API, App and git paths.

    View paths: ``/``, ``/{owner}/{repo}``, ``/{owner}/{repo}/issues/{n}`` and
    ``/{owner}/{repo}/pull/{n}``. Any other shape is not a view path either, so the
    server can answer it as the API would.
    """
    api = ("/repos/", "/app/", "/apps/", "/users/", "/app-manifests/")
    if path == "/app" or path.startswith(api) or ".git/" in path:
        return None
    if path == "/":
        return 200, _index(repos, title)
    parts = path.strip("/").split("/")
    if len(parts) == 1 and _LOGIN.fullmatch(parts[0]):
        return _user(repos, parts[0], title)  # None for a login nobody here has
    if len(parts) not in (2, 4) or "" in parts:
        return None
    if len(parts) == 4 and not (
        (parts[2] in ("issues", "pull") and _NUMBER.fullmatch(parts[3]))
        or (parts[2] == "commit" and _HEX.fullmatch(parts[3]))
    ):
        return None
    wanted = f"{parts[0]}/{parts[1]}".lower()
    repo = next((r for r in repos.values() if r.full_name.lower() == wanted), None)
    if repo is None:
        return _not_found(f"repository {parts[0]}/{parts[1]}", title)
    if len(parts) == 2:
        return 200, _repo(repo, title)
    if parts[2] == "commit":
        return _commit(repo, parts[3], title)
    number = int(parts[3])
    issue = repo.issues.get(number)
    pull = repo.pulls.get(number)
    if issue is not None and issue.is_pull and pull is not None:
        return 200, _pull(repo, issue, pull, title)  # GitHub redirects /issues/N to /pull/N
    if parts[2] == "issues" and issue is not None:
        return 200, _issue(repo, issue, title)
    kind = "issue" if parts[2] == "issues" else "pull request"
    return _not_found(f"{kind} {repo.full_name}#{number}", title)


# ---- pages ------------------------------------------------------------------------------


def _index(repos: Mapping[str, Repo], title: str) -> str:
    rows = []
    for repo in sorted(repos.values(), key=lambda r: r.full_name.lower()):
        open_items = [i for i in repo.issues.values() if i.state == "open"]
        rows.append(
            [
                _link(f"/{repo.full_name}", repo.full_name),
                _e(repo.default_branch),
                str(sum(not i.is_pull for i in open_items)),
                str(sum(i.is_pull for i in open_items)),
                str(len(repo.merges)),
            ]
        )
    body = _table(["Repository", "Default branch", "Open issues", "Open PRs", "Merges"], rows)
    return _document(title, title, body if rows else "<p>No repositories.</p>", nav=False)


def _repo(repo: Repo, title: str) -> str:
    items = [
        [
            _item_link(repo, issue),
            _e(issue.title),
            _state(issue, repo.pulls.get(issue.number)),
            _e(issue.user.login),
            _labels(issue.label_names()),
        ]
        for issue in sorted(repo.issues.values(), key=lambda i: i.number)
    ]
    merges = [
        [
            _link(f"/{repo.full_name}/pull/{m.number}", f"#{m.number}"),
            _e(m.method),
            _sha(m.sha),
            _e(m.by),
            _time(m.at),
        ]
        for m in repo.merges
    ]
    recent = sorted(repo.check_runs, key=lambda r: r.started_at, reverse=True)[:RECENT_RUNS]
    runs = [[_e(r.name), _sha(r.head_sha), _e(r.conclusion or r.status)] for r in recent]
    required = ", ".join(f"<code>{_e(c.name)}</code>" for c in repo.required_checks)
    body = (
        f"<p class=meta>Default branch <code>{_e(repo.default_branch)}</code></p>"
        f"<h2>Issues and pull requests</h2>"
        f"{_table(['#', 'Title', 'State', 'Author', 'Labels'], items)}"
        f"<h2>Required checks</h2><p>{required or 'None.'}</p>"
        f"<h2>Merges</h2>{_table(['PR', 'Method', 'Commit', 'By', 'When'], merges)}"
        f"<h2>Recent check runs</h2>{_table(['Name', 'Commit', 'Result'], runs)}"
    )
    return _document(f"{repo.full_name} · {title}", repo.full_name, body)


def _issue(repo: Repo, issue: Issue, title: str) -> str:
    links = _links(repo)
    closer = issue.closed_by_pull if issue.state == "closed" else None
    by = (
        f" by {_link(f'/{repo.full_name}/pull/{closer}', f'#{closer}')}"
        if closer is not None
        else ""
    )
    body = (
        f"<p>{_state(issue, None)}{by} · opened by {_e(issue.user.login)}"
        f" {_time(issue.created_at)}"
        f" {_labels(issue.label_names())}</p>"
        f"{_post(links, issue.user.login, issue.created_at, issue.body, issue.reactions)}"
        f"{_comments(links, issue.comments)}"
    )
    return _item_document(repo, issue, title, body)


def _pull(repo: Repo, issue: Issue, pull: Pull, title: str) -> str:
    links = _links(repo)
    reviews = [
        [_user_link(links, r.user.login), _e(r.state), _commit_link(repo, r.commit_id),
         render(r.body, links)]
        for r in pull.reviews
    ]  # fmt: skip
    runs = [
        [
            _e(r.name),
            _e(r.conclusion or r.status),
            _e(r.output.title or ""),
            render(r.output.summary, links),
            _details(r.details_url),
        ]
        for r in repo.runs_for(pull.head_sha)
    ]
    statuses = [
        [_e(s.context), _e(s.state), _e(s.description or ""), _e(s.creator.login)]
        for s in repo.statuses
        if s.sha == pull.head_sha
    ]
    merged = (
        f" as {_commit_link(repo, pull.merge_commit_sha)}"
        if pull.merged and pull.merge_commit_sha
        else ""
    )
    by = f" by {_e(pull.merged_by.login)}" if pull.merged and pull.merged_by else ""
    body = (
        f"<p>{_state(issue, pull)}{merged}{by}{' · draft' if pull.draft else ''}"
        f" · <code>{_e(pull.head)}</code> → <code>{_e(pull.base)}</code>"
        f" · head {_commit_link(repo, pull.head_sha)} {_labels(issue.label_names())}</p>"
        f"{_post(links, issue.user.login, issue.created_at, issue.body, issue.reactions)}"
        f"<h2>Reviews</h2>{_table(['User', 'State', 'Commit', 'Body'], reviews)}"
        f"<h2>Check runs</h2>{_table(['Name', 'Result', 'Title', 'Summary', 'Details'], runs)}"
        f"<h2>Commit statuses</h2>"
        f"{_table(['Context', 'State', 'Description', 'Creator'], statuses)}"
        f"{_comments(links, issue.comments)}"
    )
    return _item_document(repo, issue, title, body)


def _commit(repo: Repo, rev: str, title: str) -> tuple[int, str]:
    try:
        info = repo.git.commit(rev)
        parent = info.parents[0] if info.parents else None
        changes = repo.git.diff_files(parent, info.sha) if parent else []
    except (GitError, OSError):
        return _not_found(f"commit {rev} in {repo.full_name}", title)
    subject, _, rest = info.message.partition("\n")
    parents = " ".join(_commit_link(repo, p) for p in info.parents) or "none"
    files = "".join(
        f"<h3><code>{_e(c.filename)}</code> <span class=meta>{_e(c.status)}"
        f" +{c.additions} -{c.deletions}</span></h3>"
        + (f"<pre>{_e(c.patch)}</pre>" if c.patch else "")
        for c in changes
    )
    added = "".join(f"<li><code>{_e(path)}</code></li>" for path in info.added)
    body = (
        f"<p class=meta><code>{_e(info.sha)}</code> · {_e(info.author.name)}"
        f" &lt;{_e(info.author.email)}&gt; · {_e(info.authored_at)} · parents {parents}</p>"
        f"<pre>{_e(rest.strip())}</pre>"
        * bool(rest.strip())
        + (f"<h2>Files</h2>{files}" if parent else f"<h2>Files</h2><ul>{added}</ul>")
    )
    heading = f"{subject} · {info.sha[:7]}"
    return 200, _document(f"{heading} · {repo.full_name} · {title}", heading, body, repo=repo)


def _user(repos: Mapping[str, Repo], login: str, title: str) -> tuple[int, str] | None:
    if login.lower() not in _logins(repos.values()):
        return None
    rows = [
        [_link(f"/{repo.full_name}", repo.full_name), _item_link(repo, i), _e(i.title)]
        for repo in sorted(repos.values(), key=lambda r: r.full_name.lower())
        for i in sorted(repo.issues.values(), key=lambda i: i.number)
        if i.user.login.lower() == login.lower()
        or any(c.user.login.lower() == login.lower() for c in i.comments)
    ]
    body = "<h2>Issues and pull requests opened or commented on</h2>"
    body += _table(["Repository", "#", "Title"], rows)
    return 200, _document(f"{login} · {title}", login, body)


def _not_found(what: str, title: str) -> tuple[int, str]:
    return 404, _document(f"Not found · {title}", "Not found", f"<p>No {_e(what)}.</p>")


# ---- pieces -----------------------------------------------------------------------------


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _link(href: str, text: str) -> str:
    return f'<a href="{_e(href)}">{_e(text)}</a>'


def _time(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _sha(sha: str) -> str:
    return f'<code title="{_e(sha)}">{_e(sha[:7])}</code>'


def _links(repo: Repo) -> Links:
    """Where ``#N``, a sha and ``@login`` in this repository's bodies point."""

    def issue(number: int) -> str | None:
        item = repo.issues.get(number)
        return None if item is None else f"/{repo.full_name}/{_kind(item)}/{number}"

    def commit(sha: str) -> str | None:
        try:
            full = repo.git.resolve(sha)
        except (GitError, OSError):
            return None
        return f"/{repo.full_name}/commit/{full}" if full else None

    known = _logins([repo])  # once per page: every post and link asks

    def user(login: str) -> str | None:
        return f"/{login}" if login.lower() in known else None

    return Links(issue, commit, user)


def _logins(repos: Iterable[Repo]) -> set[str]:
    """People with a page here: owners, collaborators, authors; Apps have none."""
    names = set()
    for repo in repos:
        names |= {repo.owner.login, *repo.collaborators}
        for issue in repo.issues.values():
            names |= {issue.user.login, *(c.user.login for c in issue.comments)}
    return {n.lower() for n in names if not n.endswith("[bot]")}


def _user_link(links: Links, login: str) -> str:
    href = links.user(login)
    return _link(href, login) if href else _e(login)


def _commit_link(repo: Repo, sha: str) -> str:
    return f'<a href="/{_e(repo.full_name)}/commit/{_e(sha)}">{_sha(sha)}</a>'


def _details(url: str | None) -> str:
    """A check run's Details link (Patchwarden's: its audit page), when it is a web page."""
    if not url or not url.startswith(("http://", "https://")):
        return ""
    return f'<a href="{_e(url)}">Details</a>'


def _labels(names: Iterable[str]) -> str:
    return "".join(f"<span class=label>{_e(name)}</span>" for name in names)


def _state(issue: Issue, pull: Pull | None) -> str:
    if pull is not None and pull.merged:
        return "<strong>merged</strong>"
    reason = (
        f" ({_e(issue.state_reason)})" if issue.state == "closed" and issue.state_reason else ""
    )
    return f"<strong>{_e(issue.state)}</strong>{reason}"


def _kind(issue: Issue) -> str:
    return "pull" if issue.is_pull else "issues"


def _item_link(repo: Repo, issue: Issue) -> str:
    return _link(f"/{repo.full_name}/{_kind(issue)}/{issue.number}", f"#{issue.number}")


def _reactions(reactions: list[Reaction]) -> str:
    counts = Counter(r.content for r in reactions)
    order = [*EMOJI, *sorted(set(counts) - set(EMOJI))]
    shown = "  ".join(
        f'<span title="{_e(c)}">{EMOJI.get(c, _e(c))} {counts[c]}</span>'
        for c in order
        if counts[c]
    )
    return f"<p class=meta>{shown}</p>" if shown else ""


def _post(links: Links, login: str, at: float, body: str | None, reactions: list[Reaction]) -> str:
    text = render(body, links) or "<p class=meta><em>No description provided.</em></p>"
    return (
        f"<div class=box><p class=meta><strong>{_user_link(links, login)}</strong>"
        f" · {_time(at)}</p>{text}{_reactions(reactions)}</div>"
    )


def _comments(links: Links, comments: list[Comment]) -> str:
    posts = "".join(_post(links, c.user.login, c.created_at, c.body, c.reactions) for c in comments)
    return f"<h2>Comments</h2>{posts or '<p>None.</p>'}"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    """Cells are HTML already escaped by the caller; headers are plain text."""
    if not rows:
        return "<p>None.</p>"
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _item_document(repo: Repo, issue: Issue, title: str, body: str) -> str:
    heading = f"{issue.title} #{issue.number}"
    return _document(f"{heading} · {repo.full_name} · {title}", heading, body, repo=repo)


def _document(
    doc_title: str, heading: str, body: str, *, nav: bool = True, repo: Repo | None = None
) -> str:
    crumbs = _link("/", "LocalForge") if nav else ""
    if repo is not None:
        crumbs += " / " + _link(f"/{repo.full_name}", repo.full_name)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>{_e(doc_title)}</title><style>{_CSS}</style></head><body>"
        f"<nav>{crumbs}</nav><h1>{_e(heading)}</h1>{body}</body></html>\n"
    )
