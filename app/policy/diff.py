"""A unified diff as the policy reads it: per file, its paths, status, mode and lines.

Parsed with ``unidiff`` in its metadata-only mode (paths, renames, modes, binary files,
hunk headers checked against their bodies' lengths: about a third of its full parse's
cost), then each hunk's lines read here by the same counting rule; a hunk found here that
does not agree with unidiff's is an error. Any text is accepted: what does not parse
comes back as a :class:`ParsedDiff` with ``error`` set (the scorer rejects it, fail
closed), never as an exception.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from typing import Literal

from unidiff.patch import PatchedFile, PatchSet

Status = Literal["added", "modified", "removed", "renamed"]


@dataclass(frozen=True)
class ChangedFile:
    path: str  # the new path; for a deleted file, the path it had
    status: Status
    old_path: str | None = None  # renames only
    added_lines: tuple[tuple[int, str], ...] = ()  # (line number in the new file, text)
    removed_lines: tuple[str, ...] = ()
    context: tuple[str, ...] = ()  # hunk headers' section text and context lines
    # Every hunk line in order, as (" " | "+" | "-", text), and ("@", "") where a hunk
    # starts: a lockfile's changed version belongs to the name line above it, which git
    # often shows as context.
    ordered: tuple[tuple[str, str], ...] = ()
    binary: bool = False
    old_mode: str | None = None
    new_mode: str | None = None

    @property
    def added(self) -> int:
        return len(self.added_lines)

    @property
    def removed(self) -> int:
        return len(self.removed_lines)

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the change touches: both sides of a rename."""
        return (self.path,) if self.old_path is None else (self.old_path, self.path)

    @property
    def made_executable(self) -> bool:
        return bool(self.new_mode and self.new_mode.endswith("755")) and not (
            self.old_mode is not None and self.old_mode.endswith("755")
        )


@dataclass(frozen=True)
class ParsedDiff:
    files: tuple[ChangedFile, ...] = ()
    error: str | None = None  # the text is not a diff Patchwarden can read
    truncated: bool = False  # the session cut the diff at its size cap
    extra_paths: tuple[str, ...] = field(default=())  # paths known from git's stats only


TRUNCATION_MARK = "[... diff cut by Patchwarden ...]"


def parse_diff(text: str) -> ParsedDiff:
    """Read ``text`` (``git diff`` output, or any unified diff) into per-file changes."""
    # The session appends the mark as the diff's last line; the same words inside a
    # changed line (this very file, say) are content.
    truncated = text.rstrip().endswith(TRUNCATION_MARK)
    if truncated:
        text = text[: text.rindex(TRUNCATION_MARK)]
    try:
        patch = PatchSet(text, metadata_only=True)
        lines = text.split("\n")  # as unidiff reads it: StringIO splits at "\n" only
        files = tuple(_file(p, lines) for p in patch)
    except Exception as exc:  # unidiff raises several kinds on malformed input
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return ParsedDiff(error=f"the diff does not parse: {reason}", truncated=truncated)
    if not files and text.strip():
        return ParsedDiff(error="the diff does not parse: no file changes found in it")
    # unidiff skips what it cannot place in a hunk; a line it skipped could hold anything.
    changed = sum(
        1
        for line in text.splitlines()
        if line.startswith(("+", "-")) and not line.startswith(("+++ ", "--- "))
    )
    if sum(f.added + f.removed for f in files) < changed:
        return ParsedDiff(
            error="the diff does not parse: changed lines outside any readable hunk",
            truncated=truncated,
        )
    return ParsedDiff(files=files, truncated=truncated)


def _unquote(name: str) -> str:
    """git's C-style quoting of unusual paths (``"a/caf\\303\\251.txt"``) undone."""
    if len(name) >= 2 and name.startswith('"') and name.endswith('"'):
        raw = codecs.escape_decode(name[1:-1].encode("latin-1", "backslashreplace"))[0]
        return bytes(raw).decode("utf-8", "replace")
    return name


def _strip(name: str | None) -> str:
    name = _unquote((name or "").strip())
    if name.startswith(("a/", "b/")):
        name = name[2:]
    return name


class _HunkMismatch(ValueError):
    pass


_Hunks = tuple[list[tuple[int, str]], list[str], list[str], list[tuple[str, str]]]


def _hunks(p: PatchedFile, lines: list[str]) -> _Hunks:
    """The added (with their new line numbers), removed and context lines of ``p``'s
    hunks, and all of them in order, read from ``lines`` (the diff's) after its header."""
    added: list[tuple[int, str]] = []
    removed: list[str] = []
    context: list[str] = []
    ordered: list[tuple[str, str]] = []
    i = (p.diff_line_no or 1) - 1  # 1-based: the file's first header line
    for hunk in p:
        while i < len(lines) and not lines[i].startswith("@@ "):
            i += 1  # headers, "\ No newline" markers, blank separators
        if i >= len(lines):
            raise _HunkMismatch("a hunk unidiff read was not found")
        header = _HUNK_HEADER.match(lines[i])
        if header is None or tuple(int(n) for n in header.groups("1")) != (
            hunk.source_start,
            hunk.source_length,
            hunk.target_start,
            hunk.target_length,
        ):
            raise _HunkMismatch(f"hunk header {lines[i][:80]!r} read two ways")
        ordered.append(("@", ""))  # a hunk starts: nothing above it is shown
        if hunk.section_header:
            context.append(hunk.section_header)
        i += 1
        source, target = hunk.source_length, hunk.target_length
        number = hunk.target_start
        while i < len(lines):
            line = lines[i]
            i += 1
            kind = line[:1]
            if kind == "+":
                added.append((number, line[1:]))
                ordered.append(("+", line[1:]))
                number += 1
                target -= 1
            elif kind == "-":
                removed.append(line[1:])
                ordered.append(("-", line[1:]))
                source -= 1
            elif kind == "\\":
                pass
            else:  # " ", or a blank line ("\r" too) as unidiff reads it: context
                context.append(line[1:] if kind == " " else kind)
                ordered.append((" ", context[-1]))
                number += 1
                source -= 1
                target -= 1
            if source <= 0 and target <= 0:
                break
        if source != 0 or target != 0:
            raise _HunkMismatch("a hunk's lines do not match its header")
    return added, removed, context, ordered


_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))?\ @@")


def _file(p: PatchedFile, lines: list[str]) -> ChangedFile:
    old_mode = new_mode = None
    for info in str(p.patch_info or "").splitlines():
        if info.startswith(("old mode ", "deleted file mode ")):
            old_mode = info.rsplit(" ", 1)[1]
        elif info.startswith(("new mode ", "new file mode ")):
            new_mode = info.rsplit(" ", 1)[1]
    status: Status
    old_path: str | None = None
    if p.is_added_file:
        status = "added"
    elif p.is_removed_file:
        status = "removed"
    elif p.is_rename:
        status = "renamed"
        old_path = _strip(p.source_file)
    else:
        status = "modified"
    path = _strip(p.source_file) if status == "removed" else _strip(p.target_file)
    if not path or path == "/dev/null":
        path = p.path
    added, removed, context, ordered = _hunks(p, lines)
    return ChangedFile(
        path=path,
        status=status,
        old_path=old_path,
        added_lines=tuple(added),
        removed_lines=tuple(removed),
        context=tuple(context),
        ordered=tuple(ordered),
        binary=bool(p.is_binary_file),
        old_mode=old_mode,
        new_mode=new_mode,
    )
