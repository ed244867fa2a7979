"""Spectrum-based fault localisation: which functions the failing tests run and the
passing ones do not.

A traced run of the repository's tests (the tracing plugin,
:mod:`app.sessions.selection`) says which of the tree's functions each test called.
A function that every failing test runs and no passing test does is the likeliest
place of a bug whose test fails by its output, with no frame of the faulty function in
the traceback (Ochiai's measure, as in spectrum-based fault localisation; the score
joins the localiser's other evidence, :func:`~app.fixers.llm.localize.localize`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from app.fixers.llm.localize import Index, Symbol
from app.words import plural


def ochiai(
    idx: Index, reached: Mapping[str, Sequence[tuple[str, int]]], failing: Collection[str]
) -> dict[Symbol, tuple[float, str]]:
    """Each function the failing tests ran, with its Ochiai score — ef / sqrt(F * (ef +
    ep)), where F tests failed, ef of them ran it and ep passing tests did — and the
    evidence in words. A function is known by its file and first line, as the tracing
    plugin reports it; {} when no failing test was traced."""
    at = {(s.path, s.start): s for s in idx.symbols}
    ef: Counter[Symbol] = Counter()  # how many failing tests ran each function
    ep: Counter[Symbol] = Counter()  # ... and how many passing ones
    for test, places in reached.items():
        (ef if test in failing else ep).update({at[p] for p in places if p in at})
    total = sum(t in failing for t in reached)
    return {
        s: (
            ef[s] / math.sqrt(total * (ef[s] + ep[s])),
            f"the failing tests run it ({ef[s]} of {total}; {plural(ep[s], 'passing test')})",
        )
        for s in ef
    }
