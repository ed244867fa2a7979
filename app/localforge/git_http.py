"""A bare repository served over git's smart HTTP protocol through ``git http-backend``
(CGI; https://git-scm.com/docs/git-http-backend), with the environment of
:func:`~app.localforge.bare_repo.git_env` and a timeout."""

from __future__ import annotations

import asyncio
from asyncio.subprocess import PIPE

from aiohttp import StreamReader, web

from app.localforge.bare_repo import BareRepo, git_env

BACKEND_TIMEOUT = 120.0  # seconds one git http-backend request may take


def _cgi_env(
    request: web.Request, repo: BareRepo, path_info: str, remote_user: str, first: bytes
) -> dict[str, str]:
    """The CGI environment of ``git http-backend`` for this request (``first``: the
    body's first bytes, which say whether it is still compressed)."""
    env = git_env(repo.path) | {
        "GIT_PROJECT_ROOT": str(repo.path.parent),
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": f"/{repo.path.name}{path_info}",
        "REQUEST_METHOD": request.method,
        "QUERY_STRING": request.query_string,
        "CONTENT_TYPE": request.headers.get("Content-Type", ""),
        "REMOTE_USER": remote_user,
        "REMOTE_ADDR": request.remote or "",
    }
    encoding = request.headers.get("Content-Encoding")
    if encoding and first.startswith(b"\x1f\x8b"):  # aiohttp left it compressed: git inflates
        env["HTTP_CONTENT_ENCODING"] = encoding
    if request.content_length is not None and (not encoding or "HTTP_CONTENT_ENCODING" in env):
        env["CONTENT_LENGTH"] = str(request.content_length)  # else git reads to EOF
    if protocol := request.headers.get("Git-Protocol"):
        env["HTTP_GIT_PROTOCOL"] = protocol
    return env


async def http_backend(
    request: web.Request, repo: BareRepo, *, path_info: str, remote_user: str
) -> web.StreamResponse:
    """Answer one smart-HTTP request for repo by running ``git http-backend`` as a CGI.

    The caller has authenticated the request. aiohttp inflates a gzip request body unless
    its server runs with ``auto_decompress=False``; the body is sniffed so both work.
    """
    if not path_info.startswith("/") or ".." in path_info.split("/"):
        return web.Response(status=404, text="not found\n")
    body, first = request.content, b""
    while len(first) < 2 and (chunk := await body.read(2 - len(first))):
        first += chunk
    env = _cgi_env(request, repo, path_info, remote_user, first)
    proc = await asyncio.create_subprocess_exec(
        "git", "http-backend", env=env, stdin=PIPE, stdout=PIPE, stderr=PIPE
    )
    stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr
    assert stdin is not None
    assert stdout is not None
    assert stderr is not None
    response: web.StreamResponse | None = None
    answered = False
    try:
        async with asyncio.timeout(BACKEND_TIMEOUT), asyncio.TaskGroup() as tasks:
            tasks.create_task(_feed(first, body, stdin))
            errors = tasks.create_task(_drain(stderr, limit=1 << 16))
            head = await _cgi_headers(stdout)
            if head is None:
                await proc.wait()
                detail = (await errors).decode(errors="replace")
                return web.Response(status=500, text=f"git http-backend failed\n{detail}")
            response = web.StreamResponse(status=head[0], headers=head[1])
            await response.prepare(request)
            while chunk := await stdout.read(1 << 16):
                await response.write(chunk)
            await response.write_eof()
            answered = True
            return response
    except TimeoutError:
        if response is None:
            return web.Response(status=504, text="git http-backend timed out\n")
        raise
    finally:
        await _reap(proc, kill=not answered)


async def _reap(proc: asyncio.subprocess.Process, *, kill: bool) -> None:
    """Wait for the backend to exit; kill it first only when the answer was not given.

    A backend that has answered is exiting: killing it now would reap it in
    ``Popen.send_signal`` before asyncio's child watcher does, and the watcher would
    log "Unknown child process pid N, will report returncode 255".
    """
    if kill and proc.returncode is None:
        proc.kill()
    try:
        await asyncio.wait_for(proc.wait(), timeout=BACKEND_TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()


async def _feed(first: bytes, body: StreamReader, stdin: asyncio.StreamWriter) -> None:
    """Copy the request body to the backend, then close its stdin."""
    try:
        chunk = first
        while chunk:
            stdin.write(chunk)
            await stdin.drain()
            chunk = await body.read(1 << 16)
    except ConnectionError:
        pass  # the backend stopped reading; its answer says why
    finally:
        stdin.close()


async def _drain(stream: asyncio.StreamReader, *, limit: int) -> bytes:
    """Read stream to EOF (so the writer never blocks), keeping the first limit bytes."""
    kept = b""
    while chunk := await stream.read(1 << 16):
        kept += chunk[: max(0, limit - len(kept))]
    return kept


async def _cgi_headers(stdout: asyncio.StreamReader) -> tuple[int, dict[str, str]] | None:
    """The status and headers of a CGI answer; None when the backend wrote nothing."""
    headers: dict[str, str] = {}
    while len(headers) < 100 and (line := (await stdout.readline()).rstrip(b"\r\n")):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip()] = value.strip()
    if not headers:
        return None
    return int(headers.pop("Status", "200").split()[0]), headers
