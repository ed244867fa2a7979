"""One Python requirement raised past a vulnerability, in its own style
(:mod:`app.fixers.manifests` finds them in a project's files).

The requirement is raised to the smallest version that is not vulnerable, the alert's
first patched one, and nothing else in it changes: ``==`` stays ``==``, a lower bound
is raised, ``~=`` and Poetry's ``^`` keep their form and width where that is safe,
extras and markers stay. An upper bound that excludes the fixed version cannot be
raised by a bot: the caller reports the place, it does not edit it.
"""

from __future__ import annotations

import json
import re

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from app.policy.evidence import bump_size

__all__ = ["bump_size", "floor_of", "pins_in_lock", "raised", "raised_poetry"]


def raised(text: str, package: str, fixed: Version) -> tuple[str | None, str]:
    """A PEP 508 requirement as written, raised so that it allows no version below
    ``fixed``; (None, why) when it cannot be or need not be ("" when it is about
    another package)."""
    try:
        req = Requirement(text.strip())
    except InvalidRequirement:
        return None, ""
    if canonicalize_name(req.name) != canonicalize_name(package):
        return None, ""
    if req.url:
        return None, f"it is installed from a URL ({req.url[:80]}): only its source can change"
    spec_text = str(req.specifier)
    if not spec_text:
        # A bare name takes whatever is newest: state the floor where it is written.
        at = _end_of_name(text, req)
        return text[:at] + f">={fixed}" + text[at:], ""
    new_specs, why = _raise_specifiers(spec_text, fixed)
    if new_specs is None:
        return None, why
    old_parts = [s.strip() for s in spec_text.split(",")]
    out = text
    for old, new in zip(old_parts, new_specs, strict=True):
        if old != new:
            out = _replace_spec(out, old, new)
    parts = [p for spec in new_specs for p in spec.split(",")]
    if not any(_floor(*p) for p in (_part(x) or ("", "") for x in parts)):
        # Only caps and exclusions (`<3`, `!=2.0`): the floor goes beside them.
        body = out.split(";", 1)
        body[0] = body[0].rstrip() + f",>={fixed}" + body[0][len(body[0].rstrip()) :]
        out = ";".join(body)
    return (out if out != text else None), ("" if out != text else "already safe")


def _end_of_name(text: str, req: Requirement) -> int:
    m = re.match(r"\s*[A-Za-z0-9._-]+\s*(\[[^\]]*\])?", text)
    return m.end() if m else len(text)


def _replace_spec(text: str, old: str, new: str) -> str:
    """``old`` (an operator and a version) as ``new``, whatever spacing it was written
    with (``>= 1.0``)."""
    op = re.match(r"[<>=!~]+", old)
    if op is None:
        return text
    version = old[op.end() :].strip()
    pattern = re.escape(op.group(0)) + r"\s*" + re.escape(version) + r"(?![\w.*+])"
    new_op = re.match(r"[<>=!~]+", new)
    assert new_op is not None
    m = re.search(pattern, text)
    if m is None:
        return text
    written = m.group(0)
    spacing = written[len(op.group(0)) : len(written) - len(version)]
    return text[: m.start()] + new_op.group(0) + spacing + new[new_op.end() :] + text[m.end() :]


def _raise_specifiers(spec_text: str, fixed: Version) -> tuple[list[str] | None, str]:
    """Each part of a constraint as it must be for no version below ``fixed``; None and
    why when that cannot be (an upper bound below it) or need not be."""
    parts = [p.strip() for p in spec_text.split(",") if p.strip()]
    read = [_part(p) for p in parts]
    if any(r is None for r in read):
        return None, "its version constraint could not be read"
    signs = [r for r in read if r is not None]
    if any(_floor(sign, v) is not None and _floor(sign, v) >= fixed for sign, v in signs):  # type: ignore[operator]
        return None, "already safe"
    out = []
    for part, (sign, version) in zip(parts, signs, strict=True):
        if sign in ("<", "<=") and not SpecifierSet(part).contains(fixed, prereleases=True):
            return None, f"its upper bound `{part}` excludes {fixed}, the first fixed version"
        if sign in ("==", "===") and version.endswith(".*"):
            series = version[:-2]
            width = len(series.split("."))
            if list(fixed.release[:width]) == [int(x) for x in series.split(".") if x.isdigit()]:
                out.append(f">={fixed},{part}")  # the same series, from the fixed release on
            else:  # the fixed release's series, from the fixed release on
                series = ".".join(map(str, (*fixed.release, 0, 0)[:width]))
                out.append(f">={fixed},=={series}.*")
        elif sign in ("==", "===", ">=", ">"):
            out.append(f"{'>=' if sign == '>' else sign}{fixed}")
        elif sign == "~=":
            out.append(f"~={_compatible(fixed, len(version.split('.')))}")
        else:  # != and the like: kept as written
            out.append(part)
    return out, ""


def _part(part: str) -> tuple[str, str] | None:
    m = re.match(r"(===|==|!=|~=|>=|<=|>|<)\s*(\S+)$", part)
    return (m.group(1), m.group(2)) if m else None


def _floor(sign: str, version: str) -> Version | None:
    """The lowest version a part allows, where it sets one."""
    if sign not in ("==", "===", ">=", ">", "~="):
        return None
    try:
        return Version(version.removesuffix(".*"))
    except InvalidVersion:
        return None


def _compatible(fixed: Version, width: int) -> str:
    """``~=`` as wide as it was written (``~=2.0`` → ``~=2.31``); where that would allow
    a release below the fixed one (2.31.1), with the fixed one as a floor beside it."""
    release = [*fixed.release, *[0] * width]
    if width < 2:
        return str(fixed)
    wide = ".".join(map(str, release[:width]))
    return f"{wide},>={fixed}" if any(release[width:]) else wide


def raised_poetry(constraint: str, fixed: Version) -> tuple[str | None, str]:
    """A Poetry constraint (``^2.0``, ``~2.1``, ``2.3.1``, ``>=2,<3``, ``*``) raised to
    ``fixed``, in its own form (``^2.0`` → ``^2.31.1``: the same major cap)."""
    c = constraint.strip()
    if c in ("*", ""):
        return f">={fixed}", ""
    m = re.fullmatch(r"(\^|~|==?)?\s*(\d[\w.]*)", c)
    if m:
        try:
            old = Version(m.group(2))
        except InvalidVersion:
            return None, f"`{c}` could not be read"
        if old >= fixed:
            return None, "already safe"
        return f"{m.group(1) or ''}{fixed}", ""
    new, why = raised(f"x{c}", "x", fixed)
    if new is None and not why:
        return None, f"Patchwarden cannot read the constraint `{c}`: raise it by hand"
    return (new[1:] if new else None), why


_SIGNED = re.compile(r"(===|==|>=|~=|>|\^|~)\s*((?:\d+!)?\d+(?:\.\d+)*)(?![\w.*!])")


def floor_of(written: str) -> str | None:
    """The lowest version a requirement as written allows (``requests>=2.0,<3`` →
    ``2.0``), or a Poetry one as :class:`~app.fixers.manifests.Change` writes it
    (``requests = '^2.31'`` → ``2.31``, a bare ``'2.3.1'`` is that version); None where
    it names no lower bound."""
    poetry = re.fullmatch(r"\s*[\w.\-]+\s*=\s*(['\"])(.*)\1\s*", written)
    text = poetry.group(2) if poetry else written.split(";")[0]  # not the markers
    if poetry and re.fullmatch(r"\s*\d+(?:\.\d+)*\s*", text):
        return text.strip()
    floors = []
    for m in _SIGNED.finditer(text):
        try:
            floors.append(Version(m.group(2)))
        except InvalidVersion:
            continue
    return str(max(floors)) if floors else None


def pins_in_lock(text: str | None, package: str, *, json_lock: bool) -> bool:
    """Whether a lock file pins ``package`` (names compared as PyPI does: canonical)."""
    if not text:
        return False
    want = canonicalize_name(package)
    if json_lock:  # Pipfile.lock: {"default": {name: ...}, "develop": {...}}
        try:
            data = json.loads(text)
        except ValueError:
            return True  # unreadable: it may pin it, and only its tool rewrites it
        sections = [data.get(k) for k in ("default", "develop")] if isinstance(data, dict) else []
        return any(
            isinstance(sec, dict) and want in {canonicalize_name(str(n)) for n in sec}
            for sec in sections
        )
    names = re.findall(r'(?m)^\s*name\s*=\s*"([^"]+)"', text)
    return want in {canonicalize_name(n) for n in names}
