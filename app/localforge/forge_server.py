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
import functools
import shutil

from aiohttp import web

from app.localforge.http import HTTPFront
from app.localforge.render import Renderer
from app.localforge.world import World
from app.words import plural


class LocalForge(World):
    """GitHub with real git, in one process. :meth:`start` it; point Patchwarden at :attr:`url`.

    A :class:`~app.localforge.world.World` (its parts: the state, the outbox of
    webhooks, CI, GitHub's rules, the security alerts) with an HTTP front
    (:mod:`~app.localforge.http`: REST and git in), started and stopped here."""

    _runner: web.AppRunner | None = None

    @functools.cached_property
    def http(self) -> HTTPFront:
        return HTTPFront(self)

    # -- lifecycle ----------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound_port = self._runner.addresses[0][1]  # the port the OS chose for port 0
        state = self.state
        state.url = f"http://{host}:{bound_port}"
        state.render = Renderer(
            base_url=state.url,
            app_id=state.app_id,
            app_slug=state.app_slug,
            app_created_at=state.born,
        )
        self.hooks.start()
        state.stopping.clear()
        return state.url

    async def stop(self) -> None:
        self.state.stopping.set()
        await self.ci.stop()
        await self.hooks.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.state.own_root:
            shutil.rmtree(self.state.root, ignore_errors=True)

    async def settle(self, within: float = 60.0) -> None:
        """Wait until every CI run has finished and every queued delivery was made."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not self.idle:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(
                    f"forge still busy: {plural(len(self.ci.runs), 'CI run')}, "
                    f"{plural(self.hooks.in_flight, 'delivery', 'deliveries')}"
                )
            if self.ci.runs:
                await asyncio.wait(list(self.ci.runs), timeout=remaining)
            elif self.hooks.in_flight:
                await self.hooks.flush(within=remaining)
            else:
                await asyncio.sleep(0.01)

    @property
    def idle(self) -> bool:
        """No CI run going, no delivery waiting, no push being received."""
        return not self.ci.runs and self.hooks.in_flight == 0 and self.http.pushing == 0

    def app(self) -> web.Application:
        app = web.Application(client_max_size=200 * 1024**2)
        app.router.add_route("*", "/{tail:.*}", self.http.entry)
        return app
