"""The llm fixer's ``repair`` strategy: the system localises, reproduces, samples,
validates and chooses; the model only writes whole corrected functions, among which
the tests choose (as Agentless does: a small model cannot plan a tool loop).

1. **Localise** without the model (:mod:`testruns`, :mod:`localize`): the failing tests'
   frames and what they run, names the task cites, BM25 over a symbol index.
2. **Reproduce** when no test fails yet (:mod:`reproduction`): a test from the issue's
   example, kept only if it fails on the base for the bug's reason.
3. **Sample**: the model picks the suspect to try first (:mod:`pick`); one prompt with
   the function's source and what it reads and calls, the failing test and its output,
   asks for the whole corrected function, k times (the first greedy). Answers that do
   not parse, change nothing or rename it are dropped; the rest are grouped by syntax
   tree (the votes), spliced in by line range (:mod:`splice`).
4. **Validate** in the sandbox: the failing and reproducing tests first, then all; one
   that breaks a test that passed before is out.
5. **Choose**: the most voted passing change, the smallest among equals. When a round
   misses: a round showing the misses, a cloze round (:mod:`hidden_line`), the last
   resorts (:meth:`RepairFixer._last_resorts`); each is a switch (:mod:`switches`).

Nothing verified, nothing proposed: an honest answer, never a pull request.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.config import Price
from app.fixers.interface import Audit, no_audit
from app.fixers.llm.answers import normalised
from app.fixers.llm.localize import Index, Suspect, index
from app.fixers.llm.model_client import ModelClient, ModelError
from app.fixers.llm.repair import hidden_line, switches
from app.fixers.llm.repair.candidates import Candidate
from app.fixers.llm.repair.guards import restored
from app.fixers.llm.repair.job import (
    RepairRun,
    changes_in,
    demands_of,
    keep_too,
    localise,
    no_fix,
    sample,
    summary,
    tests_named,
    together,
    validate,
)
from app.fixers.llm.repair.judges import last_judges
from app.fixers.llm.repair.mechanical import WEAK_JUDGE, chosen_note
from app.fixers.llm.repair.mechanical_rounds import mechanical_first, mechanical_fix
from app.fixers.llm.repair.pick import order_of
from app.fixers.llm.repair.prompt import BUG, repair_prompt
from app.fixers.llm.repair.reproduction import Reproduction, Sample, reproduce
from app.fixers.llm.repair.splice import Target, header, target_of
from app.fixers.llm.repair.testruns import Tests, failure_of
from app.fixers.llm.spend import Ledger, ModelFixer
from app.sessions.files import remove_confined
from app.sessions.fix_context import FixContext
from app.sessions.result import FixOutcome
from app.sessions.task import Budget, Task
from app.words import plural

MECHANICAL_SUSPECTS = 3  # the localiser's first few get mechanical changes too
SAMPLES = 4  # answers per repair round: one greedy, the rest hot (repair_job.HOT)
MORE = 2  # times a round's answers drawn again when a trusted judge turned all down
NO_SUSPECT = (
    "no verified fix: the repair strategy found no Python function the task points at "
    "(it names none, no stack trace or failing test leads to one)"
)
NOTHING_SHOWS = (
    "no verified fix: nothing shows the problem ({why}), so no change could be checked "
    "against it; a test that fails because of the bug (or a clearer example in the issue: "
    "the call, what it returns, what it should) lets Patchwarden try again"
)


class RepairFixer(ModelFixer):
    """The ``repair`` strategy of the llm fixer (this module's docstring)."""

    def __init__(
        self,
        client: ModelClient,
        *,
        prices: dict[str, Price] | None = None,
        samples: int = SAMPLES,
        prefill: bool = False,
        pick: bool = True,
        without: frozenset[str] = frozenset(),
        ledger: Ledger | None = None,
        audit: Audit = no_audit,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``prefill``: start the model's answer with the opening fence and the function's
        signature (servers that continue an assistant turn, as llama.cpp's does);
        ``without``: the mechanisms turned off (:mod:`switches`)."""
        super().__init__(client, prices=prices, ledger=ledger, audit=audit, clock=clock)
        self.samples = max(1, samples)
        self.more = self.samples * MORE  # answers drawn again (:meth:`_more`)
        self.prefill = prefill
        self.pick = pick
        self.without = switches.parse(without)

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        meter = self.meter(budget, workspace)
        job = RepairRun(ws=workspace, task=task, meter=meter, idx=index(workspace.tree))
        try:
            with switches.turned_off(self.without) as fired:
                outcome = await self._repair(job)
            job.report.fired = dict(sorted(fired.items()))
        except ModelError as exc:
            outcome = self.gave_up(f"the model could not be reached: {exc}")
        await self.audit(
            "llm.repair",
            reason=outcome.reason or (outcome.summary.splitlines() or [""])[0],
            details=job.report.frozen().model_dump(),
        )
        done = {"usage": meter.usage, "transcript": job.transcript, "implicated": job.implicated}
        return outcome.model_copy(update={**done, "repair": job.report.frozen()})

    async def _repair(self, job: RepairRun) -> FixOutcome:
        ws, report = job.ws, job.report
        before, failing, suspects = await localise(job)
        if not suspects:
            return self.gave_up(NO_SUSPECT)
        ws.progress(f"fix: suspects {', '.join(s.symbol.qualname for s in suspects[:3])}")
        must_pass = list(failing)
        repro: str | None = None
        strong = True  # the repository's own failing tests judge
        found: Reproduction | None = None

        async def ask(messages: list[dict[str, Any]], k: int, start: int = 0) -> list[str]:
            return await sample(self.client, job, messages, k=k, prefill="", start=start)

        if not failing and ws.commands.is_pytest and ws.commands.test:
            found = await reproduce(ws, job.task, job.idx, suspects, ask)
            report.reproduction, report.reproduction_note = found.path, found.note
            report.agreed = found.path is not None and found.strong
            repro, strong = found.path, found.strong
            if repro is not None:
                must_pass = [repro]
                job.printed[repro] = found.output
                if switches.on("demands"):
                    job.demands = demands_of(job, repro)
                    if job.demands:
                        switches.fired("demands")
        if not must_pass:
            why = report.reproduction_note or "no test fails"
            return self.gave_up(NOTHING_SHOWS.format(why=why))
        passed_before = before.passing() if before is not None else set()
        if switches.on("kept") and (kept := await keep_too(job, suspects, must_pass, found)):
            passed_before |= kept  # :mod:`must_keep`
            switches.fired("kept")
        printed = job.printed.get(repro or "") or failure_of(before, must_pass[0])
        how = ask if self.pick and switches.on("pick") else None
        order, report.picked = await order_of(job.task, job.idx, suspects, printed, how)
        for suspect in order:
            target = target_of(job.idx, suspect.symbol, together(suspect, suspects))
            if target is None:
                continue
            if target.joined:  # acted: another suspect is rewritten with this one
                switches.fired("together")
            # Early mechanical changes on the localiser's first only (a pick may be wrong).
            winner = await self._rounds(
                job, target, must_pass, passed_before, before, trusted=strong,
                mechanize=strong and suspect is suspects[0],
            )  # fmt: skip
            if winner is not None:
                return self._won(summary(job, target, winner, repro))
            if job.stopped:
                break
        judge = (must_pass, passed_before)
        last = await self._last_resorts(job, order, suspects, found, ask, judge, strong=strong)
        if last is not None:
            return self._won(summary(job, *last, repro))
        for path in filter(None, (repro, job.report.kept)):
            remove_confined(ws.tree, path)
        return self.gave_up(no_fix(job, order, repro))

    async def _last_resorts(
        self,
        job: RepairRun,
        order: list[Suspect],
        suspects: list[Suspect],
        found: Reproduction | None,
        ask: Sample,
        judge: tuple[list[str], set[str]],
        *,
        strong: bool,
    ) -> tuple[Target, Candidate] | None:
        """When every suspect's rounds missed: more answers (for a trusted judge), the
        other judges (:func:`last_judges`), then mechanical changes, which cost no tokens
        (so a third suspect too; for a weak judge only the kinds it may judge)."""
        if strong and switches.on("more") and (more := await self._more(job, judge)):
            job.report.won_by = "more"
            return more
        other = await last_judges(job, found, suspects, ask, judge[1])
        if other is not None or not switches.on("mechanical-late"):
            return other
        switches.fired("mechanical-late")
        job.report.mechanical_note = "" if strong else WEAK_JUDGE
        mechanics = [*order, *suspects[:MECHANICAL_SUSPECTS]]
        fixed = await mechanical_fix(job, mechanics, *judge, weak=not strong)
        job.report.won_by = "mechanical-late" if fixed is not None else ""
        return fixed

    # -- repair ----------------------------------------------------------------
    async def _rounds(
        self,
        job: RepairRun,
        target: Target,
        must_pass: list[str],
        passed_before: set[str],
        before: Tests | None,
        *,
        trusted: bool,
        mechanize: bool = False,
    ) -> Candidate | None:
        """``trusted``: the repository's own failing tests judge, or a reproduction two
        samples agree on or the issue's own example backs (not one model's test);
        ``mechanize``: mechanical changes right after the first round misses."""
        report = job.report
        misses: list[Candidate] = []
        repeated = False  # every answer of the round was the code as it is
        asked = (job.task, job.idx, job.ws.tree, target, must_pass, before)
        judge = (must_pass, passed_before)
        for round_ in (1, 2):
            if round_ == 2 and (not (misses or repeated) or not switches.on("misses")):
                break  # nothing came near: no round of misses, but the cloze round
            if round_ == 2:
                switches.fired("misses")
            report.rounds += 1
            job.ws.progress(f"fix: round {round_} on {target.symbol.qualname}")
            messages, prefill = self._prompt(job, asked, misses, repeated=repeated, trusted=trusted)
            answers = await sample(self.client, job, messages, k=self.samples, prefill=prefill)
            unchanged = report.dropped["unchanged"]
            report.samples += len(answers)
            candidates = changes_in(job, target, answers, prefill)
            report.candidates += len(candidates)
            # A small model shown the test's failure often writes the function back as it
            # is, and copies a miss shown to it the same way: when half the answers or
            # more were copies, the next round asks for it anew.
            repeated = (
                round_ == 1
                and bool(answers)
                and (report.dropped["unchanged"] - unchanged) * 2 >= len(answers)
            )
            tested: list[Candidate] = []
            winner = await self._judge(job, target, candidates, len(answers), judge, tested)
            early = mechanize and switches.on("mechanical-early")
            if winner is None and round_ == 1 and early and not job.stopped:
                switches.fired("mechanical-early")
                winner = await mechanical_first(job, target, must_pass, passed_before)
                job.report.won_by = "mechanical-early" if winner is not None else ""
            if winner is not None or job.stopped:
                return winner
            near = (c for c in tested if c.output)
            misses = sorted(near, key=lambda c: c.verdict.startswith("breaks"))[:2]
        job.again = job.again or (target, messages, prefill)
        winner = await self._cloze(job, target, asked, judge)
        job.report.won_by = "cloze" if winner is not None else ""
        return winner

    def _prompt(
        self,
        job: RepairRun,
        asked: tuple[Task, Index, Path, Target, list[str], Tests | None],
        misses: list[Candidate],
        *,
        repeated: bool,
        trusted: bool,
    ) -> tuple[list[dict[str, Any]], str]:
        """A round's prompt, and how its answers start. The body is hidden only after a
        round of copies and for a trusted judge (a function written anew to fit one
        model's test is often wrong elsewhere). The answer starts as the function does,
        signature and all (given only `def name(` a small model renames parameters); not
        after a round of copies of a function that reads constants, so a table above it
        (where the bug may be) can come first."""
        target = asked[3]
        messages = repair_prompt(
            *asked, misses, job.printed, repeated=repeated, hide=repeated and trusted
        )
        head = f"{header(job.idx, target.symbol)}\n" if not (repeated and target.constants) else ""
        head = BUG if switches.on("bug-first") else head  # the wrong line named first
        return messages, f"```python\n{head}" if self.prefill else ""

    async def _more(
        self, job: RepairRun, judge: tuple[list[str], set[str]]
    ) -> tuple[Target, Candidate] | None:
        """More answers to the first suspect's last prompt (new seeds), when a trusted
        judge turned every change of every suspect down: when few answers to a prompt are
        right, a round of a few answers often holds none. Changes tested before are not
        tested again."""
        if job.again is None or job.stopped:
            return None
        switches.fired("more")
        target, messages, prefill = job.again
        job.report.rounds += 1
        job.ws.progress(f"fix: more answers on {target.symbol.qualname}")
        got = await sample(
            self.client, job, messages, k=self.more, prefill=prefill, start=self.samples
        )
        job.report.samples += len(got)
        candidates = changes_in(job, target, got, prefill)
        fresh = [c for c in candidates if c.text not in job.tried]
        if len(fresh) < len(candidates):
            job.report.dropped["duplicate"] += len(candidates) - len(fresh)
        job.report.candidates += len(fresh)
        winner = await self._judge(job, target, fresh, len(got), judge, [], how=" asked again")
        return (target, winner) if winner is not None else None

    async def _cloze(
        self,
        job: RepairRun,
        target: Target,
        asked: tuple[Task, Index, Path, Target, list[str], Tests | None],
        judge: tuple[list[str], set[str]],
    ) -> Candidate | None:
        """A round of cloze prompts (:mod:`hidden_line`): each computing statement hidden in
        turn, one greedy answer each; the answers vote together."""
        spans = hidden_line.masks(job.idx, target) if switches.on("cloze") else []
        if not spans:
            return None
        switches.fired("cloze")
        job.report.rounds += 1
        job.ws.progress(f"fix: {target.symbol.qualname} with one line hidden at a time")
        head = f"```python\n{header(job.idx, target.symbol)}\n" if self.prefill else ""
        candidates: list[Candidate] = []
        answers = 0
        for span in spans:
            if job.stopped:
                break
            # A line hidden in a helper or a constant: the answer starts as it will.
            pre = head if target.symbol.start <= span[0] <= target.symbol.end else ""
            messages = repair_prompt(*asked, [], job.printed, mask=span)
            got = await sample(self.client, job, messages, k=1, prefill=pre)
            job.report.masked, answers = job.report.masked + len(got), answers + len(got)
            for new in changes_in(job, target, got, pre):
                same = next((c for c in candidates if c.text == new.text), None)
                if same is None:
                    candidates.append(new)
                else:
                    same.votes += 1
                    job.report.dropped["duplicate"] += 1
        job.report.samples += answers
        job.report.candidates += len(candidates)
        how = f" with one line hidden at a time ({plural(len(spans), 'prompt')})"
        return await self._judge(job, target, candidates, answers, judge, [], how=how)

    async def _judge(
        self,
        job: RepairRun,
        target: Target,
        candidates: list[Candidate],
        answers: int,
        judge: tuple[list[str], set[str]],
        tested: list[Candidate],
        how: str = "",
    ) -> Candidate | None:
        """The candidates tested in the sandbox, the most voted and smallest first (a
        one-node change, :func:`one_node_changes`, before all; one that names nothing the
        issue asks to be raised after the others); the first that passes wins.
        ``judge``: the tests that must pass, and those that passed before; ``tested``
        gets every candidate tested."""
        report, (must_pass, passed_before) = job.report, judge
        small = job.one_node_changes(target) if len(candidates) > 1 else {}
        for c in candidates:
            c.one_node = small.get(normalised(c.text), "") if small else ""
        order = sorted(
            candidates, key=lambda c: (c.silent, not c.one_node, -c.votes, c.changed_lines)
        )
        for at, candidate in enumerate(order):  # grows: a dropped guard put back goes next
            await validate(job, target, candidate, must_pass, passed_before)
            tested.append(candidate)
            breaks = candidate.verdict.startswith("breaks")
            put_back = breaks and switches.on("guard-put-back")
            back = restored(job.idx, target, candidate, job.demands) if put_back else None
            if back is not None and back.text not in {*job.tried, *(c.text for c in order)}:
                switches.fired("guard-put-back")
                order.insert(at + 1, back)
                report.candidates += 1
            if candidate.verdict == "passed":
                report.passed += 1
                if candidate.restored:
                    report.won_by = "guard-put-back"
                report.target = target.symbol.qualname
                written = f"{answers} answers{how}"
                report.chosen = chosen_note(candidate, order, written, tests_named(must_pass))
                return candidate
            report.failed[candidate.verdict.split(":")[0]] += 1
            miss = candidate.verdict.startswith("test failed: ") and must_pass[0] in job.printed
            miss = miss and not candidate.restored  # no model wrote it: no weaker judge
            if miss and all(c.text != candidate.text for _, c in job.missed):
                job.missed.append((target, candidate))  # failed the reproduction
        return None

    def _won(self, said: str) -> FixOutcome:  # the winner is in the tree already
        return FixOutcome(fixer=self.name, summary=said)
