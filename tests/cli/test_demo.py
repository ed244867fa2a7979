"""`patchwarden demo` — what `make demo` runs — tells the whole story and exits 0.

It runs as a user would run it: the installed console script in a fresh process, with
nothing but PATH from the environment (no PATCHWARDEN_* settings, so the lint fixer).
"""

from __future__ import annotations

import os
import subprocess
import sys
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
]


def test_the_demo_tells_the_whole_story(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "patchwarden"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    done = subprocess.run(
        [str(script), "demo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
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
