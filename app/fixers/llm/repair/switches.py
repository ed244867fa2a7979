"""Switches that turn one of the repair strategy's narrow mechanisms off, so that what
each one earns can be measured: the fix rate and the wrong publications with it and
without it, over whole runs (``bench/agent_eval.py --without NAME``).

The switches are the operator's (``PATCHWARDEN_LLM_REPAIR_WITHOUT=together``), never a
repository's policy: they change how a fix is searched for, not what may merge. Every
mechanism is on by default. The names a run turns off are set for the duration of one
repair (:func:`turned_off`, a context variable: concurrent repairs do not see each
other's) and read where the mechanism runs (:func:`on`).

Where a mechanism acts (another suspect is rewritten with the first, the mechanical round
runs) it says so (:func:`fired`), and the repair's report counts it: a mechanism
that never acts on real bugs earns nothing, whatever an ablation run would cost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

MECHANISMS: dict[str, str] = {
    "together": "the other short suspects of the function's file shown, to be fixed with it",
    "mechanical-late": "mechanical changes after the model missed everywhere",
    "named": "only the failing tests the task names judge the fix and point to it",
    "test-imports": "an npm reproduction's forgotten framework names bound as the project's "
    "tests bind them",
}

_OFF: ContextVar[frozenset[str]] = ContextVar("repair_mechanisms_off", default=frozenset())
_FIRED: ContextVar[Counter[str] | None] = ContextVar("repair_mechanisms_fired", default=None)


def parse(text: str | Iterable[str]) -> frozenset[str]:
    """The names in ``text`` (comma-separated, or an iterable), each checked: an unknown
    name is a ``ValueError`` that lists the known ones."""
    names = text.split(",") if isinstance(text, str) else list(text)
    chosen = frozenset(n.strip() for n in names if n.strip())
    unknown = sorted(chosen - MECHANISMS.keys())
    if unknown:
        raise ValueError(
            f"unknown repair mechanism(s) {', '.join(unknown)}: the switches are "
            f"{', '.join(MECHANISMS)}"
        )
    return chosen


def on(name: str) -> bool:
    """Whether the mechanism ``name`` runs in the repair under way."""
    if name not in MECHANISMS:
        raise KeyError(f"no repair mechanism {name!r}")
    return name not in _OFF.get()


def fired(name: str) -> None:
    """The mechanism ``name`` acted in the repair under way (counted by :func:`turned_off`)."""
    if name not in MECHANISMS:
        raise KeyError(f"no repair mechanism {name!r}")
    counts = _FIRED.get()
    if counts is not None:
        counts[name] += 1


@contextmanager
def turned_off(names: Iterable[str]) -> Iterator[Counter[str]]:
    """Within the block, the mechanisms ``names`` do not run; yields the count of each
    mechanism's acts in the block (:func:`fired`)."""
    counts: Counter[str] = Counter()
    token, counting = _OFF.set(parse(names)), _FIRED.set(counts)
    try:
        yield counts
    finally:
        _OFF.reset(token)
        _FIRED.reset(counting)
