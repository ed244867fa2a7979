"""Mechanical changes (app/fixers/llm/repair/mutants.py) on the eval's own bugs: for every task
whose fix is one small change, that change is among those tried; and each change keeps
the rest of the function as it was written."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from app.fixers.llm.answers import normalised
from app.fixers.llm.localize import index
from app.fixers.llm.repair.candidates import Candidate
from app.fixers.llm.repair.mechanical import chosen_note, one_node_changes
from app.fixers.llm.repair.mutants import MAX_MUTANTS, mutants
from app.fixers.llm.repair.mutators import WEAK_JUDGE_MUTATORS
from app.fixers.llm.repair.splice import splice, target_of, unit_sources
from app.fixers.llm.repair.testruns import NO_JUDGE, try_change
from tests.realworld.conftest import unpack
from tests.realworld.projects import PROJECTS

BENCH = Path(__file__).parents[2] / "bench"

# The tasks whose reference fix is one small change: the function, and the change.
MECHANICAL = {
    "html-escape": ("escape", '`("&", "&amp;")` moved first in its list'),
    "token-bucket": ("_refill", "became `elapsed_ms * self.rate / 1000`"),
    "word-count": ("count_words", '`text.split(" ")` became `text.split()`'),
}
REAL_MECHANICAL = {
    "dateutil-within-delta": "`<` became `<=`",
    "iniconfig-get-default": "`return None` became `return default`",
    "six-ensure-text": "the unused parameter `errors` is passed on to `s.decode`",
    "toolz-take-nth": "`1` became `0`",
}


def _found(tree: Path, path: str, line: int, fixed: str) -> list[str]:
    """What each change that turns the file at ``path`` into ``fixed`` says it did,
    trying the changes of the function around ``line``."""
    idx = index(tree)
    symbol = next(
        s for s in idx.symbols if s.path == path and s.start <= line <= s.end and s.kind != "class"
    )
    target = target_of(idx, symbol)
    assert target is not None
    text = idx.sources[path]
    units = unit_sources(text, target)
    out = []
    for m in mutants(units):
        function = units[""] if m.unit else m.source
        spliced = splice(text, target, function, {m.unit: m.source} if m.unit else {})
        if spliced is not None and normalised(spliced) == normalised(fixed):
            out.append(m.what)
    return out


def _first_changed_line(a: str, b: str) -> int:
    for n, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False), 1):
        if x != y:
            return n
    return 1


@pytest.mark.bench
@pytest.mark.parametrize("name", sorted(MECHANICAL))
def test_the_one_change_that_fixes_an_eval_task_is_tried(name: str, tmp_path: Path) -> None:
    """The change is among those tried, and with it the task's hidden test passes."""
    task = BENCH / "agent_tasks" / name
    function, expected = MECHANICAL[name]
    tree = tmp_path / name
    shutil.copytree(task / "repo", tree)
    shutil.copytree(task / "hidden", tree, dirs_exist_ok=True)
    idx = index(tree)
    target = target_of(idx, next(s for s in idx.symbols if s.name == function))
    assert target is not None
    text = idx.sources[target.symbol.path]
    units = unit_sources(text, target)
    (change,) = [m for m in mutants(units) if expected in m.what]
    function_source = units[""] if change.unit else change.source
    spliced = splice(
        text, target, function_source, {change.unit: change.source} if change.unit else {}
    )
    assert spliced is not None
    hidden = [
        p.relative_to(task / "hidden").as_posix() for p in (task / "hidden").rglob("test_*.py")
    ]
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *hidden]
    assert subprocess.run(argv, cwd=tree, capture_output=True).returncode != 0  # the bug
    (tree / target.symbol.path).write_text(spliced)
    done = subprocess.run(argv, cwd=tree, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:]


@pytest.mark.bench
@pytest.mark.slow
@pytest.mark.realworld
@pytest.mark.parametrize("name", sorted(REAL_MECHANICAL))
def test_in_real_projects_the_one_change_that_fixes_the_bug_is_tried(
    name: str, tmp_path: Path
) -> None:
    meta = tomllib.loads((BENCH / "real_tasks" / name / "task.toml").read_text())
    project = next(p for p in PROJECTS if p.name == meta["project"])
    tree = unpack(project, tmp_path / project.name)
    (bug,) = meta["bug"]
    original = (tree / bug["file"]).read_text()
    buggy = original.replace(bug["old"], bug["new"])
    (tree / bug["file"]).write_text(buggy)
    line = original[: original.index(bug["old"])].count("\n") + 1
    found = _found(tree, bug["file"], line, original)
    assert any(REAL_MECHANICAL[name] in what for what in found), found


def test_a_change_keeps_the_rest_of_the_function_as_written() -> None:
    source = (
        "def window(items, size):\n"
        "    # the last window may be short\n"
        "    return [items[i : i + size]  for i in range(0, len(items) - 1, size)]\n"
    )
    changed = {m.what: m.source for m in mutants({"": source})}
    fixed = changed["`len(items) - 1` became `len(items)`"]
    assert fixed == source.replace("len(items) - 1", "len(items)")  # comment, spacing kept
    assert "the range stops one later (range(0, len(items) - 1, size))" not in changed  # 3 args


def test_what_is_not_code_is_never_changed() -> None:
    """Docstrings, parameter defaults and decorators are the function's contract."""
    source = (
        "@cache(size=128)\n"
        "def pad(text, width=10, fill=' '):\n"
        '    """Pads to 10 columns; see RFC 1."""\n'
        "    return text\n"
    )
    assert [m.what for m in mutants({"": source})] == []


def test_changes_are_distinct_and_capped() -> None:
    source = "def f(x):\n    return " + " + ".join(f"g(x, {n})" for n in range(2, 40)) + "\n"
    found = mutants({"": source})
    assert len(found) == MAX_MUTANTS
    assert len({normalised(m.source) for m in found}) == len(found)
    assert all(normalised(m.source) != normalised(source) for m in found)


def test_a_loop_over_what_its_body_changes_runs_over_a_copy() -> None:
    source = "def emit(self, name):\n    for handler in self.handlers[name]:\n        handler()\n"
    found = {m.what: m.source for m in mutants({"": source})}
    assert (
        "for handler in list(self.handlers[name]):"
        in found["the loop runs over a copy of `self.handlers[name]`"]
    )


@pytest.mark.parametrize(
    ("source", "what", "line"),
    [
        # An operand's brackets are not in its position: put back where Python needs them.
        ("return c - (a - b) * 1000", "`(a - b) * 1000` became `a - b`", "return c - (a - b)"),
        ("return list(range(x or y))", "the range stops one later", "range((x or y) + 1)"),
        ("return not (a and b)", "`and` became `or`", "return not (a or b)"),
        ("return (g or str)(' ')", "became `(g or str)()`", "return (g or str)()"),
        ("return len(s) < (limit or 10)", "`<` became `<=`", "return len(s) <= (limit or 10)"),
    ],
)
def test_a_change_keeps_the_meaning_of_what_it_did_not_change(
    source: str, what: str, line: str
) -> None:
    found = {
        m.what: m.source
        for m in mutants({"": f"def f(a, b, c, x, y, g, s, limit):\n    {source}\n"})
    }
    changed = next(v for k, v in found.items() if what in k)
    assert line in changed.splitlines()[1]


def test_changes_that_mean_the_same_are_tried_once() -> None:
    """`age < 17` → `age <= 17` is `age < 18`: two passing changes that are one would
    read as the tests unable to choose, and nothing would be proposed."""
    whats = [m.what for m in mutants({"": "def is_minor(age):\n    return age < 17\n"})]
    assert whats == ["`<` became `<=`"]
    whats = [m.what for m in mutants({"": "def f():\n    return list(range(3))\n"})]
    assert "the range stops one later (range(3))" not in whats  # `3` became `4` is it


def test_a_form_feed_in_a_string_does_not_shift_the_lines() -> None:
    source = 's = "\x0c"\n\n\ndef f(x):\n    a = x < 3\n    b = x < 30\n'
    found = {m.line: m.source for m in mutants({"": source})}
    assert found[6].split("\n")[5] == "    b = x <= 30"


@pytest.mark.bench
@pytest.mark.parametrize("name", sorted(MECHANICAL))
def test_an_answer_writing_the_reference_fix_is_a_one_node_change_when_one_test_may_judge_it(
    name: str,
) -> None:
    """The eval's one-change fixes, written by an answer as the whole file, are known as
    one-node changes (tried before more-voted answers) for the kinds one model test may
    judge — `&` moved first, `split()` — and not for an off-by-one
    (token-bucket's `/ 1000` taken away), which one model test may not judge."""
    task = BENCH / "agent_tasks" / name
    function, expected = MECHANICAL[name]
    idx = index(task / "repo")
    target = target_of(idx, next(s for s in idx.symbols if s.name == function))
    assert target is not None
    known = one_node_changes(idx, target)
    if name == "token-bucket":
        assert not any(expected in what for what in known.values())
        return
    fixed = (task / "solution" / target.symbol.path).read_text()
    assert expected in known[normalised(fixed)]


def test_one_model_test_never_sees_a_number_dropped_and_no_change_widens_an_allowlist() -> None:
    """`range(1, n)` as `range(n)` is an off-by-one: it needs a stronger judge than one
    model test, and is never tried first as a one-node answer. No change adds a
    character to a name's allowlist, whatever an issue's examples quote: the changes
    are taken from the code alone (no mutant reads the task's words)."""
    code = (
        "import re\n\nNAME = re.compile(r'^[a-z0-9_-]+$')\n\n\n"
        "def names(text, n):\n"
        "    return [w for w in text.split(' ') if NAME.match(w)][0:n] + list(range(1, n))\n"
    )
    weak = {m.what for m in mutants({"": code}, kinds=WEAK_JUDGE_MUTATORS)}
    every = mutants({"": code})
    assert "`range(1, n)` became `range(n)`" in {m.what for m in every} - weak
    assert "`text.split(' ')` became `text.split()`" in weak
    compiled = 0
    for m in every:
        space: dict[str, Any] = {}
        try:
            exec(m.source, space)  # noqa: S102 - this test's own code, changed
        except TypeError:  # `re.compile()`, its pattern left out: nothing gets through
            continue
        compiled += 1
        assert not any(space["NAME"].match(w) for w in ("a/b", "a.b", "a+b", "a'b")), m.what
    assert compiled >= len(every) - 1 > 5


def _answer(votes: int, one_node: str = "") -> Candidate:
    return Candidate(text="", votes=votes, one_node=one_node)


def test_the_pull_request_says_when_a_one_node_answer_went_before_more_votes() -> None:
    split = '`text.split(" ")` became `text.split()`'
    one, two = _answer(1, split), _answer(2)
    assert chosen_note(one, [one, two], "4 answers", "`t`") == (
        f"1 of 4 answers wrote this change, which is also a one-node change ({split}), so "
        "it was tried before changes more answers wrote; it makes `t` pass and keeps every "
        "other test passing"
    )
    # A one-node answer with more votes that failed first: no claim about more votes.
    three = _answer(3, "`&` moved first")
    assert "so it was tried before" not in chosen_note(one, [three, one], "4 answers", "`t`")
    # With the most votes it would have gone first anyway: no such claim.
    two.one_node, one.one_node = "`&` moved first", ""
    assert chosen_note(two, [two, one], "3 answers", "`t`") == (
        "2 of 3 answers wrote this change (the most), which is also a one-node change "
        "(`&` moved first); it makes `t` pass and keeps every other test passing"
    )
    # Among changes as many answers wrote, the smallest went first.
    two.one_node, other = "", _answer(2)
    assert chosen_note(two, [two, other, one], "5 answers", "`t`").endswith(
        "; the smallest such change"
    )
    assert not chosen_note(two, [two, one], "3 answers", "`t`").endswith("smallest such change")
    # A smaller one as many wrote failed before it: size chose nothing.
    assert not chosen_note(two, [other, two], "4 answers", "`t`").endswith("such change")


def test_a_guard_that_raises_is_never_turned_round() -> None:
    """email-plus, repair43: `not` taken away from `if not is_valid_email(address):
    raise ...` passed two model tests that agreed (`jane+news@...` signs up) and was
    published; it rejects every valid address. A `not` elsewhere may still go."""
    source = (
        "def signup(address):\n"
        "    if not is_valid_email(address):\n"
        "        raise SignupError(address)\n"
        "    return {'email': address, 'new': not known(address)}\n"
    )
    whats = [m.what for m in mutants({"": source})]
    assert "`not` taken away from `not is_valid_email(address)`" not in whats
    assert "`not` taken away from `not known(address)`" in whats


def test_a_pattern_gets_one_token_changed_at_a_time() -> None:
    """The pattern a `re` function takes (here formatted with `%`) gets its quantifiers
    made others and its classes one member short, one change a mutant; a string that
    is no pattern, and a class's `^`, are left alone."""
    source = (
        "def last_part(url, sep):\n"
        "    label = 'a+b[cd]'\n"
        "    return re.match(r'.*/([^/?]+)/?%s' % sep, url).group(1) + label\n"
    )
    found = {m.what: m.source for m in mutants({"": source})}
    regex = {what: text for what, text in found.items() if "left out of" in what or "after" in what}
    assert "r'.*/([^?]+)/?%s'" in regex["`/` left out of `[^/?]`"]
    assert "r'.*/([^/?]+)/*%s'" in regex["`?` became `*` after `.*/([^/?]+)/`"]
    assert "r'.*/([^/?]*)/?%s'" in regex["`+` became `*` after `r'.*/([^/?]`"]
    assert len(regex) == 5  # `.*` → `.+`, the class's two members, `+` → `*`, `/?` → `/*`
    assert all("label = 'a+b[cd]'" in text for text in regex.values())


async def test_a_change_with_no_test_that_must_pass_fails_closed(tmp_path: Path) -> None:
    """Nothing shows such a change fixes anything: it is not passed, and the tree is not
    touched (a caller that forgot its judge gets no pull request)."""
    (tmp_path / "m.py").write_text("def f(x):\n    return x\n")
    idx = index(tmp_path)
    ws = SimpleNamespace(tree=tmp_path)  # nothing else of a session may be reached
    verdict = await try_change(
        ws,  # type: ignore[arg-type]
        idx,
        path="m.py",
        text="def f(x):\n    return x + 1\n",
        must_pass=[],
        passed_before={"test_m::test_f"},
    )
    assert verdict == NO_JUDGE
    assert verdict != "passed"
    assert (tmp_path / "m.py").read_text() == "def f(x):\n    return x\n"
