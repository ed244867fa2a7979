"""A local double of GitHub (REST + signed webhooks) for tests and the demo.

``LocalForge`` is imported on first use, so ``patchwarden forge --help`` (and the
command's parser, which includes the forge's arguments) does not start the double's
machinery."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.localforge.forge_server import LocalForge

__all__ = ["LocalForge"]


def __getattr__(name: str) -> Any:
    if name == "LocalForge":
        from app.localforge.forge_server import LocalForge

        return LocalForge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
