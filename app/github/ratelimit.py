"""How long to wait before retrying a rate-limited GitHub request. Pure.

GitHub's rules (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
#exceeding-the-rate-limit), in order:
1. ``retry-after`` present: wait that many seconds.
2. ``x-ratelimit-remaining`` is ``0``: wait until ``x-ratelimit-reset`` (UTC epoch seconds).
3. otherwise (a secondary limit): wait at least one minute, growing exponentially
   while the request keeps failing.
A 403 that is none of these ("Resource not accessible by integration") is a real
refusal, not a rate limit, and is not retried.
"""

from __future__ import annotations

import email.utils
from collections.abc import Mapping


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """Header lookup that ignores case (GitHub writes ``X-RateLimit-Reset``)."""
    value = headers.get(name)
    if value is not None:
        return value
    lowered = name.lower()
    return next((v for k, v in headers.items() if k.lower() == lowered), None)


def _retry_after(value: str, *, now: float) -> float | None:
    value = value.strip()
    try:  # seconds, whole or not (`1.5`)
        seconds = float(value)
    except ValueError:
        pass
    else:
        return seconds if seconds >= 0 and seconds == seconds else None
    try:  # RFC 9110 also allows an HTTP date
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - now, 0.0)


def rate_limit_wait(
    status: int,
    headers: Mapping[str, str],
    message: str,
    *,
    attempt: int,
    now: float,
    base_seconds: float = 60.0,
) -> float | None:
    """Seconds to wait before retry ``attempt + 1``, or ``None`` if this is not a rate limit."""
    if status not in (403, 429):
        return None
    retry_after = _header(headers, "retry-after")
    if retry_after is not None:
        wait = _retry_after(retry_after, now=now)
        if wait is not None:
            return wait
    remaining = _header(headers, "x-ratelimit-remaining")
    reset = _header(headers, "x-ratelimit-reset")
    if remaining is not None and remaining.strip() == "0" and reset is not None:
        try:
            # One second of margin: reset is a whole second and clocks drift.
            return max(float(reset) - now, 0.0) + 1.0
        except ValueError:
            pass
    lowered = message.lower()
    if status == 429 or "rate limit" in lowered or "abuse" in lowered:
        return base_seconds * float(2 ** max(attempt - 1, 0))
    return None
