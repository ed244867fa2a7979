"""The audit page of one Patchwarden pull request, which its check run links to
("Details" on GitHub): every job that worked on it, its score factor by factor, and
those jobs' entries in the audit log, in order.

Served by ``serve`` at ``/audit/{owner}/{repo}/pull/{number}`` when
``PATCHWARDEN_PUBLIC_URL`` says where GitHub's users reach the server. The link carries
an HMAC of the repository and number, keyed by a key derived from the webhook secret:
it opens that one pull request's page and nothing else, it is only shown where the
pull request is (its check run), and it is not a credential to anything — no GitHub
token, no other page. The page is plain HTML with every value escaped, secrets masked
again, no script, and headers that keep it out of caches, frames, referrers and search
engines.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from pydantic import SecretStr

from app.redact import redact
from app.store import AuditEntry, AuditQuery, Outcome, Store

_LABEL = b"patchwarden audit link v1"
SIGNATURE_CHARS = 32  # 128 bits of HMAC-SHA256

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "private, no-store",
    "X-Robots-Tag": "noindex, nofollow",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}


def signature(secret: str, repo: str, number: int) -> str:
    """The link's signature for ``repo``'s pull request ``number``."""
    key = hmac.new(secret.encode(), _LABEL, hashlib.sha256).digest()
    mac = hmac.new(key, f"{repo.lower()}#{number}".encode(), hashlib.sha256)
    return mac.hexdigest()[:SIGNATURE_CHARS]


def signed(secret: str, repo: str, number: int, given: str) -> bool:
    expected = signature(secret, repo, number).encode()
    return hmac.compare_digest(expected, given.strip().lower().encode("utf-8", "replace"))


def audit_url(base: str, secret: str, repo: str, number: int) -> str:
    """Where the pull request's audit page is, signed (``base``: the public URL)."""
    return f"{base.rstrip('/')}/audit/{repo}/pull/{number}?sig={signature(secret, repo, number)}"


async def answer(
    store: Store,
    *,
    public_url: str | None,
    secret: SecretStr | None,
    repo: str,
    number: int,
    query: Mapping[str, str],
) -> web.Response:
    """``GET /audit/{owner}/{repo}/pull/{number}``: the page (``format=json``: its facts)
    when ``sig`` is right. A wrong or missing signature is a 404 that does not say
    whether the pull request exists, and is answered before the store is read."""
    if public_url is None or secret is None:
        return _not_found("audit pages are off: set PATCHWARDEN_PUBLIC_URL (docs/install.md)")
    if not signed(secret.get_secret_value(), repo, number, query.get("sig", "")):
        return _not_found("no such page: open the link from the pull request's check run, whole")
    outcomes = await store.learning.find_outcomes(repo=repo, pr_number=number)
    entries: list[AuditEntry] = []
    for job_id in sorted({o.job_id for o in outcomes}):
        entries += await store.journal.query_audit(AuditQuery(repo=repo, job_id=job_id))
    entries.sort(key=lambda e: (e.at, e.id))
    if query.get("format") == "json":
        return web.json_response(as_json(repo, number, outcomes, entries), headers=HEADERS)
    return web.Response(
        text=render(repo, number, outcomes, entries), content_type="text/html", headers=HEADERS
    )


def _not_found(message: str) -> web.Response:
    return web.json_response({"error": message}, status=404, headers=HEADERS)


def _utc(at: float | None) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if at else ""


def _e(value: object) -> str:
    """Escaped, with anything that looks like a secret masked."""
    return html.escape(redact(str(value)), quote=True)


def as_json(
    repo: str, number: int, outcomes: Sequence[Outcome], entries: Sequence[AuditEntry]
) -> dict[str, Any]:
    """The page's facts, for ``?format=json``."""
    return {
        "repo": repo,
        "pull": number,
        "jobs": [
            {
                "job": o.job_id,
                "kind": o.kind,
                "trigger": o.trigger,
                "status": o.status,
                "decision": o.decision,
                "score": o.score,
                "risk": o.risk,
                "head": o.head_sha,
                "merged_at": o.merged_at,
                "merged_how": o.merged_how,
                "merge_sha": o.merge_sha,
                "reverted_by_pr": o.reverted_by_pr,
                "factors": _masked((o.details.get("score") or {}).get("contributions", [])),
                "rules": _masked((o.details.get("score") or {}).get("rules", [])),
            }
            for o in outcomes
        ],
        "audit": [
            {
                "at": e.at,
                "action": e.action,
                "actor": _masked(e.actor),
                "job": e.job_id,
                "reason": redact(e.reason or ""),
            }
            for e in entries
        ],
    }


def _masked(value: Any) -> Any:
    """``value`` with every string in it masked (``redact``)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_masked(v) for v in value]
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    return value


def render(
    repo: str, number: int, outcomes: Sequence[Outcome], entries: Sequence[AuditEntry]
) -> str:
    """The page, as HTML."""
    title = f"Patchwarden audit: {repo}#{number}"
    pr_url = next((o.pr_url for o in reversed(outcomes) if o.pr_url), None)
    head = f'<a href="{_e(pr_url)}">{_e(title)}</a>' if pr_url else _e(title)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{_e(title)}</title>",
        "<style>body{font:14px/1.5 system-ui,sans-serif;margin:2em auto;max-width:70em;"
        "padding:0 1em}table{border-collapse:collapse;width:100%;margin:.5em 0 1.5em}"
        "th,td{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;"
        "vertical-align:top}code{font-size:90%}.n{text-align:right}</style>",
        f"</head><body><h1>{head}</h1>",
    ]
    if not outcomes:
        parts.append("<p>Patchwarden has no record of this pull request.</p>")
    for o in outcomes:
        parts.append(_job(o))
    parts.append("<h2>Audit log</h2>")
    if entries:
        parts.append(
            "<table><tr><th>When</th><th>What</th><th>Who</th><th>Job</th><th>Why</th></tr>"
        )
        for e in entries:
            parts.append(
                f"<tr><td>{_e(_utc(e.at))}</td><td><code>{_e(e.action)}</code></td>"
                f"<td>{_e(e.actor or '')}</td><td>{_e(e.job_id or '')}</td>"
                f"<td>{_e(e.reason or '')}</td></tr>"
            )
        parts.append("</table>")
    else:
        parts.append("<p>No entries.</p>")
    parts.append(
        "<p><small>Read-only. This link opens this pull request's audit only; the same "
        f"entries are in <code>patchwarden audit --repo {_e(repo)}</code>.</small></p>"
        "</body></html>"
    )
    return "\n".join(parts) + "\n"


def _job(o: Outcome) -> str:
    facts = [
        ("Job", f"{o.job_id} ({o.kind}, asked by {o.trigger})"),
        ("Requested by", o.requested_by or ""),
        ("Status", o.status),
        ("Decision", f"{o.decision} — risk {o.score}/100 ({o.risk})" if o.decision else ""),
        ("Head", o.head_sha or ""),
        ("Merged", f"{_utc(o.merged_at)} ({o.merged_how}), {o.merge_sha}" if o.merged_at else ""),
        ("Reverted by", f"#{o.reverted_by_pr}" if o.reverted_by_pr else ""),
        ("Model", f"{o.tokens} tokens, ${o.cost_usd:.4f}" if o.tokens else ""),
    ]
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts if v)
    out = [f"<h2>Job {_e(o.job_id)}</h2><table>{rows}</table>"]
    score = o.details.get("score") or {}
    rules = score.get("rules") or []
    if rules:
        out.append("<h3>Rules that capped the decision</h3><ul>")
        out += [f"<li><code>{_e(r.get('rule'))}</code>: {_e(r.get('reason'))}</li>" for r in rules]
        out.append("</ul>")
    factors = sorted(score.get("contributions") or [], key=lambda c: -abs(c.get("points", 0)))
    if factors:
        out.append(
            "<h3>Score, factor by factor</h3><table><tr><th>Factor</th><th>Measured</th>"
            '<th class="n">Points</th><th>Why</th></tr>'
        )
        out += [
            f"<tr><td><code>{_e(c.get('factor'))}</code></td><td>{_e(c.get('value'))}</td>"
            f'<td class="n">{_e(_points(c.get("points")))}</td><td>{_e(c.get("reason"))}</td></tr>'
            for c in factors
        ]
        out.append("</table>")
    return "".join(out)


def _points(value: Any) -> str:
    try:
        return f"{float(value):+g}"
    except (TypeError, ValueError):
        return json.dumps(value)
