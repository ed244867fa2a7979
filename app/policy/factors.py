"""The score's factors and hard rules read off the diff, as small named functions.

Each reads what is known about a change (``Scoring``) and adds to the ``Tally`` the
factors it finds (points, with the value measured and the reason) and the hard rules it
fires (the most each allows): protected paths and credentials, size per category,
things counted (deleted files, dependencies, removed tests...), possible typosquats, the
lockfile, the caps, new behaviour, what asked for the change and the repository's
record. The factors from what the session checked are in app/policy/checked.py;
app/policy/score.py runs both in the order of its table ``FACTORS``.
"""

from __future__ import annotations

from app.policy.behaviour import KINDS, SAYS, Behaviour
from app.policy.score_types import HISTORY_DAYS, Scoring, Tally, listed
from app.policy.typosquat import possible_typosquats
from app.words import plural


def diff_rules(s: Scoring, tally: Tally) -> None:
    """Hard rules on the diff itself: unreadable, cut short, empty, a protected path (a
    bot may never change one; a person may, with a maintainer's review), a credential."""
    features, rule = s.features, tally.rule
    if features.parse_error:
        rule("unreadable_diff", "reject", features.parse_error)
    if features.truncated:
        rule(
            "truncated_diff",
            "reject",
            "the diff is larger than Patchwarden reads whole, so credentials and protected "
            "paths cannot be ruled out",
        )
    if not features.files and not features.parse_error:
        rule("empty", "reject", "the change is empty")
    for f in features.protected:
        rule(
            "protected_path",
            "review" if s.human else "reject",
            f"changes `{f.path}`, protected by `{f.protected_by}` in the policy",
        )
    for hit in features.secrets:
        where = f"{hit.path}:{hit.line}" if hit.line else hit.path
        how = (
            f" (the value of `{hit.computed}` once the module is imported)" if hit.computed else ""
        )
        rule(
            "secret", "reject", f"adds what looks like a credential ({hit.kind}) at `{where}`{how}"
        )


def categories(s: Scoring, tally: Tally) -> None:
    """Size and kind of change, per category (its weight times touch + per 10 lines)."""
    w = s.w
    for name, stats in s.features.categories.items():
        category = s.policy.categories.get(name)
        weight = category.weight if category else 1.0
        raw = weight * (w.touch + w.per_10_lines * stats.lines / 10)
        tally.add(
            f"category:{name}",
            f"{plural(stats.files, 'file')}, +{stats.added} -{stats.removed}",
            min(raw, w.category_max),
            f"changes {name} files (weight {weight:g})",
        )


def counted(s: Scoring, tally: Tally) -> None:
    """Factors that count things: points each, the things named in the reason."""
    features, w = s.features, s.w
    deleted = [
        f.path
        for f in features.files
        if f.status == "removed" and f.path not in features.tests_deleted
    ]
    removed_fns = list(features.test_functions_removed)
    runner = s.verification.tests if s.verification is not None else None
    if runner is not None and len(runner.removed) > len(removed_fns):
        # Tests the runner saw on the base and not on the patch, if it saw more.
        removed_fns = list(runner.removed)
    new = features.deps("added")
    table: list[tuple[str, list[str], float, str]] = [
        ("deleted_files", deleted, w.deleted_file, "deletes"),
        ("renamed_files", [f"{f.old_path} → {f.path}" for f in features.files
                           if f.status == "renamed"], w.renamed_file, "renames"),
        ("binary_files", [f.path for f in features.files if f.binary], w.binary_file,
         "binary files nobody can review in the diff:"),
        ("executable_bit", [f.path for f in features.files if f.made_executable],
         w.executable_bit, "makes executable:"),
        ("new_dependencies", [f"{d.name} {d.new or ''}".strip() for d in new],
         w.new_dependency, "adds"),
        ("changed_dependencies", [f"{d.name} {d.old} → {d.new}"
                                  for d in features.deps("changed")],
         w.changed_dependency, "changes"),
        ("removed_dependencies", [d.name for d in features.deps("removed")],
         w.removed_dependency, "removes"),
        ("tests_deleted", list(features.tests_deleted), w.test_deleted, "deletes test files:"),
        ("tests_removed", removed_fns, w.test_removed, "removes tests:"),
        ("tests_skipped", list(features.skips_added), w.test_skipped,
         "adds skip/xfail markers at"),
    ]  # fmt: skip
    for factor, items, each, says in table:
        tally.add(factor, str(len(items)), len(items) * each, f"{says} {listed(items)}")


def typosquats(s: Scoring, tally: Tally) -> None:
    """A dependency one letter from a popular PyPI project: points, and a person looks."""
    squats = possible_typosquats(s.features.dependencies)
    tally.add(
        "typosquat_dependencies",
        str(len(squats)),
        len(squats) * s.w.typosquat_dependency,
        "adds " + listed([f"{d.name}` (one letter from `{near}`)" for d, near in squats]),
    )
    if squats:
        tally.rule(
            "typosquat",
            "review",
            "a dependency it adds is one letter from a popular PyPI project and is not one "
            f"itself: {listed([f'{d.name}` (not `{near}`?)' for d, near in squats])}; check "
            "it is the package meant",
        )


def lockfile(s: Scoring, tally: Tally) -> None:
    """Points per changed lock entry, up to a cap; an npm lock entry whose integrity or
    source changes while its version stays (other bytes under the same name and
    version, which no update makes) rejects."""
    locked = [d.name for d in s.features.dependencies if not d.direct]
    tally.add(
        "lockfile",
        f"{len(locked)} packages",
        min(len(locked) * s.w.changed_dependency, s.w.lockfile_max),
        f"the lockfile changes {listed(locked)}",
    )
    if s.features.resealed:
        tally.rule(
            "lock_resealed",
            "reject",
            f"the lock changes the integrity or source of {listed(list(s.features.resealed))} "
            "without changing its version: other bytes under the same package and version",
        )


def caps(s: Scoring, tally: Tally) -> None:
    """Over the policy's caps (files, changed lines, new dependencies): ``caps.over``."""
    features, cap = s.features, s.policy.caps
    over = []
    if len(features.files) > cap.files:
        over.append(f"{len(features.files)} files (cap {cap.files})")
    lines = features.lines_added + features.lines_removed
    if lines > cap.changed_lines:
        over.append(f"{lines} changed lines (cap {cap.changed_lines})")
    new = features.deps("added")
    if len(new) > cap.new_dependencies:
        over.append(f"{len(new)} new dependencies (cap {cap.new_dependencies})")
    if over:
        tally.rule("caps", cap.over, "over the policy's caps: " + "; ".join(over))


def behaviour(s: Scoring, tally: Tally) -> None:
    """A factor per kind of behaviour the change adds, and the rule that holds a
    fixer's change with any of them for a person (``behaviour.never_automerge``)."""
    by_kind: dict[str, list[Behaviour]] = {}
    for b in s.features.behaviours:
        by_kind.setdefault(b.kind, []).append(b)
    rules = s.policy.behaviour
    for kind in KINDS:
        found = by_kind.get(kind)
        if found:
            places = [f"{b.what}` at `{b.where}" if b.line else b.where for b in found]
            tally.add(
                f"behaviour:{kind}",
                plural(len(found), "place"),
                getattr(rules.weights, kind),
                f"adds {SAYS[kind]}: {listed(places)}",
            )
    v = s.verification
    fixer = v.fixer if v is not None else None
    held = v is not None and any(n in rules.never_automerge for n in v.weighed_as)
    if held and by_kind:
        kinds = ", ".join(SAYS[k] for k in KINDS if k in by_kind)
        tally.rule(
            "behaviour",
            "review",
            f"written by the {fixer} fixer, it adds {kinds}: a maintainer reviews that "
            "(behaviour.never_automerge)",
        )


def asked_by(s: Scoring, tally: Tally) -> None:
    """GitHub's own security alert holds the change for a maintainer where its
    ``alerts.<kind>.mode`` says review; a person's change (no session checked it) is
    scored from its diff, with ``weights.fixer.human``."""
    alert = s.trigger.alert if s.trigger is not None else None
    if alert is None:
        if s.verification is None:  # a fixer's change has its fixer's points instead
            why = "a person's change, scored from its diff alone"
            tally.add("fixer", "human", s.w.fixer["human"], why)
        return
    if getattr(s.policy.alerts, alert).mode == "review":
        what = "Dependabot" if alert == "dependabot" else "code scanning"
        tally.rule(
            "alert_mode",
            "review",
            f"a maintainer approves every {what} fix (`alerts.{alert}.mode`: review)",
        )


def reverted_recently(s: Scoring, tally: Tally) -> None:
    """Patchwarden's recent merges here that were reverted: caution, up to a cap."""
    n = s.history.reverted_recently if s.history is not None else 0
    if n:
        tally.add(
            "reverted_recently",
            str(n),
            min(n * s.w.reverted_recently, s.w.reverted_recently_max),
            f"{plural(n, 'change')} Patchwarden merged here in the last {HISTORY_DAYS} days "
            f"{'was' if n == 1 else 'were'} reverted",
        )
