"""Dependency names one edit away from a popular PyPI project: possible typosquats.

A typosquat is a package published under a name a hurried hand (or an obeyed injection)
types instead of a popular one: ``reqeusts`` for ``requests``, ``urlib3`` for
``urllib3``. It installs and imports like the real thing and runs its own code at
install time, so tests that pass prove nothing about it.

The popular names are ``policies/popular-pypi.txt``: the 5,000 most downloaded PyPI
projects over 30 days, in download order (scripts/extract_popular_pypi.py says where
they come from). A Python dependency the change adds is a possible typosquat when its
PEP 503 name is none of those 5,000 and is one edit (a letter added, dropped, replaced,
or two neighbours swapped) from one of the first :data:`TARGETS` (the names worth
squatting). Names shorter than :data:`MIN_LENGTH` are left alone: most short names are
one edit from another. npm, Go and Cargo names are not checked (no popular list here).

Pure: names in, names out; the list is package data read once.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib import resources

from app.policy.deps import DepChange, normalise

__all__ = ["MIN_LENGTH", "TARGETS", "near_popular", "possible_typosquats"]

TARGETS = 1000
MIN_LENGTH = 4
_PYTHON_MANIFESTS = ("pyproject.toml", "setup.py", "setup.cfg", "Pipfile")


@functools.cache
def _popular() -> tuple[dict[str, int], dict[str, tuple[str, ...]]]:
    """Every popular name with its rank, and the first TARGETS by each one-letter deletion
    (and by themselves): a name one edit from a target shares a key with it."""
    text = resources.files("app").joinpath("policies_data/popular-pypi.txt").read_text()
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


def near_popular(name: str) -> str | None:
    """The popular project ``name`` is one edit from, if it is not popular itself."""
    wanted = normalise(name)
    rank, keys = _popular()
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
    """The direct Python dependencies added in ``deps`` that may be typosquats, each with
    the popular name it is one edit from."""
    found = []
    for dep in deps:
        if dep.kind == "added" and dep.direct and is_python_manifest(dep.manifest):
            near = near_popular(dep.name)
            if near is not None:
                found.append((dep, near))
    return found
