"""The ``llm`` fixer: a coding agent on any OpenAI-compatible endpoint.

A plain loop: the model answers with a tool call, the tool runs (file tools on the
confined tree, commands in the sandbox), its result goes back, until the model calls
``finish``, the step cap is reached, or a budget is spent — each ending says so.

Tool calling is used when the endpoint supports it; with ``tool_mode=auto`` an
endpoint that refuses the ``tools`` parameter gets the same tools described in the
system prompt and answers with JSON in its text (``json`` forces that). A model that
writes JSON in its text while tool calling is on is understood too.

When the model finishes, anything in the tree it did not write through ``edit`` or
``create_file`` (a test run's leftovers, files made by code it ran) is put back, so
the patch is exactly its edits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from app.config import Price
from app.fixers.base import Audit, Fixer, no_audit
from app.fixers.llm.client import Completion, ModelClient, ModelError, ToolsUnsupported
from app.fixers.llm.prompt import parse_text_call, system_prompt, task_message
from app.fixers.llm.spend import Ledger, Meter
from app.fixers.llm.tools import TOOL_SCHEMAS, ToolBox
from app.sessions.result import FixOutcome, TranscriptEntry
from app.sessions.session import Budget, FixContext, Task

ToolMode = Literal["auto", "native", "json"]
MAX_IDLE_TURNS = 3
TRANSCRIPT_ENTRY_CHARS = 4000
TRANSCRIPT_ENTRIES = 400
NUDGE = "You did not call a tool. Call one of the tools now (finish if you are done)."
NUDGE_JSON = (
    'You did not call a tool. Answer with one JSON object such as {"tool": "read_file", '
    '"arguments": {"path": "src/app.py"}} (use finish if you are done).'
)


@dataclass
class _Run:
    """One conversation's state."""

    box: ToolBox
    meter: Meter
    json_mode: bool
    messages: list[dict[str, Any]] = field(default_factory=list)
    transcript: list[TranscriptEntry] = field(default_factory=list)
    summary: str | None = None  # set when the model calls finish
    idle: int = 0

    def note(self, role: Any, content: str, **extra: str | None) -> None:
        if len(self.transcript) >= TRANSCRIPT_ENTRIES:
            return
        if len(content) > TRANSCRIPT_ENTRY_CHARS:
            content = content[:TRANSCRIPT_ENTRY_CHARS] + "\n[... cut]"
        self.transcript.append(TranscriptEntry(role=role, content=content, **extra))


class LlmFixer(Fixer):
    name = "llm"

    def __init__(
        self,
        client: ModelClient,
        *,
        prices: dict[str, Price] | None = None,
        tool_mode: ToolMode = "auto",
        ledger: Ledger | None = None,
        audit: Audit = no_audit,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.prices = prices or {}
        self.tool_mode = tool_mode
        self.ledger = ledger
        self.audit = audit
        self.clock = clock

    async def aclose(self) -> None:
        await self.client.close()

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        run = _Run(
            box=ToolBox(workspace),
            meter=Meter(
                budget,
                self.prices,
                ledger=self.ledger,
                installation_id=workspace.spec.installation_id,
                clock=self.clock,
            ),
            json_mode=self.tool_mode == "json",
        )
        first = task_message(task, tree=workspace.tree, commands=workspace.commands)
        run.messages = [
            {"role": "system", "content": system_prompt(json_mode=run.json_mode)},
            {"role": "user", "content": first},
        ]
        run.note("user", first)
        reason = await self._converse(run, workspace, budget)
        await self._tidy(run, workspace)
        if reason is not None:
            await self.audit("llm.stopped", reason=reason, details=_usage_details(run))
            return self.gave_up(reason, usage=run.meter.usage, transcript=run.transcript)
        summary = run.summary or "The model finished without a summary."
        return FixOutcome(
            fixer=self.name, summary=summary, usage=run.meter.usage, transcript=run.transcript
        )

    async def _converse(self, run: _Run, workspace: FixContext, budget: Budget) -> str | None:
        """Talk until ``finish``; return why it stopped early, or None."""
        for turn in range(1, budget.max_steps + 1):
            over = await run.meter.exceeded()
            if over is not None:
                return over
            workspace.progress(f"fix: model turn {turn} of at most {budget.max_steps}")
            try:
                completion = await self.client.complete(
                    run.messages, tools=None if run.json_mode else TOOL_SCHEMAS
                )
            except ToolsUnsupported as exc:
                if self.tool_mode == "native":
                    return f"{exc} (PATCHWARDEN_LLM_TOOL_MODE=native; try auto or json)"
                run.json_mode = True
                run.messages[0] = {"role": "system", "content": system_prompt(json_mode=True)}
                run.note("note", f"{exc}; switching to JSON tool calls in the text")
                continue
            except ModelError as exc:
                return str(exc)
            await run.meter.add(completion)
            await self._answer(run, completion)
            if run.summary is not None:
                return None
            if run.idle >= MAX_IDLE_TURNS:
                return (
                    f"the model answered {MAX_IDLE_TURNS} times without calling a tool; "
                    f"its last words: {completion.content.strip()[:300]!r}"
                )
        return (
            f"stopped after {budget.max_steps} model turns without the model calling finish "
            "(PATCHWARDEN_LLM_MAX_STEPS)"
        )

    async def _answer(self, run: _Run, completion: Completion) -> None:
        """Run the tool calls in ``completion`` and put their results in the conversation."""
        if completion.tool_calls:
            run.idle = 0
            run.messages.append(
                {
                    "role": "assistant",
                    "content": completion.content or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in completion.tool_calls
                    ],
                }
            )
            for call in completion.tool_calls:
                run.note("assistant", completion.content, tool=call.name, arguments=call.arguments)
                result = await run.box.call(call.name, call.arguments)
                run.messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": result.text}
                )
                run.note("tool", result.text, tool=call.name)
                if result.finished:
                    run.summary = result.summary
                    return
            return
        run.messages.append({"role": "assistant", "content": completion.content})
        parsed = parse_text_call(completion.content)
        if parsed is None:
            run.idle += 1
            run.note("assistant", completion.content)
            nudge = NUDGE_JSON if run.json_mode else NUDGE
            run.messages.append({"role": "user", "content": nudge})
            return
        run.idle = 0
        name, arguments = parsed
        run.note("assistant", completion.content, tool=name)
        result = await run.box.call(name, arguments)
        run.messages.append({"role": "user", "content": f"Result of {name}:\n{result.text}"})
        run.note("tool", result.text, tool=name)
        if result.finished:
            run.summary = result.summary

    async def _tidy(self, run: _Run, workspace: FixContext) -> None:
        """Put back what changed in the tree other than through the file tools."""
        stray = [p for p in await workspace.changed_paths() if p not in run.box.edited]
        if stray:
            await workspace.restore(stray)
            run.note("note", "put back files the agent did not edit: " + ", ".join(stray[:20]))


def _usage_details(run: _Run) -> dict[str, Any]:
    u = run.meter.usage
    return {
        "calls": u.calls,
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "cost_usd": u.cost_usd,
        "tools": run.box.calls,
    }
