"""Which fixer a job gets, and building fixers from the settings.

:func:`choose` is pure (table-tested): ``fix`` jobs use ``llm`` when a model is
configured; without one, ``lint`` only when the issue is about lint
(:func:`is_about_lint`), and otherwise **nothing**: the job answers what Patchwarden can
do without a model and opens nothing (an unrelated lint PR saying "Fixes #N" would close
a bug it did not fix);
``alert`` jobs use ``revert``, then ``llm`` if the repository allows it
(``fixers.llm_on_alerts``); a fixer a person asked for by its word (``@patchwarden
lint``: the task's ``fixer``) is used as asked. :func:`make_fixer` builds a fixer from
its record (app/fixers/registry.py). :class:`AutoFixer` applies the
choice inside the session, where the repository's configuration (from the base
branch) is known, and runs the fixers in order until one succeeds or one says its
answer is final (a flaky test is not handed to the llm to "fix").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from app.config import Settings
from app.errors import ConfigError
from app.fixers import Strategy, registry
from app.fixers.fixer_policy import fixers_config
from app.fixers.interface import Audit, Fixer, Made, no_audit
from app.fixers.llm.spend import Ledger
from app.sessions.fix_context import FixContext
from app.sessions.result import FixOutcome
from app.sessions.task import Budget, Task

NO_MODEL = (
    "No model is configured for Patchwarden (PATCHWARDEN_LLM_MODEL), so it cannot fix this "
    "itself, and it changed nothing. Without a model it can fix lint (ask "
    "`@{bot} lint` here, or ask for a fix on an issue about lint), and find and revert "
    "the commit that broke the default branch when a check fails there."
)
LINT_ONLY = (
    "No model is configured for Patchwarden (PATCHWARDEN_LLM_MODEL); this issue is about "
    "lint, so ruff and Patchwarden's semgrep autofix rules did what they could."
)
_LINT_WORDS = re.compile(
    r"(?i)\b(?:lint(?:s|er|ers|ing)?|ruff|flake8|pyflakes|pylint|pycodestyle|isort|"
    r"unused (?:imports?|variables?|names?)|imported but unused|imports? \S+ and never "
    r"uses? it|f-strings? without|code style|style issues?|[EFW]\d{3})\b"
)


def is_about_lint(task: Task) -> bool:
    """Whether the task is about lint: its words name linters, lint rules or codes."""
    return _LINT_WORDS.search(task.words) is not None


@dataclass(frozen=True)
class Choice:
    fixers: tuple[str, ...]
    note: str | None = None  # said to the requester along with the result

    def answer(self, bot: str) -> str | None:
        """What the requester is told when no fixer can take the task, else None."""
        if self.fixers:
            return None
        return (self.note or "no fixer can do this").replace("{bot}", bot)


def choose(
    kind: Literal["fix", "alert"],
    *,
    llm_configured: bool,
    llm_on_alerts: bool,
    about_lint: bool = False,
    asked: str | None = None,
) -> Choice:
    """``asked``: the fixer a person named (``@patchwarden lint``), which no choice
    overrules; one that cannot be asked for by name is answered, and nothing runs."""
    if asked is not None:
        if asked not in registry.buildable():
            known = ", ".join(registry.buildable())
            return Choice((), f"no fixer called `{asked}` can be asked for here (ask for {known})")
        return Choice((asked,))
    if kind == "alert":
        if not llm_on_alerts:
            return Choice(("revert",))
        if not llm_configured:
            return Choice(
                ("revert",),
                "fixers.llm_on_alerts is on but no model is configured: only the culprit "
                "finder ran",
            )
        return Choice(("revert", "llm"))
    if llm_configured:
        return Choice(("llm",))
    if about_lint:
        return Choice(("lint",), LINT_ONLY)
    return Choice((), NO_MODEL)


class AutoFixer(Fixer):
    """The ``auto`` choice, made per job from its kind and the repository's config."""

    name = "auto"

    def __init__(
        self, make: Callable[[str], Fixer], *, llm_configured: bool, bot: str = "patchwarden"
    ) -> None:
        self.make = make
        self.llm_configured = llm_configured
        self.bot = bot
        self.made: list[Fixer] = []

    async def fix(self, task: Task, workspace: FixContext, budget: Budget) -> FixOutcome:
        choice = choose(
            task.kind,
            llm_configured=self.llm_configured,
            llm_on_alerts=fixers_config(workspace.base_tree).llm_on_alerts,
            about_lint=is_about_lint(task),
            asked=task.fixer,
        )
        answer = choice.answer(self.bot)
        if answer is not None:
            return FixOutcome(fixer=self.name, ok=False, final=True, reason=answer)
        tried: list[str] = []
        outcome = FixOutcome(fixer=self.name, ok=False, reason="no fixer ran")
        for name in choice.fixers:
            workspace.progress(f"fix: the {name} fixer")
            fixer = self.make(name)
            self.made.append(fixer)
            outcome = await fixer(workspace)
            if outcome.ok or outcome.final:
                break
            tried.append(f"{name}: {outcome.reason}")
            await workspace.restore(await workspace.changed_paths())
        notes = [n for n in (choice.note, *(f"Tried first, {t}." for t in tried)) if n]
        if not notes:
            return outcome
        if outcome.ok:
            return outcome.model_copy(update={"summary": " ".join([*notes, outcome.summary])})
        return outcome.model_copy(update={"reason": " ".join([*notes, outcome.reason or ""])})

    async def aclose(self) -> None:
        for fixer in self.made:
            await fixer.aclose()


def budget_from(settings: Settings) -> Budget:
    return Budget(
        max_steps=settings.llm_max_steps,
        max_tokens=settings.llm_max_tokens,
        max_cost_usd=settings.llm_max_cost_usd,
        daily_usd=settings.llm_daily_budget_usd,
    )


def make_fixer(
    name: str,
    settings: Settings,
    *,
    ledger: Ledger | None = None,
    audit: Audit = no_audit,
    strategy: Strategy | None = None,
) -> Fixer:
    """The fixer called ``name`` (``auto``, or one of the registry's that can be asked
    for), configured from ``settings``; ``strategy``: the llm fixer's, whatever the
    repository's configuration says. ConfigError names the known ones."""
    made = Made(ledger=ledger, audit=audit, strategy=strategy)
    if name == "auto":

        def make(chosen: str) -> Fixer:
            return make_fixer(chosen, settings, ledger=ledger, audit=audit, strategy=strategy)

        return AutoFixer(make, llm_configured=settings.llm_configured, bot=settings.bot_name)
    record = registry.RECORDS.get(name)
    known = ", ".join(("auto", *registry.buildable()))
    if record is None:
        raise ConfigError(f"unknown fixer {name!r}: choose one of {known}")
    if record.build is None:
        raise ConfigError(f"the {name} fixer runs only in its own job: choose one of {known}")
    return record.build(settings, made)
