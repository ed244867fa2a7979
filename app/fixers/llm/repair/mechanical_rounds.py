"""The repair's mechanical round (:mod:`mechanical`) as a job runs it: on the suspects
when the model's answers missed everywhere, each target once, until the tests single
out one change (or, judged by the repository's own tests, a few a maintainer chooses
among), more pass than that (then none is kept) or its time is up."""

from __future__ import annotations

import time
from collections.abc import Sequence

from app.fixers.llm.localize import Suspect
from app.fixers.llm.repair import switches
from app.fixers.llm.repair.candidates import Candidate
from app.fixers.llm.repair.job import RepairRun, task_words, tests_named
from app.fixers.llm.repair.mechanical import CHOICES, mechanical
from app.fixers.llm.repair.mutators import MUTATORS, WEAK_JUDGE_MUTATORS
from app.fixers.llm.repair.spectrum import line_scores
from app.fixers.llm.repair.splice import Target, target_of
from app.fixers.llm.repair.testruns import path_of_test, run_tests
from app.words import plural

# No change starts after the round's test runs took this long (one under way finishes).
MECHANICAL_SECONDS = 60.0


async def mechanical_fix(
    job: RepairRun,
    suspects: Sequence[Suspect],
    must_pass: list[str],
    passed_before: set[str],
    *,
    weak: bool = False,
    repository: bool = False,
) -> tuple[Target, Candidate] | None:
    """Small mechanical changes to each suspect (:mod:`mechanical`), tried against the
    tests for at most :data:`MECHANICAL_SECONDS`; the fix when every change of a suspect
    was tried and exactly one passes, or, where the repository's own failing tests judge
    (``repository``), no more than :data:`~mechanical.CHOICES` do (the first left in the
    tree, the others in the report's ``alternatives``). ``weak``: one model test judges,
    so only the kinds it may judge are tried (:data:`WEAK_JUDGE_MUTATORS`)."""
    seconds = MECHANICAL_SECONDS
    deadline = time.monotonic() + seconds  # the traced run below counts too
    spectra = await _line_spectra(job, suspects, must_pass)
    report, seen = job.report, set()
    for suspect in suspects:
        target = target_of(job.idx, suspect.symbol)
        if target is None or target.symbol.where in seen:
            continue
        seen.add(target.symbol.where)
        job.ws.progress(f"fix: small mechanical changes to {target.symbol.qualname}")
        mech = await mechanical(
            job.ws, job.idx, target, words=task_words(job.task), must_pass=must_pass,
            passed_before=passed_before, kinds=WEAK_JUDGE_MUTATORS if weak else MUTATORS,
            deadline=deadline, choices=CHOICES if repository else 1,
            lines=spectra.get(target.symbol.path),
        )  # fmt: skip
        report.mechanical += mech.tried
        if mech.winner is not None:
            report.passed += 1
            report.target = target.symbol.qualname
            report.chosen = mech.chosen(target, tests_named(must_pass))
            report.alternatives = mech.alternatives(target)
            return target, mech.winner[1]
        if mech.ambiguous:  # the tests cannot choose; another suspect's is no surer
            report.mechanical_note = mech.ambiguous
            return None
        if mech.out_of_time:
            n = len(mech.passed)
            passed = f"{plural(n, 'change')} passed" if n else ""
            untried = f": {passed}, but others were left untried" if n else ""
            said = f"the mechanical round stopped after {seconds:.0f} s of test runs{untried}"
            report.mechanical_note = "; ".join(filter(None, [report.mechanical_note, said]))
            return None
    return None


async def _line_spectra(
    job: RepairRun, suspects: Sequence[Suspect], must_pass: list[str]
) -> dict[str, dict[int, float]]:
    """How suspect each line of the suspects' files is: one run of the tests, traced
    line by line in those files, scored per line (:func:`~.spectrum.line_scores`); {}
    when the switch ``line-order`` is off or no failing test was traced. Where it is
    known, the mechanical changes on the lines the failing tests run, and the passing
    ones do not, are tried first: a change to a line a failing test never runs cannot
    make it pass. Only where the failing tests are the repository's, known by their ids
    (a test file the session wrote is judged by its file); the run counts against the
    round's time."""
    if not switches.on("line-order") or not all("::" in t for t in must_pass):
        return {}  # a test file the session wrote: its tests' ids are not known here
    paths = sorted({s.symbol.path for s in suspects})
    files = sorted({p for p in (path_of_test(t, job.idx) for t in must_pass) if p})
    if not files:
        return {}
    traced = await run_tests(job.ws, extra=files, name="repair-lines", trace=True, lines=paths)
    if traced is None:
        return {}
    spectra = {p: line_scores(traced.lines, set(must_pass), p) for p in paths}
    spectra = {p: scores for p, scores in spectra.items() if scores}
    if spectra:
        switches.fired("line-order")
    return spectra
