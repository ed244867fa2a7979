"""`patchwarden demo` — what `make demo` runs — tells the whole story and exits 0.

It runs as a user would run it: the installed console script in a fresh process, with
nothing but PATH from the environment (no PATCHWARDEN_* settings, so the lint fixer).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap sessions"),
]

STEPS = [
    "1. octo-org/widgets",
    "2. carol opens issue #1",
    "3. Patchwarden opened #2",
    "Patchwarden risk",  # the body's verdict line, shown in the terminal
    "Fixes #1",
    "4. #2 merged itself",
    "its check run's Details link, the audit page: http://127.0.0.1:",
    "issue #1 is closed by the merge",
    "5. `smoke` runs on main after the merge and fails",
    "6. the canary bisected main, blamed the merge of #2, and opened #3, its revert",
    "#3 merged; util.py imports os again",
    "7. the dashboard issue #4 sums it up for maintainers",
    "| reverted after merging | 100 % (1) |",
    "Every step happened.",
    "patchwarden demo --keep",  # how to look at the pages afterwards
]


def _demo(tmp_path: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``patchwarden demo ARGS`` as a user runs it: the console script, PATH, HOME, LANG."""
    script = Path(sys.executable).parent / "patchwarden"
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8"}
    return subprocess.run(
        [str(script), "demo", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_demo_tells_the_whole_story(tmp_path: Path) -> None:
    done = _demo(tmp_path, home=tmp_path)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "Open http://127.0.0.1:" in out  # the forge's HTML view, printed first
    positions = [out.find(step) for step in STEPS]
    assert all(p >= 0 for p in positions), [
        s for s, p in zip(STEPS, positions, strict=True) if p < 0
    ]
    assert positions == sorted(positions), "the story's steps came out of order"
    # outcomes: 3 jobs; 1 change PR, merged by itself, then reverted (the revert PR that
    # merged is not a merged change): accepted 100%, reverted 100%
    [row] = [line for line in out.splitlines() if line.strip().startswith("octo-org/widgets ")]
    assert row.split()[1:9] == ["3", "1", "1", "1", "0", "1", "0", "100%"]
    assert row.split()[9] == "100%"


def test_the_kept_demo_pages_read_like_github(tmp_path: Path) -> None:
    """``demo --keep``: the issue, the pull request and the dashboard as a person sees them
    in a browser: Markdown rendered, details folded, no raw tags or HTML comments, and
    the references (#N, shas, the check run's Details) are links."""
    from tests.localforge.test_forge_view import Parsed

    script = Path(sys.executable).parent / "patchwarden"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    env["TMPDIR"] = str(tmp_path)
    with subprocess.Popen(
        [str(script), "demo", "--keep"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as demo:
        assert demo.stdout is not None
        lines = []
        for line in demo.stdout:
            lines.append(line)
            if line.startswith("--keep: the forge stays up at"):
                break
        out = "".join(lines)
        found = re.search(r"--keep: the forge stays up at (http://\S+)/octo-org/widgets", out)
        assert found, out[-3000:]
        forge = found[1]

        def shown(path: str) -> Parsed:
            with urllib.request.urlopen(forge + path, timeout=10) as answer:  # noqa: S310
                return Parsed(answer.read().decode())

        issue, pull, dashboard = (
            shown(f"/octo-org/widgets/{p}") for p in ("issues/1", "pull/2", "issues/4")
        )
        demo.send_signal(signal.SIGINT)
        try:
            rest = demo.communicate(timeout=60)[0]
        except subprocess.TimeoutExpired:
            demo.kill()  # a failure, not a suite that hangs for good
            raise
    assert demo.returncode == 0, rest[-2000:]
    assert "kept " + str(tmp_path) in rest
    for page in (issue, pull, dashboard):
        for raw in ("<details", "<summary", "<!--", "patchwarden:", "|---", "**"):
            assert raw not in page.text, (raw, page.text[:2000])
    pull_tags = [tag for tag, _ in pull.tags]
    assert "details" in pull_tags  # the evidence is folded
    assert "summary" in pull_tags
    assert "/octo-org/widgets/issues/1" in pull.hrefs()  # "Fixes #1"
    assert any("/audit/octo-org/widgets/pull/2?sig=" in h for h in pull.hrefs())  # Details
    assert any("/octo-org/widgets/commit/" in h for h in pull.hrefs())  # "Merged as <sha>"
    assert "/octo-org/widgets/pull/2" in issue.hrefs()  # "Opened #2"
    assert "table" in [tag for tag, _ in dashboard.tags]
    assert "reverted after merging 100 % (1)" in dashboard.text


JS_STEPS = [
    "1. octo-org/gadgets: its lock holds semver 7.5.1",
    "2. Dependabot raises alert #1: semver before 7.5.2 (GHSA-c2qf-rxjj-qqgw)",
    "3. Patchwarden opened #1",
    "Patchwarden risk",
    "changes `semver ^7.5.1 → ^7.5.2`",
    "**Verified:** tests 1 passed → 1 passed",
    "4. alice approves #1",
    "#1 merged",
    "5. GitHub reads main's lock again: alert #1 is fixed",
    "6. the dashboard issue #2 sums it up for maintainers",
    "Every step happened.",
]


@pytest.mark.realworld
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_the_javascript_demo_answers_a_dependabot_alert_and_closes_it(tmp_path: Path) -> None:
    """`patchwarden demo --js`: npm's own lock of the sample (the registry reached with
    the user's npm configuration), a real advisory, the verified bump, the alert fixed."""
    done = _demo(tmp_path, "--js", home=Path.home())  # the user's npm configuration
    out = done.stdout
    if done.returncode != 0 and "npm could not lock" in out:
        pytest.skip("the npm registry could not be reached")
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    positions = [out.find(step) for step in JS_STEPS]
    assert all(p >= 0 for p in positions), [
        s for s, p in zip(JS_STEPS, positions, strict=True) if p < 0
    ]
    assert positions == sorted(positions), "the story's steps came out of order"
