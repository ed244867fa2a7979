"""The aiohttp application: webhook intake, alert intake and health.

Nothing slow happens before the 202: the delivery is verified, stored and a
``delivery`` job enqueued in one transaction; the workers do the rest.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web

from app import signing
from app.alerts import parse_alerts
from app.config import Settings
from app.errors import AlertFormatError, SignatureError
from app.queue import EVENTS_QUEUE, SESSIONS_QUEUE
from app.runtime import Runtime, close_runtime, open_runtime
from app.store import Delivery, NewJob

log = logging.getLogger(__name__)

# GitHub caps webhook payloads at 25 MB; aiohttp's default limit is 1 MiB.
# https://docs.github.com/en/webhooks/webhook-events-and-payloads#payload-cap
MAX_BODY = 25 * 1024 * 1024
RUNTIME = web.AppKey("runtime", Runtime)
SETTINGS = web.AppKey("settings", Settings)
VERIFY = web.AppKey("verify_signatures", bool)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _decode(body: bytes, content_type: str) -> Any:
    """GitHub sends JSON, or a form with a ``payload`` field if the App asks for it."""
    if content_type == "application/x-www-form-urlencoded":
        form = parse_qs(body.decode("utf-8"), strict_parsing=False)
        return json.loads(form["payload"][0])
    return json.loads(body)


async def _read(request: web.Request) -> bytes | web.Response:
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        return _error(413, f"body larger than {MAX_BODY} bytes (GitHub's webhook payload cap)")


async def github_webhook(request: web.Request) -> web.Response:
    runtime = request.app[RUNTIME]
    settings = request.app[SETTINGS]
    body = await _read(request)
    if isinstance(body, web.Response):
        return body
    if request.app[VERIFY]:
        secret = settings.webhook_secret
        assert secret is not None
        try:
            signing.verify(
                body,
                signature=request.headers.get("X-Hub-Signature-256"),
                secret=secret.get_secret_value(),
            )
        except SignatureError as exc:
            log.warning("rejected a webhook from %s: %s", request.remote, exc)
            return _error(401, str(exc))
    event = request.headers.get("X-GitHub-Event", "")
    delivery_id = request.headers.get("X-GitHub-Delivery", "")
    if not event or not delivery_id or len(delivery_id) > 200:
        return _error(400, "X-GitHub-Event and X-GitHub-Delivery headers are required")
    try:
        payload = _decode(body, request.content_type)
    except (ValueError, KeyError, UnicodeDecodeError) as exc:
        return _error(400, f"body is not a JSON webhook payload: {type(exc).__name__}")
    if not isinstance(payload, dict):
        return _error(400, "webhook payload must be a JSON object")
    installation = payload.get("installation") or {}
    delivery = Delivery(
        id=delivery_id,
        source="github",
        event=event,
        action=payload.get("action") if isinstance(payload.get("action"), str) else None,
        installation_id=installation.get("id") if isinstance(installation, dict) else None,
        repo=(payload.get("repository") or {}).get("full_name"),
        sender=(payload.get("sender") or {}).get("login"),
        payload=payload,
        received_at=time.time(),
    )
    job = NewJob(
        kind="delivery",
        queue=EVENTS_QUEUE,
        key=f"delivery:{delivery_id}",
        repo=delivery.repo,
        installation_id=delivery.installation_id,
        delivery_id=delivery_id,
        payload={"delivery_id": delivery_id},
    )
    new = await runtime.store.record_delivery(delivery, jobs=[job])
    if new:
        runtime.pool.wake(EVENTS_QUEUE)
    return web.json_response({"delivery": delivery_id, "duplicate": not new}, status=202)


def _alert_authorised(request: web.Request, body: bytes, secret: str) -> str | None:
    """``None`` when authorised, else what was wrong. Bearer token or HMAC signature."""
    auth = request.headers.get("Authorization", "")
    if auth:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return "Authorization must be 'Bearer <PATCHWARDEN_ALERTS_SECRET>'"
        if hmac.compare_digest(token.strip().encode(), secret.encode()):
            return None
        return "bearer token does not match PATCHWARDEN_ALERTS_SECRET"
    header = "X-Patchwarden-Signature-256"
    signature = request.headers.get(header)
    if signature is None:
        return f"send 'Authorization: Bearer <secret>' or an {header} HMAC"
    try:
        signing.verify(body, signature=signature, secret=secret, header=header)
    except SignatureError as exc:
        return str(exc)
    return None


async def alerts_webhook(request: web.Request) -> web.Response:
    runtime = request.app[RUNTIME]
    settings = request.app[SETTINGS]
    if settings.alerts_secret is None:
        return _error(503, "alerts are disabled: set PATCHWARDEN_ALERTS_SECRET to enable /alerts")
    body = await _read(request)
    if isinstance(body, web.Response):
        return body
    problem = _alert_authorised(request, body, settings.alerts_secret.get_secret_value())
    if problem is not None:
        log.warning("rejected an alert from %s: %s", request.remote, problem)
        return _error(401, problem)
    try:
        data = json.loads(body)
        parsed = parse_alerts(
            data, repo_label=settings.alert_repo_label, routes=settings.alert_routes
        )
    except (ValueError, UnicodeDecodeError):
        return _error(400, "body is not JSON")
    except AlertFormatError as exc:
        return _error(422, str(exc))
    delivery_id = f"alert-{uuid.uuid4()}"
    jobs = []
    for item in parsed.items:
        jobs.append(
            NewJob(
                kind="alert",
                queue=SESSIONS_QUEUE,
                key=f"alert:{item.repo}:{item.key}",
                repo=item.repo,
                installation_id=await runtime.store.installation_for_repo(item.repo),
                delivery_id=delivery_id,
                payload={
                    "repo": item.repo,
                    "source": item.source,
                    "title": item.title,
                    "body": item.body,
                    "labels": item.labels,
                    "url": item.url,
                },
            )
        )
    await runtime.store.record_delivery(
        Delivery(
            id=delivery_id,
            source="alerts",
            event="alert",
            action=parsed.items[0].source if parsed.items else None,
            installation_id=None,
            repo=parsed.items[0].repo if len(parsed.items) == 1 else None,
            sender=None,
            payload=data,
            received_at=time.time(),
        ),
        jobs=jobs,
    )
    for reason in parsed.skipped:
        await runtime.store.audit("alert.skipped", delivery_id=delivery_id, reason=reason)
    answer = {
        "delivery": delivery_id,
        "accepted": [{"repo": item.repo, "title": item.title} for item in parsed.items],
        "skipped": parsed.skipped,
    }
    if not parsed.items and parsed.skipped:
        answer["error"] = "no alert could be mapped to a repository (the request was recorded)"
        return web.json_response(answer, status=422)
    runtime.pool.wake(SESSIONS_QUEUE)
    return web.json_response(answer, status=202)


async def healthz(request: web.Request) -> web.Response:
    runtime = request.app[RUNTIME]
    try:
        await runtime.store.ping()
    except Exception as exc:
        return web.json_response({"status": "unhealthy", "store": str(exc)}, status=503)
    return web.json_response(
        {"status": "ok", "store": "ok", "jobs_running": runtime.pool.in_flight}
    )


def create_app(
    settings: Settings, *, verify_signatures: bool = True, start_workers: bool = True
) -> web.Application:
    """The App's web application. The runtime starts and stops with it."""
    if verify_signatures and settings.webhook_secret is None:
        raise SignatureError(
            "PATCHWARDEN_WEBHOOK_SECRET is not set: refusing to accept unsigned webhooks. "
            "Set it to the App's webhook secret (or pass --insecure-no-signature for local "
            "experiments only)."
        )
    app = web.Application(client_max_size=MAX_BODY)
    app[SETTINGS] = settings
    app[VERIFY] = verify_signatures

    async def runtime_ctx(app: web.Application) -> AsyncIterator[None]:
        runtime = await open_runtime(settings, start_workers=start_workers)
        app[RUNTIME] = runtime
        yield
        await close_runtime(runtime)

    app.cleanup_ctx.append(runtime_ctx)
    app.router.add_post("/webhooks/github", github_webhook)
    app.router.add_post("/alerts", alerts_webhook)
    app.router.add_get("/healthz", healthz)
    return app
