"""What a change makes the code *do*: network, processes, the environment, dynamic code.

The size of a diff says little about its danger: four added lines that send
``os.environ`` through a socket are a small change. This module reads the lines a
change adds and names the behaviours they introduce, each with where and what:

- ``network``: sockets, HTTP clients, ``urlopen``, SMTP/FTP/telnet, ``curl``/``wget``;
- ``process``: ``subprocess``, ``os.system``/``popen``/``exec*``/``spawn*``, ``pty``;
- ``environment``: ``os.environ``, ``getenv``, ``/proc/self/environ``;
- ``outside_files``: paths outside the repository (``/etc/…``, ``~``, ``Path.home()``);
- ``dynamic_code``: ``eval``, ``exec``, ``compile``, ``__import__``, ``importlib``;
- ``deserialisation``: ``pickle``, ``marshal``, ``shelve``, ``yaml.load``/``unsafe_load``;
- ``package_install``: ``pip install`` (or ``npm``/``uv``/``conda``) at run time;
- ``test_harness``: ``conftest.py``, pytest/tox/nox configuration, ``addopts``,
  pytest hooks (``def pytest_…``), ``sitecustomize``/``usercustomize``/``.pth`` files;
  a ``package.json``'s ``test`` scripts, jest's, vitest's and mocha's configuration;
- ``package_index``: ``pip.conf``, ``.npmrc``, ``--extra-index-url``, ``-e git+…``,
  ``[[tool.uv.index]]``: where packages come from;
- ``install_script``: a ``package.json`` script npm runs when the package is installed
  (``preinstall``, ``install``, ``postinstall``, ``prepare`` and its ``pre``/``post``),
  or a ``binding.gyp`` (npm builds it at install): code that runs on every machine that
  installs it, before any test;
- ``conda_dependencies``: an ``environment.yml``'s dependencies;
- ``action``: an ``action.yml`` anywhere (code a workflow runs);
- ``gitattributes``: ``.gitattributes`` (diff, merge and filter drivers; hidden diffs);
- ``file_mode``: a file or directory made world-writable, setuid or setgid
  (``os.chmod(p, 0o777)``, ``Path.mkdir(mode=…)``, ``os.umask(0)``, ``chmod 777``/``+s``);
- ``opaque_literal``: a random-looking string of credential length in Python code that
  no credential detector knows (a key of an unknown format, or one written to pass
  them); named by its length only, never shown.

Python is read with :mod:`ast`, not with regular expressions over text, so a comment or
a string that mentions ``subprocess`` is not a process, and ``import socket as s;
s.create_connection(...)`` is network use. Added lines are fragments of a file, so each
run of consecutive added lines is parsed alone; a run that does not parse (half a
statement) is read with :mod:`tokenize` instead, names only, strings and comments
skipped. Behaviour that the same file's removed lines already had is moved, not added.
JavaScript and TypeScript are read from their syntax tree as well
(:mod:`app.policy.js_behaviour`, tree-sitter). Other files are read line by line with a
few patterns per language.

Pure: :class:`~app.policy.diff.ChangedFile` in, :class:`Behaviour` list out.

Over ~400 lines on purpose: a table of behaviours (what each pattern means, its
weight, the words a PR body says for it) that is read and reviewed as one list.
"""

from __future__ import annotations

import ast
import re
import stat
import textwrap
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, get_args

from app import credentials
from app.policy.diff import ChangedFile
from app.policy.js_behaviour import js_behaviours, line_runs

Kind = Literal[
    "network",
    "process",
    "environment",
    "outside_files",
    "dynamic_code",
    "deserialisation",
    "package_install",
    "test_harness",
    "package_index",
    "install_script",
    "conda_dependencies",
    "action",
    "gitattributes",
    "file_mode",
    "opaque_literal",
]
KINDS: tuple[Kind, ...] = get_args(Kind)  # in the order the PR body lists them
# What the PR body says for each kind: "adds <this>: …".
SAYS: dict[Kind, str] = {
    "network": "network use",
    "process": "process execution",
    "environment": "reads of the environment",
    "outside_files": "file access outside the repository",
    "dynamic_code": "dynamic code execution",
    "deserialisation": "unsafe deserialisation",
    "package_install": "package installs at run time",
    "test_harness": "changes to the test harness",
    "package_index": "changes to where packages come from",
    "install_script": "scripts npm runs when the package is installed",
    "conda_dependencies": "changes to a conda environment's dependencies",
    "action": "changes to a GitHub Action",
    "gitattributes": "changes to .gitattributes",
    "file_mode": "world-writable, setuid or setgid file modes",
    "opaque_literal": "random-looking strings no credential detector knows",
}


@dataclass(frozen=True)
class Behaviour:
    kind: Kind
    path: str
    line: int | None  # in the new file; None for a file-level behaviour
    what: str  # "socket.create_connection", "conftest.py", "--extra-index-url"

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


# -- Python --------------------------------------------------------------------------------

# Modules whose import (or any use) is the behaviour.
_MODULES: dict[str, Kind] = {
    **dict.fromkeys(
        (
            "socket", "ssl", "http.client", "http.server", "urllib.request", "urllib3",
            "requests", "httpx", "aiohttp", "ftplib", "smtplib", "telnetlib", "poplib",
            "imaplib", "nntplib", "xmlrpc.client", "paramiko", "websocket", "websockets",
            "pycurl", "asyncssh", "socketserver", "dns.resolver", "grpc",
        ),
        "network",
    ),
    **dict.fromkeys(("subprocess", "pty", "pexpect", "sh", "plumbum"), "process"),
    **dict.fromkeys(("runpy", "code", "codeop"), "dynamic_code"),
    **dict.fromkeys(
        ("pickle", "cPickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle",
         "jsonpickle", "joblib"),
        "deserialisation",
    ),
    **dict.fromkeys(("pip", "ensurepip"), "package_install"),
    "dotenv": "environment",
    "ctypes": "dynamic_code",
}  # fmt: skip
# Attributes (fully qualified) that are the behaviour, when the module itself is not.
_ATTRS: dict[str, Kind] = {
    **dict.fromkeys(
        (
            "os.system", "os.popen", "os.spawnl", "os.spawnle", "os.spawnlp", "os.spawnlpe",
            "os.spawnv", "os.spawnve", "os.spawnvp", "os.spawnvpe", "os.execl", "os.execle",
            "os.execlp", "os.execlpe", "os.execv", "os.execve", "os.execvp", "os.execvpe",
            "os.posix_spawn", "os.posix_spawnp", "os.fork", "os.forkpty",
            "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell",
            "multiprocessing.Process",
        ),
        "process",
    ),
    **dict.fromkeys(
        ("os.environ", "os.environb", "os.getenv", "os.getenvb", "os.putenv", "os.unsetenv"),
        "environment",
    ),
    **dict.fromkeys(
        ("os.path.expanduser", "pathlib.Path.home", "Path.home", "os.path.expandvars"),
        "outside_files",
    ),
    **dict.fromkeys(
        ("yaml.load", "yaml.unsafe_load", "yaml.load_all", "yaml.unsafe_load_all",
         "yaml.full_load", "yaml.UnsafeLoader", "numpy.load", "torch.load", "pandas.read_pickle"),
        "deserialisation",
    ),
    **dict.fromkeys(
        ("asyncio.open_connection", "asyncio.start_server", "urllib.urlopen"), "network"
    ),
    # importlib loads code by name or path; importlib.resources/metadata only read data
    **dict.fromkeys(
        (
            "importlib.import_module",
            "importlib.__import__",
            "importlib.util",
            "importlib.machinery",
        ),
        "dynamic_code",
    ),
    "builtins.eval": "dynamic_code",
    "builtins.exec": "dynamic_code",
    "builtins.compile": "dynamic_code",
    "builtins.__import__": "dynamic_code",
}  # fmt: skip
# Builtins that are the behaviour when called.
_BUILTINS: dict[str, Kind] = {
    "eval": "dynamic_code",
    "exec": "dynamic_code",
    "compile": "dynamic_code",
    "__import__": "dynamic_code",
    "execfile": "dynamic_code",
    "breakpoint": "dynamic_code",
}
_SAFE_YAML_LOADERS = {"SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader"}
# String literals that are behaviour wherever they appear in code.
_OUTSIDE_PATH = re.compile(
    r"^(?:/(?:etc|root|home|proc|sys|var|opt|mnt|run|boot|srv|Users)(?:/|$)"
    r"|~[\w.-]*(?:/|$)|[A-Za-z]:[\\/](?:Users|Windows)|\\\\[\w.-]+\\)"  # \\server\share
)
_ENV_PATH = re.compile(r"/proc/(?:self|\d+|\$\w+)/environ")
_INSTALL_WORDS = re.compile(
    r"\b(?:pip3?|uv\s+pip|npm|yarn|pnpm|conda|mamba|poetry|gem|cargo)\s+(?:install|add)\b"
)

_INSTALL_WORD_NEEDLE = re.compile(r"\b(?:install|add)\b")
# Every Python behaviour needs one of these words, or a string that starts like a path
# outside the repository: most added code has neither, and collecting a line's words
# into a set is far cheaper than a parse (or than one regular expression of them all).
_NEEDLES = frozenset(
    {
        *(m.split(".")[0] for m in _MODULES),
        *(a.rsplit(".", 1)[-1] for a in _ATTRS),
        *_BUILTINS,
        "environ", "install", "urlopen", "npm", "yarn", "pnpm", "poetry", "conda", "mamba",
        "uv", "gem", "cargo", "shell", "verify", "chmod", "fchmod", "lchmod", "mkdir",
        "makedirs", "umask", "weights_only", "allow_pickle",
    }
)  # fmt: skip
_HEADS = frozenset(name.split(".", 1)[0] for name in (*_ATTRS, *_MODULES))
_WORD = re.compile(r"[A-Za-z_]\w*")
_PATH_START = re.compile(r"[\"'](?:/|~|[A-Za-z]:\\\\|\\\\)")


def _needed(text: str) -> bool:
    """Whether ``text`` may hold a behaviour (no false negatives)."""
    return (
        not _NEEDLES.isdisjoint(_WORD.findall(text))
        or "pytest_" in text
        or _PATH_START.search(text) is not None
        or _OPAQUE_RUN.search(text) is not None
    )


class _Visitor(ast.NodeVisitor):
    """The behaviours in one parsed block: (line in the block, kind, what)."""

    def __init__(self) -> None:
        self.found: list[tuple[int, Kind, str]] = []
        self.aliases: dict[str, str] = {}  # local name -> qualified name

    def _add(self, node: ast.AST, kind: Kind, what: str) -> None:
        self.found.append((getattr(node, "lineno", 1), kind, what))

    def _module(self, node: ast.AST, name: str) -> None:
        for prefix in _prefixes(name):
            if prefix in _MODULES:
                self._add(node, _MODULES[prefix], f"import {name}")
                return

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(node, alias.name)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                self.aliases.setdefault(top, top)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for alias in node.names:
            qualified = f"{module}.{alias.name}" if module else alias.name
            if node.level == 0 and module:
                # `from os import environ`, `from http import client`
                self._name(node, qualified)
            self.aliases[alias.asname or alias.name] = qualified

    def _qualified(self, node: ast.expr) -> str | None:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.aliases.get(node.id, node.id)
        return ".".join([head, *reversed(parts)])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = self._qualified(node)
        if name is not None:
            self._name(node, name)
            return  # the chain's inner attributes are prefixes of this one
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        qualified = self.aliases.get(node.id)
        if qualified is not None and qualified != node.id:
            self._name(node, qualified)

    def _name(self, node: ast.AST, name: str) -> None:
        named = _named(name)
        if named is not None:
            self._add(node, *named)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in _BUILTINS and func.id not in self.aliases:
            self._add(node, _BUILTINS[func.id], f"{func.id}()")
        name = self._qualified(func) if isinstance(func, ast.Attribute | ast.Name) else None
        if name in ("yaml.load", "yaml.load_all") and _safe_loader(node):
            for arg in node.args[:1]:
                self.visit(arg)
            return
        for kind, what in _worse(node, name):
            self._add(node, kind, what)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._def(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._def(node)

    def _def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name.startswith("pytest_"):
            self._add(node, "test_harness", f"pytest hook {node.name}")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == "pytest_plugins":
                self._add(node, "test_harness", "pytest_plugins")
        self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring (or a bare string): prose, even if it says `pip install`
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            for kind, what in _literal(node.value):
                self._add(node, kind, what)


def _worse(call: ast.Call, name: str | None) -> Iterator[tuple[Kind, str]]:
    """How a call is made more dangerous than the same call plain: through a shell, with a
    command built from values, without TLS verification. Each is its own ``what``, so
    the removed line's plain call does not cancel it (`subprocess.run([...])` turned
    into `subprocess.run(f"{name} --version", shell=True)` is a new behaviour)."""
    func = call.func
    label = name or (func.attr if isinstance(func, ast.Attribute) else "a call")
    for keyword in call.keywords:
        value = keyword.value
        if keyword.arg == "shell" and not (isinstance(value, ast.Constant) and not value.value):
            yield "process", f"{label}(shell=True)"
        if keyword.arg == "verify" and isinstance(value, ast.Constant) and value.value is False:
            yield "network", f"{label}(verify=False)"
        if keyword.arg == "weights_only" and _falsy(value):
            yield "deserialisation", f"{label}(weights_only=False)"
        if keyword.arg == "allow_pickle" and _truthy(value):
            yield "deserialisation", f"{label}(allow_pickle=True)"
    named = _named(name) if name else None
    if named is not None and named[0] == "process" and call.args and _built(call.args[0]):
        yield "process", f"{label}(a command built from values)"
    if named is not None and named[0] == "deserialisation" and name in _LOADS:
        yield "deserialisation", f"{name}() (loads data)"  # `pickle.dumps` did not
    mode = _mode_of(call, name or "")
    if mode is not None:
        yield "file_mode", f"{label}({mode})"


# Calls that load (run) serialised data: worse than the same module's `dumps`.
_LOADS = frozenset(
    f"{module}.{call}"
    for module in ("pickle", "cPickle", "_pickle", "dill", "cloudpickle", "marshal", "jsonpickle")
    for call in ("load", "loads", "Unpickler", "decode")
)
_CHMODS = frozenset(("chmod", "fchmod", "lchmod"))
_MKDIRS = frozenset(("mkdir", "makedirs"))
# World-writable, setuid, setgid: the bits no file a fix writes should need.
_WIDE = stat.S_IWOTH | stat.S_ISUID | stat.S_ISGID


def _mode_of(call: ast.Call, name: str) -> str | None:
    """``mode 0o777`` when ``call`` (``name``, as far as it is known) gives a file a
    world-writable, setuid or setgid mode (``os.chmod(p, 0o777)``, ``p.chmod(0o4755)``,
    ``os.chmod(p, st.st_mode | stat.S_IWOTH)``, ``os.makedirs(d, 0o777)``,
    ``Path(d).mkdir(0o777)``) or clears the umask's world-write bit (``os.umask(0)``;
    also the idiom that reads the umask by setting it and putting it back: a person
    reviews that)."""
    func = call.func
    verb = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    given = {k.arg: k.value for k in call.keywords if k.arg}
    arg: ast.expr | None = given.get("mode")
    if verb == "umask":
        bits = _bits(call.args[0]) if call.args else _bits(given.get("mask"))
        return oct(bits) if bits is not None and not bits & stat.S_IWOTH else None
    if arg is None and call.args:
        if verb in _CHMODS:
            arg = call.args[-1]
        elif verb == "mkdir" and not name.startswith("os.") and name != "mkdir":
            arg = call.args[0]  # Path(d).mkdir(mode, parents, exist_ok)
        elif verb in _MKDIRS and len(call.args) >= 2:
            arg = call.args[1]  # os.makedirs(path, mode), os.mkdir(path, mode)
    if verb not in (*_CHMODS, *_MKDIRS) or arg is None:
        return None
    bits = _bits(arg, at_least=True)
    return f"mode {oct(bits)}" if bits is not None and bits & _WIDE else None


def _bits(node: ast.expr | None, *, at_least: bool = False) -> int | None:
    """The value of a mode written as a number, ``stat.S_I…`` names (``S_IWOTH`` too, as
    ``from stat import *`` leaves it), and ``|`` of them. ``at_least``: the bits an ``|``
    surely sets when one side is not known (``st.st_mode | stat.S_IWOTH``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    attr = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    if isinstance(node, ast.Attribute | ast.Name) and attr.startswith("S_I"):
        value = getattr(stat, attr, None)
        return value if isinstance(value, int) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left = _bits(node.left, at_least=at_least)
        right = _bits(node.right, at_least=at_least)
        if left is not None and right is not None:
            return left | right
        return (left if left is not None else right) if at_least else None
    return None


def _falsy(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and not node.value


def _truthy(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and bool(node.value)


def _built(node: ast.expr) -> bool:
    """A string made from values at run time: an f-string with fields, `%`, `.format`,
    or `+` with something that is not a literal."""
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
        sides = (node.left, node.right)
        text = any(isinstance(s, ast.Constant) and isinstance(s.value, str) for s in sides)
        return text and not all(isinstance(s, ast.Constant) for s in sides)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
    )


def _safe_loader(call: ast.Call) -> bool:
    loader = next((k.value for k in call.keywords if k.arg == "Loader"), None)
    if loader is None and len(call.args) > 1:
        loader = call.args[1]
    if isinstance(loader, ast.Attribute):
        return loader.attr in _SAFE_YAML_LOADERS
    if isinstance(loader, ast.Name):
        return loader.id in _SAFE_YAML_LOADERS
    return False


# A run that could be key material: a quoted string of 20+ such characters.
_OPAQUE_RUN = re.compile(r"""["'][A-Za-z0-9+/=_.-]{20,}""")
_KEY_CHARS = re.compile(r"[A-Za-z0-9+/=_.-]{20,300}")
_HASH_OR_ID = re.compile(
    r"[0-9a-fA-F]+|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


# Words and numbers joined by separators: a header or constant name (`X-Api-Version-2`).
_NAMEISH = re.compile(r"(?:[A-Za-z][a-z]*|[A-Z]+|\d+)(?:[-_.](?:[A-Za-z][a-z]*|[A-Z]+|\d+))+")


def _opaque(text: str) -> bool:
    """Random-looking, credential-sized, of key characters: letters of both cases and
    digits, high entropy; not a hex digest, a UUID or a name made of words."""
    if not _KEY_CHARS.fullmatch(text) or _HASH_OR_ID.fullmatch(text) or _NAMEISH.fullmatch(text):
        return False
    mixed = all(re.search(c, text) for c in ("[a-z]", "[A-Z]", "[0-9]"))
    return mixed and credentials.random_looking(text) and credentials.entropy(text) >= 4.0


def _literal(value: str) -> Iterator[tuple[Kind, str]]:
    text = value.strip()
    if _opaque(text):
        yield "opaque_literal", f"a {len(text)}-character random-looking string"
    if _ENV_PATH.search(text):
        yield "environment", text[:60]
    elif _OUTSIDE_PATH.match(text):
        yield "outside_files", text[:60]
    install = _INSTALL_WORDS.search(text)
    if install:
        yield "package_install", install.group(0)


def _prefixes(name: str) -> Iterator[str]:
    """``a.b.c``, ``a.b``, ``a``: the longest first."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        yield ".".join(parts[:n])


def _named(name: str) -> tuple[Kind, str] | None:
    """The behaviour a dotted name (``os.environ.get``) stands for, by its longest known
    prefix (an attribute before a module), with that prefix; None for none."""
    if name.split(".", 1)[0] not in _HEADS:
        return None  # most names: no known name starts like them
    for prefix in _prefixes(name):
        kind = _ATTRS.get(prefix) or _MODULES.get(prefix)
        if kind is not None:
            return kind, prefix
    return None


def _python(block: list[tuple[int, str]]) -> list[tuple[int, Kind, str]]:
    """The behaviours in a run of consecutive added Python lines, with their line numbers."""
    text = "\n".join(t for _, t in block)
    if not _needed(text):
        return []
    tree = _parse(text)
    if tree is not None:
        visitor = _Visitor()
        visitor.visit(tree)
        # the `pip` in `["pip", "install", x]` is a list of words, not a string
        found = visitor.found
        if _INSTALL_WORD_NEEDLE.search(text):
            found += _install_argv(tree)
    else:
        found = _by_tokens(text)
    return [(block[min(i, len(block)) - 1][0], kind, what) for i, kind, what in found]


def _parse(text: str) -> ast.Module | None:
    """The block as a module, if it is one once dedented (or with a body added)."""
    dedented = textwrap.dedent(text)
    candidates = [dedented]
    if dedented.rstrip().endswith(":"):
        candidates.append(dedented + "\n    pass")  # a `def`/`try:`/`with` without its body
    for candidate in candidates:
        try:
            return ast.parse(candidate)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


def _install_argv(tree: ast.Module) -> list[tuple[int, Kind, str]]:
    found: list[tuple[int, Kind, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple):
            words = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            text = " ".join(w for w in words if isinstance(w, str))
            if _INSTALL_WORDS.search(text):
                found.append((node.lineno, "package_install", text[:60]))
    return found


def _by_tokens(text: str) -> list[tuple[int, Kind, str]]:
    """Names and dotted names outside strings and comments, for code that does not parse.

    Tokenised line by line (a fragment's indentation or open brackets would stop a
    tokenizer that reads it whole), so no import aliases are known here: the modules and
    attributes are matched by their own names."""
    found: list[tuple[int, Kind, str]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not _needed(line):
            continue
        tokens = _tokens(line.strip())
        chain: list[str] = []
        for i, tok in enumerate(tokens):
            if tok.kind == "name":
                if chain and i and tokens[i - 1].text == ".":
                    chain.append(tok.text)
                else:
                    _chain(chain, number, found)
                    chain = [tok.text]
                nxt = tokens[i + 1].text if i + 1 < len(tokens) else ""
                before = tokens[i - 1].text if i else ""
                if tok.text in _BUILTINS and nxt == "(" and before != ".":
                    found.append((number, _BUILTINS[tok.text], f"{tok.text}()"))
            elif tok.text == ".":
                continue
            else:
                _chain(chain, number, found)
                chain = []
                if tok.kind == "string":
                    value = _string_value(tok.text)
                    found += [(number, k, w) for k, w in _literal(value)]
        _chain(chain, number, found)
    return found


def _chain(chain: list[str], number: int, found: list[tuple[int, Kind, str]]) -> None:
    if not chain:
        return
    name = ".".join(chain)
    if chain[0].startswith("pytest_"):
        found.append((number, "test_harness", f"pytest hook {chain[0]}"))
        return
    named = _named(name)
    if named is not None:
        found.append((number, *named))
        return
    if chain[-1] in {"environ", "getenv"}:
        found.append((number, "environment", name))


# A line of Python as names, dots, brackets and strings; comments dropped. Far cheaper
# than `tokenize`, and a fragment (an open bracket, half a string) does not stop it.
_TOKEN = re.compile(
    r"""(?P<string>(?:[rRbBuUfF]{0,2})(?:'(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?))"""
    r"|(?P<comment>\#.*)|(?P<name>[A-Za-z_]\w*)|(?P<op>[.()\[\]])|\S"
)


@dataclass(frozen=True)
class _Tok:
    kind: str  # "string", "name", "op"
    text: str


def _tokens(line: str) -> list[_Tok]:
    out: list[_Tok] = []
    for m in _TOKEN.finditer(line):
        kind = m.lastgroup
        if kind == "comment":
            break
        out.append(_Tok(kind or "op", m.group(0)))
    return out


def _string_value(token: str) -> str:
    try:
        value = ast.literal_eval(token)
    except (SyntaxError, ValueError):
        return token.strip("\"'")
    return value if isinstance(value, str) else ""


# -- other files ---------------------------------------------------------------------------

_SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ps1", ".bat", ".cmd")
_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx")
# `chmod 777`, `chmod -R 0666`, `chmod --recursive 4755`, `chmod u+rwx,o+w`, `chmod a=rwx`,
# `chmod u+s`
_CHMOD_WIDE = re.compile(
    r"\bchmod\s+(?:-{1,2}[\w-]*\s+)*(?:0?[0-7]?[0-7][0-7][2367]\b|0?[2-7][0-7]{3}\b"
    r"|(?:[ugoa]*[+=-][rwxXst]*,)*(?:[ugoa]*[oa][ugoa]*[+=][rwxXt]*w|[ugoa]*[+=][rwxXt]*s))"
)
_TEXT_RULES: dict[str, tuple[tuple[Kind, re.Pattern[str]], ...]] = {
    "shell": (
        ("file_mode", _CHMOD_WIDE),
        (
            "network",
            re.compile(r"\b(?:curl|wget|nc|ncat|netcat|socat|ssh|scp|rsync|ftp)\b|/dev/tcp/"),
        ),
        (
            "environment",
            re.compile(r"^\s*(?:printenv|env|export\s+-p|set)\s*(?:[|>;#]|$)|/proc/\S*environ"),
        ),
        ("process", re.compile(r"\beval\b|\bsource\s+<\(|\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b")),
        ("package_install", _INSTALL_WORDS),
    ),
    "make": (
        ("file_mode", _CHMOD_WIDE),
        ("network", re.compile(r"\b(?:curl|wget|nc|ssh|scp)\b")),
        ("package_install", _INSTALL_WORDS),
        ("environment", re.compile(r"^\t\s*(?:@\s*)?(?:printenv|env)\s*$")),
    ),
}

# Files whose change is the behaviour, by name (any directory).
_HARNESS_FILES = {
    "conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "noxfile.py", "sitecustomize.py",
    "usercustomize.py",
}  # fmt: skip
# JavaScript test runners' configuration, by name before its extension.
_HARNESS_STEMS = ("jest.config", "vitest.config", "vitest.workspace", ".mocharc")
# A package.json's scripts: those npm runs at install, and those that are the tests.
_INSTALL_SCRIPT = re.compile(r'"(?:pre|post)?(?:install|prepare)"\s*:')
_TEST_SCRIPT = re.compile(r'"(?:pretest|test|posttest)"\s*:')
_INDEX_FILES = {
    "pip.conf", "pip.ini", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pypirc", ".condarc",
    "uv.toml", "poetry.toml", ".pnpmrc", "bunfig.toml", ".bowerrc",
}  # fmt: skip
_CONDA_FILES = {"environment.yml", "environment.yaml", "conda.yml", "conda.yaml", "meta.yaml"}
_ACTION_FILES = {"action.yml", "action.yaml"}
# Lines of config files that are the behaviour.
_HARNESS_LINE = re.compile(
    r"^\s*(?:\[(?:tool[.:])?pytest(?:\.ini_options)?\]|\[tool\.(?:tox|nox|coverage)\b|\[(?:tox|testenv)\b"
    r"|addopts\b|testpaths\b|python_(?:files|classes|functions)\b|norecursedirs\b"
    r"|pytest_plugins\b|(?:-p|--pyargs)\b|usefixtures\b|filterwarnings\b|xfail_strict\b)"
)
_INDEX_LINE = re.compile(
    r"(?:--(?:extra-)?index-url|--find-links|--trusted-host|--no-index|(?:^|\s)-[ifcr]\s"
    r"|\b(?:git|hg|svn|bzr)\+[a-z]+://|@\s*(?:https?|file)://|\bfile://"
    r"|\[\[tool\.(?:uv\.index|poetry\.source|pdm\.source)\]\]|\[\[?tool\.uv\.sources\]?\]"
    r"|\bindex-url\b|\bextra-index-url\b|\bregistry\s*=|\bfind-links\b)"
)
_INDEX_FILE_TYPES = re.compile(
    r"(?:^|/)(?:[^/]*requirements[^/]*\.(?:txt|in)|constraints[^/]*\.txt|pyproject\.toml"
    r"|setup\.cfg|Pipfile|package\.json|requirements/[^/]*\.(?:txt|in))$"
)


def _language(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1]
    if path.endswith((".py", ".pyi", ".pyw")):
        return "python"
    if path.endswith(_SHELL_SUFFIXES):
        return "shell"
    if path.endswith(_JS_SUFFIXES):
        return "js"
    if name in ("Makefile", "makefile", "GNUmakefile") or path.endswith(".mk"):
        return "make"
    return None


def _file_level(f: ChangedFile) -> Iterator[Behaviour]:
    """Behaviours a file has by its name and kind: one per file, not per line."""
    for path in f.paths:
        name = path.rsplit("/", 1)[-1]
        if name in _HARNESS_FILES or name.startswith(_HARNESS_STEMS):
            yield Behaviour("test_harness", f.path, None, name)
        elif name.endswith(".pth"):
            yield Behaviour("test_harness", f.path, None, f"{name} (runs at interpreter start)")
        if name in _INDEX_FILES:
            yield Behaviour("package_index", f.path, None, name)
        if name in _CONDA_FILES and (f.added or f.status == "removed"):
            yield Behaviour("conda_dependencies", f.path, None, name)
        if name in _ACTION_FILES:
            yield Behaviour("action", f.path, None, name)
        if name == ".gitattributes":
            yield Behaviour("gitattributes", f.path, None, name)
        if name == "binding.gyp":  # npm runs `node-gyp rebuild` when it installs the package
            yield Behaviour("install_script", f.path, None, name)


def _line_level(f: ChangedFile, lines: Iterable[tuple[int, str]]) -> list[tuple[int, Kind, str]]:
    language = _language(f.path)
    found: list[tuple[int, Kind, str]] = []
    if language == "python":
        for block in line_runs(lines):
            found += _python(block)
        return found
    if language == "js":  # read from its syntax tree
        return [(n, kind, what) for n, kind, what in js_behaviours(f.path, lines)]
    rules = _TEXT_RULES.get(language or "", ())
    config = f.path.rsplit("/", 1)[-1] in ("setup.cfg", "pyproject.toml", "tox.ini")
    package = f.path.rsplit("/", 1)[-1] == "package.json"
    index = bool(_INDEX_FILE_TYPES.search(f.path))
    for number, text in lines:
        stripped = text.strip()
        if not stripped or (language in ("shell", "make") and stripped.startswith("#")):
            continue
        for kind, pattern in rules:
            m = pattern.search(text)
            if m:
                found.append((number, kind, m.group(0).strip()[:60]))
        if config and _HARNESS_LINE.search(text):
            found.append((number, "test_harness", stripped[:60]))
        if package and _INSTALL_SCRIPT.search(text):
            # the whole line: a command lengthened past what is shown is a new one
            found.append((number, "install_script", stripped))
        if package and _TEST_SCRIPT.search(text):
            found.append((number, "test_harness", stripped[:60]))
        if index and not stripped.startswith("#"):
            m = _INDEX_LINE.search(text)
            if m:
                found.append((number, "package_index", m.group(0).strip()[:60]))
    return found


def behaviours(f: ChangedFile) -> list[Behaviour]:
    """What the lines ``f`` adds make the code do that its removed lines did not."""
    out = list(dict.fromkeys(_file_level(f)))
    if f.binary or f.status == "removed":
        return out
    added = _line_level(f, f.added_lines)
    if not added:
        return out
    # Moved code keeps its behaviour: what the removed lines already did is not new.
    removed = Counter(
        (kind, what)
        for _, kind, what in _line_level(f, ((i, t) for i, t in enumerate(f.removed_lines, 1)))
    )
    seen: set[tuple[int, Kind]] = set()
    for number, kind, what in added:
        if (number, kind) in seen:
            continue  # one of a kind per line
        if removed[(kind, what)]:
            removed[(kind, what)] -= 1
            continue  # moved, or the same call as before (a worse one is another `what`)
        seen.add((number, kind))
        # `what` is a piece of the change: shown in code spans, so no backticks in it
        out.append(Behaviour(kind, f.path, number, what.replace("`", "'").strip()[:60]))
    return out
