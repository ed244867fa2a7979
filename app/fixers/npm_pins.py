"""Where an npm project pins a dependency, and each place raised past a vulnerability.

A Dependabot alert for the npm ecosystem names a package and its first patched
version. The places an npm project constrains it: the ``dependencies``,
``devDependencies`` and ``optionalDependencies`` of its ``package.json`` (the top one;
workspaces are not read yet), each range raised in its own style — ``^1.2.3`` →
``^1.2.6``, ``~1.2.3`` → ``~1.2.6``, ``1.2.3`` → ``1.2.6``, ``>=1.2.3`` → ``>=1.2.6``
— and nothing else of the file changed. A range this cannot read (``*``, ``1.x``, a
URL, ``git+…``, ``file:``, ``||``) is :class:`~app.fixers.manifests.Blocked`, said, and
nothing changes. ``package-lock.json`` (or ``npm-shrinkwrap.json``) is named in
:attr:`Pins.locks`: npm regenerates it in the setup phase (:mod:`app.sessions.relock`)
— for a package only the lock names (a transitive one), the lock alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from app.fixers.manifests import Blocked, Change, Pins
from app.sessions.files import read_text_confined
from app.sessions.lockfiles import NPM_LOCKS, locked_npm, semver_key

MAX_FILE_BYTES = 16 * 1024 * 1024
SECTIONS = ("dependencies", "devDependencies", "optionalDependencies")
_RANGE = re.compile(r"(?P<op>\^|~|>=|=|v)?\s*(?P<version>\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)")


def raised_range(spec: str, fixed: str) -> str | Blocked | None:
    """``spec`` raised to ``fixed`` in its own style; None when it already excludes every
    version below ``fixed``; a :class:`Blocked` (path and line left blank) when it cannot
    be read or raised."""
    found = _RANGE.fullmatch(spec.strip())
    if found is None:
        return Blocked("", 0, spec, "a range this fixer cannot raise (only ^, ~, >=, exact)")
    op, version = found["op"] or "", found["version"]
    if semver_key(version) >= semver_key(fixed):
        return None
    return f"{'' if op in ('=', 'v') else op}{fixed}"


def npm_floor(spec: str) -> str | None:
    """The lowest version a range as :func:`raised_range` reads it allows, or None."""
    found = _RANGE.fullmatch(spec.strip())
    return found["version"] if found else None


def raise_npm_package(tree: Path, package: str, fixed: str) -> Pins:
    """Every range of ``package`` in the top ``package.json`` raised to ``fixed`` (in
    :attr:`Pins.edited`), and the npm locks that hold it."""
    semver_key(fixed)  # a fixed version that is not one is refused before anything
    found = Pins()
    text = read_text_confined(tree, "package.json", limit=MAX_FILE_BYTES)
    if text is not None:
        _raise_manifest(text, package, fixed, found)
    for lock in NPM_LOCKS:
        lock_text = read_text_confined(tree, lock, limit=MAX_FILE_BYTES)
        if lock_text is None:
            continue
        try:
            held = locked_npm(lock_text)
        except ValueError as exc:
            why = f"{exc}: regenerate it with npm 7 or later (lockfileVersion 2 or 3)"
            found.blocked.append(Blocked(lock, 1, "", why))
            break
        if package in held:
            found.locks.append(lock)
        break  # npm reads the shrinkwrap when there is one, and not the other
    return found


def _raise_manifest(text: str, package: str, fixed: str, found: Pins) -> None:
    try:
        manifest = json.loads(text)
    except ValueError:
        found.blocked.append(Blocked("package.json", 1, "", "package.json is not JSON"))
        return
    edited = text
    for section in SECTIONS:
        ranges = manifest.get(section) if isinstance(manifest, dict) else None
        if not isinstance(ranges, dict) or not isinstance(ranges.get(package), str):
            continue
        spec = ranges[package]
        entry = re.compile(rf'("{re.escape(package)}"\s*:\s*")({re.escape(spec)})(")')
        line = _line_of(edited, entry)
        new = raised_range(spec, fixed)
        if isinstance(new, Blocked):
            found.blocked.append(Blocked("package.json", line, f"{section}: {spec}", new.why))
        elif new is None:
            found.unchanged.append(f"package.json:{line}")
        else:
            start = _section_start(edited, section)
            match = entry.search(edited, start)
            if match is None:
                found.blocked.append(Blocked("package.json", line, spec, "not found as written"))
                continue
            edited = edited[: match.start(2)] + new + edited[match.end(2) :]
            found.changes.append(Change("package.json", line, spec, new))
    if edited != text:
        found.edited["package.json"] = edited


def _section_start(text: str, section: str) -> int:
    at = re.search(rf'"{re.escape(section)}"\s*:\s*\{{', text)
    return at.end() if at else 0


def _line_of(text: str, pattern: re.Pattern[str]) -> int:
    match = pattern.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else 1
