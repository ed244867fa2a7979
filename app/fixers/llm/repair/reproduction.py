"""The repair strategy's reproduction: a test that shows the bug before any fix.

When no test fails yet (an issue, not a red check), the model is asked for a small
pytest test from the issue's own example. A small model copies the wrong value the issue
quotes as the expected one, so the example's calls (literal arguments only, rebuilt, never
run as written) are run on the base in the sandbox first and the prompt says what they
give now. A written test is kept only if it fails on the base for the bug's reason — an
assertion, an exception the task names, or one the repository's own code defines — and
never for an ImportError, a NameError, a SyntaxError, a missing fixture or an assertion
that compares with a function (a fixture used as a value: no fix could pass it); the
imports it forgot are added. When no two kept tests agree on what the code should do
(and the issue's own words make no test), a second batch is drawn, and a third when
none was kept. Where kept tests expect different results of one call, the majority's
expectation wins. Beside the model's tests, the issue's own words make one where
they say what a call gives and should (app/fixers/llm/repair/examples.py), and a model's
assertion of the bug's own result is taken out of its test. The kept tests stay in the
tree, in one file: the patch's reproduction, checked again by the session against the
base.
"""

from __future__ import annotations

import ast
import posixpath
import uuid
from collections import Counter
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.fixers.llm.answers import code_blocks, normalised, parse
from app.fixers.llm.localize import Index, Suspect
from app.fixers.llm.repair.agreement import agreed, expectations, majority
from app.fixers.llm.repair.bug_reason import reproduces
from app.fixers.llm.repair.contradictions import strip_contradictions
from app.fixers.llm.repair.examples import Example, example_test, examples, observe
from app.fixers.llm.repair.repro_prompt import repro_prompt
from app.fixers.llm.repair.testruns import (
    Tests,
    failure_of,
    free_path,
    run_tests,
    tests_folder,
    with_imports,
)
from app.sessions.files import remove_confined, write_confined
from app.sessions.fix_context import FixContext
from app.sessions.task import Task
from app.words import plural


class Sample(Protocol):
    """k answers to one prompt, what the fixer's sampling gives: the first greedy, the
    rest hot; ``start`` answers drawn before by the same prompt (hot only, new seeds)."""

    def __call__(
        self, messages: list[dict[str, Any]], k: int, start: int = 0
    ) -> Awaitable[list[str]]: ...


@dataclass(frozen=True)
class Reproduction:
    path: str | None  # the kept test, in the tree; None when none was kept
    note: str  # how it failed on the base and how many samples agreed, or why none
    output: str = ""  # what it printed failing on the base, trimmed (for the repair prompt)
    # The issue's own example fails too, or two of the model's tests agree on what the
    # code should do: a judge for changes no model wrote (app/fixers/llm/repair/mechanical.py).
    strong: bool = False


REPRO_SAMPLES = 3
REPRO_BATCHES = 3  # the second when the first showed nothing for sure, the third nothing


def test_in_answer(answer: str) -> str | None:
    """The test file an answer writes: its first block that parses and has a test."""
    for block in code_blocks(answer):
        module = parse(block)
        if module is not None and any(
            isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")
            for n in ast.walk(module)
        ):
            return block.rstrip("\n") + "\n"
    return None


def unpassable(source: str, suspects: Sequence[Suspect]) -> str | None:
    """Why no fix could ever make a test pass, when one is plain from its code, else
    None: it defines its own copy of the code under test (a small model may paste the
    whole buggy class above its test, which then fails on the base for the bug's
    reason), or the code under test decorates a test function itself, so pytest calls
    the test through it (``@retry`` on ``test_retry``, whose own undecorated helper
    raises every time)."""
    module = parse(source)
    if module is None:
        return None
    imported = {
        a.asname or a.name for n in module.body if isinstance(n, ast.ImportFrom) for a in n.names
    }
    # A suspect's name the test both imports and defines: its own definition wins.
    wanted = imported & {s.symbol.qualname.split(".")[0] for s in suspects}
    defined = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for node in module.body:
        if isinstance(node, defined) and node.name in wanted and not node.name.startswith("test"):
            return f"defines its own `{node.name}`: it would test that copy, not the code"
    names = {s.symbol.qualname.split(".")[-1] for s in suspects}
    for test in ast.walk(module):
        if isinstance(test, (ast.FunctionDef, ast.AsyncFunctionDef)) and test.name.startswith(
            "test"
        ):
            for decorator in test.decorator_list:
                called = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = getattr(called, "attr", None) or getattr(called, "id", "")
                if name in names:
                    return f"decorates the test itself with `{name}`: no fix could make it pass"
    return None


async def _on_base(ws: FixContext, folder: str, n: str, source: str) -> tuple[Tests | None, str]:
    """The test run alone on the base, and what it printed failing (its throwaway path
    written ``{path}``)."""
    rel = posixpath.join(folder, f"test_patchwarden_repro_{n}_{uuid.uuid4().hex[:6]}.py")
    write_confined(ws.tree, rel, source.encode())
    ws.sandbox.prepare_writable(ws.tree)
    try:
        tests = await run_tests(ws, extra=[rel], name="repair-reproduce")
    finally:
        remove_confined(ws.tree, rel)
    return tests, failure_of(tests, rel).replace(rel, "{path}")


def merged(model: str | None, imports: list[str], own: list[str]) -> str:
    """One file: the model's test (if one was kept), then the issue's examples' tests,
    with the imports they need and the model's file lacks, at the top."""
    if model is None:
        return "\n".join(imports) + "\n\n\n" + "\n\n".join(own)
    if not own:
        return model
    have = {
        a.asname or a.name
        for node in ast.walk(parse(model) or ast.Module(body=[], type_ignores=[]))
        if isinstance(node, ast.ImportFrom)
        for a in node.names
    }
    lines = [i for i in imports if i.rsplit(" ", 1)[-1] not in have]
    head = "\n".join(lines) + "\n" if lines else ""
    return head + model.rstrip("\n") + "\n\n\n" + "\n\n".join(own)


@dataclass
class _Judged:
    """The model's tests judged so far, over every batch."""

    kept: list[tuple[str, str]] = field(default_factory=list)  # (source, how it failed)
    seen: set[str] = field(default_factory=set)
    reasons: Counter[str] = field(default_factory=Counter)
    printed: dict[str, str] = field(default_factory=dict)  # source -> its base output
    stripped: int = 0
    answers: int = 0


async def _judge(
    ws: FixContext,
    task: Task,
    idx: Index,
    suspects: Sequence[Suspect],
    found: Sequence[Example],
    folder: str,
    answers: list[str],
    judged: _Judged,
) -> None:
    """Each answer's test run on the base and kept if it fails for the bug's reason."""
    for answer in answers:
        n = judged.answers
        judged.answers += 1
        source = test_in_answer(answer)
        if source is None:
            judged.reasons["no test in the answer"] += 1
            continue
        why = unpassable(source, suspects)
        if why:
            judged.reasons[why] += 1
            continue
        source, gone = strip_contradictions(with_imports(source, idx), found)
        judged.stripped += gone
        key = normalised(source)
        if key in judged.seen:
            judged.kept += [(s, w) for s, w in judged.kept if normalised(s) == key][:1]
            continue
        judged.seen.add(key)
        tests, judged.printed[source] = await _on_base(ws, folder, str(n), source)
        verdict, why = reproduces(tests, task, idx, source)
        if verdict:
            judged.kept.append((source, why))
        else:
            judged.reasons[why] += 1


async def reproduce(
    ws: FixContext, task: Task, idx: Index, suspects: Sequence[Suspect], sample: Sample
) -> Reproduction:
    """A test that shows the bug, kept in the tree (the patch will have it), or None
    and why not (see the module's docstring and app/fixers/llm/repair/examples.py)."""
    ws.progress("fix: a test that shows the problem")
    found = await observe(ws, examples(task, idx, suspects))
    prompt = repro_prompt(task, idx, suspects, found)
    folder = tests_folder(idx)
    imports, own, own_why, own_printed = await _own_example(ws, task, idx, folder, found)
    judged = _Judged()
    if own_why and not own:
        judged.reasons[f"the issue's example {own_why}"] += 1
    # A second batch when the first showed nothing (a small model's tests may fail for
    # the wrong reason more often than not), or no two tests that agree (one test alone
    # may expect the wrong value).
    # A third when still none is kept (a few more answers often hold one that fails for
    # the bug's reason where the first six passed on the base or failed otherwise).
    for batch in range(REPRO_BATCHES):
        if batch and (own or agreed(judged.kept) or judged.answers < batch * REPRO_SAMPLES):
            break  # shown beyond doubt, or the budget gave fewer answers than asked
        if batch > 1 and judged.kept:
            break
        answers = await sample(prompt, REPRO_SAMPLES, batch * REPRO_SAMPLES)
        await _judge(ws, task, idx, suspects, found, folder, answers, judged)
    kept, printed = judged.kept, judged.printed
    chosen = majority(kept)
    if chosen is None and not own:
        return Reproduction(None, _none_kept(judged))
    name = suspects[0].symbol.qualname.replace(".", "_").lower()
    rel = free_path(ws.tree, posixpath.join(folder, f"test_{name}_issue.py"))
    source = merged(chosen[0] if chosen else None, imports, own)
    write_confined(ws.tree, rel, source.encode())
    ws.sandbox.prepare_writable(ws.tree)
    agree = sum(1 for s, _ in kept if expectations(s) == expectations(chosen[0])) if chosen else 0
    output = "\n".join([printed[chosen[0]] if chosen else "", own_printed if own else ""])
    return Reproduction(
        rel,
        "; ".join(_notes(judged, chosen, agree, own, own_why)),
        output.strip().replace("{path}", rel),
        strong=bool(own) or agree > 1,
    )


async def _own_example(
    ws: FixContext, task: Task, idx: Index, folder: str, found: Sequence[Example]
) -> tuple[list[str], list[str], str, str]:
    """The issue's own words made a test without the model, kept on the same terms:
    its imports, its assertions (none when it does not reproduce), why, and its output."""
    imports, own = example_test(found)
    if not own:
        return imports, own, "", ""
    tests, printed = await _on_base(ws, folder, "example", merged(None, imports, own))
    verdict, why = reproduces(tests, task, idx, merged(None, imports, own))
    return imports, own if verdict else [], why, printed


def _none_kept(judged: _Judged) -> str:
    """Why no test was kept: the commonest reasons the model's tests failed otherwise."""
    reasons, stripped = judged.reasons, judged.stripped
    return (
        "no test the model wrote failed on the base for the "
        + (
            "bug's reason: " + "; ".join(f"{n} x {r}" for r, n in reasons.most_common(3))
            if reasons
            else "bug's reason"
        )
        + (
            f" ({plural(stripped, 'assertion')} of what the issue says is the bug taken out)"
            if stripped
            else ""
        )
    )


def _notes(
    judged: _Judged, chosen: tuple[str, str] | None, agree: int, own: list[str], own_why: str
) -> list[str]:
    """What the PR body says of the reproduction: which test, and how sure."""
    notes = []
    if chosen:
        notes.append(
            f"fails on the base ({chosen[1]}); {len(judged.kept)} of {judged.answers} samples "
            f"failed for the bug's reason, {agree} agree on what it should do"
        )
    if own:
        notes.append(
            f"the issue's own example{'s' if len(own) > 1 else ''} "
            + ("also " if chosen else "")
            + f"fail{'' if len(own) > 1 else 's'} on the base ({own_why}) "
            "in a test Patchwarden wrote from the issue's words"
        )
    if judged.stripped:
        notes.append(
            f"{plural(judged.stripped, 'assertion')} of what the issue says is the bug taken out"
        )
    return notes
