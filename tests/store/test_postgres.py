"""What is particular to the PostgreSQL store: its migrations mirror SQLite's, many
processes may start at once on an empty database, a read-only command never creates
tables, text SQLite would keep is kept, and a password is never shown."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.errors import NoDatabase, StoreError
from app.store import AuditQuery, Delivery, Store, mask_url, store_for_url
from app.store.migrations import POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS
from tests.postgres_server import PostgresServer

SECRET = "s3" + "cret"  # built, so this file holds no literal credential


def test_postgres_migrations_have_sqlite_s_numbers_and_names() -> None:
    assert [(m.version, m.name) for m in POSTGRES_MIGRATIONS] == [
        (m.version, m.name) for m in SQLITE_MIGRATIONS
    ]


async def test_many_processes_starting_at_once_migrate_once(postgres: PostgresServer) -> None:
    url = postgres.create_database()
    stores = [store_for_url(url) for _ in range(6)]
    await asyncio.gather(*(s.open() for s in stores))  # the advisory lock serialises them
    try:
        versions = {await s.schema_version() for s in stores}
        assert versions == {POSTGRES_MIGRATIONS[-1].version}
        database = stores[0].database
        rows = await database.run(
            lambda: database.db.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()
        )
        assert rows[0] == len(POSTGRES_MIGRATIONS)
    finally:
        await asyncio.gather(*(s.close() for s in stores))


async def test_a_newer_schema_is_refused(postgres: PostgresServer) -> None:
    url = postgres.create_database()
    store = store_for_url(url)
    await store.open()
    await store.database.run(
        lambda: store.database.db.execute("INSERT INTO schema_migrations VALUES (99, 'future', 0)")
    )
    await store.close()
    with pytest.raises(StoreError, match="newer than this Patchwarden knows"):
        await store_for_url(url).open()


async def test_a_read_only_command_creates_no_tables(postgres: PostgresServer) -> None:
    url = postgres.create_database()
    with pytest.raises(NoDatabase, match="holds no Patchwarden tables"):
        await store_for_url(url, create=False).open()
    # and left nothing behind: serve still migrates it from the start
    store = store_for_url(url)
    await store.open()
    assert await store.schema_version() == POSTGRES_MIGRATIONS[-1].version
    await store.close()


async def test_text_with_a_nul_is_kept_not_refused(postgres: PostgresServer) -> None:
    """SQLite keeps a NUL in text, PostgreSQL refuses it: untrusted text (a sender, an
    error) must not fail a delivery on one store and not the other."""
    store: Store = store_for_url(postgres.create_database())
    await store.open()
    try:
        delivery = Delivery("d\x00", "github", "issues", "opened", 7, "o/r", "eve\x00", {}, 1.0)
        assert await store.journal.record_delivery(delivery)
        await store.journal.audit("x.noted", reason="a\x00b")
        [entry] = [
            e for e in await store.journal.query_audit(AuditQuery()) if e.action == "x.noted"
        ]
        assert entry.reason == "a\ufffdb"
    finally:
        await store.close()


async def test_dropped_connections_are_reopened(postgres: PostgresServer) -> None:
    """The server restarts or an idle timeout drops every connection: a call that finds
    its connection gone fails (the worker retries it), and the next calls work."""
    import psycopg

    from app.store.postgres import PostgresDriver

    url = postgres.create_database()
    store = store_for_url(url)
    await store.open()
    try:
        await asyncio.gather(*(store.ping() for _ in range(8)))  # every thread connected
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        await asyncio.sleep(0.2)
        failed = 0
        for _ in range(PostgresDriver.connections * 2):
            try:
                await store.ping()
            except psycopg.OperationalError:
                failed += 1
        # Calls one after another may all land on a few of the store's threads: calls at
        # once reach the others, each of which finds its own connection gone, once.
        errors: list[BaseException] = []
        for _ in range(3):
            done = await asyncio.gather(*(store.ping() for _ in range(8)), return_exceptions=True)
            errors = [r for r in done if isinstance(r, BaseException)]
            assert all(isinstance(e, psycopg.OperationalError) for e in errors), errors
            failed += len(errors)
            if not errors:
                break
        assert errors == []  # every connection reopened
        assert failed <= PostgresDriver.connections  # at most once per connection
        assert await store.journal.count_deliveries() == 0
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql://pw:{SECRET}@db:5432/pw", "postgresql://pw:***@db:5432/pw"),
        (f"postgresql://pw:{SECRET}%40ss@db/pw", "postgresql://pw:***@db/pw"),
        (f"postgresql://pw:{SECRET}@b@db/pw", "postgresql://pw:***@db/pw"),
        (
            f"postgresql://pw@db/pw?sslmode=require&password={SECRET}",
            "postgresql://pw@db/pw?sslmode=require&password=***",
        ),
        (f"postgresql://pw:{SECRET}@[::1]:5432/pw", "postgresql://pw:***@[::1]:5432/pw"),
        ("postgresql://db:notaport/pw", "postgresql://db:notaport/pw"),
        ("sqlite:///./patchwarden.db", "sqlite:///./patchwarden.db"),
    ],
)
def test_urls_are_shown_without_their_password(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def test_timestamps_keep_their_precision(postgres: PostgresServer) -> None:
    async def go() -> float:
        store = store_for_url(postgres.create_database())
        await store.open()
        try:
            at = time.time()
            await store.journal.record_delivery(
                Delivery("d1", "github", "ping", None, None, None, None, {}, at)
            )
            got = await store.journal.get_delivery("d1")
            assert got is not None
            return got.received_at - at
        finally:
            await store.close()

    assert asyncio.run(go()) == 0.0


async def test_the_intake_survives_a_pooler_that_loses_prepared_statements(
    postgres: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    """PgBouncer in transaction mode (before 1.21) hands the next statement to a server
    connection that never saw the PREPARE: here, DEALLOCATE ALL does the same."""
    store = store_for_url(postgres.create_database())
    await store.open()
    try:

        def delivery(n: int) -> Delivery:
            return Delivery(f"d{n}", "github", "ping", None, 7, "o/r", "x", {}, time.time())

        for n in range(3):
            assert await store.journal.record_delivery(delivery(n))

        def forget() -> None:  # behind psycopg's back: the server drops what it prepared
            db = store.database.db
            names = [r[0] for r in db.execute("SELECT name FROM pg_prepared_statements")]
            assert names
            for name in names:
                db.conn.pgconn.exec_(f'DEALLOCATE "{name}"'.encode())

        await store.database.run_intake(forget)
        assert await store.journal.record_delivery(delivery(3))  # not lost, not an error
        assert await store.journal.record_delivery(delivery(4))
        assert await store.journal.count_deliveries() == 5
        assert "not preparing" in caplog.text
    finally:
        await store.close()
