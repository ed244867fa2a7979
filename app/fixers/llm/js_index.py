"""Where the functions of an npm project are, read from tree-sitter's syntax tree: the
JavaScript and TypeScript counterpart of :func:`app.fixers.llm.localize.index`.

Every function the repository's source files define, by name and byte range, so that a
model's corrected function is spliced in exactly where the old one was (:class:`Span`):

- ``function f() {}`` (exported or not), ``const f = (x) => …``, ``const f = function …``;
- a class's methods (``Class.method``) and arrow-function fields;
- ``exports.f = …`` and ``module.exports.f = …`` (``f``), ``Foo.prototype.f = …``
  (``Foo.f``), ``obj.f = …`` (``obj.f``);
- the methods and function-valued keys of an object literal assigned to a name
  (``const api = { f() {} }``: ``api.f``) or to ``module.exports`` (``f``).

Generated code is left out: minified bundles, ``dist/``, ``build/`` and ``coverage/``
folders, files that end with a source map's address.

What a failing test shows is read in :mod:`app.fixers.llm.js_evidence`. Files are read
confined to the tree, never run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tree_sitter import Node

from app.fixers.llm.bm25 import words
from app.fixers.llm.code_context import looks_like_test
from app.fixers.llm.localize import Index, Symbol, source_files
from app.policy.js_syntax import is_source, parse

# How a function's text parses alone: a statement of its own, a class member, an
# object literal's member.
Wrap = Literal["statement", "class", "object"]
_FUNCTIONS = {"arrow_function", "function_expression", "function", "generator_function"}
_DECLARATIONS = {"function_declaration", "generator_function_declaration"}
_CLASSES = {"class_declaration", "abstract_class_declaration", "class"}
_FIELDS = {"field_definition", "public_field_definition"}
_MINIFIED = re.compile(r"\.min\.[cm]?js$")
_BUILT = {"dist", "build", "coverage"}  # folders of generated code, not the source
_BINDINGS = {*_DECLARATIONS, "lexical_declaration", "variable_declaration"}
_WORDS = {"identifier", "property_identifier", "shorthand_property_identifier"}


@dataclass(frozen=True)
class Span:
    """Where a function's text is in its file: byte offsets of the file's UTF-8 text."""

    start: int
    end: int
    wrap: Wrap = "statement"
    form: str = ""  # the syntax node spanned: "function_declaration", "pair", …
    target: str = ""  # what an assignment assigns to: "exports.f", "Foo.prototype.f"

    def fits(self, other: Span) -> bool:
        """Whether a function written as ``other`` may replace this one: the same form
        (an assignment to the same target), or both declarations that bind its name
        (``function f`` for ``const f = …``)."""
        if self.wrap != other.wrap or self.target != other.target:
            return False
        return self.form == other.form or {self.form, other.form} <= _BINDINGS


@dataclass
class JsIndex:
    """The repository's functions (:attr:`index`, as the localiser reads them) and where
    each one's text is (:attr:`spans`)."""

    index: Index = field(default_factory=Index)
    spans: dict[Symbol, Span] = field(default_factory=dict)
    test_files: list[str] = field(default_factory=list)

    def text(self, symbol: Symbol) -> str:
        span = self.spans[symbol]
        return self.index.sources[symbol.path].encode()[span.start : span.end].decode()


def js_index(tree: Path) -> JsIndex:
    """Every function of the tree's JavaScript and TypeScript files (tests apart, minified
    bundles and ``node_modules`` skipped)."""
    out = JsIndex()
    for rel, text in source_files(tree, _wanted):
        if "sourceMappingURL=" in text[-300:]:  # generated from a source elsewhere
            continue
        out.index.sources[rel] = text
        test = looks_like_test(rel)
        if test:
            out.test_files.append(rel)
        for symbol, span in symbols_of(rel, text.encode()):
            (out.index.tests if test else out.index.symbols).append(symbol)
            out.spans[symbol] = span
            if not test and "." not in symbol.qualname:
                out.index.defines.setdefault(symbol.qualname, []).append(rel)
    return out


def _wanted(rel: str) -> bool:
    """A source file, not generated code."""
    return is_source(rel) and not _MINIFIED.search(rel) and not _BUILT & set(rel.split("/"))


def symbols_of(path: str, data: bytes) -> Iterator[tuple[Symbol, Span]]:
    """The functions of one file's text, each with its span."""
    root = parse(path, data).root_node
    for node in root.named_children:
        yield from _top(path, node)


def _top(path: str, node: Node) -> Iterator[tuple[Symbol, Span]]:
    if node.type == "export_statement":
        inner = node.child_by_field_name("declaration") or node.child_by_field_name("value")
        if inner is not None:
            yield from _top(path, inner)
    elif node.type in _DECLARATIONS:
        name = _name(node)
        if name:
            yield _symbol(path, node, name, "function", node)
    elif node.type in _CLASSES:
        yield from _class(path, node)
    elif node.type in ("lexical_declaration", "variable_declaration"):
        for declarator in node.named_children:
            if declarator.type != "variable_declarator":
                continue
            name, value = _name(declarator), declarator.child_by_field_name("value")
            if not name or value is None:
                continue
            if value.type in _FUNCTIONS and len(node.named_children) == 1:
                yield _symbol(path, value, name, "function", node)
            elif value.type == "object":
                yield from _object(path, value, f"{name}.")
            elif value.type in _CLASSES:
                yield from _class(path, value, name)
    elif node.type == "expression_statement":
        expression = node.named_children[0] if node.named_children else None
        if expression is not None and expression.type == "assignment_expression":
            yield from _assignment(path, node, expression)


def _assignment(path: str, statement: Node, node: Node) -> Iterator[tuple[Symbol, Span]]:
    """``exports.f = function …``, ``Foo.prototype.f = …``, ``module.exports = { … }``."""
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or right is None:
        return
    target = node_text(left)
    parts = target.split(".")
    exported = target in ("module.exports", "exports")
    if right.type == "object" and (exported or left.type == "identifier"):
        yield from _object(path, right, "" if exported else f"{target}.")
        return
    if right.type not in _FUNCTIONS or left.type != "member_expression" or len(parts) < 2:
        return
    if not all(parts):  # `exports. = …` in a broken file
        return
    if parts[:-1] in (["exports"], ["module", "exports"]):
        qualname = parts[-1]
    elif len(parts) == 3 and parts[1] == "prototype":
        qualname = f"{parts[0]}.{parts[2]}"
    else:
        qualname = ".".join(parts[-2:])
    kind: Literal["function", "method"] = "function" if "." not in qualname else "method"
    yield _symbol(path, right, qualname, kind, statement, target=re.sub(r"\s+", "", target))


def _class(path: str, node: Node, name: str = "") -> Iterator[tuple[Symbol, Span]]:
    owner = name or _name(node)
    body = node.child_by_field_name("body")
    if not owner or body is None:
        return
    for member in body.named_children:
        if member.type == "method_definition" and member.child_by_field_name("body"):
            method = _name(member)
            if method:
                yield _symbol(path, member, f"{owner}.{method}", "method", member, "class")
        elif member.type in _FIELDS:
            value = member.child_by_field_name("value")
            field_name = _name(member) or node_text(member.child_by_field_name("property"))
            if value is not None and value.type in _FUNCTIONS and field_name:
                qualname = f"{owner}.{field_name}"
                yield _symbol(path, value, qualname, "method", member, "class")


def _object(path: str, node: Node, prefix: str) -> Iterator[tuple[Symbol, Span]]:
    for member in node.named_children:
        if member.type == "method_definition":
            name = _name(member)
            if name:
                yield _symbol(path, member, prefix + name, "function", member, "object")
        elif member.type == "pair":
            value = member.child_by_field_name("value")
            key = _key(member.child_by_field_name("key"))
            if value is not None and value.type in _FUNCTIONS and key:
                yield _symbol(path, value, prefix + key, "function", member, "object")


def _symbol(
    path: str,
    function: Node,
    qualname: str,
    kind: Literal["function", "method"],
    whole: Node,
    wrap: Wrap = "statement",
    *,
    target: str = "",
) -> tuple[Symbol, Span]:
    """The symbol of ``function`` (its calls and words), spanning ``whole`` (the
    statement or member that holds it, comments before it left out)."""
    calls, idents = [], []
    for sub in walk(function):
        if sub.type == "call_expression":
            callee = sub.child_by_field_name("function")
            name = callee_name(callee)
            if name:
                calls.append(name)
        elif sub.type in _WORDS or (sub.type == "string_fragment" and len(node_text(sub)) <= 80):
            idents.append(node_text(sub))
    doc = _doc_comment(whole)
    text = " ".join([qualname, qualname, doc, path.replace("/", " "), *idents])
    symbol = Symbol(
        path=path,
        qualname=qualname,
        start=whole.start_point[0] + 1,
        end=whole.end_point[0] + 1,
        kind=kind,
        doc=doc,
        calls=tuple(dict.fromkeys(calls)),
        words=tuple(words(text)),
    )
    return symbol, Span(whole.start_byte, whole.end_byte, wrap, whole.type, target)


def _doc_comment(node: Node) -> str:
    """The comment right before a declaration (a JSDoc block), as words to match."""
    before = node.prev_named_sibling
    if (
        before is not None
        and before.type == "comment"
        and before.end_point[0] >= node.start_point[0] - 1
    ):
        return re.sub(r"^\s*(/\*\*?|\*/?|//)", "", node_text(before), flags=re.M).strip()[:500]
    return ""


def walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.named_children))


def node_text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else ""


def _name(node: Node) -> str:
    return node_text(node.child_by_field_name("name"))


def _key(node: Node | None) -> str:
    if node is None:
        return ""
    if node.type == "string":
        return node_text(node)[1:-1]
    return node_text(node) if node.type in ("property_identifier", "identifier") else ""


def callee_name(node: Node | None) -> str:
    if node is None:
        return ""
    if node.type == "identifier":
        return node_text(node)
    if node.type == "member_expression":
        return node_text(node.child_by_field_name("property"))
    return ""
