"""A second worker process of one deployment, for the rate-limit test that needs two
(tests/github/test_github_client.py): it builds its own App on the same store file and
the same forge, mints its token, says ``ready``, and on ``go`` (a line on stdin) waits
one store-reading interval and posts a reaction; it prints when it sent the request and
how many of its requests its gate held.

Run: ``python -m tests.github.second_process FORGE_URL KEY_FILE DB_FILE COMMENT_ID``
(the private key is read from a file, never taken from argv).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import aiohttp

from app.github.client import SHARED_CHECK_SECONDS, GitHubApp
from app.store import store_for_url
from tests.conftest import APP_ID, INSTALLATION, REPO


async def main(url: str, private_key: str, db_file: str, comment_id: int) -> None:
    store = store_for_url(f"sqlite:///{db_file}")
    await store.open()
    owner, name = REPO.split("/")
    try:
        async with aiohttp.ClientSession() as session:
            app = GitHubApp(
                app_id=APP_ID,
                private_key=private_key,
                api_url=url,
                session=session,
                shared=store.repos,
            )
            gh = app.installation(INSTALLATION)
            await gh.getitem(f"/repos/{owner}/{name}/collaborators/alice/permission")
            print("ready", flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            await asyncio.sleep(SHARED_CHECK_SECONDS)  # the gate reads the store this often
            asked = time.time()
            await gh.post(
                f"/repos/{owner}/{name}/issues/comments/{comment_id}/reactions",
                data={"content": "eyes"},
            )
            held = app.gates[INSTALLATION].held
            print(json.dumps({"asked": asked, "held": held}), flush=True)
    finally:
        await store.close()


if __name__ == "__main__":
    key = Path(sys.argv[2]).read_text()
    asyncio.run(main(sys.argv[1], key, sys.argv[3], int(sys.argv[4])))
