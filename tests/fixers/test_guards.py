"""A whole-function answer's dropped guard clauses put back (app/fixers/llm/repair/guards.py):
only clauses the answer left out entirely, word for word, where they ran before."""

from __future__ import annotations

import ast

from app.fixers.llm.repair.guards import guards_put_back

JOIN = '''def join_url(base: str, path: str) -> str:
    """``base`` and ``path`` joined with one slash."""
    if not path:
        return base
    return base + "/" + path if not base.endswith("/") else base + path
'''
# url-join's right answer from the 1.5B model (repair38), without the check.
ANSWER = '''def join_url(base: str, path: str) -> str:
    """Joins `base` and `path` with one slash."""
    return base.rstrip('/') + '/' + path.lstrip('/')
'''


def run(source: str, *args: object) -> object:
    scope: dict[str, object] = {}
    exec(compile(source, "<answer>", "exec"), scope)  # noqa: S102 (our own literals)
    fn = next(v for k, v in scope.items() if callable(v) and not k.startswith("__"))
    return fn(*args)  # type: ignore[operator]


def test_the_url_join_answer_gets_its_empty_path_check_back() -> None:
    got = guards_put_back(JOIN, ANSWER)
    assert got is not None
    source, heads = got
    assert heads == ["if not path:"]
    assert source == (
        "def join_url(base: str, path: str) -> str:\n"
        '    """Joins `base` and `path` with one slash."""\n'
        "    if not path:\n"
        "        return base\n"
        "    return base.rstrip('/') + '/' + path.lstrip('/')\n"
    )
    assert run(ANSWER, "https://x.org", "") == "https://x.org/"  # what broke the test
    assert run(source, "https://x.org", "") == "https://x.org"
    assert run(source, "https://api.example.com/v1/", "/users") == (
        "https://api.example.com/v1/users"
    )


def test_a_check_the_answer_kept_either_way_round_is_not_put_back() -> None:
    kept = "def join_url(base, path):\n    if path:\n        return base.rstrip('/') + '/' + path\n"
    assert guards_put_back(JOIN, kept) is None
    moved = (
        "def join_url(base, path):\n    joined = base.rstrip('/')\n"
        "    return joined if not path else joined + '/' + path\n"
    )
    assert guards_put_back(JOIN, moved) is None  # `not path` is still tested


def test_no_guard_in_the_code_nothing_to_put_back() -> None:
    assert guards_put_back("def f(x):\n    return x + 1\n", "def f(x):\n    return x\n") is None
    # A check with an else, or one that does not leave the function, is no guard clause.
    branchy = "def f(x):\n    if x:\n        return 1\n    else:\n        return 2\n"
    assert guards_put_back(branchy, "def f(x):\n    return 3\n") is None
    logs = "def f(x):\n    if x:\n        print(x)\n    return x\n"
    assert guards_put_back(logs, "def f(x):\n    return x * 2\n") is None
    assert guards_put_back(JOIN, "not python (") is None


def test_only_the_checks_before_the_first_kept_one_go_back_in_their_order() -> None:
    code = (
        "def area(shape, scale, unit):\n"
        "    if scale is None:\n        return 0\n"
        "    if not shape.sides:\n        raise ValueError('no sides')\n"
        "    if unit == 'px':\n        return 0\n"
        "    return shape.w * shape.h * scale\n"
    )
    # The answer kept the middle check and dropped the others: the first goes back on
    # top; the last would run before the kept one, where it never ran, so it stays out.
    answer = (
        "def area(shape, scale, unit):\n"
        "    if not shape.sides:\n        raise ValueError('no sides')\n"
        "    return shape.w * shape.h * scale * 1\n"
    )
    got = guards_put_back(code, answer)
    assert got is not None
    source, heads = got
    assert heads == ["if scale is None:"]
    body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
    assert [ast.unparse(s).splitlines()[0] for s in body] == [
        "if scale is None:",
        "if not shape.sides:",
        "return shape.w * shape.h * scale * 1",
    ]


def test_a_check_the_answer_rewrote_is_its_fix_and_stays_as_written() -> None:
    code = "def last(xs):\n    if len(xs) <= 0:\n        raise IndexError\n    return xs[-1]\n"
    rewrote = "def last(xs):\n    if len(xs) < 0:\n        raise IndexError\n    return xs[-1]\n"
    assert guards_put_back(code, rewrote) is None
    moved = "def last(xs):\n    return xs[-1] if xs else None\n"
    assert guards_put_back(code, moved) is None  # `xs` is still tested


def test_what_cannot_take_a_clause_back_gets_none() -> None:
    # The body on the `def` line; an `await` in an async original's clause, put in a
    # function that is not async; only a docstring.
    assert guards_put_back(JOIN, "def join_url(base, path): return base + path\n") is None
    waits = "async def f(x):\n    if await x.closed():\n        return None\n    return 1\n"
    assert guards_put_back(waits, "def f(x):\n    return 2\n") is None
    assert guards_put_back(JOIN, 'def join_url(base, path):\n    """Only a docstring."""\n') is None


def test_an_answer_indented_with_tabs_keeps_its_tabs() -> None:
    answer = "def join_url(base, path):\n\treturn base.rstrip('/') + '/' + path.lstrip('/')\n"
    got = guards_put_back(JOIN, answer)
    assert got is not None
    assert got[0].startswith("def join_url(base, path):\n\tif not path:\n\t    return base\n")
    compile(got[0], "<answer>", "exec")


def test_a_method_in_its_class_indentation_and_a_one_line_clause() -> None:
    method = (
        "    def get(self, key):\n"
        "        if key not in self.data: return self.default\n"
        "        return self.data[key]\n"
    )
    answer = "    def get(self, key):\n        return self.data.get(key)\n"
    got = guards_put_back(method, answer)
    assert got is not None
    assert got[0] == (
        "def get(self, key):\n"
        "    if key not in self.data: return self.default\n"
        "    return self.data.get(key)\n"
    )
    assert got[1] == ["if key not in self.data:"]


def test_an_answer_that_cannot_be_read_is_left_alone() -> None:
    # A NUL byte (SyntaxError or ValueError, by Python version): no crash, no change.
    assert guards_put_back(JOIN, "def join_url(base, path):\n    return '\0'\n") is None
    assert guards_put_back("def f(x):\n    return '\0'\n", ANSWER) is None
