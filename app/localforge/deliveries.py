"""Webhook deliveries: queued in order, signed, posted one at a time, as GitHub does."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from typing import Any

import aiohttp

from app.github import signing
from app.localforge.forge_base import (
    Delivery,
    ForgeState,
    Violation,
    _node_id,
)
from app.localforge.state import Repo, User


class Outbox:
    """The forge's webhooks: every state change is delivered to the App's webhook URL,
    signed with its secret, in order, one at a time, from :meth:`start` to :meth:`stop`.
    Owns the deliveries made (or tried)."""

    def __init__(
        self, state: ForgeState, *, webhook_url: str | None, webhook_secret: str | None
    ) -> None:
        self.state = state
        self.webhook_url = webhook_url
        self.webhook_secret = webhook_secret
        self.deliveries: list[Delivery] = []
        # Tests of idempotency: each delivery is posted again under a new
        # X-GitHub-Delivery id (what a second hook, or a replay tool, would send).
        self.echo_deliveries = False
        self.in_flight = 0  # deliveries queued and not yet made
        self._queue: asyncio.Queue[Delivery] | None = None
        self._sender: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Deliver from now on (until :meth:`stop`, deliveries are recorded, not sent)."""
        self._queue = asyncio.Queue()
        self._sender = asyncio.create_task(self._send_loop())

    async def stop(self) -> None:
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
            self._sender = None

    def emit(self, event: str, payload: dict[str, Any]) -> Delivery:
        """Queue a delivery, checked against the webhook schema; it goes out in order."""
        hook = self.state.render.webhooks.hook(event, payload)
        problems = self.state.hook_contract.problems(event, hook)
        if problems:
            self.state.violations.append(
                Violation("webhook", f"{event}.{hook.get('action', '')}", problems)
            )
        delivery = Delivery(str(uuid.uuid4()), event, hook.get("action"), hook)
        self.deliveries.append(delivery)
        if self._queue is not None:
            self.in_flight += 1
            self._queue.put_nowait(delivery)
        return delivery

    async def flush(self, within: float = 30.0) -> None:
        """Wait until every queued delivery has been made (not for CI runs: see settle)."""
        if self._queue is not None:
            await asyncio.wait_for(self._queue.join(), timeout=within)

    async def _send_loop(self) -> None:
        assert self._queue is not None
        while True:
            delivery = await self._queue.get()
            try:
                copies = [delivery]
                if self.echo_deliveries:
                    echo = Delivery(
                        str(uuid.uuid4()), delivery.event, delivery.action, delivery.payload
                    )
                    self.deliveries.append(echo)
                    copies.append(echo)
                for copy in copies:
                    await self._attempt(copy)
            finally:
                self.in_flight -= 1
                self._queue.task_done()

    async def _attempt(self, delivery: Delivery) -> None:
        if not (self.webhook_url and self.webhook_secret):
            return
        try:
            await self._post(delivery)
            delivery.error = None
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            delivery.error = f"{type(exc).__name__}: {exc}"

    async def redeliver_failed(self) -> int:
        """Post again, under the same X-GitHub-Delivery id, every delivery that got no
        2xx answer (the receiver was down, say), as GitHub's "Redeliver" does; return
        how many. https://docs.github.com/en/webhooks/testing-and-troubleshooting-webhooks/redelivering-webhooks"""
        failed = [d for d in self.deliveries if d.status is None or d.status >= 300]
        for delivery in failed:
            await self._attempt(delivery)
        return len(failed)

    async def send(
        self, event: str, payload: dict[str, Any], *, delivery_id: str | None = None
    ) -> int:
        """POST a signed delivery to ``webhook_url`` now, as GitHub does; return the status.

        For replaying a payload (``delivery_id`` repeats a delivery). State changes
        send their deliveries themselves."""
        if not self.webhook_url or not self.webhook_secret:
            raise RuntimeError("set webhook_url and webhook_secret before sending deliveries")
        delivery = Delivery(delivery_id or str(uuid.uuid4()), event, payload.get("action"), payload)
        self.deliveries.append(delivery)
        await self._post(delivery)
        assert delivery.status is not None
        return delivery.status

    async def _post(self, delivery: Delivery) -> None:
        assert self.webhook_url is not None
        assert self.webhook_secret is not None
        body = json.dumps(delivery.payload).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/localforge",
            "X-GitHub-Event": delivery.event,
            "X-GitHub-Delivery": delivery.id,
            "X-GitHub-Hook-ID": "1",
            "X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-GitHub-Hook-Installation-Target-ID": str(self.state.app_id),
            "X-Hub-Signature-256": signing.sign(body, secret=self.webhook_secret),
        }
        timeout = aiohttp.ClientTimeout(total=10)  # GitHub gives up after 10 s
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(self.webhook_url, data=body, headers=headers) as response,
        ):
            delivery.status = response.status

    # -- webhook payloads ------------------------------------------------------
    def event(self, repo: Repo, action: str | None, sender: User, **fields: Any) -> dict[str, Any]:
        payload: dict[str, Any] = {"action": action, **fields}
        payload["repository"] = self.repository_json(repo)
        payload["sender"] = self.state.render.accounts.user(sender)
        payload["installation"] = {
            "id": repo.installation_id,
            "node_id": _node_id("Installation", repo.installation_id),
        }
        return payload

    def repository_json(self, repo: Repo) -> dict[str, Any]:
        open_issues = sum(1 for i in repo.issues.values() if i.state == "open")
        return self.state.render.repos.repository(repo, open_issues=open_issues)
