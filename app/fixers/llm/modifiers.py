"""What the issue says its values may look like, tried by the reproduction too.

parse-bool's issue lists the words that must be false — "`false`, `0`, `no` and `off`
(any case, with spaces around)" — and the 1.5B model's tests tried ``"false"`` alone.
A change that lower-cased the value but did not strip it passed them and every other
test, and was published (repair38); the hidden test's ``" 0 "`` failed it. The issue
said so in words no test carried.

So when a sentence of the issue lists values as inline code and says they may come in
any case or with spaces around, each test function of a model's reproduction that
passes one of those values as an input (an argument, an assignment, a parametrize
list: never the value an assertion compares with) gets a twin with the values written
as the issue allows — ``" FALSE "`` for ``"false"``. The twin is part of the test: it
must fail on the base, as its original does, for the test to be kept, and every change
must pass it; the model sees it in the repair prompt, so it knows what to handle.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Iterable

CASE = re.compile(
    r"(?<!\bin )\bany case\b|\bcase[- ]insensitive(?:ly)?\b|\b(?:ignoring|regardless of|"
    r"whatever the) case\b|\bupper[- ] or lower[- ]?case\b",
    re.IGNORECASE,
)
SPACES = re.compile(
    r"\b(?:with )?(?:white)?spaces? around\b|\bsurrounding (?:white)?spaces?\b|"
    r"\bleading (?:and|or) trailing (?:white)?spaces?\b|\bpadded with spaces\b",
    re.IGNORECASE,
)
_CODE = re.compile(r"`([^`\n]{1,40})`")
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])|\n\s*\n")


def allowed(texts: Iterable[str]) -> dict[str, str]:
    """Each value the issue lists in a sentence that says how it may be written, and
    how: ``{"false": " FALSE "}``. Only word-like values (``false``, ``0``, ``on``)."""
    varied: dict[str, str] = {}
    for text in texts:
        for sentence in _SENTENCE.split(text):
            case, spaces = CASE.search(sentence), SPACES.search(sentence)
            if not (case or spaces):
                continue
            for value in _CODE.findall(sentence):
                if not _WORD.match(value):
                    continue
                written = value.upper() if case and value.upper() != value else value
                written = f" {written} " if spaces else written
                if written != value:
                    varied.setdefault(value, written)
    return varied


def _names(tree: ast.AST) -> set[int]:
    """The ids of string constants that are never inputs: what a comparison checks, a
    parametrize's argument names, a ``match=``."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            out |= {id(n) for side in (node.left, *node.comparators) for n in _outside_calls(side)}
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "parametrize" and node.args:
                out.add(id(node.args[0]))
            out |= {id(k.value) for k in node.keywords if k.arg == "match"}
    return out


def _outside_calls(node: ast.AST) -> list[ast.AST]:
    """``node`` and what it holds, but not what a call in it is given: in ``flag("no")
    is False`` the ``"no"`` is an input, in ``words == ["no"]`` a result."""
    found = [node]
    if not isinstance(node, ast.Call):
        for child in ast.iter_child_nodes(node):
            found += _outside_calls(child)
    return found


class _Vary(ast.NodeTransformer):
    def __init__(self, varied: dict[str, str], kept: set[int]) -> None:
        self.varied, self.kept, self.count = varied, kept, 0

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str) and node.value in self.varied and id(node) not in self.kept:
            self.count += 1
            return ast.copy_location(ast.Constant(self.varied[node.value]), node)
        return node


def with_twins(source: str, varied: dict[str, str]) -> tuple[str, int]:
    """``source`` (a test file) with a twin of each test function that passes one of
    ``varied``'s values as an input, the values written as the issue allows; and how
    many twins."""
    if not varied:
        return source, 0
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, 0
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    twins = []
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test")):
            continue
        twin = copy.deepcopy(node)
        vary = _Vary(varied, _names(twin))
        vary.visit(twin)
        name = f"{node.name}_{_suffix(varied)}"
        if vary.count and name not in names:
            twin.name = name
            twins.append(ast.unparse(twin))
    if not twins:
        return source, 0
    return source.rstrip("\n") + "\n\n\n" + "\n\n\n".join(twins) + "\n", len(twins)


def _suffix(varied: dict[str, str]) -> str:
    """The twins' name ending: what the issue allows (``any_case_spaces_around``)."""
    case = any(w.strip() != v for v, w in varied.items())
    spaces = any(w != w.strip() for w in varied.values())
    return "_".join(["any_case"] * case + ["spaces_around"] * spaces)
