"""A local double of GitHub (REST + signed webhooks) for tests and the demo."""

from app.localforge.server import LocalForge

__all__ = ["LocalForge"]
