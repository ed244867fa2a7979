"""``python -m app.localforge`` (or ``patchwarden forge``): run the GitHub double alone.

It reads the App's own settings (``PATCHWARDEN_APP_ID``, ``PATCHWARDEN_PRIVATE_KEY``
or ``..._PATH``, ``PATCHWARDEN_WEBHOOK_SECRET``), so a ``patchwarden serve`` with
the same environment and ``PATCHWARDEN_GITHUB_API_URL`` pointing here works against
it unchanged. Secrets are never taken on the command line.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from app.errors import ConfigError, PatchwardenError

if TYPE_CHECKING:
    from app.localforge.forge_server import LocalForge


def public_key_of(private_pem: str) -> str:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def _repo_spec(value: str) -> tuple[str, Path | None]:
    name, _, path = value.partition("=")
    if name.count("/") != 1:
        raise argparse.ArgumentTypeError(f"--repo takes owner/name[=DIR], not {value!r}")
    if path and not Path(path).is_dir():
        raise argparse.ArgumentTypeError(f"--repo {name}: {path} is not a directory")
    return name, Path(path) if path else None


def _user_spec(value: str) -> tuple[str, str, str]:
    parts = value.split(":")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"--user takes owner/name:login:role, not {value!r}")
    return parts[0], parts[1], parts[2]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="python -m app.localforge")
    parser.description = "Run LocalForge, the local GitHub double, on loopback."
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--webhook-url", help="where to deliver webhooks (Patchwarden's URL)")
    parser.add_argument(
        "--repo",
        type=_repo_spec,
        action="append",
        default=[],
        metavar="OWNER/NAME[=DIR]",
        help="a repository, from DIR (a directory or git work tree) or a README commit",
    )
    parser.add_argument(
        "--user",
        type=_user_spec,
        action="append",
        default=[],
        metavar="OWNER/NAME:LOGIN:ROLE",
        help="a collaborator (role: admin, maintain, write, triage, read)",
    )
    parser.add_argument("--installation", type=int, default=1, help="installation id")
    parser.add_argument(
        "--require-check",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "COMMAND"),
        help="a required check run on every push, e.g. tests 'python -m pytest -q'",
    )
    return parser


def _populate(forge: LocalForge, args: argparse.Namespace) -> str | None:
    """Repositories, users and checks from the command line; what was wrong, or None."""
    for name, source in args.repo:
        try:
            forge.add_repo(name, installation_id=args.installation, source=source)
        except (ValueError, PatchwardenError) as exc:
            return f"--repo {name}: {exc}"
    for repo, login, role in args.user:
        if repo not in forge.repos:
            return f"--user {repo}:{login}: no --repo {repo}"
        try:
            forge.add_user(repo, login, role)
        except ValueError as exc:
            return f"--user {repo}:{login}:{role}: {exc}"
    for name, command in args.require_check:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            return f"--require-check {name}: {exc} in {command!r}"
        if not argv:
            return f"--require-check {name}: the command is empty"
        for repo in forge.repos:
            forge.require_check(repo, name, argv)
    return None


async def serve(args: argparse.Namespace) -> int:
    from app.config import load_settings
    from app.localforge.forge_server import LocalForge

    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    private = settings.app_private_key()
    if settings.app_id is None or private is None:
        print(
            "error: set PATCHWARDEN_APP_ID and PATCHWARDEN_PRIVATE_KEY_PATH (the App's key; "
            "`patchwarden manifest --help` explains how to get one) — the forge checks the "
            "App's JWTs with its public key",
            file=sys.stderr,
        )
        return 2
    secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else None
    forge = LocalForge(
        app_id=settings.app_id,
        app_public_key=public_key_of(private),
        webhook_url=args.webhook_url,
        webhook_secret=secret,
    )
    problem = _populate(forge, args)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        await forge.stop()  # removes the repositories made so far
        return 2
    url = await forge.start(args.host, args.port)
    print(f"LocalForge on {url} (view: {url}/), API base for Patchwarden: {url}")
    print(f"webhooks: {args.webhook_url or 'not delivered (no --webhook-url)'}")
    import asyncio

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await forge.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    import asyncio

    return asyncio.run(serve(build_parser().parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
