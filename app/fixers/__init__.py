"""Fixers: what edits the workspace inside a coding session.

``llm`` (:mod:`app.fixers.llm`) is a coding agent on any OpenAI-compatible endpoint;
``lint`` (:mod:`app.fixers.lint`) applies ruff and semgrep autofixes with no model;
``revert`` (:mod:`app.fixers.culprit`) finds the commit that broke the default branch
by bisecting in the sandbox and prepares its revert; ``dependency`` and ``scanning``
answer security alerts. They share one interface (:class:`app.fixers.interface.Fixer`),
each declares a record beside its class, :mod:`app.fixers.registry` collects them, and
:mod:`app.fixers.choose` picks one for a job.
"""

from typing import Literal, get_args

# The llm fixer's strategies (`fixers.llm.strategy`, `patchwarden run --strategy`).
Strategy = Literal["repair", "agent", "auto"]
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
