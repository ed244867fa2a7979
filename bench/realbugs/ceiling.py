"""How far the model is from a real fix when it is told exactly where: an upper bound on
what better localisation can bring, with no test run.

    eval "$(.venv/bin/python scripts/model.py env)"
    .venv/bin/python bench/realbugs/ceiling.py --sources DIR --transcripts DIR \\
        [--ask lines|function] [--report PATH]

For each task of a run's transcripts (``agent_eval.py --report R`` writes them beside the
report, ``R.transcripts``) whose bug's fix changes one function of one file, the
product's own fix prompt — the run's, with the fix's function shown in place of the
suspect it showed — is asked, k times as the repair samples (the first greedy):

- ``--ask lines`` (the default): the lines the project's fix changes, each widened to
  its statement, shown apart and asked for again, corrected, and nothing else (the
  place given; :func:`lines_ask`);
- ``--ask function``: the round's own question, the whole function (the function
  given, not the place in it), begun as the repair begins it when
  ``PATCHWARDEN_LLM_PREFILL`` is set.

Each answer's lines are put in the place literally (an answer that writes the whole
function is read as that) and the function compared with the fix's, layout, comments
and docstring aside: **the fix** when it is the project's; **changed** when it is
neither that nor the function as it was (the tests might take it: an equivalent change
is not the project's); **unchanged**; **unreadable** (no code, or code that does not
parse). "The fix" is a lower bound on what the tests would accept with the place given;
"the fix" plus "changed" an upper one. A transcript keeps at most 4,000 characters of
a prompt: a task whose prompt was cut is left out, and said.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import difflib
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE.parent), str(ROOT)]

from app.config import Settings  # noqa: E402
from app.fixers.llm.answers import code_blocks, definitions, parse  # noqa: E402
from app.fixers.llm.localize import Index, index  # noqa: E402
from app.fixers.llm.model_client import ModelClient, ModelError  # noqa: E402
from app.fixers.llm.repair.job import HOT  # noqa: E402
from app.fixers.llm.repair.prompt import (  # noqa: E402
    SYSTEM,
    _the_ask,
    _the_code,
    callees,
    shown_function,
    too_long_to_write,
)
from app.fixers.llm.repair.splice import Target, header, target_of  # noqa: E402
from realbugs import RealBug, changed_units, extract, file_at, load, source_of  # noqa: E402

DEFAULT_REPORT = ROOT / ".eval" / "realbugs-ceiling.json"
CUT = "\n[... cut]"  # how a transcript ends a message it shortened (repair.job.note)
CODE = re.compile(
    r"(?<=\n\n)The bug is probably in .*?(?=\n\nThis test must pass|\n\nIt fails now)", re.S
)


def target_in(idx: Index, path: str, qualname: str) -> Target | None:
    symbol = next((s for s in idx.symbols if s.path == path and s.qualname == qualname), None)
    return target_of(idx, symbol) if symbol is not None else None


def essence(source: str) -> str | None:
    """The function's syntax, its docstring left out (the prompt shortens it); None when
    it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)), None)
    if fn is None:
        return None
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        fn.body = body[1:] or [ast.Pass()]
    return ast.dump(fn)


def with_ask(messages: list[dict[str, Any]], ask: str) -> list[dict[str, Any]]:
    """The round's messages with another question in place of its last paragraph (the
    ask): the rest, fences and all, is the same text, which the server has cached."""
    *head, user = messages
    content = user["content"]
    return [*head, {**user, "content": content[: content.rindex("\n\n")] + "\n\n" + ask}]


def lines_ask(name: str, lines: str) -> str:
    return (
        f"These lines of `{name}` are wrong:\n```python\n{lines}\n```\n"
        "Write them corrected: only those lines, in one ```python block, nothing else."
    )


def statement_at(function: str, number: int) -> tuple[int, int] | None:
    """The innermost statement of ``function`` on line ``number``: a simple one whole,
    a compound one (``if``, ``for``, ``def`` ...) by its header only; a clause's own
    line (``else:``, ``except X:``, a decorator) alone. None for a line outside the
    function or a function that does not parse."""
    tree = parse(function)
    if tree is None or not 1 <= number <= len(function.splitlines()):
        return None
    found: tuple[int, int] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.stmt, ast.excepthandler)):
            continue
        first, last = node.lineno, node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            inner = body[0]
            start = min([inner.lineno, *(d.lineno for d in getattr(inner, "decorator_list", []))])
            last = max(first, start - 1 if start > first else first)
        if first <= number <= last and (found is None or last - first <= found[1] - found[0]):
            found = (first, last)
    return found or (number, number)


def _margin(lines: list[str]) -> str:
    """The leading whitespace all of ``lines`` that are not blank share."""
    margins = [line[: len(line) - len(line.lstrip())] for line in lines if line.strip()]
    shared = min(margins, key=len) if margins else ""
    while any(not m.startswith(shared) for m in margins):
        shared = shared[:-1]
    return shared


def lines_of(function: str, span: tuple[int, int]) -> str:
    """The statement's lines without the margin they share: what the model is asked to
    write again."""
    first, last = span
    lines = function.splitlines()[first - 1 : last]
    margin = _margin(lines)
    return "\n".join(line.removeprefix(margin) for line in lines)


def changed_span(before: str, after: str) -> tuple[int, int] | None:
    """The lines of ``before`` (1-based) from the first to the last statement the change
    to ``after`` touches. Blank and comment lines do not count; lines inserted count
    as the statement they come before (after, at the end)."""
    a, b = before.splitlines(), after.splitlines()
    code = [bool(line.strip()) and not line.strip().startswith("#") for line in a]
    touched: list[int] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if i2 > i1:  # lines of before replaced or deleted
            touched += [n for n in range(i1 + 1, i2 + 1) if code[n - 1]]
            if any(code[n - 1] for n in range(i1 + 1, i2 + 1)):
                continue
        if not any(line.strip() and not line.strip().startswith("#") for line in b[j1:j2]):
            continue  # only blank lines or comments came in or went
        after_lines = [n for n in range(i2 + 1, len(a) + 1) if code[n - 1]]
        before_lines = [n for n in range(i1, 0, -1) if code[n - 1]]
        touched += (after_lines or before_lines)[:1]
    spans = [s for n in touched if (s := statement_at(before, n))]
    return (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None


def fix_lines(before: str, after: str, span: tuple[int, int]) -> str:
    """The lines of ``after`` that take the place of ``span`` of ``before``: what an
    answer that writes the project's fix there says (its margin taken off)."""
    a, b = before.splitlines(), after.splitlines()
    first, last = span[0] - 1, span[1]  # as a slice of a
    start, end = 0, len(b)
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if i1 <= first < i2 or i1 == i2 == first:
            start = j1 + (first - i1 if op == "equal" else 0)
        if i1 < last <= i2:
            end = j1 + (last - i1) if op == "equal" else j2
    lines = b[start:end]
    margin = _margin(lines)
    return "\n".join(line.removeprefix(margin) for line in lines)


def spliced(function: str, span: tuple[int, int], answer: str, name: str) -> str | None:
    """The function with the answer's last code block in the lines of ``span``, its
    margin made theirs; the answer's function when it writes one whole."""
    whole = definitions(answer, name).function
    if whole is not None:
        return whole
    written = next((b for b in reversed(code_blocks(answer)) if b.strip()), "")
    if not written:
        return None
    lines = function.splitlines()
    first, last = span
    margin = _margin(lines[first - 1 : last])
    new = written.split("\n")
    own = _margin(new)
    new = [margin + line.removeprefix(own) if line.strip() else "" for line in new]
    return "\n".join([*lines[: first - 1], *new, *lines[last:]]) + "\n"


def verdict(answer: str, function: str, span: tuple[int, int] | None, name: str, want: str) -> str:
    """What one answer makes of the function (this module's docstring); ``span``: the
    lines it was asked for, None when it was asked for the whole function."""
    found = spliced(function, span, answer, name) if span else definitions(answer, name).function
    got = essence(found) if found else None
    if got is None:
        return "unreadable"
    if got == want:
        return "the fix"
    return "unchanged" if got == essence(function) else "changed"


def fix_prompt(transcript: Path, idx: Index, target: Target) -> str | None:
    """The run's first fix prompt with the fix's function (and what it calls) shown;
    None when the run wrote none, or its transcript cut it."""
    entries = json.loads(transcript.read_text())
    asked = [e["content"] for e in entries if e.get("role") == "user"]
    first = next((c for c in asked if CODE.search(c)), None)
    if first is None or first.endswith(CUT):
        return None
    code = _the_code(idx, target)
    called = callees(idx, target.symbol, shown={n for n, _, _ in target.constants})
    if called:
        code += "\n\nIt calls:\n```python\n" + "\n".join(called) + "\n```"
    return CODE.sub(lambda _m: code, first, count=1)


async def ask(
    client: ModelClient, messages: list[dict[str, Any]], k: int, prefill: str = ""
) -> list[str]:
    """k answers as the repair samples them (:func:`~app.fixers.llm.repair.job.sample`):
    the first greedy, the rest hot, one new seed a request when the server gives one
    choice a request."""
    asked = [*messages, {"role": "assistant", "content": prefill}] if prefill else messages
    said: list[str] = []
    while len(said) < k:
        greedy = not said
        done = await client.complete(
            asked,
            temperature=0.0 if greedy else HOT,
            n=1 if greedy else k - len(said),
            seed=None if greedy else 1000 + len(said),
        )
        said += list(done.choices or (done.content,))[: k - len(said)]
    return [a if a.startswith(prefill) else prefill + a for a in said]


async def ceiling(
    bug: RealBug, sources: Path, transcript: Path, client: ModelClient, settings: Settings,
    whole: bool,
) -> dict[str, Any]:  # fmt: skip
    row: dict[str, Any] = {"task": transcript.name.removesuffix(".json")}
    units = sorted(changed_units(bug, sources))
    if len(units) != 1 or ":=" in units[0]:
        return {**row, "why": f"the fix changes {len(units)} units: {', '.join(units)}"}
    path, qualname = units[0].split(":", 1)
    clone = source_of(bug, sources)
    fixed = file_at(clone, bug.fixed, path)
    if fixed is None:
        return {**row, "why": "the fix removes the file"}
    with tempfile.TemporaryDirectory() as tmp:
        extract(clone, bug.buggy, Path(tmp) / "buggy")
        idx = index(Path(tmp) / "buggy")
        (Path(tmp) / "fixed" / path).parent.mkdir(parents=True)
        (Path(tmp) / "fixed" / path).write_bytes(fixed)
        after_idx = index(Path(tmp) / "fixed")
    target, after = target_in(idx, path, qualname), target_in(after_idx, path, qualname)
    if target is None or after is None:
        return {**row, "why": f"{qualname} is not a function of both trees"}
    function, fix = shown_function(idx, target), shown_function(after_idx, after)
    want, span = essence(fix), changed_span(function, fix)
    if want is None or span is None or want == essence(function):
        return {**row, "why": "the fix's function does not parse, or changes no statement"}
    if whole and too_long_to_write(idx, target, client.max_output_tokens):
        return {**row, "why": "the repair would not ask for the function: too long to write"}
    content = fix_prompt(transcript, idx, target)
    if content is None:
        return {**row, "why": "the run's fix prompt is cut in its transcript, or there is none"}
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}]
    name, lines = target.symbol.name, lines_of(function, span)
    if whole:
        prefill = f"```python\n{header(idx, target.symbol)}\n" if settings.llm_prefill else ""
        question = with_ask(messages, _the_ask(target))
        answers = await ask(client, question, settings.llm_samples, prefill)
    else:
        question = with_ask(messages, lines_ask(name, lines))
        answers = await ask(client, question, settings.llm_samples)
    verdicts = [verdict(a, function, None if whole else span, name, want) for a in answers]
    ideal = fix_lines(function, fix, span)
    reachable = verdict(f"```python\n{ideal}\n```", function, span, name, want) == "the fix"
    return {**row, "unit": qualname, "span": list(span), "asked": lines, "fix": ideal,
            "reachable": reachable, "answers": answers, "verdicts": verdicts}  # fmt: skip


async def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sources", type=Path, required=True)
    p.add_argument("--transcripts", type=Path, required=True)
    p.add_argument("--ask", choices=("lines", "function"), default="lines")
    p.add_argument("--report", type=Path, default=DEFAULT_REPORT)
    args = p.parse_args()
    settings = Settings()
    client = ModelClient(
        settings.llm_providers(),
        timeout=settings.llm_timeout_seconds,
        max_output_tokens=settings.llm_max_output_tokens,
    )
    bugs = {b.id: b for b in load()}
    rows = []
    for transcript in sorted(args.transcripts.glob("*.json")):
        bug = bugs.get(transcript.name.split(".")[0])
        if bug is None:
            continue
        try:
            row = await ceiling(
                bug, args.sources, transcript, client, settings, args.ask == "function"
            )
        except ModelError as exc:
            row = {"task": transcript.name.removesuffix(".json"), "why": f"model: {exc}"}
        rows.append(row)
        said = Counter(row.get("verdicts", []))
        print(f"{row['task']:21} {row.get('why') or dict(said)}", flush=True)
    await client.close()
    asked = [r for r in rows if "verdicts" in r]
    fixed = [r["task"] for r in asked if "the fix" in r["verdicts"]]
    changed = [r["task"] for r in asked if "changed" in r["verdicts"]]
    every = Counter(v for r in asked for v in r["verdicts"])
    told = "function" if args.ask == "function" else "place"
    print(
        f"told the {told}: the fix written on {len(fixed)} of {len(asked)} tasks {fixed}; "
        f"a change that is not the fix on {len(changed)}; answers {dict(every)}"
    )
    args.report.parent.mkdir(parents=True, exist_ok=True)
    report = {"ask": args.ask, "rows": rows, "fixed": fixed, "answers": every}
    args.report.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
