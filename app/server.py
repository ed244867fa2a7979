"""The aiohttp application: webhook intake, alert intake and health.

Nothing slow happens before the 202: the delivery is verified, stored and a
``delivery`` job enqueued in one transaction; the workers do the rest.

Over ~400 lines on purpose: the two intakes (GitHub's webhooks; alerts from
Alertmanager, Sentry and generic senders) share the body reading, the error answers and
the application's keys, so split apart they would import each other.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web

from app import logs, webhooks
from app.alerts import AlertItem, ParsedAlerts, parse_alerts, parse_sentry, shown
from app.config import Settings
from app.contract.kinds import AlertFrame, AlertJob, DeliveryJob
from app.errors import AlertFormatError, SignatureError
from app.github import signing
from app.metrics import CONTENT_TYPE
from app.publish import audit_page
from app.runtime import Runtime, close_runtime, open_runtime
from app.store import Delivery
from app.untrusted.json_body import unsound
from app.webhooks import payloads

log = logging.getLogger(__name__)

# GitHub caps webhook payloads at 25 MB; aiohttp's default limit is 1 MiB.
# https://docs.github.com/en/webhooks/webhook-events-and-payloads#payload-cap
MAX_BODY = 25 * 1024 * 1024
LARGE_BODY = 1024 * 1024
MAX_LARGE_READS = 2  # unsigned traffic can hold at most this many large bodies in memory
LARGE_READ_WAIT = 30.0  # seconds a large body waits for a slot before a 503
MAX_REASONS = 50  # skipped alerts named in an answer (and its audit entry); the rest counted
READ_DEADLINE = 60.0  # seconds a body may take to arrive once read: a trickle keeps no slot
_EVENT = re.compile(r"^[a-z_]{1,64}$")
_SIGNATURE = re.compile(r"sha256=[0-9a-fA-F]{64}\Z")
ALERT_SIGNATURE = "X-Patchwarden-Signature-256"
SENTRY_SIGNATURE = "Sentry-Hook-Signature"
SENTRY_RESOURCE = "Sentry-Hook-Resource"
_SENTRY_SIGNATURE = re.compile(r"[0-9a-f]{64}")
_DELIVERY_ID = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")
RUNTIME = web.AppKey("runtime", Runtime)
SETTINGS = web.AppKey("settings", Settings)
VERIFY = web.AppKey("verify_signatures", bool)
LARGE_READS = web.AppKey("large_reads", asyncio.Semaphore)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _decode(body: bytes, content_type: str) -> Any:
    """GitHub sends JSON, or a form with a ``payload`` field if the App asks for it."""
    if content_type == "application/x-www-form-urlencoded":
        form = parse_qs(body.decode("utf-8"), strict_parsing=False)
        return json.loads(form["payload"][0])
    return json.loads(body)


async def _read(request: web.Request) -> bytes | web.Response:
    """The body, read before anyone knows who sent it: so bounded in total. Small bodies
    (nearly every delivery) are read at once; at most ``MAX_LARGE_READS`` bodies over
    ``LARGE_BODY`` (or of unknown length) are read at a time, the others wait for a slot
    (their bytes stay in the socket, not in memory) and give up with a 503. A body must
    arrive within ``READ_DEADLINE`` (408), and compressed bodies are refused (415):
    their length says nothing about what they unpack to, and GitHub never sends one."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        return _error(
            415, f"Content-Encoding {encoding[:40]!r} is not accepted: send the body as is"
        )
    length = request.content_length
    too_large = _error(413, f"body larger than {MAX_BODY} bytes (GitHub's webhook payload cap)")
    if length is not None and length > MAX_BODY:
        return too_large
    slots = request.app[LARGE_READS]
    large = length is None or length > LARGE_BODY
    if large:
        try:
            await asyncio.wait_for(slots.acquire(), timeout=LARGE_READ_WAIT)
        except TimeoutError:
            return _error(503, "too many large bodies are being read at once; send it again")
    try:
        # Not ``request.read()``: it keeps the body on the request, which lives on while
        # the client holds the connection open, so refused bodies piled up (20 unsigned
        # 24 MiB uploads: +370 MiB; bench/upload_memory.py).
        parts, size = [], 0
        async with asyncio.timeout(READ_DEADLINE):
            async for chunk in request.content.iter_any():
                size += len(chunk)
                if size > MAX_BODY:
                    return too_large
                parts.append(chunk)
        return b"".join(parts)
    except TimeoutError:
        return _error(408, f"the body took over {READ_DEADLINE:.0f} s to arrive")
    finally:
        if large:
            slots.release()


async def github_webhook(request: web.Request) -> web.Response:
    delivery_id = request.headers.get("X-GitHub-Delivery", "")
    with logs.bound(delivery_id=delivery_id if _DELIVERY_ID.match(delivery_id) else None):
        response, outcome = await _github_webhook(request, delivery_id)
    request.app[RUNTIME].metrics.webhooks.labels(outcome=outcome).inc()
    return response


async def _github_webhook(request: web.Request, delivery_id: str) -> tuple[web.Response, str]:
    """The answer, and its outcome for the metrics."""
    runtime = request.app[RUNTIME]
    settings = request.app[SETTINGS]
    if request.app[VERIFY] and not request.headers.get("X-Hub-Signature-256"):
        return _error(401, "the X-Hub-Signature-256 header is missing"), "unsigned"
    body = await _read(request)
    if isinstance(body, web.Response):
        return body, "unreadable"
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
            return _error(401, str(exc)), "bad_signature"
    event = request.headers.get("X-GitHub-Event", "")
    if not _EVENT.match(event) or not _DELIVERY_ID.match(delivery_id):
        return _error(
            400, "X-GitHub-Event and X-GitHub-Delivery headers are required, as GitHub sends them"
        ), "bad_request"
    try:
        payload = _decode(body, request.content_type)
    except RecursionError:
        deep = payloads.Invalid("the payload nests too deep")
        return await _invalid(runtime, event, delivery_id, body, deep), "invalid"
    except (ValueError, KeyError, UnicodeDecodeError) as exc:
        return _error(400, f"body is not a JSON webhook payload: {type(exc).__name__}"), (
            "bad_request"
        )
    checked = webhooks.check(event, payload)
    if isinstance(checked, payloads.Invalid):
        return await _invalid(runtime, event, delivery_id, body, checked), "invalid"
    delivery = Delivery(
        id=delivery_id,
        source="github",
        event=event,
        action=checked.action,
        installation_id=checked.installation.id if checked.installation else None,
        repo=checked.repository.full_name if checked.repository else None,
        sender=checked.sender.login if checked.sender else None,
        payload=payload,
        received_at=time.time(),
    )
    job = DeliveryJob(delivery_id=delivery_id, repo=delivery.repo).new_job(
        installation_id=delivery.installation_id, delivery_id=delivery_id
    )
    new = await runtime.store.journal.record_delivery(delivery, jobs=[job])
    if new:
        runtime.pool.wake(DeliveryJob.queue)
    answer = web.json_response({"delivery": delivery_id, "duplicate": not new}, status=202)
    return answer, "accepted" if new else "duplicate"


async def _invalid(
    runtime: Runtime, event: str, delivery_id: str, body: bytes, why: payloads.Invalid
) -> web.Response:
    """A signed delivery Patchwarden cannot act on: audited (not stored whole: it may be
    huge or hostile) on the repository it names, if any, answered 400 with the reason,
    no job."""
    reason = why.reason
    log.warning("refused delivery %s (%s): %s", delivery_id, event, reason)
    await runtime.store.journal.audit(
        "delivery.invalid",
        repo=why.repo,
        delivery_id=delivery_id,
        reason=reason,
        details={"event": event, "bytes": len(body)},
    )
    return _error(400, f"the {event} payload cannot be used: {reason}")


def _alert_headers_refused(request: web.Request, secret: str) -> str | None:
    """What is wrong with an alert's credentials as its headers show them, before the
    body is read: a bearer token is judged whole, an HMAC header by its form (the body
    decides the rest, :func:`_alert_hmac_refused`). ``None`` when nothing is wrong."""
    auth = request.headers.get("Authorization", "")
    if auth:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return "Authorization must be 'Bearer <PATCHWARDEN_ALERTS_SECRET>'"
        if hmac.compare_digest(token.strip().encode(), secret.encode()):
            return None
        return "bearer token does not match PATCHWARDEN_ALERTS_SECRET"
    signature = request.headers.get(ALERT_SIGNATURE)
    if signature is None:
        return f"send 'Authorization: Bearer <secret>' or an {ALERT_SIGNATURE} HMAC"
    if not _SIGNATURE.match(signature):
        return f"{ALERT_SIGNATURE} must be 'sha256=' and 64 hex digits"
    return None


def _alert_hmac_refused(request: web.Request, body: bytes, secret: str) -> str | None:
    try:
        signing.verify(
            body,
            signature=request.headers.get(ALERT_SIGNATURE),
            secret=secret,
            header=ALERT_SIGNATURE,
        )
    except SignatureError as exc:
        return str(exc)
    return None


def _alert_refused(request: web.Request, problem: str) -> web.Response:
    log.warning("rejected an alert from %s: %s", request.remote, problem)
    return _error(401, problem)


async def _sentry(request: web.Request, resource: str) -> web.Response:
    """A Sentry integration-platform webhook: signed with the integration's Client
    Secret, an HMAC-SHA256 of the body in hex (Sentry-Hook-Signature), as Sentry
    documents: https://docs.sentry.io/organization/integrations/integration-platform/webhooks/"""
    settings = request.app[SETTINGS]
    if (
        settings.sentry_client_secret is None
        or not settings.sentry_client_secret.get_secret_value()
    ):
        return _error(
            503,
            "Sentry webhooks are disabled: set PATCHWARDEN_SENTRY_CLIENT_SECRET to the "
            "integration's Client Secret",
        )
    signature = request.headers.get(SENTRY_SIGNATURE, "").strip().lower()
    if not _SENTRY_SIGNATURE.fullmatch(signature):
        return _alert_refused(request, f"{SENTRY_SIGNATURE} must be 64 hex digits")
    body = await _read(request)
    if isinstance(body, web.Response):
        return body
    secret = settings.sentry_client_secret.get_secret_value().encode()
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        return _alert_refused(
            request,
            f"{SENTRY_SIGNATURE} does not match the body signed with "
            "PATCHWARDEN_SENTRY_CLIENT_SECRET",
        )
    data = _json_alert(body)
    if isinstance(data, web.Response):
        return data
    try:
        day = time.strftime("%Y-%m-%d", time.gmtime())
        parsed = parse_sentry(data, resource=resource, routes=settings.alert_routes, day=day)
    except AlertFormatError as exc:
        return _error(422, str(exc))
    if not parsed.items:
        # Installations, comments, resolved issues...: received and understood, no job.
        reason = "; ".join(parsed.skipped)
        await request.app[RUNTIME].store.journal.audit("alert.skipped", reason=reason)
        return web.json_response({"accepted": [], "skipped": parsed.skipped}, status=200)
    return await _accept(request, data, parsed)


def _json_alert(body: bytes) -> Any:
    """The alert's JSON, or the answer that says why it cannot be read."""
    try:
        data = json.loads(body)
    except RecursionError:
        return _error(400, "the alert nests too deep")
    except (ValueError, UnicodeDecodeError):
        return _error(400, "body is not JSON")
    problem = unsound(data)
    if problem is not None:
        return _error(400, f"the alert cannot be used: {problem}")
    return data


async def alerts_webhook(request: web.Request) -> web.Response:
    settings = request.app[SETTINGS]
    resource = request.headers.get(SENTRY_RESOURCE)
    if resource is not None or SENTRY_SIGNATURE in request.headers:
        return await _sentry(request, (resource or "").strip())
    if settings.alerts_secret is None:
        return _error(503, "alerts are disabled: set PATCHWARDEN_ALERTS_SECRET to enable /alerts")
    secret = settings.alerts_secret.get_secret_value()
    problem = _alert_headers_refused(request, secret)
    if problem is not None:
        return _alert_refused(request, problem)
    body = await _read(request)
    if isinstance(body, web.Response):
        return body
    if "Authorization" not in request.headers:  # an HMAC: the body decides
        problem = _alert_hmac_refused(request, body, secret)
        if problem is not None:
            return _alert_refused(request, problem)
    data = _json_alert(body)
    if isinstance(data, web.Response):
        return data
    try:
        parsed = parse_alerts(
            data, repo_label=settings.alert_repo_label, routes=settings.alert_routes
        )
    except AlertFormatError as exc:
        return _error(422, str(exc))
    return await _accept(request, data, parsed)


def alert_job(item: AlertItem) -> AlertJob:
    """The job an alert posted to ``/alerts`` becomes."""
    return AlertJob(
        repo=item.repo,
        source=item.source,
        fingerprint=item.key,
        title=item.title,
        body=item.body,
        labels=item.labels,
        url=item.url,
        frames=[AlertFrame(path=f.path, line=f.line, function=f.function) for f in item.frames],
    )


async def _accept(request: web.Request, data: Any, parsed: ParsedAlerts) -> web.Response:
    """Store the alert with a job per item on an installed repository, and answer."""
    runtime = request.app[RUNTIME]
    delivery_id = f"alert-{uuid.uuid4()}"
    jobs = []
    items, skipped = [], list(parsed.skipped)
    installations: dict[str, int | None] = {}
    for item in parsed.items:
        if item.repo not in installations:
            installations[item.repo] = await runtime.store.repos.installation_for_repo(item.repo)
        installation = installations[item.repo]
        if installation is None:
            # A job would fail on its first step, and nobody would hear of it.
            skipped.append(
                f"{shown(item.title)}: the App is not installed on {item.repo} (install "
                "it there; just installed, send again once GitHub has told Patchwarden)"
            )
            continue
        items.append(item)
        jobs.append(alert_job(item).new_job(installation_id=installation, delivery_id=delivery_id))
    await runtime.store.journal.record_delivery(
        Delivery(
            id=delivery_id,
            source="alerts",
            event="alert",
            action=items[0].source if items else None,
            installation_id=None,
            repo=items[0].repo if len(items) == 1 else None,
            sender=None,
            payload=data,
            received_at=time.time(),
        ),
        jobs=jobs,
    )
    if len(skipped) > MAX_REASONS:
        skipped = [*skipped[:MAX_REASONS], f"and {len(skipped) - MAX_REASONS} more"]
    if skipped:
        reason = "; ".join(skipped)
        await runtime.store.journal.audit("alert.skipped", delivery_id=delivery_id, reason=reason)
    answer = {
        "delivery": delivery_id,
        "accepted": [{"repo": item.repo, "title": item.title} for item in items],
        "skipped": skipped,
    }
    if not items and skipped:
        answer["error"] = "no alert started a job: see skipped (the request was recorded)"
        return web.json_response(answer, status=422)
    runtime.pool.wake(AlertJob.queue)
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


async def metrics(request: web.Request) -> web.Response:
    """Prometheus's text format (app/metrics.py): counts only, no repository names;
    behind ``Authorization: Bearer PATCHWARDEN_METRICS_TOKEN`` when that is set."""
    token = request.app[SETTINGS].metrics_token
    if token is not None:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").encode()
        if not hmac.compare_digest(given, token.get_secret_value().encode()):
            return _error(401, "GET /metrics needs Authorization: Bearer <the metrics token>")
    runtime = request.app[RUNTIME]
    text = await runtime.metrics.render(runtime.store)
    return web.Response(body=text, headers={"Content-Type": CONTENT_TYPE})


async def audit(request: web.Request) -> web.Response:
    """One pull request's audit page, which its check run links to (audit_page.answer)."""
    settings, m = request.app[SETTINGS], request.match_info
    return await audit_page.answer(
        request.app[RUNTIME].store,
        public_url=settings.public_url,
        secret=settings.webhook_secret,
        repo=f"{m['owner']}/{m['name']}",
        number=int(m["number"]),
        query=request.query,
    )


async def setup_done(request: web.Request) -> web.Response:
    """``/setup`` on a running server: the App is configured (serve needs it), so the
    manifest flow (``patchwarden setup``) has nothing to do here."""
    return web.Response(
        status=409,
        text="Patchwarden is set up already: this server runs as its GitHub App.\n",
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
    app[LARGE_READS] = asyncio.Semaphore(MAX_LARGE_READS)

    async def runtime_ctx(app: web.Application) -> AsyncIterator[None]:
        runtime = await open_runtime(settings, start_workers=start_workers)
        app[RUNTIME] = runtime
        yield
        await close_runtime(runtime)

    app.cleanup_ctx.append(runtime_ctx)
    app.router.add_post("/webhooks/github", github_webhook)
    app.router.add_post("/alerts", alerts_webhook)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    app.router.add_get(r"/audit/{owner}/{name}/pull/{number:\d{1,9}}", audit)
    app.router.add_get("/setup", setup_done)
    app.router.add_get("/setup/callback", setup_done)
    return app
