"""Tool calls written in the text of an answer, in the dialects small models use.

A model served without native tool calling (or one that ignores it: a small model on
llama.cpp may write ``tool_calls: null`` and put the call in its text) writes calls as:

- JSON, bare or in a fenced block: ``{"tool": "read_file", "arguments": {...}}``, with
  the name under ``tool``/``name``/``function`` and the arguments under
  ``arguments``/``args``/``parameters``/``input`` — or flat beside the name
  (``{"tool": "finish", "summary": "..."}``), or OpenAI's own shape
  (``{"function": {"name": ..., "arguments": "..."}}``), or with no name at all when the
  arguments say which tool it is (``{"path": ..., "old": ..., "new": ...}`` is an edit);
- Hermes / Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``;
- XML-ish: ``<tools><function name="finish" arguments='{...}'/></tools>``, and
  ``<function=name>{...}</function>`` or ``<function=name><parameter=path>x</parameter>
  </function>``.

JSON that is almost right is repaired where only one reading is possible (a trailing
comma, Python's ``True``/``None``, single quotes, a raw newline inside a string, a
Python triple-quoted string); when it cannot be read, :attr:`Parsed.problem` says
exactly what was wrong so that the model can be told. Nothing here runs a tool: the
agent decides what to do with what it finds, including a call that sits inside prose
(``Call.in_prose``), which it questions rather than obeys when that call is ``finish``.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

NAME_KEYS = ("tool", "name", "function", "tool_name")
ARGS_KEYS = ("arguments", "args", "parameters", "input", "params")
# Prose around a call beyond this many characters makes the call "in prose".
PROSE_CHARS = 160


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]
    dialect: str  # json | json-fenced | hermes | xml | function-tag
    in_prose: bool = False  # the answer explains around the call (an example, a plan)
    repaired: tuple[str, ...] = ()  # what was mended to read it


@dataclass(frozen=True)
class Parsed:
    calls: list[Call] = field(default_factory=list)
    problem: str | None = None  # something looked like a call and could not be read

    @property
    def dialects(self) -> list[str]:
        return [c.dialect for c in self.calls]


def parse(content: str, tools: Mapping[str, Mapping[str, Any]]) -> Parsed:
    """The tool calls in ``content``; ``tools``: name -> JSON Schema of its arguments
    (``properties``, ``required``), to infer an unnamed call and to check names."""
    text = content or ""
    found = [f for finder in (_hermes, _function_tags, _xml_functions) for f in finder(text, tools)]
    if not any(call for call, _, _ in found):
        found += _json_calls(text, tools)  # JSON only where no tagged call is
    calls = [call for call, _, _ in found if call is not None]
    spans = [span for call, span, _ in found if call is not None]
    problems = [problem for call, _, problem in found if call is None and problem]
    if calls:
        prose = _prose(text, spans)
        in_prose = len(prose) > PROSE_CHARS
        calls = [
            Call(c.name, c.arguments, c.dialect, in_prose=in_prose, repaired=c.repaired)
            for c in calls
        ]
        return Parsed(calls=calls)
    return Parsed(problem=problems[0] if problems else None)


# -- the dialects ----------------------------------------------------------------------
Found = tuple[Call | None, tuple[int, int], str | None]

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.S)
_FUNCTION_TAG = re.compile(r"<function=([\w.-]+)>\s*(.*?)\s*(?:</function>|\Z)", re.S)
_PARAMETER_TAG = re.compile(r"<parameter=([\w.-]+)>\s*?\n?(.*?)\n?\s*</parameter>", re.S)
_XML_FUNCTION = re.compile(r"<function\s+([^>]*?)/?>", re.S)
_XML_ATTR = re.compile(r"""([\w-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')""", re.S)
_FENCE = re.compile(r"```[\w+-]*[ \t]*\n(.*?)```", re.S)


def _hermes(text: str, tools: Mapping[str, Mapping[str, Any]]) -> list[Found]:
    found: list[Found] = []
    for m in _HERMES.finditer(text):
        value, repaired, problem = _load(m.group(1))
        if not isinstance(value, dict):
            found.append((None, m.span(), problem and f"<tool_call>: {problem}"))
            continue
        call = _from_object(value, tools, "hermes", repaired)
        found.append((call, m.span(), None if call else _unknown(value, tools)))
    return found


def _function_tags(text: str, tools: Mapping[str, Mapping[str, Any]]) -> list[Found]:
    found: list[Found] = []
    for m in _FUNCTION_TAG.finditer(text):
        name, body = m.group(1), m.group(2)
        params = {p.group(1): p.group(2) for p in _PARAMETER_TAG.finditer(body)}
        if params:
            args: dict[str, Any] = {k: _scalar(v, name, k, tools) for k, v in params.items()}
            repaired: tuple[str, ...] = ()
        elif body.strip():
            value, repaired, problem = _load(body)
            if not isinstance(value, dict):
                found.append((None, m.span(), f"<function={name}>: {problem}"))
                continue
            args = value
        else:
            args, repaired = {}, ()
        found.append((_named(name, args, tools, "function-tag", repaired), m.span(), None))
    return found


def _xml_functions(text: str, tools: Mapping[str, Mapping[str, Any]]) -> list[Found]:
    found: list[Found] = []
    for m in _XML_FUNCTION.finditer(text):
        attrs = {a.group(1): a.group(2) if a.group(2) is not None else a.group(3)
                 for a in _XML_ATTR.finditer(m.group(1))}  # fmt: skip
        name = attrs.get("name")
        if not name:
            continue
        raw = attrs.get("arguments") or attrs.get("args") or "{}"
        value, repaired, problem = _load(_unescape_xml(raw))
        if not isinstance(value, dict):
            found.append((None, m.span(), f'<function name="{name}">: {problem}'))
            continue
        span = m.span()
        # A wrapping <tools>…</tools> belongs to the call, not to the prose around it.
        before = text.rfind("<tools>", 0, span[0])
        after = text.find("</tools>", span[1])
        if before != -1 and not text[before + 7 : span[0]].strip(" \n\t<>/"):
            span = (before, span[1])
        if after != -1 and not text[span[1] : after].strip():
            span = (span[0], after + len("</tools>"))
        found.append((_named(name, value, tools, "xml", repaired), span, None))
    return found


def _json_calls(text: str, tools: Mapping[str, Mapping[str, Any]]) -> list[Found]:
    """Calls as JSON objects: fenced blocks first, then bare objects in the text."""
    found: list[Found] = []
    fenced = list(_FENCE.finditer(text))
    for m in fenced:
        body = m.group(1).strip()
        if not body.startswith("{"):
            continue
        value, repaired, problem = _load(body)
        if not isinstance(value, dict):
            found.append((None, m.span(), problem and f"the JSON in your answer: {problem}"))
            continue
        call = _from_object(value, tools, "json-fenced", repaired)
        found.append((call, m.span(), None if call else _unknown(value, tools)))
    if any(f[0] for f in found):
        return found
    outside = _FENCE.sub(lambda m: " " * len(m.group(0)), text)
    for start, end, value in _objects(outside):
        call = _from_object(value, tools, "json", ())
        found.append((call, (start, end), None if call else _unknown(value, tools)))
    if not found:
        first, last = outside.find("{"), outside.rfind("}")
        if first != -1:
            candidate = outside[first : last + 1] if last > first else outside[first:]
            value, repaired, problem = _load(candidate)
            span = (first, first + len(candidate))
            if isinstance(value, dict):
                call = _from_object(value, tools, "json", repaired)
                found.append((call, span, None if call else _unknown(value, tools)))
            elif problem and _looks_like_call(candidate, tools):
                found.append((None, span, f"the JSON in your answer: {problem}"))
    return found


# -- turning objects into calls ----------------------------------------------------------
def _from_object(
    value: dict[str, Any], tools: Mapping[str, Mapping[str, Any]], dialect: str,
    repaired: tuple[str, ...],
) -> Call | None:  # fmt: skip
    """A call from a JSON object in one of the shapes models write, or None."""
    if isinstance(value.get("function"), dict):  # OpenAI's shape, written out as text
        fn = value["function"]
        return _named(fn.get("name"), fn.get("arguments", {}), tools, dialect, repaired)
    name = next((value[k] for k in NAME_KEYS if isinstance(value.get(k), str)), None)
    args_key = next((k for k in ARGS_KEYS if k in value), None)
    if name is not None:
        if args_key is not None:
            return _named(name, value[args_key], tools, dialect, repaired)
        flat = {k: v for k, v in value.items() if k not in NAME_KEYS and k != "type"}
        return _named(name, flat, tools, dialect, repaired)
    inferred = _infer(value, tools)
    if inferred is not None:
        return Call(inferred, value, dialect, repaired=(*repaired, f"tool inferred: {inferred}"))
    return None


def _named(
    name: Any, args: Any, tools: Mapping[str, Mapping[str, Any]], dialect: str,
    repaired: tuple[str, ...],
) -> Call | None:  # fmt: skip
    if not isinstance(name, str) or not name.strip():
        return None
    name = name.strip()
    if isinstance(args, str):
        loaded, more, _ = _load(args) if args.strip() else ({}, (), None)
        if not isinstance(loaded, dict):
            return None
        args, repaired = loaded, (*repaired, *more)
    if not isinstance(args, dict):
        return None
    return Call(name, args, dialect, repaired=repaired)


def _infer(value: dict[str, Any], tools: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The one tool whose required arguments are all here and which takes every key."""
    keys = set(value)
    if not keys:
        return None
    fits = [
        name
        for name, schema in tools.items()
        if set(schema.get("required", ())) <= keys <= set(schema.get("properties", {}))
    ]
    return fits[0] if len(fits) == 1 else None


def _unknown(value: dict[str, Any], tools: Mapping[str, Mapping[str, Any]]) -> str | None:
    if not _looks_like_call(json.dumps(value), tools):
        return None
    return (
        "your JSON names no tool: write "
        '{"tool": "<one of ' + ", ".join(sorted(tools)) + '>", "arguments": {...}}'
    )


def _looks_like_call(text: str, tools: Mapping[str, Any]) -> bool:
    return any(re.search(rf'["\']?{re.escape(name)}["\']?', text) for name in tools) or any(
        f'"{k}"' in text for k in (*NAME_KEYS, *ARGS_KEYS)
    )


def _scalar(raw: str, tool: str, key: str, tools: Mapping[str, Mapping[str, Any]]) -> Any:
    """A ``<parameter=key>`` value: kept as text, unless the schema wants a number."""
    kind = tools.get(tool, {}).get("properties", {}).get(key, {}).get("type")
    if kind == "integer":
        try:
            return int(raw.strip())
        except ValueError:
            return raw
    return raw


def _unescape_xml(raw: str) -> str:
    return (
        raw.replace("&quot;", '"').replace("&apos;", "'").replace("&lt;", "<")
        .replace("&gt;", ">").replace("&amp;", "&")
    )  # fmt: skip


# -- JSON, mended where only one reading is possible ------------------------------------------
def _load(raw: str) -> tuple[Any, tuple[str, ...], str | None]:
    """(value, what was repaired, the error if it cannot be read)."""
    text = raw.strip()
    try:
        return json.loads(text), (), None
    except json.JSONDecodeError as exc:
        first = exc
    # Each mend alone first (one may spoil what another would read: triple quotes
    # inside a string that only needed its raw newlines escaped), then all in turn.
    for name, mend in _MENDS:
        mended = mend(text)
        if mended != text:
            with contextlib.suppress(json.JSONDecodeError):
                return json.loads(mended), (name,), None
    repaired: list[str] = []
    for name, mend in _MENDS:
        mended = mend(text)
        if mended == text:
            continue
        text = mended
        repaired.append(name)
        try:
            return json.loads(text), tuple(repaired), None
        except json.JSONDecodeError:
            continue
    return None, (), f"{first.msg} at line {first.lineno} column {first.colno}"


def _raw_controls(text: str) -> str:
    """Newlines and tabs written raw inside strings, escaped (code in an ``edit``)."""
    out, in_string, escaped = [], False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            elif ch in "\n\r\t":
                ch = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch]
        elif ch == '"':
            in_string = True
        out.append(ch)
    return "".join(out)


_TRIPLE = re.compile(r'(:\s*)("""|\'\'\')(.*?)\2', re.DOTALL)


def _triple_quotes(text: str) -> str:
    """A value written as a Python triple-quoted string (a file's content, as small
    models do), as a JSON string of exactly the text between the quotes."""
    return _TRIPLE.sub(lambda m: m.group(1) + json.dumps(m.group(3)), text)


def _trailing_commas(text: str) -> str:
    return re.sub(r",(\s*[}\]])", r"\1", text)


def _python_literals(text: str) -> str:
    return re.sub(r"(?<![\w\"'])(True|False|None)(?![\w\"'])",
                  lambda m: {"True": "true", "False": "false", "None": "null"}[m.group(1)],
                  text)  # fmt: skip


def _single_quotes(text: str) -> str:
    """Python-style quoting, only when the text has no double quote to confuse."""
    if '"' in text:
        return text
    return text.replace("'", '"')


_MENDS: Sequence[tuple[str, Any]] = (
    ("triple-quoted string", _triple_quotes),
    ("raw newline in a string", _raw_controls),
    ("trailing comma", _trailing_commas),
    ("Python literal", _python_literals),
    ("single quotes", _single_quotes),
)


def _objects(text: str) -> list[tuple[int, int, dict[str, Any]]]:
    """Every top-level JSON object in ``text`` that parses as it is, in order."""
    found = []
    decoder = json.JSONDecoder()
    at = text.find("{")
    while at != -1:
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict):
            found.append((at, end, value))
        at = text.find("{", end)
    return found


def _prose(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` without the calls' spans, fences or whitespace: what the model said."""
    keep, at = [], 0
    for start, end in sorted(spans):
        keep.append(text[at:start])
        at = max(at, end)
    keep.append(text[at:])
    said = "".join(keep)
    said = re.sub(r"```\w*|</?tools>|</?tool_call>", " ", said)
    return " ".join(said.split())
