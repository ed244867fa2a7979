"""Patchwarden: a GitHub App for guarded auto-PRs."""

__version__ = "0.1.0"
