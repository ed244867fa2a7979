"""What a lock file holds, and what regenerating it changed.

Read for :mod:`app.sessions.relock`: ``uv.lock``'s packages, a requirements file's
``name==version`` lines, or an npm lock's ``packages``, each with where it comes from
(its source and its files' hashes, npm's integrity), so a regenerated lock can be
checked before it is taken: the package at the fixed version or later, every name and
version one, no other package from elsewhere; and for npm, whose lock moves no version
but the one asked for, no other package that was locked at another version.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import PurePosixPath

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

NPM_LOCKS = ("npm-shrinkwrap.json", "package-lock.json")


def locked(path: str, text: str) -> dict[str, set[tuple[str, str]]]:
    """``{canonical name: {(version, source)}}`` of a lock: ``uv.lock``'s packages (a
    package locked twice for two Pythons has two; the source is where it comes from and
    its artifacts' hashes), or a compiled requirements file's ``name==version`` lines
    (the source: their ``--hash`` values). Raises ValueError for a name or version that
    is not one: such text never reaches the PR body or the score."""
    found: dict[str, set[tuple[str, str]]] = {}
    if PurePosixPath(path).name in NPM_LOCKS:
        return locked_npm(text)
    if PurePosixPath(path).name == "uv.lock":
        for entry in tomllib.loads(text).get("package", []):
            if isinstance(entry, dict) and "name" in entry:
                where = repr([entry.get(k) for k in ("source", "sdist", "wheels")])
                _add(found, str(entry["name"]), str(entry.get("version", "")), where)
        return found
    # One logical line per requirement: its `\` continuations (the --hash lines) joined.
    for line in re.sub(r"\\\r?\n", " ", text).splitlines():
        words = line.split(" #", 1)[0].split()
        if not words or words[0].startswith(("-", "#")) or "==" not in words[0]:
            continue
        name, _, version = words[0].split(";")[0].partition("==")
        hashes = sorted(w for w in words if w.startswith("--hash"))
        _add(found, name.split("[")[0], version, " ".join(hashes))
    return found


_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def _add(found: dict[str, set[tuple[str, str]]], name: str, version: str, where: str) -> None:
    if not _NAME.fullmatch(name):
        raise ValueError("an entry's name is not a package name")
    if version:
        try:
            Version(version)
        except InvalidVersion:
            raise ValueError("an entry's version is not a version") from None
    found.setdefault(canonicalize_name(name), set()).add((version, where))


def lock_changes(path: str, old: str, new: str, package: str, fixed: str) -> list[str] | str:
    """What regenerating ``path`` changed, one line per package (``idna 3.6 → 3.7``,
    ``+ name 1.0``, ``- name 1.0``), or why the new lock is not taken."""
    npm = PurePosixPath(path).name in NPM_LOCKS
    try:
        before, after = locked(path, old), locked(path, new)
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        return f"`{path}` (before or after its tool) cannot be read as a lock: {exc}"
    want = package if npm else canonicalize_name(package)
    if want not in after:
        return f"the regenerated `{path}` does not lock {package} at all"
    for version, _ in sorted(after[want]):
        try:
            low = _below(version, fixed, npm=npm)
        except (InvalidVersion, ValueError):
            return f"the regenerated `{path}` locks {package} at `{version}`, not a version"
        if low:
            return f"the regenerated `{path}` still locks {package} {version}, below {fixed}"
    lines: list[str] = []
    moved: list[str] = []
    for name in sorted({*before, *after}):
        was = ", ".join(sorted({v for v, _ in before.get(name, set())}))
        now = ", ".join(sorted({v for v, _ in after.get(name, set())}))
        if name not in before:
            lines.append(f"+ {name} {now}".rstrip())
        elif name not in after:
            lines.append(f"- {name} {was}".rstrip())
        elif was != now:
            lines.append(f"{name} {was} → {now}")
        elif before[name] != after[name]:
            moved.append(name)
    others = [line.split()[0] for line in lines if "→" in line and line.split()[0] != want]
    if npm and others:
        return (
            f"the regenerated `{path}` moves {', '.join(others[:5])} too, not only {package}: "
            "npm was asked to update one package, and a lock that moves others is not taken"
        )
    if moved:
        return (
            f"the regenerated `{path}` takes {', '.join(moved[:5])} from another source at "
            "the same version: the package index the setup phase sees is not the one the "
            "lock was made with (give Patchwarden the project's index, e.g. "
            "`UV_DEFAULT_INDEX`)"
        )
    return lines


def _below(version: str, fixed: str, *, npm: bool) -> bool:
    if npm:
        return semver_key(version) < semver_key(fixed)
    return Version(version) < Version(fixed)


def lowest_locked(texts: dict[str, str], package: str) -> str | None:
    """The lowest version of ``package`` the locks held before (what the bump moves from)."""
    python: list[Version] = []
    npm: list[str] = []
    for path, text in texts.items():
        is_npm = PurePosixPath(path).name in NPM_LOCKS
        try:
            entries = locked(path, text).get(package if is_npm else canonicalize_name(package))
        except (tomllib.TOMLDecodeError, ValueError):
            continue
        for version, _ in entries or ():
            if is_npm:
                npm.append(version)  # a version of the lock, read by semver_key
                continue
            try:
                python.append(Version(version))
            except InvalidVersion:
                continue
    if npm:
        return min(npm, key=semver_key)
    return str(min(python)) if python else None


def semver_key(version: str) -> tuple[int, int, int, int, tuple[str, ...]]:
    """A semver version as a sortable key (a prerelease sorts before its release).
    Raises ValueError for text that is not ``MAJOR.MINOR.PATCH[-pre][+build]``."""
    core, _, pre = version.split("+", 1)[0].partition("-")
    parts = core.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"{version!r} is not a semver version")
    major, minor, patch = (int(p) for p in parts)
    return major, minor, patch, 0 if pre else 1, tuple(pre.split(".")) if pre else ()


def locked_npm(text: str) -> dict[str, set[tuple[str, str]]]:
    """``{name: {(version, source)}}`` of an npm lock (lockfileVersion 2 or 3: its
    ``packages``, one entry per place in ``node_modules``); the source is where npm takes
    it from and its integrity hash. Links (``file:`` packages of the tree) are left out.
    Raises ValueError for a lock that is not one, or an entry whose name or version is
    not one."""
    try:
        doc = json.loads(text)
    except ValueError:
        raise ValueError("not JSON") from None
    packages = doc.get("packages") if isinstance(doc, dict) else None
    if not isinstance(packages, dict):
        raise ValueError("not an npm lock of version 2 or later (no `packages`)")
    found: dict[str, set[tuple[str, str]]] = {}
    for place, entry in packages.items():
        if not place or not isinstance(entry, dict) or entry.get("link"):
            continue
        if "node_modules/" not in place and "version" not in entry:
            continue  # a workspace's folder of the project, not a package it installs
        name = str(entry.get("name") or place.rsplit("node_modules/", 1)[-1])
        if not _NPM_NAME.fullmatch(name):
            raise ValueError("an entry's name is not a package name")
        version = str(entry.get("version", ""))
        semver_key(version)
        where = f"{entry.get('resolved', '')} {entry.get('integrity', '')}"
        found.setdefault(name, set()).add((version, where))
    return found


_NPM_NAME = re.compile(r"(?:@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*", re.IGNORECASE)
