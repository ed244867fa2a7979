"""The test framework's names a model's JavaScript test uses and never binds (``test``,
``assert``…), bound as the project's own tests bind them: a small model writes the test
and forgets its first lines, as it forgets a Python import (:mod:`app.fixers.llm.imports`).

A name counts when the test calls it or reads a property of it and nothing in the file
declares or imports it. Its binding line is taken from the project's test files (the
first line there that binds it, in the file's own style: ``import`` or ``require``),
else the runner's usual one. Names a runner provides as globals (jest's and mocha's
``test``, ``expect``) are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.fixers.llm.js_index import node_text, walk
from app.policy.js_syntax import parse

# What each runner's tests get from a module (not as globals), and the usual line.
_FROM_MODULE: dict[str, dict[str, tuple[str, str]]] = {
    "node": {
        n: (f"const {{ {n} }} = require('node:test');", f"import {{ {n} }} from 'node:test';")
        for n in ("test", "it", "describe", "before", "after", "beforeEach", "afterEach", "mock")
    },
    "vitest": {
        n: (f"const {{ {n} }} = require('vitest');", f"import {{ {n} }} from 'vitest';")
        for n in ("test", "it", "describe", "expect", "vi", "beforeEach", "afterEach")
    },
}
_ASSERT = ("const assert = require('node:assert');", "import assert from 'node:assert';")


def with_test_imports(code: str, path: str, runner: str, examples: Sequence[str]) -> str:
    """``code`` with a binding line put first for each framework name it uses unbound."""
    wanted = {**_FROM_MODULE.get(runner, {}), "assert": _ASSERT}
    esm = path.endswith((".mjs", ".mts")) or bool(re.search(r"^\s*import\s", code, re.M))
    used = _used(code, path)
    missing = [n for n in wanted if n in used and not _binds(code, n)]
    lines: list[str] = []
    for name in missing:
        found = _binding_line(name, examples, esm)
        line = found or wanted[name][1 if esm else 0]
        if line not in lines:
            lines.append(line)
    if not lines:
        return code
    head, _, rest = code.partition("\n")
    if head.startswith("#!") or re.match(r"""\s*['"]use strict['"];?\s*$""", head):
        return "\n".join([head, *lines, rest])  # a shebang, the directive: still first
    return "\n".join([*lines, code])


def _used(code: str, path: str) -> set[str]:
    """Identifiers called (``test(…)``) or read from (``assert.equal``)."""
    root = parse(path, code.encode()).root_node
    out: set[str] = set()
    for node in walk(root):
        target = None
        if node.type == "call_expression":
            target = node.child_by_field_name("function")
        elif node.type == "member_expression":
            target = node.child_by_field_name("object")
        if target is not None and target.type == "identifier":
            out.add(node_text(target))
    return out


def _binds(code: str, name: str) -> bool:
    """Whether ``code`` declares or imports ``name`` anywhere."""
    n = re.escape(name)
    return bool(
        re.search(
            rf"\b(?:const|let|var|function|class)\s+(?:\{{[^}}]*\b{n}\b[^}}]*\}}|{n}\b)", code
        )
        or re.search(
            rf"\bimport\s+(?:\w+\s*,\s*)?(?:{n}\b|\{{[^}}]*\b{n}\b[^}}]*\}}|\*\s+as\s+{n}\b)", code
        )
    )


def _binding_line(name: str, examples: Sequence[str], esm: bool) -> str | None:
    """The first line of the project's tests that binds ``name`` alone on its line, in
    the wanted style."""
    for text in examples:
        for line in text.splitlines():
            stripped = line.strip()
            style_ok = stripped.startswith("import ") if esm else "require(" in stripped
            if style_ok and _binds(stripped, name) and stripped.endswith((";", "')", '")')):
                return stripped
    return None
