"""The policy engine: merging the policy files, each factor and hard rule, the decision
ladder, and properties that must hold for any change (hypothesis)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.policy.diff import TRUNCATION_MARK, parse_diff
from app.policy.evidence import (
    Finding,
    FindingsDelta,
    ModelUsage,
    Scope,
    TestCounts,
    TestDelta,
    TestRun,
)
from app.policy.features import extract
from app.policy.policy_model import LADDER, PolicyError, load_policy
from app.policy.score import Score, Trigger, Verification, score, score_diff, score_session
from app.sessions.policyfile import default_policy_text
from tests.policy_helpers import (
    by,
    default_policy,
    gdiff,
    passed,
    policy_with,
    result_for,
    stats_of,
)

TOKEN = "ghp_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c"
PY_CMD = ["python", "-m", "pytest", "-q"]


# -- policy files ----------------------------------------------------------------------


def test_the_default_policy_loads_and_protects_what_the_issue_lists() -> None:
    p = default_policy()
    assert p.autonomy == "review"
    for pattern in (".github/workflows/**", "CODEOWNERS", ".github/patchwarden.yml", "*.tf"):
        assert pattern in p.protected_paths
    assert (p.thresholds.automerge, p.thresholds.review, p.thresholds.draft) == (20, 60, 85)


MERGES = [
    ("autonomy", "autonomy: automerge\n", lambda p: p.autonomy == "automerge"),
    (
        "threshold-partial",
        "thresholds:\n  automerge: 10\n",
        lambda p: (p.thresholds.automerge, p.thresholds.review) == (10, 60),
    ),
    (
        "category-weight",
        "categories:\n  docs:\n    weight: 0.5\n",
        lambda p: p.categories["docs"].weight == 0.5 and p.categories["docs"].paths,
    ),
    (
        "new-category",
        "categories:\n  payments:\n    weight: 4\n    paths: [src/payments/**]\n",
        lambda p: p.categories["payments"].weight == 4 and "source" in p.categories,
    ),
    (
        "protected-adds",
        "protected_paths: [migrations/**]\n",
        lambda p: "migrations/**" in p.protected_paths and "CODEOWNERS" in p.protected_paths,
    ),
    (
        "unprotect",
        "unprotect: ['Dockerfile*']\n",
        lambda p: "Dockerfile*" not in p.protected_paths and "*.tf" in p.protected_paths,
    ),
    (
        "other-rooms-keys",
        "test: python -m pytest\nlint:\n  unsafe_fixes: true\nautonomy: propose\n",
        lambda p: p.autonomy == "propose",
    ),
    (
        "merge-partial",
        "merge:\n  two_person: false\n",
        lambda p: not p.merge.two_person and p.merge.canary_minutes == 60,
    ),
    ("empty-file", "", lambda p: p == default_policy()),
]


@pytest.mark.parametrize(("repo", "check"), [m[1:] for m in MERGES], ids=[m[0] for m in MERGES])
def test_the_repository_file_merges_over_the_default(repo: str, check: Any) -> None:
    assert check(policy_with(repo))


INVALID = [
    ("unknown-key", "autonomy: review\nautonmy: automerge\n", 2, "did you mean `autonomy`"),
    ("bad-autonomy", "\n\nautonomy: yolo\n", 3, "`autonomy`"),
    ("wrong-type", "caps:\n  files: many\n", 2, "`caps.files`"),
    ("nested-unknown", "caps:\n  files: 3\n  lines: 9\n", 3, "`caps.lines`: unknown key"),
    ("thresholds-order", "thresholds:\n  automerge: 70\n", 1, "automerge <= review <= draft"),
    ("unprotect-unknown", "unprotect:\n  - src/**\n", 2, "not one of the default protected"),
    ("new-category-half", "categories:\n  pay:\n    weight: 2\n", 2, "`categories.pay.paths`"),
    ("duplicate", "autonomy: review\nautonomy: automerge\n", 2, "set twice"),
    ("bad-yaml", "autonomy: [review\n", 2, "not valid YAML"),
    ("not-a-mapping", "- autonomy\n", 1, "must be a mapping"),
    ("negative-weight", "weights:\n  touch: -3\n", 2, "`weights.touch`"),
    ("merge-method", "merge:\n  method: fast\n", 2, "`merge.method`"),
    ("merge-canary", "merge:\n  canary_minutes: -1\n", 2, "`merge.canary_minutes`"),
    ("merge-typo", "merge:\n  two_persons: true\n", 2, "`merge.two_persons`: unknown key"),
    ("allow-all", "secrets:\n  allow:\n    - '.*'\n", 3, "would let real ones through"),
    ("allow-a-kind", "secrets:\n  allow:\n    - 'ghp_\\w+'\n", 3, "matches any credential"),
]


def test_an_allow_pattern_naming_an_example_is_kept() -> None:
    policy = load_policy(
        default_policy_text(), "secrets:\n  allow:\n    - 'AKIAIOSFODNN7EXAMPLE'\n"
    )
    assert policy.secrets.allow[-1] == "AKIAIOSFODNN7EXAMPLE"


@pytest.mark.parametrize(
    ("repo", "line", "says"), [i[1:] for i in INVALID], ids=[i[0] for i in INVALID]
)
def test_an_invalid_file_is_refused_with_its_line(repo: str, line: int, says: str) -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy(default_policy_text(), repo)
    err = caught.value
    assert err.source == ".github/patchwarden.yml"
    assert err.line == line, str(err)
    assert says in str(err)
    assert str(err).startswith(f".github/patchwarden.yml:{line}: ")


# -- factors and rules -------------------------------------------------------------------


def test_the_human_weight_scores_a_person_s_change_and_never_a_fixer_s() -> None:
    """``weights.fixer.human`` is for a diff no session checked (``patchwarden score``):
    a model's fix asked for in a comment has the model's points, not a person's too."""
    policy = policy_with("weights:\n  fixer:\n    human: 7\n")
    diff = gdiff("src/app/util.py", ["x = 1"])
    features = extract(parse_diff(diff), policy)
    person = score(features, policy, trigger=Trigger("human"))
    fix = score(
        features, policy, verification=verification(fixer="llm"), trigger=Trigger("comment")
    )
    assert [(c.factor, c.value, c.points) for c in person.contributions if c.factor == "fixer"] == [
        ("fixer", "human", 7)
    ]
    assert [c.value for c in fix.contributions if c.factor == "fixer"] == ["llm"]


def verification(**kw: Any) -> Verification:
    tests = kw.pop(
        "tests", TestDelta(command=PY_CMD, source="detected", base=passed(5), head=passed(5))
    )
    return by(kw.pop("fixer", "lint"), tests=tests, **{"scope": Scope(), **kw})


def scored(
    diff: str, *, v: Verification | None = None, policy: Any = None, trigger: Trigger | None = None
) -> Score:
    p = policy or default_policy()
    return score(extract(parse_diff(diff), p), p, verification=v, trigger=trigger)


def points(s: Score, factor: str) -> float:
    return sum(c.points for c in s.contributions if c.factor == factor)


SRC = gdiff("src/calc.py", ["    return a + b"], ["    return a - b"])
FACTORS = [
    ("docs", gdiff("README.md", ["teh -> the"], ["teh"]), "category:docs", 0.2 * (5 + 0.2)),
    ("source", gdiff("src/a.py", [f"x{i} = {i}" for i in range(30)]), "category:source", 8.0),
    ("ci-capped", gdiff("Makefile", [f"l{i}:" for i in range(400)]), "category:build", 40.0),
    ("deleted", gdiff("src/old.py", remove=["x = 1"], deleted=True), "deleted_files", 5.0),
    ("renamed", gdiff("src/new.py", old_path="src/old.py"), "renamed_files", 2.0),
    ("binary", gdiff("img/logo.png", binary=True), "binary_files", 10.0),
    ("exec", gdiff("run.sh", mode=("100644", "100755")), "executable_bit", 10.0),
    ("new-dep", gdiff("requirements.txt", ["requests==2.32.0"]), "new_dependencies", 10.0),
    ("typosquat", gdiff("requirements.txt", ["reqeusts==2.32.0"]), "typosquat_dependencies", 30.0),
    (
        "changed-dep",
        gdiff("requirements.txt", ["Flask==3.0.3"], ["flask==2.3.0"]),
        "changed_dependencies",
        4.0,
    ),
    ("removed-dep", gdiff("requirements.txt", remove=["six==1.16"]), "removed_dependencies", 2.0),
    (
        "lockfile",
        gdiff(
            "poetry.lock",
            ['name = "idna"', 'version = "3.7"'],
            ['name = "idna"', 'version = "3.6"'],
        ),
        "lockfile",
        4.0,
    ),
    (
        "test-deleted",
        gdiff("tests/test_calc.py", remove=["def test_add():"], deleted=True),
        "tests_deleted",
        35.0,
    ),
    (
        "test-removed",
        gdiff("tests/test_calc.py", ["# gone"], ["def test_add():", "    assert add(1, 2) == 3"]),
        "tests_removed",
        15.0,
    ),
    (
        "test-skipped",
        gdiff("tests/test_calc.py", ["@pytest.mark.skip(reason='flaky')"]),
        "tests_skipped",
        25.0,
    ),
]


@pytest.mark.parametrize(
    ("diff", "factor", "expected"), [f[1:] for f in FACTORS], ids=[f[0] for f in FACTORS]
)
def test_each_factor_adds_its_points(diff: str, factor: str, expected: float) -> None:
    s = scored(diff)
    assert points(s, factor) == pytest.approx(expected, abs=0.01), s.contributions
    reason = next(c.reason for c in s.contributions if c.factor == factor)
    assert reason  # every contribution says why


# (manifest, added lines): each adds a possible typosquat of `near`
SQUATS = {
    "setup-py": ("setup.py", ['    install_requires=["flask>=3", "reqeusts>=2"],'], "requests"),
    "setup-cfg": ("setup.cfg", ["install_requires =", "    urlib3"], "urllib3"),
    "pyproject": ("pyproject.toml", ["dependencies = [", '    "colourama",', "]"], "colorama"),
    "requirements-in": ("requirements/dev.in", ["pytset"], "pytest"),
    "swapped": ("dev-requirements.txt", ["pnadas==2.2"], "pandas"),
}


@pytest.mark.parametrize(("path", "lines", "near"), SQUATS.values(), ids=SQUATS.keys())
def test_a_typosquat_is_named_and_never_merges_itself(
    path: str, lines: list[str], near: str
) -> None:
    policy = default_policy().model_copy(
        update={"caps": default_policy().caps.model_copy(update={"new_dependencies": 9})}
    )  # the default cap (0 new) alone would hold it already
    s = scored(gdiff(path, lines), v=verification(fixer="lint"), policy=policy)
    (reason,) = [c.reason for c in s.contributions if c.factor == "typosquat_dependencies"]
    assert f"(one letter from `{near}`)" in reason
    assert s.decision != "automerge"
    assert any(r.rule == "typosquat" and r.decision == "review" for r in s.rules)


def _lock_diff(new: dict[str, str]) -> str:
    """A package-lock.json diff of semver 7.5.1's entry, its fields changed to ``new``."""
    old = {
        "version": "7.5.1",
        "resolved": "https://registry.npmjs.org/semver/-/semver-7.5.1.tgz",
        "integrity": "sha512-old",
    }
    lines = ['     "node_modules/semver": {']
    for key, was in old.items():
        now = new.get(key, was)
        if now == was:
            lines.append(f'       "{key}": "{was}",')
        else:
            lines += [f'-      "{key}": "{was}",', f'+      "{key}": "{now}",']
    before = sum(not line.startswith("+") for line in lines)
    after = sum(not line.startswith("-") for line in lines)
    return (
        "diff --git a/package-lock.json b/package-lock.json\nindex 1..2 100644\n"
        "--- a/package-lock.json\n+++ b/package-lock.json\n"
        f"@@ -10,{before} +10,{after} @@\n" + "\n".join(lines) + "\n"
    )


@pytest.mark.parametrize(
    ("new", "rejected"),
    [
        ({"integrity": "sha512-other"}, True),  # same version, other bytes
        ({"resolved": "https://mirror.example/semver-7.5.1.tgz"}, True),  # another source
        (
            {
                "version": "7.6.0",
                "resolved": "https://registry.npmjs.org/semver/-/semver-7.6.0.tgz",
                "integrity": "sha512-new",
            },
            False,  # an update: a new version's bytes
        ),
    ],
)
def test_an_npm_lock_entry_resealed_under_the_same_version_rejects(
    new: dict[str, str], rejected: bool
) -> None:
    s = scored(_lock_diff(new), v=verification(fixer="dependency"))
    rules = {r.rule: r.decision for r in s.rules}
    assert (rules.get("lock_resealed") == "reject") is rejected, s.rules
    if rejected:
        (rule,) = [r for r in s.rules if r.rule == "lock_resealed"]
        assert "`semver 7.5.1`" in rule.reason


def test_popular_names_and_their_near_misses() -> None:
    from app.policy.typosquat import near_popular

    # The popular names themselves, names far from any, short names, other separators.
    for name in ("requests", "Django", "python_dateutil", "zope.interface", "my-company-lib",
                 "six", "boto"):  # fmt: skip
        assert near_popular(name) is None, name
    assert near_popular("Djnago") == "django"  # swapped neighbours, any case
    assert near_popular("numpyy") == "numpy"  # a letter added
    assert near_popular("python-dateutl") == "python-dateutil"  # a letter dropped


def test_an_npm_dependency_one_edit_from_a_popular_package_is_a_possible_typosquat() -> None:
    """npm names are read against npm's popular list, not PyPI's: `expresss` is one
    edit from `express`; `requests` (a PyPI name) is nothing to npm; a scoped name too."""
    from app.policy.deps import DepChange
    from app.policy.typosquat import near_popular, possible_typosquats

    assert near_popular("expresss", "npm") == "express"
    assert near_popular("@types/nodee", "npm") == "@types/node"
    assert near_popular("express", "npm") is None
    added = [
        DepChange("package.json", "lodahs", "added", new="^4.17.21"),
        DepChange("web/package.json", "react", "added", new="^18.0.0"),
        DepChange("package-lock.json", "expresss", "added", direct=False),  # the lock's
        DepChange("requirements.txt", "reqeusts", "added", new="2.31"),
    ]
    assert [(d.name, near) for d, near in possible_typosquats(added)] == [
        ("lodahs", "lodash"),
        ("reqeusts", "requests"),
    ]


def _finding(severity: str) -> Finding:
    return Finding(
        tool="semgrep", rule="r", path="src/calc.py", line=3, message="m", severity=severity
    )  # type: ignore[arg-type]


def outcomes(passing: int, failing: int) -> TestRun:
    """A run with per-test outcomes: t::p0… passed, t::f0… failed."""
    found: dict[str, Any] = {f"t::p{i}": "passed" for i in range(passing)}
    found.update({f"t::f{i}": "failed" for i in range(failing)})
    counts = TestCounts(passed=passing, failed=failing)
    return TestRun(exit_code=1 if failing else 0, counts=counts, outcomes=found)


def already(
    passing: int, failing: int, *, alert: bool = False, command: list[str] = PY_CMD
) -> Verification:
    """The same tests failing on the base and on the patch (of an alert: the failing
    tests are what it must fix)."""
    return verification(
        tests=TestDelta(
            command=command,
            source="detected",
            base=outcomes(passing, failing),
            head=outcomes(passing, failing),
            already_failing=[f"t::f{i}" for i in range(failing)],
            reproducible=not alert,
        )
    )


VERIFY = [
    ("llm", verification(fixer="llm"), "fixer", 15.0, None),
    # toolz: one test failing on both trees is reported, not blamed on the patch ...
    ("already-failing", already(9, 1), "tests_already_failing", 3.0, None),
    # ... unless most fail on the base: that is a broken environment, not a test
    ("mostly-failing", already(1, 4), "tests_still_failing", 25.0, ("tests_failing", "draft")),
    # ... or they are what an alert asks to fix, or the run stopped at the first failure
    ("alert", already(9, 1, alert=True), "tests_still_failing", 25.0, ("tests_failing", "draft")),
    (
        "stops-early",
        already(9, 1, command=[*PY_CMD, "-x"]),
        "tests_still_failing",
        25.0,
        ("tests_failing", "draft"),
    ),
    ("lint", verification(fixer="lint"), "fixer", 3.0, None),
    ("revert", verification(fixer="revert"), "fixer", 5.0, None),
    ("no-tests", verification(tests=None), "tests_not_run", 20.0, ("tests_not_run", "review")),
    (
        "still-failing",
        verification(
            tests=TestDelta(
                command=PY_CMD,
                source="detected",
                base=passed(4, failed=1),
                head=passed(4, failed=1),
            )
        ),
        "tests_still_failing",
        25.0,
        ("tests_failing", "draft"),
    ),
    (
        "fixed-credit",
        verification(
            tests=TestDelta(
                command=PY_CMD,
                source="detected",
                base=passed(4, failed=1),
                head=passed(5),
                fixed=["test_calc.py::test_add"],
            )
        ),
        "tests_fixed",
        -5.0,
        None,
    ),
    (
        "broken",
        verification(
            tests=TestDelta(
                command=PY_CMD,
                source="detected",
                base=passed(5),
                head=passed(4, failed=1),
                broken=["t::x"],
            )
        ),
        "fixer",
        3.0,
        ("tests_broken", "reject"),
    ),
    (
        "medium-finding",
        verification(findings=(FindingsDelta(tool="semgrep", new=[_finding("medium")]),)),
        "findings:semgrep",
        10.0,
        None,
    ),
    (
        "high-finding",
        verification(findings=(FindingsDelta(tool="semgrep", new=[_finding("high")]),)),
        "findings:semgrep",
        0.0,
        ("high_finding", "reject"),
    ),
    (
        "tool-failed",
        verification(findings=(FindingsDelta(tool="bandit", ran=False, files=1),)),
        "tool:bandit",
        10.0,
        ("tool_failed", "review"),
    ),
    (
        "budget",
        verification(
            fixer="llm", usage=ModelUsage(calls=9, prompt_tokens=390_000), max_tokens=400_000
        ),
        "budget",
        5.0,
        None,
    ),
    (
        # The coding agent stopped (a repeat) after changing the code, and a test it
        # fixed shows the change: held for a person whatever the score.
        "unfinished-shown",
        verification(
            fixer="llm",
            unfinished="the model repeated a call that changed nothing, three times",
            tests=TestDelta(
                command=PY_CMD,
                source="detected",
                base=passed(4, failed=1),
                head=passed(5),
                fixed=["t::x"],
            ),
        ),
        "fixer",
        15.0,
        ("unfinished", "review"),
    ),
    (
        # ... and with nothing that shows it: a lost model's last edit opens no PR.
        "unfinished-unshown",
        verification(
            fixer="llm", unfinished="the model repeated a call that changed nothing, three times"
        ),
        "fixer",
        15.0,
        ("unfinished", "reject"),
    ),
]


@pytest.mark.parametrize(
    ("v", "factor", "expected", "rule"), [c[1:] for c in VERIFY], ids=[c[0] for c in VERIFY]
)
def test_what_the_session_checked_scores_and_rules(
    v: Verification, factor: str, expected: float, rule: tuple[str, str] | None
) -> None:
    s = scored(SRC, v=v)
    assert points(s, factor) == pytest.approx(expected)
    if rule is None:
        assert not [r for r in s.rules if r.rule != "autonomy"], s.rules
    else:
        hit = next(r for r in s.rules if r.rule == rule[0])
        assert hit.decision == rule[1]
        assert LADDER.index(s.decision) <= LADDER.index(rule[1])  # type: ignore[arg-type]


def test_tests_failing_on_both_trees_are_named_and_a_broken_base_is_said() -> None:
    s = scored(SRC, v=already(9, 1))
    (reason,) = [c.reason for c in s.contributions if c.factor == "tests_already_failing"]
    assert reason == "1 test fails on the base and on the patch alike, not because of it: `t::f0`"
    s = scored(SRC, v=already(1, 4))
    (hit,) = [r for r in s.rules if r.rule == "tests_failing"]
    assert "4 of 5 fail on the base too: the test environment looks broken" in hit.reason


def test_tests_made_to_pass_by_editing_only_the_tests_earn_no_credit() -> None:
    """A real small model changed `== 28` to `== 29` in the failing test: that is not
    a fix, and the score must not reward it as one."""
    fixed = TestDelta(
        command=PY_CMD,
        source="detected",
        base=passed(2, failed=1),
        head=passed(3),
        fixed=["tests/test_dates.py::test_february"],
    )
    edit_test = gdiff("tests/test_dates.py", ["    assert days(2024, 2) == 29"],
                      ["    assert days(2024, 2) == 28"])  # fmt: skip
    only_tests = scored(edit_test, v=verification(fixer="llm", tests=fixed))
    assert points(only_tests, "tests_fixed") == 0
    (held,) = [r for r in only_tests.rules if r.rule == "tests_edited_to_pass"]
    assert held.decision == "review"
    assert "only by changing tests" in held.reason
    # A test file that a riskier category outranks (tests/auth/ is security) is a test.
    auth = gdiff("tests/auth/test_login.py", ["    assert ok"], ["    assert not ok"])
    auth_only = scored(auth, v=verification(fixer="llm", tests=fixed))
    assert points(auth_only, "tests_fixed") == 0
    assert [r.rule for r in auth_only.rules if r.rule == "tests_edited_to_pass"]
    # The same tests made to pass by a change to the code: credited.
    with_code = scored(SRC + edit_test, v=verification(fixer="llm", tests=fixed))
    assert points(with_code, "tests_fixed") == -5.0
    assert not [r for r in with_code.rules if r.rule == "tests_edited_to_pass"]


def test_a_model_fix_that_no_test_reproduces_is_riskier() -> None:
    """Nothing failed before and passes after: the model's fix shows nothing."""
    green = {
        "command": PY_CMD,
        "source": "detected",
        "base": passed(3),
        "head": passed(4),
        "reproducible": True,
    }
    bare = scored(SRC, v=verification(fixer="llm", tests=TestDelta(**green)))
    assert points(bare, "not_reproduced") == 10.0
    (factor,) = [c for c in bare.contributions if c.factor == "not_reproduced"]
    assert "nothing shows the problem was reproduced" in factor.reason
    shown = TestDelta(**green, added=["t::test_1900"], reproduced=["t::test_1900"])
    assert points(scored(SRC, v=verification(fixer="llm", tests=shown)), "not_reproduced") == 0
    fixed = TestDelta(**{**green, "base": passed(2, failed=1)}, fixed=["t::x"])
    assert points(scored(SRC, v=verification(fixer="llm", tests=fixed)), "not_reproduced") == 0
    # Not for deterministic fixers, nor when the tests fail anyway.
    assert points(scored(SRC, v=verification(fixer="lint", tests=TestDelta(**green))),
                  "not_reproduced") == 0  # fmt: skip
    red = TestDelta(**{**green, "head": passed(3, failed=1)})
    assert points(scored(SRC, v=verification(fixer="llm", tests=red)), "not_reproduced") == 0
    # Nor where no test can be checked against the base (not pytest), or need not be
    # (an alert: its failing check shows the problem).
    other = TestDelta(**{**green, "reproducible": False})
    assert points(scored(SRC, v=verification(fixer="llm", tests=other)), "not_reproduced") == 0


def test_a_model_fix_that_only_its_own_test_shows_is_a_draft_unless_tests_agreed() -> None:
    """A model's test may assert the very bug it was asked to show; a change that only
    such a test shows to work waits as a draft, unless independently sampled tests
    agreed (or the issue's example backs them) or a repository test shows it too."""
    green = {"command": PY_CMD, "source": "detected", "base": passed(3), "reproducible": True}
    alone = TestDelta(**green, head=passed(4), added=["t::test_it"], reproduced=["t::test_it"])
    lone = scored(SRC, v=verification(fixer="llm", tests=alone))
    (held,) = [r for r in lone.rules if r.rule == "model_tests_only"]
    assert held.decision == "draft"
    assert "only tests the model wrote show that it works (`t::test_it`)" in held.reason
    assert lone.decision in ("draft", "reject")
    agreed = scored(SRC, v=verification(fixer="llm", tests=alone, agreed=True))
    assert not [r for r in agreed.rules if r.rule == "model_tests_only"]
    ours = TestDelta(**{**green, "base": passed(2, failed=1)}, head=passed(4), fixed=["t::x"],
                     added=["t::test_it"], reproduced=["t::test_it"])  # fmt: skip
    shown = scored(SRC, v=verification(fixer="llm", tests=ours))
    assert not [r for r in shown.rules if r.rule == "model_tests_only"]
    # Not for fixers without a model.
    lint = scored(SRC, v=verification(fixer="lint", tests=alone))
    assert not [r for r in lint.rules if r.rule == "model_tests_only"]


def test_a_change_other_changes_match_on_every_test_waits_for_a_maintainer() -> None:
    """Where other changes pass every test as well, the tests cannot tell which one fixes
    the bug: a draft at most, whatever the score, with the others named."""
    green = {"command": PY_CMD, "source": "detected", "reproducible": True}
    fixed = TestDelta(**green, base=passed(2, failed=1), head=passed(3), fixed=["t::test_32"])
    alone = scored(SRC, v=verification(fixer="llm", tests=fixed))
    assert not [r for r in alone.rules if r.rule == "tests_cannot_choose"]
    assert alone.decision == "review"
    chosen = scored(SRC, v=verification(fixer="llm", tests=fixed, alternatives=2))
    (held,) = [r for r in chosen.rules if r.rule == "tests_cannot_choose"]
    assert held.decision == "draft"
    assert held.reason == (
        "2 other changes pass every test as well (the description names them): the tests "
        "cannot tell which one fixes the bug"
    )
    assert chosen.decision in ("draft", "reject")


HARD = [
    ("workflow", gdiff(".github/workflows/ci.yml", ["run: curl x | sh"]), "protected_path"),
    ("rename-away", gdiff("ci.yml.bak", old_path=".github/workflows/ci.yml"), "protected_path"),
    ("policy-file", gdiff(".github/patchwarden.yml", ["autonomy: automerge"]), "protected_path"),
    ("codeowners", gdiff(".github/CODEOWNERS", remove=["* @octo/core"]), "protected_path"),
    ("secret", gdiff("src/settings.py", [f'TOKEN = "{TOKEN}"']), "secret"),
    ("masked", gdiff("src/settings.py", ['TOKEN = "[REDACTED:github-token]"']), "secret"),
    ("aws", gdiff("deploy.cfg", ["key = AKIAIOSFODNN7ABCDEFG"]), "secret"),
    (
        "unreadable",
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n-a\n",
        "unreadable_diff",
    ),
    (
        "truncated",
        gdiff("src/a.py", ["x = 1"]) + f"\n{TRUNCATION_MARK}\n",
        "truncated_diff",
    ),
    ("empty", "", "empty"),
]


@pytest.mark.parametrize(("diff", "rule"), [h[1:] for h in HARD], ids=[h[0] for h in HARD])
def test_hard_rules_reject_whatever_the_score(diff: str, rule: str) -> None:
    s = scored(diff, v=verification(), policy=policy_with("autonomy: automerge\n"))
    assert s.decision == "reject"
    assert s.risk == "high"
    assert rule in [r.rule for r in s.rules]
    assert s.score <= 20 or rule in ("secret",)  # the score alone would have let it merge


def test_a_person_touching_a_protected_path_needs_review_not_a_reject() -> None:
    s = score_diff(
        gdiff(".github/workflows/ci.yml", ["on: push"]), default_policy(), trigger=Trigger("human")
    )
    assert s.decision == "review"
    assert s.autonomy == "review"


def test_caps_make_a_big_change_a_draft() -> None:
    diff = "".join(gdiff(f"src/m{i}.py", ["x = 1"]) for i in range(21))
    s = scored(diff, v=verification())
    hit = next(r for r in s.rules if r.rule == "caps")
    assert "21 files (cap 20)" in hit.reason
    assert s.decision == "draft"
    s = scored(diff, v=verification(), policy=policy_with("caps:\n  over: reject\n"))
    assert s.decision == "reject"


@pytest.mark.parametrize(
    ("autonomy", "docs_fix", "source_fix"),
    [
        ("propose", "draft", "draft"),
        ("review", "review", "review"),
        ("automerge", "automerge", "review"),
    ],
)
def test_the_ladder_is_capped_by_autonomy(autonomy: str, docs_fix: str, source_fix: str) -> None:
    policy = policy_with(f"autonomy: {autonomy}\n")
    docs = scored(gdiff("docs/guide.md", ["the"], ["teh"]), v=verification(), policy=policy)
    src = scored(
        "".join(gdiff(f"src/m{i}.py", ["x = 1"] * 30) for i in range(3)),
        v=verification(fixer="llm"),
        policy=policy,
    )
    assert (docs.decision, src.decision) == (docs_fix, source_fix)
    # The risk does not depend on autonomy.
    assert docs.risk == "low"
    assert src.risk == "medium"


# -- properties --------------------------------------------------------------------------

SAFE_PATHS = ["src/app.py", "src/util/io.py", "README.md", "docs/x.md", "lib/core.py", "Makefile"]
line_text = st.text(
    st.characters(codec="ascii", exclude_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85"), max_size=40
)


@st.composite
def plain_changes(draw: st.DrawFn) -> str:
    paths = draw(st.lists(st.sampled_from(SAFE_PATHS), min_size=1, max_size=4, unique=True))
    parts = []
    for path in paths:
        add = draw(st.lists(line_text.filter(lambda t: "ghp_" not in t), max_size=6))
        remove = draw(st.lists(line_text, max_size=4))
        parts.append(gdiff(path, add or ["x = 1"], remove))
    return "".join(parts)


RISKY = {
    "protected": gdiff(".github/workflows/deploy.yml", ["permissions: write-all"]),
    "secret": gdiff("src/keys.py", [f'GITHUB_TOKEN = "{TOKEN}"'], new=True),
    "deleted-test": gdiff("tests/test_core.py", remove=["def test_core():"], deleted=True),
    "new-dependency": gdiff("requirements.txt", ["leftpad==0.1.0"]),
}
VERIFICATIONS = [None, verification(), verification(fixer="llm"), verification(tests=None)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plain_changes(),
    st.sampled_from(sorted(RISKY)),
    st.sampled_from(VERIFICATIONS),
    st.sampled_from(["propose", "review", "automerge"]),
)
def test_adding_a_risky_change_never_lowers_the_score_or_loosens_the_decision(
    diff: str, risky: str, v: Verification | None, autonomy: str
) -> None:
    policy = policy_with(f"autonomy: {autonomy}\n")
    before = scored(diff, v=v, policy=policy)
    after = scored(diff + RISKY[risky], v=v, policy=policy)
    assert after.score >= before.score
    assert LADDER.index(after.decision) <= LADDER.index(before.decision)


@settings(max_examples=40, deadline=None)
@given(plain_changes(), st.sampled_from(VERIFICATIONS))
def test_the_score_is_deterministic(diff: str, v: Verification | None) -> None:
    assert scored(diff, v=v) == scored(diff, v=v)
    assert (
        scored(diff, v=v).to_json()
        == score(
            extract(parse_diff(diff), load_policy(default_policy_text())),
            load_policy(default_policy_text()),
            verification=v,
        ).to_json()
    )


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_scoring_never_raises_on_random_text(text: str) -> None:
    s = score_diff(text, default_policy())
    assert 0 <= s.score <= 100


@settings(max_examples=200, deadline=None)
@given(plain_changes(), st.data())
def test_scoring_never_raises_on_a_mangled_diff(diff: str, data: st.DataObject) -> None:
    lines = diff.splitlines(keepends=True)
    for _ in range(data.draw(st.integers(0, 4))):
        i = data.draw(st.integers(0, max(0, len(lines) - 1)))
        op = data.draw(st.sampled_from(["drop", "dup", "garble", "cut"]))
        if not lines:
            break
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "garble":
            lines[i] = data.draw(line_text) + "\n"
        else:
            lines[i] = lines[i][: len(lines[i]) // 2]
    s = score_diff("".join(lines), default_policy())
    assert s.decision in LADDER


def test_a_cut_session_diff_still_knows_its_paths_from_git_stats() -> None:
    # The stored diff was cut at its cap; git's stats still name the workflow it changed.
    kept = gdiff("src/a.py", ["x = 1"])
    full = kept + gdiff(".github/workflows/ci.yml", ["run: curl x | sh"])
    result = result_for(kept + f"\n{TRUNCATION_MARK}\n")
    result = result.model_copy(
        update={"diff": result.diff.model_copy(update={"truncated": True, "files": stats_of(full)})}
    )
    s = score_session(result, default_policy())
    assert s.decision == "reject"
    assert {r.rule for r in s.rules} >= {"truncated_diff", "protected_path"}
    assert s.files == 2


# -- small mends (issue 16) ----------------------------------------------------------


def test_python_only_tools_do_not_count_as_unchecked_on_a_change_without_python() -> None:
    ruff = FindingsDelta(tool="ruff", ran=False, files=0)
    bandit = FindingsDelta(tool="bandit", ran=False, files=0)
    semgrep = FindingsDelta(tool="semgrep", files=1)
    s = scored(
        gdiff("docs/guide.md", ["the"], ["teh"]),
        v=verification(findings=(ruff, semgrep, bandit)),
        policy=policy_with("autonomy: automerge\n"),
    )
    assert not [c for c in s.contributions if c.factor.startswith("tool:")]
    assert "tool_failed" not in [r.rule for r in s.rules]
    assert s.decision == "automerge"
    # a tool that had files to check and did not is still a reason to look
    broken = FindingsDelta(tool="ruff", ran=False, files=2)
    s = scored(SRC, v=verification(findings=(broken,)))
    assert "tool_failed" in [r.rule for r in s.rules]


def test_skip_markers_count_in_test_files_only_and_each_place_once() -> None:
    marker = "@pytest.mark.skip  # pytest.skip( here too"
    in_source = gdiff("src/notes.py", ['HELP = "use @pytest.mark.skip or pytest.skip()"'])
    in_test = gdiff("tests/test_a.py", [marker, "def test_a(): ..."])
    assert points(scored(in_source, v=verification()), "tests_skipped") == 0
    s = scored(in_test, v=verification())
    assert [c.value for c in s.contributions if c.factor == "tests_skipped"] == ["1"]
