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

Over ~400 lines on purpose: the conversation loop and its checks on the model's answers
(a premature ``finish``, repeats, the context budget, the fallback to the change made
before a test was asked for) read together; the tools, the edits, the dialects, the
prompt and the code it shows live in their own modules.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from app.config import Price
from app.fixers.interface import Audit, no_audit
from app.fixers.llm.agent.dialects import parse
from app.fixers.llm.agent.guesses import MAX_FILE_BYTES
from app.fixers.llm.agent.prompt import system_prompt, task_message
from app.fixers.llm.agent.tools import (
    TOOL_PARAMETERS,
    TOOL_SCHEMAS,
    ToolBox,
    ToolResult,
)
from app.fixers.llm.code_context import example_path, looks_like_test
from app.fixers.llm.model_client import Completion, ModelClient, ModelError, ToolsUnsupported
from app.fixers.llm.spend import Ledger, Meter, ModelFixer
from app.sessions.files import read_confined, write_confined
from app.sessions.fix_context import FixContext
from app.sessions.result import FixOutcome, TranscriptEntry
from app.sessions.task import Budget, Task

ToolMode = Literal["auto", "native", "json"]
MAX_IDLE_TURNS = 3
MAX_SAME_CALLS = 3  # the same call, same result, no file changed between: stop at this
KEEP_RECENT_RESULTS = 3  # tool results never compacted: the latest ones
COMPACT_TO = 0.6  # compaction brings the estimate down to this share of the budget
CHARS_PER_TOKEN = 3.0  # a cautious estimate for text not yet counted by the server
TRANSCRIPT_ENTRY_CHARS = 4000
TRANSCRIPT_ENTRIES = 400
NUDGE = "You did not call a tool. Call one of the tools now (finish if you are done)."
NUDGE_JSON = (
    'You did not call a tool. Answer with one JSON object such as {{"tool": "read_file", '
    '"arguments": {{"path": "{example}"}}}} (use finish if you are done).'
)
UNREADABLE = (
    "I could not read a tool call in your answer: {problem}. Answer with one JSON object "
    'and nothing else, such as {{"tool": "read_file", "arguments": {{"path": "{example}"}}}}.'
)
REPEATED = (
    "\n\nNote: you made exactly this call before and got exactly this result, and no file "
    "changed since. Repeating it changes nothing: read the result, then do something "
    "different. {next}"
)
# The answer after a repeat is asked for at this temperature: a small model at its usual
# one answers the same conversation the same way again.
REPEAT_TEMPERATURE = 0.8
# The step a repeat is told to take instead, by where the work stands: a small model
# that repeats does not find the next step itself.
NEXT_STEP = {
    "unchanged": "Next: change the code with edit, 'old' copied exactly from the lines shown.",
    "untested": "Next: run the tests with run_tests.",
    "failing": "Next: read the failure above, then edit the code again.",
    "passing": "Next: call finish with a one-line summary of the fix.",
}
# finish is questioned once, not obeyed, when it looks premature; a second one is obeyed.
FINISH_IN_PROSE = (
    "Your answer explains a plan and also contains a finish call; I did not run it. "
    "Answer with only the one tool call you want to make now."
)
FINISH_NO_EDIT = (
    "You called finish without changing any file, so nothing is fixed yet. Make the change "
    "with edit or create_file first. If it truly needs no change or cannot be fixed, call "
    "finish again and say why in the summary."
)
FINISH_NO_TEST = (
    "You changed the code but no test shows the problem: write a short test that fails "
    "without your change (create_file in the tests folder), run it with run_tests, then "
    "finish. If a test that already existed failed because of the problem, call finish "
    "again and name it."
)
FELL_BACK = (
    " (Asked for a test that reproduces the problem, the agent did not finish one; this "
    "is the change it had made before.)"
)
STOPPED = (
    "The agent did not finish ({reason}). This is the last change it made to the code, "
    "verified and scored like any other."
)
COMPACTED = (
    "[an earlier result of {tool}, {lines} lines, left out to keep the conversation within "
    "its context budget; call the tool again if you need it]"
)
FINISH_ONLY_TESTS = (
    "You changed only tests ({paths}). The task is to fix the code so that its tests "
    "pass; changing what a test expects so that it agrees with the bug is not a fix. Fix "
    "the code. If the test itself was wrong, call finish again and say why."
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
    questioned: set[str] = field(default_factory=set)  # finish questions asked once
    # (name, arguments, result, files written so far) -> times seen: a call that gives the
    # same result with no file changed in between changes nothing, in a row or in a cycle
    seen_calls: dict[tuple[str, str, str, int], int] = field(default_factory=dict)
    stopped: str | None = None  # why the agent stopped the conversation itself
    dialects: dict[str, int] = field(default_factory=dict)  # calls read from text, by dialect
    results: list[tuple[int, str]] = field(default_factory=list)  # (message index, tool)
    compacted: set[int] = field(default_factory=set)  # message indexes already compacted
    counted: tuple[int, int] = (0, 0)  # (prompt tokens, message chars) of the last call
    example: str = "README.md"  # a real file of the repository, for the prompt's examples
    # (summary, the edited files' bytes) when finish was answered with FINISH_NO_TEST
    fallback: tuple[str, dict[str, bytes]] | None = None
    # the edited files' bytes right after the last change to a file that is not a test
    last_code: dict[str, bytes] | None = None
    unfinished: str | None = None  # why it stopped, when the job ends with last_code
    repeating: bool = False  # the last answer repeated a call: the next one is hotter

    def note(self, role: Any, content: str, **extra: str | None) -> None:
        if len(self.transcript) >= TRANSCRIPT_ENTRIES:
            return
        if len(content) > TRANSCRIPT_ENTRY_CHARS:
            content = content[:TRANSCRIPT_ENTRY_CHARS] + "\n[... cut]"
        self.transcript.append(TranscriptEntry(role=role, content=content, **extra))


class AgentFixer(ModelFixer):
    """The ``agent`` strategy of the llm fixer: the tool loop, for strong models."""

    def __init__(
        self,
        client: ModelClient,
        *,
        prices: dict[str, Price] | None = None,
        tool_mode: ToolMode = "auto",
        context_tokens: int = 32768,
        max_output_tokens: int = 4096,
        ledger: Ledger | None = None,
        audit: Audit = no_audit,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(client, prices=prices, ledger=ledger, audit=audit, clock=clock)
        self.tool_mode = tool_mode
        self.context_tokens = context_tokens
        self.max_output_tokens = max_output_tokens

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        run = _Run(
            box=ToolBox(workspace),
            meter=self.meter(budget, workspace),
            json_mode=self.tool_mode == "json",
        )
        run.example = example_path(workspace.tree)
        first = task_message(task, tree=workspace.tree, commands=workspace.commands)
        run.messages = [
            {
                "role": "system",
                "content": system_prompt(json_mode=run.json_mode, example=run.example),
            },
            {"role": "user", "content": first},
        ]
        run.note("user", first)
        reason = await self._converse(run, workspace, budget)
        if reason is not None and run.fallback is not None:
            summary, files = run.fallback
            await _restore(run.box, files)
            run.note(
                "note", f"{reason}; went back to the change made before the test was asked for"
            )
            await self.audit("llm.fallback", reason=reason)
            run.summary, reason = summary + FELL_BACK, None
        elif reason is not None and run.last_code is not None:
            # Lost after changing the code (writing the test, going round in circles):
            # the job ends with the code as the model last changed it, for the session to
            # verify and score like any change, rather than with nothing.
            await _restore(run.box, run.last_code)
            run.note("note", f"{reason}; went back to the last change to the code")
            await self.audit("llm.fallback", reason=reason)
            run.unfinished = _why_unfinished(reason)
            run.summary, reason = STOPPED.format(reason=run.unfinished), None
        await self._tidy(run, workspace)
        usage = run.meter.usage.model_copy(update={"dialects": dict(run.dialects)})
        if reason is not None:
            await self.audit("llm.stopped", reason=reason, details=_usage_details(run))
            return self.gave_up(reason, usage=usage, transcript=run.transcript)
        summary = run.summary or "The model finished without a summary."
        return FixOutcome(
            fixer=self.name,
            summary=summary,
            usage=usage,
            transcript=run.transcript,
            unfinished=run.unfinished,
        )

    async def _converse(self, run: _Run, workspace: FixContext, budget: Budget) -> str | None:
        """Talk until ``finish``; return why it stopped early, or None."""
        for turn in range(1, budget.max_steps + 1):
            over = await run.meter.exceeded()
            if over is not None:
                return over
            workspace.progress(f"fix: model turn {turn} of at most {budget.max_steps}")
            too_long = self._fit(run)
            if too_long is not None:
                return too_long
            asked = time.monotonic()
            try:
                completion = await self.client.complete(
                    run.messages,
                    tools=None if run.json_mode else TOOL_SCHEMAS,
                    temperature=REPEAT_TEMPERATURE if run.repeating else None,
                )
            except ToolsUnsupported as exc:
                if self.tool_mode == "native":
                    return f"{exc} (PATCHWARDEN_LLM_TOOL_MODE=native; try auto or json)"
                run.json_mode = True
                run.messages[0] = {
                    "role": "system",
                    "content": system_prompt(json_mode=True, example=run.example),
                }
                run.note("note", f"{exc}; switching to JSON tool calls in the text")
                continue
            except ModelError as exc:
                return str(exc)
            await run.meter.add(completion, seconds=time.monotonic() - asked)
            run.counted = (completion.prompt_tokens, _chars(run.messages))
            await self._answer(run, completion)
            if run.summary is not None:
                return None
            if run.stopped is not None:
                return run.stopped
            if run.idle >= MAX_IDLE_TURNS:
                return (
                    f"the model answered {MAX_IDLE_TURNS} times without calling a tool; "
                    f"its last words: {completion.content.strip()[:300]!r}"
                )
        return (
            f"stopped after {budget.max_steps} model turns without the model calling finish "
            "(PATCHWARDEN_LLM_MAX_STEPS)"
        )

    def _fit(self, run: _Run) -> str | None:
        """Keep the next prompt within the context budget: when it would not fit, the
        oldest tool results (all but the latest few) become one-line notes, oldest first,
        until it fits with room to spare. Earlier messages change only then, so the
        server's prompt cache is reused on every other turn. Returns why the
        conversation must stop when even that is not enough."""
        room = self.context_tokens - self.max_output_tokens
        estimate = self._estimate(run)
        if estimate <= room:
            return None
        target = room * COMPACT_TO
        older = run.results[:-KEEP_RECENT_RESULTS] if KEEP_RECENT_RESULTS else run.results
        had = len(run.compacted)
        for index, tool in older:
            if estimate <= target:
                break
            if index in run.compacted:
                continue
            message = run.messages[index]
            before = str(message.get("content") or "")
            note = COMPACTED.format(tool=tool, lines=before.count("\n") + 1)
            run.messages[index] = {**message, "content": note}
            run.compacted.add(index)
            estimate -= (len(before) - len(note)) / CHARS_PER_TOKEN
        if len(run.compacted) > had:
            run.note(
                "note",
                f"left out {len(run.compacted) - had} older tool results to fit "
                f"{self.context_tokens} tokens",
            )
        if estimate > room:
            return (
                f"the conversation no longer fits the context budget ({self.context_tokens:,} "
                "tokens, PATCHWARDEN_LLM_CONTEXT_TOKENS) even with older results left out"
            )
        return None

    @staticmethod
    def _estimate(run: _Run) -> float:
        """The next prompt's size in tokens: the server's count for the last prompt plus
        an estimate for what was added since (all of it before the first call)."""
        tokens, chars = run.counted
        return tokens + max(0, _chars(run.messages) - chars) / CHARS_PER_TOKEN

    async def _answer(self, run: _Run, completion: Completion) -> None:
        """Run the tool calls in ``completion`` and put their results in the conversation."""
        run.repeating = False  # this answer was the hotter one, if any
        if completion.tool_calls:
            await self._native_calls(run, completion)
            return
        run.messages.append({"role": "assistant", "content": completion.content})
        parsed = parse(completion.content, TOOL_PARAMETERS)
        if not parsed.calls:
            run.idle += 1
            run.note("assistant", completion.content)
            if parsed.problem is not None:
                nudge = UNREADABLE.format(problem=parsed.problem, example=run.example)
            else:
                nudge = NUDGE_JSON.format(example=run.example) if run.json_mode else NUDGE
            run.messages.append({"role": "user", "content": nudge})
            return
        run.idle = 0
        if not run.json_mode and self.tool_mode == "auto":
            # It writes its calls as text although tool calling is on: from now on the
            # tools are described in the prompt and read from the text, which such a
            # model follows far better.
            run.json_mode = True
            run.messages[0] = {
                "role": "system",
                "content": system_prompt(json_mode=True, example=run.example),
            }
            run.note("note", "the model writes tool calls as text: switching to JSON calls")
        results = []
        for said in parsed.calls:
            run.dialects[said.dialect] = run.dialects.get(said.dialect, 0) + 1
            arguments = json.dumps(said.arguments, ensure_ascii=False)
            run.note("assistant", completion.content, tool=said.name, arguments=arguments)
            result = await self._run_tool(run, said.name, said.arguments, in_prose=said.in_prose)
            run.note("tool", result.text, tool=said.name)
            results.append(f"Result of {said.name}:\n{result.text}")
            if result.finished or run.stopped:
                break
        run.results.append((len(run.messages), parsed.calls[0].name))
        run.messages.append({"role": "user", "content": "\n\n".join(results)})

    async def _native_calls(self, run: _Run, completion: Completion) -> None:
        """The server's own tool calls: each run, its result a ``tool`` message."""
        run.idle = 0
        run.dialects["native"] = run.dialects.get("native", 0) + len(completion.tool_calls)
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
            result = await self._run_tool(run, call.name, call.arguments, in_prose=False)
            run.results.append((len(run.messages), call.name))
            run.messages.append({"role": "tool", "tool_call_id": call.id, "content": result.text})
            run.note("tool", result.text, tool=call.name)
            if result.finished or run.stopped:
                return

    async def _run_tool(
        self, run: _Run, name: str, arguments: str | dict[str, Any], *, in_prose: bool
    ) -> ToolResult:
        """One call, unless it is a premature ``finish`` (questioned once) or the same call
        and result again (a note, then the conversation stops)."""
        question = self._question_finish(run, in_prose) if name == "finish" else None
        if question is FINISH_NO_TEST:
            # The change as it stands is kept: if the model then gets lost writing the
            # test, the job ends with this finish rather than with nothing.
            run.fallback = (_summary_of(arguments), _snapshot(run.box))
        if question is not None:
            return ToolResult(question)
        writes = run.box.writes
        result = await run.box.call(name, arguments)
        if result.finished:
            run.summary = result.summary
            return result
        if run.box.writes > writes and not looks_like_test(run.box.last_written):
            run.last_code = _snapshot(run.box)
        shown = arguments if isinstance(arguments, str) else json.dumps(arguments, sort_keys=True)
        # A read after compaction left its earlier result out is not a repeat.
        key = (name, _canonical(shown), _untimed(result.text), run.box.writes + len(run.compacted))
        times = run.seen_calls[key] = run.seen_calls.get(key, 0) + 1
        if times >= MAX_SAME_CALLS:
            run.stopped = (
                f"the model made the same {name} call {times} times with the same result "
                f"and no file changed in between ({shown[:200]})"
            )
        elif times == 2:
            result = ToolResult(result.text + REPEATED.format(next=NEXT_STEP[_stage(run.box)]))
            run.repeating = True
        return result

    @staticmethod
    def _question_finish(run: _Run, in_prose: bool) -> str | None:
        """Why this ``finish`` is not obeyed yet, or None to obey it."""
        if in_prose and "prose" not in run.questioned:
            run.questioned.add("prose")
            return FINISH_IN_PROSE
        if not run.box.edited and "no-edit" not in run.questioned:
            run.questioned.add("no-edit")
            return FINISH_NO_EDIT
        tests = sorted(p for p in run.box.edited if looks_like_test(p))
        if tests and len(tests) == len(run.box.edited) and "tests" not in run.questioned:
            run.questioned.add("tests")
            return FINISH_ONLY_TESTS.format(paths=", ".join(tests[:5]))
        # A code change with no test that shows the problem: asked for one, once (an
        # alert names its failing check, which shows it already).
        asks = (
            run.box.edited
            and not tests
            and run.box.ctx.commands.test
            and run.box.ctx.spec.task.kind != "alert"
        )
        if asks and "no-test" not in run.questioned:
            run.questioned.add("no-test")
            return FINISH_NO_TEST
        return None

    async def _tidy(self, run: _Run, workspace: FixContext) -> None:
        """Put back what changed in the tree other than through the file tools."""
        stray = [p for p in await workspace.changed_paths() if p not in run.box.edited]
        if stray:
            await workspace.restore(stray)
            run.note("note", "put back files the agent did not edit: " + ", ".join(stray[:20]))


def _snapshot(box: ToolBox) -> dict[str, bytes]:
    """The files changed through the tools so far, as they are now."""
    saved = {}
    for rel in sorted(box.edited):
        data = read_confined(box.ctx.tree, rel, limit=MAX_FILE_BYTES + 1)
        if data is not None:
            saved[rel] = data
    return saved


async def _restore(box: ToolBox, saved: dict[str, bytes]) -> None:
    """Back to ``saved`` (a :func:`_snapshot`): its files as they were then; files changed
    since that it lacks put back as the base commit has them."""
    for rel, data in saved.items():
        write_confined(box.ctx.tree, rel, data)
    await box.ctx.restore(sorted(box.edited - set(saved)))
    box.edited = set(saved)


def _summary_of(arguments: str | dict[str, Any]) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            return ""
    summary = arguments.get("summary") if isinstance(arguments, dict) else None
    return str(summary).strip() if summary else ""


def _chars(messages: list[dict[str, Any]]) -> int:
    total = 0
    for m in messages:
        total += len(str(m.get("content") or ""))
        for call in m.get("tool_calls") or ():
            total += len(call["function"]["arguments"] or "") + len(call["function"]["name"])
    return total


# How long a test run took ("in 0.03s", "(0:01:01)", "Ran 2 tests in 0.004s"): two runs
# of the same tests on the same tree differ only there, and are the same result.
_TIMINGS = re.compile(r"\bin \d+(?:\.\d+)?\s?s\b|\(\d+:\d\d:\d\d\)")


def _why_unfinished(reason: str) -> str:
    """Why the conversation stopped, in Patchwarden's own words for the PR body and the
    score: the reason itself can quote the model (its call, its last words) or the
    endpoint's error."""
    if reason.startswith("the model made the same"):
        return "the model repeated a call that changed nothing, three times"
    if reason.startswith("stopped after") and "PATCHWARDEN_LLM_MAX_STEPS" in reason:
        return "it used all its model turns"
    if "context budget" in reason:
        return "the conversation outgrew its context budget"
    if "budget" in reason or "PATCHWARDEN_LLM_MAX_" in reason:
        return "it reached its token or cost budget"
    return "the model stopped calling tools, or its endpoint failed"


def _stage(box: ToolBox) -> str:
    """Where the work stands, for :data:`NEXT_STEP`."""
    if not box.edited:
        return "unchanged"
    if box.tested is None or box.tested[0] != box.writes:
        return "untested"
    return "passing" if box.tested[1] else "failing"


def _untimed(text: str) -> str:
    return _TIMINGS.sub("in Ns", text)


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except (json.JSONDecodeError, TypeError):
        return arguments


def _usage_details(run: _Run) -> dict[str, Any]:
    u = run.meter.usage
    return {
        "calls": u.calls,
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "cost_usd": u.cost_usd,
        "tools": run.box.calls,
        "dialects": run.dialects,
    }
