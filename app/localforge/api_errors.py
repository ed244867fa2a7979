"""An answer of the double's GitHub other than success, in GitHub's words: raised by its
rules (app/localforge/rules.py) and its REST handlers (app/localforge/rest.py) alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ApiError(Exception):
    """An answer other than success, in GitHub's words."""

    def __init__(
        self, status: int, message: str, *, errors: Sequence[dict[str, Any]] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = list(errors) if errors is not None else None


def custom_error(resource: str, message: str) -> ApiError:
    """GitHub's 422 for a rule its schema cannot say (``code: custom``)."""
    errors = [{"resource": resource, "code": "custom", "message": message}]
    return ApiError(422, "Validation Failed", errors=errors)
