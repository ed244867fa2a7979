"""The ``patchwarden`` command: serve, worker, run, score, audit, manifest, doctor, demo, forge."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from app import __version__, logs
from app.cli.arguments import parse_since, run_arguments, score_arguments
from app.errors import PatchwardenError

if TYPE_CHECKING:
    from app.config import Settings

# `patchwarden --version` and `--help` import nothing heavy: the settings (pydantic),
# the store, asyncio and the rest are imported by the verb that needs them.

log = logging.getLogger("patchwarden")


def cmd_serve(args: argparse.Namespace) -> int:
    from app.cli.serve import serve

    return serve(args)


async def _run_worker(settings: Settings) -> None:
    import asyncio

    from app.runtime import close_runtime, open_runtime

    runtime = await open_runtime(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.info(
        "worker %s running; SIGTERM drains for %.0fs", runtime.pool.owner, settings.drain_seconds
    )
    try:
        await stop.wait()
        log.info("stopping: no new jobs; draining running ones")
    finally:
        await close_runtime(runtime)


def cmd_worker(args: argparse.Namespace) -> int:
    import asyncio

    from app.config import load_settings

    settings = load_settings()
    logs.configure(settings.log_level, secrets=settings.secret_values(), fmt=settings.log_format)
    asyncio.run(_run_worker(settings))
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from app.cli.audit import run_audit

    return run_audit(args)


def cmd_manifest(args: argparse.Namespace) -> int:
    from app.github.manifest import build_manifest, public_base

    for warning in public_base(args.url)[1]:
        print(f"warning: {warning}", file=sys.stderr)
    print(json.dumps(build_manifest(url=args.url, name=args.name, public=args.public), indent=2))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from app.cli.doctor import run_doctor
    from app.config import load_settings

    return run_doctor(load_settings(), as_json=args.json)


def cmd_run(args: argparse.Namespace) -> int:
    from app.cli.run import run_local
    from app.config import load_settings

    settings = load_settings()
    logs.configure("WARNING", secrets=settings.secret_values())
    # A failed session is said once, by the verdict line ("no patch: ..."), not also
    # by the session's own warning (which a server's log keeps).
    logging.getLogger("app.sessions.session").setLevel(logging.ERROR)
    return run_local(args, settings=settings)


def cmd_score(args: argparse.Namespace) -> int:
    from app.cli.score_verb import run_score

    return run_score(args)


def cmd_setup(args: argparse.Namespace) -> int:
    from app.cli.setup import run_setup
    from app.config import load_settings

    settings = load_settings()
    logs.configure(settings.log_level, secrets=settings.secret_values(), fmt=settings.log_format)
    return run_setup(args, settings)


def cmd_validate(args: argparse.Namespace) -> int:
    from app.cli.validate import run_validate

    return run_validate(args)


def cmd_schema(args: argparse.Namespace) -> int:
    from app.cli.validate import run_schema

    return run_schema(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from app.cli.demo import run_demo

    return run_demo(keep=args.keep, js=args.js)


def cmd_forge(args: argparse.Namespace) -> int:
    import asyncio

    from app.localforge.__main__ import serve

    return asyncio.run(serve(args))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="patchwarden", description="Patchwarden: a GitHub App for guarded auto-PRs."
    )
    parser.add_argument("--version", action="version", version=f"patchwarden {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the App: webhooks, alerts, workers")
    serve.add_argument("--host", help="listen address (PATCHWARDEN_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (PATCHWARDEN_PORT, default 8080)")
    serve.add_argument(
        "--insecure-no-signature",
        action="store_true",
        help="accept webhooks without checking X-Hub-Signature-256 (local experiments only)",
    )
    serve.add_argument(
        "--no-workers", action="store_true", help="only accept; run `worker` elsewhere"
    )
    serve.set_defaults(func=cmd_serve)

    worker = sub.add_parser("worker", help="run job workers only (same database as serve)")
    worker.set_defaults(func=cmd_worker)

    audit = sub.add_parser("audit", help="print the audit log")
    audit.add_argument("--repo", help="only this owner/name")
    audit.add_argument("--job", type=int, help="only this job id")
    audit.add_argument("--since", type=parse_since, help="30m, 2h, 7d, or an ISO time")
    audit.add_argument("--limit", type=int, default=1000, help="at most this many entries")
    audit.add_argument(
        "--outcomes",
        action="store_true",
        help="what became of the jobs instead: PRs, merges, reverts, time and cost per repo",
    )
    audit.add_argument(
        "--failed",
        action="store_true",
        help="the jobs that failed for good, with why (their requesters were told)",
    )
    audit.add_argument("--json", action="store_true", help="one JSON object per line")
    audit.set_defaults(func=cmd_audit)

    setup = sub.add_parser(
        "setup", help="create the GitHub App from its manifest in your browser (first install)"
    )
    setup.add_argument(
        "--url", help="the server's public https:// base URL (default http://localhost:PORT)"
    )
    setup.add_argument("--host", help="listen address (PATCHWARDEN_HOST, default 127.0.0.1)")
    setup.add_argument("--port", type=int, help="listen port (PATCHWARDEN_PORT, default 8080)")
    setup.add_argument("--name", default="Patchwarden", help="the App's name on GitHub")
    setup.add_argument("--org", help="create the App in this organisation (default: your account)")
    setup.add_argument("--public", action="store_true", help="let other accounts install it")
    setup.add_argument("--env-file", default=".env", help="settings go here (default .env)")
    setup.add_argument("--key-file", default="app.pem", help="the private key (default app.pem)")
    setup.set_defaults(func=cmd_setup)

    manifest = sub.add_parser("manifest", help="print the GitHub App manifest")
    manifest.add_argument("--url", required=True, help="the server's public base URL")
    manifest.add_argument("--name", default="Patchwarden", help="the App's name on GitHub")
    manifest.add_argument("--public", action="store_true", help="let other accounts install it")
    manifest.set_defaults(func=cmd_manifest)

    doctor = sub.add_parser("doctor", help="what is installed, enforced and missing")
    doctor.add_argument("--json", action="store_true")
    doctor.set_defaults(func=cmd_doctor)

    run = sub.add_parser(
        "run", help="the whole pipeline on a local repository: a verified patch as a branch"
    )
    run_arguments(run)
    run.set_defaults(func=cmd_run)

    score = sub.add_parser(
        "score", help="the risk score of a change (a diff file or a git range) under the policy"
    )
    score_arguments(score)
    score.set_defaults(func=cmd_score)

    validate = sub.add_parser(
        "validate", help="check a .github/patchwarden.yml: every problem with its line"
    )
    validate.add_argument(
        "file", nargs="?", default=".github/patchwarden.yml", help="default: %(default)s"
    )
    validate.add_argument("--json", action="store_true", help="the problems as a JSON list")
    validate.set_defaults(func=cmd_validate)

    schema = sub.add_parser(
        "schema", help="print the JSON Schema of .github/patchwarden.yml (for editors)"
    )
    schema.set_defaults(func=cmd_schema)

    demo = sub.add_parser("demo", help="the whole story, offline, on the local GitHub double")
    demo.add_argument(
        "--keep",
        action="store_true",
        help="leave the forge up (and its folder) after the story, until Ctrl-C",
    )
    demo.add_argument(
        "--js",
        action="store_true",
        help="the npm story instead: a Dependabot alert on a JavaScript project answered "
        "with a verified bump (needs the npm registry for the project's lock)",
    )
    demo.set_defaults(func=cmd_demo)

    from app.localforge.__main__ import build_parser as forge_parser

    forge = sub.add_parser("forge", help="run LocalForge, the local GitHub double, alone")
    forge_parser(forge)
    forge.set_defaults(func=cmd_forge)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except PatchwardenError as exc:
        print(f"patchwarden: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):
            print("interrupted", file=sys.stderr)
        return 130
