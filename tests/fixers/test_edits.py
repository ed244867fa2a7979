"""The edit tool's text work (app/fixers/llm/edits.py), table-tested: what a small
model's near-miss edits do to the file, and what it is told when one has no single
reading."""

from __future__ import annotations

import pytest

from app.fixers.llm.edits import EditError, apply_edit

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
        # spaces inside the line differ
        (
            "x = f(a,b)\ny = 2\n",
            "x = f(a, b)",
            "x = f(a, b, c)",
            "x = f(a, b, c)\ny = 2\n",
            1,
            True,
        ),
        # the last line of a file without a final newline
        ("a = 1\nb  =  2", "b = 2", "b = 3", "a = 1\nb = 3", 2, True),
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
        (TWICE, "return 1", "return 2", "'old' occurs 2 times in m.py (lines 2, 6)"),
        (
            TWICE,
            "return  1",
            "return 2",
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
