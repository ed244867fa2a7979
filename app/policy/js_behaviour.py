"""What added JavaScript and TypeScript lines make the code do, read from their syntax
tree (tree-sitter's JavaScript and TypeScript grammars), not from their text: a comment
or a log message that says ``child_process`` is neither, and ``const { exec: run } =
require('node:child_process')`` is a process however it is named afterwards.

Each run of consecutive added lines is parsed alone; tree-sitter recovers from half a
statement and still gives the nodes it could read. What counts:

- ``process``: ``child_process`` required or imported; ``spawn``, ``execSync``,
  ``execFile`` (and their ``Sync`` forms) called by those names;
- ``network``: ``http``, ``https``, ``net``, ``tls``, ``dgram``, ``dns`` and the usual
  HTTP clients required or imported; ``fetch(…)``, ``new XMLHttpRequest``,
  ``new WebSocket``;
- ``environment``: ``process.env`` (and ``Deno.env``);
- ``dynamic_code``: ``eval(…)``, ``new Function(…)``, ``vm`` required, a ``require`` or
  ``import()`` of anything but a string literal;
- ``outside_files``: a string that starts at ``/etc``, ``/root``, ``/home``, ``/proc``
  or ``~/``, and ``os.homedir()``.

Pure: lines in, ``(line, kind, what)`` out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Literal

from tree_sitter import Node

from app.policy.js_syntax import parse

JsKind = Literal["process", "network", "environment", "dynamic_code", "outside_files"]
Found = tuple[int, JsKind, str]  # (line, kind, what)

_PROCESS_MODULES = {"child_process"}
_NET_MODULES = {
    "http", "https", "http2", "net", "tls", "dgram", "dns", "axios", "node-fetch", "got",
    "undici", "ws", "request", "superagent",
}  # fmt: skip
_CODE_MODULES = {"vm"}
# Called by these names (a bare `exec(` is too common a name of one's own to count).
_PROCESS_CALLS = {"spawn", "spawnSync", "execSync", "execFile", "execFileSync"}
_NET_CONSTRUCTORS = {"XMLHttpRequest", "WebSocket"}
_OUTSIDE = ("/etc/", "/root/", "/home/", "/proc/", "~/")


def js_behaviours(path: str, lines: Iterable[tuple[int, str]]) -> list[Found]:
    """The behaviours of the added ``lines`` (number, text) of the file at ``path``."""
    found: list[Found] = []
    for block in line_runs(lines):
        text = "\n".join(t for _, t in block).encode("utf-8", "replace")
        tree = parse(path, text)
        for node, kind, what in _walk(tree.root_node):
            found.append((block[min(node.start_point[0], len(block) - 1)][0], kind, what))
    return found


def line_runs(lines: Iterable[tuple[int, str]]) -> Iterator[list[tuple[int, str]]]:
    """Runs of consecutive line numbers (each parsed alone: added lines are fragments)."""
    block: list[tuple[int, str]] = []
    for number, text in lines:
        if block and number != block[-1][0] + 1:
            yield block
            block = []
        block.append((number, text))
    if block:
        yield block


def _walk(root: Node) -> Iterator[tuple[Node, JsKind, str]]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield from _at(node)
        stack.extend(reversed(node.children))


def _at(node: Node) -> Iterator[tuple[Node, JsKind, str]]:
    kind = node.type
    if kind == "call_expression":
        yield from _call(node)
    elif kind == "new_expression":
        name = _text(node.child_by_field_name("constructor"))
        if name == "Function":
            yield node, "dynamic_code", "new Function"
        elif name in _NET_CONSTRUCTORS:
            yield node, "network", f"new {name}"
    elif kind == "member_expression":
        if _text(node) in ("process.env", "Deno.env"):
            yield node, "environment", _text(node)
    elif kind in ("string", "template_string"):
        # A module is named by a string however it is loaded: require, import, export …
        # from, `import x = require(…)`, `module.require`, escapes and all.
        value = _string(node) or ""
        yield from _module(node, value)
        if value.startswith(_OUTSIDE):
            yield node, "outside_files", value[:60]


def _call(node: Node) -> Iterator[tuple[Node, JsKind, str]]:
    callee = node.child_by_field_name("function")
    name = _text(callee)
    arguments = node.child_by_field_name("arguments")
    first = next(
        (a for a in (arguments.named_children if arguments else []) if a.type != "comment"), None
    )
    loads = name == "require" or name.endswith(".require")
    if loads or (callee is not None and callee.type == "import"):
        if first is None or _string(first) is None:  # a string names its module (_at)
            yield node, "dynamic_code", f"{name or 'import'}(<expression>)"
    elif name == "eval":
        yield node, "dynamic_code", "eval"
    elif name == "fetch":
        yield node, "network", "fetch"
    elif name in ("os.homedir", "homedir"):
        yield node, "outside_files", "os.homedir()"
    elif name.rsplit(".", 1)[-1] in _PROCESS_CALLS:
        yield node, "process", name


def _module(node: Node, module: str | None) -> Iterator[tuple[Node, JsKind, str]]:
    """The behaviour of loading ``module`` (a whole string: ``child_process``,
    ``node:http``, ``axios/lib/x``), if it is one watched."""
    if not module or module != module.strip() or " " in module:
        return
    name = module.removeprefix("node:").split("/", 1)[0]
    if name in _PROCESS_MODULES:
        yield node, "process", module or name
    elif name in _NET_MODULES:
        yield node, "network", module or name
    elif name in _CODE_MODULES:
        yield node, "dynamic_code", module or name


def _string(node: Node | None) -> str | None:
    """A string literal's value (a template without substitutions counts); None for
    anything else."""
    if node is None:
        return None
    if node.type == "string":
        return "".join(
            _unescape(_text(c)) if c.type == "escape_sequence" else _text(c)
            for c in node.named_children
        )
    if node.type == "template_string" and not any(
        c.type == "template_substitution" for c in node.named_children
    ):
        return "".join(_text(c) for c in node.named_children)
    return None


def _unescape(escape: str) -> str:
    """One JavaScript escape sequence's character (``\\x5f``, ``\\u005f``,
    ``\\u{5f}``, ``\\n``); an unknown one stands for the character after the backslash."""
    body = escape[1:]
    try:
        if body.startswith("u{") and body.endswith("}"):
            return chr(int(body[2:-1], 16))
        if body[:1] in ("x", "u") and len(body) > 1:
            return chr(int(body[1:], 16))
    except ValueError:
        return body
    return {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(body, body)


def _text(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""
