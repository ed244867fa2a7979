"""Reading code out of a small model's answers (app/fixers/llm/answers.py), and putting a
corrected function back into its file (app/fixers/llm/repair/splice.py), table by table.

The answer shapes are the ones a 1.5B model writes: prose around the code, a fence
opened, then ``path: x.py`` and a second fence, a fence never closed, the whole module,
the method inside its class, the continuation of a prefilled ``def``, and llama.cpp's
echo of the prefill with the continuation."""

from __future__ import annotations

import pytest

from app.fixers.llm.answers import code_blocks, definitions, normalised
from app.fixers.llm.localize import Symbol
from app.fixers.llm.repair.splice import Target, keeps_parameters, splice

FIXED = "def add(a, b):\n    return a + b\n"

ANSWERS = [
    ("fenced", "```python\ndef add(a, b):\n    return a + b\n```", FIXED),
    ("prose around", "Here it is:\n```python\ndef add(a, b):\n    return a + b\n```\nDone.", FIXED),
    (
        "path line between two fences",
        "```python\npath: calc.py\n```python\ndef add(a, b):\n    return a + b\n```",
        FIXED,
    ),
    ("never closed", "```python\ndef add(a, b):\n    return a + b\n", FIXED),
    ("no fence", "def add(a, b):\n    return a + b\n", FIXED),
    (
        "the whole module",
        "```python\nimport os\n\n\ndef mul(a, b):\n    return a * b\n\n\n"
        "def add(a, b):\n    return a + b\n```",
        FIXED,
    ),
    (
        "corrected in a second block",
        "```python\ndef add(a, b):\n    return a - b\n```\nOops:\n"
        "```python\ndef add(a, b):\n    return a + b\n```",
        FIXED,
    ),
    (
        "decorated",
        "```python\n@cache\ndef add(a, b):\n    return a + b\n```",
        "@cache\ndef add(a, b):\n    return a + b\n",
    ),
    (
        "indented",
        "```python\n    def add(a, b):\n        return a + b\n```",
        FIXED,
    ),
]


@pytest.mark.parametrize(
    ("answer", "function"), [a[1:] for a in ANSWERS], ids=[a[0] for a in ANSWERS]
)
def test_the_function_is_read_however_it_is_wrapped(answer: str, function: str) -> None:
    found = definitions(answer, "add")
    assert found.function == function
    assert found.problem == ""


def test_a_method_is_taken_out_of_its_class() -> None:
    answer = "```python\nclass Cart:\n    def total(self):\n        return sum(self.items)\n```"
    assert definitions(answer, "total").function == "def total(self):\n    return sum(self.items)\n"


@pytest.mark.parametrize(
    "answer",
    [
        "a, b):\n    return a + b\n```",  # the continuation alone
        # llama.cpp's server answers with the prefill and its continuation; one that
        # does not continue an assistant turn answers whole: the same text
        "```python\ndef add(a, b):\n    return a + b\n```",
    ],
    ids=["continuation", "with-the-prefill"],
)
def test_a_prefilled_answer_is_read_with_its_start(answer: str) -> None:
    assert definitions(answer, "add", prefill="```python\ndef add(").function == FIXED


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("```python\ndef add(a, b):\n    return a +\n```", "unparseable"),
        ("```python\ndef plus(a, b):\n    return a + b\n```", "renamed"),
        ("```python\ndef test_add():\n    assert True\n```", "renamed"),  # a test, no fix
        ("The function looks right to me.", "unparseable"),
        ("```python\nx = 1\n```", "no function"),
        ("", "empty"),
    ],
)
def test_what_is_not_the_function_says_why(answer: str, problem: str) -> None:
    found = definitions(answer, "add")
    assert found.function is None
    assert found.problem == problem


def test_constants_asked_for_are_read_beside_the_function() -> None:
    answer = (
        "```python\nVALUES = [(10, 'X'), (9, 'IX'), (5, 'V')]\nOTHER = 2\n\n"
        "def to_roman(n):\n    return n\n```"
    )
    found = definitions(answer, "to_roman", constants=["VALUES"])
    assert found.constants == {"VALUES": "VALUES = [(10, 'X'), (9, 'IX'), (5, 'V')]"}


def test_blocks_without_code_are_not_blocks() -> None:
    assert code_blocks("```\n```\n```python\nx = 1\n```") == ["x = 1"]


def test_a_docstrings_fenced_example_is_code_not_a_fence() -> None:
    """humanize-ordinal-teens: ``ordinal``'s docstring holds a ```` ```pycon ```` example;
    all 8 answers of the 1.5B model were read as cut there, unparseable."""
    function = (
        "def ordinal(value):\n"
        '    """Its ordinal.\n\n    Examples:\n        ```pycon\n        >>> ordinal(1)\n'
        '        \'1st\'\n        ```\n    """\n    return str(value)\n'
    )
    found = definitions(
        function.split("\n", 1)[1] + "```\n",
        "ordinal",
        prefill="```python\n" + function.split("\n", 1)[0] + "\n",
    )
    assert found.function == function
    # an answer indented as a whole (a list item's block) still opens and closes
    assert code_blocks("1. Fix:\n   ```python\n   x = 1\n   ```\nDone.") == ["   x = 1"]


def test_layout_comments_and_docstrings_do_not_make_answers_differ() -> None:
    a = 'def f(x):\n    """Doc."""\n    return x  # same\n'
    b = "def f(x):\n\n    return (x)\n"
    c = "def f(x):\n    return x + 1\n"
    assert normalised(a) == normalised(b)
    assert normalised(a) != normalised(c)


def test_isinstance_checks_in_either_order_are_one_change_and_other_operands_are_not() -> None:
    """deep-merge with the 1.5B model: two answers of four wrote the right change, one
    with its checks the other way round; counted apart, a one-vote wrong change won."""
    merge = "def m(a, b):\n    if {}:\n        return {}\n    return b\n"
    one = merge.format("isinstance(a, dict) and isinstance(b, dict)", "a == b")
    other = merge.format("isinstance(b, dict) and isinstance(a, dict)", "b == a")
    assert normalised(one) == normalised(other)
    # `a and a.x` is not `a.x and a`: only isinstance checks commute here
    guarded = merge.format("a and a.x", "a")
    assert normalised(guarded) != normalised(merge.format("a.x and a", "a"))
    assert normalised(one) != normalised(merge.format("isinstance(a, dict)", "a == b"))
    # the first check guards the second: not the same change the other way round
    guard = merge.format("isinstance(a, list) and isinstance(a[0], str)", "a")
    assert normalised(guard) != normalised(
        merge.format("isinstance(a[0], str) and isinstance(a, list)", "a")
    )


@pytest.mark.parametrize(
    ("candidate", "keeps"),
    [
        ("def merge(base, override):\n    pass\n", True),
        ("def merge(base, override, *, deep=True):\n    pass\n", True),  # added after
        ("def merge(merged, override):\n    pass\n", False),  # renamed: keyword callers break
        ("def merge(override, base):\n    pass\n", False),  # reordered
        ("def merge(base):\n    pass\n", False),
    ],
)
def test_a_candidate_keeps_the_parameters_callers_use(candidate: str, keeps: bool) -> None:
    assert keeps_parameters("def merge(base, override):\n    pass\n", candidate) is keeps


def test_a_function_is_spliced_in_by_its_lines_never_by_its_text() -> None:
    """Two methods with the same body: only the one at fault changes, at its own
    indentation, and a rewritten constant with it."""
    text = (
        "LIMIT = 3\n\n\nclass A:\n    def f(self, x):\n        return x - LIMIT\n\n"
        "    def g(self, x):\n        return x - LIMIT\n"
    )
    target = Target(Symbol("m.py", "A.g", 8, 9, "method"), constants=(("LIMIT", 1, 1),))
    spliced = splice(
        text, target, "def g(self, x):\n    return x + LIMIT\n", {"LIMIT": "LIMIT = 4"}
    )
    assert spliced == (
        "LIMIT = 4\n\n\nclass A:\n    def f(self, x):\n        return x - LIMIT\n\n"
        "    def g(self, x):\n        return x + LIMIT\n"
    )
    assert splice(text, target, "def g(self, x):\nreturn\n", {}) is None  # must parse


def test_the_issues_example_calls_are_read_with_literal_arguments_only() -> None:
    from app.fixers.llm.localize import Index, Suspect
    from app.fixers.llm.repair.examples import examples
    from app.sessions.task import Document, Task

    suspect = Suspect(Symbol("units.py", "to_celsius", 1, 2, "function"), 1.0)
    task = Task(
        "`units.to_celsius(212)` is wrong",
        documents=(
            Document(
                "issue",
                "Also `to_celsius(f=32.0)`; not `to_celsius(x)`, `os.system('rm')`, "
                "`to_celsius(*args)`, `other(1)`, or `to_celsius()`: with no arguments its "
                "result is the environment's (`settings.load()` with FEATURE_X unset "
                "looked like the bug to a 1.5B model).",
            ),
        ),
    )
    idx = Index(defines={"to_celsius": ["units.py"], "other": ["units.py"]})
    assert [(e.written, e.name) for e in examples(task, idx, [suspect])] == [
        ("units.to_celsius(212)", "to_celsius"),
        ("to_celsius(f=32.0)", "to_celsius"),
    ]


MODULE = '''\
import functools

LIMIT: int = 10
SEPARATOR = ", "
UNUSED = 1


class Cart:
    @functools.lru_cache
    @staticmethod
    def total(
        prices: list[float],
        tax: float = 0.2,
    ) -> float:
        """The sum with tax, capped."""
        return min(sum(prices) * (1 + tax), LIMIT) if prices else SEPARATOR
'''


def test_the_prefill_and_the_callee_signature_are_the_defs_head() -> None:
    """The prefill (what the answer starts with) keeps decorators and every line of a
    long ``def``; a callee's signature shown in the prompt drops the decorators."""
    from app.fixers.llm.localize import Index
    from app.fixers.llm.repair.splice import header, signature, target_of

    idx = Index(sources={"cart.py": MODULE})
    total = Symbol("cart.py", "Cart.total", 9, 16, "method")
    assert header(idx, total) == (
        "@functools.lru_cache\n@staticmethod\ndef total(\n"
        "    prices: list[float],\n    tax: float = 0.2,\n) -> float:"
    )
    assert signature(idx.lines(total)) == (
        "def total(\n    prices: list[float],\n    tax: float = 0.2,\n) -> float:"
    )
    # The constants it reads come with it (annotated or not); the one it does not, not.
    target = target_of(idx, total)
    assert target is not None
    assert target.constants == (("LIMIT", 3, 3), ("SEPARATOR", 4, 4))
    assert target_of(idx, Symbol("cart.py", "Cart.gone", 9, 16, "method")) is None
    assert target_of(Index(sources={"cart.py": "def ("}), total) is None


def test_another_suspect_joins_only_from_the_same_file_and_says_so() -> None:
    """Another short suspect of the function's own file is rewritten with it (and named
    in ``joined``); one of another file is not, and nothing says it joined."""
    from app.fixers.llm.localize import Index
    from app.fixers.llm.repair.splice import target_of

    source = "def a(x):\n    return x + 1\n\n\ndef b(x):\n    return x * 2\n"
    idx = Index(sources={"m.py": source, "n.py": source})
    a, b = Symbol("m.py", "a", 1, 2, "function"), Symbol("m.py", "b", 5, 6, "function")
    elsewhere = Symbol("n.py", "b", 5, 6, "function")
    target = target_of(idx, a, [b])
    assert target is not None
    assert (target.constants, target.joined) == ((("b", 5, 6),), ("b",))
    alone = target_of(idx, a, [elsewhere])
    assert alone is not None
    assert (alone.constants, alone.joined) == ((), ())


BUCKET = (
    """\
class TokenBucket:
    def __init__(self, rate):
        self.rate = rate
        self.tokens = rate

    def _refill(self) -> None:
        self.tokens = min(self.rate, self.tokens + 0.001)

    def _long(self):
"""
    + "        x = 1\n" * 12
    + """
    def allow(self) -> bool:
        self._refill()
        self._long()
        return self.tokens >= 1
"""
)


def test_a_short_helper_the_function_calls_comes_with_it_and_may_be_rewritten() -> None:
    """token-bucket: the issue names `allow()`; the bug is in `_refill`, which `allow`
    calls. A short helper is shown whole and an answer may rewrite it, re-indented to
    its class; a long one stays a signature."""
    from app.fixers.llm.localize import Index
    from app.fixers.llm.repair.splice import target_of, unit_sources

    idx = Index(sources={"bucket.py": BUCKET})
    allow = Symbol("bucket.py", "TokenBucket.allow", 23, 26, "method")
    target = target_of(idx, allow)
    assert target is not None
    assert target.constants == (("_refill", 6, 7),)  # not _long (13 lines), not __init__
    assert unit_sources(BUCKET, target)["_refill"].startswith("def _refill(self) -> None:")
    answer = (
        "```python\ndef _refill(self) -> None:\n    self.tokens = min(self.rate, self.tokens + 1)\n"
        "```"
    )
    found = definitions(answer, "allow", constants=["_refill"])
    assert (found.function, found.problem) == (None, "no function")  # only the helper
    assert "self.tokens + 1" in found.constants["_refill"]
    spliced = splice(BUCKET, target, unit_sources(BUCKET, target)[""], found.constants)
    assert spliced is not None
    assert (
        "    def _refill(self) -> None:\n        self.tokens = min(self.rate, self.tokens + 1)\n"
        in spliced
    )
    assert spliced.count("def allow") == 1
