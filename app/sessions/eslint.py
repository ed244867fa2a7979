"""An npm project's own checkers, eslint and TypeScript's ``tsc``: where their
configuration is, whether setup installed them, and how they are run over a tree to
check it (the verifier's linters) — with the repository's own rules and plugins, never
rules of Patchwarden's choosing."""

from __future__ import annotations

import json
from pathlib import Path

from app.sessions.files import read_confined
from app.sessions.repo_commands import NODE_MODULES

JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")
ESLINT_CONFIGS = tuple(
    f"{stem}{suffix}"
    for stem, suffixes in (
        ("eslint.config", (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts")),
        (".eslintrc", ("", ".js", ".cjs", ".json", ".yaml", ".yml")),
    )
    for suffix in suffixes
)
# Where a check run finds the project's packages: above the tree it checks, so node's
# resolution (walking up from the configuration) reaches them and nothing lands in it.
PACKAGES_MOUNT = f"/{NODE_MODULES}"


def eslint_config(tree: Path) -> str | None:
    """The repository's eslint configuration at its top, by file name (or
    ``package.json``'s ``eslintConfig``); None without one."""
    for name in ESLINT_CONFIGS:
        if read_confined(tree, name) is not None:
            return name
    return "package.json" if "eslintConfig" in package_json(tree) else None


def installed(env_dir: Path | None, tool: str) -> bool:
    """Whether setup installed ``tool`` among the project's packages (kept as a folder of
    the environment: never a link, which a mount would follow on the host)."""
    packages = packages_of(env_dir)
    return packages is not None and (packages / ".bin" / tool).exists()


def packages_of(env_dir: Path | None) -> Path | None:
    """The environment's ``node_modules`` folder, or None (none, or not a real folder)."""
    if env_dir is None:
        return None
    found = env_dir / NODE_MODULES
    return found if found.is_dir() and not found.is_symlink() else None


def flat(config: str) -> bool:
    """Whether a configuration file is eslint's flat kind (``eslint.config.*``); the
    other kind is the ``.eslintrc`` of eslint 8 and before."""
    return config.rsplit("/", 1)[-1].startswith("eslint.config")


def check_command(
    targets: list[str], *, config: str | None = None, legacy: bool = False
) -> list[str]:
    """eslint checking ``targets`` (paths from the tree's top) with the repository's
    rules — ``config``, the base tree's flat configuration file, when given, so a patch
    cannot loosen the rules that judge it — JSON out, no cache, the packages at
    :data:`PACKAGES_MOUNT`. Comments in the code that turn rules off are not obeyed
    (as ruff's ``noqa`` and bandit's ``nosec`` are not). ``legacy``: the repository's
    rules are eslint 8's ``.eslintrc`` files, each tree's own found as eslint finds
    them (a nested one for tests, say); that eslint has no ``--no-warn-ignored`` (an
    ignored file's notice is no finding: :func:`~app.sessions.reports.parse_eslint`)."""
    eslint = f"{PACKAGES_MOUNT}/.bin/eslint"
    rules = ["--config", config] if config and not legacy else []
    quiet_ignored = [] if legacy else ["--no-warn-ignored"]
    files = [f"./{t}" for t in targets]  # a file named like an option stays a file
    return [eslint, *rules, "--format", "json", "--no-inline-config", *quiet_ignored, *files]


def tsc_command() -> list[str]:
    """TypeScript's own check of the project (its ``tsconfig.json``), nothing written,
    one error a line."""
    return [
        f"{PACKAGES_MOUNT}/.bin/tsc",
        "--noEmit",
        "--incremental",
        "false",
        "--pretty",
        "false",
        "-p",
        ".",
    ]


def package_json(tree: Path) -> dict[str, object]:
    """The tree's top ``package.json`` as an object ({} when there is none or it is not one)."""
    data = read_confined(tree, "package.json")
    try:
        found = json.loads(data) if data else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
