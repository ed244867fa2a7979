"""The fixer registry: every fixer is one record beside its class, and the rest of the
house reads the records. A new fixer is one module and its entry in
app/fixers/registry.py: chosen by its comment word, run by ``patchwarden run --fixer``,
its name accepted in ``.github/patchwarden.yml``, weighed by the policy and named in
the pull request body, with no other file changed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import app
from app.cli.validate import config_errors
from app.config import Settings
from app.errors import ConfigError
from app.fixers import registry
from app.fixers.choose import make_fixer
from app.sessions.policyfile import default_policy_text
from tests.conftest import CALC, CALC_TESTS, make_project
from tests.policy_helpers import default_policy

TYPO_MODULE = '''
"""The typo fixer: "teh" becomes "the" in the repository's Markdown files."""

import re

from app.fixers.interface import Fixer, FixerRecord
from app.sessions.result import FixOutcome


class TypoFixer(Fixer):
    record = FixerRecord(
        name="typo",
        reason="common misspellings corrected, no model",
        category="lint",
        model=False,
        words=("typo",),
        build=lambda settings, made: TypoFixer(),
    )

    async def fix(self, task, workspace, budget):
        changed = []
        for path in sorted(workspace.tree.rglob("*.md")):
            text = path.read_text()
            fixed = re.sub(r"\\bteh\\b", "the", text)
            if fixed != text:
                path.write_text(fixed)
                changed.append(path.name)
        if not changed:
            return self.gave_up("no typo found")
        return FixOutcome(fixer=self.name, summary="Corrected teh in " + ", ".join(changed))
'''

CHECKS = """
from app.fixers.choose import choose
from app.webhooks.commands import HANDLERS, fix
from app.webhooks.triggers import COMMANDS, FIXER_WORDS, parse_command

command = parse_command("@patchwarden typo\\nthe README", bot_name="patchwarden")
assert command is not None and command.name == "typo", command
assert COMMANDS["typo"].where == "issue" and HANDLERS["typo"] is fix
asked = FIXER_WORDS[command.name]
chosen = choose("fix", llm_configured=True, llm_on_alerts=False, asked=asked)
print(asked, chosen.fixers)
"""


def _house_with_typo(tmp_path: Path) -> Path:
    """A copy of app/ with the typo fixer added: its module, and its entry in the
    registry (an import and a name in ``CLASSES``)."""
    house = tmp_path / "house"
    shutil.copytree(
        Path(app.__file__).parent, house / "app", ignore=shutil.ignore_patterns("__pycache__")
    )
    (house / "app" / "fixers" / "typo.py").write_text(TYPO_MODULE)
    reg = house / "app" / "fixers" / "registry.py"
    text = reg.read_text()
    anchor = "CLASSES: tuple[type[Fixer], ...] = ("
    assert anchor in text
    text = text.replace(anchor, anchor + "TypoFixer, ", 1)
    text = text.replace(
        "from app.fixers.lint import",
        "from app.fixers.typo import TypoFixer\nfrom app.fixers.lint import",
        1,
    )
    reg.write_text(text)
    return house


def _in(house: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(house), "HOME": str(cwd)}
    env["PATCHWARDEN_CACHE_DIR"] = str(cwd / "cache")
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow  # a session in the sandbox, in its own process
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_new_fixer_is_one_module_and_its_registry_entry(tmp_path: Path) -> None:
    house = _house_with_typo(tmp_path)
    # Chosen by its word in a comment.
    done = _in(house, "-c", CHECKS, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "typo ('typo',)"
    # Its name is accepted in the configuration, and a wrong one is named with the list.
    config = tmp_path / "patchwarden.yml"
    config.write_text(
        "weights:\n  fixer:\n    typo: 4\nbehaviour:\n  never_automerge: [llm, typo]\n"
    )
    done = _in(house, "-m", "app", "validate", str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    config.write_text("weights:\n  fixer:\n    typos: 4\n")
    done = _in(house, "-m", "app", "validate", str(config), cwd=tmp_path)
    assert done.returncode == 1
    assert "no fixer is called 'typos'; did you mean `typo`?" in done.stdout
    # Run by name; weighed as the kind of change it makes (lint's points), and named.
    repo = make_project(
        tmp_path / "calc",
        {"calc.py": CALC, "test_calc.py": CALC_TESTS, "README.md": "Add teh numbers.\n"},
    )
    done = _in(
        house,
        "-m",
        "app",
        "run",
        "--repo",
        str(repo),
        "--task",
        "a typo",
        "--fixer",
        "typo",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (repo / "README.md").read_text() != "Add the numbers.\n"  # the patch is on a branch
    body = next((repo / ".git" / "patchwarden").glob("*.md")).read_text()
    row = next(line for line in body.splitlines() if "common misspellings corrected" in line)
    lint = default_policy().weights.fixer["lint"]  # what a fixer of its kind weighs
    assert "| typo |" in row
    assert f"+{lint:g}" in row, row
    assert "-Add teh numbers." in body or "Corrected teh in README.md" in body


def test_the_fixers_named_in_the_configuration_must_exist() -> None:
    """An unknown fixer name in the weights or in ``never_automerge`` fails ``validate``
    with its line and the names there are."""
    text = textwrap.dedent(
        """\
        weights:
          fixer:
            lnt: 2
        behaviour:
          never_automerge: [llm, robot]
        """
    )
    errors = config_errors(text, default_text=default_policy_text())
    said = [(e.line, e.problem) for e in errors]
    names = "the fixers: llm, lint, revert, dependency, scanning"
    assert said == [
        (2, f"`weights.fixer`: no fixer is called 'lnt'; did you mean `lint`? {names}, human"),
        (5, f"`behaviour.never_automerge`: no fixer is called 'robot'; {names}"),
    ]


def test_every_fixer_s_outcome_carries_its_record() -> None:
    """What the policy reads of a fixer comes from its record: a lint fix is not a
    model's, a name the registry does not have reads as a model's (contained)."""
    from app.sessions.result import FixOutcome

    lint = registry.stamped(FixOutcome(fixer="lint"))
    assert (lint.category, lint.model, lint.about) == (
        "lint",
        False,
        registry.RECORDS["lint"].reason,
    )
    stranger = registry.stamped(FixOutcome(fixer="mystery"))
    assert (stranger.category, stranger.model, stranger.about) == (None, True, "")


def test_only_a_fixer_that_can_be_built_is_asked_for_by_name() -> None:
    with pytest.raises(ConfigError, match=r"^the dependency fixer runs only in its own job"):
        make_fixer("dependency", Settings())
    with pytest.raises(ConfigError, match=r"^unknown fixer 'typo': choose one of auto, llm, "):
        make_fixer("typo", Settings())
