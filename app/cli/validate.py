"""``patchwarden validate [FILE]`` and ``patchwarden schema``: a repository's
``.github/patchwarden.yml`` checked before it is pushed, every error with its line, and
its JSON Schema (generated from the models the App reads it with) for editors.

The file has three owners: the policy (app/policy/policy_model.py), the session's commands
(``setup``, ``test``: app/sessions/repo_commands.py) and the fixers (``fixers``, and each
fixer's own section its record names: ``lint``, ``revert``; app/fixers/registry.py).
Both verbs ask each of them, so what ``validate`` accepts is what the App accepts.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.errors import BadInput, RepoConfigError
from app.fixers.registry import KNOWN, SECTIONS, SETTINGS
from app.policy.policy_model import (
    COMMAND_KEYS,
    DEFAULT_SOURCE,
    REPO_SOURCE,
    Policy,
    PolicyError,
    every_error,
    merge_repo,
    parse_config,
    unknown_key,
)
from app.sessions.policyfile import default_policy_text
from app.sessions.repo_commands import split_command


def config_errors(text: str, *, source: str = REPO_SOURCE, default_text: str) -> list[PolicyError]:
    """Every problem of a repository's configuration file, in line order (none: valid)."""
    try:
        raw, lines = parse_config(text, source)
    except PolicyError as exc:  # not YAML, a key twice, not a mapping: nothing else to read
        return [exc]
    errors: list[PolicyError] = []
    policy_part: dict[str, Any] = {}
    for key, value in raw.items():
        line = lines.get((key,))
        if key in COMMAND_KEYS:
            # `setup` is one command line or a list of them; `test` is one, as the
            # session reads them (app/sessions/repo_commands.py).
            several = key == "setup" and isinstance(value, list)
            for i, command in enumerate(value if several else [value]):
                try:
                    split_command(command, key)
                except RepoConfigError as exc:
                    where = lines.get((key, i), line) if several else line
                    problem = str(exc).removeprefix(f"{REPO_SOURCE}: ")
                    errors.append(PolicyError(source, where, problem))
        elif key in SECTIONS:
            continue
        elif key in Policy.model_fields:
            policy_part[key] = value
        else:
            errors.append(PolicyError(source, line, unknown_key(key, KNOWN)))
    _, default_lines = parse_config(default_text, DEFAULT_SOURCE)
    try:
        merged = merge_repo(default_text, policy_part, lines, source)
        Policy.model_validate(merged, context={"fixers": KNOWN})
    except PolicyError as exc:
        errors.append(exc)
    except ValidationError as exc:
        errors += every_error(exc, (source, lines), (DEFAULT_SOURCE, default_lines), model=Policy)
    fixer_part = {k: v for k, v in raw.items() if k in SECTIONS and v is not None}
    try:
        SETTINGS.model_validate(fixer_part)
    except ValidationError as exc:
        errors += every_error(exc, (source, lines), model=SETTINGS)
    return sorted(errors, key=lambda e: (e.line or 0, e.problem))


def _optional(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with nothing required, at any depth: the file is merged over the
    default, so each key, however deep, may be left out."""
    out = {k: _optional(v) if isinstance(v, dict) else v for k, v in schema.items()}
    out.pop("required", None)
    for key in ("$defs", "properties"):
        if key in out:
            out[key] = {name: _optional(sub) for name, sub in out[key].items()}
    return out


def config_schema() -> dict[str, Any]:
    """The JSON Schema of ``.github/patchwarden.yml``, from the models that read it."""
    policy = Policy.model_json_schema()
    fixers = SETTINGS.model_json_schema()
    defs = {**policy.pop("$defs", {}), **fixers.pop("$defs", {})}
    properties = {**policy["properties"], **fixers["properties"]}
    for key, model in SECTIONS.items():  # (pydantic leaves out what the $ref repeats)
        properties[key].setdefault("description", inspect.getdoc(model))
    # The names an editor offers: the fixers the registry has.
    weights = defs["Weights"]["properties"]["fixer"]
    weights["propertyNames"] = {"enum": [*KNOWN.names, "human"]}
    held = defs["BehaviourRules"]["properties"]["never_automerge"]["items"]
    held["enum"] = list(KNOWN.names)
    properties["protected_paths"] = {
        "type": "array",
        "items": {"type": "string"},
        "description": "Paths Patchwarden may never change on its own; added to the default list",
    }
    properties["unprotect"] = {
        "type": "array",
        "items": {"type": "string"},
        "description": "Default protected patterns to drop, written as the default has them",
    }
    command = {"type": "string", "minLength": 1}
    properties["test"] = {**command, "description": "The test command, e.g. python -m pytest -q"}
    properties["setup"] = {
        "anyOf": [command, {"type": "array", "items": command}],
        "description": "Setup command(s) run before the tests, in the session's sandbox",
    }
    return _optional(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": ".github/patchwarden.yml",
            "description": "A repository's Patchwarden configuration, merged over the "
            "default policy (docs/policy.md). Read from the base branch.",
            "type": "object",
            "additionalProperties": False,
            "properties": dict(sorted(properties.items())),
            "$defs": defs,
        }
    )


def found_config(start: Path) -> Path | None:
    """The repository's ``.github/patchwarden.yml`` seen from ``start`` or any folder
    below the repository's top (the nearest folder up that has one, not past a ``.git``)."""
    for folder in (start, *start.parents):
        if (folder / REPO_SOURCE).is_file():
            return folder / REPO_SOURCE
        if (folder / ".git").exists():
            return None
    return None


def run_validate(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if args.file == REPO_SOURCE and not path.exists():
        path = found_config(Path.cwd()) or path  # run from a subfolder of the repository
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(
            f"{path} does not exist: give the file to check (default {REPO_SOURCE})"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path} cannot be read: {exc}") from None
    errors = config_errors(text, source=str(path), default_text=default_policy_text())
    if args.json:
        print(
            json.dumps(
                [{"file": e.source, "line": e.line, "problem": e.problem} for e in errors],
                indent=2,
            )
        )
    for error in errors if not args.json else ():
        print(error, file=sys.stdout)
    if errors:
        if not args.json:
            n = len(errors)
            print(f"{n} problem{'s' if n > 1 else ''} in {path}", file=sys.stderr)
        return 1
    if not args.json:
        print(f"{path}: valid")
    return 0


def run_schema(args: argparse.Namespace) -> int:
    print(json.dumps(config_schema(), indent=2))
    return 0
