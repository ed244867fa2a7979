"""What observing and learning cost per repository: earned autonomy and the watch on
the default branch, each over a year of one repository's history.

Run: ``.venv/bin/python bench/learn.py [--runs 7] [--outcomes 2000] [--checks 50000]
[--json] [--check]``. bench/README.md says how to read the figures.

**The history.** One repository, one year, made here with ``random.Random(seed)``:
``--outcomes`` (2,000) store ``Outcome`` records spread over 365 days — fixes of every kind
(lint, docs, tests, source, dependencies), most merged, one in 25 reverted (its revert a
merged ``revert`` outcome of its own), some never merged — plus one rejection (a pull
request closed unmerged) per 40 outcomes and a maintainer's reset every quarter.

**Timed**, each the median of ``--runs``:

- *record*: ``app.contract.lifecycle_rules.record_of`` — the outcomes and trust events
  turned into the policy's ``Past`` records (what a job does after reading the store);
- *standings*: ``app.policy.learn.standings`` — every kind's standing at the end of the
  year (``audit --outcomes``-sized work);
- *one score's standing*: ``History.standing`` for one kind, as ``score()`` calls it;
- *end to end*: the three together, what a job adds to scoring a change.

**The check history.** ``--checks`` (50,000) completed checks on the default branch over
the same year, as the store returns them (``CheckRecord``, oldest first): twelve checks
taking turns, 5 % failures at random, durations around each check's own; then, in the
last days, one check that fails and passes on the same two commits (flaky), one whose
failures jump to half its runs, one whose runs take three times as long. Timed: the
watch (``app.policy.watch_rules.watch``) over all of it, with the default ``watch`` policy;
the bench checks that it finds exactly those three.

The policy is ``policies/default.yml`` with ``learn: {ceiling: automerge}``, loaded once
before any timing. Pure CPU: no store, no files, no network.

Targets: earned autonomy end to end, and the watch, each under 50 ms (median of
``--runs``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from procstat import OtherCpu, common_options, finish, guarded, loadavg, log, machine, noise_warning

from app.contract.lifecycle_rules import record_of
from app.policy.learn import standings
from app.policy.policy_model import load_policy
from app.policy.score import History
from app.policy.watch_rules import watch
from app.sessions.policyfile import default_policy_text
from app.store.models import CheckRecord, Outcome, TrustEvent

REPO = "octo-org/widgets"
DAY = 86400.0
KINDS = ("lint", "lint", "lint", "docs", "tests", "source", "source", "dependencies")
TARGET_MS = 50.0


def history(n: int, *, now: float, seed: int = 20) -> tuple[list[Outcome], list[TrustEvent]]:
    """``n`` outcomes and their trust events over the year before ``now``."""
    rng = random.Random(seed)
    outcomes: list[Outcome] = []
    events: list[TrustEvent] = []
    pr = 0
    start = now - 365 * DAY
    for i in range(n):
        created = start + 365 * DAY * i / n
        pr += 1
        merged = created + rng.uniform(600, 2 * DAY) if rng.random() < 0.85 else None
        reverted_by = None
        if merged is not None and rng.random() < 0.04:
            pr += 1
            reverted_by = pr
            outcomes.append(
                Outcome(
                    job_id=100_000 + i,
                    repo=REPO,
                    kind="revert",
                    trigger="canary",
                    created_at=merged + 3600,
                    pr_number=pr,
                    merged_at=merged + 7200,
                    revert_of_pr=pr - 1,
                    category="revert",
                )
            )
        outcomes.append(
            Outcome(
                job_id=i + 1,
                repo=REPO,
                kind="fix",
                trigger="comment",
                created_at=created,
                pr_number=pr - (1 if reverted_by else 0),
                merged_at=merged,
                reverted_by_pr=reverted_by,
                category=rng.choice(KINDS),
            )
        )
        if i % 40 == 0:
            events.append(
                TrustEvent(REPO, "rejected", rng.choice(KINDS), created + DAY, actor="carol")
            )
    for quarter in range(1, 4):
        events.append(TrustEvent(REPO, "reset", "*", start + quarter * 91 * DAY, actor="alice"))
    outcomes.sort(key=lambda o: (o.created_at, o.job_id))
    events.sort(key=lambda e: e.at)
    return outcomes, events


def checks(n: int, *, now: float, seed: int = 20) -> list[CheckRecord]:
    """``n`` completed checks over the year before ``now``, with three findings at the end."""
    rng = random.Random(seed)
    names = [f"check-{i:02d}" for i in range(12)]
    usual = {name: rng.uniform(20, 600) for name in names}
    start = now - 365 * DAY
    records = []
    for i in range(n):
        at = start + 365 * DAY * i / n
        name = names[i % len(names)]
        late = i >= n - 25 * len(names)  # each check's last 25 runs
        failed = rng.random() < (0.5 if late and name == "check-01" else 0.05)
        seconds = usual[name] * (3 if late and name == "check-02" else rng.uniform(0.8, 1.2))
        sha = f"{i // len(names):040x}"
        if name == "check-00" and i >= n - 4 * len(names):  # its last 4 runs: re-runs
            run = i // len(names)  # of two commits, failing once and passing once each
            failed, sha = run % 2 == 0, f"{run // 2:040x}"
        records.append(
            CheckRecord(
                repo=REPO,
                check=name,
                sha=sha,
                conclusion="failure" if failed else "success",
                completed_at=at,
                started_at=at - seconds,
                external_id=str(i),
            )
        )
    return records


def median_ms(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), result


def run(args: argparse.Namespace) -> int:
    load_before, others = loadavg(), OtherCpu()
    now = 1_800_000_000.0
    t0 = time.perf_counter()
    policy = load_policy(default_policy_text(), "learn:\n  ceiling: automerge\n")
    load_ms = (time.perf_counter() - t0) * 1000
    outcomes, events = history(args.outcomes, now=now)
    log(args, f"{len(outcomes)} outcomes, {len(events)} trust events over 365 days")

    def record() -> Any:
        return record_of(outcomes, events)

    record_ms, (past, resets) = median_ms(record, args.runs)

    def every_kind() -> Any:
        return standings(past, policy.learn, base=policy.autonomy, now=now, resets=dict(resets))

    standings_ms, every = median_ms(every_kind, args.runs)
    hist = History(past=past, resets=resets, now=now)
    one_ms, one = median_ms(lambda: hist.standing("lint", policy), args.runs)

    def end_to_end() -> Any:
        p, r = record_of(outcomes, events)
        History(past=p, resets=r, now=now).standing("lint", policy)
        return standings(p, policy.learn, base=policy.autonomy, now=now, resets=dict(r))

    total_ms, _ = median_ms(end_to_end, args.runs)
    history_of_checks = checks(args.checks, now=now)
    watch_ms, found = median_ms(lambda: watch(history_of_checks, policy.watch, now=now), args.runs)
    keys = sorted(f.key for f in found)
    expected = ["duration:check-02", "failure_rate:check-01", "flaky:check-00"]
    if keys != expected:
        raise RuntimeError(f"the watch found {keys}, not {expected}")
    met = total_ms < TARGET_MS and watch_ms < TARGET_MS
    doc = {
        "bench": "learn",
        "outcomes": len(outcomes),
        "trust_events": len(events),
        "runs": args.runs,
        "policy_load_ms": round(load_ms, 2),
        "record_ms": round(record_ms, 3),
        "standings_ms": round(standings_ms, 3),
        "one_standing_ms": round(one_ms, 3),
        "end_to_end_ms": round(total_ms, 3),
        "check_runs": len(history_of_checks),
        "watch_ms": round(watch_ms, 3),
        "watch_findings": keys,
        "standings": {k: [s.state, s.autonomy, s.merged] for k, s in every.items()},
        "lint": one.explain() if one is not None else None,
        "target": {"end_to_end_ms_below": TARGET_MS, "watch_ms_below": TARGET_MS, "met": met},
        "machine": machine(load_before, others),
    }
    lines = [
        f"earned autonomy over {len(outcomes):,} outcomes and {len(events)} trust events "
        f"(one repository, 365 days), median of {args.runs}:",
        f"  record_of          {record_ms:8.2f} ms",
        f"  standings (all)    {standings_ms:8.2f} ms   {len(every)} kinds",
        f"  one score's kind   {one_ms:8.2f} ms   lint: {doc['lint']}",
        f"  end to end         {total_ms:8.2f} ms   target < {TARGET_MS:g} ms: "
        + ("MET" if total_ms < TARGET_MS else "MISSED"),
        f"the watch over {len(history_of_checks):,} check runs (365 days), median of {args.runs}:",
        f"  watch              {watch_ms:8.2f} ms   found {', '.join(keys)}; target < "
        f"{TARGET_MS:g} ms: " + ("MET" if watch_ms < TARGET_MS else "MISSED"),
        *noise_warning(doc),
    ]
    return finish(doc, "\n".join(lines), args)


def main() -> int:
    parser = common_options(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--outcomes", type=int, default=2000)
    parser.add_argument("--checks", type=int, default=50_000)
    return guarded(run, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
