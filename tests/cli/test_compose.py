"""docker-compose.yml: PostgreSQL, one serve and two workers on one database, each
service a real command of this version, with settings this version accepts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli.main import build_parser
from app.config import load_settings
from app.store import store_for_url
from app.store.postgres import PostgresDriver

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"
VALUES = {
    "PATCHWARDEN_APP_ID": "123456",
    "PATCHWARDEN_WEBHOOK_SECRET": "w",
    "POSTGRES_PASSWORD": "p",
}


def _interpolate(value: str) -> str:
    """Compose's ``${NAME:?message}``, with the values an operator would export."""
    return re.sub(r"\$\{(\w+):\?[^}]*\}", lambda m: VALUES[m.group(1)], value)


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return dict(yaml.safe_load(COMPOSE.read_text())["services"])


def test_one_database_one_intake_and_two_workers(services: dict[str, Any]) -> None:
    assert set(services) == {"postgres", "serve", "worker"}
    assert services["serve"]["command"] == ["serve", "--no-workers"]
    assert services["worker"]["command"] == ["worker"]
    assert services["worker"]["deploy"]["replicas"] == 2
    assert services["worker"]["healthcheck"] == {"disable": True}  # no HTTP port to check
    for name in ("serve", "worker"):
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"


@pytest.mark.parametrize("name", ["serve", "worker"])
def test_each_service_is_a_command_this_version_runs(services: dict[str, Any], name: str) -> None:
    args = build_parser().parse_args(services[name]["command"])
    assert args.command == services[name]["command"][0]


@pytest.mark.parametrize("name", ["serve", "worker"])
def test_each_service_s_settings_are_valid_and_share_the_postgres_database(
    services: dict[str, Any], name: str
) -> None:
    env = {k: _interpolate(str(v)) for k, v in services[name]["environment"].items()}
    assert env["PATCHWARDEN_PRIVATE_KEY_PATH"] == "/run/secrets/app_key"
    assert "app_key" in services[name]["secrets"]
    settings = load_settings(
        app_id=int(env["PATCHWARDEN_APP_ID"]),
        webhook_secret=env["PATCHWARDEN_WEBHOOK_SECRET"],
        database_url=env["PATCHWARDEN_DATABASE_URL"],
    )
    store = store_for_url(settings.database_url)
    assert isinstance(store.database.driver, PostgresDriver)
    assert store.url == "postgresql://patchwarden:***@postgres:5432/patchwarden"
    postgres_env = services["postgres"]["environment"]
    assert (postgres_env["POSTGRES_USER"], postgres_env["POSTGRES_DB"]) == (
        "patchwarden",
        "patchwarden",
    )
