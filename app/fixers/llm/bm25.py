"""Words of a text and of code, and BM25 over them: how well each function's words
match a task's (no embeddings service: it runs anywhere in milliseconds)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Protocol, TypeVar

K1, B = 1.5, 0.75  # BM25's usual constants
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_STOP = frozenset(
    re.findall(
        r"\S+",
        "the a an and or of to in on for is it its be by as at with from that this when "
        "not no should must does do did but if else then than return returns returned "
        "get set value values self cls none true false def class import test tests "
        "we our us they them it's i you your have has was were are will would can could "
        "fail fails failed failing failure failures wrong broken bug bugs crash crashes crashed "
        "red ci branch",  # that something fails says nothing of where ("test_x fails")
    )
)


class Worded(Protocol):
    """What BM25 ranks: anything with its words (a :class:`~.localize.Symbol`)."""

    @property
    def words(self) -> tuple[str, ...]: ...


W = TypeVar("W", bound=Worded)


def words(text: str) -> list[str]:
    """Lower-case words of ``text``, identifiers split (``parseDate``, ``parse_date``:
    ``parse``, ``date``), without the most common English and Python words."""
    found = [w.lower() for w in _WORD.findall(text)]
    return [w for w in found if len(w) > 1 and w not in _STOP]


def bm25(symbols: Sequence[W], query: Sequence[str]) -> dict[W, float]:
    """Each symbol's BM25 score for ``query``, scaled so the best is 1."""
    if not query:
        return {}
    n = len(symbols)
    average = sum(len(s.words) for s in symbols) / n or 1.0
    df: Counter[str] = Counter()
    for s in symbols:
        df.update(set(s.words))
    terms = Counter(query)
    scores: dict[W, float] = {}
    for s in symbols:
        tf = Counter(s.words)
        total = 0.0
        for term, times in terms.items():
            if term not in tf:
                continue
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            f = tf[term]
            total += times * idf * f * (K1 + 1) / (f + K1 * (1 - B + B * len(s.words) / average))
        scores[s] = total
    best = max(scores.values(), default=0.0)
    return {s: v / best for s, v in scores.items()} if best > 0 else {}
