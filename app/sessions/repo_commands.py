"""Which commands set a repository up and run its tests: configured or detected.

Read from the **base** tree only (the trusted side): ``.github/patchwarden.yml`` may
say ``setup:`` (one command line or a list of them) and ``test:`` (one command line);
otherwise they are detected from the files present. Commands are argument lists
(``shlex`` splitting, no shell); a repository that needs a shell says
``sh -c '...'`` itself, and it still runs in the sandbox.
"""

from __future__ import annotations

import configparser
import fnmatch
import hashlib
import json
import re
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from app.errors import RepoConfigError
from app.policy.policy_model import REPO_SOURCE, Lines, parse_config
from app.sessions.files import read_confined
from app.sessions.node_tests import Runner, direct_command, runner_of

CONFIG_PATH = REPO_SOURCE
ENV_MOUNT = "/env"  # where a repository's cached environment appears in the sandbox
NODE_MODULES = "node_modules"  # an npm project's packages: kept in its environment
Source = Literal["config", "detected", "none"]
# Requirement files installed by the detected setup: the runtime ones and the ones for
# tests or development, at the top or in requirements/ (globs, matched case-blind).
REQUIREMENT_GLOBS = (
    "requirements.txt",
    "requirements*test*.txt",
    "requirements*dev*.txt",
    "*dev*requirements*.txt",
    "*test*requirements*.txt",
    "requirements/base.txt",
    "requirements/test*.txt",
    "requirements/dev*.txt",
)
# Files whose contents decide what the setup phase installs (its cache key), besides
# the requirement files found.
SETUP_INPUTS = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
)
# The same as git pathspecs: which commits need a setup of their own (bisect probes).
SETUP_PATHSPECS = (*SETUP_INPUTS, "*requirements*.txt", "requirements/")
_TEST_EXTRAS = ("test", "tests", "testing", "dev")
VENV_COMMAND = "venv"  # `python -m venv /env`: how the environment is created


@dataclass(frozen=True)
class RepoCommands:
    setup: list[list[str]] = field(default_factory=list)
    setup_source: Source = "none"
    test: list[str] = field(default_factory=list)
    test_source: Source = "none"
    kind: Literal["python", "node", "go", "make", "none"] = "none"
    inputs: dict[str, str] = field(default_factory=dict)  # setup input file -> sha256
    # Run after ``setup`` in the setup phase, with no network: the install scripts of
    # the packages an npm setup fetched with ``--ignore-scripts`` (``npm rebuild``).
    offline: list[list[str]] = field(default_factory=list)

    @property
    def is_pytest(self) -> bool:
        return _is_pytest(self.test)

    @property
    def node_runner(self) -> Runner | None:
        """The npm project's test runner, when the test command calls it directly."""
        return runner_of(self.test) if self.kind == "node" else None

    def env_key(self, *, base_python: str, backend: str) -> str:
        """The setup cache key: the commands, the interpreter, and the input files."""
        material: dict[str, Any] = {"setup": self.setup, "python": base_python, "backend": backend}
        material |= {"in": self.inputs, **({"offline": self.offline} if self.offline else {})}
        if self.kind == "node":  # its packages kept in the environment (node_modules)
            material["packages"] = NODE_MODULES
        return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:24]


def _is_pytest(argv: Sequence[str]) -> bool:
    if not argv:
        return False
    if Path(argv[0]).name in ("pytest", "py.test"):
        return True
    return len(argv) >= 3 and argv[1] == "-m" and argv[2] == "pytest"


def _text(tree: Path, name: str) -> str | None:
    data = read_confined(tree, name)
    return None if data is None else data.decode("utf-8", "replace")


def split_command(value: Any, key: str) -> list[str]:
    """``setup``/``test`` as argv, or a RepoConfigError saying what is wrong."""
    if isinstance(value, list) and key == "test":
        raise RepoConfigError(
            f"{CONFIG_PATH}: `test` is one command line such as 'python -m pytest -q', not "
            f"a list ({value!r}); only `setup` takes a list, of command lines"
        )
    if not isinstance(value, str) or not value.strip():
        raise RepoConfigError(
            f"{CONFIG_PATH}: `{key}` must be a command line such as "
            f"'python -m pytest -q', not {value!r}"
        )
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise RepoConfigError(f"{CONFIG_PATH}: `{key}` does not parse: {exc}") from None


def read_config(tree: Path) -> dict[str, Any]:
    return read_config_lines(tree)[0]


def read_config_lines(tree: Path) -> tuple[dict[str, Any], Lines]:
    """The base tree's ``.github/patchwarden.yml`` and the line of each key ({} if none)."""
    text = _text(tree, CONFIG_PATH)
    return ({}, {}) if text is None else parse_config(text, CONFIG_PATH)


def detect(
    tree: Path, *, base_python: str, overrides: Mapping[str, Any] | None = None
) -> RepoCommands:
    """The setup and test commands for the base tree at ``tree``; ``overrides``
    (``setup``, ``test``) win over its config for one session."""
    config = {**read_config(tree), **(overrides or {})}
    requirements = requirement_files(tree)
    found = {name: read_confined(tree, name) for name in (*SETUP_INPUTS, *requirements)}
    inputs = {
        name: hashlib.sha256(data).hexdigest() for name, data in found.items() if data is not None
    }
    present = set(inputs)
    kind = _kind(tree, present, requirements)

    if "test" in config:
        test, test_source = split_command(config["test"], "test"), "config"
    else:
        test, test_source = _detect_test(tree, kind), "detected"
    if not test:
        test_source = "none"

    if "setup" in config:
        raw = config["setup"]
        lines = raw if isinstance(raw, list) else [raw]
        setup = [split_command(line, "setup") for line in lines if line is not None]
        setup_source: Source = "config" if setup else "none"
        if setup and kind == "python" and not _creates_env(setup[0]):
            # `pip install ...` in a repository's own setup means the session's
            # environment: create it first, so /env/bin/pip is the one on PATH.
            setup.insert(0, [base_python, "-m", VENV_COMMAND, ENV_MOUNT])
    else:
        setup = _detect_setup(
            tree, kind, present, requirements, base_python, pytest=_is_pytest(test)
        )
        setup_source = "detected" if setup else "none"
    offline = NPM_OFFLINE if kind == "node" and setup_source == "detected" else []
    return RepoCommands(
        setup=setup,
        setup_source=setup_source,
        test=test,
        test_source=test_source,  # type: ignore[arg-type]
        kind=kind,
        inputs=inputs,
        offline=offline,
    )


def requirement_files(tree: Path) -> list[str]:
    """The requirement files :data:`REQUIREMENT_GLOBS` find, runtime first, sorted."""
    found: set[str] = set()
    for pattern in REQUIREMENT_GLOBS:
        folder, _, name = pattern.rpartition("/")
        top = tree / folder if folder else tree
        if top.is_symlink() or not top.is_dir():
            continue
        for entry in top.iterdir():
            plain = entry.is_file() and not entry.is_symlink()
            if plain and fnmatch.fnmatch(entry.name.lower(), name):
                found.add(f"{folder}/{entry.name}" if folder else entry.name)
    return sorted(found, key=lambda p: (p != "requirements.txt", p))


def _creates_env(argv: Sequence[str]) -> bool:
    """Whether a setup command makes /env itself (venv, virtualenv, uv venv)."""
    return ENV_MOUNT in argv and any(
        Path(a).name in ("venv", "virtualenv") or a == "venv" for a in argv
    )


def _kind(
    tree: Path, present: set[str], requirements: Sequence[str]
) -> Literal["python", "node", "go", "make", "none"]:
    python = {"pyproject.toml", "setup.py", "setup.cfg"}
    if present & python or requirements or _has_python_tests(tree):
        return "python"
    if "package.json" in present:
        return "node"
    if read_confined(tree, "go.mod") is not None:
        return "go"
    if _make_test_target(tree):
        return "make"
    return "none"


def _has_python_tests(tree: Path) -> bool:
    for pattern in ("test_*.py", "*_test.py", "tests/test_*.py", "tests/**/test_*.py"):
        if any(p.is_file() and not p.is_symlink() for p in tree.glob(pattern)):
            return True
    return False


def _make_test_target(tree: Path) -> bool:
    text = _text(tree, "Makefile")
    return text is not None and re.search(r"(?m)^test\s*:", text) is not None


def _detect_test(tree: Path, kind: str) -> list[str]:
    if kind == "python":
        return ["python", "-m", "pytest", "-q"]
    if kind == "node":
        package = _text(tree, "package.json") or "{}"
        try:
            scripts = json.loads(package).get("scripts", {})
        except (json.JSONDecodeError, AttributeError):
            scripts = {}
        script = scripts.get("test") if isinstance(scripts, dict) else None
        if not isinstance(script, str):
            return []
        # Its runner called directly, so that its tests are counted; not when npm would run
        # a `pretest` (a build, say) or `posttest` around it.
        direct = direct_command(script)
        hooks = {"pretest", "posttest"} & set(scripts)
        return direct[1] if direct is not None and not hooks else ["npm", "test", "--silent"]
    if kind == "go":
        return ["go", "test", "./..."]
    if kind == "make":
        return ["make", "test"]
    return []


def _detect_setup(
    tree: Path,
    kind: str,
    present: set[str],
    requirements: Sequence[str],
    base_python: str,
    *,
    pytest: bool,
) -> list[list[str]]:
    if kind == "node":
        lock = present & {"package-lock.json", "npm-shrinkwrap.json"}
        if not lock:
            _other_node_lock(tree)
        # The lock as it is (`npm ci`), or without one the ranges, writing no lock into
        # the tree; no package's install script runs while the network is open
        # (:data:`NPM_OFFLINE` runs them afterwards, offline).
        how = ["ci"] if lock else ["install", "--no-package-lock"]
        return [["npm", *how, "--ignore-scripts", "--no-audit", "--no-fund"]]
    if kind != "python":
        return []
    packages: list[str] = []
    project = _pyproject(tree)
    # A pyproject.toml that only configures tools (ruff, black) builds nothing.
    buildable = "project" in project or "build-system" in project
    if "setup.py" in present or buildable:
        extra = _test_extra(tree, project)
        packages += ["-e", f".[{extra}]" if extra else "."]
    packages += group_requirements(project)
    # A file with hashes puts pip in hash-checking mode for everything installed with
    # it (`-e .` and pytest have none): such files are installed first, by themselves.
    hashed = [n for n in requirements if b"--hash" in (read_confined(tree, n) or b"")]
    for name in requirements:
        packages += ["-r", name] if name not in hashed else []
    if not packages and not hashed:
        return []  # plain test files: Patchwarden's own Python (with pytest) runs them
    if pytest and "pytest" not in {_requirement_name(p) for p in packages}:
        packages.append("pytest")
    pip = [f"{ENV_MOUNT}/bin/python", "-m", "pip", "install", "--quiet"]
    locked = [[*pip, "-r", name] for name in hashed]
    rest = [pip + packages] if packages else []
    return [[base_python, "-m", VENV_COMMAND, ENV_MOUNT], *locked, *rest]


# The packages' own install scripts (preinstall, install, postinstall), run in the setup
# phase after everything is fetched, with no network.
NPM_OFFLINE = [["npm", "rebuild", "--no-audit", "--no-fund"]]
OTHER_NODE_LOCKS = {"pnpm-lock.yaml": "pnpm", "yarn.lock": "yarn", "bun.lockb": "bun"}


def _other_node_lock(tree: Path) -> None:
    """A RepoConfigError when the project locks its packages with another manager than
    npm: installing it with npm would ignore that lock."""
    for name, manager in OTHER_NODE_LOCKS.items():
        if read_confined(tree, name, limit=0) is not None:
            raise RepoConfigError(
                f"{name}: JavaScript projects that {manager} installs are not supported yet "
                f"(npm with package-lock.json is); say `setup:` and `test:` in {CONFIG_PATH} "
                "to run them with commands of your own"
            )


def _pyproject(tree: Path) -> dict[str, Any]:
    text = _text(tree, "pyproject.toml")
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _test_extra(tree: Path, project: dict[str, Any]) -> str | None:
    """The first of test/tests/testing/dev that the project declares as an extra, in
    pyproject.toml or setup.cfg (``[options.extras_require]``)."""
    extras = project.get("project", {}).get("optional-dependencies", {})
    names: set[str] = set(extras) if isinstance(extras, dict) else set()
    cfg = _text(tree, "setup.cfg")
    if cfg is not None:
        parser = configparser.RawConfigParser()
        try:
            parser.read_string(cfg)
            if parser.has_section("options.extras_require"):
                names |= set(parser.options("options.extras_require"))
        except configparser.Error:
            pass
    return next((e for e in _TEST_EXTRAS if e in names), None)


def group_requirements(project: dict[str, Any]) -> list[str]:
    """The requirements of the first PEP 735 dependency group named test, tests,
    testing or dev, with ``include-group`` entries expanded (cycles and unknown names
    are skipped): pip has no ``--group`` before 25.1, so they are passed as plain
    requirement strings, which every pip understands."""
    groups = project.get("dependency-groups")
    if not isinstance(groups, dict):
        return []
    normal = {_normal(str(k)): v for k, v in groups.items()}
    name = next((_normal(e) for e in _TEST_EXTRAS if _normal(e) in normal), None)
    if name is None:
        return []
    out: list[str] = []

    def expand(group: str, seen: tuple[str, ...]) -> None:
        items = normal.get(group)
        if not isinstance(items, list) or group in seen:
            return
        for item in items:
            if isinstance(item, str):
                if item not in out:
                    out.append(item)
            elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
                expand(_normal(item["include-group"]), (*seen, group))

    expand(name, ())
    return out


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(spec: str) -> str:
    return _normal(re.split(r"[\s<>=!~;\[(@]", spec, maxsplit=1)[0])
