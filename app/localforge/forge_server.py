"""LocalForge: a local double of GitHub for tests and the offline demo.

It is honest where Patchwarden depends on GitHub's behaviour:

* **REST**: the operations Patchwarden calls (``rest.py``), each request checked
  against GitHub's OpenAPI description (unknown path → 404, missing or mistyped
  field → 422) and each answer against the response schema; App JWT auth and
  expiring installation tokens; rate-limit headers on every answer.
* **git**: every repository is a bare repository served over smart HTTP by
  ``git http-backend``, with the installation token as the password. A push moves
  branches and PR heads and sends ``push`` and ``pull_request`` (synchronize).
* **webhooks**: state changes are delivered as signed requests, one at a time, in
  order, shaped like GitHub's and checked against ``@octokit/webhooks-schemas``.
* **CI**: a repository can have required checks that the forge runs itself on
  every pushed head (``ci.py``), reported as check runs; merging waits for them.

Anything that breaks the contract is recorded in :attr:`LocalForge.violations`;
the test fixture fails the test that caused it. Tests and the demo drive the
forge through the Python API below (users act without HTTP, as people do on
github.com), and read its state directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil

from aiohttp import web

from app.localforge.http import HTTPFront
from app.localforge.render import Renderer
from app.words import plural


class LocalForge(HTTPFront):
    """GitHub with real git, in one process. :meth:`start` it; point Patchwarden at :attr:`url`.

    Its parts, each a layer over the one before: :mod:`~app.localforge.forge_base` (state),
    :mod:`~app.localforge.deliveries` (webhooks out), :mod:`~app.localforge.rules`
    (GitHub's rules), :mod:`~app.localforge.security` (Dependabot and code scanning
    alerts), :mod:`~app.localforge.world` (the test-facing API),
    :mod:`~app.localforge.http` (REST and git in)."""

    # -- lifecycle ----------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound_port = self._runner.addresses[0][1]  # the port the OS chose for port 0
        self.url = f"http://{host}:{bound_port}"
        self.render = Renderer(
            base_url=self.url,
            app_id=self.app_id,
            app_slug=self.app_slug,
            app_created_at=self._born,
        )
        self._outbox = asyncio.Queue()
        self._sender = asyncio.create_task(self._send_loop())
        self.stopping.clear()
        return self.url

    async def stop(self) -> None:
        self.stopping.set()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
            self._sender = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    async def settle(self, within: float = 60.0) -> None:
        """Wait until every CI run has finished and every queued delivery was made."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not self.idle:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(
                    f"forge still busy: {plural(len(self._tasks), 'CI run')}, "
                    f"{plural(self._in_flight, 'delivery', 'deliveries')}"
                )
            if self._tasks:
                await asyncio.wait(list(self._tasks), timeout=remaining)
            elif self._in_flight:
                await self.flush(within=remaining)
            else:
                await asyncio.sleep(0.01)

    @property
    def idle(self) -> bool:
        """No CI run going and no delivery waiting."""
        return not self._tasks and self._in_flight == 0 and self._pushing == 0

    def app(self) -> web.Application:
        app = web.Application(client_max_size=200 * 1024**2)
        app.router.add_route("*", "/{tail:.*}", self._entry)
        return app
