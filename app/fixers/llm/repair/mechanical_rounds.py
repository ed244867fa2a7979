"""The repair's mechanical round (:mod:`mechanical`) as a job runs it: on the suspects
when the model's answers missed everywhere, each target once, until the tests single
out one change (or, judged by the repository's own tests, a few a maintainer chooses
among), more pass than that (then none is kept) or its time is up."""

from __future__ import annotations

import time
from collections.abc import Sequence

from app.fixers.llm.localize import Suspect
from app.fixers.llm.repair.candidates import Candidate
from app.fixers.llm.repair.job import RepairRun, tests_named
from app.fixers.llm.repair.mechanical import CHOICES, mechanical
from app.fixers.llm.repair.mutators import MUTATORS, WEAK_JUDGE_MUTATORS
from app.fixers.llm.repair.splice import Target, target_of
from app.words import plural

# No change starts after the round's test runs took this long (one under way finishes).
MECHANICAL_SECONDS = 60.0


async def mechanical_fix(
    job: RepairRun,
    suspects: Sequence[Suspect],
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
    deadline = time.monotonic() + seconds
    report, seen = job.report, set()
    for suspect in suspects:
        target = target_of(job.idx, suspect.symbol)
        if target is None or target.symbol.where in seen:
            continue
        seen.add(target.symbol.where)
        job.ws.progress(f"fix: small mechanical changes to {target.symbol.qualname}")
        mech = await mechanical(
            job.ws, job.idx, target, must_pass=job.must_pass,
            passed_before=job.passed_before, kinds=WEAK_JUDGE_MUTATORS if weak else MUTATORS,
            deadline=deadline, choices=CHOICES if repository else 1,
        )  # fmt: skip
        report.mechanical += mech.tried
        if mech.winner is not None:
            report.passed += 1
            report.target = target.symbol.qualname
            report.chosen = mech.chosen(target, tests_named(job.must_pass))
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
