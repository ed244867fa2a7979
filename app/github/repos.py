"""A repository's URLs and who may do what on it, as GitHub's REST API says.

One place for what the webhook handlers (who may trigger) and the pipeline (whose
approval counts) both ask: the URL variables of ``/repos/{owner}/{repo}/…``, a user's
role, and the role names that can write or maintain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp
import gidgethub

from app.github.client import GitHubClient

WRITE_ROLES = frozenset({"admin", "maintain", "write"})
MAINTAINER_ROLES = frozenset({"admin", "maintain"})


def repo_vars(full_name: str) -> dict[str, str]:
    """URL template variables for ``/repos/{owner}/{repo}/…``."""
    owner, _, name = full_name.partition("/")
    return {"owner": owner, "repo": name}


def role_of(permission_answer: Mapping[str, Any]) -> str:
    """The fine-grained role from GET /repos/{o}/{r}/collaborators/{u}/permission.

    ``permission`` folds ``maintain`` into ``write`` and ``triage`` into ``read``;
    ``role_name`` keeps them apart (and holds custom role names).
    https://docs.github.com/en/rest/collaborators/collaborators#get-repository-permissions-for-a-user
    """
    role = permission_answer.get("role_name") or permission_answer.get("permission") or "none"
    return str(role).lower()


async def role_for(gh: GitHubClient, *, repo: str, login: str) -> tuple[str | None, str | None]:
    """The user's role on the repository, or why GitHub could not say: (role, error).

    Callers fail closed on an error: no trigger, no approval counted."""
    try:
        answer = await gh.getitem(
            "/repos/{owner}/{repo}/collaborators/{username}/permission",
            {**repo_vars(repo), "username": login},
        )
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) == 404:  # not a collaborator at all
            return "none", None
        return None, f"GitHub answered {exc.status_code}"
    except gidgethub.HTTPException as exc:
        return None, f"GitHub answered {exc.status_code}"
    except (aiohttp.ClientError, TimeoutError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return role_of(answer), None
