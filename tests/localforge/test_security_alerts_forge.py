"""LocalForge's reading of a manifest, as GitHub's dependency graph reads it after the
default branch moves: which Dependabot alerts it closes (issue 34)."""

from __future__ import annotations

import pytest

from app.localforge.security import still_vulnerable


@pytest.mark.parametrize(
    ("manifest", "package", "fixed", "vulnerable"),
    [
        ("pw-vuln==1.0.1\n", "pw-vuln", "1.0.1", False),
        ("pw-vuln==1.0\t# pinned\n", "pw-vuln", "1.0.1", True),
        ("PW_Vuln>=1.0.2\n", "pw-vuln", "1.0.1", False),  # names as PyPI compares them
        ("pw-vuln\n", "pw-vuln", "1.0.1", True),  # no floor: anything goes
        ("other==1.0\n", "pw-vuln", "1.0.1", False),  # not named: nothing to alert
        ('dependencies = ["requests>=1.0.0"]\n', "requests", "2.32.4", True),
        ('dependencies = ["requests>=2.32.4"]\n', "requests", "2.32.4", False),
        ('requests = "^2.27.1"\n', "requests", "2.31.0", True),  # Poetry
        ('requests = "^2.31.0"\n', "requests", "2.31.0", False),
        ("\tidna>=2.0.0\n", "idna", "3.7", True),  # setup.cfg's list
        ("x===abc\n", "x", "1.0", True),  # a version that does not parse: not safe
        # A lock: its entries' versions (a name line alone is no requirement)
        ('[[package]]\nname = "IDNA"\nversion = "3.6"\n', "idna", "3.7", True),
        ('[[package]]\nname = "idna"\nversion = "3.7"\n', "idna", "3.7", False),
        ('[[package]]\nname = "six"\nversion = "1.0"\n', "idna", "3.7", False),
        # npm: package.json's ranges by their floor, the lock by every place it holds it
        ('{"dependencies": {"semver": "^7.5.1"}}', "semver", "7.5.2", True),
        ('{"devDependencies": {"semver": "~7.5.2"}}', "semver", "7.5.2", False),
        ('{"dependencies": {"other": "1.0.0"}}', "semver", "7.5.2", False),
        (
            '{"packages": {"": {}, "node_modules/semver": {"version": "7.6.0"},'
            ' "node_modules/a/node_modules/semver": {"version": "7.5.1"}}}',
            "semver",
            "7.5.2",
            True,  # a nested copy is still vulnerable
        ),
        ('{"packages": {"node_modules/semver": {"version": "7.5.2"}}}', "semver", "7.5.2", False),
    ],
)
def test_which_manifests_still_allow_a_vulnerable_version(
    manifest: str, package: str, fixed: str, vulnerable: bool
) -> None:
    path = "package-lock.json" if '"packages"' in manifest else "package.json"
    if not manifest.startswith("{"):
        path = "requirements.txt"
    assert still_vulnerable(manifest, package, fixed, path=path) is vulnerable
