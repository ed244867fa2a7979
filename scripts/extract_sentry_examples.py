"""Extract Sentry's documented webhook payloads into ``tests/fixtures/sentry/``.

Usage::

    git clone https://github.com/getsentry/sentry-docs /tmp/sentry-docs
    python scripts/extract_sentry_examples.py /tmp/sentry-docs

Sentry documents each integration-platform webhook with one example payload, a JSON
block in the page's Markdown (``docs/organization/integrations/integration-platform/
webhooks/*.mdx``). This script takes the first ``json`` block of each page in ``PAGES``
whose ``action`` is the one wanted, checks that it parses, and writes it unchanged to
``tests/fixtures/sentry/<resource>.json``, with ``index.json`` saying where each came
from: the repository, the page and that page's last commit in the checkout.

The fixtures in this repository came from these pages of ``getsentry/sentry-docs``
(which has no releases: its commit is its version), under ``FOLDER``:

- ``event_alert.json``: ``issue-alerts.mdx`` (resource ``event_alert``, action
  ``triggered``) at 2e59ab6ba685ba182f3d75d377589c88d1df5197;
- ``error.json``: ``errors.mdx`` (``error``, ``created``) at
  d750f1eb4ee0de7e3b479c73b7da9deec3cf87ed;
- ``issue.json``: ``issues.mdx`` (``issue``, ``created``) at
  158d8cdfd4b710bc47d6decd3088e4b5302dbe6d.

Stdlib only; git is run only to read the checkout's commit.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

REPOSITORY = "getsentry/sentry-docs"
FOLDER = "docs/organization/integrations/integration-platform/webhooks"
PAGES = {  # fixture -> (page, action)
    "event_alert.json": ("issue-alerts.mdx", "triggered"),
    "error.json": ("errors.mdx", "created"),
    "issue.json": ("issues.mdx", "created"),
}
OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "sentry"
_BLOCK = re.compile(r"```json\n(.*?)\n```", re.S)


def example(text: str, action: str) -> str:
    """The first JSON block of a page whose ``action`` is ``action``, as written."""
    for block in _BLOCK.findall(text):
        try:
            payload = json.loads(block)
        except ValueError:
            continue
        if isinstance(payload, dict) and payload.get("action") == action:
            return block + "\n"
    raise SystemExit(f"no JSON example with action {action!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", type=Path, help="a clone of github.com/getsentry/sentry-docs")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    index = {}
    for fixture, (page, action) in PAGES.items():
        # each page's own last commit: the version of that example
        commit = subprocess.run(
            ["git", "-C", str(args.checkout), "log", "-1", "--format=%H", "--", f"{FOLDER}/{page}"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
        text = (args.checkout / FOLDER / page).read_text(encoding="utf-8")
        (OUT / fixture).write_text(example(text, action), encoding="utf-8")
        index[fixture] = {"repository": REPOSITORY, "page": f"{FOLDER}/{page}", "commit": commit}
        print(f"{fixture}: {page} at {commit[:12]}")
    (OUT / "index.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
