"""Which repositories the App is installed on (``installation``, ``installation_repositories``)."""

from __future__ import annotations

from typing import Any

from gidgethub import sansio
from gidgethub.routing import Router

from app.github import GitHubClient
from app.webhooks.context import HandlerContext

router = Router()


def _names(repos: list[dict[str, Any]] | None) -> list[str]:
    return [str(r["full_name"]) for r in repos or [] if r.get("full_name")]


@router.register("installation")
async def on_installation(event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext) -> None:
    data = event.data
    action = data.get("action")
    installation = data["installation"]
    inst_id = int(installation["id"])
    account = (installation.get("account") or {}).get("login")
    actor = (data.get("sender") or {}).get("login")
    if action in {"created", "unsuspend", "new_permissions_accepted"}:
        await ctx.store.set_installation(inst_id, account=account, active=True)
        await ctx.store.add_installation_repos(inst_id, _names(data.get("repositories")))
    elif action in {"deleted", "suspend"}:
        await ctx.store.set_installation(inst_id, account=account, active=False)
        if action == "deleted":
            await ctx.store.remove_installation_repos(inst_id)
    else:
        await ctx.audit("delivery.ignored", actor=actor, reason=f"installation.{action}")
        return
    await ctx.audit(
        f"installation.{action}",
        actor=actor,
        reason=f"installation {inst_id} on {account}",
        details={"repositories": _names(data.get("repositories"))},
    )


@router.register("installation_repositories")
async def on_installation_repositories(
    event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext
) -> None:
    data = event.data
    installation = data["installation"]
    inst_id = int(installation["id"])
    account = (installation.get("account") or {}).get("login")
    added, removed = (
        _names(data.get("repositories_added")),
        _names(data.get("repositories_removed")),
    )
    await ctx.store.set_installation(inst_id, account=account, active=True)
    await ctx.store.add_installation_repos(inst_id, added)
    await ctx.store.remove_installation_repos(inst_id, removed)
    await ctx.audit(
        "installation.repositories",
        actor=(data.get("sender") or {}).get("login"),
        reason=f"{len(added)} added, {len(removed)} removed",
        details={"added": added, "removed": removed},
    )
