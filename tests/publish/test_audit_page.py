"""The audit page a check run links to: signed per pull request, and inert — every
value escaped and secrets masked, whatever the audit log holds."""

from __future__ import annotations

from app.publish import audit_page
from app.store import AuditEntry, Outcome

SECRET = "webhook-" + "secret"  # built, so no credential literal sits in the source


def test_a_signature_opens_one_pull_request_of_one_repository() -> None:
    sig = audit_page.signature(SECRET, "octo/widgets", 12)
    assert len(sig) == audit_page.SIGNATURE_CHARS
    assert audit_page.signed(SECRET, "octo/widgets", 12, sig)
    assert audit_page.signed(SECRET, "Octo/Widgets", 12, sig.upper())  # GitHub's names fold
    assert not audit_page.signed(SECRET, "octo/widgets", 13, sig)
    assert not audit_page.signed(SECRET, "octo/gadgets", 12, sig)
    assert not audit_page.signed(SECRET + "x", "octo/widgets", 12, sig)  # a rotated secret
    assert not audit_page.signed(SECRET, "octo/widgets", 12, "")
    assert not audit_page.signed(SECRET, "octo/widgets", 12, "é" * 32)  # no TypeError: a 404
    url = audit_page.audit_url("https://pw.example.org/", SECRET, "octo/widgets", 12)
    assert url == f"https://pw.example.org/audit/octo/widgets/pull/12?sig={sig}"
    assert SECRET not in url


def test_hostile_text_in_the_log_is_shown_inert_and_secrets_masked() -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    hostile = f'<script>alert(1)</script><img src=x onerror="x"> {token}'
    outcome = Outcome(
        job_id=3, repo="octo/widgets", kind="fix", trigger="comment", created_at=0.0,
        requested_by="<b>mallory</b>", status="published", decision="review", score=30,
        risk="medium", pr_number=12, pr_url='https://github.com/octo/widgets/pull/12"><x',
        details={"score": {"contributions": [
            {"factor": "fixer", "value": hostile, "points": 15, "reason": hostile}],
            "rules": [{"rule": "secret", "decision": "reject", "reason": hostile}]}},
    )  # fmt: skip
    entry = AuditEntry(
        id=1, at=1.0, action="policy.decided", actor="<i>x</i>", repo="octo/widgets",
        job_id=3, delivery_id=None, reason=hostile, details={},
    )  # fmt: skip
    page = audit_page.render("octo/widgets", 12, [outcome], [entry])
    assert "<script" not in page
    assert "<img" not in page
    assert "<b>mallory" not in page
    assert "<i>x" not in page
    assert "&lt;script&gt;" in page
    assert token not in page
    assert '"><x' not in page  # the link's quote cannot end the attribute
    assert "+15" in page
    assert token not in str(audit_page.as_json("octo/widgets", 12, [outcome], [entry]))


def test_a_pull_request_patchwarden_never_saw_says_so() -> None:
    page = audit_page.render("octo/widgets", 99, [], [])
    assert "no record of this pull request" in page
    assert "No entries." in page
