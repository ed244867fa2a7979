"""The fixers' keys of ``.github/patchwarden.yml``, read from the base branch.

```yaml
fixers:
  llm_on_alerts: false     # alert jobs may go to the llm fixer when revert cannot help
  llm:
    strategy: auto         # repair | agent | auto (repair first, the agent if it found nothing)
lint:
  unsafe_fixes: false      # ruff --unsafe-fixes
  format: auto             # ruff format: auto (if the repo already is), true, false
  semgrep: true            # Patchwarden's semgrep autofix rules
revert:
  reruns: 3                # runs of the failing tests before blaming a commit
  max_commits: 1000        # how far back the last good commit may be looked for
  checks:                  # a failing check's name -> the command that reproduces it
    tests: "python -m pytest -q"
```

Unknown keys and wrong types are refused with the key named, and the job stops
(fail closed): a typo must not silently turn an option off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.fixers import Strategy
from app.policy.policy_model import invalid
from app.sessions.repo_commands import CONFIG_PATH, read_config_lines


class _Section(BaseModel):
    # Each field's docstring is its description in `patchwarden schema`.
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class LintConfig(_Section):
    unsafe_fixes: bool = False
    """Apply ruff's unsafe fixes too (`ruff --unsafe-fixes`)."""
    format: Literal["auto"] | bool = "auto"
    """Run `ruff format`: `auto` only where the base already passes `ruff format --check`."""
    semgrep: bool = True
    """Apply Patchwarden's semgrep autofix rules (policies/semgrep/autofix/)."""


class RevertConfig(_Section):
    reruns: int = Field(default=3, ge=1, le=20)
    """Runs (1-20) of the failing check's command on the failing commit before any blame."""
    max_commits: int = Field(default=1000, ge=2, le=100_000)
    """How far back (first-parent commits) a passing commit is looked for."""
    checks: dict[str, str] = Field(default_factory=dict)
    """A failing check's name mapped to the command that reproduces it (else `test`)."""


class LlmConfig(_Section):
    # repair: localize, reproduce, sample whole functions, let the tests choose (made
    # for small models); agent: the tool loop (for strong ones); auto: repair first, the
    # agent only when repair found no verified fix and the job's budget allows.
    strategy: Strategy = "auto"
    """`repair` (for small models), `agent` (a tool loop) or `auto`: repair, then agent."""


class FixersConfig(_Section):
    llm_on_alerts: bool = False
    """Alert jobs may go to the llm fixer when the revert cannot help."""
    llm: LlmConfig = Field(default_factory=LlmConfig)
    """How the llm fixer works."""


class FixerSettings(BaseModel):
    """The fixers' part of the repository's configuration (other keys are other rooms')."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    fixers: FixersConfig = Field(default_factory=FixersConfig)
    """Which fixers a job may use, and how the llm fixer works."""
    lint: LintConfig = Field(default_factory=LintConfig)
    """The lint fixer: ruff's and semgrep's automatic fixes."""
    revert: RevertConfig = Field(default_factory=RevertConfig)
    """The culprit finder: reproducing a failing check, bisecting, reverting."""


def fixer_settings(base_tree: Path) -> FixerSettings:
    """The fixer settings of the base tree's ``.github/patchwarden.yml`` (defaults if none)."""
    raw, lines = read_config_lines(base_tree)
    try:
        return FixerSettings.model_validate(
            {k: v for k, v in raw.items() if k in ("fixers", "lint", "revert") and v is not None}
        )
    except ValidationError as exc:
        raise invalid(exc, (CONFIG_PATH, lines)) from None
