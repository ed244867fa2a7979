"""Path globs as policies write them, compiled once.

The rules, like ``.gitignore`` and ``CODEOWNERS``:

- a pattern with no ``/`` matches a file name at any depth (``Dockerfile*`` matches
  ``deploy/Dockerfile.prod``);
- a pattern with a ``/`` is anchored at the repository root (``docs/**``);
- ``*`` and ``?`` never cross a ``/``; ``**`` crosses any number of directories
  (``**/auth/**`` matches ``auth/x.py`` and ``src/app/auth/token.py``);
- ``[abc]`` is a character class; a trailing ``/`` means everything under a directory.

Matching is case-sensitive, as git is on Linux.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """One pattern as a regular expression over a repository-relative path."""
    glob = pattern.strip()
    if glob.endswith("/"):
        glob += "**"
    if glob.startswith("/"):
        glob = glob[1:]
    elif "/" not in glob:
        glob = "**/" + glob
    return re.compile(_translate(glob) + r"\Z")


class GlobSet:
    """Several patterns; :meth:`match` says which one matched a path first."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        # One expression, one group per pattern in order: an alternation is tried left
        # to right, so the group that matched is the first pattern that matches (and the
        # path is read once, not once per pattern). A glob's expression has no groups
        # of its own (only `(?:…)`), so group n+1 is pattern n.
        self._any = (
            re.compile("|".join(f"({compile_glob(p).pattern})" for p in self.patterns))
            if self.patterns
            else None
        )
        if self._any is not None and self._any.groups != len(self.patterns):
            raise ValueError(f"a glob in {self.patterns!r} compiled to a capturing group")

    def match(self, path: str) -> str | None:
        m = self._any.match(path) if self._any is not None else None
        return self.patterns[m.lastindex - 1] if m is not None and m.lastindex else None

    def __bool__(self) -> bool:
        return bool(self.patterns)
