"""Fixtures of the LocalForge tests: Patchwarden's own GitHub client, on the forge."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from app.github.client import GitHubApp, GitHubClient
from app.localforge import LocalForge
from tests.conftest import APP_ID, INSTALLATION


@pytest.fixture
async def github_app(forge: LocalForge, app_keys: tuple[str, str]) -> AsyncIterator[GitHubApp]:
    """Patchwarden's own client, pointed at the forge (only the base URL differs)."""
    async with aiohttp.ClientSession() as session:
        yield GitHubApp(app_id=APP_ID, private_key=app_keys[0], api_url=forge.url, session=session)


@pytest.fixture
def gh(github_app: GitHubApp) -> GitHubClient:
    return github_app.installation(INSTALLATION)
