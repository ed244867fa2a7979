"""``patchwarden serve``: every missing setting said at once, the port bound, then the
App's web server with its workers.

What ``serve`` cannot start without is checked before anything is logged or started
(:func:`serve_problems`), and the port is bound before the runtime opens: aiohttp
starts the workers before it binds the address it is given, so a taken port would
have started them for nothing.
"""

from __future__ import annotations

import argparse
import logging
import socket

from aiohttp import web

from app import __version__, logs
from app.config import Settings, load_settings
from app.errors import ConfigError
from app.server import create_app

log = logging.getLogger("patchwarden")


def serve_problems(settings: Settings, *, verify_signatures: bool) -> list[str]:
    """Every setting ``serve`` cannot start without, each with what to do (none:
    ready). Checked before anything starts, so all of them are said at once."""
    problems = []
    if verify_signatures and settings.webhook_secret is None:
        problems.append(
            "PATCHWARDEN_WEBHOOK_SECRET is not set: the App's webhook secret, which "
            "every delivery is checked against (--insecure-no-signature: local "
            "experiments only)"
        )
    if settings.app_id is None:
        problems.append("PATCHWARDEN_APP_ID is not set: the App's id (its settings page)")
    try:
        key = settings.app_private_key()
    except ConfigError as exc:
        problems.append(str(exc))
    else:
        if key is None:
            problems.append(
                "PATCHWARDEN_PRIVATE_KEY_PATH (or PATCHWARDEN_PRIVATE_KEY) is not set: "
                "the App's private key, the .pem file GitHub gave you"
            )
        elif "PRIVATE KEY-----" not in key:
            where = settings.private_key_path or "PATCHWARDEN_PRIVATE_KEY"
            problems.append(f"{where} is not a PEM private key (-----BEGIN … PRIVATE KEY-----)")
    return problems


def _enforcement(settings: Settings, *, verify: bool) -> list[str]:
    from app.store import mask_url

    lines = [
        "webhook signatures: "
        + (
            "enforced (X-Hub-Signature-256, HMAC-SHA256)"
            if verify
            else "NOT CHECKED (--insecure-no-signature)"
        ),
        "alerts endpoint: "
        + (
            "enabled (bearer token or HMAC)"
            if settings.alerts_secret
            else "disabled (no PATCHWARDEN_ALERTS_SECRET)"
        ),
        "Sentry webhooks: "
        + (
            "enabled (Sentry-Hook-Signature, the integration's Client Secret)"
            if settings.sentry_client_secret
            else "disabled (no PATCHWARDEN_SENTRY_CLIENT_SECRET)"
        ),
        f"database: {mask_url(settings.database_url)}",
        f"GitHub API: {settings.github_api_url} as App {settings.app_id} (@{settings.bot_name})",
        f"workers: events x{settings.event_workers}, sessions x{settings.workers}, "
        f"{settings.job_max_attempts} attempts, lease {settings.lease_seconds:.0f}s",
    ]
    return lines


def serve(args: argparse.Namespace) -> int:
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    settings = load_settings(**overrides)
    verify = not args.insecure_no_signature
    problems = serve_problems(settings, verify_signatures=verify)
    if problems:  # every one at once, before any banner or worker
        raise ConfigError(
            "serve cannot start:\n"
            + "".join(f"  - {p}\n" for p in problems)
            + "`patchwarden setup` creates the App and writes these settings to .env "
            "(docs/install.md)"
        )
    # The port first: taken, nothing else has started (aiohttp starts the workers
    # before it binds the address it is given).
    try:
        sock = _listen(settings.host, settings.port)
    except OSError as exc:
        raise ConfigError(listen_error(exc, settings.host, settings.port)) from None
    logs.configure(settings.log_level, secrets=settings.secret_values(), fmt=settings.log_format)
    app = create_app(settings, verify_signatures=verify, start_workers=not args.no_workers)
    if not verify:
        log.warning(
            "!!! webhook signatures are NOT verified: anyone reaching this port can forge events"
        )
    for line in _enforcement(settings, verify=verify):
        log.info("%s", line)

    def listening(_: str) -> None:  # aiohttp calls it once the port is bound
        log.info(
            "patchwarden %s listening on http://%s:%s", __version__, settings.host, settings.port
        )

    web.run_app(
        app,
        sock=sock,
        print=listening,
        access_log=None,
        shutdown_timeout=settings.drain_seconds + 5,
    )
    return 0


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (its first address), as aiohttp would."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def listen_error(exc: OSError, host: str, port: int) -> str:
    """One line for what stops ``serve`` binding its address, and what to do."""
    import errno
    import socket

    where = f"cannot listen on {host}:{port}"
    if isinstance(exc, socket.gaierror):
        return (
            f"{where}: {host!r} is not an address of this machine ({exc.strerror}); set "
            "PATCHWARDEN_HOST (or --host) to 127.0.0.1, 0.0.0.0 or one of its addresses"
        )
    if exc.errno == errno.EADDRINUSE:
        return (
            f"{where}: the port is in use (another patchwarden serve?); stop it or set "
            "PATCHWARDEN_PORT (or --port)"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{where}: {host} is not an address of this machine; set PATCHWARDEN_HOST"
    if exc.errno == errno.EACCES:
        return f"{where}: permission denied (ports below 1024 need privileges); use 8080"
    return f"{where}: {exc.strerror or exc}"
