"""``patchwarden demo``: the story so far, offline, on the local GitHub double.

It starts the double and the real server on loopback, then plays what a maintainer
sees: a reader's fix request refused politely, a maintainer's request heard (👀) and
queued as a durable job, a redelivery deduplicated, and the audit trail of it all.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import tempfile
import time
from pathlib import Path

from aiohttp import web

from app.config import load_settings
from app.keys import generate_app_key
from app.localforge import LocalForge
from app.server import RUNTIME, create_app
from app.store import AuditQuery, JobState

REPO = "octo-org/widgets"


def _say(text: str) -> None:
    print(text, flush=True)


async def _demo(folder: Path) -> int:
    private, public = generate_app_key()
    secret = secrets.token_hex(16)
    forge = LocalForge(app_id=4242, app_public_key=public, webhook_secret=secret)
    await forge.start()
    forge.add_repo(REPO, installation_id=7)
    forge.add_user(REPO, "alice", "maintain")
    forge.add_user(REPO, "bob", "read")
    settings = load_settings(
        app_id=4242,
        private_key=private,
        webhook_secret=secret,
        github_api_url=forge.url,
        database_url=f"sqlite:///{folder / 'patchwarden.db'}",
        poll_seconds=0.2,
    )
    app = create_app(settings)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    forge.webhook_url = f"http://127.0.0.1:{port}/webhooks/github"
    store = app[RUNTIME].store
    try:
        _say(f"GitHub double on {forge.url}; Patchwarden on http://127.0.0.1:{port}")
        _say(f"state in {folder}\n")
        issue = forge.open_issue(REPO, "Parser crashes on empty input", author="bob")
        _say(f"1. bob (read access) opens #{issue.number} and comments '@patchwarden fix this'")
        await forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="bob")
        _say("2. alice (maintain) comments '@patchwarden fix this' with an instruction")
        comment = await forge.post_comment(
            REPO,
            issue.number,
            "@patchwarden fix this\n\nGuard the empty string before tokenising.",
            author="alice",
        )
        _say("3. GitHub redelivers alice's comment (same X-GitHub-Delivery)")
        first = forge.deliveries[-1].id
        payload = forge.comment_event(REPO, issue.number, comment)
        await forge.send("issue_comment", payload, delivery_id=first)

        await forge.settle()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            jobs = await store.list_jobs(kind="delivery")
            if jobs and all(j.state == JobState.SUCCEEDED for j in jobs):
                break
            await asyncio.sleep(0.1)
        else:
            _say("the events did not finish routing in 20 s; see the audit log below")

        _say("\nOn GitHub:")
        await forge.settle()
        for c in forge.comments(REPO, issue.number):
            first_line = c.body.splitlines()[0]
            reactions = forge.comment_reactions(c.id)
            mark = f"  [{' '.join(reactions)}]" if reactions else ""
            _say(f"  {c.user.login}: {first_line[:110]}{mark}")
        answers = [d.status for d in forge.deliveries]
        _say(f"  deliveries sent: {len(forge.deliveries)}, answered {answers}")

        _say("\nJobs in the store:")
        for job in await store.list_jobs():
            _say(f"  #{job.id} {job.kind:<8} {job.state:<9} {job.key}")
        _say("\nAudit log:")
        for e in await store.query_audit(AuditQuery()):
            _say(f"  {e.action:<26} {e.actor or '-':<18} {e.reason or ''}")
        fix_jobs = await store.list_jobs(kind="fix")
        _say(
            f"\n{len(fix_jobs)} fix job queued. It waits, durable, in the store until "
            "PR publishing (the next milestone, docs/roadmap.md) lets the worker turn its "
            "session into a pull request. Sessions, fixers and the risk score already run "
            "locally: patchwarden run --repo PATH --task TEXT, patchwarden score."
        )
        return 0 if len(fix_jobs) == 1 else 1
    finally:
        await runner.cleanup()
        await forge.stop()


def run_demo(*, keep: bool = False) -> int:
    folder = Path(tempfile.mkdtemp(prefix="patchwarden-demo-"))
    try:
        return asyncio.run(_demo(folder))
    finally:
        if keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
