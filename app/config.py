"""One typed settings object, read from ``PATCHWARDEN_*`` variables and an optional ``.env``.

Secrets are :class:`pydantic.SecretStr`: their ``repr`` and ``str`` print ``**********``
so a settings object can be logged without leaking them. Nothing here runs at import
time; call :func:`load_settings`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.errors import ConfigError


def _shipped_policies() -> Path:
    """The policies Patchwarden ships (``policies/`` in the source tree): the default
    policy and the semgrep rule packs, package data read through importlib.resources, so
    an installed wheel (``pip install patchwarden``, the GitHub Action) has them too."""
    root = resources.files("app").joinpath("policies_data")
    # A regular install is a folder on disk; semgrep and the sandbox need real paths.
    return root if isinstance(root, Path) else Path(str(root))


SHIPPED_POLICIES = _shipped_policies()


class LlmProvider(BaseModel):
    """One OpenAI-compatible endpoint: the primary one or a fallback."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    base_url: str | None = None  # None: OpenAI's own API
    api_key: SecretStr | None = None
    azure_api_version: str | None = None  # set: Azure OpenAI (base_url = the endpoint)

    @model_validator(mode="after")
    def _azure_needs_endpoint(self) -> LlmProvider:
        if self.azure_api_version and not self.base_url:
            raise ValueError(
                "azure_api_version is set but base_url is not: give the Azure endpoint, "
                "such as https://NAME.openai.azure.com"
            )
        return self

    @property
    def label(self) -> str:
        """How logs and the audit name it: model @ host (never the key)."""
        host = urlsplit(self.base_url).netloc if self.base_url else "api.openai.com"
        return f"{self.model}@{host}"


class Price(BaseModel):
    """US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)


def _json_setting(value: object, example: str) -> object:
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"must be JSON such as {example}") from exc
    return value


class Settings(BaseSettings):
    """Every knob Patchwarden reads, with its default. See docs/configuration.md."""

    model_config = SettingsConfigDict(
        env_prefix="PATCHWARDEN_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
    )

    # GitHub App identity
    app_id: int | None = None
    private_key: SecretStr | None = None
    private_key_path: Path | None = None
    webhook_secret: SecretStr | None = None
    github_api_url: str = "https://api.github.com"
    bot_name: str = "patchwarden"

    # Monitoring alerts (POST /alerts)
    alerts_secret: SecretStr | None = None
    # Sentry's webhooks to POST /alerts are signed with the integration's Client Secret
    sentry_client_secret: SecretStr | None = None
    # GET /metrics asks for `Authorization: Bearer <this>` when it is set
    metrics_token: SecretStr | None = None
    alert_repo_label: str = "repository"
    alert_routes: Annotated[dict[str, str], NoDecode] = Field(default_factory=dict)

    # Storage and jobs
    database_url: str = "sqlite:///./patchwarden.db"
    workers: int = Field(default=2, ge=0, le=64)  # coding sessions at once; 0: none here
    event_workers: int = Field(default=4, ge=1, le=64)
    job_max_attempts: int = Field(default=3, ge=1, le=20)
    lease_seconds: float = Field(default=60.0, gt=0)
    poll_seconds: float = Field(default=1.0, gt=0)
    retry_base_seconds: float = Field(default=10.0, ge=0)
    drain_seconds: float = Field(default=30.0, ge=0)
    progress_seconds: float = Field(default=5.0, gt=0)  # how often a job's comment may change
    paused: bool = False  # every repository paused at once; per-repository pauses are in the store

    # HTTP server
    host: str = "127.0.0.1"
    # Where people reach this server (https://pw.example.org): check runs then link to
    # each pull request's audit page; unset, they link nowhere.
    public_url: str | None = None
    port: int = Field(default=8080, ge=0, le=65535)
    # The dashboard issue is brought up to date once per window, after the jobs in it.
    dashboard_seconds: float = Field(default=30.0, gt=0, le=3600)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # json: one object per line, with the job, delivery, repository and installation ids
    log_format: Literal["text", "json"] = "text"

    # GitHub API etiquette
    rate_limit_base_seconds: float = Field(default=60.0, ge=0)
    rate_limit_max_retries: int = Field(default=5, ge=0, le=20)
    rate_limit_max_wait_seconds: float = Field(default=900.0, gt=0)

    # Coding sessions (docs/configuration.md#coding-sessions, docs/security.md)
    cache_dir: Path = Field(default_factory=lambda: _default_cache_dir())
    sandbox: Literal["bwrap", "docker", "unsafe-local"] = "bwrap"
    sandbox_allow_unsafe: bool = False
    sandbox_uid: int = Field(default=65534, ge=1)
    sandbox_image: str = "patchwarden-sandbox:latest"
    sandbox_memory_mb: int = Field(default=4096, ge=64)
    sandbox_processes: int = Field(default=256, ge=8)
    sandbox_cpu_seconds: int = Field(default=900, ge=1)
    sandbox_file_size_mb: int = Field(default=1024, ge=1)
    sandbox_output_kb: int = Field(default=1024, ge=4)
    sandbox_tmp_mb: int = Field(default=512, ge=1)
    setup_timeout_seconds: float = Field(default=900.0, gt=0)
    # Host variables the setup phase gets (patterns; "" passes none); None: the default
    # list in app/sessions/pkgconfig.py (pip, uv, npm, CA bundles, proxies).
    setup_passenv: str | None = None
    test_timeout_seconds: float = Field(default=900.0, gt=0)
    tool_timeout_seconds: float = Field(default=300.0, gt=0)
    fix_timeout_seconds: float = Field(default=1800.0, gt=0)
    semgrep_rules: Path | None = None  # default: policies/semgrep of this installation
    default_policy: Path | None = None  # default: policies/default.yml of this installation

    # The llm fixer (docs/configuration.md#the-llm-fixer); unset model = no LLM
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_azure_api_version: str | None = None
    llm_fallbacks: Annotated[list[LlmProvider], NoDecode] = Field(default_factory=list)
    llm_prices: Annotated[dict[str, Price], NoDecode] = Field(default_factory=dict)
    llm_tool_mode: Literal["auto", "native", "json"] = "auto"
    llm_timeout_seconds: float = Field(default=120.0, gt=0)
    llm_retry_base_seconds: float = Field(default=2.0, ge=0)
    llm_max_output_tokens: int = Field(default=4096, ge=64)
    llm_context_tokens: int = Field(default=32768, ge=2048)
    llm_max_steps: int = Field(default=40, ge=1, le=1000)
    llm_max_tokens: int = Field(default=400_000, ge=1000)
    llm_max_cost_usd: float | None = Field(default=2.0, ge=0)
    llm_daily_budget_usd: float | None = Field(default=20.0, ge=0)
    # The repair strategy: answers sampled per round, and whether the server continues an
    # assistant turn it is given (llama.cpp does; OpenAI's API does not).
    llm_samples: int = Field(default=4, ge=1, le=16)
    llm_prefill: bool = False
    # Mechanisms of the repair turned off, comma-separated, to measure what each earns
    # (app/fixers/llm/repair/switches.py names them); none by default.
    llm_repair_without: str = ""

    @model_validator(mode="after")
    def _room_for_answers(self) -> Settings:
        if self.llm_context_tokens < self.llm_max_output_tokens + 1024:
            raise ValueError(
                f"PATCHWARDEN_LLM_CONTEXT_TOKENS ({self.llm_context_tokens}) must leave room "
                f"for a prompt beside PATCHWARDEN_LLM_MAX_OUTPUT_TOKENS "
                f"({self.llm_max_output_tokens}): at least 1024 tokens more"
            )
        return self

    @field_validator("alert_routes", mode="before")
    @classmethod
    def _parse_routes(cls, value: object) -> object:
        if isinstance(value, str):
            if not value.strip():
                return {}
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    'must be a JSON object such as {"HighErrorRate": "octo/api"}'
                ) from exc
        return value

    @field_validator("alert_routes")
    @classmethod
    def _check_routes(cls, value: dict[str, str]) -> dict[str, str]:
        for key, repo in value.items():
            if repo.count("/") != 1 or not all(repo.split("/")):
                raise ValueError(
                    f"route {key!r} must name a repository as owner/name, not {repo!r}"
                )
        return value

    @field_validator("llm_fallbacks", mode="before")
    @classmethod
    def _parse_fallbacks(cls, value: object) -> object:
        example = '[{"base_url": "http://localhost:11434/v1", "model": "qwen2.5-coder:7b"}]'
        return _json_setting(value, example) or []

    @field_validator("llm_prices", mode="before")
    @classmethod
    def _parse_prices(cls, value: object) -> object:
        return _json_setting(value, '{"gpt-4.1": {"input": 2.0, "output": 8.0}}') or {}

    @field_validator("llm_max_cost_usd", "llm_daily_budget_usd", mode="before")
    @classmethod
    def _no_cap(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in ("", "none", "off"):
            return None
        return value

    # An empty secret (``PATCHWARDEN_SENTRY_CLIENT_SECRET=`` from a compose file whose
    # variable is unset) is no secret, since anyone can sign with it: it is unset, and
    # what it guards stays off.
    @field_validator(
        "llm_model",
        "llm_base_url",
        "llm_azure_api_version",
        "webhook_secret",
        "alerts_secret",
        "sentry_client_secret",
        "metrics_token",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("github_api_url")
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @field_validator("public_url", mode="before")
    @classmethod
    def _check_public_url(cls, value: object) -> object:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        parts = urlsplit(str(value).strip())
        local = parts.hostname in {"localhost", "127.0.0.1", "::1"}
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ValueError("must be the server's public base URL, e.g. https://pw.example.org")
        if parts.scheme == "http" and not local:
            raise ValueError("must be https:// (plain http only for localhost)")
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ValueError("takes a base URL: no user, password, ?query or #fragment")
        return str(value).strip().rstrip("/")

    @field_validator("bot_name")
    @classmethod
    def _check_bot_name(cls, value: str) -> str:
        value = value.strip().lstrip("@")
        if not value or any(ch.isspace() for ch in value):
            raise ValueError("must be the App's slug, such as 'patchwarden'")
        return value

    def app_private_key(self) -> str | None:
        """The App's PEM private key, from the variable or the file; ``None`` if unset."""
        if self.private_key is not None:
            # Environment variables often carry PEMs with literal "\n" escapes.
            return self.private_key.get_secret_value().replace("\\n", "\n")
        if self.private_key_path is not None:
            try:
                return self.private_key_path.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(
                    f"cannot read PATCHWARDEN_PRIVATE_KEY_PATH={self.private_key_path}: "
                    f"{exc.strerror}. Point it at the .pem file GitHub gave you."
                ) from exc
        return None

    @property
    def llm_configured(self) -> bool:
        return self.llm_model is not None

    def llm_providers(self) -> list[LlmProvider]:
        """The primary endpoint, then the fallbacks, in the order they are tried."""
        if self.llm_model is None:
            return []
        primary = LlmProvider(
            model=self.llm_model,
            base_url=self.llm_base_url,
            api_key=self.llm_api_key,
            azure_api_version=self.llm_azure_api_version,
        )
        return [primary, *self.llm_fallbacks]

    def secret_values(self) -> list[str]:
        """Every secret this process holds, for masking logs and outputs."""
        values = [
            self.webhook_secret,
            self.alerts_secret,
            self.sentry_client_secret,
            self.private_key,
            self.metrics_token,
        ]
        values += [p.api_key for p in self.llm_providers()]
        return [v.get_secret_value() for v in values if v is not None]

    def missing_for_github(self) -> list[str]:
        """Names of the variables still needed to act on GitHub as the App."""
        missing = []
        if self.app_id is None:
            missing.append("PATCHWARDEN_APP_ID")
        if self.private_key is None and self.private_key_path is None:
            missing.append("PATCHWARDEN_PRIVATE_KEY or PATCHWARDEN_PRIVATE_KEY_PATH")
        return missing


def _default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/patchwarden``, else ``~/.cache/patchwarden``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "patchwarden"


def unknown_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """One warning per ``PATCHWARDEN_*`` variable that is no setting (a misspelling is
    otherwise ignored in silence), with the closest setting's name when there is one.
    ``PATCHWARDEN_TEST_*`` belong to the test suite."""
    import difflib

    known = {f"PATCHWARDEN_{name.upper()}" for name in Settings.model_fields}
    found = []
    for name in sorted(os.environ if environ is None else environ):
        upper = name.upper()  # the settings are read case-insensitively
        if not upper.startswith("PATCHWARDEN_") or upper in known:
            continue
        if upper.startswith("PATCHWARDEN_TEST_"):
            continue
        prefix = len("PATCHWARDEN_")  # compared without it, which every name shares
        close = difflib.get_close_matches(
            upper[prefix:], [k[prefix:] for k in known], n=1, cutoff=0.75
        )
        hint = (
            f"did you mean PATCHWARDEN_{close[0]}?" if close else "docs/configuration.md lists them"
        )
        found.append(f"{name} is not a Patchwarden setting and is ignored: {hint}")
    return found


def load_settings(**overrides: object) -> Settings:
    """Read the settings; raise :class:`ConfigError` that names each bad variable, and
    warn about each ``PATCHWARDEN_*`` variable that is no setting."""
    for warning in unknown_variables():
        logging.getLogger("patchwarden").warning("%s", warning)
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "settings"
            lines.append(f"  PATCHWARDEN_{field.upper()}: {err['msg']}")
        raise ConfigError("invalid configuration:\n" + "\n".join(lines)) from None
