"""Extract the most downloaded PyPI projects into ``policies/popular-pypi.txt``.

Usage::

    git clone https://github.com/hugovk/top-pypi-packages /tmp/top-pypi-packages
    python scripts/extract_popular_pypi.py /tmp/top-pypi-packages [--top 5000]

``top-pypi-packages.min.json`` of hugovk/top-pypi-packages lists PyPI's projects by
downloads over the last 30 days (from PyPI's public BigQuery dataset, refreshed
monthly). This script keeps the first ``--top`` names, normalised as PEP 503 does, one per
line in download order, under a header saying where they came from (the repository's
commit and the data's ``last_update``). app/policy/typosquat.py reads the file: a new
dependency one edit away from one of these names, and not one of them itself, is a
possible typosquat.

The shipped file came from commit 5501c5c934df26d6f01fb1ca810845db02111c7d (data of
2026-04-01 06:34:06), top 5000.

Stdlib only; git is run only to read the checkout's commit.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

REPOSITORY = "hugovk/top-pypi-packages"
DATA = "top-pypi-packages.min.json"
OUT = Path(__file__).resolve().parent.parent / "policies" / "popular-pypi.txt"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help=f"a clone of {REPOSITORY}")
    parser.add_argument("--top", type=int, default=5000)
    args = parser.parse_args(argv)
    data_file = args.checkout / DATA
    if not data_file.is_file():
        print(f"error: {data_file} not found: is {args.checkout} a clone of {REPOSITORY}?")
        return 2
    data = json.loads(data_file.read_text())
    commit = subprocess.run(
        ["git", "-C", str(args.checkout), "rev-parse", "HEAD"],
        capture_output=True, text=True, check=False,
    ).stdout.strip() or "unknown"  # fmt: skip
    names = list(
        dict.fromkeys(re.sub(r"[-_.]+", "-", row["project"]).lower() for row in data["rows"])
    )[: args.top]
    header = (
        f"# The {len(names)} most downloaded PyPI projects over 30 days, PEP 503 names, in\n"
        f"# download order: {REPOSITORY} {DATA} at {commit}\n"
        f"# (data of {data['last_update']}). Regenerate: scripts/extract_popular_pypi.py.\n"
    )
    OUT.write_text(header + "\n".join(names) + "\n")
    print(f"wrote {len(names)} names to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
