"""A dependency raised past a vulnerability (app/fixers/pins.py, manifests.py): every
place a project pins it, in the file's own style, and nothing else changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from app.fixers.manifests import raise_package
from app.fixers.pins import bump_size, floor_of, raised, raised_poetry

FIXED = Version("2.31.0")


@pytest.mark.parametrize(
    ("written", "after"),
    [
        ("requests==2.25.1", "requests==2.31.0"),  # == stays ==
        ("requests>=2.20", "requests>=2.31.0"),  # a floor is raised
        ("requests >= 2.20, <3", "requests >= 2.31.0, <3"),  # spacing and the cap kept
        ("requests~=2.20", "requests~=2.31"),  # ~= as wide as it was
        ("requests~=2.20.0", "requests~=2.31.0"),
        (
            "Requests[socks]==2.25.1 ; python_version >= '3.8'",
            "Requests[socks]==2.31.0 ; python_version >= '3.8'",
        ),
        ("requests", "requests>=2.31.0"),  # a bare name gets a floor
        ("requests[socks]", "requests[socks]>=2.31.0"),
        ("requests==2.*", "requests>=2.31.0,==2.*"),  # the same series, from the fix on
        ("requests!=2.28.0,>=2.20", "requests!=2.28.0,>=2.31.0"),
    ],
)
def test_a_requirement_is_raised_in_its_own_style(written: str, after: str) -> None:
    assert raised(written, "requests", FIXED) == (after, "")


@pytest.mark.parametrize(
    ("written", "why"),
    [
        ("requests<2.30", "its upper bound `<2.30` excludes 2.31.0, the first fixed version"),
        ("requests>=2.32", "already safe"),
        ("requests==2.31.*", "already safe"),
        ("urllib3==1.26", ""),  # another package: not ours to say
        ("not a requirement ((", ""),
    ],
)
def test_what_cannot_or_need_not_be_raised_says_why(written: str, why: str) -> None:
    assert raised(written, "requests", FIXED) == (None, why)


def test_a_compatible_release_keeps_its_width_only_where_that_is_safe() -> None:
    """``~=2.31`` allows 2.31.0: with 2.31.1 the first fixed, it needs a floor too."""
    assert raised("requests~=2.20", "requests", Version("2.31.1")) == (
        "requests~=2.31,>=2.31.1",
        "",
    )


@pytest.mark.parametrize(
    ("constraint", "after"),
    [
        ("^2.20", "^2.31.0"),
        ("~2.20", "~2.31.0"),
        ("2.25.1", "2.31.0"),
        ("*", ">=2.31.0"),
        (">=2,<3", ">=2.31.0,<3"),
    ],
)
def test_poetry_constraints_keep_their_form(constraint: str, after: str) -> None:
    assert raised_poetry(constraint, FIXED) == (after, "")


def test_the_size_of_a_bump_is_read_from_the_versions() -> None:
    assert [
        bump_size("2.25.1", "2.31.0"),
        bump_size("2.31.0", "2.31.1"),
        bump_size("1.26", "2.0.7"),
        bump_size(None, "1.0"),  # unknown: as far as it can be
        bump_size("0.9", "0.10.0"),  # below 1.0 a minor breaks (semver)
        bump_size("0.9.1", "0.9.2"),
        bump_size("1!2.0", "2.1"),  # another epoch
    ] == ["minor", "patch", "major", "major", "major", "patch", "major"]


def test_the_floor_a_constraint_as_written_allows() -> None:
    assert [
        floor_of("requests>=2.0,<3"),
        floor_of('django~=4.2.1 ; python_version >= "3.8"'),  # not the marker's 3.8
        floor_of("pyyaml<6"),  # a cap is no floor
        floor_of("requests = '^2.31'"),
        floor_of("requests = '2.3.1'"),  # a bare Poetry version
        floor_of("pw>=1!2.0"),
    ] == ["2.0", "4.2.1", None, "2.31", "2.3.1", "1!2.0"]


@pytest.mark.parametrize(
    ("files", "locked"),
    [
        ({"Pipfile.lock": '{"default": {"Requests": {"version": "==2.25.1"}}}'}, ["Pipfile.lock"]),
        ({"Pipfile.lock": '{"develop": {"requests-mock": {}}}'}, []),
        ({"uv.lock": '[[package]]\nname = "Requests"\nversion = "2.25.1"\n'}, ["uv.lock"]),
        ({"poetry.lock": '[[package]]\nname = "requests-toolbelt"\n'}, []),
    ],
    ids=["pipfile-lock", "pipfile-lock-other", "uv-lock-case", "poetry-lock-other"],
)
def test_lock_files_are_read_by_canonical_name(
    tmp_path: Path, files: dict[str, str], locked: list[str]
) -> None:
    _write(tmp_path, files)
    assert raise_package(tmp_path, "requests", "2.31.0").locks == locked


@pytest.mark.parametrize(
    "pyproject",
    ['project = "x"\n', "[tool.poetry]\ngroup = [1]\n", '[project]\ndependencies = "requests"\n'],
    ids=["project-a-string", "poetry-group-a-list", "dependencies-a-string"],
)
def test_a_pyproject_of_unexpected_shape_is_read_without_a_crash(
    tmp_path: Path, pyproject: str
) -> None:
    _write(tmp_path, {"pyproject.toml": pyproject})
    found = raise_package(tmp_path, "requests", "2.31.0")
    assert (found.changes, found.blocked) == ([], [])


def test_a_poetry_constraint_it_cannot_read_is_reported() -> None:
    assert raised_poetry("^1.0 || ^2.0", FIXED) == (
        None,
        "Patchwarden cannot read the constraint `^1.0 || ^2.0`: raise it by hand",
    )


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


PYPROJECT = """\
[project]
name = "demo"
dependencies = [
    "requests>=2.20",  # HTTP
    "click>=8",
]

[project.optional-dependencies]
socks = ['requests[socks]==2.25.1']

[dependency-groups]
test = ["pytest", "requests"]

[tool.poetry.dependencies]
python = "^3.10"
requests = { version = "^2.20", extras = ["socks"] }

[tool.poetry.group.dev.dependencies]
Requests = "~2.20"
"""

SETUP_CFG = """\
[metadata]
name = demo

[options]
install_requires =
    requests>=2.20  # pinned for the API
    click
tests_require = requests==2.25.1

[options.extras_require]
socks = requests[socks]>=2.0
"""

SETUP_PY = """\
from setuptools import setup

setup(
    name="demo",
    install_requires=["requests>=2.20", 'click'],
    extras_require={"socks": ["requests[socks]<2.30"]},
)
"""


def test_every_place_a_project_pins_the_package_is_raised(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "requirements.txt": "-r requirements/base.txt\n-c constraints.txt\nclick==8.1.7\n",
            "requirements/base.txt": (
                "--index-url https://pypi.org/simple\nrequests==2.25.1 \\\n    # a comment\n"
            ),
            "constraints.txt": "Requests>=2,<3  # keep below 3\n",
            "requirements-lock.txt": "requests==2.25.1 \\\n    --hash=sha256:" + "a" * 64 + "\n",
            "node_modules/x/requirements.txt": "requests==1.0\n",  # not the project's
            "pyproject.toml": PYPROJECT,
            "setup.cfg": SETUP_CFG,
            "setup.py": SETUP_PY,
            "poetry.lock": '[[package]]\nname = "requests"\nversion = "2.25.1"\n',
        },
    )
    found = raise_package(tmp_path, "requests", "2.31.0")
    read = {
        rel: (tmp_path / rel).read_text()
        for rel in (
            "requirements/base.txt",
            "constraints.txt",
            "pyproject.toml",
            "setup.cfg",
            "setup.py",
        )
    }
    assert read["requirements/base.txt"].splitlines()[1] == "requests==2.31.0 \\"
    assert read["constraints.txt"] == "Requests>=2.31.0,<3  # keep below 3\n"
    assert '"requests>=2.31.0",  # HTTP' in read["pyproject.toml"]
    assert "socks = ['requests[socks]==2.31.0']" in read["pyproject.toml"]
    assert 'test = ["pytest>=2.31.0"' not in read["pyproject.toml"]
    assert 'test = ["pytest", "requests>=2.31.0"]' in read["pyproject.toml"]
    assert 'requests = { version = "^2.31.0", extras = ["socks"] }' in read["pyproject.toml"]
    assert 'Requests = "~2.31.0"' in read["pyproject.toml"]
    assert "    requests>=2.31.0  # pinned for the API\n    click\n" in read["setup.cfg"]
    assert "tests_require = requests==2.31.0" in read["setup.cfg"]
    assert "socks = requests[socks]>=2.31.0" in read["setup.cfg"]
    assert "name = demo" in read["setup.cfg"]
    assert "install_requires=[\"requests>=2.31.0\", 'click']," in read["setup.py"]
    assert (tmp_path / "requirements.txt").read_text().endswith("click==8.1.7\n")  # untouched
    assert (tmp_path / "node_modules/x/requirements.txt").read_text() == "requests==1.0\n"
    # A file with hashes and a lock file: their own tool must rewrite them.
    assert sorted(found.locks) == ["poetry.lock", "requirements-lock.txt"]
    assert "--hash" in (tmp_path / "requirements-lock.txt").read_text()
    assert "2.25.1" in (tmp_path / "requirements-lock.txt").read_text()
    # The upper bound a bot cannot lift is reported, and left as it was.
    assert [(b.path, b.text) for b in found.blocked] == [("setup.py", "requests[socks]<2.30")]
    assert "requests[socks]<2.30" in read["setup.py"]
    assert len(found.changes) == 11
    assert all(c.new != c.old for c in found.changes)


def test_an_include_outside_the_tree_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("requests==1.0\n")
    tree = tmp_path / "repo"
    _write(tree, {"requirements.txt": "-r ../outside.txt\n"})
    found = raise_package(tree, "requests", "2.31.0")
    assert found.changes == []
    assert (tmp_path / "outside.txt").read_text() == "requests==1.0\n"


@pytest.mark.parametrize(
    ("written", "after"),
    [
        ("requests<3", "requests<3,>=2.31.0"),  # a cap alone sets no floor: one is added
        ("requests!=2.0", "requests!=2.0,>=2.31.0"),
        ("requests<=2.40 ; python_version > '3'", "requests<=2.40,>=2.31.0 ; python_version > '3'"),
        ("requests==1.*", "requests>=2.31.0,==2.*"),  # a new series, from the fix on
    ],
)
def test_a_constraint_that_still_allows_a_vulnerable_version_gets_a_floor(
    written: str, after: str
) -> None:
    assert raised(written, "requests", FIXED) == (after, "")


def test_a_requirement_installed_from_a_url_is_reported_not_edited() -> None:
    new, why = raised("requests @ https://example.com/requests-2.0.zip", "requests", FIXED)
    assert new is None
    assert why.startswith("it is installed from a URL")


def test_only_pyprojects_dependency_lists_change_and_line_endings_stay(tmp_path: Path) -> None:
    """`"requests"` is also a module name to isort and mypy: those tables stay."""
    pyproject = (
        '[project]\r\nname = "demo"\r\ndependencies = [\r\n    "requests",  # [http]\r\n]\r\n'
        "\r\n[project.optional-dependencies]\r\nsocks = ['requests', \"requests\"]\r\n"
        '\r\n[tool.isort]\r\nknown_third_party = ["requests"]\r\n'
        '\r\n[[tool.mypy.overrides]]\r\nmodule = "requests"\r\n'
    )
    _write(tmp_path, {})
    (tmp_path / "pyproject.toml").write_bytes(pyproject.encode())
    (tmp_path / "setup.py").write_text(
        'setup(extras_require={"requests": ["requests>=2.0"]}, install_requires=[])\n'
    )
    found = raise_package(tmp_path, "requests", "2.31.0")
    text = (tmp_path / "pyproject.toml").read_bytes().decode()
    assert '    "requests>=2.31.0",  # [http]\r\n' in text
    assert "socks = ['requests>=2.31.0', \"requests>=2.31.0\"]\r\n" in text
    assert 'known_third_party = ["requests"]\r\n' in text
    assert 'module = "requests"\r\n' in text
    assert text.count("\r\n") == pyproject.count("\r\n")
    assert "\n" not in text.replace("\r\n", "")
    assert (
        (tmp_path / "setup.py")
        .read_text()
        .startswith(
            'setup(extras_require={"requests": ["requests>=2.31.0"]}'  # the extra's name kept
        )
    )
    assert len(found.changes) == 2  # one per requirement as written, wherever it is


def test_a_pyproject_that_does_not_parse_is_reported_and_left_as_it_was(tmp_path: Path) -> None:
    _write(tmp_path, {"pyproject.toml": '[project]\ndependencies = ["requests==2.0"\n'})
    found = raise_package(tmp_path, "requests", "2.31.0")
    assert found.changes == []
    assert [(b.path, b.why) for b in found.blocked] == [
        ("pyproject.toml", "pyproject.toml does not parse")
    ]
    assert (tmp_path / "pyproject.toml").read_text().endswith('["requests==2.0"\n')
