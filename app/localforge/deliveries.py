"""Webhook deliveries: queued in order, signed, posted one at a time, as GitHub does."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import aiohttp

from app.github import signing
from app.localforge.forge_base import (
    Delivery,
    ForgeBase,
    Violation,
    _node_id,
)
from app.localforge.state import Repo, User


class Deliveries(ForgeBase):
    """The forge's outbox: every state change is delivered to the App's webhook URL."""

    def emit(self, event: str, payload: dict[str, Any]) -> Delivery:
        """Queue a delivery, checked against the webhook schema; it goes out in order."""
        hook = self.render.webhooks.hook(event, payload)
        problems = self.hook_contract.problems(event, hook)
        if problems:
            self.violations.append(
                Violation("webhook", f"{event}.{hook.get('action', '')}", problems)
            )
        delivery = Delivery(str(uuid.uuid4()), event, hook.get("action"), hook)
        self.deliveries.append(delivery)
        if self._outbox is not None:
            self._in_flight += 1
            self._outbox.put_nowait(delivery)
        return delivery

    async def flush(self, within: float = 30.0) -> None:
        """Wait until every queued delivery has been made (not for CI runs: see settle)."""
        if self._outbox is not None:
            await asyncio.wait_for(self._outbox.join(), timeout=within)

    async def _send_loop(self) -> None:
        assert self._outbox is not None
        while True:
            delivery = await self._outbox.get()
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
                self._in_flight -= 1
                self._outbox.task_done()

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
            "X-GitHub-Hook-Installation-Target-ID": str(self.app_id),
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
        payload["sender"] = self.render.accounts.user(sender)
        payload["installation"] = {
            "id": repo.installation_id,
            "node_id": _node_id("Installation", repo.installation_id),
        }
        return payload

    def repository_json(self, repo: Repo) -> dict[str, Any]:
        open_issues = sum(1 for i in repo.issues.values() if i.state == "open")
        return self.render.repos.repository(repo, open_issues=open_issues)
