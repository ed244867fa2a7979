"""Extract the most downloaded npm packages into ``policies/popular-npm.txt``.

Usage::

    npm pack npm-high-impact@1.13.0        # or download its tarball from the registry
    python scripts/extract_popular_npm.py npm-high-impact-1.13.0.tgz [--top 5000]

The npm package ``npm-high-impact`` (wooorm/npm-high-impact) lists, in
``lib/top-download.js``, the packages of the npm registry downloaded a million times a
week or more, most downloaded first (from the registry's download counts, refreshed by
its author). This script keeps the first ``--top`` names, one per line in download
order, under a header saying where they came from (the package's version and the
tarball's sha512, as the registry's ``integrity`` writes it). app/policy/typosquat.py
reads the file: a new npm dependency one edit away from one of these names, and not one
of them itself, is a possible typosquat.

The shipped file came from npm-high-impact 1.13.0, top 5000.

Stdlib only: the tarball is read as it is, nothing of it runs.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import re
import sys
import tarfile
from pathlib import Path

PACKAGE = "npm-high-impact"
DATA = "package/lib/top-download.js"
OUT = Path(__file__).resolve().parent.parent / "policies" / "popular-npm.txt"
_NAME = re.compile(r"^\s*'((?:@[a-z0-9][\w.~-]*/)?[a-z0-9][\w.~-]*)',?\s*$", re.MULTILINE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tarball", type=Path, help=f"{PACKAGE}'s tarball (npm pack)")
    parser.add_argument("--top", type=int, default=5000)
    args = parser.parse_args(argv)
    data = args.tarball.read_bytes()
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    with tarfile.open(args.tarball) as tar:
        member = tar.extractfile(DATA)
        if member is None:
            print(f"error: {DATA} is not in {args.tarball}: is it {PACKAGE}'s tarball?")
            return 2
        text = member.read().decode("utf-8")
        version = re.search(
            rb'"version":\s*"([^"]+)"', tar.extractfile("package/package.json").read()
        )  # type: ignore[union-attr]
    names = list(dict.fromkeys(_NAME.findall(text)))[: args.top]
    header = (
        f"# The {len(names)} most downloaded npm packages (a million downloads a week or\n"
        f"# more), in download order: {PACKAGE} {version.group(1).decode() if version else '?'}\n"
        f"# lib/top-download.js ({integrity}).\n"
        "# Regenerate: scripts/extract_popular_npm.py.\n"
    )
    OUT.write_text(header + "\n".join(names) + "\n")
    print(f"wrote {len(names)} names to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
