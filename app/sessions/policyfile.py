"""The effective policy of a repository: Patchwarden's default file with the repository's
``.github/patchwarden.yml`` from the **base** tree merged over it (app/policy/policy_model.py).

Read once, before the fixer runs, so a file that does not validate stops the job before
anything is spent, and a patch can never change the policy that judges it.
"""

from __future__ import annotations

from pathlib import Path

from app.config import SHIPPED_POLICIES
from app.errors import ConfigError
from app.policy.policy_model import DEFAULT_SOURCE, KnownFixers, Policy, load_policy
from app.sessions.files import read_confined
from app.sessions.repo_commands import CONFIG_PATH

DEFAULT_POLICY = SHIPPED_POLICIES / "default.yml"


def default_policy_text(path: Path = DEFAULT_POLICY) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"the default policy {path} cannot be read ({exc.strerror}); set "
            "PATCHWARDEN_DEFAULT_POLICY to Patchwarden's policies/default.yml"
        ) from None


def policy_for_tree(
    base_tree: Path, *, fixers: KnownFixers, default: Path = DEFAULT_POLICY
) -> Policy:
    """The policy for a change based on ``base_tree`` (PolicyError if a file is invalid;
    ``fixers``: the fixer names and sections it may use)."""
    repo = read_confined(base_tree, CONFIG_PATH)
    return load_policy(
        default_policy_text(default),
        None if repo is None else repo.decode("utf-8", "replace"),
        default_source=DEFAULT_SOURCE if default == DEFAULT_POLICY else str(default),
        fixers=fixers,
    )
