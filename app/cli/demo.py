"""``patchwarden demo``: the whole story, offline, on the local GitHub double.

It starts the double (LocalForge: REST, git over HTTP, signed webhooks, and a CI that
runs the repository's tests as a required check) and the real server with its workers
on loopback, with the embedded defaults: SQLite, the bubblewrap sandbox, the ``lint``
fixer (or the ``llm`` fixer when ``PATCHWARDEN_LLM_*`` is set). Then it plays:

1. a sample repository with a lint problem and a test suite, and the App installed;
2. an issue, and a maintainer's ``@patchwarden fix this``;
3. the pull request that appears, with its risk-scored body;
4. its auto-merge once the required check passes (the issue closes);
5. ``smoke``, a check that runs on the default branch after merges, failing on the
   merge: it used what the lint fix removed;
6. the canary bisecting, blaming Patchwarden's merge, and opening its revert, which
   merges itself.

It prints the forge's URL first: its HTML view shows the same story in a browser.
Exit 0 only when every step happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from app.cli import demo_js
from app.cli.demo_story import INSTALLATION, StepFailed, Story, pull_by
from app.config import Settings, load_settings
from app.localforge import LocalForge
from app.localforge.keys import generate_app_key
from app.runtime import Runtime
from app.server import RUNTIME, create_app
from app.store import Outcome
from app.store.outcomes import format_outcomes, summarise_outcomes

REPO = "octo-org/widgets"

# How the culprit finder reproduces the post-merge `smoke` check (docs/policy.md).
SMOKE_CONFIG = "revert:\n  checks:\n    smoke: python smoke.py\n"
# The sample repository: an unused import (ruff F401 fixes it), tests, a smoke script
# that runs on the default branch after merges (and, unknown to the tests, uses
# util.os), and a config that lets low-risk changes merge themselves.
SAMPLE: dict[str, str | bytes | None] = {
    "util.py": "import os\n\n\ndef greet(name):\n    return 'hello ' + name\n",
    "test_util.py": (
        "from util import greet\n\n\ndef test_greet():\n    assert greet('a') == 'hello a'\n"
    ),
    "smoke.py": "import util\n\nassert util.greet('x') and util.os.sep == '/'\n",
    "pytest.ini": "[pytest]\n",
    ".github/patchwarden.yml": (
        "# Low-risk changes with every check green merge themselves.\nautonomy: automerge\n"
        + SMOKE_CONFIG
    ),
}
SMOKE_COMMAND = [sys.executable, "smoke.py"]
# A person's later commit that relies on what the lint fix removed.
BREAKING = {
    "test_uses_os.py": (
        "import util\n\n\ndef test_util_exposes_os():\n    assert util.os.sep == '/'\n"
    )
}
TEST_COMMAND = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]


async def _play(forge: LocalForge, story: Story, outcomes: Callable[[], Any]) -> None:
    say = story.say
    await forge.push(REPO, SAMPLE, author="alice", message="A small library with a lint problem")
    forge.add_user(REPO, "alice", "maintain")
    forge.add_user(REPO, "carol", "write")
    forge.require_check(REPO, "tests", TEST_COMMAND)
    forge.post_merge_check(REPO, "smoke", SMOKE_COMMAND)
    say(f"1. {REPO}: util.py imports os and never uses it; `pytest` is a required check")
    say("   and `python smoke.py` runs on main after every merge (a post-merge check)")
    await forge.install(INSTALLATION, by="alice")
    say("   alice (maintain) installs the App")

    issue = forge.open_issue(REPO, "util.py imports os and never uses it", author="carol")
    say(f"2. carol opens issue #{issue.number}; alice comments '@patchwarden fix this'")
    await forge.post_comment(REPO, issue.number, "@patchwarden fix this", author="alice")

    pull = await story.until("a pull request", lambda: pull_by(forge, lambda p: True, REPO))
    body = await story.until(
        "its risk-scored body", lambda: forge.issue(REPO, pull.number).body or None
    )
    say(f"3. Patchwarden opened #{pull.number} from {pull.head}; the top of its body:")
    top, _, _ = body.partition("<details>")
    story.show(
        top.rstrip() + f"\n\n(details folded; all of it at {forge.url}/{REPO}/pull/{pull.number})"
    )
    await story.until("the auto-merge", lambda: pull.merged)
    say(f"4. #{pull.number} merged itself after `tests` passed on its head")
    say(f"   its check run's Details link, the audit page: {await _audit_link(forge, pull)}")
    await story.until(
        "the issue closing", lambda: forge.issue(REPO, issue.number).state == "closed"
    )
    say(f"   issue #{issue.number} is closed by the merge ('Fixes #{issue.number}')")

    say("5. `smoke` runs on main after the merge and fails: smoke.py used util.os")
    revert = await story.until(
        "the canary's revert", lambda: pull_by(forge, lambda p: p.number != pull.number, REPO)
    )
    say(
        f"6. the canary bisected main, blamed the merge of #{pull.number}, and opened "
        f"#{revert.number}, its revert"
    )
    await story.until("the revert merging", lambda: revert.merged)
    git = forge.repos[REPO].git
    tip = git.resolve("refs/heads/main") or ""
    util = git.entry(tip, "util.py")
    if util is None or b"import os" not in (util.content or b""):
        raise StepFailed("the revert did not bring util.py's import back")
    say(f"   #{revert.number} merged; util.py imports os again and `smoke` passes")
    await story.until("the last checks", lambda: forge.idle, within=60)
    # The forge knows of a merge before Patchwarden has written it down: wait for both.
    deadline = asyncio.get_running_loop().time() + 30
    while sum(1 for o in await outcomes() if o.merged_at) < 2:
        if asyncio.get_running_loop().time() > deadline:
            raise StepFailed("the two merges were never recorded as outcomes")
        await asyncio.sleep(0.05)
    story.narrate()
    rows = summarise_outcomes(await outcomes())
    say("Outcomes (patchwarden audit --outcomes):")
    story.show(format_outcomes(rows), indent="    ")


async def _audit_link(forge: LocalForge, pull: Any, repo: str = REPO) -> str:
    """The ``patchwarden`` check run's details link on the pull request's head, once the
    page it opens answers."""
    import aiohttp

    runs = [r for r in forge.check_runs(repo, pull.head_sha) if r.name == "patchwarden"]
    link = runs[-1].details_url if runs else None
    if not link:
        raise StepFailed("the check run has no Details link to the audit page")
    async with aiohttp.ClientSession() as session, session.get(link) as page:
        if page.status != 200 or "policy.decided" not in await page.text():
            raise StepFailed(f"the audit page {link} answered {page.status}")
    return link


CLOSES = (
    "The forge's pages close with the demo; to look around them afterwards:"
    " patchwarden demo --keep (or make demo ARGS=--keep)."
)


def _settings(folder: Path, private: str, secret: str, forge_url: str, port: int) -> Settings:
    return load_settings(
        app_id=4242,
        private_key=private,
        webhook_secret=secret,
        github_api_url=forge_url,
        database_url=f"sqlite:///{folder / 'patchwarden.db'}",
        cache_dir=folder / "cache",
        poll_seconds=0.2,
        # The dashboard issue is brought up to date once, at the end of the story (so
        # the story's issue and pull request numbers stay as the README tells them).
        dashboard_seconds=3600,
        public_url=f"http://127.0.0.1:{port}",
    )


async def _demo(folder: Path, *, keep: bool, js: bool = False) -> int:
    repo = demo_js.JS_REPO if js else REPO
    play = demo_js.play_js if js else _play
    started = time.monotonic()
    private, public = generate_app_key()
    secret = secrets.token_hex(16)
    forge = LocalForge(app_id=4242, app_public_key=public, webhook_secret=secret)
    await forge.start()
    forge.add_repo(repo, installation_id=INSTALLATION)
    # The port first, so the settings can say where the server is (its audit pages).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    settings = _settings(folder, private, secret, forge.url, port)
    app = create_app(settings)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    forge.hooks.webhook_url = f"http://127.0.0.1:{port}/webhooks/github"
    store = app[RUNTIME].store
    story = Story(forge, started, repo)
    fixer = "dependency" if js else "llm" if settings.llm_configured else "lint"
    try:
        print(f"Open {forge.url}/{repo} to watch it in a browser (the GitHub double).")
        print(f"Patchwarden on http://127.0.0.1:{port}; fixer: {fixer}; state in {folder}\n")

        async def outcomes() -> list[Outcome]:
            return await store.learning.find_outcomes(repo=repo)

        try:
            await play(forge, story, outcomes)
            await _dashboard(forge, story, app[RUNTIME])
        except StepFailed as exc:
            story.say(f"FAILED: {exc}")
            print(
                "The audit log says why: patchwarden audit (PATCHWARDEN_DATABASE_URL=sqlite:///"
                f"{folder / 'patchwarden.db'})",
                file=sys.stderr,
            )
            return 1
        story.say("Every step happened.")
        if not keep:
            print(f"\n{CLOSES}")
        if keep:
            print(
                f"\n--keep: the forge stays up at {forge.url}/{repo}; Ctrl-C to stop.", flush=True
            )
            await _until_stopped()
        return 0
    finally:
        await runner.cleanup()
        await forge.stop()


async def _until_stopped() -> None:
    """Wait for Ctrl-C or SIGTERM, whatever this process inherited: started in the
    background by a shell without job control, SIGINT comes in ignored, and the forge
    would stay up for good."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


async def _dashboard(forge: LocalForge, story: Story, runtime: Runtime) -> None:
    """The last step: the repository's dashboard issue, as a maintainer finds it."""
    from app.contract.kinds import DashboardJob

    job = DashboardJob(repo=story.repo, window=0).new_job(installation_id=INSTALLATION)
    await runtime.store.queue.enqueue(job)
    runtime.pool.wake(DashboardJob.queue)

    async def opened() -> int | None:
        return (await runtime.store.repos.dashboard_issue(story.repo))[0]

    deadline = asyncio.get_running_loop().time() + 30
    while (number := await opened()) is None:
        if asyncio.get_running_loop().time() > deadline:
            raise StepFailed("the dashboard issue was never opened")
        await asyncio.sleep(0.05)
    body = forge.issue(story.repo, number).body or ""
    step = story.last + 1
    story.say(f"{step}. the dashboard issue #{number} sums it up for maintainers; its last lines:")
    story.show("\n".join(body.rstrip().splitlines()[-9:]), indent="    ")


def run_demo(*, keep: bool = False, js: bool = False) -> int:
    folder = Path(tempfile.mkdtemp(prefix="patchwarden-demo-"))
    try:
        return asyncio.run(_demo(folder, keep=keep, js=js))
    except KeyboardInterrupt:
        return 0
    finally:
        if keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
