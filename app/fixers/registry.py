"""Every fixer Patchwarden has, by name: one line per fixer class, whose ``record``
(:class:`~app.fixers.interface.FixerRecord`) says the rest.

Adding a fixer is one module (its class and record) and one line in :data:`CLASSES`.
From the records come the names ``patchwarden run --fixer`` takes and
:func:`app.fixers.choose.make_fixer` builds, the comment commands that ask for a fixer
by its word (``@patchwarden lint``), the configuration sections ``validate`` and the
schema check (``lint:``, ``revert:``), and :data:`KNOWN`, the names, kinds and sections
the policy accepts in ``weights.fixer``, ``behaviour.never_automerge`` and
``learn.categories``.
"""

from __future__ import annotations

from app.fixers.culprit import RevertFixer
from app.fixers.dependency import DependencyFixer
from app.fixers.fixer_policy import sections_model
from app.fixers.interface import Fixer, FixerRecord
from app.fixers.lint import LintFixer
from app.fixers.llm.strategy import LlmFixer
from app.fixers.scanning import ScanningFixer
from app.policy.policy_model import KnownFixers
from app.sessions.result import FixOutcome

CLASSES: tuple[type[Fixer], ...] = (
    LlmFixer,
    LintFixer,
    RevertFixer,
    DependencyFixer,
    ScanningFixer,
)

RECORDS: dict[str, FixerRecord] = {
    cls.record.name: cls.record for cls in CLASSES if cls.record is not None
}
SECTIONS: dict[str, type] = {
    r.section: r.settings for r in RECORDS.values() if r.section and r.settings
}
SETTINGS = sections_model(SECTIONS)  # the fixers' part of .github/patchwarden.yml
KNOWN = KnownFixers(
    names=tuple(RECORDS),
    kinds=tuple(dict.fromkeys(r.category for r in RECORDS.values() if r.category)),
    sections=tuple(SECTIONS),
    settings=SETTINGS,
)


def buildable() -> tuple[str, ...]:
    """The names a person can ask for (``run --fixer``), besides ``auto``."""
    return tuple(name for name, r in RECORDS.items() if r.build is not None)


def stamped(outcome: FixOutcome) -> FixOutcome:
    """``outcome`` with its fixer's record, when it was saved without one (a result an
    older Patchwarden stored) and the fixer is known; else as it is."""
    record = RECORDS.get(outcome.fixer)
    if record is None or outcome.about:
        return outcome
    return record.stamp(outcome)
