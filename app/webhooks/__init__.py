"""Webhook routing: one module per feature, each with its own gidgethub ``Router``.

Handlers decide (with the pure functions in ``triggers``) and enqueue typed jobs
(app/contract/); they never run git and never import the jobs. The runtime
(app/runtime.py) invokes them for a ``delivery`` job, after the server has answered 202.
"""

from __future__ import annotations

import logging
from typing import Any

from gidgethub import sansio
from gidgethub.routing import Router

from app.github import GitHubApp
from app.store import Delivery
from app.webhooks import (
    ci,
    commands,
    installations,
    labels,
    lifecycle,
    payloads,
    security_alerts,
)
from app.webhooks.context import HandlerContext

log = logging.getLogger(__name__)

router = Router(
    commands.router,
    labels.router,
    ci.router,
    installations.router,
    lifecycle.router,
    security_alerts.router,
)


def handled(event: str, action: str | None) -> bool:
    """Whether a handler is registered for ``event`` (and ``action``)."""
    data = {"action": action} if action is not None else {}
    return bool(router.fetch(sansio.Event(data, event=event, delivery_id="-")))


def check(event: str, payload: Any) -> payloads.Envelope | payloads.Invalid:
    """A delivery's typed model, or why its handlers cannot read it (app/webhooks/payloads)."""
    return payloads.check(event, payload, handled=handled)


async def route_delivery(delivery: Delivery, *, app: GitHubApp, ctx: HandlerContext) -> int:
    """Run the handlers for a stored delivery; return how many ran.

    The payload is read into its typed model once here (intake checked it, but a stored
    delivery may predate a check): one that is not what its handlers read runs none of
    them; the handlers get the model (``read``), not the dict."""
    checked = check(delivery.event, delivery.payload)
    if isinstance(checked, payloads.Invalid):
        await ctx.audit("delivery.invalid", actor=None, repo=delivery.repo, reason=checked.reason)
        return 0
    event = sansio.Event(delivery.payload, event=delivery.event, delivery_id=delivery.id)
    callbacks = router.fetch(event)
    name = f"{delivery.event}.{delivery.action}" if delivery.action else delivery.event
    if not callbacks:
        await ctx.audit(
            "delivery.ignored",
            actor=delivery.sender,
            repo=delivery.repo,
            reason=f"no handler for {name}",
        )
        return 0
    if delivery.installation_id is None:
        await ctx.audit(
            "delivery.ignored",
            actor=delivery.sender,
            repo=delivery.repo,
            reason=(
                f"{name} names no installation, so the App cannot act on it: it comes from "
                "a webhook of the repository or organization, not from the installed App; "
                "install the App on the repository (docs/install.md#3-install-the-app-on-"
                "repositories)"
            ),
        )
        return 0
    gh = app.installation(delivery.installation_id)
    for callback in callbacks:
        await callback(event, gh, ctx=ctx, read=checked)
    return len(callbacks)


__all__ = ["HandlerContext", "check", "handled", "route_delivery", "router"]
