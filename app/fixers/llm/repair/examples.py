"""The issue's own examples, read without the model: the reproduction's deterministic half.

A user writes "`versions.is_newer("1.10.0", "1.9.0")` returns False" or "`median([1, 2, 3,
4])` returns `3` ... it should be `2.5`". A small model asked for a test of that often
copies the wrong value as the expected one, so the system reads the example itself: the
call (literal arguments only, rebuilt from them, never run as written), what the issue
says it gives now, what it should give. The call runs on the base in the sandbox; when it
gives what the issue says, that is the bug confirmed, and a test is written from the
issue's words alone: ``== expected`` where the issue says what it should be, else ``!=``
the value it complains about. A model's test that asserts the value the issue calls the
bug, or another value than the one it asks for, has that assertion taken out.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from app.fixers.llm.imports import module_name
from app.fixers.llm.localize import Index, Suspect
from app.sessions.fix_context import FixContext
from app.sessions.task import Task

MAX_EXAMPLES = 4

MAX_SHOWN = 200  # characters of a value shown to the model

MAX_VALUE_CHARS = 2000  # a longer value is shown, never compared

NOT_SAID = object()  # "the issue does not say" (None is a value an issue can quote)

# What may wrap a literal argument: `chunked(list(range(7)), 3)` is as literal as it gets.
_PURE = frozenset({"list", "tuple", "set", "frozenset", "dict", "range", "sorted", "str"})

_VALUE = r"(`[^`\n]{1,300}`|True|False|None|-?\d+(?:\.\d+)?|'[^'\n]{0,300}'|\"[^\"\n]{0,300}\")"
# "... returns False", "(two spaces) returns 3", "gives `61m 1s`", "raises `ValueError`"
_NOW = re.compile(
    r"\s*(?:\([^)\n]{0,60}\)\s*)?,?\s*(?:now\s+|currently\s+|still\s+)?"
    r"(returns|gives|is|yields|produces|evaluates to|comes out as|prints|outputs|==|->|=>|→)\s+"
    + _VALUE
)
_RAISES = re.compile(r"\s*(?:\([^)\n]{0,60}\)\s*)?,?\s*raises\s+`?([A-Za-z_]\w*)`?")
# "it should be `2.5`", "instead of `&lt;b&gt;`", "the docstring says `[10, 30, 50]`"
# (quoted values only: "should refill 5 tokens" says nothing a test can assert)
_CUE = re.compile(
    r"\b(?:should|must|instead of|expected|expect|supposed to|promises|says|want|correct)"
    r"\b[^`.;]{0,40}?(`[^`\n]{1,300}`|\bTrue\b|\bFalse\b|\bNone\b|\"[^\"\n]{0,300}\")"
)
# "it should raise `X`", "should have thrown", "should fail with", "expected ... raised"
_RAISE = re.compile(
    r"\b(?:rais(?:e|es|ed|ing)|throw(?:s|n|ing)?|fail(?:s|ing)? with|errors? out)\b"
)
_RAISED_AFTER = re.compile(r"\s*(?:to be|is|be|being|gets?)\s+(?:raised|thrown)\b")
_NOT = re.compile(r"\b(?:not|never)\b|n't\b")  # "it should not raise but return `None`"
# "... returns `3` as documented": a sentence about what is right, not the bug
_RIGHT = re.compile(r"^[^.;\n]{0,40}\b(?:correct(?:ly)?|as documented|as expected|is right|fine)\b")


@dataclass(frozen=True)
class Example:
    written: str  # the call as the issue wrote it
    name: str  # the function or method called last (a suspect's name)
    call: str  # the call rebuilt from its literals, module prefixes dropped
    imports: tuple[str, ...]  # what the rebuilt call needs
    now: Any = NOT_SAID  # what the issue says it gives now (the bug), when it quotes it
    raises: str = ""  # ... or the exception it says it raises now
    expected: Any = NOT_SAID  # what the issue says it should give
    expected_code: bool = False  # ... written as code, not a value (`dict.update`, `x`)
    wants_raise: bool = False  # the issue says it should raise: no value to assert
    # observed on the base (filled by ``observe``)
    shown: str = ""  # repr, or "raises X: message"
    value: Any = NOT_SAID  # the repr read back, when it is a literal
    raised: str = ""
    listed: bool = False  # it gave an iterator; ``value`` is its list
    args: tuple[str, ...] = field(default=(), compare=False)  # ast dumps of its arguments

    @property
    def confirmed(self) -> bool:
        """The base does what the issue says it does: the example shows the bug."""
        if self.raises:
            return self.raised == self.raises
        return self.now is not NOT_SAID and not self.raised and same_value(self.now, self.value)

    @property
    def wanted(self) -> Any:
        """What the issue says it should give, when that can be what the call gives (a
        `1.10 > 1.9` after "must compare" is no result of ``is_newer``). When the call
        raises on the base there is no value to compare its kind with, so what reads as
        code is no value: "`dict.update`" after "expected" names code, `61m 1s` does not."""
        if self.expected is NOT_SAID:
            return NOT_SAID
        if (self.raised and not self.expected_code) or _kin(self.expected, self.value):
            return self.expected
        return NOT_SAID

    def assertion(self) -> str | None:
        """The test line the issue's words give, or None when they give none (nor when
        the issue says it should raise: no value of it can be asserted)."""
        if self.wants_raise:
            return None
        call = f"list({self.call})" if self.listed else self.call
        expected = self.wanted
        if expected is not NOT_SAID:
            if same_value(expected, self.value):
                return None  # the base gives what the issue asks for: it shows nothing
            # `is` for None and the bools: ruff (E711, E712) flags `== None` in the patch
            op = "is" if expected is None or isinstance(expected, bool) else "=="
            return f"assert {call} {op} {expected!r}"
        if not self.confirmed or self.raises:
            return None
        if isinstance(self.now, bool):
            return f"assert {call} is {not self.now}"
        if self.now is None:
            return f"assert {call} is not None"
        return f"assert {call} != {self.now!r}"


def same_value(a: Any, b: Any) -> bool:
    if b is NOT_SAID or a is NOT_SAID:
        return False
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    try:
        return bool(a == b)
    except Exception:  # values read back from literals: never, but fail closed
        return False


def _kin(a: Any, b: Any) -> bool:
    """Values of one kind: `2.5` may be what `3` should have been, `IV` not what `[1]`."""
    number = (int, float, complex)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    return (isinstance(a, number) and isinstance(b, number)) or type(a) is type(b)


def literal(node: ast.AST) -> bool:
    """A literal, or a pure builtin (``list``, ``range``...) of literals."""
    if isinstance(node, ast.keyword):
        return node.arg is not None and literal(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _PURE:
        return all(literal(a) for a in [*node.args, *node.keywords])
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False
    return True


def _dotted(node: ast.AST) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else [*inner, node.attr]
    return None


def _rebuild(node: ast.expr, idx: Index, imports: list[str]) -> str | None:
    """The call with module prefixes dropped and the import it needs recorded; None
    unless every argument is literal and every name is one the repository defines."""
    if not isinstance(node, ast.Call) or not all(literal(a) for a in [*node.args, *node.keywords]):
        return None
    args = ", ".join(
        [ast.unparse(a) for a in node.args]
        + [f"{k.arg}={ast.unparse(k.value)}" for k in node.keywords]
    )
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
        inner = _rebuild(func.value, idx, imports)  # IniConfig(...).get(...)
        return None if inner is None else f"{inner}.{func.attr}({args})"
    dotted = _dotted(func)
    if not dotted:
        return None
    name, prefix = dotted[-1], ".".join(dotted[:-1])
    paths = idx.defines.get(name, [])
    # `six.ensure_text` is six's; `units.convert` is units.py's, not conv/units.py's
    fitting = [p for p in paths if not prefix or _within(module_name(p), prefix)] or paths
    if len({module_name(p) for p in fitting}) != 1:
        return None
    line = f"from {module_name(fitting[0])} import {name}"
    if line not in imports:
        imports.append(line)
    return f"{name}({args})"


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(f"{prefix}.") or module.endswith(f".{prefix}")


def last_name(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _code(text: str) -> bool:
    """Whether ``text`` reads as a name, an attribute or a call: code, not a value."""
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return isinstance(node, (ast.Name, ast.Attribute, ast.Call))


def _value(text: str) -> Any:
    """A quoted value as Python: a literal, or the text itself (`61m 1s` is a string)."""
    if text.startswith("`") and text.endswith("`"):
        text = text[1:-1].strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return text


def examples(task: Task, idx: Index, suspects: Sequence[Suspect]) -> list[Example]:
    """The calls the task writes as code of a suspected function or method, with literal
    arguments only, and what the words after each say it gives and should give."""
    names = {s.symbol.name for s in suspects}
    found: list[Example] = []
    for doc in [task.title, task.instructions, *(d.text for d in task.documents)]:
        spans = list(re.finditer(r"`([^`\n]{3,300})`", doc))
        calls: list[tuple[re.Match[str], ast.Call]] = []
        for m in spans:
            try:
                node = ast.parse(m.group(1).strip(), mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            if isinstance(node, ast.Call) and last_name(node) in names and _has_args(node):
                calls.append((m, node))
        for n, (m, node) in enumerate(calls):
            imports: list[str] = []
            call = _rebuild(node, idx, imports)
            if call is None:
                continue
            end = calls[n + 1][0].start() if n + 1 < len(calls) else len(doc)
            paragraph = doc.find("\n\n", m.end())
            after = doc[m.end() : min(end, paragraph if paragraph >= 0 else end, m.end() + 400)]
            example = _read(after, m.group(1).strip(), node, call, tuple(imports))
            same = [i for i, e in enumerate(found) if e.call == call]
            if not same:
                found.append(example)
            elif _says(example) and not _says(found[same[0]]):  # the title's, then the body's
                found[same[0]] = example
    return found[:MAX_EXAMPLES]


def _says(e: Example) -> bool:
    return e.now is not NOT_SAID or bool(e.raises) or e.expected is not NOT_SAID


def _has_args(node: ast.Call) -> bool:
    # No arguments: what it returns is the environment's, not the example.
    return bool(node.args or node.keywords) or (
        isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call)
    )


def _read(after: str, written: str, node: ast.Call, call: str, imports: tuple[str, ...]) -> Example:
    example = Example(
        written,
        last_name(node),
        call,
        imports,
        args=tuple(ast.dump(a) for a in [*node.args, *node.keywords]),
    )
    rest = after
    if (now := _NOW.match(after)) and not _RIGHT.match(after[now.end() :]):
        example = replace(example, now=_value(now.group(2)))
        rest = after[now.end() :]
    elif raises := _RAISES.match(after):
        example = replace(example, raises=raises.group(1))
        rest = after[raises.end() :]
    if cue := _CUE.search(rest):
        said = cue.group(0)[: cue.start(1) - cue.start(0)]  # the words before the value
        raised = (verb := _RAISE.search(said)) and not _NOT.search(said[: verb.start()])
        if raised or _RAISED_AFTER.match(
            rest[cue.end() :]
        ):  # "should raise `X`", "`X` to be raised"
            return replace(example, wants_raise=True)
        text = cue.group(1).strip("`").strip()
        example = replace(example, expected=_value(cue.group(1)), expected_code=_code(text))
    return example


async def observe(ws: FixContext, found: list[Example]) -> list[Example]:
    """What each example's call gives on the base, run in the sandbox."""
    if not found:
        return []
    lines = ["import json", "out = []"]
    for e in found:
        lines += [
            "try:",
            *(f"    {line}" for line in e.imports),
            f"    v = {e.call}",
            "    listed = not isinstance(v, (str, bytes, list, tuple, dict, set, frozenset))"
            " and hasattr(v, '__next__')",
            "    if listed:",
            "        v = list(v)",
            "    out.append({'repr': repr(v), 'listed': listed})",
            "except Exception as e:",
            "    out.append({'raised': type(e).__name__, 'message': str(e)[:100]})",
        ]
    lines.append("print(json.dumps(out))")
    values = await printed_list(ws, lines, name="repair-observe")
    seen: list[Example] = []
    for e, v in zip(found, values, strict=False):
        if not isinstance(v, dict):
            continue
        if v.get("raised"):
            raised = str(v["raised"])[:100]
            shown = f"raises {raised}: {str(v.get('message', ''))[:100]}"
            seen.append(replace(e, raised=raised, shown=shown))
            continue
        text = str(v.get("repr", ""))
        value = _value(text) if len(text) <= MAX_VALUE_CHARS else NOT_SAID
        if value is not NOT_SAID and isinstance(value, str) and value == text:
            value = NOT_SAID  # not a literal: an object's repr
        listed = bool(v.get("listed"))
        shown = f"list(...) gives {text}" if listed else text
        seen.append(replace(e, shown=shown[:MAX_SHOWN], value=value, listed=listed))
    return seen


async def printed_list(ws: FixContext, lines: Sequence[str], *, name: str, **run: Any) -> list[Any]:
    """The JSON list a Python script (``lines``) prints last, run in the sandbox (``run``:
    more of :meth:`FixContext.run`'s arguments); [] when it failed or printed none."""
    done = await ws.run(["python", "-c", "\n".join(lines)], name=name, timeout=60, **run)
    try:
        value = json.loads(done.stdout.strip().splitlines()[-1]) if done.ok else []
    except (ValueError, IndexError):
        value = []
    return value if isinstance(value, list) else []


def example_test(found: Sequence[Example]) -> tuple[list[str], list[str]]:
    """The imports and the test functions the issue's words give (none: ``[], []``)."""
    imports: list[str] = []
    tests: list[str] = []
    for e in found:
        line = e.assertion()
        if line is None:
            continue
        imports += [i for i in e.imports if i not in imports]
        tests.append(f"def test_issue_example_{len(tests) + 1}():\n    {line}\n")
    return imports, tests
