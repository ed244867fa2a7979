"""What one repair job carries — its context, its meter, what it has found out so far
(:class:`Findings`, frozen into the session result's :class:`RepairReport`) — and the
steps around the rounds: the tests as they are and the suspects (:func:`localise`), the
model's answers (:func:`sample`), their changes (:func:`changes_in`) validated in the
sandbox (:func:`validate`), and what the pull request says (:func:`summary`)."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.fixers.llm.localize import Index, Suspect, Symbol, frames_in, localize
from app.fixers.llm.model_client import ModelClient
from app.fixers.llm.repair import switches
from app.fixers.llm.repair.candidates import Candidate, candidates_of
from app.fixers.llm.repair.mechanical import one_node_changes
from app.fixers.llm.repair.spectrum import ochiai
from app.fixers.llm.repair.splice import Target
from app.fixers.llm.repair.testruns import (
    Tests,
    run_tests,
    source_of_test,
    try_change,
)
from app.fixers.llm.spend import Meter
from app.sessions.fix_context import FixContext
from app.sessions.result import RepairReport, TranscriptEntry
from app.sessions.task import Task
from app.words import plural

TRANSCRIPT_ENTRY_CHARS = 4000
TOGETHER = 3  # the localiser's first suspects a target may take in with it
HOT = 0.8  # the temperature of every answer but a prompt's first (greedy)


@dataclass
class Findings:
    """What a repair found out so far (the fields of :class:`RepairReport`)."""

    suspects: list[str] = field(default_factory=list)
    reproduction: str | None = None
    reproduction_note: str = ""
    agreed: bool = False
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
    alternatives: list[str] = field(default_factory=list)
    too_long: list[str] = field(default_factory=list)
    fired: dict[str, int] = field(default_factory=dict)
    won_by: str = ""

    def frozen(self) -> RepairReport:
        return RepairReport(
            **{**self.__dict__, "dropped": dict(self.dropped), "failed": dict(self.failed)}
        )


@dataclass
class RepairRun:
    """One task's repair: the context, the meter and what it has found out."""

    ws: FixContext
    task: Task
    meter: Meter
    idx: Index
    report: Findings = field(default_factory=Findings)
    transcript: list[TranscriptEntry] = field(default_factory=list)
    stopped: str | None = None  # why no more model calls may be made
    printed: dict[str, str] = field(default_factory=dict)  # the reproduction's base output
    one_node: dict[str, dict[str, str]] = field(default_factory=dict)  # by target
    # The localiser's suspects, "path::qualname": where a change may go (the scope).
    implicated: list[str] = field(default_factory=list)
    # The judge, once a test shows the bug: the tests a change must make pass, and those
    # that passed on the base, which it must not break.
    must_pass: list[str] = field(default_factory=list)
    passed_before: set[str] = field(default_factory=set)

    def one_node_changes(self, target: Target) -> dict[str, str]:
        """The target's one-node changes one model test may judge, worked out once."""
        name = f"{target.symbol.path}:{target.symbol.qualname}"
        if name not in self.one_node:
            self.one_node[name] = one_node_changes(self.idx, target)
        return self.one_node[name]

    def note(self, role: Any, content: str) -> None:
        if len(content) > TRANSCRIPT_ENTRY_CHARS:
            content = content[:TRANSCRIPT_ENTRY_CHARS] + "\n[... cut]"
        self.transcript.append(TranscriptEntry(role=role, content=content))


def changes_in(
    job: RepairRun, target: Target, answers: Sequence[str], prefill: str
) -> list[Candidate]:
    """The distinct changes a round's answers write (:func:`candidates_of`)."""
    dropped = job.report.dropped
    return candidates_of(job.idx, target, answers, prefill, dropped)


def together(suspect: Suspect, suspects: Sequence[Suspect]) -> list[Symbol]:
    """The localiser's other first suspects, to be shown and fixed with ``suspect``
    (:func:`target_of` keeps those of its file): a real fix often changes two."""
    if not switches.on("together"):
        return []
    return [s.symbol for s in suspects[:TOGETHER] if s is not suspect]


async def validate(job: RepairRun, target: Target, candidate: Candidate) -> None:
    """The candidate tried in the sandbox against the job's judge (left in the tree when
    it passes): its verdict is set."""
    candidate.verdict = await try_change(
        job.ws, job.idx, path=target.symbol.path, text=candidate.text,
        must_pass=job.must_pass, passed_before=job.passed_before,
    )  # fmt: skip


async def localise(job: RepairRun) -> tuple[Tests | None, list[str], list[Suspect]]:
    """The tests as they are (which fail, and their tracebacks), and the suspects."""
    job.ws.progress("fix: the tests as they are")
    before = await run_tests(job.ws, name="repair-tests-before", trace=True)
    failing = before.failing() if before is not None else []
    named = named_tests(failing, job.task.words) if switches.on("named") else []
    if named and len(named) < len(failing):  # acted: the others fail for reasons of their own
        switches.fired("named")
    failing = named or failing
    frames = [f for t in failing for f in frames_in(before.failures.get(t, ""))] if before else []
    sources = [source_of_test(job.ws.tree, t, job.idx, whole=False) for t in failing]
    ran = ochiai(job.idx, before.reached, set(failing)) if before else {}
    tests = [s for s in sources if s]
    suspects = localize(job.idx, job.task, frames=frames, tests=tests, spectrum=ran)
    job.report.suspects = [s.describe() for s in suspects]
    job.implicated = [f"{s.symbol.path}::{s.symbol.qualname}" for s in suspects]
    return before, failing, suspects


def summary(job: RepairRun, target: Target, winner: Candidate, repro: str | None) -> str:
    """What the pull request says the repair did: where, the reproduction, the
    candidates, and why this one."""
    report = job.report
    where = [d for d in report.suspects if d.startswith(f"{target.symbol.qualname} (")]
    lines = [f"Rewrote `{target.symbol.qualname}` in {target.symbol.path}.", ""]
    lines.append("Where: " + (where or [target.symbol.where])[0])
    if repro:
        lines.append(f"Reproduction: {repro}, which {report.reproduction_note}.")
    lines.append(
        f"Candidates: {report.samples} answers in {plural(report.rounds, 'round')}"
        + f", {plural(report.candidates, 'distinct change')} tested"
        + (f", then {plural(report.mechanical, 'mechanical change')}" if report.mechanical else "")
        + f", {report.passed} passed."
    )
    lines.append(f"Chosen: {report.chosen}.")
    if winner.imports:
        added = "; ".join(f"`{line}`" for line in winner.imports)
        lines.append(f"Imports it uses that the answer left out, added: {added}.")
    return "\n".join(lines)


def no_fix(job: RepairRun, order: Sequence[Suspect], repro: str | None) -> str:
    """The honest answer: what was tried, on what, and why none of it is published."""
    report = job.report
    n, why = report.mechanical, report.mechanical_note
    tried = plural(report.candidates, "distinct change")
    where = ", ".join(s.symbol.qualname for s in order)
    then = f", then {plural(n, 'mechanical change')}" if n else ""
    judge = "the reproduction test pass" if repro else "the failing tests pass"
    stopped, why = f" ({job.stopped})" if job.stopped else "", f"; {why}" if why else ""
    long = "".join(f"; {said}" for said in report.too_long)
    return (
        f"no verified fix: {report.samples} answers, {tried} tried on {where}{then}; "
        f"none made {judge} with every other test still passing{stopped}{why}{long}"
    )


def named_tests(failing: Sequence[str], words: str) -> list[str]:
    """The failing tests the task names: by the test's own name (a test id's last part,
    its parameters left out) as a whole word of ``words``, and a module that does not
    import (its id has no ``::``) by its file's path. A red check names the tests
    it saw fail; the others failing here fail on the base for reasons of their own (the
    sandbox, the machine), and the fix is neither judged by them nor looked for in them."""
    named = []
    for test in failing:
        if "::" in test:  # a test: its own name
            name = re.escape(test.rsplit("::", 1)[-1].split("[", 1)[0])
        else:  # a module that does not import: its path (tests.test_x: tests/test_x.py)
            name = re.escape(test.replace(".", "/")) + r"\.py"
        if re.search(rf"(?<![\w/]){name}(?!\w)", words):
            named.append(test)
    return named


def tests_named(tests: Sequence[str]) -> str:
    return ", ".join(f"`{t}`" for t in tests[:3]) + (" and more" if len(tests) > 3 else "")


async def sample(
    client: ModelClient,
    job: RepairRun,
    messages: list[dict[str, Any]],
    *,
    k: int,
    prefill: str,
    start: int = 0,
) -> list[str]:
    """k answers to one prompt: the first greedy (unless ``start`` were drawn before),
    the rest hot (``n`` where the endpoint allows, else one request per new seed)."""
    asked = [*messages, {"role": "assistant", "content": prefill}] if prefill else messages
    job.note("user", messages[-1]["content"])
    answers: list[str] = []
    while len(answers) < k and job.stopped is None:
        stop = await job.meter.exceeded()
        if stop is not None or job.meter.usage.calls >= job.meter.budget.max_steps:
            job.stopped = stop or f"model call budget spent ({job.meter.budget.max_steps})"
            break
        greedy = not answers and not start
        started = time.monotonic()
        completion = await client.complete(
            asked,
            temperature=0.0 if greedy else HOT,
            n=1 if greedy else k - len(answers),
            seed=None if greedy else 1000 + start + len(answers),
        )
        await job.meter.add(completion, seconds=time.monotonic() - started)
        got = list(completion.choices or (completion.content,))
        answers += got[: k - len(answers)]
        for answer in got:
            job.note("assistant", answer if answer.startswith(prefill) else prefill + answer)
    return answers
