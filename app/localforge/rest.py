"""LocalForge's REST handlers, one per GitHub operation (by OpenAPI operationId), by
resource: Apps (``rest_apps``), repositories (``rest_repos``), pull requests
(``rest_pulls``), issues (``rest_issues``), checks and statuses (``rest_checks``), the
Git Data API (``gitdata``); each registers its handlers in ``HANDLERS`` with ``op``
(:mod:`~app.localforge.rest_call`), and importing this module registers them all.

The server has already matched the operation and checked the request against its
schema; a handler does what GitHub does and answers in GitHub's shapes. Refusals
raise :class:`~app.localforge.api_errors.ApiError` with GitHub's status and message.
An operation is found by searching for its operationId.
"""

from app.localforge import (  # noqa: F401 - each registers its handlers
    gitdata,
    rest_apps,
    rest_checks,
    rest_issues,
    rest_pulls,
    rest_repos,
)
from app.localforge.rest_call import HANDLERS, Answer, Auth, Call

__all__ = ["HANDLERS", "Answer", "Auth", "Call"]
