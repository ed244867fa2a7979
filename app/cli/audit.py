"""``patchwarden audit``: the audit log, the outcomes per repository (``--outcomes``) and
the jobs that failed for good (``--failed``), read from an existing database."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TypeVar

from app.config import Settings, load_settings
from app.errors import BadInput
from app.store import AuditQuery, Outcome, Store, TrustStanding, store_for_url

T = TypeVar("T")


def _utc(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


async def _read_store(settings: Settings, read: Callable[[Store], Awaitable[T]]) -> T:
    """One read of an existing database (the audit commands never create one)."""

    store = store_for_url(settings.database_url, create=False)
    await store.open()
    try:
        return await read(store)
    finally:
        await store.close()


_COLUMNS = "{when:<20}  {action:<28} {repo:<24} {job:<8} {actor:<16} {reason}"


async def _audit(settings: Settings, query: AuditQuery, as_json: bool) -> int:
    entries = await _read_store(settings, lambda store: store.journal.query_audit(query))
    if entries and not as_json:
        header = _COLUMNS.format(
            when="at (UTC)", action="action", repo="repo", job="job", actor="actor", reason="why"
        )
        print(header.rstrip())
    for e in entries:
        when = _utc(e.at)
        if as_json:
            row = {
                "id": e.id,
                "at": when,
                "action": e.action,
                "actor": e.actor,
                "repo": e.repo,
                "job": e.job_id,
                "delivery": e.delivery_id,
                "reason": e.reason,
                "details": e.details,
            }
            print(json.dumps(row, sort_keys=True))
        else:
            job = f"job {e.job_id}" if e.job_id is not None else "-"
            line = _COLUMNS.format(
                when=when, action=e.action, repo=e.repo or "-", job=job,
                actor=e.actor or "-", reason=e.reason or "",
            )  # fmt: skip
            print(line.rstrip())
    if not entries and not as_json:
        print("no audit entries match", file=sys.stderr)
    return 0


async def _audit_outcomes(
    settings: Settings, *, repo: str | None, since: float | None, as_json: bool
) -> int:
    from app.store.outcomes import format_outcomes, summarise_outcomes

    async def read(store: Store) -> tuple[list[Outcome], list[TrustStanding]]:
        return await store.learning.find_outcomes(
            repo=repo, since=since
        ), await store.learning.standings(repo)

    outcomes, standings = await _read_store(settings, read)
    rows = summarise_outcomes(outcomes)
    earned: dict[str, list[dict[str, object]]] = {}
    for s in standings:
        earned.setdefault(s.repo, []).append(
            {
                "kind": s.category,
                "autonomy": s.autonomy,
                "state": s.state,
                "why": s.explanation,
                "at": _utc(s.at),
            }
        )
    if as_json:
        for row in rows:
            print(json.dumps({**row, "earned": earned.get(str(row["repo"]), [])}, sort_keys=True))
    elif rows:
        print(format_outcomes(rows))
        if earned:
            # what each kind of change had earned when one was last scored (learn)
            print("\nautonomy by kind of change, as last scored:")
            for name in sorted(earned):
                for e in earned[name]:
                    print(
                        f"  {name}  {e['kind']:<13} {e['autonomy']:<9} {e['state']:<8} {e['why']}"
                    )
    else:
        print("no outcomes recorded", file=sys.stderr)
    return 0


async def _audit_failed(
    settings: Settings,
    *,
    repo: str | None,
    since: float | None,
    as_json: bool,
    limit: int = 1000,
) -> int:
    from app.contract.kinds import thread_of

    jobs = await _read_store(settings, lambda store: store.queue.list_jobs(state="failed"))
    wanted = repo.lower() if repo else None  # GitHub's names are case-insensitive
    jobs = [
        j
        for j in jobs
        if (wanted is None or (j.repo or "").lower() == wanted)
        and (since is None or j.updated_at >= since)
    ]
    jobs = jobs[max(len(jobs) - limit, 0) :]  # the latest ``limit``
    for j in jobs:
        when = _utc(j.updated_at)
        row = {
            "job": j.id,
            "kind": j.kind,
            "repo": j.repo,
            "failed_at": when,
            "runs": j.attempts,
            "crashes": j.crashes,
            "issue": thread_of(j),
            "error": j.last_error,
        }
        if as_json:
            print(json.dumps(row, sort_keys=True))
        else:
            where = f"{j.repo or '-'}#{row['issue']}" if row["issue"] else j.repo or "-"
            print(
                f"{when}  job {j.id:<6} {j.kind:<8} {where:<30} runs {j.attempts} "
                f"(crashes {j.crashes})  {j.last_error or ''}"
            )
    if not jobs and not as_json:
        print("no failed jobs", file=sys.stderr)
    return 0


def run_audit(args: argparse.Namespace) -> int:

    from app.store import AuditQuery

    settings = load_settings()
    if args.failed:
        if args.job is not None or args.outcomes:
            raise BadInput("--failed lists failed jobs: use --repo or --since with it")
        return asyncio.run(
            _audit_failed(
                settings, repo=args.repo, since=args.since, as_json=args.json, limit=args.limit
            )
        )
    if args.outcomes:
        if args.job is not None:
            raise BadInput(
                "--outcomes sums up whole repositories: use --repo or --since, not --job"
            )
        return asyncio.run(
            _audit_outcomes(settings, repo=args.repo, since=args.since, as_json=args.json)
        )
    query = AuditQuery(repo=args.repo, job_id=args.job, since=args.since, limit=args.limit)
    return asyncio.run(_audit(settings, query, args.json))
