"""Dependencies a change adds, removes or moves to another version, read from the diff.

Manifests (direct dependencies): ``requirements*.txt``/``.in`` and ``constraints*.txt``,
``pyproject.toml`` (PEP 508 strings — PEP 621 and PEP 735 groups — and Poetry tables),
``setup.py`` (``install_requires``, ``extras_require``, ``tests_require``,
``setup_requires``), ``setup.cfg`` (the same options), ``Pipfile``, ``package.json``,
``go.mod``, ``Cargo.toml``. Lockfiles (what gets installed, transitive dependencies
included): ``poetry.lock``, ``uv.lock``, ``Cargo.lock``, ``Pipfile.lock``,
``package-lock.json``, ``npm-shrinkwrap.json``, ``yarn.lock``, ``go.sum``.

Only the diff's lines are read, so a name is "added" when an added line declares it and
no removed line of the same file did; "changed" when both did with other versions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from app.policy.diff import ChangedFile

DepKind = Literal["added", "changed", "removed"]


@dataclass(frozen=True)
class DepChange:
    manifest: str
    name: str
    kind: DepKind
    old: str | None = None  # version or specifier before
    new: str | None = None  # after
    direct: bool = True  # False: a lockfile entry


_PEP508 = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*"
    r"(?P<spec>(?:(?:===|==|>=|<=|~=|!=|>|<)\s*[^;,\s<>=!~]+\s*,?\s*)*)?\s*(?:@\s*(?P<url>\S+))?\s*(?:;.*)?$"
)
_QUOTED = re.compile(r"""["']([^"']+)["']""")
_TOML_KV = re.compile(r"""^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*=\s*(?P<value>.+?)\s*,?\s*$""")
_JSON_KV = re.compile(r"""^\s*"(?P<name>[^"]+)"\s*:\s*"(?P<value>[^"]*)"\s*,?\s*$""")
_NPM_SPEC = re.compile(
    r"^(?:[\^~<>=*]|\d|latest$|next$|npm:|workspace:|file:|link:|git|https?:|github:)"
)
_GO_REQ = re.compile(r"^\s*(?:require\s+)?(?P<name>[a-z0-9.-]+\.[a-z]+/\S+)\s+(?P<version>v\S+)")
_NOT_DEPS = {"python", "version", "name", "node", "npm", "yarn", "pnpm", "requires-python"}
# package.json keys whose values can look like version specs or URLs.
_NOT_NPM_DEPS = _NOT_DEPS | {
    "homepage",
    "url",
    "repository",
    "bugs",
    "main",
    "module",
    "types",
    "typings",
    "license",
    "description",
    "author",
    "email",
    "funding",
    "type",
    "browser",
    "bin",
}

_REQUIREMENTS = re.compile(
    r"(?:^|/)(?:[\w.-]*requirements[\w.-]*|constraints[\w.-]*|requirements/[\w.-]+)\.(?:txt|in)$"
)
# Words near a Python manifest's lines that say they are requirements.
_REQUIRES = re.compile(
    r"(?i)dependencies|dependency-groups|install_requires|extras_require|tests_require"
    r"|setup_requires|\brequires\b"
)
# setup.cfg keys that are not an extra's name ([metadata], [options])
_CFG_NOT_DEPS = frozenset(
    {
        *("name", "version", "description", "long_description", "author", "author_email"),
        *("maintainer", "license", "url", "project_urls", "classifiers", "keywords"),
        *("platforms", "python_requires", "packages", "package_dir", "zip_safe"),
        *("include_package_data", "py_modules", "scripts"),
    }
)
_SETUP_KEYWORD = re.compile(r"(?:install|tests|setup)_requires|extras_require")
LOCKFILES = (
    "poetry.lock",
    "uv.lock",
    "Cargo.lock",
    "Pipfile.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "go.sum",
)


def normalise(name: str) -> str:
    """PEP 503 for Python names; other ecosystems' names are kept as written."""
    return re.sub(r"[-_.]+", "-", name).lower()


def dependency_changes(f: ChangedFile) -> list[DepChange]:
    """What ``f``'s diff does to the dependencies it declares (empty for other files)."""
    name = PurePosixPath(f.path).name
    if f.binary:
        return []
    reader: Callable[[list[str], bool], dict[str, str]]
    if _REQUIREMENTS.search(f.path):
        reader = _requirements
    elif name == "pyproject.toml":
        reader = _pyproject
    elif name == "setup.py":
        reader = _setup_py
    elif name == "setup.cfg":
        reader = _setup_cfg
    elif name in ("Pipfile", "Cargo.toml"):
        reader = _toml_table
    elif name == "package.json":
        reader = _package_json
    elif name == "go.mod":
        reader = _go_mod
    elif name in LOCKFILES:
        new, old = _lockfile_sides(name, f.ordered)
        return _compare(f.path, new, old, direct=False)
    else:
        return []
    near = [*f.context, *(t for _, t in f.added_lines), *f.removed_lines]
    in_deps = (
        any(_REQUIRES.search(c) for c in near)
        if name in ("pyproject.toml", "setup.py", "setup.cfg")
        else any("dependencies" in c.lower() for c in f.context)
    )
    new = reader([t for _, t in f.added_lines], in_deps)
    old = reader(list(f.removed_lines), in_deps)
    return _compare(f.path, new, old, direct=True)


def _compare(
    path: str, new: dict[str, str], old: dict[str, str], *, direct: bool
) -> list[DepChange]:
    out: list[DepChange] = []
    for name in sorted(new.keys() | old.keys()):
        if name in new and name not in old:
            out.append(DepChange(path, name, "added", None, new[name], direct))
        elif name in old and name not in new:
            out.append(DepChange(path, name, "removed", old[name], None, direct))
        elif new[name] != old[name]:
            out.append(DepChange(path, name, "changed", old[name], new[name], direct))
    return out


def _pep508(text: str) -> tuple[str, str] | None:
    m = _PEP508.match(text)
    if not m:
        return None
    spec = (m.group("spec") or "").strip() or (m.group("url") or "")
    return normalise(m.group("name")), spec.replace(" ", "")


def _requirements(lines: list[str], _: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        text = line.split(" #", 1)[0].strip().removesuffix("\\").strip()  # pip-compile hashes
        if not text or text.startswith(("#", "-")):
            continue
        found = _pep508(text)
        if found:
            out[found[0]] = found[1]
    return out


def _pyproject(lines: list[str], in_deps: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        stripped = line.strip()
        for quoted in _QUOTED.findall(stripped):
            found = _pep508(quoted)
            # A quoted string is a requirement when it says a version, or when it sits
            # in a dependencies array (a bare name elsewhere may be a readme or a path).
            if found and (found[1] or (in_deps and stripped.startswith(('"', "'")))):
                out[found[0]] = found[1]
        if in_deps and not stripped.startswith(('"', "'")):
            out.update(_toml_table([line], True))
    return out


def _setup_py(lines: list[str], in_deps: bool) -> dict[str, str]:
    """``install_requires=["a>=1", ...]`` and the like: the quoted requirements on a line
    that names the keyword, and list items (a line that starts quoted) near one."""
    out: dict[str, str] = {}
    for line in lines:
        stripped = line.strip()
        keyword = _SETUP_KEYWORD.search(stripped)
        if keyword:
            rest = stripped[keyword.end() :]
        elif in_deps and stripped.startswith(('"', "'")):
            rest = stripped
        else:
            continue
        # an extra's name (`{"test": [...]}`) is a dict key, not a requirement
        quoted = [
            m.group(1) for m in _QUOTED.finditer(rest) if not re.match(r"\s*:", rest[m.end() :])
        ]
        for text in quoted:
            found = _pep508(text)
            if found and not found[0][0].isdigit():
                out[found[0]] = found[1]
    return out


def _setup_cfg(lines: list[str], in_deps: bool) -> dict[str, str]:
    """``install_requires =`` and its indented lines, ``extra = req`` under
    ``[options.extras_require]`` (INI: unquoted, one requirement a line)."""
    out: dict[str, str] = {}
    for line in lines:
        text = (
            line.split("#", 1)[0].split(";", 1)[0]
            if not line.lstrip().startswith(("#", ";"))
            else ""
        )
        stripped = text.strip()
        if not stripped or stripped.startswith("["):
            continue
        if "=" in stripped and not re.match(r"^[A-Za-z0-9._-]+\s*(?:[<>=!~]=|===)", stripped):
            key, _, value = stripped.partition("=")
            if not (in_deps or _SETUP_KEYWORD.search(key)) or key.strip() in _CFG_NOT_DEPS:
                continue
            stripped = value.strip()
        elif not (in_deps and line[:1].isspace()):
            continue
        found = _pep508(stripped) if stripped else None
        if found and not found[0][0].isdigit():
            out[found[0]] = found[1]
    return out


def _toml_table(lines: list[str], in_deps: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    if not in_deps:
        return out
    for line in lines:
        m = _TOML_KV.match(line)
        if not m or m.group("name").lower() in _NOT_DEPS:
            continue
        value = m.group("value")
        version = re.search(r"""version\s*=\s*["']([^"']*)["']""", value)
        quoted = _QUOTED.match(value)
        if version:
            out[normalise(m.group("name"))] = version.group(1)
        elif quoted:
            out[normalise(m.group("name"))] = quoted.group(1)
        elif value.startswith("{"):
            out[normalise(m.group("name"))] = value
    return out


def _package_json(lines: list[str], _: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        m = _JSON_KV.match(line)
        if m and m.group("name") not in _NOT_NPM_DEPS and _NPM_SPEC.match(m.group("value")):
            out[m.group("name")] = m.group("value")
    return out


def _go_mod(lines: list[str], _: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        m = _GO_REQ.match(line.split("//", 1)[0])
        if m:
            out[m.group("name")] = m.group("version")
    return out


def _lockfile_sides(
    name: str, ordered: Sequence[tuple[str, str]]
) -> tuple[dict[str, str], dict[str, str]]:
    """``name -> version`` pairs of a lockfile's new and old side (:func:`_sides`)."""
    new, old = _sides(ordered)
    return _lockfile(name, new), _lockfile(name, old)


def _sides(
    ordered: Sequence[tuple[str, str]],
) -> tuple[list[str | None], list[str | None]]:
    """A file's new and old side rebuilt from its hunks (context and each side's own
    lines, in order; None where a hunk starts), to be read whole: a version belongs to
    the entry name above it even where git shows either as context."""
    new: list[str | None] = []
    old: list[str | None] = []
    for kind, line in ordered:
        if kind in (" ", "@"):
            new.append(line if kind == " " else None)
            old.append(line if kind == " " else None)
        else:
            (new if kind == "+" else old).append(line)
    return new, old


_NPM_ENTRY = re.compile(r'^\s*"(?P<key>[^"]*)"\s*:\s*\{')
_NPM_FIELD = re.compile(r'^\s*"(?P<field>version|resolved|integrity)"\s*:\s*"(?P<value>[^"]*)"')


def resealed(f: ChangedFile) -> list[str]:
    """The packages of an npm lock (``package-lock.json``, ``npm-shrinkwrap.json``) whose
    integrity or source the diff changes while their version stays ("name version"):
    other bytes under the same name and version, which no update makes."""
    if f.binary or PurePosixPath(f.path).name not in ("package-lock.json", "npm-shrinkwrap.json"):
        return []
    new, old = (_npm_entries(side) for side in _sides(f.ordered))
    out = []
    for key in sorted(new.keys() & old.keys()):
        a, b = new[key], old[key]
        same = a.get("version") is not None and a.get("version") == b.get("version")
        moved = [k for k in ("integrity", "resolved") if k in a and k in b and a[k] != b[k]]
        if same and moved:
            out.append(f"{key.rsplit('node_modules/', 1)[-1]} {a['version']}")
    return out


def _npm_entries(lines: Sequence[str | None]) -> dict[str, dict[str, str]]:
    """Each entry's version, source and integrity, by its key (``node_modules/a``), as
    far as the side's lines show them."""
    out: dict[str, dict[str, str]] = {}
    current: str | None = None
    for line in lines:
        entry = _NPM_ENTRY.match(line) if line is not None else None
        field = _NPM_FIELD.match(line) if line is not None else None
        if line is None:
            current = None
        elif entry and entry.group("key") not in ("dependencies", "packages", "engines"):
            current = entry.group("key")
        elif field and current is not None:
            out.setdefault(current, {})[field.group("field")] = field.group("value")
    return out


def _lockfile(name: str, lines: Sequence[str | None]) -> dict[str, str]:
    """``name -> version`` pairs a lockfile's lines spell (None: a hunk starts)."""
    out: dict[str, str] = {}
    pending: str | None = None
    for line in lines:
        if line is None:
            pending = None
        elif name == "go.sum":
            parts = line.split()
            if len(parts) >= 2:
                out[parts[0]] = parts[1].removesuffix("/go.mod")
        else:
            what, value = _lock_line(name, line)
            if what == "name":
                pending = value
            elif what == "version" and pending:
                out[pending] = value
                pending = None
    return out


def _lock_line(name: str, line: str) -> tuple[str, str]:
    """What one lockfile line is: ``("name", n)``, ``("version", v)`` or ``("", "")``."""
    if name in ("poetry.lock", "uv.lock", "Cargo.lock"):
        m = re.match(r'^\s*name\s*=\s*"([^"]+)"', line)
        if m:
            return ("name", normalise(m.group(1)) if name != "Cargo.lock" else m.group(1))
        v = re.match(r'^\s*version\s*=\s*"([^"]+)"', line)
    elif name in ("package-lock.json", "npm-shrinkwrap.json", "Pipfile.lock"):
        m = re.match(r'^\s*"(?:node_modules/)*(?P<n>(?:@[^/"]+/)?[^/"]+)"\s*:\s*\{', line)
        if m and m.group("n") not in ("packages", "dependencies", "default", "develop", ""):
            return ("name", m.group("n"))
        v = re.match(r'^\s*"version"\s*:\s*"=*([^"]+)"', line)
    else:  # yarn.lock
        m = re.match(r'^"?(?P<n>@?[^@\s"]+)@', line)
        if m and not line.startswith(" "):
            return ("name", m.group("n"))
        v = re.match(r'^\s+version:?\s+"?([^"\s]+)"?', line)
    return ("version", v.group(1)) if v else ("", "")
