"""GitHub's published contract, as LocalForge checks it on every request and delivery.

The data comes from GitHub's own descriptions (``scripts/extract_github_contract.py``
keeps the operations and events the forge implements): the REST operations from
``@octokit/openapi`` and the webhook payloads from ``@octokit/webhooks-schemas``.
Requests that break the contract get the answer GitHub gives (404 for an unknown
path, 422 for a missing or mistyped field); responses and deliveries that break it
are bugs in the forge, recorded as violations so the test that caused them fails.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

CONTRACT_DIR = Path(__file__).parent / "contract"
# Path parameters that may hold slashes (a file path, a ref, a branch name).
GREEDY = {"path", "ref", "branch"}


@dataclass(frozen=True)
class Operation:
    id: str
    method: str
    path: str
    pattern: re.Pattern[str]
    documentation_url: str
    parameters: tuple[dict[str, Any], ...]
    body: dict[str, Any] | None
    responses: Mapping[str, Any]

    def match(self, path: str) -> dict[str, str] | None:
        found = self.pattern.fullmatch(path)
        if found is None:
            return None
        values = found.groupdict()
        for param in self.parameters:
            integer = param["in"] == "path" and param["schema"].get("type") == "integer"
            if integer and not values[param["name"]].isdigit():
                return None
        return values


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)\}", template)
    regex = ""
    for i, part in enumerate(parts):
        if i % 2 == 0:
            regex += re.escape(part)
        else:
            regex += f"(?P<{part}>{'.+' if part in GREEDY else '[^/]+'})"
    return re.compile(regex)


def _location(error: jsonschema.ValidationError) -> str:
    return "/".join(
        f"items/{p}" if isinstance(p, int) else f"properties/{p}" for p in error.absolute_path
    )


def describe(error: jsonschema.ValidationError) -> str:
    """One line in GitHub's words for a schema error."""
    if error.validator == "required" and isinstance(error.instance, dict):
        required: list[str] = error.validator_value  # type: ignore[assignment]
        missing = [name for name in required if name not in error.instance]
        if missing:
            return f'"{missing[0]}" wasn\'t supplied.'
    where = _location(error) or "the body"
    value = json.dumps(error.instance)[:80]
    if error.validator == "type":
        kinds: str | list[str] = error.validator_value  # type: ignore[assignment]
        wanted = " or ".join(kinds) if isinstance(kinds, list) else kinds
        return f"For '{where}', {value} is not {'an' if wanted[0] in 'aeiou' else 'a'} {wanted}."
    if error.validator == "enum":
        return f"For '{where}', {value} is not a member of {json.dumps(error.validator_value)}."
    if error.validator == "additionalProperties":
        return f"For '{where}', {error.message}."
    return f"For '{where}', {error.message}."


def _problems(validator: jsonschema.protocols.Validator, instance: Any) -> list[str]:
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [describe(e) for e in errors]


class RestContract:
    """The REST operations LocalForge implements, with their GitHub schemas."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.source: Mapping[str, Any] = data["source"]
        self._defs: Mapping[str, Any] = data["$defs"]
        self.operations = [
            Operation(
                id=op["operationId"],
                method=op["method"],
                path=op["path"],
                pattern=_pattern(op["path"]),
                documentation_url=op["documentation_url"],
                parameters=tuple(op["parameters"]),
                body=op["requestBody"],
                responses=op["responses"],
            )
            for op in data["operations"]
        ]
        self._validators: dict[tuple[str, str], jsonschema.protocols.Validator] = {}

    @classmethod
    @functools.cache
    def load(cls) -> RestContract:
        return cls(json.loads((CONTRACT_DIR / "rest.json").read_text()))

    def by_id(self, op_id: str) -> Operation:
        for op in self.operations:
            if op.id == op_id:
                return op
        raise KeyError(op_id)

    def match(self, method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
        for op in self.operations:
            if op.method == method:
                params = op.match(path)
                if params is not None:
                    return op, params
        return None

    def _validator(self, op: Operation, key: str, schema: Any) -> jsonschema.protocols.Validator:
        found = self._validators.get((op.id, key))
        if found is None:
            root = {"$defs": self._defs, **schema} if isinstance(schema, dict) else schema
            found = jsonschema.Draft202012Validator(root)
            self._validators[(op.id, key)] = found
        return found

    def request_problems(self, op: Operation, query: Mapping[str, str], body: Any) -> list[str]:
        """What is wrong with a request to ``op``, in GitHub's words; empty when valid."""
        problems: list[str] = []
        for param in op.parameters:
            if param["in"] != "query":
                continue
            raw = query.get(param["name"])
            if raw is None:
                if param["required"]:
                    problems.append(f'"{param["name"]}" wasn\'t supplied.')
                continue
            value = _coerce(raw, param["schema"])
            validator = self._validator(op, f"query:{param['name']}", param["schema"])
            for error in validator.iter_errors(value):
                problems.append(f"For '{param['name']}', {error.message}.")
        if op.body is not None:
            if body is None:
                if op.body["required"]:
                    problems.append("Request body is missing.")
            else:
                problems += _problems(self._validator(op, "body", op.body["schema"]), body)
        return problems

    def response_problems(self, op: Operation, status: int, body: Any) -> list[str]:
        """What is wrong with the forge's answer; empty when GitHub could have sent it."""
        if str(status) not in op.responses:
            return [f"{op.id} does not document status {status}"]
        schema = op.responses[str(status)]
        if schema is None:
            return []
        return _problems(self._validator(op, str(status), schema), body)


def _coerce(raw: str, schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "integer" and re.fullmatch(r"-?\d+", raw):
        return int(raw)
    if kind == "boolean" and raw in {"true", "false"}:
        return raw == "true"
    return raw


class WebhookContract:
    """The webhook payload schemas for the deliveries LocalForge sends."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.source: Mapping[str, Any] = data["source"]
        self.events: tuple[str, ...] = tuple(data["events"])
        self.definitions: Mapping[str, Any] = data["definitions"]
        self._validators: dict[str, jsonschema.protocols.Validator] = {}

    @classmethod
    @functools.cache
    def load(cls) -> WebhookContract:
        return cls(json.loads((CONTRACT_DIR / "webhooks.json").read_text()))

    def problems(self, event: str, payload: Mapping[str, Any]) -> list[str]:
        key = f"{event}${payload.get('action', 'event')}"
        if event == "push":
            key = "push$event"
        if key not in self.events:
            return [f"{key} is not an event the contract knows; add it to EVENTS and re-extract"]
        validator = self._validators.get(key)
        if validator is None:
            schema = {"definitions": self.definitions, "allOf": [{"$ref": f"#/definitions/{key}"}]}
            validator = jsonschema.Draft7Validator(schema)
            self._validators[key] = validator
        return _problems(validator, payload)
