"""From a round's answers to the distinct changes worth a test run.

An answer that does not parse, changes nothing or changes the function's parameters is
dropped before anything runs (``dropped`` counts why); the rest are grouped by
normalised syntax tree, which counts the votes, spliced in by the function's line range
(:mod:`splice`), and given the imports they forgot (:mod:`imports`: ``raise
OutOfStock`` in a module that never imported it is a right change all the same).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from app.fixers.llm.answers import definitions, normalised
from app.fixers.llm.imports import defined_by, forgotten, module_name, with_import_lines
from app.fixers.llm.localize import Index
from app.fixers.llm.repair.docstrings import restored
from app.fixers.llm.repair.splice import (
    Target,
    changed_lines,
    keeps_parameters,
    splice,
    unit_sources,
)


@dataclass
class Candidate:
    """One distinct change: the file as it would be, and what its tests said."""

    text: str  # the file as it would be with the candidate spliced in
    votes: int = 1
    changed_lines: int = 0
    verdict: str = ""  # "passed", or why not
    imports: tuple[str, ...] = ()  # import lines added for names it uses
    one_node: str = ""  # what it changed, when it is also a one-node change (mechanical.py)


def candidates_of(
    idx: Index,
    target: Target,
    answers: Sequence[str],
    prefill: str,
    dropped: Counter[str],
) -> list[Candidate]:
    """The distinct changes the answers write, each with its votes."""
    original = unit_sources(idx.sources[target.symbol.path], target)
    names = [c[0] for c in target.constants]
    by_key: dict[str, Candidate] = {}
    for answer in answers:
        found = definitions(answer, target.symbol.name, constants=names, prefill=prefill)
        if found.function is None and found.problem == "no function" and found.constants:
            found = replace(found, function=original[""])  # only a helper rewritten
        if found.function is None:
            dropped[found.problem] += 1
            continue
        units = {**found.constants, "": found.function}
        if not all(keeps_parameters(original[k], v) for k, v in units.items()):
            dropped["changed its parameters"] += 1
            continue
        constants = {
            k: v for k, v in found.constants.items() if normalised(v) != normalised(original[k])
        }
        key = normalised(found.function) + "".join(
            normalised(constants[k]) for k in sorted(constants)
        )
        if normalised(found.function) == normalised(original[""]) and not constants:
            dropped["unchanged"] += 1
            continue
        if key in by_key:
            by_key[key].votes += 1
            dropped["duplicate"] += 1
            continue
        candidate = _spliced(idx, target, found.function, constants, original[""])
        if candidate is None:
            dropped["does not fit"] += 1
            continue
        by_key[key] = candidate
    return list(by_key.values())


def _spliced(
    idx: Index, target: Target, function: str, constants: dict[str, str], original: str
) -> Candidate | None:
    """The change in its file, with the imports it forgot and the docstring shown
    shortened put back whole (:mod:`docstrings`); None when it does not fit."""
    text = idx.sources[target.symbol.path]
    home = module_name(target.symbol.path).split(".")[0]
    whole = restored(function, original)
    spliced = splice(text, target, whole, constants) if whole is not None else None
    if spliced is None:
        return None
    added = forgotten(text, spliced, lambda name: _near(defined_by(idx, name), home))
    spliced = with_import_lines(spliced, added)
    return Candidate(
        text=spliced,
        changed_lines=changed_lines(text, spliced),
        imports=tuple(added),
    )


def _near(modules: list[str], home: str) -> list[str]:
    """Of the modules defining a name, those in the changed module's own top-level
    package (for a module at the top, those at the top): the product's code imports
    from itself, not from a test helper elsewhere."""
    if "." not in home and not any("." in m for m in modules):
        return modules
    return [m for m in modules if m.split(".")[0] == home]
