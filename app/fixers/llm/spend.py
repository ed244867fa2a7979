"""What a job's model calls cost, against its budget and its installation's day.

Token counts come from the API's ``usage`` fields (estimated from the text, and
marked so, when a server sends none); cost from ``PATCHWARDEN_LLM_PRICES``. Each
answered call is added to the installation's total for the UTC day in the store at
once, so concurrent jobs of one installation see each other's spend.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from app.config import Price
from app.fixers.interface import Audit, Fixer, no_audit
from app.fixers.llm.model_client import Completion, ModelClient, price_for
from app.policy.evidence import ModelUsage
from app.sessions.fix_context import FixContext
from app.sessions.task import Budget
from app.store.models import ModelSpend


class Ledger(Protocol):
    """Where daily spend per installation is kept (the store implements it)."""

    async def add_model_spend(
        self, installation_id: int, *, day: str, spend: ModelSpend
    ) -> None: ...

    async def model_spend(self, installation_id: int, *, day: str) -> ModelSpend: ...


def utc_day(now: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(now))


@dataclass
class Meter:
    budget: Budget
    prices: dict[str, Price]
    ledger: Ledger | None = None
    installation_id: int | None = None
    clock: Callable[[], float] = time.time
    usage: ModelUsage = field(default_factory=ModelUsage)

    async def add(self, completion: Completion, *, seconds: float = 0.0) -> None:
        price = price_for(completion.model, self.prices)
        cost = 0.0
        if price is not None:
            cost = (
                completion.prompt_tokens * price.input + completion.completion_tokens * price.output
            ) / 1_000_000
        unpriced = list(self.usage.unpriced)
        if price is None and completion.model not in unpriced:
            unpriced.append(completion.model)
        self.usage = ModelUsage(
            calls=self.usage.calls + 1,
            prompt_tokens=self.usage.prompt_tokens + completion.prompt_tokens,
            completion_tokens=self.usage.completion_tokens + completion.completion_tokens,
            cost_usd=round(self.usage.cost_usd + cost, 6),
            estimated=self.usage.estimated or completion.estimated,
            unpriced=unpriced,
            turn_seconds=[*self.usage.turn_seconds, round(seconds, 2)],
            turn_prompt_tokens=[*self.usage.turn_prompt_tokens, completion.prompt_tokens],
        )
        if self.ledger is not None and self.installation_id is not None:
            await self.ledger.add_model_spend(
                self.installation_id,
                day=utc_day(self.clock()),
                spend=ModelSpend(
                    calls=1,
                    prompt_tokens=completion.prompt_tokens,
                    completion_tokens=completion.completion_tokens,
                    cost_usd=cost,
                ),
            )

    async def exceeded(self) -> str | None:
        """Why no further call may be made, or None while the budget holds."""
        b, u = self.budget, self.usage
        if u.total_tokens >= b.max_tokens:
            return (
                f"token budget spent: {u.total_tokens:,} of {b.max_tokens:,} tokens for this "
                "job (PATCHWARDEN_LLM_MAX_TOKENS)"
            )
        if b.max_cost_usd is not None and u.cost_usd >= b.max_cost_usd:
            return (
                f"cost budget spent: ${u.cost_usd:.4f} of ${b.max_cost_usd:.2f} for this job "
                "(PATCHWARDEN_LLM_MAX_COST_USD)"
            )
        if b.daily_usd is not None and self.ledger is not None and self.installation_id:
            day = utc_day(self.clock())
            spent = await self.ledger.model_spend(self.installation_id, day=day)
            if spent.cost_usd >= b.daily_usd:
                return (
                    f"daily budget spent: installation {self.installation_id} has used "
                    f"${spent.cost_usd:.4f} of ${b.daily_usd:.2f} on {day} (UTC) "
                    "(PATCHWARDEN_LLM_DAILY_BUDGET_USD); it resets at 00:00 UTC"
                )
        return None


class ModelFixer(Fixer):
    """A fixer that talks to a model: its client, what the tokens cost, where each
    installation's daily spend is kept, and a :class:`Meter` per job (both strategies
    of the llm fixer are one)."""

    name = "llm"

    def __init__(
        self,
        client: ModelClient,
        *,
        prices: dict[str, Price] | None = None,
        ledger: Ledger | None = None,
        audit: Audit = no_audit,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.prices = prices or {}
        self.ledger = ledger
        self.audit = audit
        self.clock = clock

    def meter(self, budget: Budget, workspace: FixContext) -> Meter:
        return Meter(
            budget,
            self.prices,
            ledger=self.ledger,
            installation_id=workspace.spec.installation_id,
            clock=self.clock,
        )

    async def aclose(self) -> None:
        await self.client.close()
