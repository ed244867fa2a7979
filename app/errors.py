"""Patchwarden's exceptions, in one place.

Every error a user can meet says what was wrong and what to do about it.
"""

from __future__ import annotations


class PatchwardenError(Exception):
    """Base class for every error Patchwarden raises on purpose."""


class ConfigError(PatchwardenError):
    """The configuration is missing something or holds a bad value."""


class BadInput(PatchwardenError):
    """What a command was given cannot be used (``run``, ``score``): exit code 2."""


class RepoConfigError(PatchwardenError):
    """A repository's ``.github/patchwarden.yml`` (on its base branch) cannot be used."""


class StoreError(PatchwardenError):
    """The store cannot be opened or migrated."""


class NoDatabase(StoreError):
    """Asked to open an existing database (``create=False``) that is not there yet."""


class SignatureError(PatchwardenError):
    """A webhook or alert signature is missing, malformed or wrong."""


class AlertFormatError(PatchwardenError):
    """An alert body is neither Alertmanager's webhook JSON nor the generic form."""


class GitHubAuthError(PatchwardenError):
    """The App could not authenticate to GitHub (JWT or installation token)."""


class PermanentJobError(PatchwardenError):
    """A job failed in a way that retrying cannot fix; it goes straight to `failed`."""
