"""What a failing test of an npm project shows, for the localiser: the frames of Node's
stack traces (:func:`node_frames`), the functions a test calls (:func:`js_called_names`)
and a test's own source, found by its title (:func:`source_of_js_test`). Pure: text in.
"""

from __future__ import annotations

import re

from app.fixers.llm.js_index import JsIndex, callee_name, node_text, walk
from app.policy.js_syntax import parse
from app.sessions.task import Place

# Node's frames: `at name (/workspace/src/x.js:12:5)`, `at /workspace/src/x.js:12:5`,
# `at async Foo.bar (file:///workspace/src/x.mjs:3:9)`; node's own (node:internal/…)
# and a package's (node_modules) are not the repository's.
_NODE_FRAME = re.compile(
    r"^\s*at (?:async )?(?:(?:new )?([\w$.#<>\[\] ]+?) \()?(?:file://)?"
    r"([^\s():]+\.[cm]?[jt]sx?):(\d+):\d+\)?\s*$"
)
_TEST_CALLS = {"test", "it", "describe", "suite", "expect", "assert", "require", "beforeEach"}


def node_frames(output: str) -> list[Place]:
    """The frames of the Node stack traces in ``output``, outermost first (as
    :func:`~app.fixers.llm.localize.frames_in` gives Python's; Node prints the
    innermost first), node's own and packages' left out."""
    traces: list[list[Place]] = [[]]
    for line in output.splitlines():
        if not line.strip().startswith("at "):
            if line.strip() and traces[-1]:
                traces.append([])  # a new trace: something else was printed between
            continue
        m = _NODE_FRAME.match(line)
        if m is None or "node_modules/" in m.group(2) or m.group(2).startswith("node:"):
            continue  # node's own frames, a package's, `<anonymous>`
        function = (m.group(1) or "").split(".")[-1].strip() or None
        traces[-1].append(Place(m.group(2), int(m.group(3)), function))
    return [place for trace in traces for place in reversed(trace)]


def js_called_names(source: str, path: str = "test.js") -> list[tuple[str, str | None]]:
    """The names a test's source calls (the test framework's own left out), each with
    no module: :func:`~app.fixers.llm.localize.localize` then suspects every function of
    that name."""
    root = parse(path, source.encode()).root_node
    out: list[tuple[str, str | None]] = []
    for node in walk(root):
        if node.type not in ("call_expression", "new_expression"):
            continue
        callee = node.child_by_field_name("function") or node.child_by_field_name("constructor")
        if callee is not None and node_text(callee).startswith("expect("):
            continue  # a matcher: expect(x).toBe(y), expect(x).not.toEqual(y)
        name = callee_name(callee)
        if name and name not in _TEST_CALLS:
            out.append((name, None))
    return list(dict.fromkeys(out))


def source_of_js_test(idx: JsIndex, test_id: str, *, limit: int = 2500) -> str:
    """The source of a test by its id's last title (``suite > adds``, ``file::adds``):
    the ``test(…)``/``it(…)`` call whose first argument is that title, in the first test
    file that has one; "" when none does."""
    title = re.split(r" > |::", test_id)[-1].strip()
    if not title:
        return ""
    for rel in idx.test_files:
        text = idx.index.sources.get(rel, "")
        if title not in text:
            continue
        root = parse(rel, text.encode()).root_node
        for node in walk(root):
            if node.type != "call_expression" or callee_name(
                node.child_by_field_name("function")
            ) not in ("test", "it"):
                continue
            arguments = node.child_by_field_name("arguments")
            first = arguments.named_children[0] if arguments and arguments.named_children else None
            if (
                first is not None
                and first.type in ("string", "template_string")
                and node_text(first)[1:-1] == title
            ):
                return f"// {rel}\n{node_text(node)}"[:limit]
    return ""
