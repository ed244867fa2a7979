"""Which setup and test commands a repository gets: from its config or detected."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from app.sessions.node_tests import direct_command, reporting_command
from app.sessions.repo_commands import ENV_MOUNT, RepoConfigError, detect
from app.sessions.workspace import version_from_describe

PY = "/opt/python/bin/python3"


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


PYPROJECT_TEST_EXTRA = '[project]\nname = "x"\n[project.optional-dependencies]\ntest = ["pytest"]\n'


@pytest.mark.parametrize(
    ("files", "setup", "test"),
    [
        pytest.param({"README.md": "x"}, [], [], id="nothing-to-run"),
        pytest.param(
            {"test_a.py": "def test(): pass\n"},
            [],  # plain test files run on Patchwarden's own Python
            ["python", "-m", "pytest", "-q"],
            id="plain-test-files",
        ),
        pytest.param(
            {"pyproject.toml": PYPROJECT_TEST_EXTRA, "requirements-dev.txt": "ruff\n"},
            [
                [PY, "-m", "venv", ENV_MOUNT],
                [
                    *[f"{ENV_MOUNT}/bin/python", "-m", "pip", "install", "--quiet"],
                    *["-e", ".[test]", "-r", "requirements-dev.txt", "pytest"],
                ],
            ],
            ["python", "-m", "pytest", "-q"],
            id="pyproject-with-test-extra",
        ),
        pytest.param(
            {"pyproject.toml": "[tool.ruff]\nline-length = 99\n", "test_a.py": ""},
            [],  # tool configuration only: nothing to build or install
            ["python", "-m", "pytest", "-q"],
            id="pyproject-that-only-configures-tools",
        ),
        pytest.param(
            {"package.json": '{"scripts": {"test": "jest"}}', "package-lock.json": "{}"},
            [["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"]],
            ["jest"],  # the runner called directly, so that its tests are counted
            id="node-with-lockfile",
        ),
        pytest.param(
            {"package.json": '{"scripts": {"test": "tsc && jest"}}'},
            # no lock to follow: the ranges, and no lock written into the tree
            [
                [
                    "npm",
                    "install",
                    "--no-package-lock",
                    "--ignore-scripts",
                    "--no-audit",
                    "--no-fund",
                ]
            ],
            ["npm", "test", "--silent"],
            id="node-without-lockfile",
        ),
        pytest.param({"go.mod": "module x\n"}, [], ["go", "test", "./..."], id="go"),
        pytest.param({"Makefile": "test:\n\ttrue\n"}, [], ["make", "test"], id="make"),
        pytest.param(
            {
                "test_a.py": "",
                ".github/patchwarden.yml": "setup:\n  - make deps\n  - sh -c 'echo hi'\n"
                "test: python -m pytest -x tests\n",
            },
            # A Python repository's own setup runs in the session's environment,
            # created first, so `pip` means /env/bin/pip.
            [[PY, "-m", "venv", ENV_MOUNT], ["make", "deps"], ["sh", "-c", "echo hi"]],
            ["python", "-m", "pytest", "-x", "tests"],
            id="config-wins",
        ),
        pytest.param(
            {
                "setup.py": "",
                ".github/patchwarden.yml": "setup: python -m venv /env --clear\n"
                "test: python -m pytest -q\n",
            },
            [["python", "-m", "venv", "/env", "--clear"]],
            ["python", "-m", "pytest", "-q"],
            id="config-that-makes-its-own-env",
        ),
        pytest.param(
            {
                "pyproject.toml": '[project]\nname = "x"\n[dependency-groups]\n'
                'lint = ["ruff"]\n'
                'dev = [{include-group = "test"}, "mypy"]\n'
                'test = ["pytest>=8", "freezegun; python_version >= \'3.8\'"]\n',
            },
            [
                [PY, "-m", "venv", ENV_MOUNT],
                [
                    *[f"{ENV_MOUNT}/bin/python", "-m", "pip", "install", "--quiet"],
                    *["-e", ".", "pytest>=8", "freezegun; python_version >= '3.8'"],
                ],
            ],
            ["python", "-m", "pytest", "-q"],
            id="pep735-dependency-group",
        ),
        pytest.param(
            {
                "pyproject.toml": '[project]\nname = "x"\n[dependency-groups]\n'
                'dev = [{include-group = "typing"}, "pytest"]\n'
                'typing = ["mypy", {include-group = "dev"}]\n',
            },
            [
                [PY, "-m", "venv", ENV_MOUNT],
                [
                    *[f"{ENV_MOUNT}/bin/python", "-m", "pip", "install", "--quiet"],
                    *["-e", ".", "mypy", "pytest"],
                ],
            ],
            ["python", "-m", "pytest", "-q"],
            id="dependency-group-cycle-is-cut",
        ),
        pytest.param(
            {
                "setup.py": "from setuptools import setup\nsetup()\n",
                "setup.cfg": "[metadata]\nname = x\n[options.extras_require]\ntesting = pytest\n",
                "requirements/test-py3.txt": "freezegun\n",
                "requirements-docs.txt": "sphinx\n",
                "Requirements_Dev.txt": "hypothesis\n",
            },
            [
                [PY, "-m", "venv", ENV_MOUNT],
                [
                    *[f"{ENV_MOUNT}/bin/python", "-m", "pip", "install", "--quiet"],
                    *["-e", ".[testing]", "-r", "Requirements_Dev.txt"],
                    *["-r", "requirements/test-py3.txt", "pytest"],
                ],
            ],
            ["python", "-m", "pytest", "-q"],
            id="setup-cfg-extra-and-requirement-globs",
        ),
        pytest.param(
            {
                "pyproject.toml": '[project]\nname = "x"\n',
                "requirements.txt": "idna==3.7 \\\n    --hash=sha256:" + "a" * 64 + "\n",
                "requirements-dev.txt": "ruff\n",
            },
            [
                [PY, "-m", "venv", ENV_MOUNT],
                # pip checks hashes of all it installs with a hashed file: `-e .` has none
                [
                    f"{ENV_MOUNT}/bin/python",
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "-r",
                    "requirements.txt",
                ],
                [
                    *[f"{ENV_MOUNT}/bin/python", "-m", "pip", "install", "--quiet"],
                    *["-e", ".", "-r", "requirements-dev.txt", "pytest"],
                ],
            ],
            ["python", "-m", "pytest", "-q"],
            id="a-file-with-hashes-installs-by-itself",
        ),
    ],
)
def test_commands_are_configured_or_detected(
    tmp_path: Path, files: dict[str, str], setup: list[list[str]], test: list[str]
) -> None:
    commands = detect(tree(tmp_path, files), base_python=PY)
    assert commands.setup == setup
    assert commands.test == test
    expected = "config" if ".github/patchwarden.yml" in files else "detected"
    assert commands.test_source == (expected if test else "none")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("setup: [", "is not valid YAML"),
        ("- a\n- b\n", "must be a mapping"),
        ("test: 5\n", "`test` must be a command line"),
        ("test: ''\n", "`test` must be a command line"),
        ('test: "pytest \'unclosed"\n', "`test` does not parse"),
        ("setup: [3]\n", "`setup` must be a command line"),
    ],
)
def test_a_bad_config_is_refused_with_what_is_wrong(
    tmp_path: Path, config: str, message: str
) -> None:
    root = tree(tmp_path, {".github/patchwarden.yml": config})
    with pytest.raises(RepoConfigError, match=message) as caught:
        detect(root, base_python=PY)
    assert ".github/patchwarden.yml" in str(caught.value)


def test_an_npm_setup_runs_the_packages_install_scripts_offline_after(tmp_path: Path) -> None:
    """What npm fetched with the network open runs its install scripts only afterwards,
    offline (`offline`), and that step is part of the cache key; a repository's own
    `setup:` gets none."""
    files = {"package.json": '{"scripts": {"test": "jest"}}', "package-lock.json": "{}"}
    found = detect(tree(tmp_path / "a", files), base_python=PY)
    assert found.offline == [["npm", "rebuild", "--no-audit", "--no-fund"]]
    without = replace(found, offline=[])
    assert found.env_key(base_python=PY, backend="b") != without.env_key(
        base_python=PY, backend="b"
    )
    own = {**files, ".github/patchwarden.yml": "setup: npm ci\ntest: npm test\n"}
    assert detect(tree(tmp_path / "b", own), base_python=PY).offline == []


@pytest.mark.parametrize("lock", ["pnpm-lock.yaml", "yarn.lock"])
def test_a_project_another_package_manager_locks_is_not_installed_with_npm(
    tmp_path: Path, lock: str
) -> None:
    files = {"package.json": '{"scripts": {"test": "jest"}}', lock: ""}
    with pytest.raises(
        RepoConfigError, match=f"{lock}: JavaScript projects that .* not supported yet"
    ):
        detect(tree(tmp_path / "a", files), base_python=PY)
    own = {**files, ".github/patchwarden.yml": "setup: corepack pnpm install\ntest: pnpm test\n"}
    assert detect(tree(tmp_path / "b", own), base_python=PY).setup == [
        ["corepack", "pnpm", "install"]
    ]


def test_a_config_symlinked_out_of_the_tree_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yml"
    outside.write_text("test: cat /etc/shadow\n")
    root = tmp_path / "repo"
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "patchwarden.yml").symlink_to(outside)
    assert detect(root, base_python=PY).test == []


def test_the_setup_cache_key_follows_the_inputs(tmp_path: Path) -> None:
    root = tree(tmp_path, {"requirements.txt": "attrs==23.1\n"})
    before = detect(root, base_python=PY).env_key(base_python=PY, backend="bwrap")
    (root / "requirements.txt").write_text("attrs==23.2\n")
    after = detect(root, base_python=PY).env_key(base_python=PY, backend="bwrap")
    assert before != after
    assert after == detect(root, base_python=PY).env_key(base_python=PY, backend="bwrap")
    assert after != detect(root, base_python=PY).env_key(base_python=PY, backend="docker")


@pytest.mark.parametrize(
    ("described", "commits", "version"),
    [
        ("v2.3.0-0-gabcdef1\n", 40, "2.3.0"),  # on the tag itself
        ("v2.3.0-5-gabcdef1\n", 45, "2.3.1.dev5+g1234567"),  # five after it
        ("release-1.9-2-gabcdef1", 12, "1.10.dev2+g1234567"),
        ("nightly-0-gabcdef1", 3, "0.1.dev3+g1234567"),  # no number in the tag
        ("", 7, "0.1.dev7+g1234567"),  # no tag at all
    ],
)
def test_the_version_git_tags_give_follows_setuptools_scm(
    described: str, commits: int, version: str
) -> None:
    sha = "1234567" + "0" * 33
    assert version_from_describe(described, commits=commits, sha=sha) == version


@pytest.mark.parametrize(
    ("script", "argv"),
    [
        ("jest --coverage", ["jest", "--coverage", "--ci", "--json", "--outputFile=/r/jest.json"]),
        ("vitest", ["vitest", "run", "--reporter=default", "--reporter=junit",
                    "--outputFile.junit=/r/junit.xml"]),
        ("vitest watch src", ["vitest", "run", "src", "--reporter=default", "--reporter=junit",
                              "--outputFile.junit=/r/junit.xml"]),
        ("mocha --recursive", ["mocha", "--recursive", "--reporter", "xunit",
                               "--reporter-option", "output=/r/junit.xml"]),
        ("node --test test/", ["node", "--test-reporter=spec",
                               "--test-reporter-destination=stdout", "--test-reporter=junit",
                               "--test-reporter-destination=/r/junit.xml", "--test", "test/"]),
        ("tsc && jest", None),  # a shell must read these: npm runs them
        ("NODE_ENV=test jest", None),
        ("mocha test/*.js", None),
        ("node test.js", None),
        ("npm run unit", None),
    ],
)  # fmt: skip
def test_an_npm_test_script_runs_its_runner_directly_with_a_report_when_it_is_one_alone(
    script: str, argv: list[str] | None
) -> None:
    direct = direct_command(script)
    made = reporting_command(direct[0], direct[1], "/r") if direct else None
    assert made == argv


def test_the_npm_packages_an_environment_holds_are_read_without_following_links(
    tmp_path: Path,
) -> None:
    """Top-level, scoped and nested copies, each package by its lowest version; a link
    (to a folder of the host, say) is not read."""
    from app.sessions.environment import Environment, npm_packages

    def package(where: Path, version: str) -> None:
        where.mkdir(parents=True)
        (where / "package.json").write_text(json.dumps({"name": where.name, "version": version}))

    modules = tmp_path / "env" / "node_modules"
    package(modules / "semver", "7.8.0")
    package(modules / "@types" / "node", "20.1.0")
    package(modules / "a", "1.0.0")
    package(modules / "a" / "node_modules" / "semver", "7.5.1")
    outside = tmp_path / "outside"
    package(outside / "evil", "9.9.9")
    (modules / "evil").symlink_to(outside / "evil")
    found = npm_packages(Environment(tmp_path / "env", "key", cached=True))
    assert found == {"@types/node": "20.1.0", "a": "1.0.0", "semver": "7.5.1"}
