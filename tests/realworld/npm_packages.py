"""Real npm packages from the registry, pinned by version and integrity, as git
repositories with their own tests.

Each package's tarball is fetched once with ``npm pack`` (the host's registry and CA
configuration, as any npm user's) and checked against the registry's sha512 integrity
pinned here, then cached (``$PATCHWARDEN_TEST_CACHE``, as the PyPI sdists). The
repository is the tarball as published — its sources, tests and eslint configuration —
with its development dependencies cut to what its tests and linter need (tape, its
eslint and eslint configuration: not the release tooling, nyc or audit scripts) and its
``test`` script to the tests alone; the lock npm makes for that is cached beside the
tarball. Nothing of the packages is kept in this repository.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.realworld.sdists import CACHE, Mismatch, Unavailable, commit

# What the packages' tests and linter need of their development dependencies.
TEST_DEPENDENCIES = ("tape", "eslint", "@ljharb/eslint-config")
NPM_FLAGS = ["--ignore-scripts", "--no-audit", "--no-fund"]


@dataclass(frozen=True)
class NpmPackage:
    name: str
    version: str
    integrity: str  # the registry's dist.integrity
    test: str  # the test script: its tests alone
    lint_file: str  # where a double-quoted `"use strict";` is put for the lint fixer
    breaks: tuple[str, str, str] = ("", "", "")  # (file, old, new): its tests then fail

    @property
    def id(self) -> str:
        return f"{self.name}-{self.version}"


PACKAGES = (
    NpmPackage(
        "minimist",
        "1.2.8",
        "sha512-2yyAR8qBkN3YuheJanUpWC5U3bb5osDywNB8RzDVlDwDHbocAJveqqj1u8+SVD7jkWT4yvsHCpWqqWqAxb0zCA==",
        "tape 'test/**/*.js'",
        "index.js",
        breaks=("index.js", "(/^0x[0-9a-f]+$/i)", "(/^0x[0-9]+$/i)"),  # hex with letters
    ),
    NpmPackage(
        "function-bind",
        "1.1.2",
        "sha512-7XHNxH7qX9xG5mIwxkhumTox/MIRNcOgDrxWsMt2pAr23WHp6MrRlN7FBSFpCpr+oVO0F744iUgR82nJMfG2SA==",
        "tape 'test/**/*.js'",
        "implementation.js",
        breaks=(
            "implementation.js",
            "max(0, target.length - args.length)",
            "max(0, target.length)",
        ),
    ),
    NpmPackage(
        "has-symbols",
        "1.1.0",
        "sha512-1cDNdwJ2Jaohmb3sg4OmKaMBwuC48sYni5HUw2DvsC8LjGTLK9h+eb1X6RyuOHe4hT0ULCW68iomhjUoKUqlPQ==",
        "tape test/index.js",  # its shams' tests need core-js: left out
        "index.js",
    ),
    NpmPackage(
        "es-errors",
        "1.3.0",
        "sha512-Zf5H2Kxt2xjTvbJvP2ZWLEICxA6j+hAmMzIlypy4xcBg1vKVnx89Wy0GbS+kf5cwCVFFzdCFh2XSCFNULS6csw==",
        "tape 'test/**/*.js'",
        "index.js",
    ),
    NpmPackage(
        "gopd",
        "1.2.0",
        "sha512-ZUKRh6/kUFoAiTAtTYPZJ3hw9wNxx+BIBOijnlG9PnrJsCcSjs1wyyD6vJpaYtgnzDrKYRSqf3OO6Rfa93xsRg==",
        "tape 'test/**/*.js'",
        "index.js",
    ),
)


def tarball(package: NpmPackage) -> Path:
    """The package's tarball, from the cache or the registry, checked against its pinned
    integrity. Raises Unavailable (no registry) or Mismatch (not the pinned file)."""
    folder = CACHE / "npm"
    folder.mkdir(parents=True, exist_ok=True)
    cached = folder / f"{package.id}.tgz"
    if cached.is_file() and _integrity(cached) == package.integrity:
        return cached
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        done = subprocess.run(
            ["npm", "pack", f"{package.name}@{package.version}", "--silent"],
            cwd=tmp, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        packed = list(Path(tmp).glob("*.tgz"))
        if done.returncode != 0 or len(packed) != 1:
            raise Unavailable(
                f"the npm registry cannot be reached for {package.id}: {done.stderr[-300:]}"
            )
        if _integrity(packed[0]) != package.integrity:
            raise Mismatch(f"{package.id}: the tarball's integrity is not the pinned one")
        packed[0].replace(cached)
    return cached


def _integrity(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def as_repository(package: NpmPackage, path: Path, *, pin: dict[str, str] | None = None) -> str:
    """The package as a git repository at ``path`` (one commit), with a lock npm made
    for it: the release's sha. ``pin``: packages of the lock held at these versions
    (as an older lock would hold them; ``package.json`` does not say so)."""
    archive = tarball(package)
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
        shutil.copytree(Path(tmp) / "package", path)
    manifest = json.loads((path / "package.json").read_text())
    wanted = manifest.get("devDependencies", {})
    manifest["devDependencies"] = {d: wanted[d] for d in TEST_DEPENDENCIES if d in wanted}
    manifest["scripts"] = {"test": package.test, "lint": "eslint --ext=js,mjs ."}
    text = json.dumps(manifest, indent=2) + "\n"
    (path / "package.json").write_text(text)
    (path / "package-lock.json").write_bytes(_lock(package, text, pin or {}, path))
    (path / ".gitignore").write_text("node_modules/\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    return commit(path, f"{package.id} as its tarball ships it")


def _lock(package: NpmPackage, manifest: str, pin: dict[str, str], path: Path) -> bytes:
    """npm's lock for the manifest (cached by what it was made from): ``pin``'s packages
    held by npm's ``overrides`` while it is made, the overrides then left out."""
    key = hashlib.sha256(json.dumps([manifest, sorted(pin.items())]).encode()).hexdigest()[:16]
    cached = CACHE / "npm" / f"{package.id}.{key}.package-lock.json"
    if cached.is_file():
        return cached.read_bytes()
    if pin:
        held = json.loads(manifest) | {"overrides": pin}
        (path / "package.json").write_text(json.dumps(held, indent=2) + "\n")
    done = subprocess.run(
        ["npm", "install", "--package-lock-only", *NPM_FLAGS],
        cwd=path, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "npm_config_update_notifier": "false"},
    )  # fmt: skip
    (path / "package.json").write_text(manifest)
    if done.returncode != 0:
        raise Unavailable(f"npm could not lock {package.id}: {done.stderr[-300:]}")
    data = (path / "package-lock.json").read_bytes()
    partial = cached.with_name(f".{cached.name}.{os.getpid()}.part")
    partial.write_bytes(data)
    partial.replace(cached)
    return data
