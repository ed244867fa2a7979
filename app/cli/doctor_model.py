"""``patchwarden doctor``'s checks of the model: which endpoints the llm fixer uses,
what they cost and what caps apply, and whether each self-hosted one answers."""

from __future__ import annotations

from app.cli.doctor_check import Check
from app.config import Settings


def llm_check(settings: Settings) -> Check:
    """Which model the llm fixer uses, what it costs, and what caps apply (no call made).
    The model client (and the ``openai`` package, about 2 s to import) is loaded only
    when a model is configured."""
    providers = settings.llm_providers()
    if not providers:
        return Check(
            "llm fixer",
            "warn",
            "no model (PATCHWARDEN_LLM_MODEL): fix requests get the lint fixer only",
        )
    from app.fixers.llm.model_client import price_for

    chain = " -> ".join(p.label for p in providers)
    unpriced = sorted(
        {p.model for p in providers if price_for(p.model, settings.llm_prices) is None}
    )
    cap = settings.llm_max_cost_usd
    daily = settings.llm_daily_budget_usd
    detail = (
        f"{chain}; tools {settings.llm_tool_mode}; per job {settings.llm_max_steps} turns, "
        f"{settings.llm_max_tokens:,} tokens, "
        + (f"${cap:.2f}" if cap is not None else "no cost cap")
        + "; per installation per day "
        + (f"${daily:.2f}" if daily is not None else "no cap")
    )
    if unpriced and (cap is not None or daily is not None):
        detail += (
            f"; no price for {', '.join(unpriced)} (PATCHWARDEN_LLM_PRICES): the cost caps "
            "cannot count it, only the token cap applies"
        )
        return Check("llm fixer", "warn", detail)
    return Check("llm fixer", "ok", detail)


ENDPOINT_TIMEOUT = 3.0  # seconds to wait for a model endpoint's GET /models


def llm_endpoint_checks(settings: Settings) -> list[Check]:
    """Whether each self-hosted endpoint answers ``GET /models`` and serves the model
    (a local llama.cpp or Ollama that is not running is the usual first failure).
    OpenAI's own API is not probed."""
    import json
    import urllib.error
    import urllib.request

    checks = []
    for provider in settings.llm_providers():
        if not provider.base_url or provider.azure_api_version:
            continue
        url = provider.base_url.rstrip("/") + "/models"
        request = urllib.request.Request(url)  # noqa: S310 - the operator's own endpoint
        if provider.api_key is not None:
            request.add_header("Authorization", f"Bearer {provider.api_key.get_secret_value()}")
        name = f"model endpoint {provider.label}"
        try:
            with urllib.request.urlopen(request, timeout=ENDPOINT_TIMEOUT) as answer:  # noqa: S310
                listed = json.loads(answer.read(1 << 20) or b"{}").get("data") or []
        except urllib.error.HTTPError as exc:
            checks.append(Check(name, "warn", f"GET {url} answered {exc.code}: {exc.reason}"))
            continue
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            checks.append(
                Check(name, "warn", f"does not answer at {url} ({reason}): is the server up?")
            )
            continue
        ids = [str(m.get("id")) for m in listed if isinstance(m, dict)]
        if ids and provider.model not in ids:
            served = ", ".join(ids[:5])
            said = f"answers, but serves {served}, not {provider.model}"
            checks.append(Check(name, "warn", said))
        else:
            checks.append(Check(name, "ok", f"answers at {url}"))
    return checks
