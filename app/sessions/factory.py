"""Build the session machinery from :class:`~app.config.Settings`."""

from __future__ import annotations

import os
from collections.abc import Mapping

from app.config import Settings
from app.policy.policy_model import KnownFixers
from app.sessions.backends import make_sandbox
from app.sessions.mirrors import WorkspaceCache
from app.sessions.pkgconfig import host_package_config, passenv_patterns
from app.sessions.policyfile import DEFAULT_POLICY
from app.sessions.process import Limits, MiB
from app.sessions.sandbox import Sandbox
from app.sessions.session import SessionRunner
from app.sessions.verify import DEFAULT_RULES, Timeouts


def limits_from(settings: Settings) -> Limits:
    return Limits(
        cpu_seconds=settings.sandbox_cpu_seconds,
        memory_bytes=settings.sandbox_memory_mb * MiB,
        processes=settings.sandbox_processes,
        file_size_bytes=settings.sandbox_file_size_mb * MiB,
        output_bytes=settings.sandbox_output_kb * 1024,
        tmp_bytes=settings.sandbox_tmp_mb * MiB,
    )


def sandbox_from(settings: Settings) -> Sandbox:
    return make_sandbox(
        settings.sandbox,
        state_dir=settings.cache_dir / "sandbox",
        limits=limits_from(settings),
        uid=settings.sandbox_uid,
        image=settings.sandbox_image,
        allow_unsafe=settings.sandbox_allow_unsafe,
    )


def runner_from(
    settings: Settings,
    *,
    fixers: KnownFixers,
    environ: Mapping[str, str] | None = None,
) -> SessionRunner:
    """The session runner ``settings`` describe; ``fixers``: what the policy file may
    name of the fixers (app/fixers/registry.py's ``KNOWN``)."""
    sandbox = sandbox_from(settings)
    packages = host_package_config(
        os.environ if environ is None else environ,
        passenv=passenv_patterns(settings.setup_passenv),
        state_dir=settings.cache_dir / "pkgconfig",
        isolated=sandbox.isolated,
    )
    return SessionRunner(
        cache=WorkspaceCache(settings.cache_dir),
        sandbox=sandbox,
        packages=packages,
        rules_dir=settings.semgrep_rules or DEFAULT_RULES,
        default_policy=settings.default_policy or DEFAULT_POLICY,
        timeouts=Timeouts(
            setup=settings.setup_timeout_seconds,
            tests=settings.test_timeout_seconds,
            tools=settings.tool_timeout_seconds,
            fix=settings.fix_timeout_seconds,
        ),
        fixers=fixers,
    )
