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

import functools
import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from app.fixers import Strategy
from app.policy.policy_model import invalid
from app.sessions.repo_commands import CONFIG_PATH, read_config_lines

S = TypeVar("S", bound=BaseModel)


class _Section(BaseModel):
    # Each field's docstring is its description in `patchwarden schema`.
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class LintConfig(_Section):
    """The lint fixer: ruff's and semgrep's automatic fixes (eslint's on JavaScript)."""

    unsafe_fixes: bool = False
    """Apply ruff's unsafe fixes too (`ruff --unsafe-fixes`)."""
    format: Literal["auto"] | bool = "auto"
    """Run `ruff format` (`prettier --write` on JavaScript that configures prettier): `auto`
    only where the base already passes the formatter's check."""
    semgrep: bool = True
    """Apply Patchwarden's semgrep autofix rules (policies/semgrep/autofix/)."""


class RevertConfig(_Section):
    """The culprit finder: reproducing a failing check, bisecting, reverting."""

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
    """Which fixers a job may use, and how the llm fixer works."""

    llm_on_alerts: bool = False
    """Alert jobs may go to the llm fixer when the revert cannot help."""
    llm: LlmConfig = Field(default_factory=LlmConfig)
    """How the llm fixer works."""


def section(base_tree: Path, key: str, model: type[S]) -> S:
    """Section ``key`` of the base tree's ``.github/patchwarden.yml`` read as ``model``
    (its defaults when the file or the key is absent); PolicyError names the line of a
    wrong value."""
    raw, lines = read_config_lines(base_tree)
    value = raw.get(key)
    try:
        held = _holder(key, model).model_validate({key: {} if value is None else value})
    except ValidationError as exc:
        raise invalid(exc, (CONFIG_PATH, lines)) from None
    return cast(S, getattr(held, key))


def fixers_config(base_tree: Path) -> FixersConfig:
    """The ``fixers:`` section: which fixers a job may use, how the llm fixer works."""
    return section(base_tree, "fixers", FixersConfig)


def sections_model(sections: Mapping[str, type[BaseModel]]) -> type[BaseModel]:
    """One model of the fixers' sections (``validate``, ``schema``): each optional, each
    described by its model's docstring; other keys are other rooms'."""
    fields: dict[str, Any] = {
        key: (model, Field(default_factory=model, description=inspect.getdoc(model)))
        for key, model in sections.items()
    }
    config = ConfigDict(extra="ignore", frozen=True)
    return create_model("FixerSettings", __config__=config, **fields)


@functools.cache
def _holder(key: str, model: type[BaseModel]) -> type[BaseModel]:
    return create_model(f"Section_{key}", **{key: (model, Field(default_factory=model))})  # type: ignore[call-overload, no-any-return]
