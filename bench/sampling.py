"""What k samples of one repair prompt cost on the local model: one request after another,
or several at once on llama-server's parallel slots (``-np``).

    .venv/bin/python bench/sampling.py [--samples 4] [--slots 1,2] [--tokens 160]

For each slot count it starts ``make model``'s llama-server (scripts/model.py, the same
binary and weights) with ``-np N``, sends one warm-up request (the prompt's prefix is then
in the server's cache, as it is for every sample after the first in a repair round), then
k answers to the same repair prompt at temperature 0.8 with fixed seeds: one at a time,
and, with N > 1 slots, N at a time. It reports the wall time for the k answers, the tokens
generated and tokens per second. The server is stopped afterwards. llama.cpp's server
refuses ``n`` > 1 (one choice per request), so parallel slots are the only way to get
several answers at once from it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import model as local  # noqa: E402  (scripts/model.py)

PROMPT = """\
The issue:
`calendar_utils.dates.is_leap_year(1900)` returns `True`, but 1900 was not a leap year:
century years are leap years only when they divide by 400.

The bug is probably in `is_leap_year` in calendar_utils/dates.py:
```python
def is_leap_year(year: int) -> bool:
    \"\"\"Whether ``year`` has a 29 February.\"\"\"
    return year % 4 == 0
```

This test must pass (tests/test_is_leap_year_issue.py):
```python
from calendar_utils.dates import is_leap_year

def test_is_leap_year():
    assert is_leap_year(1900) is False
```

Write the corrected `is_leap_year`: the whole function, with the same name and
parameters, in one ```python block, nothing else."""


async def ask(session: aiohttp.ClientSession, url: str, seed: int, tokens: int) -> int:
    body = {
        "model": "local",
        "messages": [
            {"role": "system", "content": "You fix bugs in Python code. Code only."},
            {"role": "user", "content": PROMPT},
        ],
        "temperature": 0.8,
        "seed": seed,
        "max_tokens": tokens,
    }
    async with session.post(f"{url}/chat/completions", json=body) as r:
        answer: dict[str, Any] = await r.json()
    return int(answer["usage"]["completion_tokens"])


async def measure(url: str, *, samples: int, at_once: int, tokens: int) -> dict[str, Any]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1800)) as session:
        await ask(session, url, 1, 8)  # the prompt's prefix into the cache
        started = time.monotonic()
        generated = 0
        seeds = list(range(100, 100 + samples))
        for i in range(0, samples, at_once):
            batch = seeds[i : i + at_once]
            generated += sum(await asyncio.gather(*(ask(session, url, s, tokens) for s in batch)))
        wall = time.monotonic() - started
    return {
        "samples": samples,
        "at_once": at_once,
        "wall_seconds": round(wall, 1),
        "tokens": generated,
        "tokens_per_second": round(generated / wall, 2),
        "seconds_per_sample": round(wall / samples, 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--samples", type=int, default=4)
    p.add_argument("--slots", default="1,2", help="llama-server -np values to compare")
    p.add_argument("--tokens", type=int, default=160, help="max tokens per answer")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = []
    for slots in [int(s) for s in args.slots.split(",")]:
        local.stop()
        state = local.start("1.5b", parallel=slots)
        url = str(state["url"])
        try:
            for at_once in sorted({1, slots}):
                row = asyncio.run(
                    measure(url, samples=args.samples, at_once=at_once, tokens=args.tokens)
                )
                row["slots"] = slots
                rows.append(row)
                print(
                    f"-np {slots}, {at_once} at a time: {row['samples']} answers in "
                    f"{row['wall_seconds']} s ({row['tokens']} tokens, "
                    f"{row['tokens_per_second']} tokens/s, {row['seconds_per_sample']} s each)",
                    file=sys.stderr,
                )
        finally:
            local.stop()
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
