"""The model's pick among the suspects (app/fixers/llm/repair/pick.py): read from an answer
however a small model words it, voted over, tried first — and the localiser's own first
choice is always tried too."""

from __future__ import annotations

import pytest

from app.fixers.llm.localize import Index, Suspect, Symbol
from app.fixers.llm.repair.pick import named, order_of, pick_prompt, picked
from app.sessions.task import Document, Task

SOURCE = (
    "class EventBus:\n"
    "    def unsubscribe(self, name, handler):\n        self.handlers[name].remove(handler)\n\n"
    "    def emit(self, name):\n        for h in self.handlers[name]:\n            h()\n\n"
    "def emit_all(buses):\n    for b in buses:\n        b.emit('x')\n"
)
IDX = Index(sources={"events.py": SOURCE})
SUSPECTS = [
    Suspect(Symbol("events.py", "EventBus.unsubscribe", 2, 3, "method"), 5.4),
    Suspect(Symbol("events.py", "EventBus.emit", 5, 7, "method"), 2.9),
    Suspect(Symbol("events.py", "emit_all", 9, 11, "function"), 0.4),
]
TASK = Task("handlers are skipped", documents=(Document("issue #1 body", "`emit` skips one"),))


@pytest.mark.parametrize(
    ("answer", "name"),
    [
        ("EventBus.emit", "EventBus.emit"),
        ("The bug is in `emit_all`.", "emit_all"),
        ("2. `EventBus.emit` — it iterates the list it changes", "EventBus.emit"),
        ("unsubscribe, not emit", "EventBus.unsubscribe"),  # the first named
        ("emitter", None),  # a word that only starts like a name
        ("I cannot tell.", None),
    ],
)
def test_the_suspect_an_answer_names_first(answer: str, name: str | None) -> None:
    found = named(answer, SUSPECTS)
    assert (found.symbol.qualname if found else None) == name


def test_the_most_named_suspect_wins_a_tie_goes_to_the_greedy_answer_and_one_vote_is_none() -> None:
    choice, how = picked(["emit", "unsubscribe", "emit"], SUSPECTS)
    assert choice is SUSPECTS[1]
    assert how == "2 of 3 answers named it"
    choice, _ = picked(["emit_all", "emit_all", "unsubscribe", "unsubscribe"], SUSPECTS)
    assert choice is SUSPECTS[2]
    # One answer each, or one alone among answers that name nothing: no pick, so the
    # localiser's first goes first (humanize: the greedy answer's `intword` went first).
    assert picked(["emit_all", "unsubscribe", "emit"], SUSPECTS) == (
        None,
        "no two answers of 3 named the same suspect",
    )
    assert picked(["emit_all", "nothing", "nothing"], SUSPECTS)[0] is None
    assert picked(["emit_all"], SUSPECTS)[0] is SUSPECTS[2]  # one answer asked, one given
    assert picked(["no idea"] * 3, SUSPECTS) == (None, "no answer of 3 named a suspect")


def test_the_prompt_shows_each_suspects_code_and_the_failure_as_data() -> None:
    content = pick_prompt(TASK, IDX, SUSPECTS, "E   assert 1 == 2 <b>")[-1]["content"]
    assert "2. `EventBus.emit` in events.py:\n```python\ndef emit(self, name):" in content
    failure = content.split("fails like this on the code as it is:\n")[1]
    assert failure.startswith('<untrusted-data id="')
    assert "E   assert 1 == 2 <b>\n</untrusted-data" in failure  # verbatim
    assert '<untrusted-data id="' in content.split("The issue:\n")[1]  # the issue fenced


async def test_the_pick_is_tried_first_and_the_localisers_first_second() -> None:
    asked: list[int] = []

    async def sample(messages: list[dict[str, object]], k: int) -> list[str]:
        asked.append(k)
        return ["EventBus.emit", "emit", "unsubscribe"][:k]

    order, note = await order_of(TASK, IDX, SUSPECTS, "", sample)
    assert [s.symbol.qualname for s in order] == ["EventBus.emit", "EventBus.unsubscribe"]
    assert note == "EventBus.emit (2 of 3 answers named it)"
    assert asked == [3]
    # nothing to pick from, or picking off: the localiser's order, no model call
    assert await order_of(TASK, IDX, SUSPECTS[:1], "", sample) == ([SUSPECTS[0]], "")
    assert await order_of(TASK, IDX, SUSPECTS, "", None) == (SUSPECTS[:2], "")
    assert asked == [3]
