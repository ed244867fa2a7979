"""A scripted model: a local OpenAI-compatible server that replays chat completions.

Tests and ``bench/fixers.py`` point the real ``openai`` client at it, so everything
between the agent and the wire is the real thing: request building, tool-call
parsing, error mapping, retries. Each request takes the next entry of the script:

- :func:`tool` — an assistant message calling one or more tools;
- :func:`text` — an assistant message with plain content (a model without tool
  calling answers with JSON in its text);
- :func:`fail` — an HTTP error (500, 429 with ``Retry-After``, 400 ...);
- :func:`stall` — an answer that arrives after the client's timeout;
- a callable ``(request_json) -> entry`` — a reply computed from what the agent sent
  (read the file it was shown, answer with the edit).

Requests are checked as a real server would: a model and messages must be there, and
every ``tool`` message must answer a tool call made earlier in the conversation;
anything else is answered 400 and recorded in :attr:`ScriptedModel.violations`.
When the script runs out the server answers 500 and records that too.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Json = dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    message: Json | None = None  # the assistant message; None for an error
    status: int = 200
    error: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    usage: tuple[int, int] | str | None = "auto"  # (prompt, completion), None = omit


Entry = Reply | Callable[[Json], Reply]


def tool(name: str, /, usage: tuple[int, int] | str | None = "auto", **arguments: Any) -> Reply:
    """An assistant message calling ``name`` with ``arguments``."""
    return tools((name, arguments), usage=usage)


def tools(*calls: tuple[str, Json], usage: tuple[int, int] | str | None = "auto") -> Reply:
    """An assistant message calling several tools at once."""
    tool_calls = [
        {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for name, args in calls
    ]
    return Reply(
        message={"role": "assistant", "content": None, "tool_calls": tool_calls}, usage=usage
    )


def text(content: str, *, usage: tuple[int, int] | str | None = "auto") -> Reply:
    return Reply(message={"role": "assistant", "content": content}, usage=usage)


def fail(
    status: int, message: str = "scripted failure", *, retry_after: int | None = None
) -> Reply:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return Reply(status=status, error=message, headers=headers)


def stall(seconds: float, then: Reply | None = None) -> Reply:
    """Answer ``then`` only after ``seconds`` (longer than the client waits)."""
    base = then or text("too late")
    return Reply(
        message=base.message,
        status=base.status,
        error=base.error,
        headers=base.headers,
        delay=seconds,
        usage=base.usage,
    )


def estimate_tokens(value: Any) -> int:
    """About four characters a token: what the server reports when not told."""
    return max(1, len(json.dumps(value)) // 4)


@dataclass
class Received:
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Json


class ScriptedModel:
    """``async with ScriptedModel([...]) as model:`` then ``model.base_url``."""

    def __init__(
        self,
        script: Sequence[Entry] = (),
        *,
        api_key: str | None = None,
        served: Sequence[str] = ("scripted",),
        max_choices: int | None = None,
    ) -> None:
        """``max_choices``: the most choices one request gets whatever its ``n`` asks
        (1: a server that ignores ``n``, as some do)."""
        self.script: list[Entry] = list(script)
        self.api_key = api_key
        self.served = list(served)  # the model ids GET /v1/models lists
        self.max_choices = max_choices
        self.requests: list[Received] = []
        self.violations: list[str] = []
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle -----------------------------------------------------------
    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self._chat)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]  # the port the OS chose

    async def _models(self, request: web.Request) -> web.Response:
        """``GET /v1/models``, as llama.cpp's server, Ollama and vLLM answer it."""
        if self.api_key is not None and request.headers.get("Authorization") != (
            f"Bearer {self.api_key}"
        ):
            return web.json_response({"error": {"message": "bad key"}}, status=401)
        data = [{"id": m, "object": "model", "owned_by": "scripted"} for m in self.served]
        return web.json_response({"object": "list", "data": data})

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ScriptedModel:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What ``PATCHWARDEN_LLM_BASE_URL`` is set to."""
        return f"{self.url}/v1"

    def add(self, *entries: Entry) -> None:
        self.script.extend(entries)

    @property
    def remaining(self) -> int:
        return len(self.script)

    def conversation(self, index: int = -1) -> list[Json]:
        """The messages of one received request (default: the last)."""
        messages: list[Json] = self.requests[index].body.get("messages", [])
        return messages

    # -- the endpoint --------------------------------------------------------
    async def _chat(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return self._reject("the body is not JSON")
        self.requests.append(
            Received(
                path=request.path,
                query=dict(request.query),
                headers=dict(request.headers),
                body=body,
            )
        )
        if self.api_key is not None and not self._authorised(request):
            return web.json_response(
                {"error": {"message": "Incorrect API key provided", "type": "invalid_request"}},
                status=401,
            )
        problem = _check(body)
        if problem:
            return self._reject(problem)
        if not self.script:
            self.violations.append("the script ran out: the agent asked for one more answer")
            return _error(500, "the scripted model has no more answers")
        # One script entry per choice: ``n`` asks for several (an error entry answers
        # the whole request).
        wanted = body.get("n", 1)
        count = min(wanted, self.max_choices or wanted, len(self.script))
        replies: list[Reply] = []
        for _ in range(count):
            entry = self.script.pop(0)
            reply = entry(body) if callable(entry) else entry
            if reply.delay:
                await asyncio.sleep(reply.delay)
            if reply.message is None:
                return _error(reply.status, reply.error, headers=reply.headers)
            replies.append(reply)
        return web.json_response(_completion(body, replies), headers=replies[0].headers)

    def _authorised(self, request: web.Request) -> bool:
        if request.headers.get("Authorization") == f"Bearer {self.api_key}":
            return True
        return request.headers.get("api-key") == self.api_key  # Azure's header

    def _reject(self, problem: str) -> web.Response:
        self.violations.append(problem)
        return _error(400, problem)


def _error(status: int, message: str, *, headers: dict[str, str] | None = None) -> web.Response:
    kind = {429: "rate_limit_exceeded", 400: "invalid_request_error"}.get(status, "server_error")
    return web.json_response(
        {"error": {"message": message, "type": kind, "code": None}}, status=status, headers=headers
    )


def _check(body: Any) -> str | None:
    """What a real OpenAI-compatible server would refuse in this request."""
    if not isinstance(body, dict) or not body.get("model"):
        return "'model' is required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    called: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("system", "user", "assistant", "tool", "developer"):
            return f"messages[{i}].role is invalid: {role!r}"
        for call in m.get("tool_calls") or []:
            called.add(call.get("id"))
        if role == "tool" and m.get("tool_call_id") not in called:
            return (
                f"messages[{i}]: a message with role 'tool' must answer a preceding "
                "message with 'tool_calls'"
            )
        if role != "assistant" and not isinstance(m.get("content"), str):
            return f"messages[{i}].content must be a string"
    n = body.get("n", 1)
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 128:
        return f"'n' must be an integer from 1 to 128, not {n!r}"
    return None


def _completion(body: Json, replies: list[Reply]) -> Json:
    choices = []
    for index, reply in enumerate(replies):
        assert reply.message is not None
        finish = "tool_calls" if reply.message.get("tool_calls") else "stop"
        choices.append({"index": index, "message": reply.message, "finish_reason": finish})
    answer: Json = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": choices,
    }
    first = replies[0]
    if first.usage == "auto":
        prompt = estimate_tokens(body["messages"])
        completion = sum(estimate_tokens(r.message) for r in replies)
    elif first.usage is None:
        return answer
    else:
        assert isinstance(first.usage, tuple)
        prompt, completion = first.usage
    answer["usage"] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    return answer
