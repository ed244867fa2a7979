"""`patchwarden --version` and `--help` answer at once: they import none of the heavy
parts (pydantic's settings, asyncio, the HTTP and model clients, the store), which the
verb that needs them imports. bench/cli_startup.py measures the time."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "pydantic",
    "pydantic_settings",
    "asyncio",
    "aiohttp",
    "openai",
    "gidgethub",
    "app.config",
    "app.store",
    "psycopg",
    "yaml",
)

PROBE = """
import json, sys
from app.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "argv", [["--version"], ["--help"], ["score", "--help"], ["serve", "--help"]]
)
def test_version_and_help_import_nothing_heavy(argv: list[str]) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=60, check=True
    )
    assert "patchwarden" in out.stdout
    loaded = set(json.loads(out.stderr.strip().splitlines()[-1]))
    assert [name for name in HEAVY if name in loaded] == []
