"""Long docstrings (app/fixers/llm/repair/docstrings.py): shown to the model as their first
line, put back word for word in what it answers, so the change proposed is the code's
alone — on made-up functions and on every function of the real projects."""

from __future__ import annotations

import ast
import textwrap
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from app.fixers.llm.localize import Index, Symbol, index
from app.fixers.llm.repair.candidates import candidates_of
from app.fixers.llm.repair.docstrings import restored, short_lines, span
from app.fixers.llm.repair.prompt import repair_prompt
from app.fixers.llm.repair.splice import changed_lines, splice, target_of, unit_sources
from app.sessions.task import Document, Task
from tests.realworld.conftest import unpack
from tests.realworld.projects import PROJECTS

BENCH = Path(__file__).resolve().parents[2] / "bench"

ORIGINAL = '''\
def ordinal(value):
    """Converts an integer to its ordinal as a string.

    For example, 1 is "1st", 2 is "2nd".
        >>> ordinal(11)
        '11th'
    """
    suffixes = ("th", "st", "nd", "rd")
    if value % 100 in (11, 12):
        return f"{value}th"
    return f"{value}{suffixes[value % 10] if value % 10 < 4 else 'th'}"
'''

SHOWN = '''\
def ordinal(value):
    """Converts an integer to its ordinal as a string. ..."""
    suffixes = ("th", "st", "nd", "rd")
'''

FIXED = ORIGINAL.replace("(11, 12)", "(11, 12, 13)")


def shortened(source: str) -> str:
    """The function as the prompt shows it (dedented, a long docstring as one line)."""
    return "\n".join(short_lines(textwrap.dedent(source).splitlines(), span(source)))


def test_a_long_docstring_is_shown_as_its_first_line_and_a_short_one_whole() -> None:
    assert shortened(ORIGINAL).startswith(SHOWN)
    assert shortened(ORIGINAL).endswith("suffixes[value % 10] if value % 10 < 4 else 'th'}\"")
    assert span(ORIGINAL) == (2, 7)
    short = 'def f(x):\n    """\n    Twice x.\n    """\n    return 2 * x\n'
    assert span(short) is None
    assert shortened(short) == short.rstrip("\n")
    # One that shares a line with code is not touched.
    shared = 'def f(x):\n    """a\n\n\n\n    b"""; return 2 * x\n'
    assert span(shared) is None


@pytest.mark.parametrize(
    "answer",
    [
        # the docstring as shown (what a model copies), the fix below it
        SHOWN + FIXED.split('    suffixes = ("th", "st", "nd", "rd")\n')[1],
        # no docstring at all
        FIXED.replace(FIXED[FIXED.index('    """') : FIXED.index("    suffixes")], ""),
        # a docstring of its own, at a two-space indent
        textwrap.indent(
            textwrap.dedent(FIXED.split("\n", 1)[1]).replace(
                '"""Converts', '"""Mine.\n\nConverts', 1
            ),
            "  ",
        ).join(["def ordinal(value):\n", ""]),
    ],
    ids=["shortened", "none", "its-own"],
)
def test_the_answer_gets_the_original_docstring_back_word_for_word(answer: str) -> None:
    back = restored(answer, ORIGINAL)
    tree = ast.parse(back)
    assert ast.get_docstring(tree.body[0], clean=False) == ast.get_docstring(
        ast.parse(ORIGINAL).body[0], clean=False
    )
    assert "in (11, 12, 13):" in back  # the change is kept
    if "  suffixes" not in answer or "    suffixes" in answer:
        assert back == FIXED


def test_an_answer_that_cannot_take_the_docstring_back_is_not_a_change() -> None:
    """Else the pull request would shorten the docstring to what the prompt showed."""
    assert restored("def ordinal(value): return str(value)\n", ORIGINAL) is None
    shared = 'def ordinal(value):\n    """Converts ..."""; return str(value)\n'
    assert restored(shared, ORIGINAL) is None
    assert restored("x = 1\n", ORIGINAL) == "x = 1\n"  # no function: not for it to say
    short = 'def f(x):\n    """Twice x."""\n    return 2 * x\n'
    assert restored("def f(x):\n    return 3 * x\n", short) == "def f(x):\n    return 3 * x\n"


def test_the_docstring_goes_above_a_decorated_first_statement() -> None:
    answer = (
        "def ordinal(value):\n"
        "    @functools.lru_cache\n"
        "    def inner(v):\n"
        "        return str(v)\n"
        "    return inner(value)\n"
    )
    back = restored(answer, ORIGINAL)
    assert back is not None
    assert back.startswith('def ordinal(value):\n    """Converts an integer')
    assert '    """\n    @functools.lru_cache\n    def inner(v):' in back


def test_a_quote_inside_a_single_quoted_docstring_does_not_fool_the_short_line() -> None:
    source = "def f():\n    r'''Say \"\"\"hi\"\"\" to x.\n\n\n\n    '''\n    return 1\n"
    assert "    '''Say \"\"\"hi\"\"\" to x. ...'''" in shortened(source)
    ast.parse(shortened(source))


METHOD_FILE = (
    "class Shop:\n"
    "    def total(self, items):\n"
    '        """The total.\n'
    "        \n"
    "        Prices are summed, then rounded:\n"
    "            >>> Shop().total([1.005])\n"
    "            1.0\n"
    '        """\n'
    "        return round(sum(items), 1)\n"
)


def test_a_method_gets_its_docstring_back_to_the_character_in_the_file() -> None:
    """Offline, the path every answer takes (candidates_of): the method's docstring,
    a line of spaces in it and all, comes back in the file; only the fixed line differs."""
    idx = Index(sources={"shop.py": METHOD_FILE})
    symbol = Symbol("shop.py", "Shop.total", 2, 9, "method")
    target = target_of(idx, symbol)
    assert target is not None
    asked = repair_prompt(Task("total rounds to 1 place"), idx, Path("."), target, [], None)
    code = asked[-1]["content"].split("```python\n")[1].split("```")[0]
    assert code.startswith('def total(self, items):\n    """The total. ..."""\n    return')
    answer = "```python\n" + code.replace("sum(items), 1)", "sum(items), 2)") + "```"
    (found,) = candidates_of(idx, target, [answer], "", Counter())
    assert found.text == METHOD_FILE.replace("sum(items), 1)", "sum(items), 2)")
    assert found.changed_lines == 2


def _humanize(tmp_path: Path) -> tuple[Path, Index, str]:
    meta = tomllib.loads((BENCH / "real_tasks/humanize-ordinal-teens/task.toml").read_text())
    project = next(p for p in PROJECTS if p.name == meta["project"])
    tree = unpack(project, tmp_path / project.name)
    (bug,) = meta["bug"]
    path = tree / bug["file"]
    path.write_text(path.read_text().replace(bug["old"], bug["new"]))
    return tree, index(tree), bug["file"]


@pytest.mark.bench
@pytest.mark.realworld
def test_in_a_real_project_the_model_sees_the_body_and_the_pull_request_changes_one_line(
    tmp_path: Path,
) -> None:
    """humanize's `ordinal` (74 lines, 39 of them docstring): the repair prompt shows
    its body, and an answer written from the shortened docstring changes
    only the line it fixes."""
    tree, idx, path = _humanize(tmp_path)
    symbol = next(s for s in idx.symbols if s.qualname == "ordinal" and s.path == path)
    target = target_of(idx, symbol)
    assert target is not None
    task = Task("ordinal(13) gives '13rd'", documents=(Document("issue #1 body", "13th"),))
    asked = repair_prompt(task, idx, tree, target, [], None)[-1]["content"]
    code = asked.split("```python\n")[1].split("```")[0]
    assert '    """Converts an integer to its ordinal as a string. ..."""\n' in code
    assert ">>> ordinal(1002)" not in code
    assert "if value % 100 in (11, 12):" in code
    # The model answers from what it was shown, with the fix.
    answer = "```python\n" + code.replace("in (11, 12):", "in (11, 12, 13):") + "```"
    (found,) = candidates_of(idx, target, [answer], "", Counter())
    original = idx.sources[path]
    assert changed_lines(original, found.text) == 2
    assert found.text == original.replace("in (11, 12):", "in (11, 12, 13):")


@pytest.mark.slow
@pytest.mark.realworld
@pytest.mark.parametrize("name", sorted(p.name for p in PROJECTS))
def test_every_long_docstring_of_a_real_project_comes_back_as_it_was(
    name: str, tmp_path: Path
) -> None:
    """Each function of the project with a long docstring, shortened as the prompts show
    it, put back and spliced in: the file as it was, to the character."""
    project = next(p for p in PROJECTS if p.name == name)
    idx = index(unpack(project, tmp_path / name))
    tried = 0
    for symbol in idx.symbols:
        target = target_of(idx, symbol)
        if target is None:
            continue
        text = idx.sources[symbol.path]
        unit = unit_sources(text, target)[""]
        if span(unit) is None:
            continue
        tried += 1
        back = restored(shortened(unit) + "\n", unit)
        assert back is not None, symbol.qualname
        assert splice(text, target, back, {}) == text, symbol.qualname
    assert tried >= 2  # iniconfig has 2 of 19; toolz 77 of 178
