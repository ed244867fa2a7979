"""Schema migrations, numbered from the first version on.

A migration is applied once, in a transaction, and recorded in ``schema_migrations``.
Never edit a released migration: add the next number.
"""

from __future__ import annotations

from typing import NamedTuple


class Migration(NamedTuple):
    version: int
    name: str
    sql: str


SQLITE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "deliveries, jobs, audit, installations",
        """
        CREATE TABLE deliveries (
            id              TEXT PRIMARY KEY,
            source          TEXT NOT NULL,
            event           TEXT NOT NULL,
            action          TEXT,
            installation_id INTEGER,
            repo            TEXT,
            sender          TEXT,
            payload         TEXT NOT NULL,
            received_at     REAL NOT NULL
        );
        CREATE INDEX deliveries_repo ON deliveries (repo, received_at);

        CREATE TABLE jobs (
            id               INTEGER PRIMARY KEY AUTOINCREMENT,
            kind             TEXT NOT NULL,
            queue            TEXT NOT NULL,
            idempotency_key  TEXT NOT NULL UNIQUE,
            repo             TEXT,
            installation_id  INTEGER,
            delivery_id      TEXT,
            payload          TEXT NOT NULL,
            state            TEXT NOT NULL,
            attempts         INTEGER NOT NULL DEFAULT 0,
            max_attempts     INTEGER NOT NULL,
            run_after        REAL NOT NULL,
            lease_owner      TEXT,
            lease_expires_at REAL,
            last_error       TEXT,
            result           TEXT,
            created_at       REAL NOT NULL,
            updated_at       REAL NOT NULL
        );
        CREATE INDEX jobs_claim ON jobs (queue, state, run_after);
        CREATE INDEX jobs_leases ON jobs (queue, state, lease_expires_at);

        CREATE TABLE audit (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            at          REAL NOT NULL,
            action      TEXT NOT NULL,
            actor       TEXT,
            repo        TEXT,
            job_id      INTEGER,
            delivery_id TEXT,
            reason      TEXT,
            details     TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX audit_repo ON audit (repo, at);
        CREATE INDEX audit_job ON audit (job_id);

        CREATE TABLE installations (
            id         INTEGER PRIMARY KEY,
            account    TEXT,
            active     INTEGER NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE TABLE installation_repos (
            repo            TEXT PRIMARY KEY,
            installation_id INTEGER NOT NULL,
            added_at        REAL NOT NULL
        );
        """,
    ),
    Migration(
        2,
        "model spend per installation per day",
        """
        CREATE TABLE model_usage (
            installation_id   INTEGER NOT NULL,
            day               TEXT NOT NULL,
            calls             INTEGER NOT NULL DEFAULT 0,
            prompt_tokens     INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd          REAL NOT NULL DEFAULT 0,
            updated_at        REAL NOT NULL,
            PRIMARY KEY (installation_id, day)
        );
        """,
    ),
    Migration(
        3,
        "once: answers given at most once across workers",
        """
        CREATE TABLE once_keys (
            key        TEXT PRIMARY KEY,
            claimed_at REAL NOT NULL
        );
        """,
    ),
    Migration(
        4,
        "outcomes of jobs and per-repository pauses",
        """
        CREATE TABLE outcomes (
            job_id         INTEGER PRIMARY KEY,
            repo           TEXT NOT NULL,
            kind           TEXT NOT NULL,
            trigger        TEXT NOT NULL,
            created_at     REAL NOT NULL,
            issue_number   INTEGER,
            requested_by   TEXT,
            status         TEXT NOT NULL,
            decision       TEXT,
            score          INTEGER,
            risk           TEXT,
            pr_number      INTEGER,
            branch         TEXT,
            base_sha       TEXT,
            head_sha       TEXT,
            pr_opened_at   REAL,
            merged_at      REAL,
            merged_how     TEXT,
            merged_by      TEXT,
            merge_sha      TEXT,
            reverted_by_pr INTEGER,
            revert_of_pr   INTEGER,
            tokens         INTEGER NOT NULL DEFAULT 0,
            cost_usd       REAL NOT NULL DEFAULT 0,
            details        TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX outcomes_pr ON outcomes (repo, pr_number);
        CREATE INDEX outcomes_head ON outcomes (repo, head_sha);
        CREATE INDEX outcomes_merge ON outcomes (repo, merge_sha);
        CREATE INDEX outcomes_created ON outcomes (created_at, job_id);

        CREATE TABLE pauses (
            repo   TEXT PRIMARY KEY,
            actor  TEXT NOT NULL,
            at     REAL NOT NULL,
            reason TEXT
        );
        """,
    ),
    Migration(
        5,
        "job crashes",
        """
        ALTER TABLE jobs ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0;
        """,
    ),
    Migration(
        6,
        "outcomes: a merge's state in typed columns, not in details",
        """
        ALTER TABLE outcomes ADD COLUMN title TEXT NOT NULL DEFAULT '';
        ALTER TABLE outcomes ADD COLUMN links TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE outcomes ADD COLUMN pr_url TEXT;
        ALTER TABLE outcomes ADD COLUMN reverts TEXT;
        ALTER TABLE outcomes ADD COLUMN merge_method TEXT NOT NULL DEFAULT 'merge';
        ALTER TABLE outcomes ADD COLUMN two_person INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE outcomes ADD COLUMN canary_minutes REAL NOT NULL DEFAULT 0;
        ALTER TABLE outcomes ADD COLUMN ship_it TEXT NOT NULL DEFAULT '{}';
        ALTER TABLE outcomes ADD COLUMN merge_said TEXT;
        ALTER TABLE outcomes ADD COLUMN refused_head TEXT;
        ALTER TABLE outcomes ADD COLUMN refused_why TEXT;
        UPDATE outcomes SET
            title = COALESCE(json_extract(details, '$.title'), ''),
            links = COALESCE(json_extract(details, '$.links'), '[]'),
            pr_url = json_extract(details, '$.pr_url'),
            reverts = json_extract(details, '$.reverts'),
            merge_method = COALESCE(json_extract(details, '$.merge.method'), 'merge'),
            two_person = COALESCE(json_extract(details, '$.merge.two_person'), 1),
            canary_minutes = COALESCE(json_extract(details, '$.merge.canary_minutes'), 0),
            ship_it = COALESCE(json_extract(details, '$.ship_it'), '{}'),
            merge_said = json_extract(details, '$.merge_said'),
            refused_head = json_extract(details, '$.merge_refused.head'),
            refused_why = json_extract(details, '$.merge_refused.why');
        UPDATE outcomes SET details = json_remove(
            details, '$.title', '$.links', '$.pr_url', '$.reverts', '$.merge', '$.ship_it',
            '$.merge_said', '$.merge_refused'
        );
        """,
    ),
    Migration(
        7,
        "the dashboard issue of each repository",
        """
        CREATE TABLE dashboards (
            repo         TEXT PRIMARY KEY,
            body_sha     TEXT,
            issue_number INTEGER NOT NULL,
            updated_at   REAL NOT NULL
        );
        """,
    ),
    Migration(
        8,
        "earned autonomy: each change's kind, trust events, the standings last scored",
        """
        ALTER TABLE outcomes ADD COLUMN category TEXT;
        CREATE TABLE trust_events (
            id        INTEGER PRIMARY KEY AUTOINCREMENT,
            repo      TEXT NOT NULL,
            what      TEXT NOT NULL,
            category  TEXT NOT NULL,
            at        REAL NOT NULL,
            actor     TEXT,
            pr_number INTEGER
        );
        CREATE INDEX trust_events_repo ON trust_events (repo, at);
        CREATE TABLE standings (
            repo        TEXT NOT NULL,
            category    TEXT NOT NULL,
            autonomy    TEXT NOT NULL,
            state       TEXT NOT NULL,
            explanation TEXT NOT NULL,
            at          REAL NOT NULL,
            PRIMARY KEY (repo, category)
        );
        """,
    ),
    Migration(
        9,
        "the watch: checks completed on default branches, and the issue of each finding",
        """
        CREATE TABLE check_history (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            repo         TEXT NOT NULL,
            check_name   TEXT NOT NULL,
            sha          TEXT NOT NULL,
            conclusion   TEXT NOT NULL,
            completed_at REAL NOT NULL,
            started_at   REAL,
            source       TEXT NOT NULL,
            external_id  TEXT NOT NULL,
            UNIQUE (repo, source, external_id)
        );
        CREATE INDEX check_history_repo ON check_history (repo, completed_at);
        CREATE TABLE watch_findings (
            repo         TEXT NOT NULL,
            finding      TEXT NOT NULL,
            issue_number INTEGER NOT NULL,
            state        TEXT NOT NULL,
            title        TEXT NOT NULL,
            first_seen   REAL NOT NULL,
            last_seen    REAL NOT NULL,
            body_sha     TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (repo, finding)
        );
        """,
    ),
    Migration(
        10,
        "rate limits: until when each installation's GitHub requests wait (every process)",
        """
        CREATE TABLE rate_limits (
            scope TEXT PRIMARY KEY,
            until REAL NOT NULL
        );
        """,
    ),
)
