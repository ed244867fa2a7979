"""GitHub App authentication: the App's JWT and cached installation tokens.

https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app
The JWT is RS256, ``iat`` 60 s in the past (clock drift), ``exp`` at most 10 minutes
ahead, ``iss`` the App id. Installation tokens last an hour; they are cached per
installation and renewed five minutes before they expire.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiohttp
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from app.errors import GitHubAuthError

JWT_BACKDATE_SECONDS = 60
JWT_LIFETIME_SECONDS = 9 * 60  # + the backdate = 10 minutes, GitHub's maximum
TOKEN_RENEW_MARGIN_SECONDS = 5 * 60


@dataclass
class _Token:
    value: str
    expires_at: float


def load_private_key(pem: str) -> RSAPrivateKey:
    """Parse the App's key once, at start, with a message that says what to do."""
    hint = "Use the .pem file GitHub generated for the App (Settings > Developer settings)."
    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError) as exc:
        raise GitHubAuthError(
            f"the App private key is not a readable PEM private key ({exc}). {hint}"
        ) from None
    if not isinstance(key, RSAPrivateKey):
        raise GitHubAuthError(f"the App private key must be an RSA key. {hint}")
    return key


def _parse_expiry(value: Any) -> float:
    if not isinstance(value, str):
        raise GitHubAuthError("installation token answer has no expires_at")
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


class AppAuth:
    """Mints JWTs and installation tokens for one GitHub App."""

    def __init__(
        self,
        *,
        app_id: int,
        private_key: str,
        api_url: str,
        session: aiohttp.ClientSession,
        user_agent: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.app_id = app_id
        self._key = load_private_key(private_key)
        self.api_url = api_url.rstrip("/")
        self._session = session
        self._user_agent = user_agent
        self._clock = clock
        self._jwt: tuple[str, float] | None = None
        self._tokens: dict[int, _Token] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        self.tokens_minted = 0

    def jwt(self) -> str:
        """The App's JWT, reused until two minutes before it expires."""
        now = self._clock()
        if self._jwt is not None and self._jwt[1] - now > 120:
            return self._jwt[0]
        iat = int(now) - JWT_BACKDATE_SECONDS
        exp = int(now) + JWT_LIFETIME_SECONDS
        token = jwt.encode(
            {"iat": iat, "exp": exp, "iss": str(self.app_id)}, self._key, algorithm="RS256"
        )
        self._jwt = (token, float(exp))
        return token

    def invalidate(self, installation_id: int) -> None:
        self._tokens.pop(installation_id, None)

    async def installation_token(self, installation_id: int) -> str:
        """A valid token for the installation, minted only when needed."""
        cached = self._tokens.get(installation_id)
        if cached is not None and cached.expires_at - self._clock() > TOKEN_RENEW_MARGIN_SECONDS:
            return cached.value
        lock = self._locks.setdefault(installation_id, asyncio.Lock())
        async with lock:
            cached = self._tokens.get(installation_id)
            if (
                cached is not None
                and cached.expires_at - self._clock() > TOKEN_RENEW_MARGIN_SECONDS
            ):
                return cached.value
            token = await self._mint(installation_id)
            self._tokens[installation_id] = token
            return token.value

    async def _mint(self, installation_id: int) -> _Token:
        url = f"{self.api_url}/app/installations/{installation_id}/access_tokens"
        headers = {
            "Authorization": f"Bearer {self.jwt()}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": self._user_agent,
        }
        try:
            async with self._session.post(url, headers=headers) as response:
                body = await response.json(content_type=None)
                status = response.status
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise GitHubAuthError(
                f"could not get a token for installation {installation_id}: {exc}"
            ) from exc
        if status != 201 or not isinstance(body, dict) or "token" not in body:
            message = body.get("message") if isinstance(body, dict) else None
            raise GitHubAuthError(
                f"GitHub refused a token for installation {installation_id} "
                f"(HTTP {status}: {message or 'no message'}). Check PATCHWARDEN_APP_ID, "
                "the private key, and that the App is still installed."
            )
        self.tokens_minted += 1
        return _Token(value=str(body["token"]), expires_at=_parse_expiry(body.get("expires_at")))
