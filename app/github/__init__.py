"""GitHub: App auth (JWT, installation tokens) and the API client."""

from app.github.auth import AppAuth
from app.github.client import GitHubApp, GitHubClient, RetryPolicy

__all__ = ["AppAuth", "GitHubApp", "GitHubClient", "RetryPolicy"]
