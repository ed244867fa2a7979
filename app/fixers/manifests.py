"""Where a Python project pins a dependency, and each place raised past a vulnerability
(:mod:`app.fixers.pins` raises one requirement).

A Dependabot alert names a package, its vulnerable range and the first patched version.
The places a project constrains it: ``requirements*.txt`` (and the files they include
with ``-r`` and ``-c``), ``pyproject.toml`` (``[project]`` dependencies and optional
dependencies, PEP 735 ``[dependency-groups]``, Poetry's dependency tables),
``setup.cfg`` (``install_requires``, ``extras_require``) and a literal
``install_requires`` in ``setup.py``. Each is edited in place, nothing else in its line
changes. A requirements file with ``--hash`` and a lock file (``uv.lock``,
``poetry.lock``) are listed in :attr:`Pins.locks`: their hashes come from their own
tool, never from here.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from app.fixers.interface import SKIP_DIRS
from app.fixers.pins import pins_in_lock, raised, raised_poetry
from app.sessions.files import read_text_confined, write_confined

MAX_FILE_BYTES = 1024 * 1024
MAX_INCLUDES = 20  # requirements files read by following -r / -c
LOCK_FILES = ("uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock")


@dataclass(frozen=True)
class Change:
    """One requirement raised: where, as it was, as it is now."""

    path: str
    line: int
    old: str
    new: str


@dataclass(frozen=True)
class Blocked:
    """A requirement that cannot be raised, and why (an upper bound, say)."""

    path: str
    line: int
    text: str
    why: str


@dataclass
class Pins:
    """What raising a package found and did in one tree."""

    changes: list[Change] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)
    locks: list[str] = field(default_factory=list)  # lock files that pin it too
    unchanged: list[str] = field(default_factory=list)  # "path:line" already safe
    edited: dict[str, str] = field(default_factory=dict)  # path -> its text, raised

    def write(self, tree: Path) -> None:
        """Every file raised, written into ``tree`` (its line endings kept)."""
        for rel, text in self.edited.items():
            write_confined(tree, rel, text.encode("utf-8"))


def raise_package(tree: Path, package: str, fixed: str, *, write: bool = True) -> Pins:
    """Every place ``tree`` constrains ``package``, raised in place to ``fixed``
    (``write=False``: found and raised in :attr:`Pins.edited` only)."""
    version = Version(fixed)
    found = Pins()
    for path in _requirement_files(tree):
        _raise_lines(tree, path, package, version, found)
    _raise_lines(tree, "setup.cfg", package, version, found, setup_cfg=True)
    _raise_pyproject(tree, package, version, found)
    _raise_setup_py(tree, package, version, found)
    for lock in LOCK_FILES:
        if pins_in_lock(_read(tree, lock), package, json_lock=lock == "Pipfile.lock"):
            found.locks.append(lock)
    if write:
        found.write(tree)
    return found


def _read(tree: Path, rel: str) -> str | None:
    """The file's text with its own line endings (CRLF stays CRLF); None when it is not
    a regular file inside the tree (no symlink on the way), too big or not UTF-8."""
    return read_text_confined(tree, rel, limit=MAX_FILE_BYTES)  # never written back cut


def _requirement_files(tree: Path) -> list[str]:
    """``requirements*.txt`` anywhere (but in dependency folders), and what they
    include with ``-r`` / ``-c``, inside the tree."""
    start = [
        p.relative_to(tree).as_posix()
        for p in sorted(tree.rglob("requirements*.txt"))
        if not SKIP_DIRS & set(p.relative_to(tree).parts)
    ]
    seen: list[str] = []
    queue = list(start)
    while queue and len(seen) < MAX_INCLUDES:
        rel = queue.pop(0)
        if rel in seen:
            continue
        seen.append(rel)
        text = _read(tree, rel) or ""
        for m in re.finditer(r"(?m)^\s*(?:-r|-c|--requirement|--constraint)[=\s]+(\S+)", text):
            included = (Path(rel).parent / m.group(1)).as_posix()
            resolved = (tree / included).resolve()
            if resolved.is_relative_to(tree.resolve()):
                queue.append(resolved.relative_to(tree.resolve()).as_posix())
    return seen


def _raise_lines(
    tree: Path, rel: str, package: str, fixed: Version, found: Pins, *, setup_cfg: bool = False
) -> None:
    """A file of one requirement per line (a requirements file, setup.cfg's lists)."""
    text = _read(tree, rel)
    if text is None:
        return
    if not setup_cfg and "--hash" in text:
        if any(_names(line, package) for line in text.splitlines()):
            found.locks.append(rel)  # compiled with hashes: its own tool rewrites it
        return
    lines = text.splitlines(keepends=True)
    spans = _cfg_requirements(lines) if setup_cfg else _txt_requirements(lines)
    for n, start, end in spans:
        line = lines[n - 1]
        body = line[start:end]
        new, why = raised(body, package, fixed)
        if new is not None:
            lines[n - 1] = line[:start] + new + line[end:]
            found.changes.append(Change(rel, n, body.strip(), new.strip()))
        elif why == "already safe":
            found.unchanged.append(f"{rel}:{n}")
        elif why:
            found.blocked.append(Blocked(rel, n, body.strip(), why))
    new_text = "".join(lines)
    if new_text != text:
        found.edited[rel] = new_text


def _txt_requirements(lines: list[str]) -> Iterator[tuple[int, int, int]]:
    """(line, start, end) of each requirement of a requirements file: not options
    (``-r``, ``-e``, ``--index-url``), not comments."""
    for n, line in enumerate(lines, 1):
        body = _split_comment(line.rstrip("\r\n"))[0].rstrip().rstrip("\\").rstrip()
        if body.strip() and not body.lstrip().startswith("-"):
            start = len(body) - len(body.lstrip())
            yield n, start, len(body)


CFG_KEYS = {"options": ("install_requires", "tests_require", "setup_requires")}


def _cfg_requirements(lines: list[str]) -> Iterator[tuple[int, int, int]]:
    """Requirements in setup.cfg: ``[options]`` install_requires (tests_require,
    setup_requires) and every list of ``[options.extras_require]``, on the key's line
    or the indented lines below it."""
    section, inside = "", False
    for n, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        body = _split_comment(line)[0].rstrip()
        header = re.match(r"\s*\[([^\]]+)\]", body)
        if header:
            section, inside = header.group(1).strip(), False
            continue
        key = re.match(r"([\w.-]+)\s*[=:]\s*", body) if body[:1] not in (" ", "\t") else None
        if key:
            inside = section == "options.extras_require" or key.group(1) in CFG_KEYS.get(
                section, ()
            )
            start = key.end()
        elif inside and body.strip():
            start = len(body) - len(body.lstrip())
        else:
            continue
        if inside and body[start:].strip():
            yield n, start, len(body)


def _names(line: str, package: str) -> bool:
    body = _split_comment(line)[0].split(";")[0].split("\\")[0].split("--")[0].strip()
    try:
        return canonicalize_name(Requirement(body).name) == canonicalize_name(package)
    except InvalidRequirement:
        return False


def _split_comment(line: str) -> tuple[str, str]:
    m = re.search(r"(^|\s)#", line)
    return (line[: m.start()], line[m.start() :]) if m else (line, "")


def _raise_pyproject(tree: Path, package: str, fixed: Version, found: Pins) -> None:
    text = _read(tree, "pyproject.toml")
    if text is None:
        return
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        found.blocked.append(Blocked("pyproject.toml", 1, "", "pyproject.toml does not parse"))
        return
    new_text = _raise_pep508(text, data, package, fixed, found)
    new_text = _raise_poetry(new_text, data, package, fixed, found)
    if new_text != text:
        found.edited["pyproject.toml"] = new_text


def _raise_pep508(
    text: str, data: dict[str, Any], package: str, fixed: Version, found: Pins
) -> str:
    """``text`` with ``package``'s requirement strings raised in PEP 621's dependencies,
    optional dependencies and PEP 735's dependency groups."""
    project = _table(data, "project")
    strings: list[str] = [*_listed_strings(project.get("dependencies"))]
    for group in _table(project, "optional-dependencies").values():
        strings += _listed_strings(group)
    for group in _table(data, "dependency-groups").values():
        strings += _listed_strings(group)
    new_text = text
    for s in dict.fromkeys(x for x in strings if isinstance(x, str)):
        new, why = raised(s, package, fixed)
        if new is None:
            if why and why != "already safe":
                found.blocked.append(Blocked("pyproject.toml", _line_of(text, s), s, why))
            elif why:
                found.unchanged.append(f"pyproject.toml:{_line_of(text, s)}")
            continue
        edited = new_text
        for a, b in reversed(_dependency_spans(new_text)):  # never [tool.isort] and the like
            part = edited[a:b]
            for quote in ('"', "'"):
                part = part.replace(f"{quote}{s}{quote}", f"{quote}{new}{quote}")
            edited = edited[:a] + part + edited[b:]
        if edited != new_text:
            found.changes.append(Change("pyproject.toml", _line_of(text, s), s, new))
            new_text = edited
    return new_text


def _raise_poetry(
    text: str, data: dict[str, Any], package: str, fixed: Version, found: Pins
) -> str:
    """``text`` with ``package``'s constraints raised in Poetry's dependency tables."""
    poetry = _table(_table(data, "tool"), "poetry")
    tables = [_table(poetry, "dependencies"), _table(poetry, "dev-dependencies")]
    tables += [_table(g, "dependencies") for g in _table(poetry, "group").values()]
    new_text = text
    for table in tables:
        for name, value in table.items():
            if canonicalize_name(name) != canonicalize_name(package):
                continue
            constraint = value.get("version") if isinstance(value, dict) else value
            if not isinstance(constraint, str):
                continue
            new, why = raised_poetry(constraint, fixed)
            pattern = re.compile(
                rf'(?m)^(\s*"?{re.escape(name)}"?\s*=\s*(?:\{{[^}}\n]*?version\s*=\s*)?)(["\']){re.escape(constraint)}\2'
            )
            m = pattern.search(new_text)
            line = new_text[: m.start()].count("\n") + 1 if m else 1
            if new is None:
                if why and why != "already safe":
                    found.blocked.append(Blocked("pyproject.toml", line, constraint, why))
                continue
            if m:
                q = m.group(2)
                new_text = new_text[: m.start()] + m.group(1) + q + new + q + new_text[m.end() :]
                found.changes.append(
                    Change("pyproject.toml", line, f"{name} = {constraint!r}", f"{name} = {new!r}")
                )
    return new_text


def _table(data: object, key: str) -> dict[str, Any]:
    """``data[key]`` where both are tables, else {} (a pyproject.toml may say anything)."""
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _listed_strings(value: object) -> list[str]:
    return [s for s in value if isinstance(s, str)] if isinstance(value, list) else []


_HEADER = re.compile(r"(?m)^[ \t]*\[\[?[ \t]*([\w.\-\"' ]+?)[ \t]*\]\]?[ \t]*(?:#[^\r\n]*)?\r?$")


def _dependency_spans(text: str) -> list[tuple[int, int]]:
    """Where pyproject.toml's PEP 621 and PEP 735 requirements are: ``[project]``'s
    ``dependencies`` array, and the ``[project.optional-dependencies]`` and
    ``[dependency-groups]`` tables."""
    headers = [
        (m.start(), m.end(), re.sub(r"[\"' ]", "", m.group(1))) for m in _HEADER.finditer(text)
    ]
    spans = []
    for i, (_start, end, name) in enumerate(headers):
        stop = headers[i + 1][0] if i + 1 < len(headers) else len(text)
        if name in ("project.optional-dependencies", "dependency-groups"):
            spans.append((end, stop))
        elif name == "project":
            m = re.search(r"(?m)^[ \t]*dependencies[ \t]*=[ \t]*\[", text[end:stop])
            if m:
                spans.append((end + m.start(), _closing(text, end + m.end() - 1)))
    return spans


def _closing(text: str, at: int) -> int:
    """Just past the ``]`` that closes the TOML array opened at ``at`` (strings and
    comments skipped)."""
    depth, i, quote = 0, at, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "#":
            i = text.find("\n", i)
            if i < 0:
                return len(text)
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _line_of(text: str, s: str) -> int:
    at = text.find(s)
    return text[:at].count("\n") + 1 if at >= 0 else 1


def _listed(node: ast.AST) -> list[ast.Constant]:
    """The literal strings of a list or tuple, or of a dict's values (never its keys:
    ``extras_require``'s are the extras' names)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if isinstance(node, ast.Dict):
        return [c for v in node.values for c in _listed(v)]
    return []


def _raise_setup_py(tree: Path, package: str, fixed: Version, found: Pins) -> None:
    """``install_requires=[...]`` (and ``extras_require``'s lists) where they are
    literal strings; a computed list is setup.py's own business."""
    text = _read(tree, "setup.py")
    if text is None:
        return
    try:
        module = ast.parse(text)
    except SyntaxError:
        return
    lines = text.splitlines(keepends=True)
    edits = []
    for node in ast.walk(module):
        if not isinstance(node, ast.keyword) or node.arg not in (
            "install_requires",
            "extras_require",
        ):
            continue
        for const in _listed(node.value):
            value = str(const.value)
            new, why = raised(value, package, fixed)
            line = const.lineno
            if new is None:
                if why and why != "already safe":
                    found.blocked.append(Blocked("setup.py", line, value, why))
                continue
            if const.lineno != const.end_lineno:
                continue
            edits.append((const, new))
            found.changes.append(Change("setup.py", line, value, new))
    for const, new in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        raw = lines[const.lineno - 1].encode()
        segment = raw[const.col_offset : const.end_col_offset].decode()
        quote = segment[-1]
        replaced = (
            raw[: const.col_offset] + f"{quote}{new}{quote}".encode() + raw[const.end_col_offset :]
        )
        lines[const.lineno - 1] = replaced.decode()
    new_text = "".join(lines)
    if new_text != text:
        found.edited["setup.py"] = new_text
