"""Database URLs as people see them: never with the password."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

_QUERY_PASSWORD = re.compile(r"(?i)(^|&)(password|sslpassword)=[^&]*")


def mask_url(url: str) -> str:
    """``url`` with its password (in the user part or libpq's ``?password=``) replaced by
    ``***``, for logs, errors and ``doctor``. Never raises, whatever the URL."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return re.sub(r"://[^@/]*@", "://***@", url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            netloc = f"{userinfo.split(':', 1)[0]}:***@{host}"
    query = _QUERY_PASSWORD.sub(r"\1\2=***", parts.query)
    if (netloc, query) == (parts.netloc, parts.query):
        return url  # nothing to hide: the URL as written (urlunsplit would respell it)
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def url_passwords(url: str) -> list[str]:
    """Every form of the URL's passwords (as written and percent-decoded), to keep
    them out of a driver's error text."""
    from urllib.parse import parse_qsl, unquote

    found: list[str] = []
    try:
        parts = urlsplit(url)
    except ValueError:
        return found
    userinfo = parts.netloc.rsplit("@", 1)[0] if "@" in parts.netloc else ""
    if ":" in userinfo:
        raw = userinfo.split(":", 1)[1]
        found += [raw, unquote(raw)]
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key.lower() in ("password", "sslpassword"):
            found.append(value)
    return [f for f in found if f]
