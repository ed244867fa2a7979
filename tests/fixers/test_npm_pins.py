"""An npm project's dependency raised past a vulnerability (app/fixers/npm_pins.py) and
its lock checked after npm moved it (app/sessions/lockfiles.py), on synthetic files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.fixers.manifests import Blocked
from app.fixers.npm_pins import raise_npm_package, raised_range
from app.sessions.lockfiles import lock_changes, lowest_locked
from app.sessions.relock import plan_lock


@pytest.mark.parametrize(
    ("spec", "raised"),
    [
        ("^1.2.3", "^1.2.6"),
        ("~1.2.3", "~1.2.6"),
        ("1.2.3", "1.2.6"),
        ("=1.2.3", "1.2.6"),
        (">=1.0.0", ">=1.2.6"),
        ("^1.2.6", None),  # already past it
        ("^2.0.0", None),
        ("1.2.6-beta.1", "1.2.6"),  # a prerelease sorts before its release
    ],
)
def test_a_range_is_raised_in_its_own_style(spec: str, raised: str | None) -> None:
    assert raised_range(spec, "1.2.6") == raised


@pytest.mark.parametrize("spec", ["*", "1.x", "latest", "^1.2.3 || ^2.0.0", "git+https://x/y.git"])
def test_a_range_it_cannot_read_is_blocked_and_said(spec: str) -> None:
    found = raised_range(spec, "1.2.6")
    assert isinstance(found, Blocked)
    assert "cannot raise" in found.why


def _lock(**packages: tuple[str, str]) -> str:
    """An npm lock with ``name=(version, integrity)`` at ``node_modules/name``."""
    entries = {"": {"name": "app", "version": "1.0.0"}}
    for name, (version, integrity) in packages.items():
        entries[f"node_modules/{name.replace('_', '-')}"] = {
            "version": version,
            "resolved": f"https://registry.npmjs.org/x/-/x-{version}.tgz",
            "integrity": integrity,
        }
    return json.dumps({"lockfileVersion": 3, "packages": entries})


def test_package_json_is_raised_in_place_and_the_lock_named(tmp_path: Path) -> None:
    manifest = (
        '{\n  "name": "app",\n  "dependencies": {\n    "left-pad": "^1.2.3",\n'
        '    "other": "^1.0.0"\n  },\n  "devDependencies": {\n    "left-pad": "~1.2.0"\n  }\n}\n'
    )
    (tmp_path / "package.json").write_text(manifest)
    (tmp_path / "package-lock.json").write_text(_lock(left_pad=("1.2.3", "sha512-a")))
    pins = raise_npm_package(tmp_path, "left-pad", "1.2.6")
    assert [(c.line, c.old, c.new) for c in pins.changes] == [
        (4, "^1.2.3", "^1.2.6"),
        (8, "~1.2.0", "~1.2.6"),
    ]
    assert pins.edited["package.json"] == manifest.replace("^1.2.3", "^1.2.6").replace(
        "~1.2.0", "~1.2.6"
    )
    assert pins.locks == ["package-lock.json"]
    plan = plan_lock(tmp_path, "package-lock.json", "left-pad", "1.2.6")
    assert not isinstance(plan, str)
    assert plan.argv[:3] == ("npm", "update", "left-pad")
    assert "--ignore-scripts" in plan.argv
    assert "--package-lock-only" in plan.argv


def test_a_regenerated_npm_lock_is_taken_only_when_it_moved_the_package_alone() -> None:
    old = _lock(
        left_pad=("1.2.3", "sha512-a"),
        other=("1.0.0", "sha512-o"),
    )
    right = _lock(
        left_pad=("1.3.0", "sha512-b"),
        other=("1.0.0", "sha512-o"),
    )
    assert lock_changes("package-lock.json", old, right, "left-pad", "1.2.6") == [
        "left-pad 1.2.3 → 1.3.0"
    ]
    assert lowest_locked({"package-lock.json": old}, "left-pad") == "1.2.3"
    still = _lock(left_pad=("1.2.5", "sha512-c"), other=("1.0.0", "sha512-o"))
    assert "still locks left-pad 1.2.5, below 1.2.6" in str(
        lock_changes("package-lock.json", old, still, "left-pad", "1.2.6")
    )
    others = _lock(left_pad=("1.3.0", "sha512-b"), other=("1.1.0", "sha512-p"))
    assert "moves other too" in str(
        lock_changes("package-lock.json", old, others, "left-pad", "1.2.6")
    )
    # the same version from elsewhere: another integrity is another package
    swapped = _lock(left_pad=("1.3.0", "sha512-b"), other=("1.0.0", "sha512-EVIL"))
    assert "takes other from another source" in str(
        lock_changes("package-lock.json", old, swapped, "left-pad", "1.2.6")
    )
