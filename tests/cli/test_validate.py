"""`patchwarden validate` lists every problem of a .github/patchwarden.yml with its line,
as the App would refuse it; `patchwarden schema` is the file's JSON Schema, the one
published in docs/ for editors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from app.cli.validate import config_errors, config_schema
from app.errors import RepoConfigError
from app.fixers.fixer_policy import section
from app.fixers.registry import KNOWN, SECTIONS
from app.sessions.policyfile import DEFAULT_POLICY, default_policy_text, policy_for_tree
from app.sessions.repo_commands import detect
from tests.cli.test_cli import run

ROOT = Path(__file__).resolve().parents[2]

BAD = """\
autonomy: yolo
caps:
  files: -3
  lines: many
thresholds:
  automerge: 10
lint:
  unsafe_fixes: maybe
revert:
  reruns: 0
tset: pytest
test: "pytest 'unclosed"
setup:
  - pip install -e .
  - 42
weights:
  unknown_weight: 3
"""

EXPECTED = [
    (1, "`autonomy`: Input should be 'propose', 'review' or 'automerge'"),
    (3, "`caps.files`: Input should be greater than or equal to 1"),
    (4, "`caps.lines`: unknown key"),
    (8, "`lint.unsafe_fixes`: Input should be a valid boolean"),
    (10, "`revert.reruns`: Input should be greater than or equal to 1"),
    (11, "unknown key `tset`; did you mean `test`?"),
    (12, "`test` does not parse: No closing quotation"),
    (15, "`setup` must be a command line"),
    (17, "`weights.unknown_weight`: unknown key"),
]


def test_every_problem_is_listed_with_its_line() -> None:
    errors = config_errors(BAD, default_text=default_policy_text())
    assert [e.line for e in errors] == [line for line, _ in EXPECTED]
    for error, (_, problem) in zip(errors, EXPECTED, strict=True):
        assert error.problem.startswith(problem), error.problem


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("caps: [1, 2\n", 2, "the file is not valid YAML"),
        ("caps:\n  files: 3\ncaps:\n  files: 4\n", 3, "`caps` is set twice"),
        ("- autonomy\n", 1, "must be a mapping"),
        ("unprotect: ['nope/**']\n", 1, "is not one of the default protected patterns"),
    ],
)
def test_a_file_that_cannot_be_read_says_where(text: str, line: int, problem: str) -> None:
    [error] = config_errors(text, default_text=default_policy_text())
    assert error.line == line
    assert problem in error.problem


@pytest.mark.parametrize(
    "text",
    [
        "",
        "autonomy: automerge\n",
        "caps:\n  files: 5\nprotected_paths: [migrations/**]\ntest: python -m pytest -q\n",
        "setup: [pip install -e ., pip install pytest]\nlint:\n  unsafe_fixes: true\n",
        "revert:\n  reruns: 5\n  checks: {ci: pytest}\nfixers:\n  llm_on_alerts: true\n",
    ],
)
def test_valid_files_have_no_problem_and_pass_the_schema(text: str) -> None:
    assert config_errors(text, default_text=default_policy_text()) == []
    jsonschema.validate(yaml.safe_load(text) or {}, config_schema())


def test_the_schema_is_valid_and_accepts_the_default_policy() -> None:
    schema = config_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(yaml.safe_load(DEFAULT_POLICY.read_text()), schema)


@pytest.mark.parametrize(
    "text",
    ["autonomy: yolo\n", "tset: pytest\n", "caps:\n  lines: many\n", "lint:\n  semgrep: 3\n"],
)
def test_the_schema_refuses_what_validate_refuses(text: str) -> None:
    assert config_errors(text, default_text=default_policy_text()) != []
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(yaml.safe_load(text), config_schema())


def _runtime_errors(text: str, tmp_path: Path) -> list[str]:
    """What a session reading the file from a base tree refuses: its commands, its
    policy, its fixers' settings (each reader the App uses)."""
    (tmp_path / ".github").mkdir(exist_ok=True)
    (tmp_path / ".github" / "patchwarden.yml").write_text(text)
    refused = []
    for read in (
        lambda: detect(tmp_path, base_python=sys.executable),
        lambda: policy_for_tree(tmp_path, fixers=KNOWN),
        lambda: [section(tmp_path, key, model) for key, model in SECTIONS.items()],
    ):
        try:
            read()
        except RepoConfigError as exc:
            refused.append(str(exc))
    return refused


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("autonomy: review\ntest: python -m pytest -q\n", True),
        ("setup: [pip install -e ., pip install pytest]\n", True),
        ("merge:\n  methd: squash\n", False),  # a nested typo
        ("caps:\n  files: five\n", False),  # a wrong type
        ('test: ["python", "-m", "pytest", "-q"]\n', False),  # a list where one line goes
        ("setup: 42\n", False),
        ("autonomy: yolo\ntset: pytest\ncaps:\n  files: -1\n", False),  # three at once
        # Issue 34: a bare `off` is YAML 1.1's false, and means `off`
        ("alerts:\n  dependabot:\n    mode: off\n", True),
        (
            "alerts:\n  code_scanning:\n    mode: within-autonomy\n    min_severity: high\n"
            "    model: true\n",
            True,
        ),
        ("alerts:\n  dependabot:\n    min_severity: severe\n", False),
        ("alerts:\n  dependabot:\n    mode: on\n", False),  # on is true: no such mode
    ],
)
def test_validate_the_schema_and_the_session_agree(text: str, valid: bool, tmp_path: Path) -> None:
    """Issue 35: `test: [...]` was valid for validate, refused by the schema, and failed
    `run` as if the fixer had given up. The three read one file the same way."""
    problems = config_errors(text, default_text=default_policy_text())
    assert (problems == []) is valid, problems
    schema_ok = jsonschema.Draft202012Validator(config_schema()).is_valid(yaml.safe_load(text))
    assert schema_ok is valid
    assert (_runtime_errors(text, tmp_path) == []) is valid
    if "tset" in text:
        assert len(problems) == 3, problems  # every problem at once


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("merge:\n  methd: squash\n", "`merge.methd`: unknown key; did you mean `method`?"),
        (
            "categories:\n  docs:\n    wieght: 3\n",
            "`categories.docs.wieght`: unknown key; did you mean `weight`?",
        ),
        (
            "weights:\n  finding:\n    meduim: 3\n",
            "`weights.finding.meduim`: unknown key; did you mean `medium`?",
        ),
        (
            "alerts:\n  code_scanning:\n    min_severty: high\n",
            "`alerts.code_scanning.min_severty`: unknown key; did you mean `min_severity`?",
        ),
        (
            "fixers:\n  llm:\n    stratgy: repair\n",
            "`fixers.llm.stratgy`: unknown key; did you mean `strategy`?",
        ),
    ],
)
def test_a_typo_at_any_depth_gets_the_closest_key(text: str, problem: str) -> None:
    [error] = config_errors(text, default_text=default_policy_text())
    assert error.problem == problem


def test_the_published_schema_is_the_generated_one() -> None:
    published = json.loads((ROOT / "docs/patchwarden.schema.json").read_text())
    assert published == config_schema(), (
        "regenerate: patchwarden schema > docs/patchwarden.schema.json"
    )


def _undescribed(node: dict[str, Any], defs: dict[str, Any], path: str = "") -> list[str]:
    """The key paths under ``node`` whose property has no ``description`` (through
    ``$ref``, a mapping's values as ``*``, list items and ``anyOf`` branches)."""
    if "$ref" in node:
        node = {**defs[node["$ref"].removeprefix("#/$defs/")], **node}
        del node["$ref"]
    found = []
    for name, sub in node.get("properties", {}).items():
        key = f"{path}.{name}" if path else name
        found += [] if sub.get("description") else [key]
        found += _undescribed(sub, defs, key)
    values = node.get("additionalProperties")
    subs = [(values, f"{path}.*")] if isinstance(values, dict) else []
    subs += [(node["items"], path)] if isinstance(node.get("items"), dict) else []
    subs += [(branch, path) for branch in node.get("anyOf", [])]
    for sub, at in subs:
        found += _undescribed(sub, defs, at)
    return found


def test_every_key_of_the_schema_has_a_description() -> None:
    """Issue 35: an editor shows each key's description; a new setting needs one (a
    docstring under its field, or ``description`` in app/cli/validate.py)."""
    schema = config_schema()
    assert _undescribed(schema, schema["$defs"]) == []


def test_a_key_without_a_description_is_named_at_any_depth() -> None:
    defs = {
        "Cat": {"properties": {"weight": {}, "paths": {"description": "globs"}}},
        "Deep": {"properties": {"x": {"$ref": "#/$defs/Cat", "description": "d"}}},
    }
    schema = {
        "properties": {
            "categories": {"additionalProperties": {"$ref": "#/$defs/Cat"}},
            "deep": {"$ref": "#/$defs/Deep", "description": "d"},
            "setup": {"anyOf": [{"type": "string"}, {"items": {"$ref": "#/$defs/Deep"}}]},
        }
    }
    assert _undescribed(schema, defs) == [
        "categories",
        "categories.*.weight",
        "deep.x.weight",
        "setup",
        "setup.x.weight",
    ]


@pytest.mark.slow  # `patchwarden` processes
def test_the_commands_exit_codes_and_output(tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github/patchwarden.yml").write_text(BAD)
    done = run("validate", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == (
        ".github/patchwarden.yml:1: `autonomy`: Input should be 'propose', 'review' or 'automerge'"
    )
    assert "9 problems in .github/patchwarden.yml" in done.stderr
    # From a folder of the repository, the repository's file (its path as found).
    (tmp_path / ".git").mkdir()
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    below = run("validate", cwd=tmp_path / "src" / "pkg")
    assert below.returncode == 1
    assert below.stdout.splitlines()[0].startswith(f"{tmp_path}/.github/patchwarden.yml:1: ")
    as_json = json.loads(run("validate", "--json", cwd=tmp_path).stdout)
    assert [p["line"] for p in as_json] == [line for line, _ in EXPECTED]
    (tmp_path / "ok.yml").write_text("autonomy: review\n")
    done = run("validate", "ok.yml", cwd=tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, "ok.yml: valid")
    missing = run("validate", "nope.yml", cwd=tmp_path)
    assert missing.returncode == 2
    assert "nope.yml does not exist" in missing.stderr
    assert json.loads(run("schema", cwd=tmp_path).stdout) == config_schema()
