"""Real projects whose own manifests allow a dependency at a version a real advisory
names, for the dependency fixer (issue 34): pinned sdists from PyPI (downloaded and
cached at test time, never copied here), each with the alert GitHub would raise.

The advisory facts are GitHub's advisory database's (github/advisory-database, checked
2026-11-27). Each project constrains the package in another style: a PEP 621
dependency range, a Poetry caret, a tab-indented ``setup.cfg`` list.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.realworld.projects import Project


@dataclass(frozen=True)
class Bump:
    project: Project
    package: str
    advisory: str  # GHSA id
    cve: str
    vulnerable_range: str
    fixed: str  # the first patched version
    manifest: str  # where the project constrains it
    before: str  # the constraint as the sdist writes it
    after: str  # as the fixer must leave it


BUMPS = (
    Bump(
        project=Project(
            name="requests_file",
            version="3.0.1",
            sha256="f14243d7796c588f3521bd423c5dea2ee4cc730e54a3cac9574d78aca1272576",
            layout="PEP 621 dependencies, setuptools-scm",
            drop=("PKG-INFO", "requests_file.egg-info"),
        ),
        package="requests",
        advisory="GHSA-9hjg-9r4m-mvj7",
        cve="CVE-2024-47081",
        vulnerable_range="< 2.32.4",
        fixed="2.32.4",
        manifest="pyproject.toml",
        before='dependencies = ["requests>=1.0.0"]',
        after='dependencies = ["requests>=2.32.4"]',
    ),
    Bump(
        project=Project(
            name="hvac",
            version="2.3.0",
            sha256="1b85e3320e8642dd82f234db63253cda169a817589e823713dc5fca83119b1e2",
            layout="Poetry dependencies, a dev group; unit tests only (integration needs Vault)",
            drop=("PKG-INFO",),
            # Its dev group's test tools, and its unit tests without xdist's addopts.
            config=(
                "setup: pip install --quiet -e . pytest requests-mock parameterized "
                "pytest-mock\n"
                "test: python -m pytest -q -o addopts= tests/unit_tests\n"
            ),
        ),
        package="requests",
        advisory="GHSA-j8r2-6x86-q33q",
        cve="CVE-2023-32681",
        vulnerable_range=">= 2.3.0, < 2.31.0",
        fixed="2.31.0",
        manifest="pyproject.toml",
        before='requests = "^2.27.1"',
        after='requests = "^2.31.0"',
    ),
    Bump(
        project=Project(
            name="email_validator",
            version="2.1.1",
            sha256="200a70680ba08904be6d1eef729205cc0d687634399a5924d842533efb824b84",
            layout="setup.cfg install_requires, tab-indented, with an inline comment",
            drop=("PKG-INFO", "email_validator.egg-info"),
            # One test resolves DNS: its maintainers mark it `network`.
            config="test: python -m pytest -q -m 'not network'\n",
        ),
        package="idna",
        advisory="GHSA-jjg7-2v4v-x38h",
        cve="CVE-2024-3651",
        vulnerable_range="< 3.7",
        fixed="3.7",
        manifest="setup.cfg",
        before="\tidna>=2.0.0\n",
        after="\tidna>=3.7\n",
    ),
)
