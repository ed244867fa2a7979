"""The repair's last round, without the model: each small mechanical change to the
target (:mod:`mutants`) is tested as a model's answer would be, and one is kept only
when the tests single it out.

The model's rounds came first and missed. A mechanical change costs no tokens, only a
test run: the failing or reproducing tests first (most changes fail them at once), then
all of them for the few that pass. A change that fits the tests is easy to find and may
be wrong (the tests are often one example), so if two different changes both pass, the
tests cannot tell which one fixes the bug. Judged by a test the session wrote (the
issue's example, the model's), neither is proposed. Judged by the repository's own
failing tests, a few that pass (:data:`CHOICES` at most) are the maintainer's to choose
among: the first tried is proposed, the others named beside it, and the policy keeps it
a draft (``tests_cannot_choose``); more than that, and the tests hardly constrain the
code: none is proposed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.fixers.llm.answers import normalised
from app.fixers.llm.localize import Index
from app.fixers.llm.repair.candidates import Candidate
from app.fixers.llm.repair.mutants import Mutant, mutants
from app.fixers.llm.repair.mutators import MUTATORS, WEAK_JUDGE_MUTATORS, Mutator
from app.fixers.llm.repair.splice import Target, changed_lines, splice, unit_sources
from app.fixers.llm.repair.testruns import try_change
from app.sessions.files import write_confined
from app.sessions.fix_context import FixContext
from app.words import plural

# Why only some kinds were tried: a change no model wrote needs a strong judge (the
# repository's own failing tests, the issue's own example, or two model tests agreeing),
# but for the kinds one model test may judge (mutators.py's WEAK_JUDGE_MUTATORS).
ONE_NODE_LIMIT = 200  # no test runs for these: the whole list, not the first 60

CHOICES = 3  # passing changes of one target a maintainer is shown to choose among

WEAK_JUDGE = (
    "one model-written test is too weak a judge for most mechanical changes: only a loop "
    "over a copy, an element moved or a string argument left out may be tried"
)


@dataclass
class Mechanical:
    """What the mechanical round found on one target."""

    tried: int = 0
    passed: list[tuple[Mutant, Candidate]] = field(default_factory=list)
    out_of_time: bool = False  # changes were left untried: one that passed may not be alone
    choices: int = 1  # how many passing changes may be proposed as one and its alternatives

    @property
    def winner(self) -> tuple[Mutant, Candidate] | None:
        if self.out_of_time or not 1 <= len(self.passed) <= self.choices:
            return None
        return self.passed[0]

    def alternatives(self, target: Target) -> list[str]:
        """The other changes that pass as well as the winner, each with its place."""
        return [f"{m.what} ({where(target, m)})" for m, _ in self.passed[1:]]

    def chosen(self, target: Target, tests: str) -> str:
        """Why the winner was chosen, for the pull request."""
        change = self.passed[0][0]
        said = (
            "a mechanical change, tried after the model's answers all missed: "
            f"{change.what} ({where(target, change)}); it makes {tests} pass and keeps "
            "every other test passing, "
        )
        others = self.alternatives(target)
        if not others:
            return said + f"the only one of {plural(self.tried, 'such change')} tried that does"
        return said + (
            f"as {plural(len(others), 'other change')} of the {self.tried} tried "
            f"{'does' if len(others) == 1 else 'do'} ({'; '.join(others)}): the tests cannot "
            "tell which one fixes the bug, so a maintainer chooses"
        )

    @property
    def ambiguous(self) -> str:
        """Why nothing was kept though changes passed ("" when no more than it may
        propose did)."""
        if len(self.passed) <= self.choices:
            return ""
        if self.choices == 1:
            a, b = (m.what for m, _ in self.passed[:2])
            return (
                f"two mechanical changes pass ({a}; {b}): the tests cannot tell which one "
                "fixes the bug, so neither is proposed"
            )
        return (
            f"more than {self.choices} mechanical changes pass: the tests hardly constrain "
            "this code, so none is proposed"
        )


async def mechanical(
    ws: FixContext,
    idx: Index,
    target: Target,
    *,
    must_pass: list[str],
    passed_before: set[str],
    kinds: Sequence[Mutator] = MUTATORS,
    deadline: float = math.inf,
    choices: int = 1,
) -> Mechanical:
    """Each change of the target (of ``kinds``) tested until ``deadline`` (of
    ``time.monotonic``); the tree is left with the winner in it, when every change was
    tried and at least one but no more than ``choices`` passed, and as it was otherwise."""
    path = target.symbol.path
    text = idx.sources[path]
    units = unit_sources(text, target)
    found = Mechanical(choices=max(1, choices))
    for mutant in mutants(units, kinds=kinds):
        function = units[""] if mutant.unit else mutant.source
        constants = {mutant.unit: mutant.source} if mutant.unit else {}
        spliced = splice(text, target, function, constants)
        if spliced is None:
            continue
        if time.monotonic() >= deadline:
            found.out_of_time = True
            break
        candidate = Candidate(text=spliced, changed_lines=changed_lines(text, spliced))
        found.tried += 1
        candidate.verdict = await try_change(
            ws, idx, path=path, text=spliced, must_pass=must_pass, passed_before=passed_before
        )
        if candidate.verdict != "passed":
            continue
        write_confined(ws.tree, path, text.encode())  # the next change starts from the base
        found.passed.append((mutant, candidate))
        if len(found.passed) > found.choices:
            break  # more than may be shown: nothing more to learn here
    winner = found.winner
    if winner is not None:
        write_confined(ws.tree, path, winner[1].text.encode())
    return found


def line_of(target: Target, mutant: Mutant) -> int:
    """The line of the file a change is on."""
    first = target.symbol.start
    for name, start, _end in target.constants:
        if name == mutant.unit:
            first = start
    return first + mutant.line - 1


def where(target: Target, mutant: Mutant) -> str:
    """The file and line a change is on."""
    return f"{target.symbol.path}:{line_of(target, mutant)}"


def one_node_changes(idx: Index, target: Target) -> dict[str, str]:
    """The target's one-node changes of the kinds one model test may judge, as whole
    files (normalised) and what each changed: an answer that writes one of them was
    written by two sources, the model and the mutation (``text.split(" ")`` as
    ``text.split()``, even when a single answer wrote it and a bigger change that more
    answers wrote passes the same tests)."""
    text = idx.sources[target.symbol.path]
    units = unit_sources(text, target)
    out: dict[str, str] = {}
    for mutant in mutants(units, kinds=WEAK_JUDGE_MUTATORS, limit=ONE_NODE_LIMIT):
        function = units[""] if mutant.unit else mutant.source
        constants = {mutant.unit: mutant.source} if mutant.unit else {}
        spliced = splice(text, target, function, constants)
        if spliced is not None:
            out.setdefault(normalised(spliced), mutant.what)
    return out


def chosen_note(winner: Candidate, order: list[Candidate], answers: str, tests: str) -> str:
    """How many answers wrote the winner, whether it went first as a one-node change
    (:func:`one_node_changes`) or was the smallest of those as many wrote, for the pull
    request; ``tests``: those it makes pass."""
    top = max(c.votes for c in order)
    said = f"{winner.votes} of {answers} wrote this change"
    said += " (the most)" if 1 < winner.votes == top else ""
    if winner.one_node:
        said += f", which is also a one-node change ({winner.one_node})"
        more = any(c.votes > winner.votes for c in order if not c.one_node)
        said += ", so it was tried before changes more answers wrote" if more else ""
    said += f"; it makes {tests} pass and keeps every other test passing"
    # Size chose it only over as many votes tried after it (smaller ones that failed
    # went before it and chose nothing).
    after = order[next(i for i, c in enumerate(order) if c is winner) + 1 :]
    if not winner.one_node and any(c.votes == winner.votes and not c.one_node for c in after):
        said += "; the smallest such change"
    return said
