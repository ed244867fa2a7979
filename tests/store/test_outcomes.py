"""Outcomes and per-repository pauses: the store, the summary, `audit --outcomes`, doctor."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from app.cli.doctor import _pause_check
from app.config import load_settings
from app.contract.lifecycle_rules import watched_merges
from app.store import AuditQuery, NewJob, Outcome, Pause, Store, TrustStanding, store_for_url
from app.store.migrations import SQLITE_MIGRATIONS
from app.store.outcomes import (
    format_duration,
    format_outcomes,
    summarise_outcomes,
)
from tests.cli.test_cli import clean_env, run

REPO_A = "octo-org/widgets"
REPO_B = "octo-org/gadgets"
T0 = 1_700_000_000.0


def outcome(job_id: int, repo: str = REPO_A, **fields: Any) -> Outcome:
    values: dict[str, Any] = {"kind": "fix", "trigger": "comment", "created_at": T0 + job_id}
    values.update(fields)
    return Outcome(job_id=job_id, repo=repo, **values)


# -- the store ---------------------------------------------------------------

FULL = Outcome(
    job_id=7,
    repo=REPO_A,
    kind="fix",
    trigger="label",
    created_at=T0,
    issue_number=12,
    requested_by="alice",
    status="published",
    decision="automerge",
    score=18,
    risk="low",
    pr_number=34,
    branch="patchwarden/fix-12",
    base_sha="a" * 40,
    head_sha="b" * 40,
    pr_opened_at=T0 + 95.5,
    merged_at=T0 + 600.25,
    merged_how="auto",
    merged_by="patchwarden[bot]",
    merge_sha="c" * 40,
    reverted_by_pr=35,
    revert_of_pr=None,
    tokens=12_345,
    cost_usd=0.1234,
    details={"fixer": "llm", "reasons": ["small diff", "tests pass"], "nested": {"n": 1}},
    title="Fix the greeting",
    links=("Fixes #12",),
    pr_url="https://github.com/octo-org/widgets/pull/34",
    reverts=None,
    merge_method="squash",
    two_person=False,
    canary_minutes=30.0,
    ship_it={"alice": "b" * 40},
    merge_said="Merged as cccccccccccc (automatically: every check green).",
    refused_head="d" * 40,
    refused_why="405: Base branch was modified",
)


async def test_an_outcome_round_trips_field_by_field(store: Store) -> None:
    await store.learning.save_outcome(FULL)
    assert await store.learning.get_outcome(FULL.job_id) == FULL
    assert await store.learning.get_outcome(FULL.job_id + 1) is None
    bare = outcome(8)
    await store.learning.save_outcome(bare)
    got = await store.learning.get_outcome(8)
    assert got == bare
    assert got is not None
    assert (got.status, got.tokens, got.cost_usd, got.details) == ("running", 0, 0.0, {})


async def test_saving_the_same_job_again_replaces_its_row(store: Store) -> None:
    await store.learning.save_outcome(outcome(1, status="running", details={"step": 1}))
    later = outcome(1, status="published", pr_number=9, details={"step": 2})
    await store.learning.save_outcome(later)
    assert await store.learning.get_outcome(1) == later
    assert await store.learning.find_outcomes() == [later]
    # Replacing clears what the new record leaves unset.
    await store.learning.save_outcome(outcome(1, status="failed"))
    replaced = await store.learning.get_outcome(1)
    assert replaced is not None
    assert (replaced.status, replaced.pr_number, replaced.details) == ("failed", None, {})


async def test_find_outcomes_ands_its_filters_and_orders_by_creation(store: Store) -> None:
    rows = [
        outcome(1, REPO_A, created_at=T0 + 50, pr_number=10, head_sha="h1", merge_sha="m1"),
        outcome(2, REPO_A, created_at=T0 + 10, pr_number=11, head_sha="h2"),
        outcome(3, REPO_B, created_at=T0 + 10, pr_number=10, head_sha="h1", merge_sha="m1"),
        outcome(4, REPO_B, created_at=T0 + 90),
    ]
    for row in reversed(rows):
        await store.learning.save_outcome(row)

    async def ids(**filters: Any) -> list[int]:
        return [o.job_id for o in await store.learning.find_outcomes(**filters)]

    assert await ids() == [2, 3, 1, 4]  # created_at, then job_id on a tie
    assert await ids(repo=REPO_A) == [2, 1]
    assert await ids(pr_number=10) == [3, 1]
    assert await ids(repo=REPO_B, pr_number=10) == [3]
    assert await ids(head_sha="h1") == [3, 1]
    assert await ids(repo=REPO_A, head_sha="h1") == [1]
    assert await ids(merge_sha="m1") == [3, 1]
    assert await ids(repo=REPO_B, merge_sha="m1") == [3]
    assert await ids(since=T0 + 50) == [1, 4]
    assert await ids(since=T0 + 51) == [4]
    assert await ids(repo=REPO_A, since=T0 + 51) == []
    assert await ids(pr_number=11, head_sha="h1") == []


async def test_pause_and_resume_change_state_once_and_are_audited(store: Store) -> None:
    assert await store.repos.get_pause(REPO_A) is None
    before = time.time()
    assert await store.repos.set_pause(REPO_A, paused=True, actor="alice", reason="release freeze")
    assert not await store.repos.set_pause(REPO_A, paused=True, actor="bob", reason="again")
    pause = await store.repos.get_pause(REPO_A)
    assert pause is not None
    assert (pause.repo, pause.actor, pause.reason) == (REPO_A, "alice", "release freeze")
    assert before <= pause.at <= time.time()
    assert await store.repos.set_pause(REPO_B, paused=True, actor="carol")
    assert [p.repo for p in await store.repos.pauses()] == [REPO_B, REPO_A]

    assert await store.repos.set_pause(REPO_A, paused=False, actor="bob", reason="freeze over")
    assert not await store.repos.set_pause(REPO_A, paused=False, actor="bob")
    assert await store.repos.get_pause(REPO_A) is None
    [left] = await store.repos.pauses()
    assert left == Pause(REPO_B, "carol", left.at)
    assert await store.repos.get_pause(REPO_B) == left

    entries = await store.journal.query_audit(AuditQuery())
    assert [(e.action, e.actor, e.repo, e.reason) for e in entries] == [
        ("repo.paused", "alice", REPO_A, "release freeze"),
        ("repo.paused", "carol", REPO_B, None),
        ("repo.resumed", "bob", REPO_A, "freeze over"),
    ]


def _v3_database(path: Path) -> None:
    """A database as Patchwarden left it at schema version 3, with a job in it."""
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
        )
        for migration in SQLITE_MIGRATIONS:
            if migration.version > 3:
                continue
            db.executescript(migration.sql)
            db.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                (migration.version, migration.name, T0),
            )
        db.execute(
            "INSERT INTO jobs (kind, queue, idempotency_key, repo, payload, state,"
            " max_attempts, run_after, created_at, updated_at)"
            " VALUES ('fix', 'sessions', 'old-job', ?, '{}', 'succeeded', 3, 0, 0, 0)",
            (REPO_A,),
        )


async def test_a_version_3_database_is_migrated_and_keeps_its_jobs(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    _v3_database(path)
    store = store_for_url(f"sqlite:///{path}", create=False)
    await store.open()
    try:
        assert await store.schema_version() == SQLITE_MIGRATIONS[-1].version
        [job] = await store.queue.list_jobs()
        assert job.key == "old-job"
        assert job.crashes == 0  # the column a later migration added
        await store.learning.save_outcome(outcome(job.id, status="published", pr_number=3))
        assert [o.pr_number for o in await store.learning.find_outcomes(repo=REPO_A)] == [3]
        assert await store.repos.set_pause(REPO_A, paused=True, actor="alice")
    finally:
        await store.close()
    with sqlite3.connect(path) as db:
        indexes = {r[0] for r in db.execute("SELECT name FROM pragma_index_list('outcomes')")}
        names = [r[0] for r in db.execute("SELECT name FROM schema_migrations ORDER BY version")]
    assert {"outcomes_pr", "outcomes_head", "outcomes_merge"} <= indexes
    assert names[3:5] == ["outcomes of jobs and per-repository pauses", "job crashes"]


# -- the summary ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        pytest.param([], [], id="nothing"),
        pytest.param(
            [outcome(1, status="failed"), outcome(2, status="rejected", decision="reject")],
            [
                {
                    "repo": REPO_A,
                    "jobs": 2,
                    "prs": 0,
                    "merged": 0,
                    "auto_merged": 0,
                    "approved_merged": 0,
                    "reverted": 0,
                    "reverts_merged": 0,
                    "rejected": 1,
                    "acceptance_rate": None,
                    "revert_rate": None,
                    "median_seconds_to_pr": None,
                    "median_seconds_to_merge": None,
                    "median_seconds_to_recover": None,
                    "tokens": 0,
                    "cost_usd": 0.0,
                    "cost_per_merge": None,
                }
            ],
            id="no PR, no merge: medians are None",
        ),
        pytest.param(
            [
                outcome(1, created_at=T0, pr_number=1, pr_opened_at=T0 + 30, tokens=100),
                outcome(
                    2,
                    created_at=T0,
                    pr_number=2,
                    pr_opened_at=T0 + 90,
                    merged_at=T0 + 400,
                    merged_how="auto",
                    reverted_by_pr=5,
                    cost_usd=0.1,
                ),
                outcome(
                    3,
                    created_at=T0,
                    pr_number=3,
                    pr_opened_at=T0 + 60,
                    merged_at=T0 + 200,
                    merged_how="approved",
                    cost_usd=0.2,
                ),
                outcome(4, created_at=T0, pr_number=4),  # a PR with no opening time
                outcome(5, REPO_B, created_at=T0, status="rejected", tokens=7),
            ],
            [
                {
                    "repo": REPO_B,
                    "jobs": 1,
                    "prs": 0,
                    "merged": 0,
                    "auto_merged": 0,
                    "approved_merged": 0,
                    "reverted": 0,
                    "reverts_merged": 0,
                    "rejected": 1,
                    "acceptance_rate": None,
                    "revert_rate": None,
                    "median_seconds_to_pr": None,
                    "median_seconds_to_merge": None,
                    "median_seconds_to_recover": None,
                    "tokens": 7,
                    "cost_usd": 0.0,
                    "cost_per_merge": None,
                },
                {
                    "repo": REPO_A,
                    "jobs": 4,
                    "prs": 4,
                    "merged": 2,
                    "auto_merged": 1,
                    "approved_merged": 1,
                    "reverted": 0,  # job 2's revert (#5) is not known to have merged
                    "reverts_merged": 0,
                    "rejected": 0,
                    "acceptance_rate": 0.5,  # 2 merged of 4 PRs
                    "revert_rate": 0.0,
                    "median_seconds_to_pr": 60.0,  # odd count: the middle one
                    "median_seconds_to_merge": 300.0,  # even count: the mean of the two
                    "median_seconds_to_recover": None,
                    "tokens": 100,
                    "cost_usd": 0.3,  # not 0.30000000000000004
                    "cost_per_merge": 0.15,
                },
            ],
            id="counts and medians, sorted by repo",
        ),
        pytest.param(
            [outcome(1, merged_at=T0 + 1 + 42, merged_how="manual")],
            [
                {
                    "repo": REPO_A,
                    "jobs": 1,
                    "prs": 0,
                    "merged": 1,
                    "auto_merged": 0,
                    "approved_merged": 0,
                    "reverted": 0,
                    "reverts_merged": 0,
                    "rejected": 0,
                    "acceptance_rate": None,
                    "revert_rate": 0.0,
                    "median_seconds_to_pr": None,
                    "median_seconds_to_merge": 42.0,
                    "median_seconds_to_recover": None,
                    "tokens": 0,
                    "cost_usd": 0.0,
                    "cost_per_merge": 0.0,
                }
            ],
            id="merged by hand, no PR of ours",
        ),
        pytest.param(
            [
                outcome(
                    1,
                    pr_number=3,
                    pr_opened_at=T0 + 10,
                    merged_at=T0 + 100,
                    merged_how="auto",
                    reverted_by_pr=9,
                    cost_usd=0.4,
                ),
                outcome(2, kind="revert", pr_number=9, merged_at=T0 + 700, merged_how="auto"),
                outcome(3, pr_number=4, pr_opened_at=T0 + 20),  # still open
            ],
            [
                {
                    "repo": REPO_A,
                    "jobs": 3,
                    "prs": 2,  # changes' PRs: the revert's is not a change
                    "merged": 1,  # the revert that merged is no merged change
                    "auto_merged": 1,
                    "approved_merged": 0,
                    "reverted": 1,
                    "reverts_merged": 1,
                    "rejected": 0,
                    "acceptance_rate": 0.5,
                    "revert_rate": 1.0,
                    "median_seconds_to_pr": 13.0,
                    "median_seconds_to_merge": 99.0,
                    "median_seconds_to_recover": 600.0,  # from the merge to its revert's
                    "tokens": 0,
                    "cost_usd": 0.4,
                    "cost_per_merge": 0.4,
                }
            ],
            id="a revert is not a merged change; time to recover",
        ),
        pytest.param(
            [
                # the canary blamed a person's commit; a maintainer merged the revert
                outcome(
                    1,
                    kind="alert",
                    trigger="canary",
                    reverts="human",
                    pr_number=7,
                    pr_opened_at=T0 + 30,
                    merged_at=T0 + 90,
                    merged_how="manual",
                ),
                outcome(2, pr_number=8, pr_opened_at=T0 + 10, merged_at=T0 + 50, merged_how="auto"),
            ],
            [
                {
                    "repo": REPO_A,
                    "jobs": 2,
                    "prs": 1,
                    "merged": 1,  # not 2: the revert of a person's commit is no change
                    "auto_merged": 1,
                    "approved_merged": 0,
                    "reverted": 0,
                    "reverts_merged": 1,
                    "rejected": 0,
                    "acceptance_rate": 1.0,
                    "revert_rate": 0.0,
                    "median_seconds_to_pr": 8.0,  # created at T0 + 2
                    "median_seconds_to_merge": 48.0,
                    "median_seconds_to_recover": None,
                    "tokens": 0,
                    "cost_usd": 0.0,
                    "cost_per_merge": 0.0,
                }
            ],
            id="the culprit finder's revert of a person's commit is a revert, not a change",
        ),
    ],
)
def test_summarise_outcomes(outcomes: list[Outcome], expected: list[dict[str, Any]]) -> None:
    assert summarise_outcomes(outcomes) == expected


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "-"),
        (0, "0s"),
        (42, "42s"),
        (59.4, "59s"),
        (59.6, "1m00s"),
        (190, "3m10s"),
        (3599, "59m59s"),
        (3600, "1h00m"),
        (3900, "1h05m"),
        (90000, "25h00m"),
    ],
)
def test_format_duration(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text


def test_format_outcomes_is_an_aligned_table() -> None:
    rows = summarise_outcomes(
        [
            outcome(1, pr_number=1, pr_opened_at=T0 + 1 + 190, tokens=12_345, cost_usd=1.5),
            outcome(2, REPO_B, merged_at=T0 + 2 + 3900, merged_how="auto"),
        ]
    )
    lines = format_outcomes(rows).splitlines()
    assert lines[0].split() == [
        "repo", "jobs", "PRs", "merged", "auto", "approved", "reverted", "rejected",
        "accepted", "reverted", "%", "to", "PR", "to", "merge", "to", "recover", "tokens",
        "cost", "per", "merge",
    ]  # fmt: skip
    assert lines[1].split() == [
        REPO_B, "1", "0", "1", "1", "0", "0", "0", "-", "0%", "-", "1h05m", "-", "0",
        "$0.00", "$0.00",
    ]  # fmt: skip
    assert lines[2].split() == [
        REPO_A, "1", "1", "0", "0", "0", "0", "0", "0%", "-", "3m10s", "-", "-", "12,345",
        "$1.50", "-",
    ]  # fmt: skip
    assert len({len(line) for line in lines}) == 1  # right-aligned to one width


# -- patchwarden audit --outcomes -------------------------------------------------


@pytest.fixture
def outcomes_db(tmp_path: Path) -> str:
    """REPO_A: an old rejected job and a fresh auto-merged one; REPO_B: a fresh PR."""
    url = f"sqlite:///{tmp_path / 'outcomes.db'}"
    now = time.time()

    async def seed() -> None:
        store = store_for_url(url)
        await store.open()
        try:
            ids = []
            for key in ("a-old", "a-new", "b-new"):
                job, _ = await store.queue.enqueue(NewJob(kind="fix", key=key))
                ids.append(job.id)
            await store.learning.save_outcome(
                outcome(ids[0], REPO_A, created_at=now - 3 * 86400, status="rejected")
            )
            await store.learning.save_outcome(
                outcome(
                    ids[1],
                    REPO_A,
                    created_at=now - 600,
                    status="published",
                    pr_number=5,
                    pr_opened_at=now - 600 + 42,
                    merged_at=now - 600 + 190,
                    merged_how="auto",
                    tokens=2_000,
                    cost_usd=0.25,
                )
            )
            await store.learning.save_outcome(
                outcome(
                    ids[2],
                    REPO_B,
                    created_at=now - 60,
                    status="published",
                    pr_number=9,
                    pr_opened_at=now - 60 + 3900,
                )
            )
        finally:
            await store.close()

    asyncio.run(seed())
    return url


def outcome_rows(tmp_path: Path, url: str, *args: str) -> list[dict[str, Any]]:
    done = run(
        "audit",
        "--outcomes",
        "--json",
        *args,
        cwd=tmp_path,
        env=clean_env(PATCHWARDEN_DATABASE_URL=url),
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.slow  # a `patchwarden audit` process
def test_audit_outcomes_as_json_one_object_per_repo(tmp_path: Path, outcomes_db: str) -> None:
    rows = outcome_rows(tmp_path, outcomes_db)
    assert [(r["repo"], r["jobs"], r["prs"], r["merged"]) for r in rows] == [
        (REPO_B, 1, 1, 0),
        (REPO_A, 2, 1, 1),
    ]
    a = rows[1]
    assert (a["auto_merged"], a["rejected"], a["tokens"], a["cost_usd"]) == (1, 1, 2000, 0.25)
    assert a["median_seconds_to_pr"] == pytest.approx(42)
    assert a["median_seconds_to_merge"] == pytest.approx(190)
    assert rows[0]["median_seconds_to_merge"] is None


@pytest.mark.slow  # a `patchwarden audit` process
def test_audit_outcomes_filters_by_repo_and_since(tmp_path: Path, outcomes_db: str) -> None:
    assert [r["repo"] for r in outcome_rows(tmp_path, outcomes_db, "--repo", REPO_A)] == [REPO_A]
    recent = outcome_rows(tmp_path, outcomes_db, "--since", "1h")
    assert [(r["repo"], r["jobs"], r["rejected"]) for r in recent] == [
        (REPO_B, 1, 0),
        (REPO_A, 1, 0),
    ]
    both = outcome_rows(tmp_path, outcomes_db, "--since", "2h", "--repo", REPO_B)
    assert [r["repo"] for r in both] == [REPO_B]
    assert outcome_rows(tmp_path, outcomes_db, "--repo", "nobody/nothing") == []


@pytest.mark.slow  # a `patchwarden audit` process
def test_audit_outcomes_prints_a_table(tmp_path: Path, outcomes_db: str) -> None:
    env = clean_env(PATCHWARDEN_DATABASE_URL=outcomes_db)
    done = run("audit", "--outcomes", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    header, b, a = done.stdout.splitlines()
    assert header.split()[0] == "repo"
    assert header.split()[-3:] == ["cost", "per", "merge"]
    assert b.split()[0] == REPO_B
    assert "1h05m" in b.split()
    assert a.split()[0] == REPO_A
    assert {"42s", "3m10s", "2,000", "$0.25"} <= set(a.split())


@pytest.mark.slow  # a `patchwarden audit` process
def test_audit_outcomes_shows_what_each_kind_of_change_has_earned(
    tmp_path: Path, outcomes_db: str
) -> None:
    why = "lint fixes merge themselves here: 10 merged in 30 days, 0 reverted, 0 closed unmerged"

    async def promote() -> None:
        store = store_for_url(outcomes_db)
        await store.open()
        try:
            await store.learning.set_standing(
                TrustStanding(REPO_A, "lint", "automerge", "earned", why, time.time())
            )
        finally:
            await store.close()

    asyncio.run(promote())
    (a,) = outcome_rows(tmp_path, outcomes_db, "--repo", REPO_A)
    assert [(e["kind"], e["autonomy"], e["state"], e["why"]) for e in a["earned"]] == [
        ("lint", "automerge", "earned", why)
    ]
    done = run(
        "audit", "--outcomes", cwd=tmp_path, env=clean_env(PATCHWARDEN_DATABASE_URL=outcomes_db)
    )
    assert "autonomy by kind of change, as last scored:" in done.stdout
    line = next(x for x in done.stdout.splitlines() if x.strip().startswith(REPO_A + "  lint"))
    assert line.split()[2:4] == ["automerge", "earned"]
    assert line.endswith(why)


@pytest.mark.slow  # a `patchwarden audit` process
def test_audit_outcomes_says_when_there_are_none(tmp_path: Path, outcomes_db: str) -> None:
    env = clean_env(PATCHWARDEN_DATABASE_URL=outcomes_db)
    none = run("audit", "--outcomes", "--repo", "nobody/nothing", cwd=tmp_path, env=env)
    assert none.returncode == 0
    assert none.stdout == ""
    assert "no outcomes recorded" in none.stderr
    with_job = run("audit", "--outcomes", "--job", "1", cwd=tmp_path, env=env)
    assert with_job.returncode == 2
    assert "--job" in with_job.stderr
    assert "Traceback" not in with_job.stderr


# -- doctor --------------------------------------------------------------------


def _pause(url: str, repo: str, *, actor: str, reason: str | None = None) -> None:
    async def go() -> None:
        store = store_for_url(url)
        await store.open()
        try:
            await store.repos.set_pause(repo, paused=True, actor=actor, reason=reason)
        finally:
            await store.close()

    asyncio.run(go())


def test_doctor_names_paused_repositories_and_the_global_pause(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pw.db'}"
    nothing_yet = _pause_check(load_settings(database_url=url))
    assert (nothing_yet.status, nothing_yet.detail) == (
        "ok",
        "none: no global pause, no repository paused",
    )
    assert not (tmp_path / "pw.db").exists()

    _pause(url, REPO_A, actor="alice", reason="release freeze")
    check = _pause_check(load_settings(database_url=url))
    assert check.status == "warn"
    assert check.detail.startswith(f"{REPO_A} paused by alice since ")
    assert check.detail.endswith("Z (release freeze)")
    assert "globally" not in check.detail

    both = _pause_check(load_settings(database_url=url, paused=True))
    assert both.detail.startswith("paused globally (PATCHWARDEN_PAUSED); ")
    assert REPO_A in both.detail


def test_doctor_pause_check_survives_a_broken_store(tmp_path: Path) -> None:
    (tmp_path / "broken.db").write_text("this is not a database")
    check = _pause_check(load_settings(database_url=f"sqlite:///{tmp_path / 'broken.db'}"))
    assert check.status == "warn"
    assert check.detail.startswith("repository pauses unknown: ")
    globally = _pause_check(
        load_settings(database_url=f"sqlite:///{tmp_path / 'broken.db'}", paused=True)
    )
    assert globally.detail.startswith("paused globally (PATCHWARDEN_PAUSED); repository pauses")


@pytest.mark.slow
def test_doctor_command_shows_pauses(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pw.db'}"
    _pause(url, REPO_B, actor="bob")
    env = clean_env(PATCHWARDEN_DATABASE_URL=url, PATCHWARDEN_PAUSED="true")
    done = run("doctor", "--json", cwd=tmp_path, env=env, timeout=120)
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert checks["pauses"]["status"] == "warn"
    assert checks["pauses"]["detail"].startswith(
        f"paused globally (PATCHWARDEN_PAUSED); {REPO_B} paused by bob since "
    )
    text = run("doctor", cwd=tmp_path, env=env, timeout=120)
    assert f"{REPO_B} paused by bob" in text.stdout


def test_settings_read_the_global_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().paused is False
    monkeypatch.setenv("PATCHWARDEN_PAUSED", "true")
    assert load_settings().paused is True


async def test_outcome_fields_all_have_a_column(store_url: str) -> None:
    """The table and the record keep one column per field, of the same name, in order."""
    store = store_for_url(store_url)
    await store.open()
    try:
        columns = await store.database.run(
            lambda: store.database.db.execute("SELECT * FROM outcomes WHERE 1 = 0")
        )
        names = [d[0] for d in columns.description]
    finally:
        await store.close()
    assert names == [f.name for f in dataclasses.fields(Outcome)]


async def test_a_version_5_outcome_keeps_its_merge_state_in_typed_fields(
    store_url: str,
) -> None:
    """Before version 6 a merge's state lived in ``details``: the migration moves it into
    the typed columns, so a pull request waiting to merge across the upgrade keeps its
    rules, its `ship it`s and GitHub's last refusal (on SQLite and PostgreSQL alike)."""
    old_store = store_for_url(store_url)
    old_store.database.migrations = old_store.database.migrations[:5]
    await old_store.open()
    details = {
        "score": {"score": 18},
        "merge": {"method": "squash", "two_person": False, "canary_minutes": 45},
        "title": "Fix the greeting",
        "reverts": "bot",
        "pr_url": "https://github.com/octo-org/widgets/pull/34",
        "links": ["Fixes #12"],
        "ship_it": {"alice": "b" * 40},
        "merge_said": "Not merged yet: waiting for checks.",
        "merge_refused": {"head": "b" * 40, "why": "405: Base branch was modified"},
    }
    old = [(7, REPO_A, "fix", "comment", T0, "published", json.dumps(details))]
    old.append((8, REPO_A, "fix", "comment", T0, "running", "{}"))
    await old_store.database.run(
        lambda: old_store.database.db.executemany(
            "INSERT INTO outcomes (job_id, repo, kind, trigger, created_at, status, details)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            old,
        )
    )
    assert await old_store.schema_version() == 5
    await old_store.close()
    store = store_for_url(store_url, create=False)
    await store.open()
    try:
        assert await store.schema_version() == SQLITE_MIGRATIONS[-1].version
        waiting = await store.learning.get_outcome(7)
        bare = await store.learning.get_outcome(8)
    finally:
        await store.close()
    assert waiting is not None
    assert bare is not None
    assert waiting.details == {"score": {"score": 18}}
    assert (waiting.merge_method, waiting.two_person, waiting.canary_minutes) == (
        "squash",
        False,
        45.0,
    )
    assert (waiting.title, waiting.reverts, waiting.links) == (
        "Fix the greeting",
        "bot",
        ("Fixes #12",),
    )
    assert waiting.pr_url == "https://github.com/octo-org/widgets/pull/34"
    assert waiting.ship_it == {"alice": "b" * 40}
    assert waiting.merge_said == "Not merged yet: waiting for checks."
    assert (waiting.refused_head, waiting.refused_why) == (
        "b" * 40,
        "405: Base branch was modified",
    )
    # Nothing recorded: the stricter rules (two people, the merge method GitHub defaults to).
    assert (bare.merge_method, bare.two_person, bare.canary_minutes, bare.links) == (
        "merge",
        True,
        0.0,
        (),
    )


# -- the canary's window -------------------------------------------------------------


def _merged(job_id: int, at: float | None, minutes: float | None = 60) -> Outcome:
    # minutes None: an outcome recorded without a policy (the column's default)
    window = {} if minutes is None else {"canary_minutes": minutes}
    return outcome(job_id, merge_sha=f"{job_id:040d}" if at else None, merged_at=at, **window)


def test_watched_merges_are_those_in_their_window_newest_first() -> None:
    now = T0 + 10_000
    found = watched_merges(
        [
            _merged(1, now - 3600),  # exactly at the end of its hour: still watched
            _merged(2, now - 3601),  # just out
            _merged(3, now - 60),  # the newest
            _merged(4, now - 60, minutes=0),  # canary off
            _merged(5, now - 60, minutes=None),  # no recorded policy: not watched
            _merged(6, None),  # never merged
            _merged(7, now - 600, minutes=5),  # a shorter window, over
        ],
        now=now,
    )
    assert [o.job_id for o in found] == [3, 1]


def test_a_merge_counts_as_reverted_only_once_its_revert_merged() -> None:
    from app.store import Outcome
    from app.store.outcomes import reverted

    fix = Outcome(1, "o/r", "fix", "comment", 0.0, pr_number=2, merged_at=5.0, reverted_by_pr=3)
    waiting = Outcome(2, "o/r", "revert", "canary", 6.0, pr_number=3)
    assert reverted([fix, waiting]) == []  # opened, never merged: nothing was undone
    merged = Outcome(2, "o/r", "revert", "canary", 6.0, pr_number=3, merged_at=9.0)
    assert reverted([fix, merged]) == [fix]
    elsewhere = Outcome(3, "o/other", "revert", "canary", 6.0, pr_number=3, merged_at=9.0)
    assert reverted([fix, elsewhere]) == []  # another repository's PR #3
