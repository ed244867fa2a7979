"""Closing one of Patchwarden's pull requests that is no longer wanted (the alert it
fixed was dismissed, or fixed otherwise), saying why on it first.

Idempotent as every write here: the comment carries a marker and is edited in place,
and a pull request that is not open (closed, merged) is left as it is.
"""

from __future__ import annotations

from app.publish.github import Publisher


async def close_with_comment(pub: Publisher, number: int, *, key: str, body: str) -> bool:
    """Say ``body`` on pull request ``number`` (one marker comment), then close it;
    False when it is not open, and nothing is written."""
    pull = await pub.get_pull(number)
    if pull.get("state") != "open" or pull.get("merged"):
        return False
    await pub.upsert_comment(number, key, body)
    await pub.gh.patch(
        "/repos/{owner}/{repo}/pulls/{number}",
        {**pub.vars, "number": number},
        data={"state": "closed"},
    )
    return True
