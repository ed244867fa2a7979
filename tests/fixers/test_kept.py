"""What the issue says must keep working (app/fixers/llm/repair/must_keep.py): read from its
own words, narrowly, and called only where one argument is all a function takes."""

from __future__ import annotations

import ast

import pytest

from app.fixers.llm.localize import Index, Suspect, Symbol
from app.fixers.llm.repair import must_keep
from app.fixers.llm.repair.must_keep import kept_values, one_argument_functions

# bench task email-plus's issue, as a user wrote it
EMAIL_PLUS = (
    "People cannot sign up with addresses like `jane+news@example.com`: the form says the "
    "address is invalid. Plus addressing is standard. Dots and hyphens in the local part\n"
    "(`first.last-x@example.co.uk`) must keep working, and `a@b` (no dot in the domain) "
    "and\n`@example.com` must stay invalid."
)


def test_the_values_an_issue_says_must_keep_working_or_stay_invalid_are_read() -> None:
    assert kept_values([EMAIL_PLUS]) == ["first.last-x@example.co.uk", "a@b", "@example.com"]


@pytest.mark.parametrize(
    "said",
    [
        "`1` must no longer be accepted.",  # a change asked for
        "`yes` should not stay true.",
        "`on` must never keep working.",
        "`signup` must keep working.",  # code, not a value
        "`config.merge` should stay as it is.",
        "`is_newer('1.2', '1.2.0')` must stay False.",
        "`1.2 == 1.2.0` must stay true.",  # a claim, not an input
        "`x@y.z` is refused. Everything else must keep working.",  # another sentence
        "`x@y.z` is refused, everything else must keep working.",  # another clause
        "```\nassert ok('a@b')  # must stay invalid: `a@b`\n```",  # code, not prose
        "> `a@b` must stay invalid",  # a quote, not the reporter's words
        # a regression told: the bug's own input
        "Since 2.3 `jane+news@example.com` will still be rejected.",
        "`jane+news@example.com` should still work like in 1.x, yet it is refused.",
        "`jane+news@example.com` used to work and must keep working.",
        "`parse` should keep returning `[]` for `''`.",  # after the cue: what it gives
    ],
)
def test_nothing_is_read_where_the_words_do_not_ask_for_it(said: str) -> None:
    assert kept_values([said]) == []


def test_a_value_the_bugs_own_test_uses_is_not_what_must_stay_as_it_is() -> None:
    """After a regression "`x` should still be accepted" names the bug's own input: the
    base refuses it, and a test that it stays refused would turn down the fix."""
    said = "`Jane+News@example.com` should still be accepted, and `a@b` must stay invalid."
    repro = "def test_plus():\n    assert signup('jane+news@example.com')\n"
    assert kept_values([said], used=[repro]) == ["a@b"]
    assert kept_values([said]) == ["Jane+News@example.com", "a@b"]


def test_a_value_the_issue_also_writes_where_it_asks_for_no_such_thing_is_left_out() -> None:
    said = (
        "People cannot sign up with `jane+news@example.com`. `Jane+News@example.com` and "
        "`a@b` must keep working as they do."
    )
    assert kept_values([said]) == ["a@b"]


def test_strings_and_whole_numbers_are_read_and_at_most_six() -> None:
    said = "`0`, `1.10`, `'x'`, `...`, `a`, `b`, `c` and `d` must all keep working."
    # `1.10` would be 1.1 and `...` Ellipsis: not what the issue wrote; `a`…`d` are code
    assert kept_values([said]) == [0, "x"]
    many = "`a@1`, `a@2`, `a@3`, `a@4`, `a@5`, `a@6` and `a@7` must stay valid."
    assert len(kept_values([many])) == 6


MODULE = (
    "def is_valid(address, strict=False):\n    return True\n\n\n"
    "def join(a, b):\n    return a + b\n\n\n"
    "def by_keyword(*, address):\n    return address\n\n\n"
    "class Form:\n    def check(self, address):\n        return True\n"
)


def _suspect(qualname: str, start: int, end: int, kind: str = "function") -> Suspect:
    return Suspect(Symbol("forms.py", qualname, start, end, kind), 1.0)  # type: ignore[arg-type]


def test_only_module_functions_taking_one_argument_are_called() -> None:
    idx = Index(sources={"forms.py": MODULE}, defines={"is_valid": ["forms.py"]})
    suspects = [
        _suspect("join", 5, 6),
        _suspect("Form.check", 14, 15, "method"),
        _suspect("by_keyword", 9, 10),
        _suspect("is_valid", 1, 2),
    ]
    assert one_argument_functions(idx, suspects) == []  # is_valid is the fourth
    assert one_argument_functions(idx, suspects[3:] + suspects[:3]) == [
        ("is_valid", "from forms import is_valid")
    ]


@pytest.mark.parametrize(
    "span",
    [
        "x'); import os; os.system('id') #",
        "__import__('os').system('id')",
        "a'b\"c",
        "a\\\\b",
        "\\u202e@example.com",
        "'''@x",
        "x\" + open('/etc/passwd').read() + \"",
    ],
)
def test_a_hostile_value_is_refused_or_written_back_as_the_same_string(span: str) -> None:
    """A value goes into a call in the sandbox and into a test in the patch only as the
    ``repr`` of a literal: whatever the issue wrote, the code written is one call of the
    function with that string, and nothing else."""
    for value in kept_values([f"`{span}` must stay invalid."]):
        checks = must_keep._checks(
            [("f", "from m import f")], [value], [[{"repr": "True"}]], Index()
        )
        module = ast.parse(must_keep._file(checks))
        assert [type(n).__name__ for n in module.body] == ["ImportFrom", "FunctionDef"]
        (check,) = module.body[1].body  # type: ignore[attr-defined]
        call = check.test.left
        assert ast.unparse(call.func) == "f"
        assert [ast.literal_eval(a) for a in call.args] == [value]


def test_only_the_functions_the_bugs_tests_call_or_the_issue_names_are_called() -> None:
    """A helper's exact result is no promise: a right fix may change what it returns."""
    repro = "def test_plus():\n    assert accounts.signup('jane+news@example.com')\n"
    said = "`is_valid(x)` and `Form` are fine; `a@b` must stay invalid."
    assert must_keep._named([said], [repro]) == {"signup", "is_valid", "Form"}


def test_what_the_base_gives_is_written_as_a_test_and_a_float_as_approx() -> None:
    idx = Index(defines={"SignupError": ["accounts/signup.py"]})
    seen = [
        [{"repr": "{'email': 'a@b.co'}"}, {"raised": "SignupError"}],
        [{"repr": "0.30000000000000004"}, {"raised": "TypeError"}],  # a wrong call: none
    ]
    functions = [("signup", "from accounts.signup import signup"), ("ratio", "from m import ratio")]
    source = must_keep._file(must_keep._checks(functions, ["a@b.co", "a@b"], seen, idx))
    assert source == (
        "import pytest\n\n"
        "from accounts.signup import SignupError, signup\n"
        "from m import ratio\n\n\n"
        "def test_kept_1():\n    assert signup('a@b.co') == {'email': 'a@b.co'}\n\n\n"
        "def test_kept_2():\n    with pytest.raises(SignupError):\n        signup('a@b')\n\n\n"
        "def test_kept_3():\n    assert ratio('a@b.co') == pytest.approx(0.30000000000000004)\n"
    )


def test_a_result_two_runs_disagree_on_is_not_used() -> None:
    """The order of a set of strings changes with the hash seed between two runs."""
    first = [[{"repr": "['b', 'a']"}, {"repr": "1"}]]
    second = [[{"repr": "['a', 'b']"}, {"repr": "1"}]]
    assert must_keep._same(first, second) == [[None, {"repr": "1"}]]
