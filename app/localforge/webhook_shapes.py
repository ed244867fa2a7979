"""A payload built from the REST shapes, projected onto the webhook schema of its event
(@octokit/webhooks-schemas, read once from the contract)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema

from app.localforge.contract import WebhookContract
from app.localforge.shapes import Json


def _outside_enum(item: Any, schema: Mapping[str, Any]) -> bool:
    """A string a list's items' own enum (no reference followed) does not name."""
    enum = schema.get("enum")
    return isinstance(item, str) and isinstance(enum, list) and item not in enum


def webhook_definitions() -> Mapping[str, Any]:
    return WebhookContract.load().definitions


class WebhookShapes:
    def __init__(self) -> None:
        self._validators: dict[int, jsonschema.protocols.Validator] = {}

    def hook(self, event: str, payload: Json) -> Json:
        """``payload`` (built from the REST shapes) as GitHub delivers ``event``.

        Keys the webhook schema does not allow are dropped, recursively; oneOf/anyOf
        take the first branch the projected value fits. Webhooks write enum values in
        lower case where REST uses upper case (``review.state``: ``APPROVED`` →
        ``approved``), so a value that fits its enum only in lower case is lowered.
        Nothing is added: what a webhook needs beyond REST, the renderers produce.
        The schema lags the events an App may subscribe to (``installation.events`` has
        no ``dependabot_alert`` in @octokit/webhooks-schemas 7.6.1, while ``app.events``
        has it): a string in a list that its items' enum lacks is dropped, as a key is.
        """
        key = "push$event" if event == "push" else f"{event}${payload.get('action')}"
        schema = webhook_definitions().get(key)
        if schema is None:  # not in the contract: sent as is, for the contract check to name
            return dict(payload)
        projected: Json = self._project(payload, schema)
        return projected

    def _project(self, value: Any, schema: Mapping[str, Any]) -> Any:
        while "$ref" in schema:
            schema = webhook_definitions()[schema["$ref"].removeprefix("#/definitions/")]
        for part in schema.get("allOf", ()):
            value = self._project(value, part)
        branches = schema.get("oneOf") or schema.get("anyOf")
        if branches:
            if value is None:
                return None
            for branch in branches:
                candidate = self._project(value, branch)
                if self._fits(candidate, branch):
                    return candidate
            return value  # fits no branch: left for the contract check to report
        if isinstance(value, dict):
            props = schema.get("properties", {})
            closed = schema.get("additionalProperties") is False
            return {
                k: self._project(v, props[k]) if k in props else v
                for k, v in value.items()
                if k in props or not closed
            }
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            return [
                self._project(item, schema["items"])
                for item in value
                if not _outside_enum(item, schema["items"])
            ]
        enum = schema.get("enum")
        if isinstance(value, str) and enum and value not in enum and value.lower() in enum:
            return value.lower()
        return value

    def _fits(self, value: Any, schema: Mapping[str, Any]) -> bool:
        validator = self._validators.get(id(schema))
        if validator is None:
            root = {"definitions": webhook_definitions(), "allOf": [schema]}
            validator = self._validators[id(schema)] = jsonschema.Draft7Validator(root)
        return bool(validator.is_valid(value))
