"""The repair's mechanical rounds (:mod:`mechanical`) as a job runs them: on the
localiser's first suspect as soon as the model's first round on it missed under a
trusted judge (:func:`mechanical_first`), and on every suspect left when the model
missed everywhere; each target once."""

from __future__ import annotations

from collections.abc import Sequence

from app.fixers.llm.localize import Suspect, Symbol
from app.fixers.llm.repair.candidates import Candidate
from app.fixers.llm.repair.demands import unmet
from app.fixers.llm.repair.job import RepairRun, task_words, tests_named
from app.fixers.llm.repair.mechanical import mechanical
from app.fixers.llm.repair.mutators import MUTATORS, WEAK_JUDGE_MUTATORS
from app.fixers.llm.repair.splice import Target, target_of


async def mechanical_fix(
    job: RepairRun,
    suspects: Sequence[Suspect],
    must_pass: list[str],
    passed_before: set[str],
    *,
    weak: bool = False,
) -> tuple[Target, Candidate] | None:
    """Small mechanical changes to each suspect (:mod:`mechanical`), tried against the
    tests; the fix when exactly one change passes (left in the tree). ``weak``: one model
    test judges, so only the kinds it may judge are tried (:data:`WEAK_JUDGE_MUTATORS`)."""
    # Two changes of one target passed early: the tests cannot choose among one-node
    # changes, and another suspect's that passes alone is no surer (the helper's `32` as
    # `33` beside the function's `<` as `<=`).
    ambiguous = next((note for note in job.mechanized.values() if note), "")
    if ambiguous:
        job.report.mechanical_note = ambiguous
        return None
    for suspect in list({id(s): s for s in suspects}.values()):
        target = target_of(job.idx, suspect.symbol)
        if target is None or (job.demands and _names_none(job, suspect.symbol)):
            continue  # a small change to it raises nothing new
        if target.symbol.where in job.mechanized:
            continue  # tried after the model's first round on it
        winner, two = await _mechanical_on(job, target, must_pass, passed_before, weak)
        if winner is not None:
            return target, winner
        if two:
            break
    return None


async def mechanical_first(
    job: RepairRun, target: Target, must_pass: list[str], passed_before: set[str]
) -> Candidate | None:
    """The target's mechanical changes, tried as soon as the model's first round on it
    missed, when it is the localiser's first suspect (a model's pick may be the wrong
    function, where a one-node change could pass and be wrong) and the judge is trusted
    (the repository's own failing test, the issue's example, two model tests that
    agree): they cost no tokens, and where one of them is the fix the model's later
    rounds cost minutes on a real project (many more model calls and long answers
    before a mechanical change such as `13` added to `(11, 12)` is tried). A change
    the model wrote still goes first: its first round came before."""
    if job.demands and _names_none(job, target.symbol):
        return None  # a small change to it raises nothing new
    winner, _ = await _mechanical_on(job, target, must_pass, passed_before, False, early=True)
    return winner


async def _mechanical_on(
    job: RepairRun,
    target: Target,
    must_pass: list[str],
    passed_before: set[str],
    weak: bool,
    *,
    early: bool = False,
) -> tuple[Candidate | None, bool]:
    """The target's mechanical changes tested (once per target): the winner, and
    whether two changes passed (then the note says so)."""
    report = job.report
    job.ws.progress(f"fix: small mechanical changes to {target.symbol.qualname}")
    mech = await mechanical(
        job.ws, job.idx, target, words=task_words(job.task), must_pass=must_pass,
        passed_before=passed_before, kinds=WEAK_JUDGE_MUTATORS if weak else MUTATORS,
    )  # fmt: skip
    report.mechanical += mech.tried
    job.mechanized[target.symbol.where] = mech.ambiguous
    if mech.winner is not None:
        report.passed += 1
        report.target = target.symbol.qualname
        report.chosen = mech.chosen(target, tests_named(must_pass), early=early)
        return mech.winner[1], False
    if mech.ambiguous:
        report.mechanical_note = mech.ambiguous
    return None, bool(mech.ambiguous)


def _names_none(job: RepairRun, symbol: Symbol) -> bool:
    """Whether the suspect, as it is, names nowhere an exception the issue asks for."""
    lines = "\n".join(job.idx.lines(symbol))
    return bool(unmet(job.demands, [lines], job.idx, path=symbol.path))
