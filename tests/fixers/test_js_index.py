"""Where an npm project's functions are (tree-sitter), what a Node trace and a failing
test point at, and how a model's corrected function is read and spliced back: pure,
on synthetic JavaScript and TypeScript."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.fixers.llm.js_evidence import js_called_names, node_frames, source_of_js_test
from app.fixers.llm.js_index import js_index, symbols_of
from app.fixers.llm.localize import localize
from app.fixers.llm.repair.js_answers import function_in, splice
from app.fixers.llm.repair.js_testruns import WHOLE, JsTests
from app.policy.evidence import TestRun
from app.sessions.task import Place, Task

SHAPES = b"""\
'use strict';
/** Adds. */
function add(a, b) {
  return a + b;
}
export async function* walk(dir) {}
class Cart {
  constructor() { this.items = []; }
  total(tax) {
    return 1;
  }
  reset = () => { this.items = []; };
}
const twice = (x) => x * 2;
let a = 1, b = () => 2;
exports.half = function (x) { return x / 2 };
module.exports.third = (x) => x / 3;
Cart.prototype.size = function () { return this.items.length; };
api.get = function (url) {};
const util = { pick(o) { return o.a }, 'quoted-key': function () {}, k: (y) => y, n: 3 };
module.exports = { zero() { return 0 } };
"""


def test_every_shape_a_function_takes_in_javascript_is_indexed_by_name_and_range() -> None:
    found = {s.qualname: (s.kind, span.wrap, span.form) for s, span in symbols_of("a.js", SHAPES)}
    assert found == {
        "add": ("function", "statement", "function_declaration"),
        "walk": ("function", "statement", "generator_function_declaration"),
        "Cart.constructor": ("method", "class", "method_definition"),
        "Cart.total": ("method", "class", "method_definition"),
        "Cart.reset": ("method", "class", "field_definition"),
        "twice": ("function", "statement", "lexical_declaration"),
        "half": ("function", "statement", "expression_statement"),
        "third": ("function", "statement", "expression_statement"),
        "Cart.size": ("method", "statement", "expression_statement"),
        "api.get": ("method", "statement", "expression_statement"),
        "util.pick": ("function", "object", "method_definition"),
        "util.quoted-key": ("function", "object", "pair"),
        "util.k": ("function", "object", "pair"),
        "zero": ("function", "object", "method_definition"),
    }  # `let a = 1, b = …`: two names in one statement, no range of b's own


def test_typescript_methods_and_exports_are_indexed_and_signatures_are_not() -> None:
    source = b"""\
export interface Shape { area(): number }
export function area(s: Shape): number;
export function area(s: Shape | null): number { return s ? s.area() : 0; }
export default class Circle implements Shape {
  private r: number;
  constructor(r: number) { this.r = r; }
  public area(): number { return Math.PI * this.r ** 2; }
  scale = (k: number): Circle => new Circle(this.r * k);
}
export const unit = <T,>(x: T): T[] => [x];
"""
    found = [s.qualname for s, _ in symbols_of("shapes.ts", source)]
    assert found == ["area", "Circle.constructor", "Circle.area", "Circle.scale", "unit"]


def _write(tree: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)


def test_the_index_skips_tests_packages_bundles_and_declarations(tmp_path: Path) -> None:
    files = {
        "src/a.js": "export function a() {}\n",
        "src/b.d.ts": "export declare function b(): void;\n",
        "dist/app.min.js": "function m(){}\n",
        "node_modules/dep/index.js": "function dep() {}\n",
        "test/a.test.js": "test('a', () => {});\nfunction helper() {}\n",
    }
    _write(tmp_path, files)
    js = js_index(tmp_path)
    assert [s.qualname for s in js.index.symbols] == ["a"]
    assert [s.qualname for s in js.index.tests] == ["helper"]
    assert js.test_files == ["test/a.test.js"]


def test_node_frames_are_the_repositorys_outermost_first_without_node_or_packages() -> None:
    output = """\
TypeError: Cannot read properties of undefined (reading 'price')
    at Cart.total (/workspace/src/cart.js:14:33)
    at Array.reduce (<anonymous>)
    at helper (file:///workspace/lib/util.mjs:3:9)
    at Object.<anonymous> (/workspace/node_modules/lodash/x.js:1:1)
    at TestContext.<anonymous> (/workspace/test/cart.test.js:7:10)
    at Test.runInAsyncScope (node:async_hooks:206:9)
"""
    assert node_frames(output) == [
        Place("/workspace/test/cart.test.js", 7, "<anonymous>"),
        Place("/workspace/lib/util.mjs", 3, "helper"),
        Place("/workspace/src/cart.js", 14, "total"),
    ]


def test_a_failing_test_leads_to_what_it_calls_and_its_frame_to_where_it_broke(
    tmp_path: Path,
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "test").mkdir()
    (tmp_path / "src/money.js").write_text(
        "function parse(text) {\n  return Number(text);\n}\n"
        "function format(cents) {\n  return (cents / 100).toFixed(2);\n}\n"
        "function round(x) {\n  return Math.round(x);\n}\n"
        "module.exports = { parse, format, round };\n"
    )
    (tmp_path / "test/money.test.js").write_text(
        "const { format } = require('../src/money');\n"
        "describe('money', () => {\n"
        "  it('formats cents', () => {\n    expect(format(1999)).toBe('19.99');\n  });\n"
        "});\n"
    )
    js = js_index(tmp_path)
    source = source_of_js_test(js, "test/money.test.js::money > formats cents")
    assert source.startswith("// test/money.test.js\nit('formats cents'")
    assert js_called_names(source) == [("format", None)]  # expect and toBe are the framework
    task = Task("tests fail", documents=())
    frame = [Place("/workspace/src/money.js", 8, "round")]
    suspects = localize(js.index, task, frames=frame, calls=js_called_names(source))
    assert [s.symbol.qualname for s in suspects] == ["round", "format"]
    assert suspects[0].evidence == ("a stack frame is in it (src/money.js:8)",)
    assert suspects[1].evidence == ("a failing test calls format()",)


@pytest.mark.parametrize(
    ("answer", "expected", "problem"),
    [
        ("```js\ntotal(tax) {\n  return 2;\n}\n```", "total(tax) {\n  return 2;\n}", ""),
        # The whole class back: the method is taken out of it.
        (
            "```js\nclass Cart {\n  other() {}\n  total(tax) { return 3; }\n}\n```",
            "total(tax) { return 3; }",
            "",
        ),
        ("```js\ntotal(tax) {\n  return 2;\n```", None, "unparseable"),
        ("```js\nsum(tax) { return 2; }\n```", None, "renamed"),
        # A declaration written for the method: the method.
        (
            "```js\nasync function total(tax) { return 4; }\n```",
            "async total(tax) { return 4; }",
            "",
        ),
        ("I think it is right.", None, "unparseable"),
    ],
)
def test_an_answer_gives_the_method_asked_for_or_says_why_not(
    answer: str, expected: str | None, problem: str
) -> None:
    ((cart_total, span),) = [
        (s, sp) for s, sp in symbols_of("a.js", SHAPES) if s.qualname == "Cart.total"
    ]
    text, why = function_in(answer, cart_total, span)
    if expected:
        assert (text, why) == (expected, "")
    else:
        assert text is None
        assert why == problem


def test_an_object_literals_method_is_read_from_an_answer_in_its_own_form() -> None:
    symbols = dict(symbols_of("a.js", SHAPES))
    pick = next(s for s in symbols if s.qualname == "util.pick")
    k = next(s for s in symbols if s.qualname == "util.k")
    assert function_in("```js\npick(o) {\n  return o.b;\n}\n```", pick, symbols[pick]) == (
        "pick(o) {\n  return o.b;\n}",
        "",
    )
    assert function_in("```js\nk: (y) => y + 1,\n```", k, symbols[k]) == ("k: (y) => y + 1", "")


def test_a_declaration_may_come_back_as_another_declaration_but_an_export_may_not() -> None:
    symbols = dict(symbols_of("a.js", SHAPES))
    twice = next(s for s in symbols if s.qualname == "twice")
    half = next(s for s in symbols if s.qualname == "half")
    written = "```js\nfunction twice(x) {\n  return x + x;\n}\n```"
    assert function_in(written, twice, symbols[twice]) == (
        "function twice(x) {\n  return x + x;\n}",
        "",
    )
    # `exports.half = …` answered as a declaration would stop exporting it.
    assert function_in("```js\nfunction half(x) { return x * 0.5 }\n```", half, symbols[half]) == (
        None,
        "renamed",
    )


def test_a_method_is_spliced_at_its_class_indentation_and_nothing_else_moves() -> None:
    source = SHAPES.decode()
    (span,) = [sp for s, sp in symbols_of("a.js", SHAPES) if s.qualname == "Cart.total"]
    out = splice(source, span, "total(tax) {\n  const t = 1 + tax;\n  return t;\n}")
    assert "  total(tax) {\n    const t = 1 + tax;\n    return t;\n  }\n  reset" in out
    assert out.replace("    const t = 1 + tax;\n    return t;", "    return 1;") == source


def test_a_runner_without_a_report_is_judged_by_its_exit_code() -> None:
    red = JsTests(TestRun(exit_code=1), "npm ERR! Test failed.")
    green = JsTests(TestRun(exit_code=0), "")
    assert (red.failing(), red.passing()) == ([WHOLE], set())
    assert (green.failing(), green.passing()) == ([], {WHOLE})


def test_framework_names_a_test_forgot_are_bound_as_the_projects_tests_bind_them() -> None:
    from app.fixers.llm.repair.js_imports import with_test_imports

    forgot = (
        "import { slugify } from '../src/slug.js';\n\n"
        "test('x', () => {\n  assert.equal(slugify('a b'), 'a-b');\n});\n"
    )
    project = (
        "import test from 'node:test';\nimport assert from 'node:assert/strict';\n"
        "import { slugify } from '../src/slug.js';\n"
    )
    bound = with_test_imports(forgot, "test/r.test.js", "node", [project])
    assert bound == project.rsplit("import { slugify }", 1)[0] + forgot
    # CommonJS, nothing to copy: the runner's usual lines, after the directive.
    cjs = (
        "'use strict';\nconst { add } = require('../add');\n"
        "it('adds', () => assert.strictEqual(add(1, 2), 3));\n"
    )
    assert with_test_imports(cjs, "test/r.test.js", "node", []) == (
        "'use strict';\nconst { it } = require('node:test');\n"
        "const assert = require('node:assert');\n" + cjs.split("\n", 1)[1]
    )
    # jest's globals are left alone; a name the test binds itself is not touched.
    jest = (
        "const assert = require('assert');\n"
        "test('x', () => { expect(1).toBe(1); assert.ok(1); });\n"
    )
    assert with_test_imports(jest, "test/r.test.js", "jest", []) == jest
    # `test` is no framework name here: the test defines it.
    own = "function test(x) { return x; }\ntest(1);\n"
    assert with_test_imports(own, "t.test.js", "node", []) == own


def test_an_assignment_must_assign_to_the_same_target_again() -> None:
    """`exports.half = …` answered as `Object.prototype.half = …` would pass through
    inheritance and pollute every object: not the function asked for."""
    symbols = dict(symbols_of("a.js", SHAPES))
    half = next(s for s in symbols if s.qualname == "half")
    size = next(s for s in symbols if s.qualname == "Cart.size")
    polluting = "```js\nObject.prototype.half = function (x) { return x * 0.5 };\n```"
    assert function_in(polluting, half, symbols[half]) == (None, "renamed")
    assert function_in("```js\nexports.half = (x) => x * 0.5;\n```", half, symbols[half]) == (
        "exports.half = (x) => x * 0.5;",
        "",
    )
    moved = "```js\nexports.size = function () { return 0; };\n```"
    assert function_in(moved, size, symbols[size]) == (None, "renamed")


def test_a_declaration_for_a_method_keeps_the_methods_modifiers() -> None:
    source = b"class A {\n  static make() { return 1; }\n  get ready() { return false; }\n}\n"
    spans = {s.qualname: (s, sp) for s, sp in symbols_of("a.js", source)}
    make, ready = spans["A.make"], spans["A.ready"]
    written = "```js\nfunction make() { return 2; }\n```"
    assert function_in(written, *make, "static make() { return 1; }") == (
        "static make() { return 2; }",
        "",
    )
    got = function_in("```js\nfunction ready() { return true; }\n```", *ready, "get ready() {")
    assert got == ("get ready() { return true; }", "")


def test_splicing_keeps_template_literals_and_the_files_line_endings() -> None:
    source = "class A {\r\n  f() {\r\n    return `a\r\nb\r\n  c`;\r\n  }\r\n}\r\n"
    ((_, span),) = symbols_of("a.js", source.encode())
    old = source.encode()[span.start : span.end].decode()
    assert splice(source, span, old) == source  # its own text back: nothing moves
    new = "f() {\n  const x = 1;\n  return `a\nb\n  c` + x;\n}"
    assert splice(source, span, new) == (
        "class A {\r\n  f() {\r\n    const x = 1;\r\n"
        "    return `a\r\nb\r\n  c` + x;\r\n  }\r\n}\r\n"
    )


def test_a_run_that_failed_is_failed_whatever_its_report_says() -> None:
    """A report the code under test could have written says every test passed; the
    command exited 1: the whole command fails."""
    lying = JsTests(TestRun(exit_code=1, outcomes={"t::ok": "passed"}), "")
    assert lying.failing() == [WHOLE]
    honest = JsTests(TestRun(exit_code=1, outcomes={"t::a": "failed", "t::b": "passed"}), "")
    assert honest.failing() == ["t::a"]


def test_generated_code_is_not_indexed(tmp_path: Path) -> None:
    files = {
        "src/a.js": "export function a() {}\n",
        "dist/a.js": "export function a() {}\n",
        "lib/b.js": "function b() {}\n//# sourceMappingURL=b.js.map\n",
    }
    _write(tmp_path, files)
    assert [s.where for s in js_index(tmp_path).index.symbols] == ["src/a.js:1-1"]


def test_private_methods_frames_are_read() -> None:
    output = "Error: x\n    at Queue.#peek (/workspace/src/q.js:9:3)\n"
    assert node_frames(output) == [Place("/workspace/src/q.js", 9, "#peek")]
