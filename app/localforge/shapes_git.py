"""Git as GitHub's REST API renders it: contents, refs, branches, commits, trees, and
the commits of a ``push`` payload."""

from __future__ import annotations

import base64
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from app.localforge.shapes import Json, Links, iso, node_id, utc

if TYPE_CHECKING:
    from app.localforge.bare_repo import CommitInfo, Entry
    from app.localforge.state import Repo

_PGP = ("-----BEGIN PGP SIGNATURE-----", "-----END PGP SIGNATURE-----")


def _base64_lines(data: bytes) -> str:
    """Base64 with a newline after every 60 characters, as the contents API sends it."""
    encoded = base64.b64encode(data).decode()
    return "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60))


class GitObjects:
    def __init__(self, links: Links):
        self.links = links

    def content(
        self, repo: Repo, entry: Entry, ref: str, *, submodule_git_url: str | None = None
    ) -> Json | list[Json]:
        """content-file, -symlink or -submodule, or content-directory (a list) for a dir.

        A symlink is described as itself; answering with its target's file instead, as
        GitHub does for a link to a file, is the caller's choice (it needs the tree).
        """
        if entry.kind == "dir":
            return [self._content_item(repo, child, ref, listing=True) for child in entry.children]
        rendered = self._content_item(repo, entry, ref, listing=False)
        if entry.kind == "file":
            rendered["content"] = _base64_lines(entry.content or b"")
            rendered["encoding"] = "base64"
        elif entry.kind == "symlink":
            rendered["target"] = (entry.content or b"").decode(errors="surrogateescape")
        elif entry.kind == "submodule":
            if submodule_git_url is None:
                raise ValueError(f"{entry.path}: a submodule needs its url from .gitmodules")
            rendered["submodule_git_url"] = submodule_git_url
        return rendered

    def _content_item(self, repo: Repo, entry: Entry, ref: str, *, listing: bool) -> Json:
        api, html, path = self.links.api(repo), self.links.html(repo), quote(entry.path)
        ref_q = quote(ref, safe="/")
        url = f"{api}/contents/{path}?ref={quote(ref, safe='')}"
        git_url: str | None = f"{api}/git/{'trees' if entry.kind == 'dir' else 'blobs'}/{entry.sha}"
        html_url: str | None = f"{html}/{'tree' if entry.kind == 'dir' else 'blob'}/{ref_q}/{path}"
        download: str | None = f"{html}/raw/{ref_q}/{path}"
        kind = entry.kind
        if kind == "dir":
            download = None
        elif kind == "submodule":
            # The commit lives in another repository the forge does not know.
            git_url = html_url = download = None
            # GitHub lists submodules as "file" in a directory, for compatibility:
            # https://docs.github.com/rest/repos/contents#get-repository-content
            kind = "file" if listing else "submodule"
        return {
            "type": kind,
            "size": entry.size,
            "name": entry.path.rsplit("/", 1)[-1],
            "path": entry.path,
            "sha": entry.sha,
            "url": url,
            "git_url": git_url,
            "html_url": html_url,
            "download_url": download,
            "_links": {"self": url, "git": git_url, "html": html_url},
        }

    def git_ref(self, repo: Repo, ref: str, sha: str) -> Json:
        """git-ref; ``ref`` with or without its ``refs/`` prefix."""
        ref = ref if ref.startswith("refs/") else f"refs/{ref}"
        api = self.links.api(repo)
        return {
            "ref": ref,
            "node_id": node_id("Ref", ref),
            "url": f"{api}/git/{quote(ref)}",
            "object": {"type": "commit", "sha": sha, "url": f"{api}/git/commits/{sha}"},
        }

    def verification(self, repo: Repo, sha: str) -> Json:
        """A commit's signature check: "valid" for the commits the forge signed itself
        (GitHub signs what it makes: API commits made as the App, merges), else unsigned."""
        if sha in repo.verified:
            return {
                "verified": True,
                "reason": "valid",
                "signature": f"{_PGP[0]}\n\n{sha}\n{_PGP[1]}\n",
                "payload": f"tree {sha}\n",
                "verified_at": iso(time.time()),
            }
        return {
            "verified": False,
            "reason": "unsigned",
            "signature": None,
            "payload": None,
            "verified_at": None,
        }

    def git_commit(self, repo: Repo, c: CommitInfo) -> Json:
        """git-commit (as in ``POST /git/commits``)."""
        api, html = self.links.api(repo), self.links.html(repo)
        return {
            "sha": c.sha,
            "node_id": node_id("Commit", f"{repo.id}:{c.sha}"),
            "url": f"{api}/git/commits/{c.sha}",
            "html_url": f"{html}/commit/{c.sha}",
            "author": {"name": c.author.name, "email": c.author.email, "date": utc(c.authored_at)},
            "committer": {
                "name": c.committer.name,
                "email": c.committer.email,
                "date": utc(c.committed_at),
            },
            "tree": {"sha": c.tree, "url": f"{api}/git/trees/{c.tree}"},
            "message": c.message,
            "parents": [
                {"sha": p, "url": f"{api}/git/commits/{p}", "html_url": f"{html}/commit/{p}"}
                for p in c.parents
            ],
            "verification": self.verification(repo, c.sha),
        }

    def short_blob(self, repo: Repo, sha: str) -> Json:
        return {"sha": sha, "url": f"{self.links.api(repo)}/git/blobs/{sha}"}

    def git_tree(self, repo: Repo, sha: str, entries: Sequence[tuple[str, Entry]]) -> Json:
        """git-tree: the tree's top-level entries, as ``POST /git/trees`` answers."""
        api = self.links.api(repo)
        kinds = {"dir": "tree", "submodule": "commit"}
        listed = []
        for mode, e in entries:
            kind = kinds.get(e.kind, "blob")
            item: dict[str, Any] = {"path": e.path, "mode": mode, "type": kind, "sha": e.sha}
            if kind == "blob":
                item |= {"size": e.size, "url": f"{api}/git/blobs/{e.sha}"}
            elif kind == "tree":
                item["url"] = f"{api}/git/trees/{e.sha}"
            listed.append(item)
        return {"sha": sha, "url": f"{api}/git/trees/{sha}", "tree": listed, "truncated": False}

    def commit(self, repo: Repo, c: CommitInfo) -> Json:
        """commit (as in ``GET /commits/{sha}``), without files or stats.

        ``author`` and ``committer`` (the GitHub accounts) are null: the forge does not
        match commit emails to users.
        """
        api, html = self.links.api(repo), self.links.html(repo)
        return {
            "url": f"{api}/commits/{c.sha}",
            "sha": c.sha,
            "node_id": node_id("Commit", f"{repo.id}:{c.sha}"),
            "html_url": f"{html}/commit/{c.sha}",
            "comments_url": f"{api}/commits/{c.sha}/comments",
            "commit": {
                "url": f"{api}/git/commits/{c.sha}",
                "author": {
                    "name": c.author.name,
                    "email": c.author.email,
                    "date": utc(c.authored_at),
                },
                "committer": {
                    "name": c.committer.name,
                    "email": c.committer.email,
                    "date": utc(c.committed_at),
                },
                "message": c.message,
                "comment_count": 0,
                "tree": {"sha": c.tree, "url": f"{api}/git/trees/{c.tree}"},
                "verification": self.verification(repo, c.sha),
            },
            "author": None,
            "committer": None,
            "parents": [
                {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{html}/commit/{p}"}
                for p in c.parents
            ],
            "files": [],
        }

    def branch(self, repo: Repo, name: str, head: CommitInfo, *, protected: bool) -> Json:
        """branch-with-protection; a protected branch requires the repo's checks."""
        api = self.links.api(repo)
        url = f"{api}/branches/{quote(name)}"
        contexts = [c.name for c in repo.required_checks if c.required] if protected else []
        return {
            "name": name,
            "commit": self.commit(repo, head),
            "_links": {"self": url, "html": f"{self.links.html(repo)}/tree/{quote(name)}"},
            "protected": protected,
            "protection": {
                "enabled": protected,
                "required_status_checks": {
                    "enforcement_level": "non_admins" if protected else "off",
                    "contexts": contexts,
                    "checks": [{"context": c, "app_id": None} for c in contexts],
                },
            },
            "protection_url": f"{url}/protection",
        }

    def push_commit(self, repo: Repo, c: CommitInfo, *, distinct: bool = True) -> Json:
        """One commit of a ``push`` payload (its time keeps the author's offset)."""
        return {
            "id": c.sha,
            "tree_id": c.tree,
            "distinct": distinct,
            "message": c.message,
            "timestamp": c.authored_at,
            "url": f"{self.links.html(repo)}/commit/{c.sha}",
            "author": {"name": c.author.name, "email": c.author.email},
            "committer": {"name": c.committer.name, "email": c.committer.email},
            "added": list(c.added),
            "removed": list(c.removed),
            "modified": list(c.modified),
        }
