"""A security update's factors and rules (issue 34), from a session's result: the bump's
size, its advisory's severity, what it installs anew, and ``alerts.dependabot``."""

from __future__ import annotations

import pytest
import yaml

from app.policy.evidence import Bump
from app.policy.policy_model import load_policy
from app.policy.score import Score, Trigger, score_session
from app.sessions.policyfile import default_policy_text
from tests.policy_helpers import gdiff, policy_with, result_for

WITHIN = "autonomy: automerge\nalerts:\n  dependabot:\n    mode: within-autonomy\n"


def scored(size: str, severity: str = "medium", *, config: str = WITHIN, **bump: object) -> Score:
    result = result_for(
        gdiff("requirements.txt", ["requests==2.32.0"], ["requests==2.31.0"]), fixer="dependency"
    )
    fields = {"package": "requests", "old": "2.31.0", "new": "2.32.0", "size": size,
              "advisory": "GHSA-9wx4-h78v-vm56", "severity": severity, **bump}  # fmt: skip
    assert result.fix is not None
    result = result.model_copy(
        update={"fix": result.fix.model_copy(update={"bump": Bump(**fields)})}
    )
    return score_session(result, policy_with(config), trigger=Trigger("alert", alert="dependabot"))


def test_a_patch_bump_within_autonomy_merges_itself() -> None:
    score = scored("patch")
    assert score.decision == "automerge"
    assert {c.factor for c in score.contributions} == {
        "category:dependencies",
        "changed_dependencies",
        "fixer",
    }


@pytest.mark.parametrize(
    ("size", "points", "held"), [("minor", 5, True), ("major", 15, True)], ids=["minor", "major"]
)
def test_a_bump_larger_than_merge_up_to_waits(size: str, points: float, held: bool) -> None:
    score = scored(size)
    [factor] = [c for c in score.contributions if c.factor == "security_update"]
    assert factor.points == points
    assert factor.value == f"{size}: requests 2.31.0 → 2.32.0"
    assert [r.rule for r in score.rules if r.decision == "review"][:1] == ["security_update"]
    assert score.decision == "review"
    loose = scored(size, config=WITHIN + "    merge_up_to: major\n")
    assert "security_update" not in [r.rule for r in loose.rules]


def test_the_advisory_s_severity_is_a_credit_and_an_unknown_word_is_none() -> None:
    assert [c.points for c in scored("patch", "critical").contributions if
            c.factor == "advisory_severity"] == [-5]  # fmt: skip
    # The payload's word is never read as an attribute of the weights.
    for word in ("__class__", "model_config", "moderate", ""):
        assert "advisory_severity" not in {c.factor for c in scored("patch", word).contributions}


def test_what_the_update_installs_anew_adds_points_and_review_mode_holds_it() -> None:
    score = scored("patch", installed=["charset-normalizer 3.4.0", "idna 3.10"])
    [factor] = [c for c in score.contributions if c.factor == "new_transitive_dependencies"]
    assert factor.points == 10
    assert "`charset-normalizer 3.4.0`, `idna 3.10`" in factor.reason
    held = scored("patch", config="autonomy: automerge\n")  # alerts.dependabot.mode: review
    assert [r.rule for r in held.rules] == ["alert_mode"]
    assert held.decision == "review"


def test_a_regenerated_lock_adds_points_and_names_what_its_tool_moved() -> None:
    score = scored(
        "patch",
        locks=["uv.lock"],
        locked=["`uv.lock`: requests 2.31.0 → 2.32.0", "`uv.lock`: + idna 3.10"],
    )
    [factor] = [c for c in score.contributions if c.factor == "regenerated_lock"]
    assert factor.points == 2
    assert factor.reason == (
        "regenerates `uv.lock` with its own tool, which moved: `requests 2.31.0 → 2.32.0`, "
        "`+ idna 3.10`"
    )
    assert "regenerated_lock" not in {c.factor for c in scored("patch").contributions}
    assert score.decision == "automerge"  # 2 points: a patch bump with its lock still merges


def test_a_code_scanning_fix_is_held_by_its_own_mode() -> None:
    result = result_for(gdiff("app/calc.py", ["    return int(text)"], ["    return eval(text)"]))
    for mode, decision in (("review", "review"), ("within-autonomy", "automerge")):
        config = f"autonomy: automerge\nalerts:\n  code_scanning:\n    mode: {mode}\n"
        trigger = Trigger("alert", alert="code_scanning")
        score = score_session(result, policy_with(config), trigger=trigger)
        assert score.decision == decision, score.rules
    [held] = score_session(
        result, policy_with("autonomy: automerge\n"), trigger=trigger
    ).rules  # the shipped default: review
    assert held.reason == (
        "a maintainer approves every code scanning fix (`alerts.code_scanning.mode`: review)"
    )


def test_a_default_policy_without_alerts_holds_code_scanning_fixes_as_the_shipped_one() -> None:
    """An operator's default policy (``PATCHWARDEN_DEFAULT_POLICY``) written before
    ``alerts`` existed reads as the shipped default: a code scanning fix still waits for
    a maintainer, where the webhook handler (which reads the shipped default) queued it
    as review (issue 55)."""
    shipped = yaml.safe_load(default_policy_text())
    older = yaml.safe_dump({k: v for k, v in shipped.items() if k != "alerts"})
    policy = load_policy(older, "autonomy: automerge\n")
    assert policy.alerts == load_policy(default_policy_text()).alerts
    result = result_for(gdiff("app/calc.py", ["    return int(text)"], ["    return eval(text)"]))
    score = score_session(result, policy, trigger=Trigger("alert", alert="code_scanning"))
    assert score.decision == "review", score.rules
