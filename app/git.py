"""The git room: how Patchwarden runs git on the host, and where a repository comes from.

Host-side git never executes anything a repository provides (``HARDENING``: no hooks,
no fsmonitor, no ``ext::`` transport) and reads no system or global config. Its whole
environment is built here (:func:`git_env`): nothing inherited but ``PATH``, and a
token for fetching or pushing only as an ``http.<origin>.extraHeader`` through
``GIT_CONFIG_COUNT`` — never in a URL, argv or a log line. Sessions (the workspace),
publishing, scoring, ``patchwarden run`` and the fixers all run git through
:func:`run_git`.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from app.errors import PatchwardenError
from app.redact import redact

GIT_TIMEOUT = 600.0


@dataclass(frozen=True)
class Author:
    """Who Patchwarden's commits are by."""

    name: str
    email: str


def bot_author(slug: str, user_id: int | None) -> Author:
    """The App's bot user as a commit author: ``<id>+<slug>[bot]@users.noreply.github.com``
    is the address GitHub links to the App (its avatar and name on the commit). Without
    the id (no GitHub to ask: ``patchwarden run``), the address without it."""
    login = f"{slug}[bot]"
    prefix = f"{user_id}+" if user_id else ""
    return Author(login, f"{prefix}{login}@users.noreply.github.com")


LOCAL_AUTHOR = bot_author("patchwarden", None)
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+\Z")
# Options that keep host-side git from executing anything the repository provides.
HARDENING = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "safe.directory=*",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "protocol.ext.allow=never",
)


class GitError(PatchwardenError):
    """A git step failed; the message names it and quotes git (credentials masked)."""


@dataclass(frozen=True)
class Remote:
    """Where a repository comes from. ``token`` goes into git's environment only."""

    repo: str  # owner/name, names the mirror
    url: str  # https URL, or a local path / file URL (``patchwarden run``)
    token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not _REPO.match(self.repo) or ".." in self.repo:
            raise GitError(f"repository must be owner/name, not {self.repo!r}")
        parts = urlsplit(self.url)
        if parts.username or parts.password:
            raise GitError(
                "the remote URL carries credentials; pass the token separately "
                "(it goes into git's environment, never into a URL)"
            )


def git_env(home: Path, *, remote: Remote | None = None) -> dict[str, str]:
    """git's whole environment: nothing inherited but PATH; auth as an extra header."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_ATTR_NOSYSTEM": "1",
        "LC_ALL": "C",
    }
    if remote is not None and remote.token:
        parts = urlsplit(remote.url)
        if parts.scheme not in ("http", "https"):
            raise GitError(f"a token only goes to an http(s) remote, not {remote.url!r}")
        basic = base64.b64encode(f"x-access-token:{remote.token}".encode()).decode()
        # https://git-scm.com/docs/git-config#Documentation/git-config.txt-httpextraHeader,
        # scoped to the remote's origin; GIT_CONFIG_COUNT keeps it out of argv.
        env["GIT_CONFIG_COUNT"] = "1"
        env["GIT_CONFIG_KEY_0"] = f"http.{parts.scheme}://{parts.netloc}/.extraHeader"
        env["GIT_CONFIG_VALUE_0"] = f"Authorization: Basic {basic}"
    return env


async def run_git(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    timeout: float = GIT_TIMEOUT,  # noqa: ASYNC109 - subprocess.run's own timeout
    check: bool = True,
    secrets: Sequence[str] = (),
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run host-side git (in a thread, so the event loop never waits on it)."""
    argv = ["git", *HARDENING, *args]

    def call() -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(  # noqa: S603 - argv list, no shell
                argv,
                env=dict(env),
                cwd=cwd,
                capture_output=True,
                input=stdin,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise GitError(f"`git {shlex.join(args)}` took over {timeout:.0f}s") from None

    done = await asyncio.to_thread(call)
    if check and done.returncode != 0:
        err = redact(done.stderr.decode("utf-8", "replace").strip(), known=secrets)
        raise GitError(f"`git {shlex.join(args)}` failed: {err[-2000:] or '(no output)'}")
    return done
