"""Logging setup: a filter that masks secret values if they ever reach a log line, the
ids of the job or delivery being handled on every line (:func:`bound`), and
``PATCHWARDEN_LOG_FORMAT=json``: one JSON object per line for log pipelines."""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

# What the current task is handling: job_id, kind, repo, installation_id, delivery_id.
# Tasks a job starts inherit it (asyncio copies the context into each new task).
_BOUND: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "pw_log", default=MappingProxyType({})
)


@contextlib.contextmanager
def bound(**fields: Any) -> Iterator[None]:
    """Every log line inside carries these ids (``None`` values are left out)."""
    token = _BOUND.set({**_BOUND.get(), **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _BOUND.reset(token)


class AddContext(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.pw = _BOUND.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the bound ids, and the
    traceback (already masked) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        out.update(getattr(record, "pw", {}))
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["exception"] = record.exc_text
        return json.dumps(out, default=str)


class RedactSecrets(logging.Filter):
    """Replace every known secret value in a record's message with ``***``."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s and len(s) >= 4]

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        masked = self.mask(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            # Format the traceback now so the masked text is what the handler prints.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.mask(record.exc_text)
        if record.stack_info:
            record.stack_info = self.mask(record.stack_info)
        return True

    def mask(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


def configure(level: str = "INFO", *, secrets: Iterable[str] = (), fmt: str = "text") -> None:
    handler = logging.StreamHandler()
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactSecrets(secrets))  # masks first: the JSON holds the masked text
    handler.addFilter(AddContext())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
