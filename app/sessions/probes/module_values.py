"""Import each named module of a tree and print every string its module level holds.

Run inside the sandbox (no network, no secrets) as
``python module_values.py ROOT SECONDS PATH...``: for each ``PATH`` (a ``.py`` file
relative to ``ROOT``) a child process imports it as its package would (the folder above
its outermost ``__init__.py`` put first on ``sys.path``, then ``ROOT``), with
``SECONDS`` to do so, and walks what the module defines: its globals, the attributes
of the classes it defines, the items of containers among them (lists, tuples, sets,
dicts' keys and values) and the text of compiled regular expressions, to a bounded
depth and count. A module that imports is a JSON line ``{"path": ..., "imported":
true}``, then each string (and bytes, read as Latin-1) of at least ``MIN_CHARS``
characters it holds is a line ``{"path": ..., "name": ..., "value": ...}``; a module
that does not import is a line ``{"path": ..., "error": ...}``. Values that only a
function call would build are not seen: only what importing the module computes.

Standard library only, for any Python 3 the repository uses; it imports nothing of
Patchwarden. The results come back through a pipe of its own (the module's own output
goes to /dev/null): a module cannot print lines that pass for results by accident.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys

MIN_CHARS = 8
MAX_CHARS = 16384
MAX_VALUES = 5000  # per module
MAX_DEPTH = 4
_PATTERN = type(re.compile(""))


def module_name(root: str, path: str) -> tuple[str, str]:
    """(the folder to put on ``sys.path``, the dotted name) for ``path`` under ``root``:
    ``src/pkg/sub/mod.py`` with ``__init__.py`` in ``pkg`` and ``sub`` is
    (``ROOT/src``, ``pkg.sub.mod``)."""
    parts = path.split("/")
    stem = parts[-1][: -len(".py")]
    names = [] if stem == "__init__" else [stem]
    folder = parts[:-1]
    while folder and os.path.isfile(os.path.join(root, *folder, "__init__.py")):
        names.insert(0, folder.pop())
    return os.path.join(root, *folder), ".".join(names)


def values(module: object) -> list[tuple[str, str]]:
    """(where, text) of every string the module's level holds, as the docstring says."""
    found: list[tuple[str, str]] = []
    seen: set[int] = set()
    own = getattr(module, "__name__", "")

    def walk(where: str, value: object, depth: int) -> None:
        if len(found) >= MAX_VALUES or depth > MAX_DEPTH or id(value) in seen:
            return
        if isinstance(value, (bytes, bytearray)):
            value = bytes(value).decode("latin-1")
        if isinstance(value, str):
            if len(value) >= MIN_CHARS:
                found.append((where, value[:MAX_CHARS]))
            return
        if isinstance(value, _PATTERN):  # a compiled regular expression: its text
            walk(f"{where}.pattern", value.pattern, depth + 1)
            return
        seen.add(id(value))
        if isinstance(value, dict):
            for n, (key, item) in enumerate(list(value.items())[:MAX_VALUES]):
                walk(f"{where}[{n}]", key, depth + 1)
                walk(f"{where}[{key!r}]" if isinstance(key, str) else f"{where}[{n}]",
                     item, depth + 1)  # fmt: skip
        elif isinstance(value, (list, tuple, set, frozenset)):
            for n, item in enumerate(list(value)[:MAX_VALUES]):
                walk(f"{where}[{n}]", item, depth + 1)
        elif isinstance(value, type) and getattr(value, "__module__", None) == own:
            for name, item in list(vars(value).items()):
                if not (name.startswith("__") and name.endswith("__")):
                    walk(f"{where}.{name}", item, depth + 1)

    for name, value in list(vars(module).items()):
        if name.startswith("__") and name.endswith("__"):
            continue
        walk(name, value, 0)
    return found


def _child(root: str, path: str, seconds: int, out: int) -> None:
    """Import ``path`` and write its values to ``out``; then leave, whatever happens."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    signal.alarm(max(1, seconds))
    lines = []
    try:
        folder, name = module_name(root, path)
        sys.path[:0] = [folder, root]  # the tree's root too, as pytest's rootdir is
        import importlib

        module = importlib.import_module(name)
        signal.alarm(max(1, seconds))
        found = values(module)
        lines = [{"path": path, "imported": True}]
        lines += [{"path": path, "name": n, "value": v} for n, v in found]
    except BaseException as exc:
        lines = [{"path": path, "error": f"{type(exc).__name__}: {exc}"[:300]}]
    signal.alarm(0)
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(out, view) :]
    os._exit(0)


def _one(root: str, path: str, seconds: int) -> list[str]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child leaves through os._exit
        os.close(read)
        _child(root, path, seconds, write)
    os.close(write)
    chunks = []
    with os.fdopen(read, "rb") as pipe:
        for chunk in iter(lambda: pipe.read(65536), b""):
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode("utf-8", "replace")
    if not text:
        why = "timed out" if os.WIFSIGNALED(status) and os.WTERMSIG(status) == 14 else "exited"
        return [json.dumps({"path": path, "error": f"the import {why} before it finished"})]
    return text.splitlines()


def main(argv: list[str]) -> int:
    root, seconds, paths = argv[0], int(argv[1]), argv[2:]
    for path in paths:
        for line in _one(root, path, seconds):
            sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
