"""``patchwarden demo --js``: the security-update story on an npm project.

The same double and server as ``patchwarden demo``; the story:

1. ``octo-org/gadgets``, a small JavaScript package whose lock holds semver 7.5.1 (its
   ``package.json`` and ``package-lock.json`` as ``npm install semver@7.5.1`` leaves
   them: npm reaches the registry for that, here, before the story starts), tested by
   ``node --test``;
2. GitHub's Dependabot raises GHSA-c2qf-rxjj-qqgw (semver before 7.5.2);
3. Patchwarden's dependency fixer raises the range in its style, npm moves the lock in
   the setup phase, the patched tree gets its own setup and the tests run on both
   trees, counted one by one; the pull request says what moved;
4. a maintainer approves it and it merges;
5. GitHub reads the lock on the default branch again and marks the alert fixed.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.cli.demo_story import INSTALLATION, StepFailed, Story, pull_by
from app.localforge import LocalForge

JS_REPO = "octo-org/gadgets"
PACKAGE = "semver"
VULNERABLE = "7.5.1"
FIXED = "7.5.2"
TESTS = """\
const test = require('node:test');
const assert = require('node:assert');
const { newer } = require('../index.js');

test('compares versions', () => assert.strictEqual(newer('1.2.3', '1.10.0'), '1.10.0'));
"""
INDEX = """\
const semver = require('semver');

exports.newer = (a, b) => (semver.gt(a, b) ? a : b);
"""


async def sample() -> dict[str, str | bytes | None]:
    """The package's files, its lock made by npm as a user's install leaves it."""
    manifest = {
        "name": "gadgets",
        "version": "1.0.0",
        "scripts": {"test": "node --test"},
    }
    with tempfile.TemporaryDirectory(prefix="patchwarden-demo-js-") as folder:
        root = Path(folder)
        (root / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        proc = await asyncio.create_subprocess_exec(
            "npm", "install", "--package-lock-only", "--ignore-scripts", "--no-audit",
            "--no-fund", f"{PACKAGE}@{VULNERABLE}",
            cwd=root, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await proc.communicate()
        if proc.returncode != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-3:]
            raise StepFailed(
                "npm could not lock the sample's dependency (the JavaScript story needs "
                f"the npm registry for that): {' '.join(tail)}"
            )
        files: dict[str, str | bytes | None] = {
            name: (root / name).read_text() for name in ("package.json", "package-lock.json")
        }
    files["index.js"] = INDEX
    files["test/index.test.js"] = TESTS
    return files


async def play_js(forge: LocalForge, story: Story, outcomes: Callable[[], Any]) -> None:
    """The story (this module's docstring), told as it happens."""
    say = story.say
    story.last = 5
    files = await sample()
    await forge.push(JS_REPO, files, author="alice", message="A small package that uses semver")
    forge.add_user(JS_REPO, "alice", "maintain")
    say(f"1. {JS_REPO}: its lock holds {PACKAGE} {VULNERABLE}; `node --test` runs its tests")
    await forge.install(INSTALLATION, by="alice")
    say("   alice (maintain) installs the App")
    alert = await forge.security.raise_dependabot_alert(
        JS_REPO,
        package=PACKAGE,
        vulnerable_range=f"< {FIXED}",
        first_patched=FIXED,
        severity="medium",
        ecosystem="npm",
        manifest="package-lock.json",
        ghsa="GHSA-c2qf-rxjj-qqgw",
        cve="CVE-2022-25883",
        summary="semver vulnerable to Regular Expression Denial of Service",
    )
    ghsa = alert.facts["ghsa"]
    say(f"2. Dependabot raises alert #{alert.number}: {PACKAGE} before {FIXED} ({ghsa})")
    pull = await story.until(
        "a pull request", lambda: pull_by(forge, lambda p: True, JS_REPO), within=600
    )
    body = await story.until(
        "its risk-scored body", lambda: forge.issue(JS_REPO, pull.number).body or None
    )
    say(f"3. Patchwarden opened #{pull.number} from {pull.head}; the top of its body:")
    top, _, _ = body.partition("<details>")
    story.show(top.rstrip())
    await forge.approve(JS_REPO, pull.number, user="alice")
    say(f"4. alice approves #{pull.number} (security updates wait for a maintainer by default)")
    await story.until("the merge", lambda: pull.merged)
    say(f"   #{pull.number} merged")
    await story.until("the alert closing", lambda: alert.state == "fixed", within=60)
    git = forge.repos[JS_REPO].git
    tip = git.resolve("refs/heads/main") or ""
    lock = git.entry(tip, "package-lock.json")
    if lock is None or f'"version": "{VULNERABLE}"' in (lock.content or b"").decode():
        raise StepFailed("the merged lock still holds the vulnerable version")
    say(f"5. GitHub reads main's lock again: alert #{alert.number} is fixed")
    await story.until("the last checks", lambda: forge.idle, within=60)
    story.narrate()
