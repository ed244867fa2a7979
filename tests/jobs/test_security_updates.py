"""Dependabot alerts end to end on LocalForge (issue 34): GitHub raises the alert, the
server queues the fix, a worker runs the session (the dependency fixer, real pip in
bubblewrap for the base and the patch, from a local folder of wheels that the setup
phase gets as a user's find-links), the policy scores the bump and the pull request
opens; a patch bump merges itself under ``autonomy: automerge`` and the alert closes
when the default branch no longer matches; a major bump waits for a maintainer, and
dismissing its alert closes the pull request; a code scanning alert for a semgrep rule
with an autofix becomes a pull request that changes the alert's place only, also with no
configuration at all (GitHub's own example delivery, a rule of Patchwarden's pack), and
an alert the default policy skips is audited with why (issue 55).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from app.localforge import LocalForge
from app.store import AuditQuery
from tests.conftest import INSTALLATION, REPO, Harness
from tests.fixers.test_fixer_dependency import CHECK, wheels
from tests.fixers.test_fixer_scanning import RULES, TESTS
from tests.webhooks.test_security_alerts import github_example

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap sessions"),
]

CONFIG = (
    "autonomy: automerge\n"
    "test: python check.py\n"
    "alerts:\n"
    "  dependabot:\n"
    "    mode: within-autonomy\n"
)
GHSA = "GHSA-9wx4-h78v-vm56"
REQUIREMENTS_PARSE = (
    "import pathlib\n"
    "from packaging.requirements import Requirement\n"
    "for line in pathlib.Path('requirements.txt').read_text().splitlines():\n"
    "    Requirement(line)\n"
)


@pytest.fixture
async def start(
    make_pw: Callable[..., Awaitable[Harness]],
    forge: LocalForge,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[[], Awaitable[Harness]]:
    async def go() -> Harness:
        # The setup phase installs from these wheels only, as a user's pip would from
        # a find-links folder (passed into the sandbox's setup, mounted read-only).
        monkeypatch.setenv("PIP_NO_INDEX", "1")
        monkeypatch.setenv("PIP_FIND_LINKS", str(wheels(tmp_path / "wheels")))
        files = {
            "requirements.txt": "pw-vuln==1.0.0\n",
            "check.py": CHECK,
            ".github/patchwarden.yml": CONFIG,
        }
        await forge.push(REPO, files, author="alice")
        forge.add_user(REPO, "alice", "maintain")
        # The repository's CI (on the host, without the package): the requirements parse.
        forge.require_check(REPO, "requirements", [sys.executable, "-c", REQUIREMENTS_PARSE])
        pw = await make_pw(workers=2)
        await forge.install(INSTALLATION, by="alice")
        return pw

    return go


def on_main(forge: LocalForge, path: str) -> str:
    git = forge.repos[REPO].git
    entry = git.entry(git.resolve("refs/heads/main") or "", path)
    assert entry is not None
    return (entry.content or b"").decode()


async def said(pw: Harness, action: str) -> list[str]:
    return [
        str(e.reason)
        for e in await pw.store.journal.query_audit(AuditQuery())
        if e.action == action
    ]


async def test_a_patch_bump_merges_itself_and_the_alert_closes(
    start: Callable[[], Awaitable[Harness]],
) -> None:
    pw = await start()
    alert = await pw.forge.security.raise_dependabot_alert(
        REPO,
        package="pw-vuln",
        vulnerable_range="< 1.0.1",
        first_patched="1.0.1",
        severity="medium",
        ghsa=GHSA,
        summary="pw-vuln <script>alert(1)</script> leaks the session",
    )
    await pw.settle(within=240, every_job=True)

    [pull] = pw.forge.pulls(REPO)
    issue = pw.forge.issue(REPO, pull.number)
    assert issue.title == f"Bump pw-vuln to 1.0.1 ({GHSA})"
    body = issue.body or ""
    assert body.startswith(
        f"**Security update:** `pw-vuln` `1.0.0` → `1.0.1` (a patch bump) for [{GHSA}]"
        f"(https://github.com/advisories/{GHSA}), severity **medium**."
    ), body[:400]
    assert f"Fixes [Dependabot alert 1]({pw.forge.url}/{REPO}/security/dependabot/1)" in body
    assert "the patch's own setup installed `pw-vuln 1.0.0 → 1.0.1`" in body
    # The advisory's text is its author's: sanitised at intake, fenced here.
    assert "```text\npw-vuln  leaks the session\n```" in body
    assert "<script>" not in body
    assert pw.forge.pull(REPO, pull.number).merged, body
    assert on_main(pw.forge, "requirements.txt") == "pw-vuln==1.0.1\n"

    # GitHub reads the manifest again, finds it safe and closes the alert; the outcome
    # of the fix records that its merge did it.
    assert alert.state == "fixed"
    [job] = await pw.jobs("security_alert")
    outcome = await pw.store.learning.get_outcome(job.id)
    assert (outcome.decision, outcome.status) == ("automerge", "published")
    assert outcome.details["alert_closed"]["action"] == "fixed"
    assert f"Dependabot alert #1 fixed: the merge of #{pull.number} fixed it" in await said(
        pw, "security_alert.closed"
    )


async def test_a_major_bump_waits_and_dismissing_the_alert_closes_its_pull_request(
    start: Callable[[], Awaitable[Harness]],
) -> None:
    pw = await start()
    alert = await pw.forge.security.raise_dependabot_alert(
        REPO, package="pw-vuln", vulnerable_range="< 2.0.0", first_patched="2.0.0", ghsa=GHSA
    )
    await pw.settle(within=240, every_job=True)

    [pull] = pw.forge.pulls(REPO)
    body = pw.forge.issue(REPO, pull.number).body or ""
    assert not pw.forge.pull(REPO, pull.number).merged
    assert "(a major bump)" in body
    assert "a major bump of `pw-vuln` waits for a maintainer" in body
    assert "`pw-extra 1.0 (new)`" in body  # what the update installs anew
    assert on_main(pw.forge, "requirements.txt") == "pw-vuln==1.0.0\n"
    assert alert.state == "open"

    await pw.forge.security.alert_event(REPO, alert, "dismissed", by="alice")
    await pw.settle(within=60, every_job=True)
    assert pw.forge.issue(REPO, pull.number).state == "closed"
    assert not pw.forge.pull(REPO, pull.number).merged


async def test_a_semgrep_alert_with_an_autofix_becomes_a_pull_request_at_its_place_only(
    make_pw: Callable[..., Awaitable[Harness]], forge: LocalForge
) -> None:
    files = {".semgrep.yml": RULES, "tests/test_t.py": TESTS, "pytest.ini": "[pytest]\n"}
    await forge.push(REPO, files, author="alice")
    pw = await make_pw(workers=1)
    await forge.install(INSTALLATION, by="alice")
    await forge.security.raise_code_scanning_alert(
        REPO,
        rule="no-assert-equals",
        path="tests/test_t.py",
        start_line=9,
        message="assertEquals() was removed in Python 3.12",
    )
    await pw.settle(within=120, every_job=True)

    [pull] = pw.forge.pulls(REPO)
    issue = pw.forge.issue(REPO, pull.number)
    assert issue.title == "Fix no-assert-equals at tests/test_t.py:9"
    assert pull.changed_files == 1
    assert (pull.additions, pull.deletions) == (1, 1)
    body = issue.body or ""
    assert f"Fixes [code scanning alert 1]({pw.forge.url}/{REPO}/security/code-scanning/1)" in body
    assert "it no longer matches at line 9" in body
    assert not pw.forge.pull(REPO, pull.number).merged  # `alerts.code_scanning.mode`: review


ASSERT_EQUALS = (
    "import unittest\n\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_one(self):\n"
    "        self.assertEquals(1, 1)\n"
)


async def test_a_semgrep_alert_opens_a_pull_request_by_default_and_a_skipped_one_says_why(
    make_pw: Callable[..., Awaitable[Harness]], forge: LocalForge
) -> None:
    """Issue 55: a repository with no ``.github/patchwarden.yml`` and no rule file of its
    own. GitHub's own example ``created`` delivery (its place in ``instances`` only),
    here for a rule of Patchwarden's autofix pack, opens a pull request that waits for a
    maintainer; an alert the default policy skips leaves an audit line saying why."""
    await forge.push(
        REPO, {"tests/test_t.py": ASSERT_EQUALS, "pytest.ini": "[pytest]\n"}, author="alice"
    )
    pw = await make_pw(workers=1)
    payload = github_example(
        ref="refs/heads/main",
        id="patchwarden.autofix.unittest-assert-equals",
        severity="warning",  # semgrep's WARNING: medium
        description="assertEquals() was removed in Python 3.12",
    )
    payload["alert"]["tool"]["name"] = "Semgrep OSS"  # its SARIF's driver, as GitHub shows it
    payload["alert"]["html_url"] = f"{forge.url}/{REPO}/security/code-scanning/10"
    [instance] = payload["alert"]["instances"]
    instance["location"].update(path="tests/test_t.py", start_line=6, end_line=6)
    status, _ = await pw.post_webhook("code_scanning_alert", payload)
    assert status == 202
    await forge.security.raise_code_scanning_alert(
        REPO, rule="patchwarden.autofix.logging-warn", path="tests/test_t.py", start_line=1,
        severity="note",  # semgrep's INFO: low, below the default min_severity
    )  # fmt: skip
    await pw.settle(within=120, every_job=True)

    [pull] = pw.forge.pulls(REPO)
    issue = pw.forge.issue(REPO, pull.number)
    assert issue.title == "Fix patchwarden.autofix.unittest-assert-equals at tests/test_t.py:6"
    assert (pull.changed_files, pull.additions, pull.deletions) == (1, 1, 1)
    body = issue.body or ""
    assert f"Fixes [code scanning alert 10]({forge.url}/{REPO}/security/code-scanning/10)" in body
    assert "(`alerts.code_scanning.mode`: review)" in body, body
    assert not pw.forge.pull(REPO, pull.number).merged  # it waits for a maintainer
    assert on_main(forge, "tests/test_t.py") == ASSERT_EQUALS
    skipped = [s for s in await said(pw, "trigger.ignored") if s.startswith("code scanning")]
    assert skipped == [
        "code scanning alert #1 created: its severity low is below "
        "`alerts.code_scanning.min_severity` (medium): set it to `low` in "
        "`.github/patchwarden.yml` to have such alerts fixed; acknowledged, no fix"
    ]
