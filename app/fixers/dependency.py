"""The ``dependency`` fixer: a Dependabot alert's package raised past its vulnerability.

No model: :func:`app.fixers.manifests.raise_package` raises every place the project
constrains the package (requirements files and what they include, ``pyproject.toml``,
``setup.cfg``, a literal ``setup.py``) to the first patched version, each in its own
style. What it cannot do, it says, and then changes nothing:

* an ecosystem other than pip's, or an alert with no patched version yet;
* a lock file that pins the package too (``uv.lock``, ``poetry.lock``, a requirements
  file compiled with hashes): its hashes come from its own tool, which Patchwarden does
  not run yet — half a bump (manifest raised, lock still vulnerable) is worse than none;
* a constraint it cannot raise (an upper bound below the fix, a URL requirement, a
  Poetry constraint it cannot read);
* a manifest the alert names that it does not raise: the alert would stay open.

The session then builds the patched tree's own environment (its setup inputs changed)
and runs the tests with it: the outcome's :class:`~app.policy.evidence.Bump` tells it
so, and the policy scores the bump by its size.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from app.fixers.base import Fixer
from app.fixers.manifests import Pins, raise_package
from app.fixers.pins import bump_size, floor_of
from app.policy.evidence import Bump
from app.sessions.result import FixOutcome
from app.sessions.session import Advisory, Budget, FixContext, Task
from app.words import plural

ECOSYSTEMS = ("pip",)


class DependencyFixer(Fixer):
    name = "dependency"

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        alert = task.advisory
        if alert is None:
            return self.gave_up("no advisory: the dependency fixer only answers Dependabot alerts")
        refused = _refused(alert)
        if refused:
            return self.gave_up(refused, final=True)
        assert alert.first_patched is not None
        workspace.progress(f"fix: raise {alert.package} to {alert.first_patched}")
        pins = raise_package(workspace.tree, alert.package, alert.first_patched, write=False)
        stop = _stop(alert, pins)
        if stop:
            return self.gave_up(stop, final=True)  # nothing half-done: the tree as it was
        pins.write(workspace.tree)
        old = _lowest([floor_of(c.old) for c in pins.changes])
        size = bump_size(old, alert.first_patched)
        files = sorted({c.path for c in pins.changes})
        lines = [f"- `{c.path}:{c.line}`: `{c.old}` → `{c.new}`" for c in pins.changes]
        kept = (
            f"\n\nAlready at or past it: {', '.join(f'`{u}`' for u in pins.unchanged)}."
            if pins.unchanged
            else ""
        )
        cve = f", {alert.cve}" if alert.cve else ""
        return FixOutcome(
            fixer=self.name,
            summary=(
                f"Raised `{alert.package}` to {alert.first_patched}, the first version not "
                f"affected by {alert.id}{cve} (vulnerable: {alert.vulnerable_range}), in "
                f"{plural(len(pins.changes), 'place')}:\n" + "\n".join(lines) + kept
            ),
            commit_message=(
                f"Bump {alert.package} to {alert.first_patched} ({alert.id})\n\n"
                f"{alert.package} {alert.vulnerable_range} is affected by {alert.id}{cve}. "
                f"Raised in {', '.join(files)}.\n\nPatchwarden session, fixer dependency."
            ),
            bump=Bump(
                package=alert.package,
                old=old,
                new=alert.first_patched,
                size=size,
                advisory=alert.id,
                cve=alert.cve,
                severity=alert.severity,
                vulnerable_range=alert.vulnerable_range,
                url=alert.url,
                summary=alert.summary[:500],
                files=files,
            ),
        )


def _refused(alert: Advisory) -> str | None:
    """Why an alert cannot be answered with a bump at all, before the tree is read."""
    if alert.ecosystem not in ECOSYSTEMS:
        return (
            f"{alert.package} is a {alert.ecosystem or 'unknown'} package: the dependency "
            "fixer raises pip's (Python) requirements only; bump it by hand or with "
            "Dependabot's security updates"
        )
    if not alert.first_patched:
        return (
            f"no version of {alert.package} fixes {alert.id} yet: there is nothing to "
            "raise it to. The alert stays open until the advisory names one"
        )
    try:
        Version(alert.first_patched)
    except InvalidVersion:
        return f"the advisory's fixed version `{alert.first_patched}` is not a version"
    return None


def _stop(alert: Advisory, pins: Pins) -> str | None:
    """Why the bump found is not published: a lock file, a blocked place, or nothing."""
    package, fixed = alert.package, alert.first_patched
    if pins.locks:
        return (
            f"{package} is pinned in {', '.join(f'`{p}`' for p in pins.locks)} too, with "
            "hashes only its own tool writes (`uv lock --upgrade-package`, `poetry update`, "
            "`pip-compile --upgrade-package`); Patchwarden does not run those yet, and "
            "raising the manifests alone would leave the lock vulnerable. Nothing changed"
        )
    if pins.blocked:
        why = "; ".join(f"`{b.path}:{b.line}` `{b.text}`: {b.why}" for b in pins.blocked[:5])
        return f"{package} cannot be raised to {fixed} everywhere ({why}). Nothing changed"
    seen = {c.path for c in pins.changes} | {u.rsplit(":", 1)[0] for u in pins.unchanged}
    if pins.changes and alert.manifest and alert.manifest not in seen:
        return (
            f"the alert names `{alert.manifest}`, which this fixer does not raise (a file "
            f"it does not read, or one that does not name {package} as it expects); "
            "raising the other places would leave the alert open. Nothing changed"
        )
    if not pins.changes:
        where = f" ({', '.join(pins.unchanged[:5])})" if pins.unchanged else ""
        manifest = f" `{alert.manifest}`" if alert.manifest else ""
        return (
            f"nothing to change: no manifest of this tree allows {package} below {fixed}"
            f"{where}. The alert{manifest} closes by itself on GitHub's next scan"
            if pins.unchanged
            else f"no manifest here names {package} (the alert names{manifest or ' none'})"
        )
    return None


def _lowest(floors: list[str | None]) -> str | None:
    """The lowest version the manifests allowed before (the one the bump is measured from)."""
    known = []
    for f in floors:
        try:
            known.append(Version(f or ""))
        except InvalidVersion:
            continue
    return str(min(known)) if known else None
