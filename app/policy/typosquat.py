"""Dependency names one edit away from a popular PyPI project or npm package: possible
typosquats.

A typosquat is a package published under a name a hurried hand (or an obeyed injection)
types instead of a popular one: ``reqeusts`` for ``requests``, ``urlib3`` for
``urllib3``. It installs and imports like the real thing and runs its own code at
install time, so tests that pass prove nothing about it.

The popular names are ``policies/popular-pypi.txt``, the 5,000 most downloaded PyPI
projects over 30 days, and ``policies/popular-npm.txt``, the 5,000 most downloaded npm
packages, each in download order (scripts/extract_popular_pypi.py and
scripts/extract_popular_npm.py say where they come from). A Python dependency the change
adds (an npm one: a ``package.json``'s) is a possible typosquat when its name (PEP 503's;
npm's as written, in lower case) is none of its ecosystem's 5,000 and is one edit (a
letter added, dropped, replaced, or two neighbours swapped) from one of the first
:data:`TARGETS` (the names worth squatting). Names shorter than :data:`MIN_LENGTH` are
left alone: most short names are one edit from another. Go and Cargo names are not
checked (no popular list here).

Pure: names in, names out; the list is package data read once.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib import resources
from typing import Literal

from app.policy.deps import DepChange, normalise

__all__ = ["MIN_LENGTH", "TARGETS", "near_popular", "possible_typosquats"]

TARGETS = 1000
MIN_LENGTH = 4
_PYTHON_MANIFESTS = ("pyproject.toml", "setup.py", "setup.cfg", "Pipfile")


Ecosystem = Literal["pypi", "npm"]


@functools.cache
def _popular(ecosystem: Ecosystem = "pypi") -> tuple[dict[str, int], dict[str, tuple[str, ...]]]:
    """Every popular name with its rank, and the first TARGETS by each one-letter deletion
    (and by themselves): a name one edit from a target shares a key with it."""
    data = resources.files("app").joinpath(f"policies_data/popular-{ecosystem}.txt")
    text = data.read_text()
    names = [line for line in text.splitlines() if line and not line.startswith("#")]
    rank = {name: n for n, name in enumerate(names)}
    keys: dict[str, list[str]] = {}
    for name in names[:TARGETS]:
        if len(name) >= MIN_LENGTH:
            for key in {name, *_deletions(name)}:
                keys.setdefault(key, []).append(name)
    return rank, {key: tuple(found) for key, found in keys.items()}


def _deletions(name: str) -> set[str]:
    return {name[:i] + name[i + 1 :] for i in range(len(name))}


def _one_edit(a: str, b: str) -> bool:
    """Damerau-Levenshtein distance exactly 1 (a letter added, dropped, replaced, or two
    neighbours swapped)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )  # fmt: skip
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = next((i for i in range(len(short)) if short[i] != long[i]), len(short))
    return short[i:] == long[i + 1 :]


def near_popular(name: str, ecosystem: Ecosystem = "pypi") -> str | None:
    """The popular project ``name`` is one edit from, if it is not popular itself."""
    wanted = normalise(name) if ecosystem == "pypi" else name.strip().lower()
    rank, keys = _popular(ecosystem)
    if wanted in rank or len(wanted) < MIN_LENGTH:
        return None
    candidates = {c for key in {wanted, *_deletions(wanted)} for c in keys.get(key, ())}
    near = [c for c in candidates if _one_edit(wanted, c)]
    return min(near, key=rank.__getitem__) if near else None


def is_python_manifest(path: str) -> bool:
    """A manifest of Python dependencies (deps.py reads a `.txt`/`.in` file only when it
    is a requirements or constraints file)."""
    name = path.rsplit("/", 1)[-1]
    return name in _PYTHON_MANIFESTS or name.endswith((".txt", ".in"))


def possible_typosquats(deps: Iterable[DepChange]) -> list[tuple[DepChange, str]]:
    """The direct Python and npm dependencies added in ``deps`` that may be typosquats,
    each with the popular name it is one edit from."""
    found = []
    for dep in deps:
        if dep.kind != "added" or not dep.direct:
            continue
        npm = dep.manifest.rsplit("/", 1)[-1] == "package.json"
        if npm or is_python_manifest(dep.manifest):
            near = near_popular(dep.name, "npm" if npm else "pypi")
            if near is not None:
                found.append((dep, near))
    return found
