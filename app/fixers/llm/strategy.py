"""The llm fixer: which strategy a job gets, and ``auto``'s order.

``fixers.llm.strategy`` in the repository's configuration (from the base branch), or
``patchwarden run --strategy``, chooses:

- ``repair`` (:mod:`repair`): the system localizes, reproduces, samples whole
  functions and lets the tests choose; made for small models;
- ``agent`` (:mod:`agent`): the tool loop, for models strong enough to plan;
- ``auto`` (the default): repair first; the agent only when repair found no verified
  fix and the job's budget has room left. Every call of both counts against it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.config import Settings
from app.errors import ConfigError
from app.fixers import Strategy
from app.fixers.fixer_policy import FixersConfig, fixers_config
from app.fixers.interface import Fixer, FixerRecord, Made
from app.fixers.llm.repair import switches
from app.policy.evidence import ModelUsage
from app.sessions.fix_context import FixContext
from app.sessions.result import FixOutcome
from app.sessions.task import Budget, Task

if TYPE_CHECKING:
    from app.fixers.llm.agent.fixer import AgentFixer
    from app.fixers.llm.repair.fixer import RepairFixer

MIN_AGENT_STEPS = 5  # fewer model calls left than this: the agent is not started
MIN_AGENT_TOKENS = 20_000


def build(settings: Settings, made: Made) -> LlmFixer:
    """The llm fixer on the model ``settings`` configure (ConfigError without one). Its
    parts are imported here: the registry, which only reads the record, stays light
    (``patchwarden score`` runs where the model's SDK is not installed)."""
    from app.fixers.llm.agent.fixer import AgentFixer
    from app.fixers.llm.model_client import ModelClient
    from app.fixers.llm.repair.fixer import RepairFixer

    if not settings.llm_configured:
        raise ConfigError(
            "the llm fixer needs a model: set PATCHWARDEN_LLM_MODEL (and "
            "PATCHWARDEN_LLM_BASE_URL and PATCHWARDEN_LLM_API_KEY for endpoints other "
            "than OpenAI's); docs/configuration.md#the-llm-fixer"
        )
    client = ModelClient(
        settings.llm_providers(),
        timeout=settings.llm_timeout_seconds,
        retry_base_seconds=settings.llm_retry_base_seconds,
        max_output_tokens=settings.llm_max_output_tokens,
        audit=made.audit,
    )
    agent = AgentFixer(
        client,
        prices=settings.llm_prices,
        tool_mode=settings.llm_tool_mode,
        context_tokens=settings.llm_context_tokens,
        max_output_tokens=settings.llm_max_output_tokens,
        ledger=made.ledger,
        audit=made.audit,
    )
    try:
        without = switches.parse(settings.llm_repair_without)
    except ValueError as exc:
        raise ConfigError(f"PATCHWARDEN_LLM_REPAIR_WITHOUT: {exc}") from exc
    repair = RepairFixer(
        client,
        prices=settings.llm_prices,
        samples=settings.llm_samples,
        prefill=settings.llm_prefill,
        without=without,
        ledger=made.ledger,
        audit=made.audit,
    )
    return LlmFixer(repair=repair, agent=agent, strategy=made.strategy)


class LlmFixer(Fixer):
    record = FixerRecord(
        name="llm",
        reason="written by a model: read it as a stranger's patch",
        # `fixers:` holds the llm fixer's settings (`fixers.llm`) and the choice between
        # fixers (`fixers.llm_on_alerts`)
        section="fixers",
        settings=FixersConfig,
        build=build,
    )

    def __init__(
        self, *, repair: RepairFixer, agent: AgentFixer, strategy: Strategy | None = None
    ) -> None:
        """``strategy``: this one whatever the repository says (``patchwarden run``)."""
        self.repair = repair
        self.agent = agent
        self.strategy = strategy

    async def aclose(self) -> None:
        await self.repair.aclose()  # one client, shared by both

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        strategy = self.strategy or fixers_config(workspace.base_tree).llm.strategy
        if strategy == "agent":
            return await self.agent.fix(task, workspace, budget)
        first = await self.repair.fix(task, workspace, budget)
        if strategy == "repair" or first.ok:
            return first
        left = _left(budget, first.usage)
        if left is None:
            return first.model_copy(
                update={"reason": f"{first.reason}; the budget left no room for the agent"}
            )
        workspace.progress("fix: the agent, after repair found no verified fix")
        await workspace.restore(await workspace.changed_paths())
        second = await self.agent.fix(task, workspace, left)
        note = f"Repair first: {first.reason}."
        combined = {
            "usage": _sum(first.usage, second.usage),
            "transcript": [*first.transcript, *second.transcript],
            "implicated": list(dict.fromkeys([*first.implicated, *second.implicated])),
            "repair": first.repair,
        }
        if second.ok:
            summary = f"{second.summary}\n\n({note} Then the agent.)"
            return second.model_copy(update={**combined, "summary": summary})
        reason = f"{first.reason}; then the agent: {second.reason}"
        return second.model_copy(update={**combined, "reason": reason})


def _left(budget: Budget, used: ModelUsage) -> Budget | None:
    """What the agent may still spend after repair, or None when that is too little."""
    steps = budget.max_steps - used.calls
    tokens = budget.max_tokens - used.total_tokens
    if steps < MIN_AGENT_STEPS or tokens < MIN_AGENT_TOKENS:
        return None
    cost = None if budget.max_cost_usd is None else budget.max_cost_usd - used.cost_usd
    if cost is not None and cost <= 0:
        return None
    return Budget(max_steps=steps, max_tokens=tokens, max_cost_usd=cost, daily_usd=budget.daily_usd)


def _sum(a: ModelUsage, b: ModelUsage) -> ModelUsage:
    dialects = dict(a.dialects)
    for k, v in b.dialects.items():
        dialects[k] = dialects.get(k, 0) + v
    return ModelUsage(
        calls=a.calls + b.calls,
        prompt_tokens=a.prompt_tokens + b.prompt_tokens,
        completion_tokens=a.completion_tokens + b.completion_tokens,
        cost_usd=round(a.cost_usd + b.cost_usd, 6),
        estimated=a.estimated or b.estimated,
        unpriced=sorted({*a.unpriced, *b.unpriced}),
        turn_seconds=[*a.turn_seconds, *b.turn_seconds],
        turn_prompt_tokens=[*a.turn_prompt_tokens, *b.turn_prompt_tokens],
        dialects=dialects,
    )
