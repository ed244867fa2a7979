"""What the issue says must keep working: written down as a test before any change.

An issue says what is wrong and often what must not change: "Dots and hyphens in the
local part (`first.last-x@example.co.uk`) must keep working, and `a@b` … must stay
invalid". A small model's test checks the bug alone, and a change that passes two such
tests and breaks what the issue says must stay is published when the repository's own
tests never call the function with those values (`not` taken away from a guard).

So Patchwarden reads those values, calls each suspected function of one argument that
the tests showing the bug call (or the issue names) with each of them on the base, in
the sandbox — twice, under two hash seeds: a result that differs is not used — and
writes what the base gives into a test file beside the reproduction. What of it passes
on the base stays; from then on it is among the tests that passed before, which every
change must keep passing, and it goes into the patch.

The reading errs towards none: the reporter's own prose; values in backticks before the
cue ("must keep", "should stay", "has to remain"…) in its clause; strings and whole
numbers only, never code (a name, a call, a claim); nothing from a sentence that tells a
regression ("should still work, as it did before") or a clause that says "not"; nothing
the texts also write where they ask for no such thing, or the bug's tests use. Only what
a call gives on purpose is checked: a literal value, or an exception other than a wrong
call's (``TypeError``, ``AttributeError``…).
"""

from __future__ import annotations

import ast
import builtins
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.fixers.llm.answers import parse
from app.fixers.llm.imports import defined_by, importable, module_name
from app.fixers.llm.localize import Index, Suspect
from app.fixers.llm.repair.demands import own_sentences
from app.fixers.llm.repair.examples import last_name, printed_list
from app.fixers.llm.repair.testruns import free_path, ids_in, run_tests, tests_folder
from app.sessions.files import remove_confined, write_confined
from app.sessions.fix_context import FixContext

MAX_VALUES = 6
MAX_FUNCTIONS = 3  # of the first suspects
MAX_REPR = 500  # a longer result is not written into a test

_CUE = re.compile(
    r"\b(?:must|should|has to|have to|needs? to)\s+(?:\w+\s+)?"
    r"(?:keep|stay|remain|still|continue)\b",
    re.I,
)
_NEGATION = re.compile(r"\b(?:not|never|no longer|nor|stop|stops)\b|n't\b", re.I)
# A regression told: "`x` should still work (it did in 1.x)" names the bug's input.
_REGRESSION = re.compile(
    r"\b(?:used to|any ?more|again|since|regress\w*|worked|broke\w*|yet|now|before)\b", re.I
)
_LIST = re.compile(r"[\s,]*(?:(?:and|or)\b[\s,]*)?")
_SPAN = re.compile(r"`([^`\n]{1,200})`")  # a longer span is no value
# Exceptions that say the call was wrong, not what the code decided.
_WRONG_CALL = frozenset((
    "TypeError", "AttributeError", "NameError", "UnboundLocalError", "ImportError",
    "ModuleNotFoundError", "RecursionError", "NotImplementedError", "AssertionError",
    "MemoryError", "SystemError",
    "Exception", "BaseException",  # `pytest.raises(Exception)` is too wide: ruff's B017
))  # fmt: skip


def kept_values(texts: Sequence[str], used: Iterable[str] = ()) -> list[Any]:
    """The values the texts (title, issue…) say must keep working or stay as they are.

    Only those written before the cue, in its clause ("`a@b` must stay invalid"; in
    "should keep returning `[]`" the span is what it gives, not an input); none from a
    sentence that tells a regression ("should still work, as it did before") or clause
    that says "not"; none the texts also write where no cue is (the bug's own example) or the
    tests that show the bug use (``used``: their sources)."""
    elsewhere = _constants(used)
    found: list[Any] = []
    for sentence in own_sentences(texts):
        told = _REGRESSION.search(_SPAN.sub("", sentence))  # of the whole sentence
        for clause in _clauses(sentence):
            cue = _CUE.search(clause)
            said = [_value(m.group(1).strip()) for m in _SPAN.finditer(clause)]
            if cue is None or told or _NEGATION.search(_SPAN.sub("", clause)):
                elsewhere |= {repr(_low(v)) for v in said if v is not None}
                continue
            for m in _SPAN.finditer(clause[: cue.start()]):
                value = _value(m.group(1).strip())
                if value is not None and value not in found:
                    found.append(value)
    return [v for v in found if repr(_low(v)) not in elsewhere][:MAX_VALUES]


def _low(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _constants(sources: Iterable[str]) -> set[str]:
    """The reprs of the constants the sources hold (strings compared without case)."""
    trees = [t for t in map(parse, sources) if t is not None]
    nodes = (n for t in trees for n in ast.walk(t))
    return {repr(_low(n.value)) for n in nodes if isinstance(n, ast.Constant)}


def _clauses(sentence: str) -> list[str]:
    """The sentence cut at commas, semicolons, colons and "but"/"while" outside code
    spans; a part that only lists values (`` `0`, `1`, ``) stays with what follows it."""
    parts, start, inside = [], 0, False
    for i, ch in enumerate(sentence):
        if ch == "`":
            inside = not inside
        elif not inside and ch in ",;:":
            parts.append(sentence[start:i])
            start = i + 1
    parts.append(sentence[start:])
    clauses: list[str] = []
    pending = ""
    for part in (c for p in parts for c in re.split(r"\b(?:but|while|whereas)\b", p)):
        if _LIST.fullmatch(_SPAN.sub("", part)) and _SPAN.search(part):
            pending += part + ","
            continue
        clauses.append(pending + part)
        pending = ""
    return [*clauses, pending] if pending else clauses


def _value(text: str) -> str | int | None:
    """A quoted string, a whole number as written, or the span as a string when it is
    no Python (`a@b`); None for code (a name, a call, a claim) and for other literals
    (`1.10` would be read as 1.1: not the input the issue wrote)."""
    if not text:
        return None
    if re.fullmatch(r"-?\d{1,18}", text):
        return int(text)
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        pass
    else:
        return value if isinstance(value, str) else None
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _plain(text)  # `@example.com`
    if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Lambda)):
        return None  # `signup`, `config.merge`, `f(x)`: code, not a value
    if isinstance(node, (ast.Compare, ast.BoolOp)):
        return None  # `1 < 2`: a claim, not an input
    return _plain(text)  # `a@b`, `first.last-x@example.co.uk`


def _plain(text: str) -> str | None:
    """Text that is not Python taken as a string, unless it reads as a statement or a
    claim (`x = 1`, `1.2 == 1.2.0`) rather than one input."""
    return None if re.search(r"\s|[=<>()]", text) else text


def one_argument_functions(idx: Index, suspects: Sequence[Suspect]) -> list[tuple[str, str]]:
    """(function name, its import line) of the first suspects that are module-level
    functions taking exactly one parameter without a default."""
    out: list[tuple[str, str]] = []
    for suspect in suspects[:MAX_FUNCTIONS]:
        symbol = suspect.symbol
        if symbol.kind != "function" or "." in symbol.qualname:
            continue
        node, module = _function(idx, suspect), module_name(symbol.path)
        if node is None or not _one_parameter(node.args) or not importable(module):
            continue
        line = f"from {module_name(symbol.path)} import {symbol.name}"
        if (symbol.name, line) not in out:
            out.append((symbol.name, line))
    return out


def _function(idx: Index, suspect: Suspect) -> ast.FunctionDef | None:
    """The suspect's ``def`` at the top of its module (async and nested ones: None)."""
    module = parse(idx.sources.get(suspect.symbol.path, ""))
    for node in module.body if module is not None else ():
        if isinstance(node, ast.FunctionDef) and node.name == suspect.symbol.name:
            return node
    return None


def _one_parameter(args: ast.arguments) -> bool:
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    kw_required = sum(1 for d in args.kw_defaults if d is None)
    return required == 1 and not kw_required


@dataclass(frozen=True)
class Kept:
    """The test written of what must keep working, in the tree: its path, its tests' ids
    (as the repository's test run names them) and what the pull request says of it."""

    path: str
    ids: frozenset[str]
    note: str


@dataclass(frozen=True)
class _Check:
    written: str  # the call, as the pull request shows it
    test: str  # its test function
    imports: tuple[str, ...]


async def keep(
    ws: FixContext,
    texts: Sequence[str],
    idx: Index,
    suspects: Sequence[Suspect],
    used: Sequence[str] = (),
) -> Kept | None:
    """The test of what the issue says must keep working, written and run on the base;
    None when the issue says nothing of the kind (or nothing of it could be written).
    ``used``: the sources of the tests that show the bug (:func:`kept_values`); only the
    functions they call or the texts name are called (a helper's exact result is no
    promise: a right fix may change it)."""
    values = kept_values(texts, used)
    named = _named(texts, used) if values else set()
    functions = [f for f in one_argument_functions(idx, suspects) if f[0] in named]
    if not functions or not ws.commands.is_pytest or not ws.commands.test:
        return None
    ws.progress("fix: what the issue says must keep working")
    # Two runs, two hash seeds: a result that differs (the order of a set) is not kept.
    first, second = [await _observe(ws, functions, values, seed) for seed in ("1", "2")]
    checks = _checks(functions, values, _same(first, second), idx)
    if not checks:
        return None
    name = functions[0][0].lower()
    rel = free_path(ws.tree, posixpath.join(tests_folder(idx), f"test_{name}_kept.py"))
    write_confined(ws.tree, rel, _file(checks).encode())
    ws.sandbox.prepare_writable(ws.tree)
    # The repository's own command, as every change is judged by: a file it does not
    # collect would check nothing.
    tests = await run_tests(ws, name="repair-kept")
    outcomes = tests.run.outcomes if tests is not None else {}
    ids = {n: _id(ids_in(tests, rel), n) for n in checks} if tests is not None else {}
    passed = {n: c for n, c in checks.items() if outcomes.get(ids.get(n, "")) == "passed"}
    if not passed:
        remove_confined(ws.tree, rel)  # nothing of it passes on the base: it shows nothing
        return None
    if len(passed) < len(checks):  # a check that fails on the base goes, the rest stay
        write_confined(ws.tree, rel, _file(passed).encode())
    calls = [c.written for c in passed.values()]
    note = (
        f"{rel} checks what the issue says must keep working, as the base does it "
        f"({', '.join(calls[:3])}{' and more' if len(calls) > 3 else ''}); it passes on the "
        "base and on the patch"
    )
    return Kept(rel, frozenset(ids[n] for n in passed), note)


def _id(ids: Sequence[str], n: int) -> str:
    return next((t for t in ids if t.endswith(f"::test_kept_{n}")), "")


def _named(texts: Sequence[str], used: Iterable[str]) -> set[str]:
    """The functions the tests that show the bug call, and the names the texts write as
    code (`signup`, `accounts.signup(...)`)."""
    names: set[str] = set()
    for source in used:
        module = parse(source)
        for node in ast.walk(module) if module is not None else ():
            if isinstance(node, ast.Call):
                names.add(last_name(node))
    for m in (m for text in texts for m in _SPAN.finditer(text)):
        try:
            node = ast.parse(m.group(1).strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if isinstance(node, ast.Call):
            names.add(last_name(node))
        elif isinstance(node, (ast.Name, ast.Attribute)):
            names.add(getattr(node, "id", "") or getattr(node, "attr", ""))
    return names - {""}


async def _observe(
    ws: FixContext, functions: list[tuple[str, str]], values: list[Any], seed: str
) -> list[list[dict[str, str] | None]]:
    """What each function gives for each value on the base: ``{"repr": ...}`` or
    ``{"raised": name}``, None where two calls disagreed or nothing came back. The tree
    is mounted read-only: the observing run cannot change it."""
    lines = ["import json", "out = []"]
    for name, line in functions:
        lines += ["row = []", "try:", f"    {line}", "except Exception:", f"    {name} = None"]
        for value in values:
            lines += [
                "seen = []",
                "for _ in range(2):",
                "    try:",
                f"        v = {name}({value!r})",
                "    except Exception as e:",
                "        seen.append({'raised': type(e).__name__})",
                "        continue",
                "    try:",
                "        seen.append({'repr': repr(v)})",
                "    except Exception:",
                "        seen.append(None)",
                "row.append(seen[0] if seen[0] == seen[1] else None)",
            ]
        lines.append("out.append(row)")
    lines.append("print(json.dumps(out))")
    return await printed_list(
        ws,
        lines,
        name="repair-kept-observe",
        env={"PYTHONHASHSEED": seed},
        mounts=[replace(m, writable=False) for m in ws.mounts],
    )


def _same(a: list[Any], b: list[Any]) -> list[list[Any]]:
    """The results two runs agree on (None elsewhere)."""
    return [
        [x if x == y else None for x, y in zip(ra, rb, strict=False)]
        for ra, rb in zip(a, b, strict=False)
        if isinstance(ra, list) and isinstance(rb, list)
    ]


def _checks(
    functions: list[tuple[str, str]],
    values: list[Any],
    seen: list[list[Any]],
    idx: Index,
) -> dict[int, _Check]:
    """The test of each call that gave something a test can check, numbered."""
    checks: dict[int, _Check] = {}
    for (name, line), row in zip(functions, seen, strict=False):
        for value, got in zip(values, row, strict=False):
            imports = [line]
            check = _check(f"{name}({value!r})", got, idx, imports)
            if check is not None:
                n = len(checks) + 1
                test = f"def test_kept_{n}():\n    {check}\n"
                checks[n] = _Check(f"`{name}({value!r})`", test, tuple(imports))
    return checks


def _file(checks: dict[int, _Check]) -> str:
    """The test file: ``import pytest`` where needed, one import line per module."""
    modules: dict[str, set[str]] = {}
    plain: set[str] = set()
    for check in checks.values():
        for line in check.imports:
            if line.startswith("from "):
                module, _, names = line.removeprefix("from ").partition(" import ")
                modules.setdefault(module, set()).add(names)
            else:
                plain.add(line)
    head = "\n".join(sorted(plain)) + ("\n\n" if plain else "")
    head += "\n".join(f"from {m} import {', '.join(sorted(n))}" for m, n in sorted(modules.items()))
    return head + "\n\n\n" + "\n\n".join(c.test for c in checks.values())


def _check(call: str, got: Any, idx: Index, imports: list[str]) -> str | None:
    """The assertion of what ``call`` gave on the base, or None when it cannot be one."""
    if not isinstance(got, dict):
        return None
    raised = got.get("raised")
    if isinstance(raised, str):
        if raised in _WRONG_CALL or not raised.isidentifier():
            return None
        builtin = getattr(builtins, raised, None)
        known = isinstance(builtin, type) and issubclass(builtin, BaseException)
        if not known and not _import(raised, idx, imports):
            return None
        imports.append("import pytest")
        return f"with pytest.raises({raised}):\n        {call}"
    text = got.get("repr")
    if not isinstance(text, str) or len(text) > MAX_REPR:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None  # an object's repr: nothing a test can compare with
    if isinstance(value, float):  # a right fix may compute it another way
        imports.append("import pytest")
        return f"assert {call} == pytest.approx({value!r})"
    op = "is" if value is None or isinstance(value, bool) else "=="
    return f"assert {call} {op} {value!r}"


def _import(name: str, idx: Index, imports: list[str]) -> bool:
    """The import of an exception class one module of the repository defines."""
    modules = defined_by(idx, name)
    if len(modules) != 1:
        return False
    imports.append(f"from {modules[0]} import {name}")
    return True
