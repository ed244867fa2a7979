"""The edit tool's text work (app/fixers/llm/agent/edits.py), table-tested: what a small
model's near-miss edits do to the file, and what it is told when one has no single
reading."""

from __future__ import annotations

import pytest

from app.fixers.llm.agent.edits import EditError, apply_edit, syntax_error

SRC = (
    "class Stack:\n"
    "    def push(self, x):\n"
    "        self.items.append(x)\n"
    "\n"
    "    def pop(self):\n"
    "        return self.items.pop(0)\n"
)
TWICE = "def a():\n    return 1\n\n\ndef b():\n    return 1\n"


@pytest.mark.parametrize(
    ("text", "old", "new", "after", "line", "loose"),
    [
        # exact, inside a line
        (SRC, "pop(0)", "pop()", SRC.replace("pop(0)", "pop()"), 6, False),
        # copied from read_file with its line numbers (new too)
        (
            SRC,
            "   5|     def pop(self):\n   6|         return self.items.pop(0)",
            "   5|     def pop(self):\n   6|         return self.items.pop()",
            SRC.replace("pop(0)", "pop()"),
            5,
            False,
        ),
        # written flush left: matched ignoring spacing, new re-indented line by line
        (
            SRC,
            "def pop(self):\nreturn self.items.pop(0)",
            "def pop(self):\nreturn self.items.pop()",
            SRC.replace("pop(0)", "pop()"),
            5,
            True,
        ),
        # a line added, more indented than the one it follows: kept relative
        (
            SRC,
            "def pop(self):\n    return self.items.pop(0)",
            "def pop(self):\n    if not self.items:\n        raise IndexError\n"
            "    return self.items.pop()",
            SRC.replace(
                "        return self.items.pop(0)\n",
                "        if not self.items:\n            raise IndexError\n"
                "        return self.items.pop()\n",
            ),
            5,
            True,
        ),
        # trailing spaces in the file
        ("a = 1  \nb = 2\n", "a = 1\nb = 2", "a = 1\nb = 3", "a = 1\nb = 3\n", 1, True),
        # a tab in the file, no final newline
        ("if x:\n\ty = 2", "if x:\n    y = 2", "if x:\n    y = 3", "if x:\n\ty = 3", 1, True),
        # CRLF line endings are kept
        (
            "a = 1\r\n    b = 2\r\nc = 3\r\n",
            "a = 1\nb = 2",
            "a = 1\nb = 5",
            "a = 1\r\n    b = 5\r\nc = 3\r\n",
            1,
            True,
        ),
        # numbered old, and new with the copied lines numbered and the added ones not
        (
            SRC,
            "   5|     def pop(self):\n   6|         return self.items.pop(0)",
            "   5|     def pop(self):\n        if not self.items:\n            raise IndexError\n"
            "   6|         return self.items.pop()",
            SRC.replace(
                "        return self.items.pop(0)\n",
                "        if not self.items:\n            raise IndexError\n"
                "        return self.items.pop()\n",
            ),
            5,
            False,
        ),
    ],
)
def test_edits_that_apply(
    text: str, old: str, new: str, after: str, line: int, loose: bool
) -> None:
    edit = apply_edit(text, old, new, "m.py")
    assert edit.text == after
    assert edit.line == line
    assert bool(edit.how) == loose


@pytest.mark.parametrize(
    ("text", "old", "new", "message"),
    [
        (SRC, "", "x", "'old' is empty; to add text, include the line before it in 'old'"),
        (SRC, "pop(0)", "pop(0)", "'old' and 'new' are the same, so this edit changes nothing"),
        # a real 1.5B call: the same made-up text in both
        (
            SRC,
            "chunked(list(range(7), 3), 3)",
            "chunked(list(range(7), 3), 3)",
            "'old' and 'new' are the same, and 'old' is not in m.py either: put in 'old' the "
            "lines to change, copied exactly from the file",
        ),
        (TWICE, "return 1", "return 2", "'old' occurs 2 times in m.py (lines 2, 6)"),
        (
            TWICE,
            "        return 1",
            "        return 2",
            "With spacing ignored it matches 2 places (lines 2, 6); include more of the "
            "surrounding lines",
        ),
        (
            SRC,
            "def pop(self):\nreturn self.items.pop(1)",
            "x",
            "Its first line is like these lines of the file:\n   5|     def pop(self):\n",
        ),
        (SRC, "nothing like it", "x", "Use read_file to see the current text"),
        # flush left with a line added: where would it go? refused, not guessed
        (
            SRC,
            "def pop(self):\nreturn self.items.pop(0)",
            "def pop(self):\nif not self.items:\nraise IndexError\nreturn self.items.pop()",
            "Lines 5-6 match if spacing and indentation are ignored, but 'new' cannot be "
            "indented to fit them in only one way",
        ),
        # real 1.5B edits: the def line in old, the body as it already reads added in new
        (
            "def f_to_c(f):\n    return (f - 32) * 9 / 5\n",
            "def f_to_c(f):",
            "def f_to_c(f):\n    return (f - 32) * 9 / 5",
            "'new' only adds lines that m.py already has right below 'old' (from line 2), so "
            "the code would do the same. To change a line, put that line in 'old'",
        ),
        (
            'def unique(items):\n    """Doc."""\n    return list(set(items))\n',
            "def unique(items):",
            "def unique(items):\n    return list(set(items))",
            "already has right below 'old'",
        ),
        # spaces inside a line are the line's own (a string literal's, say)
        ('msg = "Hello,  world"\n', 'msg = "Hello, world"', 'msg = "Hi"', "not found"),
        (
            SRC,
            "def pop(self):\n  return self.items.pop(0)",
            "def pop(self):\nreturn self.items.pop(0)",
            "'new' is the same as the file's text once spacing is ignored",
        ),
    ],
)
def test_edits_that_are_refused_say_why(text: str, old: str, new: str, message: str) -> None:
    with pytest.raises(EditError) as caught:
        apply_edit(text, old, new, "m.py")
    assert message in str(caught.value)


STOCK = (
    "class Inventory:\n"
    "    def remove(self, n):\n"
    "        if n <= 0:\n"
    "            raise ValueError(n)\n"
    "        self.stock -= n\n"
    "\n"
    "    def count(self):\n"
    "        return self.stock\n"
)


def test_later_lines_from_column_0_are_indented_like_the_first_when_only_that_compiles() -> None:
    """A real 1.5B answer (inventory-negative): `old` is one indented statement and the
    line `new` adds after it starts at column 0, which broke the module."""
    edit = apply_edit(
        STOCK, "self.stock -= n", "if n > self.stock: raise OutOfStock(n)\nself.stock -= n", "m.py"
    )
    assert edit.text == STOCK.replace(
        "        self.stock -= n\n",
        "        if n > self.stock: raise OutOfStock(n)\n        self.stock -= n\n",
    )
    assert "indented like its first" in edit.how
    # Outside Python nothing compiles the result, so nothing is guessed.
    as_written = apply_edit(STOCK, "self.stock -= n", "a\nb", "notes.txt")
    assert "        a\nb\n" in as_written.text
    assert not as_written.how


def test_an_edit_that_would_break_the_module_is_refused_with_the_lines_it_would_give() -> None:
    with pytest.raises(EditError) as caught:
        apply_edit(SRC, "pop(0)", "pop(0", "m.py")
    message = str(caught.value)
    assert message.startswith("this edit would leave m.py unable to parse (line 6:")
    assert "   6|         return self.items.pop(0\n" in message
    # A file that did not compile before (a template, another Python) is edited as asked.
    assert (
        apply_edit("def f(:\n    x = 1\n", "x = 1", "x = (", "m.py").text == "def f(:\n    x = (\n"
    )


def test_warnings_are_not_syntax_errors_and_new_syntax_is_not_refused_in_a_new_file() -> None:
    """pytest here turns warnings into errors, and compile() with them: an invalid
    escape (a SyntaxWarning) must not read as "unable to parse"."""
    assert syntax_error('import re\nre.compile("\\d+")\n', "m.py") is None
    # A new file is checked for indentation only: `type X = int` may be newer than the
    # Python that checks it.
    assert syntax_error("type X = int\n", "m.py", indentation=True) is None
    assert syntax_error("def f():\nreturn 1\n", "m.py", indentation=True) is not None
