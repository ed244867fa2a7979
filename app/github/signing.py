"""HMAC signatures as GitHub sends them in ``X-Hub-Signature-256``.

https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
GitHub signs the raw body with HMAC-SHA256 and the webhook secret, hex encoded and
prefixed with ``sha256=``. The legacy ``X-Hub-Signature`` (SHA-1) is never accepted.
"""

from __future__ import annotations

import hashlib
import hmac

from app.errors import SignatureError

PREFIX = "sha256="


def sign(body: bytes, *, secret: str) -> str:
    """Return the ``X-Hub-Signature-256`` value for ``body``."""
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return PREFIX + digest


def verify(
    body: bytes, *, signature: str | None, secret: str, header: str = "X-Hub-Signature-256"
) -> None:
    """Raise :class:`SignatureError` unless ``signature`` is the SHA-256 HMAC of ``body``.

    The comparison is constant-time. The message names ``header`` and says what was
    wrong, never the expected value.
    """
    if not signature:
        raise SignatureError(f"missing {header} header")
    if not signature.startswith(PREFIX):
        raise SignatureError(f"{header} must start with 'sha256='")
    expected = sign(body, secret=secret)
    if not hmac.compare_digest(signature.encode("ascii", "replace"), expected.encode("ascii")):
        raise SignatureError("signature does not match the body and the configured secret")
