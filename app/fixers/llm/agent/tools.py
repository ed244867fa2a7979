"""The coding agent's tools: few, plainly described, and confined to the workspace.

File tools (``list_files``, ``read_file``, ``edit``, ``create_file``) work on the host
through descriptors that never follow a symlink (:mod:`app.sessions.workspace`), on
paths checked to stay inside the repository; ``search`` (grep) and ``run_tests`` run
in the sandbox with no network. Every answer is short and says what to do next when
something went wrong — a small model has to be able to act on it.

Over ~400 lines on purpose: the six tools and the path checks they share are one
contract with the model, read together.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shlex
import stat
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.fixers.interface import SKIP_DIRS, walk_files
from app.fixers.llm.agent.edits import EditError, apply_edit, syntax_error
from app.fixers.llm.agent.guesses import (
    MAX_FILE_BYTES,
    closest_file,
    file_holding,
    files_with_words,
    free_test_name,
    is_file,
    missing_imports,
    tests_in,
)
from app.fixers.llm.code_context import looks_like_test
from app.fixers.llm.imports import with_import_lines
from app.sessions.files import read_confined, write_confined
from app.sessions.fix_context import FixContext
from app.sessions.sandbox import WORKSPACE

MAX_READ_LINES = 300
MAX_LIST = 300
MAX_SEARCH_LINES = 50
MAX_RESULT_CHARS = 8000


def _schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Any:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_PATH = {"type": "string", "description": "a path relative to the repository root"}
TOOL_SCHEMAS: list[dict[str, Any]] = [
    _schema(
        "list_files",
        "List the files under a directory of the repository (recursive).",
        {"path": {**_PATH, "description": "a directory; '.' is the repository root"}},
        [],
    ),
    _schema(
        "read_file",
        f"Read a file, with line numbers. At most {MAX_READ_LINES} lines per call.",
        {
            "path": _PATH,
            "start": {"type": "integer", "description": "first line to show (from 1)"},
            "end": {"type": "integer", "description": "last line to show"},
        },
        ["path"],
    ),
    _schema(
        "search",
        "Search the repository's files for text (as written; as a regular expression "
        "when the text is not found). Shows file:line: text for each match.",
        {
            "pattern": {"type": "string", "description": "e.g. a function's name"},
            "path": {**_PATH, "description": "where to look; '.' for everywhere"},
        },
        ["pattern"],
    ),
    _schema(
        "edit",
        "Replace text in a file. 'old' must match the file exactly (spaces and "
        "indentation too) and only once; copy it from read_file without the line numbers.",
        {
            "path": _PATH,
            "old": {"type": "string", "description": "the exact text to replace"},
            "new": {"type": "string", "description": "the text to put instead"},
        },
        ["path", "old", "new"],
    ),
    _schema(
        "create_file",
        "Create a new file with the given content (fails if it exists: use edit).",
        {"path": _PATH, "content": {"type": "string"}},
        ["path", "content"],
    ),
    _schema(
        "run_tests",
        "Run the repository's tests. 'selector' narrows them to one test file, or to "
        "one test as FILE::NAME (names from list_files and read_file). Empty: all tests.",
        {"selector": {"type": "string"}},
        [],
    ),
    _schema(
        "finish",
        "Call this when you are done: summarise what you changed and why, in one to "
        "three sentences. If you could not fix it, say why.",
        {"summary": {"type": "string"}},
        [],
    ),
]
_SCHEMAS = {t["function"]["name"]: t for t in TOOL_SCHEMAS}
TOOL_NAMES = frozenset(_SCHEMAS)
# name -> the JSON Schema of its arguments (dialects.parse reads calls written as text)
TOOL_PARAMETERS = {name: t["function"]["parameters"] for name, t in _SCHEMAS.items()}


class ToolError(Exception):
    """A tool call that cannot be done as asked; the message goes back to the model."""


@dataclass
class ToolResult:
    text: str
    finished: bool = False
    summary: str = ""


@dataclass
class ToolBox:
    ctx: FixContext
    edited: set[str] = field(default_factory=set)  # paths changed through edit/create_file
    writes: int = 0  # files written so far
    tested: tuple[int, bool] | None = None  # (writes, passed) at the last run_tests
    made: set[tuple[str, str, str]] = field(default_factory=set)  # edits applied
    last_written: str = ""
    calls: dict[str, int] = field(default_factory=dict)

    async def call(self, name: str, arguments: str | dict[str, Any]) -> ToolResult:
        """Run one tool call; every failure becomes a result the model can act on."""
        self.calls[name] = self.calls.get(name, 0) + 1
        try:
            if name not in TOOL_NAMES:
                raise ToolError(
                    f"there is no tool called {name!r}; the tools are "
                    + ", ".join(sorted(TOOL_NAMES))
                )
            args = _typed(name, _arguments(arguments))
            result = await getattr(self, f"_{name}")(**args)
        except ToolError as exc:
            return ToolResult(f"error: {exc}")
        assert isinstance(result, ToolResult)
        if len(result.text) > MAX_RESULT_CHARS:
            cut = len(result.text) - MAX_RESULT_CHARS
            result.text = result.text[:MAX_RESULT_CHARS] + f"\n[... {cut} characters cut]"
        return result

    # -- the tools -----------------------------------------------------------
    async def _list_files(self, path: str = ".") -> ToolResult:
        rel = resolve(path, allow_root=True)
        base = self.ctx.tree if rel == "." else self.ctx.tree / rel
        if not _is_real_dir(self.ctx.tree, rel):
            raise ToolError(f"{path} is not a directory of the repository; try list_files('.')")
        entries = list(_walk(base, self.ctx.tree))
        shown = entries[:MAX_LIST]
        text = "\n".join(shown) if shown else "(empty directory)"
        if len(entries) > MAX_LIST:
            text += f"\n[... {len(entries) - MAX_LIST} more; list a subdirectory to see them]"
        return ToolResult(text)

    async def _read_file(self, path: str, start: int = 1, end: int | None = None) -> ToolResult:
        rel = resolve(path)
        # A small model misremembers a path (`tests/batching.py` for
        # `tests/test_batching.py`) and asks for it again and again: the one file it
        # plainly means is read, and the answer says so.
        guessed = (
            ""
            if is_file(self.ctx.tree, rel) or _is_real_dir(self.ctx.tree, rel)
            else closest_file(self.ctx.tree, rel)
        )
        if guessed:
            rel = guessed
        lines = self._text(rel, path).splitlines()
        if not lines:
            return ToolResult(f"{rel} is empty")
        start = max(1, start)
        last = len(lines) if end is None else min(end, len(lines))
        last = min(last, start + MAX_READ_LINES - 1)
        if start > len(lines):
            raise ToolError(f"{rel} has only {len(lines)} lines")
        width = len(str(last))
        body = "\n".join(f"{n:>{width}}| {lines[n - 1]}" for n in range(start, last + 1))
        note = ""
        if start > 1 or last < len(lines):
            note = f"\n(lines {start}-{last} of {len(lines)}"
            note += f"; read_file with start={last + 1} for more)" if last < len(lines) else ")"
        said = f"({path} is not in the repository; this is {rel})\n" if guessed else ""
        return ToolResult(f"{said}{rel}:\n{body}{note}")

    async def _search(self, pattern: str, path: str = ".") -> ToolResult:
        if not pattern:
            raise ToolError("pattern is empty")
        rel = resolve(path, allow_root=True)
        note = ""
        if not _is_real_dir(self.ctx.tree, rel) and not is_file(self.ctx.tree, rel):
            # Searched in a path that is not there: in the file it plainly means, else
            # everywhere, rather than an error the model repeats.
            wanted, rel = rel, closest_file(self.ctx.tree, rel) or "."
            where = rel if rel != "." else "the whole repository"
            note = f"({wanted} is not in the repository; searched {where} instead)\n"
        argv = ["grep", "-rnIHF", "--color=never"]
        argv += [f"--exclude-dir={d}" for d in sorted(SKIP_DIRS)]
        argv += ["-e", pattern, "--", rel]
        # A small model searches for code (`merged = dict(base)`, `parse(`): the text as
        # written first, then as a regular expression if it has any of their signs.
        done = await self.ctx.run(argv, name="search", timeout=60)
        if done.exit_code == 1 and re.search(r"[\\^$.*+?()\[\]{}|]", pattern):
            argv[1] = "-rnIHE"
            regex = await self.ctx.run(argv, name="search", timeout=60)
            if regex.exit_code == 0:
                done = regex
                note += "(no match as plain text; these match it as a regular expression)\n"
        if done.exit_code == 1:
            named = (
                closest_file(self.ctx.tree, pattern)
                if re.fullmatch(r"[\w./-]+\.\w+", pattern)
                else ""
            )
            if named:  # it searched for a file's name, not for text in it
                return ToolResult(
                    f"{note}no file has {pattern!r} in its text; the file named like it is "
                    f"{named} (read_file it)"
                )
            words = (
                files_with_words(self.ctx.tree, pattern) if _is_real_dir(self.ctx.tree, rel) else ""
            )
            if words:  # words of the issue searched as one phrase
                return ToolResult(
                    f"{note}no matches for {pattern!r} as written; files with its words: "
                    f"{words}. read_file the one that looks right"
                )
            where = "read_file it" if not _is_real_dir(self.ctx.tree, rel) else "search '.'"
            return ToolResult(
                f"{note}no matches for {pattern!r} in {rel}; try a shorter or different "
                f"pattern, or {where}"
            )
        if done.exit_code != 0:
            raise ToolError(f"grep failed: {done.stderr.strip()[:500] or done.exit_code}")
        lines = [ln.removeprefix("./") for ln in done.stdout.splitlines()]
        text = note + "\n".join(ln[:300] for ln in lines[:MAX_SEARCH_LINES])
        if len(lines) > MAX_SEARCH_LINES:
            text += f"\n[... {len(lines) - MAX_SEARCH_LINES} more matches; narrow the pattern]"
        return ToolResult(text)

    async def _edit(self, path: str, old: str, new: str) -> ToolResult:
        rel = resolve(path)
        # The path misremembered (`tests/timefmt_test.py` for `timefmt.py`), but `old`
        # is in one file only: that file is plainly the one meant.
        meant = "" if is_file(self.ctx.tree, rel) else file_holding(self.ctx.tree, old)
        if meant:
            rel = meant
        text = self._text(rel, path)
        # The same edit again where `new` contains `old` would apply again and again
        # (a small model may repeat it, appending `+ 32` each time): it is done already.
        made = (rel, old, new)
        if made in self.made and old in new and new in text:
            at = text.find(new)
            where = f" (line {text.count(chr(10), 0, at) + 1})" if at >= 0 else ""
            raise ToolError(
                f"you already made this exact edit to {rel}{where}; making it again would "
                "repeat 'new' in the file. Read the file if unsure how it reads now, or "
                "run_tests to check the change"
            )
        try:
            edit = apply_edit(text, old, new, rel)
        except EditError as exc:
            raise ToolError(str(exc)) from None
        self._write(rel, edit.text)
        self.made.add(made)
        lines = edit.text.splitlines()
        shown_end = min(len(lines), edit.line + new.count("\n") + 2)
        shown_start = max(1, edit.line - 2)
        snippet = "\n".join(
            f"{n:>4}| {lines[n - 1]}" for n in range(shown_start, shown_end + 1) if n <= len(lines)
        )
        said = f"({path} is not in the repository; 'old' is in {rel} only) " if meant else ""
        return ToolResult(
            f"{said}edited {rel} at line {edit.line}{edit.how}; it now reads:\n{snippet}"
        )

    async def _create_file(self, path: str, content: str) -> ToolResult:
        rel = resolve(path)
        if is_file(self.ctx.tree, rel) and rel.endswith(".py") and looks_like_test(rel):
            # It wants to add a test to a test file: a new file is easier than an edit.
            raise ToolError(
                f"{rel} already exists; put the new test in a new file instead, such as "
                f"{free_test_name(self.ctx.tree, rel)}, or use edit to change {rel}"
            )
        # Only indentation is refused in a new file: other syntax may be newer than the
        # Python that checks it (an edit is checked against the file as it compiled).
        broken = syntax_error(content, rel, indentation=True) if rel.endswith(".py") else None
        if broken is not None and syntax_error(textwrap.dedent(content), rel) is None:
            content, broken = textwrap.dedent(content).lstrip("\n"), None  # all indented
        if broken is not None:
            raise ToolError(
                f"{rel} would not compile ({broken}), so it was not created; write each "
                "line with its full indentation"
            )
        added = []
        if rel.endswith(".py") and looks_like_test(rel) and "__future__" not in content:
            added = missing_imports(self.ctx.tree, content)
            content = with_import_lines(content, added)
        self._write(rel, content, new=True)
        said = f"; added the imports it lacked: {'; '.join(added)}" if added else ""
        return ToolResult(f"created {rel} ({len(content.splitlines())} lines{said})")

    async def _run_tests(self, selector: str = "") -> ToolResult:
        if not self.ctx.commands.test:
            raise ToolError(
                "this repository has no test command Patchwarden knows "
                "(a maintainer can set `test:` in .github/patchwarden.yml)"
            )
        try:
            extra = shlex.split(selector)
        except ValueError as exc:
            raise ToolError(f"selector does not parse: {exc}") from None
        if self.ctx.commands.is_pytest and not any(a.startswith("--tb") for a in extra):
            extra = ["--tb=short", *extra]  # the assertion and the last frames, not pages
        done = await self.ctx.run_tests(extra, name="run_tests")
        self.tested = (self.writes, not done.timed_out and done.exit_code == 0)
        if done.timed_out:
            verdict = "timed out"
        else:
            verdict = "passed" if done.exit_code == 0 else f"failed (exit code {done.exit_code})"
        output = (done.stdout + ("\n" + done.stderr if done.stderr.strip() else "")).strip()
        tail = output[-3000:]
        cut = "[... earlier output cut]\n" if len(output) > len(tail) else ""
        shown = " ".join(shlex.quote(a) for a in [*self.ctx.commands.test, *extra])
        return ToolResult(
            f"$ {shown}\ntests {verdict}\n{cut}{tail}{tests_in(self.ctx.tree, output)}"
        )

    async def _finish(self, summary: str = "") -> ToolResult:
        return ToolResult("finished", finished=True, summary=str(summary).strip())

    # -- helpers -------------------------------------------------------------
    def _text(self, rel: str, shown: str) -> str:
        data = read_confined(self.ctx.tree, rel, limit=MAX_FILE_BYTES + 1)
        if data is None:
            if _is_real_dir(self.ctx.tree, rel):
                raise ToolError(f"{rel} is a directory; use list_files")
            raise ToolError(
                f"{shown} is not a file in the repository (paths are relative to its root; "
                "use list_files or search to find the right one)"
            )
        if len(data) > MAX_FILE_BYTES:
            raise ToolError(f"{rel} is larger than {MAX_FILE_BYTES // 1024} KiB")
        if b"\0" in data[:8192]:
            raise ToolError(f"{rel} is a binary file")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{rel} is not UTF-8 text") from None

    def _write(self, rel: str, text: str, *, new: bool = False) -> None:
        try:
            write_confined(self.ctx.tree, rel, text.encode("utf-8"), exclusive=new)
        except FileExistsError:
            raise ToolError(f"{rel} already exists; use edit to change it") from None
        except OSError as exc:
            raise ToolError(f"cannot write {rel}: {exc.strerror or exc}") from None
        self.ctx.sandbox.prepare_writable(self.ctx.tree / rel)
        self.edited.add(rel)
        self.writes += 1
        self.last_written = rel


def resolve(path: str, *, allow_root: bool = False) -> str:
    """``path`` as a normalised path relative to the repository root, or ToolError if it
    would leave the workspace (absolute elsewhere, ``..``) or touch git's own files."""
    raw = str(path).strip()
    if raw.startswith(WORKSPACE + "/") or raw == WORKSPACE:
        raw = raw[len(WORKSPACE) :].lstrip("/") or "."
    if "\0" in raw:
        raise ToolError("path contains a NUL character")
    if raw.startswith("/") or raw.startswith("~"):
        raise ToolError(
            f"{path!r} is outside the workspace; use a path relative to the repository "
            "root, such as src/app.py"
        )
    rel = posixpath.normpath(raw or ".")
    if rel == ".." or rel.startswith("../"):
        raise ToolError(f"{path!r} is outside the workspace; paths must stay in the repository")
    if ".git" in rel.split("/"):
        raise ToolError("git's own files (.git) are not part of the workspace")
    if rel == "." and not allow_root:
        raise ToolError("give a file path, such as src/app.py")
    return rel


def _arguments(raw: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"the arguments are not valid JSON ({exc.msg}); send a JSON object"
        ) from None
    if not isinstance(value, dict):
        raise ToolError("the arguments must be a JSON object")
    return value


def _typed(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` checked against the tool's schema: known names, the required ones there,
    text where text goes and whole numbers (also written as text) where they go;
    ``null`` counts as not given. Anything else is a ToolError the model can act on."""
    params = _SCHEMAS[name]["function"]["parameters"]
    props: dict[str, Any] = params["properties"]
    wrong = f"wrong arguments for {name}"
    checked: dict[str, Any] = {}
    for key, value in args.items():
        if key not in props:
            takes = ", ".join(props) or "no arguments"
            raise ToolError(f"{wrong}: it takes {takes}, not {key!r}")
        if value is None:
            continue
        if props[key]["type"] == "integer":
            if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ToolError(f"{wrong}: {key!r} must be a whole number, not {value!r}")
        elif not isinstance(value, str):
            raise ToolError(f"{wrong}: {key!r} must be text, not {value!r}")
        checked[key] = value
    missing = [k for k in params["required"] if k not in checked]
    if missing:
        raise ToolError(f"{wrong}: {', '.join(repr(k) for k in missing)} is required")
    return checked


def _is_real_dir(tree: Path, rel: str) -> bool:
    """Whether ``tree/rel`` is a directory reached without any symlink."""
    here = tree
    for part in [] if rel == "." else rel.split("/"):
        here = here / part
        try:
            st = os.lstat(here)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            return False
    return True


def _walk(base: Path, tree: Path) -> Iterator[str]:
    for path, link in walk_files(base, tree):
        yield f"{path} -> (symlink)" if link else path
