"""Which repositories the App is installed on (``installation``, ``installation_repositories``)."""

from __future__ import annotations

from gidgethub import sansio
from gidgethub.routing import Router

from app.github import GitHubClient
from app.webhooks.context import HandlerContext
from app.webhooks.payloads import (
    Envelope,
    InstallationEvent,
    InstallationRepositoriesEvent,
    RepoRef,
    typed,
)

router = Router()


def _names(repos: list[RepoRef] | None) -> list[str]:
    return [r.full_name for r in repos or []]


@router.register("installation")
async def on_installation(
    event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext, read: Envelope
) -> None:
    data = typed(InstallationEvent, read)
    action = data.action
    inst_id = data.installation.id
    account = data.installation.account.login if data.installation.account else None
    actor = data.sender.login if data.sender else None
    if action in {"created", "unsuspend", "new_permissions_accepted"}:
        await ctx.store.repos.set_installation(inst_id, account=account, active=True)
        await ctx.store.repos.add_installation_repos(inst_id, _names(data.repositories))
    elif action in {"deleted", "suspend"}:
        await ctx.store.repos.set_installation(inst_id, account=account, active=False)
        if action == "deleted":
            await ctx.store.repos.remove_installation_repos(inst_id)
    else:
        await ctx.audit("delivery.ignored", actor=actor, reason=f"installation.{action}")
        return
    await ctx.audit(
        f"installation.{action}",
        actor=actor,
        reason=f"installation {inst_id} on {account}",
        details={"repositories": _names(data.repositories)},
    )


@router.register("installation_repositories")
async def on_installation_repositories(
    event: sansio.Event, gh: GitHubClient, *, ctx: HandlerContext, read: Envelope
) -> None:
    data = typed(InstallationRepositoriesEvent, read)
    inst_id = data.installation.id
    account = data.installation.account.login if data.installation.account else None
    added, removed = _names(data.repositories_added), _names(data.repositories_removed)
    await ctx.store.repos.set_installation(inst_id, account=account, active=True)
    await ctx.store.repos.add_installation_repos(inst_id, added)
    await ctx.store.repos.remove_installation_repos(inst_id, removed)
    await ctx.audit(
        "installation.repositories",
        actor=data.sender.login if data.sender else None,
        reason=f"{len(added)} added, {len(removed)} removed",
        details={"added": added, "removed": removed},
    )
