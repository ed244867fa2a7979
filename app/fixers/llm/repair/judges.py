"""The last judges of the repair: when no change passed the reproduction that a model's
own test alone backs, other tests judge the changes that missed — the other tests the
model wrote, tests written afresh for a change many answers agree on, and the
reproduction less the assertions such a change fails. A small model's test is wrong as
often as the code; two independent sources that agree are worth more than either.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.fixers.llm.localize import Suspect
from app.fixers.llm.repair import switches
from app.fixers.llm.repair.bug_reason import reproduces
from app.fixers.llm.repair.candidates import Candidate
from app.fixers.llm.repair.job import Findings, RepairRun
from app.fixers.llm.repair.reproduction import Reproduction, Sample, fresh_tests
from app.fixers.llm.repair.splice import Target
from app.fixers.llm.repair.testruns import failure_of, run_tests, try_change
from app.fixers.llm.repair.trimmed import asserted, evidence, failed_lines, model_asserts, without
from app.sessions.files import read_confined, write_confined
from app.words import plural

AGREED = 2  # answers of one round that wrote one change: tests written afresh may judge it


async def last_judges(
    job: RepairRun,
    found: Reproduction | None,
    suspects: Sequence[Suspect],
    sample: Sample,
    passed_before: set[str],
) -> tuple[Target, Candidate] | None:
    """When no change passed the reproduction a model's test alone backs: the other
    kept tests judge the changes that missed (:func:`other_judges`); then, when answers
    agree on a change that missed, a few tests written afresh judge it (a change written
    by many answers and a test written apart from them, which fails on the base for the
    bug's reason, are two independent sources that agree); last, unless two kept tests
    agree on what the code should do, the reproduction less the assertions such a change
    fails (:func:`trimmed_judge`). None without a reproduction."""
    if found is None or found.path is None:
        return None
    if switches.on("other-judges") and found.others:
        switches.fired("other-judges")
        other = await other_judges(job, found.path, found.others, passed_before)
        if other is not None or job.stopped:
            return _won(job, "other-judges", other)
    agreed = any(c.votes >= AGREED for _, c in job.missed)
    if not found.strong and agreed and switches.on("fresh-judges"):
        switches.fired("fresh-judges")
        fresh = await fresh_tests(job.ws, job.task, job.idx, suspects, sample, found)
        other = await other_judges(job, found.path, fresh, passed_before, votes=AGREED, afresh=True)
        if other is not None or job.stopped:
            return _won(job, "fresh-judges", other)
    if found.agree > 1 or not switches.on("trimmed-judge"):
        return None  # two tests that agree are not overruled, nor trimmed
    switches.fired("trimmed-judge")
    return _won(job, "trimmed-judge", await trimmed_judge(job, found.path, passed_before))


def _won(
    job: RepairRun, name: str, found: tuple[Target, Candidate] | None
) -> tuple[Target, Candidate] | None:
    """``found``, with the report saying which mechanism brought it."""
    if found is not None:
        job.report.won_by = name
    return found


async def other_judges(
    job: RepairRun,
    repro: str,
    others: tuple[tuple[str, str], ...],
    passed_before: set[str],
    *,
    votes: int = 1,
    afresh: bool = False,
) -> tuple[Target, Candidate] | None:
    """When no change passed the reproduction chosen, each other test the model wrote that
    failed on the base for the bug's reason judges the changes that failed the
    reproduction (each tried again in full: the other tests must pass too), the most voted
    first; the first that passes one wins, and that test becomes the reproduction (the
    file at ``repro``). A small model's test is wrong as often as the code (it may expect
    what the issue never said, and reject the right change many answers wrote); a change
    that passes another of its tests, written to the issue's words, and every test the
    repository had, goes to review as any other. Otherwise the chosen test is put back.
    The report says so. ``votes``: only changes that many answers of a round wrote;
    ``afresh``: the tests were written after every change missed (:func:`last_judges`)."""
    first = read_confined(job.ws.tree, repro)
    missed = sorted((m for m in job.missed if m[1].votes >= votes), key=lambda m: -m[1].votes)
    if first is None or not missed or not others:
        return None
    try:
        for n, (source, why) in enumerate(others, 2):
            job.ws.progress(f"fix: the changes that missed, under another reproduction ({n})")
            write_confined(job.ws.tree, repro, source.encode())
            job.ws.sandbox.prepare_writable(job.ws.tree)
            for target, candidate in missed:
                verdict, _ = await try_change(
                    job.ws,
                    job.idx,
                    path=target.symbol.path,
                    text=candidate.text,
                    must_pass=[repro],
                    passed_before=passed_before,
                )
                if verdict == "passed":
                    first = source.encode()  # it stays: the reproduction now
                    job.report.target = target.symbol.qualname
                    _judged_by_another(job.report, candidate, why, afresh=afresh)
                    return target, candidate
        return None
    finally:
        write_confined(job.ws.tree, repro, first)
        job.ws.sandbox.prepare_writable(job.ws.tree)


TRIMMED = 3  # agreed changes the trimmed reproduction may judge, the most voted first


async def trimmed_judge(
    job: RepairRun, repro: str, passed_before: set[str]
) -> tuple[Target, Candidate] | None:
    """The reproduction less the model's assertions that a change many answers agree on
    fails (:mod:`trimmed`), as long as at most half of them go, those it failed at on the
    base (what it was kept for) stay, and what is left still fails on the base at an
    assertion the model wrote: the change wins when it passes
    that and keeps every other test passing; the trimmed test becomes the reproduction.
    Otherwise the test is put back as it was."""
    first = read_confined(job.ws.tree, repro)
    agreed = sorted((m for m in job.missed if m[1].votes >= AGREED), key=lambda m: -m[1].votes)
    if first is None or not agreed:
        return None
    whole = first.decode()
    total = len(model_asserts(whole))
    shown = evidence(whole, failed_lines(job.printed.get(repro, ""), repro))
    if not shown:
        return None  # it was not kept for an assertion the model wrote
    try:
        for target, candidate in agreed[:TRIMMED]:
            source, output, gone = whole, candidate.output, 0
            while not job.stopped:
                lines = failed_lines(output, repro)
                trimmed = without(source, lines) if lines else None
                if trimmed is None or (gone + trimmed[1]) * 2 > total:
                    break
                if not shown <= asserted(trimmed[0]):
                    break  # what it was kept for stays
                source, gone = trimmed[0], gone + trimmed[1]
                job.ws.progress(f"fix: the reproduction less {plural(gone, 'assertion')}")
                write_confined(job.ws.tree, repro, source.encode())
                job.ws.sandbox.prepare_writable(job.ws.tree)
                if not await _still_shows(job, repro, source):
                    break
                verdict, output = await try_change(
                    job.ws, job.idx, path=target.symbol.path, text=candidate.text,
                    must_pass=[repro], passed_before=passed_before,
                )  # fmt: skip
                if verdict == "passed":
                    first = source.encode()  # it stays: the reproduction now
                    _judged_trimmed(job, target, candidate, gone, total)
                    return target, candidate
                if not verdict.startswith("test failed"):
                    break
        return None
    finally:
        write_confined(job.ws.tree, repro, first)
        job.ws.sandbox.prepare_writable(job.ws.tree)


async def _still_shows(job: RepairRun, repro: str, source: str) -> bool:
    """Whether the trimmed test still fails on the base for the bug's reason, at an
    assertion the model wrote (not only at the issue's own example's)."""
    base = await run_tests(job.ws, extra=[repro], name="repair-trimmed-base")
    shows, _ = reproduces(base, job.task, job.idx, source)
    return shows and bool(evidence(source, failed_lines(failure_of(base, repro), repro)))


def _judged_trimmed(
    job: RepairRun, target: Target, winner: Candidate, gone: int, total: int
) -> None:
    report = job.report
    report.passed += 1
    report.failed["test failed"] -= 1  # it failed the whole test, and passed the rest
    report.target = target.symbol.qualname
    report.reproduction_note += (
        f"; {gone} of the {plural(total, 'assertion')} the model wrote, which the change "
        f"{plural(winner.votes, 'answer')} agree on failed, taken out (what is left still "
        "fails on the base)"
    )
    report.chosen = (
        f"{plural(winner.votes, 'answer')} of one round wrote this change; it makes the "
        f"reproduction pass once {gone} of the {total} assertions the model wrote "
        f"{'is' if gone == 1 else 'are'} taken out, and keeps every other test passing"
    )


def _judged_by_another(report: Findings, winner: Candidate, why: str, *, afresh: bool) -> None:
    report.passed += 1
    report.failed["test failed"] -= 1  # it failed the first test, and passed this one
    which = "a test the model wrote afresh" if afresh else "another test the model wrote"
    report.reproduction_note = (
        f"fails on the base ({why}); it is {which}: no change passed "
        f"the one chosen first, which {report.reproduction_note}"
    )
    report.chosen = (
        f"{plural(winner.votes, 'answer')} wrote this change; it makes the reproduction pass "
        "and keeps every other test passing"
    )
