"""What a lock file holds, and what regenerating it changed.

Read for :mod:`app.sessions.relock`: ``uv.lock``'s packages, or a requirements file's
``name==version`` lines, each with where it comes from (its source and its files'
hashes), so a regenerated lock can be checked before it is taken: the package at the
fixed version or later, every name and version one, no other package from elsewhere.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import PurePosixPath

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version


def locked(path: str, text: str) -> dict[str, set[tuple[str, str]]]:
    """``{canonical name: {(version, source)}}`` of a lock: ``uv.lock``'s packages (a
    package locked twice for two Pythons has two; the source is where it comes from and
    its artifacts' hashes), or a compiled requirements file's ``name==version`` lines
    (the source: their ``--hash`` values). Raises ValueError for a name or version that
    is not one: such text never reaches the PR body or the score."""
    found: dict[str, set[tuple[str, str]]] = {}
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
    try:
        before, after = locked(path, old), locked(path, new)
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        return f"`{path}` (before or after uv) cannot be read as a lock: {exc}"
    want = canonicalize_name(package)
    if want not in after:
        return f"the regenerated `{path}` does not lock {package} at all"
    for version, _ in sorted(after[want]):
        try:
            low = Version(version) < Version(fixed)
        except InvalidVersion:
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
    if moved:
        return (
            f"the regenerated `{path}` takes {', '.join(moved[:5])} from another source at "
            "the same version: the package index the setup phase sees is not the one the "
            "lock was made with (give Patchwarden the project's index, e.g. "
            "`UV_DEFAULT_INDEX`)"
        )
    return lines


def lowest_locked(texts: dict[str, str], package: str) -> str | None:
    """The lowest version of ``package`` the locks held before (what the bump moves from)."""
    want = canonicalize_name(package)
    found: list[Version] = []
    for path, text in texts.items():
        try:
            entries = locked(path, text).get(want, set())
        except (tomllib.TOMLDecodeError, ValueError):
            continue
        for version, _ in entries:
            try:
                found.append(Version(version))
            except InvalidVersion:
                continue
    return str(min(found)) if found else None
