"""Chat completions from a list of OpenAI-compatible endpoints, tried in order.

The official ``openai`` client does the HTTP (``AsyncOpenAI``, or ``AsyncAzureOpenAI``
when a provider has an ``azure_api_version``); its own retries are off, because the
policy here is the product's: on a timeout, a 429 or a 5xx the next provider is tried
after a backoff (``Retry-After`` honoured, capped), going round the list up to
``rounds`` times; any other error (a bad key, a bad request) stops at once with a
clear message. Every attempt is audited — provider, outcome, status, seconds — and
never carries a key: keys live in the clients' headers, in this process only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import openai
from openai import AsyncAzureOpenAI, AsyncOpenAI

from app.config import LlmProvider, Price
from app.errors import PatchwardenError
from app.fixers.interface import Audit, no_audit
from app.redact import redact

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]
MAX_BACKOFF_SECONDS = 60.0
_RETRYABLE = "timeout, 429 or 5xx"


class ModelError(PatchwardenError):
    """No provider answered; the message says what each one did."""


class ToolsUnsupported(ModelError):
    """The endpoint refused the ``tools`` parameter: use JSON in the text instead."""


@dataclass(frozen=True)
class ToolCall:
    id: str | None  # None when the call came as JSON in the text
    name: str
    arguments: str  # JSON text as the model wrote it


@dataclass(frozen=True)
class Completion:
    provider: str  # the label of the provider that answered
    model: str  # as configured
    content: str
    tool_calls: list[ToolCall]
    prompt_tokens: int
    completion_tokens: int
    estimated: bool  # the server sent no usage: tokens estimated from the text
    choices: tuple[str, ...] = ()  # every choice's text when several were asked for (n)


def price_for(model: str, prices: dict[str, Price]) -> Price | None:
    """The price of ``model``: an exact entry, else the longest entry it starts with
    (``gpt-4.1`` prices ``gpt-4.1-2025-04-14``)."""
    if model in prices:
        return prices[model]
    prefixes = [name for name in prices if model.startswith(name)]
    return prices[max(prefixes, key=len)] if prefixes else None


def make_client(provider: LlmProvider, *, timeout: float) -> AsyncOpenAI:
    key = provider.api_key.get_secret_value() if provider.api_key else "no-key"
    if provider.azure_api_version and provider.base_url:
        return AsyncAzureOpenAI(
            azure_endpoint=provider.base_url,
            api_version=provider.azure_api_version,
            api_key=key,
            timeout=timeout,
            max_retries=0,
        )
    return AsyncOpenAI(base_url=provider.base_url, api_key=key, timeout=timeout, max_retries=0)


class ModelClient:
    def __init__(
        self,
        providers: Sequence[LlmProvider],
        *,
        timeout: float = 120.0,
        retry_base_seconds: float = 2.0,
        max_output_tokens: int = 4096,
        rounds: int = 2,
        audit: Audit = no_audit,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if not providers:
            raise ModelError("no model is configured: set PATCHWARDEN_LLM_MODEL")
        self.providers = list(providers)
        self.retry_base_seconds = retry_base_seconds
        self.max_output_tokens = max_output_tokens
        self.rounds = rounds
        self.audit = audit
        self.sleep = sleep
        self._clients = [make_client(p, timeout=timeout) for p in self.providers]
        self._secrets = [p.api_key.get_secret_value() for p in self.providers if p.api_key]
        self._limit_param = "max_tokens"
        self._fixed_temperature: set[str] = set()  # endpoints that refused a temperature
        self._single_choice: set[str] = set()  # endpoints that refused n > 1

    async def close(self) -> None:
        for client in self._clients:
            await client.close()

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        n: int = 1,
        seed: int | None = None,
    ) -> Completion:
        """One answer, from the first endpoint that gives one. ``temperature``, when
        given, is asked for; an endpoint that refuses it (some reasoning models take only
        their own) is asked again without, and never asked with one again. ``n`` asks
        for several choices in one request (``Completion.choices``; an endpoint may give
        fewer, and one that refuses ``n`` is asked for one from then on); ``seed``, for
        a reproducible sample where the endpoint honours it."""
        failures: list[str] = []
        wait = 0.0
        attempt = 0
        for _ in range(self.rounds):
            for provider, client in zip(self.providers, self._clients, strict=True):
                if attempt:
                    wait = min(
                        max(wait, self.retry_base_seconds * 2 ** (attempt - 1)), MAX_BACKOFF_SECONDS
                    )
                    await self.sleep(wait)
                attempt += 1
                started = time.monotonic()
                try:
                    response = await self._create(
                        client, provider, messages, tools, temperature, n=n, seed=seed
                    )
                except openai.APIStatusError as exc:
                    wait = await self._refused(provider, exc, tools, started)
                    failures.append(f"{provider.label}: {exc.status_code} {self._detail(exc)}")
                    continue
                except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                    outcome = (
                        "timeout" if isinstance(exc, openai.APITimeoutError) else "unreachable"
                    )
                    await self._audited(provider, outcome, started, detail=self._detail(exc))
                    failures.append(f"{provider.label}: {outcome}")
                    wait = 0.0
                    continue
                await self._audited(provider, "ok", started, status=200)
                return _completion(provider, response, messages)
        raise ModelError(
            f"no model answered after {attempt} attempts ({_RETRYABLE} each): "
            + "; ".join(failures)
        )

    async def _refused(
        self,
        provider: LlmProvider,
        exc: openai.APIStatusError,
        tools: list[dict[str, Any]] | None,
        started: float,
    ) -> float:
        """Audit a refusal; raise unless a fallback may answer (a 429 or 5xx), else the
        wait the endpoint asked for."""
        status = exc.status_code
        outcome = _outcome(status)
        detail = self._detail(exc)
        await self._audited(provider, outcome, started, status=status, detail=detail)
        if outcome == "error":
            if tools and status in (400, 404, 422) and "tool" in detail.lower():
                raise ToolsUnsupported(f"{provider.label} refused tool calling: {detail}") from None
            raise ModelError(
                f"{provider.label} answered {status}: {detail} "
                "(not retried: only a timeout, 429 or 5xx moves to a fallback)"
            ) from None
        return _retry_after(exc.response.headers) or 0.0

    async def _create(
        self,
        client: AsyncOpenAI,
        provider: LlmProvider,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        temperature: float | None = None,
        *,
        n: int = 1,
        seed: int | None = None,
    ) -> Any:
        extra: dict[str, Any] = {self._limit_param: self.max_output_tokens}
        if tools:
            extra["tools"] = tools
            extra["tool_choice"] = "auto"
        if temperature is not None and provider.label not in self._fixed_temperature:
            extra["temperature"] = temperature
        if n > 1 and provider.label not in self._single_choice:
            extra["n"] = n
        if seed is not None:
            extra["seed"] = seed
        try:
            payload: Any = messages  # plain dicts, as the API takes them
            return await client.chat.completions.create(
                model=provider.model, messages=payload, **extra
            )
        except openai.BadRequestError as exc:
            # Newer OpenAI models refuse max_tokens and want max_completion_tokens.
            if self._limit_param == "max_tokens" and "max_completion_tokens" in str(exc):
                self._limit_param = "max_completion_tokens"
                return await self._create(
                    client, provider, messages, tools, temperature, n=n, seed=seed
                )
            if "temperature" in extra and "temperature" in str(exc):
                self._fixed_temperature.add(provider.label)
                return await self._create(client, provider, messages, tools, n=n, seed=seed)
            if "n" in extra and re.search(r"\bn\b", str(exc)):
                self._single_choice.add(provider.label)  # one choice per request from now
                return await self._create(client, provider, messages, tools, temperature, seed=seed)
            raise

    def _detail(self, exc: Exception) -> str:
        message = getattr(exc, "message", None) or str(exc)
        body = getattr(exc, "body", None)
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            message = body["message"]
        return redact(str(message), known=self._secrets)[:500]

    async def _audited(
        self,
        provider: LlmProvider,
        outcome: str,
        started: float,
        *,
        status: int | None = None,
        detail: str = "",
    ) -> None:
        seconds = round(time.monotonic() - started, 3)
        if outcome != "ok":
            log.warning("model %s: %s %s after %.1fs", provider.label, outcome, detail, seconds)
        await self.audit(
            "llm.attempt",
            reason=f"{provider.label}: {outcome}" + (f" ({status})" if status else ""),
            details={
                "provider": provider.label,
                "outcome": outcome,
                "status": status,
                "seconds": seconds,
                "detail": detail,
            },
        )


def _outcome(status: int) -> str:
    if status == 429:
        return "rate-limited"
    if status >= 500:
        return "server-error"
    return "error"


def _retry_after(headers: Any) -> float | None:
    """Seconds from ``Retry-After`` (seconds form), capped; None when absent or odd."""
    value = headers.get("retry-after") if headers is not None else None
    try:
        return min(max(float(value), 0.0), MAX_BACKOFF_SECONDS) if value is not None else None
    except ValueError:
        return None


def _completion(provider: LlmProvider, response: Any, messages: list[dict[str, Any]]) -> Completion:
    texts = tuple(
        (c.message.content or "") for c in (response.choices or []) if c.message is not None
    )
    choice = response.choices[0] if response.choices else None
    message = choice.message if choice is not None else None
    content = (message.content or "") if message is not None else ""
    calls = [
        ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "{}")
        for c in ((message.tool_calls or []) if message is not None else [])
        if getattr(c, "function", None) is not None
    ]
    usage = response.usage
    if usage is not None and usage.prompt_tokens is not None:
        prompt, completion, estimated = usage.prompt_tokens, usage.completion_tokens or 0, False
    else:
        prompt = len(json.dumps(messages)) // 4
        completion = (sum(map(len, texts)) + sum(len(c.arguments) for c in calls)) // 4
        estimated = True
    return Completion(
        provider=provider.label,
        model=provider.model,  # what prices are keyed by (Azure answers with another name)
        content=content,
        tool_calls=calls,
        prompt_tokens=prompt,
        completion_tokens=completion,
        estimated=estimated,
        choices=texts,
    )
