"""What the issue says its values may look like, tried by the reproduction too.

An issue may list values and say in words how else they may be written — "`false`,
`0`, `no` and `off` (any case, with spaces around)" — while a small model's tests try
``"false"`` alone. A change that lower-cases the value but does not strip it then passes
them and every other test, and is published, wrong for ``" 0 "``: the issue said so in
words no test carried.

So when a clause of the issue lists values as inline code and says they may come in
any case or with spaces around (and forbids nothing), each top-level test function of
a model's reproduction that passes one of those values as an input (:func:`_inputs`:
never a value an assertion compares with, nor one that may be a result) gets a twin
with the values written as the issue allows — ``" FALSE "`` for ``"false"``. The twin
is part of the test: it runs on the base with it, every change must pass it, and the
model sees it in the repair prompt, so it knows what to handle.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable, Iterable

from app.fixers.llm.answers import parse
from app.untrusted.markdown import visible_text

# "in any case, ..." is an idiom, and so is "any case where/that ...".
CASE = re.compile(
    r"(?<!\bin )\bany case\b(?!\s+(?:where|in which|that|when)\b)|"
    r"(?<=\S )in any case\b(?!\s*,)(?!\s+(?:where|in which|that|when)\b)|"
    r"\bcase[- ]insensitive(?:ly)?\b|\b(?:ignoring|regardless of|whatever the) case\b|"
    r"\bupper[- ]?(?:case)? or lower[- ]?case\b",
    re.IGNORECASE,
)
SPACES = re.compile(
    r"\b(?:with )?(?:white)?spaces? around\b|\bsurrounding (?:white)?spaces?\b|"
    r"\bleading (?:and|or) trailing (?:white)?spaces?\b|\bpadded with spaces\b",
    re.IGNORECASE,
)
# A clause that says what must not be, or be refused, is no licence.
_NOT = re.compile(
    r"\b(?:not|no|never|without|nor|raises?|raised|reject(?:s|ed)?|refuse[sd]?|invalid|"
    r"errors?|fail)\b|n't\b",
    re.IGNORECASE,
)
_CODE = re.compile(r"`([^`\n]{1,40})`")
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+-]*$")  # not `parse_bool`, `str.strip`, `a b`
_CLAUSE = re.compile(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.!?;])\s+|\n\s*(?:[-*+]|\d+[.)])\s+|\n\s*\n")


def allowed(texts: Iterable[str]) -> dict[str, str]:
    """Each value the issue lists in a clause that says how it may be written, and
    how: ``{"false": " FALSE "}``. Only word-like values (``false``, ``0``, ``on``), in
    what a reader sees (not an HTML comment), from a clause without a negation."""
    varied: dict[str, str] = {}
    for text in texts:
        for clause in _CLAUSE.split(visible_text(text, own_words=True)):
            case, spaces = CASE.search(clause), SPACES.search(clause)
            if not (case or spaces) or _NOT.search(_CODE.sub("", clause)):
                continue
            for value in _CODE.findall(clause):
                if not _WORD.match(value) or value == "None":
                    continue
                written = value.upper() if case and value.upper() != value else value
                written = f" {written} " if spaces else written
                if written != value:
                    varied.setdefault(value, written)
    return varied


def _inputs(tree: ast.AST, varied: dict[str, str]) -> set[int]:
    """The ids of the string constants that are inputs: an argument of a call that is
    given one such value alone (``flag("no")``, ``setenv("X", "no")``; not ``check("NO",
    "no")``, where one may be the result), a value stored in a subscript
    (``os.environ["X"] = "no"``), a one-name parametrize's values. Never a value
    compared with, a name that may reach a comparison, a dict's key, a ``match=``."""
    out: set[int] = set()

    def ours(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in varied
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "parametrize":
                out |= _parametrized(node, ours)
                continue
            given = [*node.args, *(k.value for k in node.keywords if k.arg != "match")]
            mine = [a for a in given if ours(a)]
            # `check("NO", "no")`: one may be what the other should give.
            kin = [a for a in given if isinstance(a, ast.Constant) and _kin(a, mine)]
            out |= {id(mine[0])} if len(mine) == 1 and len(kin) == 1 else set()
        elif (
            isinstance(node, ast.Assign)
            and ours(node.value)
            and all(isinstance(t, ast.Subscript) for t in node.targets)
        ):
            out.add(id(node.value))
    return out


def _kin(node: ast.Constant, values: list[ast.expr]) -> bool:
    """Whether ``node`` is one of ``values`` written another way (case, spaces)."""
    said = str(node.value).strip().lower()
    return any(isinstance(v, ast.Constant) and str(v.value).strip().lower() == said for v in values)


def _parametrized(call: ast.Call, ours: Callable[[ast.AST], bool]) -> set[int]:
    """A one-name parametrize's values (``("value", ["no", "off"])``): with more names a
    row holds results too."""
    if len(call.args) < 2 or not isinstance(call.args[0], ast.Constant):
        return set()
    names, values = call.args[0].value, call.args[1]
    if not isinstance(names, str) or "," in names or not isinstance(values, ast.List | ast.Tuple):
        return set()
    return {id(v) for v in values.elts if ours(v)}


class _Vary(ast.NodeTransformer):
    def __init__(self, varied: dict[str, str], inputs: set[int]) -> None:
        self.varied, self.inputs = varied, inputs
        self.used: list[str] = []

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if id(node) in self.inputs and isinstance(node.value, str):
            self.used.append(node.value)
            return ast.copy_location(ast.Constant(self.varied[node.value]), node)
        return node


def with_twins(source: str, varied: dict[str, str]) -> tuple[str, list[str]]:
    """``source`` (a test file) with a twin of each top-level test function that passes
    one of ``varied``'s values as an input (:func:`_inputs`), the values written as the
    issue allows; and the values the twins vary, in order."""
    if not varied:
        return source, []
    tree = parse(source)
    if tree is None:
        return source, []
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    twins, used = [], []
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test")):
            continue
        twin = copy.deepcopy(node)
        vary = _Vary(varied, _inputs(twin, varied))
        vary.visit(twin)
        name = f"{node.name}_{_suffix(varied)}"
        if vary.used and name not in names:
            twin.name = name
            twins.append(ast.unparse(twin))
            used += [v for v in vary.used if v not in used]
    if not twins:
        return source, []
    return source.rstrip("\n") + "\n\n\n" + "\n\n\n".join(twins) + "\n", used


def _suffix(varied: dict[str, str]) -> str:
    """The twins' name ending: what the issue allows (``any_case_spaces_around``)."""
    case = any(w.strip() != v for v, w in varied.items())
    spaces = any(w != w.strip() for w in varied.values())
    return "_".join(["any_case"] * case + ["spaces_around"] * spaces)
