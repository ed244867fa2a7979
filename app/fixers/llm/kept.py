"""What the issue says must keep working: written down as a test before any change.

An issue says what is wrong and often what must not change: "Dots and hyphens in the
local part (`first.last-x@example.co.uk`) must keep working, and `a@b` … and
`@example.com` must stay invalid" (bench task email-plus). A small model's test checks the
bug alone, so a change that passes it and breaks what the issue says must stay as it is
was published (repair43: `not` taken away from `signup`'s guard, so every valid address
was refused and `a@b` let through; the repository's own tests never call `signup`).

So Patchwarden reads those values itself, calls each of the first suspected functions
that take one argument with each value on the base, in the sandbox (twice: what changes
between two calls is not kept), and writes what the base gives into a test file beside
the reproduction. It must pass on the base; from then on it is one of the tests that
passed before, which every change must keep passing. It goes into the patch, so the pull
request shows what was checked to stay as it was.

The reading is narrow and errs towards none: the reporter's own prose (no code blocks,
no quotes), one clause at a time, a clause that says a thing must keep, stay, remain,
still or continue to do something and says no "no longer", "not" or "never"; only
values in backticks (a span that is code — a name, a dotted name, a call — is no value);
module-level functions with exactly one parameter without a default; and only what a
call gives on purpose: a value written back as a literal, or an exception other than a
wrong call's (``TypeError``, ``AttributeError``…).
"""

from __future__ import annotations

import ast
import builtins
import json
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from app.fixers.llm.answers import parse
from app.fixers.llm.demands import own_sentences
from app.fixers.llm.imports import importable, module_name
from app.fixers.llm.localize import Index, Suspect
from app.fixers.llm.testruns import failed_in, free_path, ids_in, run_tests, tests_folder
from app.sessions.files import remove_confined, write_confined
from app.sessions.fix_context import FixContext

MAX_VALUES = 6
MAX_VALUE_CHARS = 200
MAX_FUNCTIONS = 3  # of the first suspects
MAX_REPR = 500  # a longer result is not written into a test

_CUE = re.compile(
    r"\b(?:must|should|has to|have to|needs? to|will)\s+(?:\w+\s+)?"
    r"(?:keep|stay|remain|still|continue)\b",
    re.I,
)
_NEGATION = re.compile(r"\b(?:not|never|no longer|nor|stop|stops)\b|n't\b", re.I)
_LIST = re.compile(r"[\s,]*(?:(?:and|or)\b[\s,]*)?")
_SPAN = re.compile(r"`([^`\n]{1,200})`")  # MAX_VALUE_CHARS
# Exceptions that say the call was wrong, not what the code decided.
_WRONG_CALL = frozenset(
    {
        "TypeError",
        "AttributeError",
        "NameError",
        "UnboundLocalError",
        "ImportError",
        "ModuleNotFoundError",
        "RecursionError",
        "NotImplementedError",
        "AssertionError",
        "MemoryError",
        "SystemError",
    }
)


def kept_values(texts: Iterable[str], used: Iterable[str] = ()) -> list[Any]:
    """The values the texts (title, issue…) say must keep working or stay as they are,
    but those the tests that show the bug use (``used``: their sources): "`x` should
    still be accepted" may be said of the bug's own input, after a regression."""
    bug = _constants(used)
    found: list[Any] = []
    for sentence in own_sentences(texts):
        for clause in _clauses(sentence):
            if not _CUE.search(clause) or _NEGATION.search(_SPAN.sub("", clause)):
                continue
            for m in _SPAN.finditer(clause):
                value = _value(m.group(1).strip())
                low = value.lower() if isinstance(value, str) else value
                if value is not None and value not in found and repr(low) not in bug:
                    found.append(value)
    return found[:MAX_VALUES]


def _constants(sources: Iterable[str]) -> set[str]:
    """The reprs of the constants the sources hold (strings compared without case)."""
    out: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant):
                value = node.value.lower() if isinstance(node.value, str) else node.value
                out.add(repr(value))
    return out


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


def _value(text: str) -> Any:
    """A literal (a number, a quoted string…), or the span as a string; None for code."""
    if not text:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        pass
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
        node = _function(idx, suspect)
        if (
            node is None
            or not _one_parameter(node.args)
            or not importable(module_name(symbol.path))
        ):
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


async def keep(
    ws: FixContext,
    texts: Sequence[str],
    idx: Index,
    suspects: Sequence[Suspect],
    used: Sequence[str] = (),
) -> Kept | None:
    """The test of what the issue says must keep working, written and run on the base;
    None when the issue says nothing of the kind (or nothing of it could be written).
    ``used``: the sources of the tests that show the bug (:func:`kept_values`)."""
    values = kept_values(texts, used)
    functions = one_argument_functions(idx, suspects) if values else []
    if not functions or not ws.commands.is_pytest or not ws.commands.test:
        return None
    ws.progress("fix: what the issue says must keep working")
    seen = await _observe(ws, functions, values)
    source, written = _test(functions, values, seen, idx)
    if not written:
        return None
    name = functions[0][0].lower()
    rel = free_path(ws.tree, posixpath.join(tests_folder(idx), f"test_{name}_kept.py"))
    write_confined(ws.tree, rel, source.encode())
    ws.sandbox.prepare_writable(ws.tree)
    tests = await run_tests(ws, extra=[rel], name="repair-kept")
    if tests is None or failed_in(tests, rel):
        remove_confined(ws.tree, rel)  # it does not pass on the base: it shows nothing sure
        return None
    calls = ", ".join(written[:3]) + (" and more" if len(written) > 3 else "")
    note = (
        f"{rel} checks what the issue says must keep working, as the base does it "
        f"({calls}); it passes on the base and on the patch"
    )
    return Kept(rel, frozenset(ids_in(tests, rel)), note)


async def _observe(
    ws: FixContext, functions: list[tuple[str, str]], values: list[Any]
) -> list[list[dict[str, str] | None]]:
    """What each function gives for each value on the base: ``{"repr": ...}`` or
    ``{"raised": name}``, None where two calls disagreed or nothing came back."""
    lines = ["import json", "out = []"]
    for name, line in functions:
        lines += [
            "row = []",
            "try:",
            f"    {line}",
            "except Exception:",
            f"    {name} = None",
        ]
        for value in values:
            lines += [
                "seen = []",
                "for _ in range(2):",
                "    try:",
                f"        seen.append({{'repr': repr({name}({value!r}))}})",
                "    except Exception as e:",
                "        seen.append({'raised': type(e).__name__})",
                "row.append(seen[0] if seen[0] == seen[1] else None)",
            ]
        lines.append("out.append(row)")
    lines.append("print(json.dumps(out))")
    done = await ws.run(["python", "-c", "\n".join(lines)], name="repair-kept-observe", timeout=60)
    try:
        rows = json.loads(done.stdout.strip().splitlines()[-1]) if done.ok else []
    except (ValueError, IndexError):
        rows = []
    return rows if isinstance(rows, list) else []


def _test(
    functions: list[tuple[str, str]],
    values: list[Any],
    seen: list[list[dict[str, str] | None]],
    idx: Index,
) -> tuple[str, list[str]]:
    """The test file, and the calls it checks (as written)."""
    imports: list[str] = []
    asserts: list[str] = []
    written: list[str] = []
    for (name, line), row in zip(functions, seen, strict=False):
        for value, got in zip(values, row if isinstance(row, list) else [], strict=False):
            check = _check(f"{name}({value!r})", got, idx, imports)
            if check is not None:
                imports += [line] if line not in imports else []
                asserts.append(check)
                written.append(f"`{name}({value!r})`")
    if not asserts:
        return "", []
    tests = "\n\n".join(
        f"def test_kept_{n}():\n    {check}\n" for n, check in enumerate(asserts, 1)
    )
    plain = sorted(i for i in set(imports) if i.startswith("import "))
    head = "\n".join(plain) + ("\n\n" if plain else "")
    head += "\n".join(sorted(i for i in set(imports) if i.startswith("from ")))
    return head + "\n\n\n" + tests, written


def _check(call: str, got: dict[str, str] | None, idx: Index, imports: list[str]) -> str | None:
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
        imports.append("import pytest") if "import pytest" not in imports else None
        return f"with pytest.raises({raised}):\n        {call}"
    text = got.get("repr")
    if not isinstance(text, str) or len(text) > MAX_REPR:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None  # an object's repr: nothing a test can compare with
    op = "is" if value is None or isinstance(value, bool) else "=="
    return f"assert {call} {op} {value!r}"


def _import(name: str, idx: Index, imports: list[str]) -> bool:
    """The import of an exception class one module of the repository defines."""
    modules = {module_name(p) for p in idx.defines.get(name, [])}
    if len(modules) != 1:
        return False
    line = f"from {modules.pop()} import {name}"
    if line not in imports:
        imports.append(line)
    return True
