"""The llm fixer's ``repair`` strategy: the system localises, reproduces, samples,
validates and chooses; the model only writes whole corrected functions, among which
the tests choose (as Agentless does: a small model cannot plan a tool loop).

1. **Localise** without the model (:mod:`testruns`, :mod:`localize`): the failing tests'
   frames and what they run, names the task cites, BM25 over a symbol index.
2. **Reproduce** when no test fails yet (:mod:`reproduction`): a test from the issue's
   example, kept only if it fails on the base for the bug's reason.
3. **Sample**: for the localiser's first suspect the model can write back (of the first
   two: not a function longer than an answer may hold, every answer would be cut off),
   one prompt with the function's source and what it reads and calls, the failing test
   and its output, asks for the whole corrected function, k times (the first greedy).
   Answers that do not parse, change nothing or rename it are dropped; the rest are
   grouped by syntax tree (the votes), spliced in by line range (:mod:`splice`).
4. **Validate** in the sandbox: the failing and reproducing tests first, then all; one
   that breaks a test that passed before is out.
5. **Choose**: the most voted passing change, the smallest among equals. When every
   answer missed, small mechanical changes (:mod:`mechanical`), which cost no model
   call, are tried on the first three suspects for about a minute of test runs, and
   one is kept only when it alone passes and every other was tried.

Nothing verified, nothing proposed: an honest answer, never a pull request.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from app.config import Price
from app.fixers.interface import Audit, no_audit
from app.fixers.llm.answers import normalised
from app.fixers.llm.js_index import JsIndex, js_index
from app.fixers.llm.localize import Suspect, index
from app.fixers.llm.model_client import ModelClient, ModelError
from app.fixers.llm.repair import switches
from app.fixers.llm.repair.candidates import Candidate
from app.fixers.llm.repair.job import (
    RepairRun,
    changes_in,
    localise,
    no_fix,
    sample,
    summary,
    tests_named,
    together,
    validate,
)
from app.fixers.llm.repair.js_flow import repair_js
from app.fixers.llm.repair.mechanical import WEAK_JUDGE, chosen_note
from app.fixers.llm.repair.mechanical_rounds import mechanical_fix
from app.fixers.llm.repair.prompt import repair_prompt, too_long_to_write
from app.fixers.llm.repair.reproduction import reproduce
from app.fixers.llm.repair.splice import Target, header, target_of
from app.fixers.llm.spend import Ledger, ModelFixer
from app.sessions.files import remove_confined
from app.sessions.fix_context import FixContext
from app.sessions.result import FixOutcome
from app.sessions.task import Budget, Task

TARGETS = 2  # the localiser's first suspects, of which the first the model can write gets a round
MECHANICAL_SUSPECTS = 3  # the localiser's first few get mechanical changes too
SAMPLES = 4  # answers per repair round: one greedy, the rest hot (job.HOT)
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
        self.prefill = prefill
        self.without = switches.parse(without)

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        meter = self.meter(budget, workspace)
        js = js_index(workspace.tree) if workspace.commands.kind == "node" else None
        idx = js.index if js is not None else index(workspace.tree)
        job = RepairRun(ws=workspace, task=task, meter=meter, idx=idx)
        try:
            with switches.turned_off(self.without) as fired:
                outcome = await (self._repair(job) if js is None else self._repair_js(job, js))
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
        """Localise, reproduce, sample, validate, choose (this module's docstring)."""
        ws, report = job.ws, job.report
        before, failing, suspects = await localise(job)
        if not suspects:
            return self.gave_up(NO_SUSPECT)
        ws.progress(f"fix: suspects {', '.join(s.symbol.qualname for s in suspects[:3])}")
        must_pass, repro, strong = list(failing), None, True  # the repository's tests judge
        if not failing and ws.commands.is_pytest and ws.commands.test:

            async def ask(messages: list[dict[str, Any]], k: int, start: int = 0) -> list[str]:
                return await sample(self.client, job, messages, k=k, prefill="", start=start)

            found = await reproduce(ws, job.task, job.idx, suspects, ask)
            report.reproduction, report.reproduction_note = found.path, found.note
            report.agreed = found.path is not None and found.strong
            repro, strong = found.path, found.strong
            if repro is not None:
                must_pass = [repro]
                job.printed[repro] = found.output
        if not must_pass:
            why = report.reproduction_note or "no test fails"
            return self.gave_up(NOTHING_SHOWS.format(why=why))
        job.must_pass = must_pass
        job.passed_before = before.passing() if before is not None else set()
        order: list[Suspect] = []
        for suspect in suspects[:TARGETS]:
            target = target_of(job.idx, suspect.symbol, together(suspect, suspects))
            if target is None:
                continue
            if job.stopped:  # the model call budget is spent
                break
            tokens = too_long_to_write(job.idx, target, self.client.max_output_tokens)
            if tokens:  # every answer would be cut off: no call is spent on it
                job.report.too_long.append(
                    f"`{target.symbol.qualname}` is not asked for: writing it back takes "
                    f"about {tokens:,} tokens, more than an answer's "
                    f"{self.client.max_output_tokens:,} (PATCHWARDEN_LLM_MAX_OUTPUT_TOKENS)"
                )
                continue
            if target.joined:  # acted: another suspect is rewritten with this one
                switches.fired("together")
            order.append(suspect)
            messages = repair_prompt(
                job.task, job.idx, job.ws.tree, target, must_pass, before, job.printed
            )
            winner = await self._round(job, target, messages)
            if winner is not None:
                return self._won(summary(job, target, winner, repro))
            break  # one suspect gets the round; the others, mechanical changes
        mechanics = suspects[:MECHANICAL_SUSPECTS]
        last = await self._mechanical(job, mechanics, strong, repro)
        if last is not None:
            return self._won(summary(job, *last, repro))
        if repro is not None:
            remove_confined(ws.tree, repro)
        return self.gave_up(no_fix(job, order or suspects[:TARGETS], repro))

    async def _repair_js(self, job: RepairRun, js: JsIndex) -> FixOutcome:
        """The same steps on an npm project (:mod:`js_flow`)."""
        won, said = await repair_js(self.client, job, js, samples=self.samples)
        return self._won(said) if won else self.gave_up(said)

    async def _mechanical(
        self,
        job: RepairRun,
        suspects: list[Suspect],
        strong: bool,
        repro: str | None,
    ) -> tuple[Target, Candidate] | None:
        """When every answer missed: mechanical changes to ``suspects``, which cost no
        model call (for a weak judge only the kinds it may judge; where the repository's
        own failing tests judge, no ``repro``, a few passing ones a maintainer chooses
        among)."""
        if not switches.on("mechanical-late"):
            return None
        switches.fired("mechanical-late")
        job.report.mechanical_note = "" if strong else WEAK_JUDGE
        fixed = await mechanical_fix(job, suspects, weak=not strong, repository=repro is None)
        job.report.won_by = "mechanical-late" if fixed is not None else ""
        return fixed

    async def _round(
        self,
        job: RepairRun,
        target: Target,
        messages: list[dict[str, Any]],
    ) -> Candidate | None:
        """One round of answers on the target to ``messages`` (:func:`repair_prompt`),
        their changes tested: the winner or None."""
        report = job.report
        report.rounds += 1
        job.ws.progress(f"fix: a round of answers on {target.symbol.qualname}")
        prefill = f"```python\n{header(job.idx, target.symbol)}\n" if self.prefill else ""
        answers = await sample(self.client, job, messages, k=self.samples, prefill=prefill)
        report.samples += len(answers)
        return await self._judge(job, target, answers, prefill)

    async def _judge(
        self,
        job: RepairRun,
        target: Target,
        answers: list[str],
        prefill: str,
    ) -> Candidate | None:
        """The distinct changes the ``answers`` write (:func:`changes_in`)
        tested in the sandbox, a one-node change (:func:`one_node_changes`) first, then
        the most voted and smallest; the first that passes wins."""
        report = job.report
        candidates = changes_in(job, target, answers, prefill)
        report.candidates += len(candidates)
        small = job.one_node_changes(target) if len(candidates) > 1 else {}
        for c in candidates:
            c.one_node = small.get(normalised(c.text), "") if small else ""
        order = sorted(candidates, key=lambda c: (not c.one_node, -c.votes, c.changed_lines))
        for candidate in order:
            await validate(job, target, candidate)
            if candidate.verdict == "passed":
                report.passed += 1
                report.target = target.symbol.qualname
                written = f"{len(answers)} answers"
                report.chosen = chosen_note(candidate, order, written, tests_named(job.must_pass))
                return candidate
            report.failed[candidate.verdict.split(":")[0]] += 1
        return None

    def _won(self, said: str) -> FixOutcome:  # the winner is in the tree already
        return FixOutcome(fixer=self.name, summary=said)
