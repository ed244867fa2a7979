"""What one repair job carries — its context, its meter, what it has found out so far
(:class:`Report`, frozen into the session result's :class:`RepairReport`) — and the
steps that read it at the end: other tests as judges of the changes that missed
(:func:`last_judges`), mechanical changes (:func:`mechanical_fix`), and what the pull
request says (:func:`summary`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.fixers.llm import switches
from app.fixers.llm.bug_reason import reproduces
from app.fixers.llm.candidates import Candidate, candidates_of
from app.fixers.llm.demands import demanded, mentions
from app.fixers.llm.kept import keep
from app.fixers.llm.localize import Index, Suspect, frames_in, localize
from app.fixers.llm.mechanical import one_node_changes
from app.fixers.llm.reproduction import Reproduction, Sample, fresh_tests
from app.fixers.llm.spend import Meter
from app.fixers.llm.splice import Target
from app.fixers.llm.testruns import (
    Tests,
    failure_of,
    path_of_test,
    run_tests,
    source_of_test,
    try_change,
)
from app.fixers.llm.trim import asserted, evidence, failed_lines, model_asserts, without
from app.sessions.files import read_confined, write_confined
from app.sessions.fix_context import FixContext
from app.sessions.result import RepairReport, TranscriptEntry
from app.sessions.task import Task
from app.words import plural

TRANSCRIPT_ENTRY_CHARS = 4000


@dataclass
class Report:
    """What a repair found out so far (the fields of :class:`RepairReport`)."""

    suspects: list[str] = field(default_factory=list)
    picked: str = ""
    reproduction: str | None = None
    reproduction_note: str = ""
    kept: str | None = None
    kept_note: str = ""
    target: str | None = None
    rounds: int = 0
    samples: int = 0
    candidates: int = 0
    passed: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    chosen: str = ""
    mechanical: int = 0
    mechanical_note: str = ""
    masked: int = 0

    def frozen(self) -> RepairReport:
        return RepairReport(
            **{**self.__dict__, "dropped": dict(self.dropped), "failed": dict(self.failed)}
        )


@dataclass
class Job:
    """One task's repair: the context, the meter and what it has found out."""

    ws: FixContext
    task: Task
    meter: Meter
    idx: Index
    report: Report = field(default_factory=Report)
    transcript: list[TranscriptEntry] = field(default_factory=list)
    stopped: str | None = None  # why no more model calls may be made
    printed: dict[str, str] = field(default_factory=dict)  # the reproduction's base output
    # Candidates that failed the reproduction (its run comes first): tried again, in
    # full, under the other kept tests (:func:`other_judges`).
    missed: list[tuple[Target, Candidate]] = field(default_factory=list)
    # The first suspect's last prompt (and its prefill), asked again when a trusted
    # judge turned every change down; and every change tested, by its text.
    again: tuple[Target, list[dict[str, Any]], str] | None = None
    tried: set[str] = field(default_factory=set)
    # Exceptions the issue says the code should raise that the judging test does not
    # name: a change must name them (:mod:`demands`).
    demands: frozenset[str] = frozenset()
    one_node: dict[str, dict[str, str]] = field(default_factory=dict)  # by target
    # Targets whose mechanical changes were tried, and why none was kept if two passed.
    mechanized: dict[str, str] = field(default_factory=dict)
    # The localiser's suspects, "path::qualname": where a change may go (the scope).
    implicated: list[str] = field(default_factory=list)

    def one_node_changes(self, target: Target) -> dict[str, str]:
        """The target's one-node changes one model test may judge, worked out once."""
        name = f"{target.symbol.path}:{target.symbol.qualname}"
        if name not in self.one_node:
            words = task_words(self.task)
            self.one_node[name] = one_node_changes(self.idx, target, words=words)
        return self.one_node[name]

    def note(self, role: Any, content: str) -> None:
        if len(content) > TRANSCRIPT_ENTRY_CHARS:
            content = content[:TRANSCRIPT_ENTRY_CHARS] + "\n[... cut]"
        self.transcript.append(TranscriptEntry(role=role, content=content))


def changes_in(job: Job, target: Target, answers: Sequence[str], prefill: str) -> list[Candidate]:
    """The distinct changes a round's answers write (:func:`candidates_of`)."""
    dropped = job.report.dropped
    return candidates_of(job.idx, target, answers, prefill, dropped, demands=job.demands)


async def keep_too(
    job: Job, suspects: Sequence[Suspect], shown_by: Sequence[str], found: Reproduction | None
) -> set[str]:
    """The test of what the issue says must keep working (:mod:`kept`), written and
    passing on the base: its ids, which every change must keep passing. ``shown_by``:
    the tests that show the bug, and ``found``'s other kept tests (their inputs are not
    what must stay as it is, and the functions they call are those worth calling)."""
    paths = {p for p in (path_of_test(t, job.idx) for t in shown_by) if p}
    used = [(read_confined(job.ws.tree, p) or b"").decode(errors="replace") for p in paths]
    used += [source for source, _ in found.others] if found is not None else []
    texts = [job.task.title, *(d.text for d in job.task.documents)]
    kept = await keep(job.ws, texts, job.idx, suspects, used)
    if kept is None:
        return set()
    job.report.kept, job.report.kept_note = kept.path, kept.note
    return set(kept.ids)


def demands_of(job: Job, repro: str) -> frozenset[str]:
    """The exceptions the issue says the code should raise that the reproduction at
    ``repro`` (the model's test, or the issue's example) does not name."""
    test = (read_confined(job.ws.tree, repro) or b"").decode(errors="replace")
    texts = [job.task.title, *(d.text for d in job.task.documents)]
    asked = demanded(texts, known=job.idx.defines)
    return frozenset(n for n in asked if not mentions(test, n))


async def validate(
    job: Job, target: Target, candidate: Candidate, must_pass: list[str], passed_before: set[str]
) -> None:
    """The candidate tried in the sandbox (left in the tree when it passes): its verdict
    and output are set."""
    job.tried.add(candidate.text)
    candidate.verdict, candidate.output = await try_change(
        job.ws, job.idx, path=target.symbol.path, text=candidate.text,
        must_pass=must_pass, passed_before=passed_before,
    )  # fmt: skip


AGREED = 2  # answers of one round that wrote one change: tests written afresh may judge it


async def localise(job: Job) -> tuple[Tests | None, list[str], list[Suspect]]:
    """The tests as they are (which fail, and their tracebacks), and the suspects."""
    job.ws.progress("fix: the tests as they are")
    before = await run_tests(job.ws, name="repair-tests-before")
    failing = before.failing() if before is not None else []
    frames = [f for t in failing for f in frames_in(before.failures.get(t, ""))] if before else []
    sources = [source_of_test(job.ws.tree, t, job.idx) for t in failing]
    suspects = localize(job.idx, job.task, frames=frames, tests=[s for s in sources if s])
    job.report.suspects = [s.describe() for s in suspects]
    job.implicated = [f"{s.symbol.path}::{s.symbol.qualname}" for s in suspects]
    return before, failing, suspects


async def last_judges(
    job: Job,
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
    if switches.on("other-judges"):
        other = await other_judges(job, found.path, found.others, passed_before)
        if other is not None or job.stopped:
            return other
    agreed = any(c.votes >= AGREED for _, c in job.missed)
    if not found.strong and agreed and switches.on("fresh-judges"):
        fresh = await fresh_tests(job.ws, job.task, job.idx, suspects, sample, found)
        other = await other_judges(job, found.path, fresh, passed_before, votes=AGREED, afresh=True)
        if other is not None or job.stopped:
            return other
    if found.agree > 1 or not switches.on("trimmed-judge"):
        return None  # two tests that agree are not overruled, nor trimmed
    return await trimmed_judge(job, found.path, passed_before)


async def other_judges(
    job: Job,
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
    job: Job, repro: str, passed_before: set[str]
) -> tuple[Target, Candidate] | None:
    """The reproduction less the model's assertions that a change many answers agree on
    fails (:mod:`trim`), as long as at most half of them go, those it failed at on the
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


async def _still_shows(job: Job, repro: str, source: str) -> bool:
    """Whether the trimmed test still fails on the base for the bug's reason, at an
    assertion the model wrote (not only at the issue's own example's)."""
    base = await run_tests(job.ws, extra=[repro], name="repair-trimmed-base")
    shows, _ = reproduces(base, job.task, job.idx, source)
    return shows and bool(evidence(source, failed_lines(failure_of(base, repro), repro)))


def _judged_trimmed(job: Job, target: Target, winner: Candidate, gone: int, total: int) -> None:
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


def _judged_by_another(report: Report, winner: Candidate, why: str, *, afresh: bool) -> None:
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


def summary(job: Job, target: Target, winner: Candidate, repro: str | None) -> str:
    """What the pull request says the repair did: where, the reproduction, the
    candidates, and why this one."""
    report = job.report
    where = [d for d in report.suspects if d.startswith(f"{target.symbol.qualname} (")]
    lines = [f"Rewrote `{target.symbol.qualname}` in {target.symbol.path}.", ""]
    lines.append("Where: " + (where or [target.symbol.where])[0])
    if report.picked:
        lines.append(f"Picked by the model among the suspects: {report.picked}.")
    if repro:
        lines.append(f"Reproduction: {repro}, which {report.reproduction_note}.")
    if report.kept:
        lines.append(f"Kept as it was: {report.kept_note}.")
    lines.append(
        f"Candidates: {report.samples} answers in {plural(report.rounds, 'round')}"
        + (f" ({report.masked} of them with one line hidden)" if report.masked else "")
        + f", {plural(report.candidates, 'distinct change')} tested"
        + (f", then {plural(report.mechanical, 'mechanical change')}" if report.mechanical else "")
        + f", {report.passed} passed."
    )
    lines.append(f"Chosen: {report.chosen}.")
    if winner.imports:
        added = "; ".join(f"`{line}`" for line in winner.imports)
        lines.append(f"Imports it uses that the answer left out, added: {added}.")
    return "\n".join(lines)


def no_fix(job: Job, order: Sequence[Suspect], repro: str | None) -> str:
    """The honest answer: what was tried, on what, and why none of it is published."""
    report = job.report
    n, why = report.mechanical, report.mechanical_note
    tried = plural(report.candidates, "distinct change")
    where = ", ".join(s.symbol.qualname for s in order)
    then = f", then {plural(n, 'mechanical change')}" if n else ""
    judge = "the reproduction test pass" if repro else "the failing tests pass"
    stopped, why = f" ({job.stopped})" if job.stopped else "", f"; {why}" if why else ""
    return (
        f"no verified fix: {report.samples} answers, {tried} tried on {where}{then}; "
        f"none made {judge} with every other test still passing{stopped}{why}"
    )


def task_words(task: Task) -> str:
    """The task's own words, where a mechanical change finds the numbers it names."""
    return "\n".join([task.title, *(d.text for d in task.documents)])


def tests_named(tests: Sequence[str]) -> str:
    return ", ".join(f"`{t}`" for t in tests[:3]) + (" and more" if len(tests) > 3 else "")
