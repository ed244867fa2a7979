"""The store the tests under tests/store share: opened on each ``store_url`` (SQLite and
a real PostgreSQL server), closed after the test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.store import Store, store_for_url


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[Store]:
    s = store_for_url(store_url)
    await s.open()
    yield s
    await s.close()
