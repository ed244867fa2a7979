"""The ``edit`` tool's text work: exact search and replace, forgiving where a small
model's mistakes have only one reading, and saying exactly why otherwise.

Forgiven: ``old`` copied from ``read_file`` with its line-number prefixes, and ``old``
that matches whole lines of the file exactly once when indentation and trailing
whitespace are ignored, when ``new`` can be indented to fit in one way only: by the one
shift that takes every line of ``old`` to the file's, or line for line when ``new`` has
as many lines (the file's line endings are kept); and, in Python, the later lines of
``new`` written from column 0 when ``old`` starts at an indented line's code and only
that reading compiles. Refused, with what to do: no match,
several matches, no single way to indent, an edit that changes nothing, and an edit
that would leave a Python file that compiled unable to compile (checked with
``compile()``, which never runs the code).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass


class EditError(Exception):
    """Why the edit was not applied, worded for the model."""


@dataclass(frozen=True)
class Edit:
    text: str  # the file's new text
    line: int  # where the change starts (from 1)
    how: str = ""  # a note when the match was not exact


def apply_edit(text: str, old: str, new: str, rel: str) -> Edit:
    """``text`` with ``old`` replaced by ``new`` (``rel`` names the file in messages)."""
    if old == "":
        raise EditError("'old' is empty; to add text, include the line before it in 'old'")
    if old == new:
        raise EditError(_no_change(text, old, rel))
    if old not in text and _numbered(old):
        # Copied from read_file with its line numbers: they are not in the file.
        old, new = _unnumbered(old), _unnumbered(new)  # new: its copied lines, not added ones
    count = text.count(old)
    how = ""
    if count == 0:
        loose = _loose_match(text, old, new)
        if loose is None:
            raise EditError(_not_found(rel, text, old))
        at, end, new = loose
        if text[at:end] == new:
            raise EditError(
                "'new' is the same as the file's text once spacing is ignored, so this "
                "edit changes nothing; put in 'new' what the code should say instead"
            )
        old = text[at:end]
        how = " ('old' matched once with different spacing; 'new' was indented to match)"
    elif count > 1:
        where = [str(text.count("\n", 0, m.start()) + 1) for m in re.finditer(re.escape(old), text)]
        raise EditError(
            f"'old' occurs {count} times in {rel} (lines {', '.join(where[:10])}); "
            "include more of the surrounding lines so that it matches only once"
        )
    else:
        at = text.index(old)
    _refuse_lines_already_there(text, at + len(old), old, new, rel)
    updated = text[:at] + new + text[at + len(old) :]
    line = text.count("\n", 0, at) + 1
    if not rel.endswith(".py") or syntax_error(text, rel) is not None:
        return Edit(updated, line, how)
    broken = syntax_error(updated, rel)
    if broken is None:
        return Edit(updated, line, how)
    # A small model writes `if n > stock: raise X\nstock -= n` for `stock -= n` at 8
    # spaces, its second line meant level with the first: if that reading parses, it is
    # the one.
    lead = text[text.rfind("\n", 0, at) + 1 : at]
    if lead and not lead.strip() and "\n" in new.strip("\n"):
        first, *rest = new.split("\n")
        shifted = "\n".join([first, *(lead + ln if ln.strip() else ln for ln in rest)])
        retried = text[:at] + shifted + text[at + len(old) :]
        if syntax_error(retried, rel) is None:
            return Edit(retried, line, " (the later lines of 'new' were indented like its first)")
    shown = _numbered_lines(updated, line, new.count("\n") + 1)
    raise EditError(
        f"this edit would leave {rel} unable to parse ({broken}), so it was not applied. "
        f"With it the lines would read:\n{shown}\nWrite 'new' with each line's full "
        "indentation as it should stand in the file."
    )


def _no_change(text: str, old: str, rel: str) -> str:
    """Why an edit whose 'old' and 'new' are the same is refused."""
    if old not in text and _unnumbered(old) not in text:
        return (
            f"'old' and 'new' are the same, and 'old' is not in {rel} either: put in "
            "'old' the lines to change, copied exactly from the file, and in 'new' "
            "those lines as they should read"
        )
    return (
        "'old' and 'new' are the same, so this edit changes nothing; put in 'new' "
        "what the code should say instead"
    )


def _refuse_lines_already_there(text: str, end: int, old: str, new: str, rel: str) -> None:
    """A small model that means to replace a function's body writes ``old`` = the
    ``def`` line and ``new`` = that line plus the body as it already reads: the lines it
    adds are right below, and the code would do the same. Refused, with what to do."""
    if not new.startswith(old) or not new[len(old) :].startswith(("\n", "\r\n")):
        return
    added = [ln.strip() for ln in new[len(old) :].splitlines() if ln.strip()]
    below = [ln.strip() for ln in text[end:].splitlines()[1 : len(added) + 4]]
    if added and all(ln in below for ln in added):
        first = text.count("\n", 0, end) + 2
        raise EditError(
            f"'new' only adds lines that {rel} already has right below 'old' (from line "
            f"{first}), so the code would do the same. To change a line, put that line in "
            "'old' and the line as it should read in 'new'."
        )


def syntax_error(text: str, rel: str, *, indentation: bool = False) -> str | None:
    """Why Python cannot compile ``text`` (compiled only, never run), or None; with
    ``indentation``, only an indentation error counts. Warnings (an invalid escape in
    a string) are not errors here, whatever the process's warning filters say."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, rel, "exec", dont_inherit=True)
    except SyntaxError as exc:  # IndentationError too
        if indentation and not isinstance(exc, IndentationError):
            return None
        return f"line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return str(exc) or type(exc).__name__
    return None


def _numbered_lines(text: str, line: int, count: int) -> str:
    lines = text.splitlines()
    first, last = max(1, line - 1), min(len(lines), line + count)
    return "\n".join(f"{n:>4}| {lines[n - 1]}" for n in range(first, last + 1))


_NUMBERED = re.compile(r"^ *\d+\| ?", re.MULTILINE)


def _numbered(text: str) -> bool:
    """Whether every line of ``text`` starts with read_file's ``  12| `` prefix."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return bool(lines) and all(_NUMBERED.match(ln) for ln in lines)


def _unnumbered(text: str) -> str:
    return _NUMBERED.sub("", text)


def _squeeze(line: str) -> str:
    """The line without its indentation and trailing whitespace: what the loose match
    forgives, and nothing inside the line (two spaces in a string literal are not one)."""
    return line.strip()


def _loose_blocks(lines: list[str], want: list[str]) -> list[int]:
    """Where the lines ``want`` start in ``lines`` when whitespace is ignored."""
    return [
        i
        for i in range(len(lines) - len(want) + 1)
        if all(_squeeze(lines[i + k]) == w for k, w in enumerate(want))
    ]


def _loose_match(text: str, old: str, new: str) -> tuple[int, int, str] | None:
    """Where whole lines of ``text`` are ``old`` but for spacing and indentation, found
    exactly once, and ``new`` re-indented as the file's lines are: (start, end, new);
    None when there is no single such place or no single way to indent ``new``."""
    old_lines = old.strip("\r\n").splitlines()
    want = [_squeeze(ln) for ln in old_lines]
    if not want or not all(want):
        return None
    lines = text.splitlines(keepends=True)
    found = _loose_blocks([ln.rstrip("\r\n") for ln in lines], want)
    if len(found) != 1:
        return None
    i = found[0]
    block = lines[i : i + len(want)]
    at = sum(len(ln) for ln in lines[:i])
    last = block[-1]
    end = at + sum(len(ln) for ln in block) - (len(last) - len(last.rstrip("\r\n")))
    eol = "\r\n" if block[0].endswith("\r\n") else "\n"
    in_file = [_indent(b.rstrip("\r\n")) for b in block]
    in_old = [_indent(ln) for ln in old_lines]
    new_lines = new.strip("\r\n").splitlines()
    shifted = _shift(in_file, in_old, new_lines)
    if shifted is None and len(new_lines) == len(old_lines):
        # Line for line (a model that wrote every line flush left): line k of `new`
        # takes the indentation the file has where `old` has line k.
        shifted = [
            "" if not ln.strip()
            else f + (ln[len(o) :] if ln.startswith(o) else ln.lstrip())
            for ln, f, o in zip(new_lines, in_file, in_old, strict=True)
        ]  # fmt: skip
    if shifted is None:
        return None
    return at, end, eol.join(shifted)


def _shift(in_file: list[str], in_old: list[str], new_lines: list[str]) -> list[str] | None:
    """``new_lines`` moved by the one indentation change that takes every line of ``old``
    to the file's (the same prefix added to, or removed from, each); None if there is
    no such single change or a line of ``new`` cannot take it."""
    added = {f[: len(f) - len(o)] for f, o in zip(in_file, in_old, strict=True) if f.endswith(o)}
    if len(added) == 1 and all(f.endswith(o) for f, o in zip(in_file, in_old, strict=True)):
        (prefix,) = added
        return [prefix + ln if ln.strip() else "" for ln in new_lines]
    pairs = list(zip(in_file, in_old, strict=True))
    removed = {o[: len(o) - len(f)] for f, o in pairs if o.endswith(f)}
    if len(removed) == 1 and all(o.endswith(f) for f, o in pairs):
        (prefix,) = removed
        if all(ln.startswith(prefix) or not ln.strip() for ln in new_lines):
            return [ln[len(prefix) :] if ln.strip() else "" for ln in new_lines]
    return None


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _not_found(rel: str, text: str, old: str) -> str:
    """Why ``old`` is not in the file, with what a small model needs to try again: where
    the same lines are when spacing is ignored, and how they really read."""
    message = f"'old' was not found in {rel}."
    want = [_squeeze(ln) for ln in old.strip("\n").splitlines()]
    if not any(want):
        return f"{message} Use read_file to see the current text and copy it exactly."
    lines = text.splitlines()
    found = _loose_blocks(lines, want)
    if len(found) > 1:
        where = ", ".join(str(i + 1) for i in found[:10])
        return (
            f"{message} With spacing ignored it matches {len(found)} places (lines {where}); "
            "include more of the surrounding lines so that it matches only once."
        )
    if len(found) == 1:
        i, n = found[0], len(want)
        span = f"Line {i + 1}" if n == 1 else f"Lines {i + 1}-{i + n}"
        actual = "\n".join(lines[i : i + n])
        return (
            f"{message} {span} match if spacing and indentation are ignored, but 'new' "
            "cannot be indented to fit them in only one way; in the file they read:\n"
            f"{actual}\nCopy them exactly into 'old' (without the line numbers)."
        )
    first = next((w for w in want if w), "")
    near = [i + 1 for i, ln in enumerate(lines) if first and first in _squeeze(ln)][:5]
    if near:
        shown = "\n".join(f"{n:>4}| {lines[n - 1]}" for n in near)
        return (
            f"{message} Its first line is like these lines of the file:\n{shown}\n"
            "Read them with read_file and copy the text exactly (without the line numbers)."
        )
    return f"{message} Use read_file to see the current text and copy it exactly."
