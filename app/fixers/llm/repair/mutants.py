"""Small mechanical changes to a function, tried when every answer of the model missed.

A small model shown ``REPLACEMENTS = [("<", "&lt;"), ..., ("&", "&amp;")]`` and the test
it fails may write the function back unchanged in every sample, never moving ``&``
first; shown ``text.split(" ")`` it rewrites the function around it. Many one-token bugs
are a boundary (``<`` for ``<=``), an off-by-one, a unit conversion too many, a
parameter the function takes and never uses, a loop over a list it changes, an element
out of order. Program repair has long fixed these by trying each such change and
keeping what the tests accept (GenProg, PAR, TBar). Here they are
the repair's last round: no tokens, a test run each, and the same rule as for the
model's answers: the reproduction must pass and every test that passed must still pass.

A mechanical change fits weak tests easily, so one that passes is kept only when the
tests single it out, or a maintainer is shown the few that pass (:mod:`mechanical`).

Each change rewrites one node of the syntax tree in place, by its position in the
source, so the rest of the function keeps its layout and comments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.fixers.llm.answers import normalised, parse
from app.fixers.llm.repair.mutators import MUTATORS, Mutator
from app.fixers.llm.repair.spans import Source

MAX_MUTANTS = 60  # changes tried per target, in the order of MUTATORS


@dataclass(frozen=True)
class Mutant:
    """One change: the unit it rewrites ("" the function, else a constant or helper by
    name), that unit's new source, and what changed, for the pull request."""

    unit: str
    source: str
    what: str
    line: int  # in the unit's source, 1-based


def mutants(
    units: dict[str, str],
    *,
    limit: int = MAX_MUTANTS,
    kinds: Sequence[Mutator] = MUTATORS,
) -> list[Mutant]:
    """The distinct one-node changes of the units (the function first), in the order of
    how often such a change is the fix, at most ``limit``; ``kinds``: the mutators to
    use. The task's words play no part: every change is one a bug of any task may need."""
    seen: set[str] = set()
    out: list[Mutant] = []
    by_unit = []
    for name, source in units.items():
        tree = parse(source)
        if tree is not None:
            by_unit.append((name, Source(source, tree)))
            seen.add(f"{name}\0{normalised(source)}")
    for mutator in kinds:
        for name, src in by_unit:
            for edit in mutator(src):
                new = src.replaced(edit)
                key = f"{name}\0{normalised(new)}"
                if key in seen or parse(new) is None:
                    continue
                seen.add(key)
                line = edit.node.lineno  # type: ignore[attr-defined]
                out.append(Mutant(name, new, edit.what, line))
                if len(out) >= limit:
                    return out
    return out
