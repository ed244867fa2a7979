"""The GitHub client against the local forge, over real HTTP on loopback.

Rate limits are honoured as GitHub documents them, retries are bounded, a 401 refreshes
the installation token once, the App JWT is what GitHub accepts, installation tokens are
cached, and mutations are serialised per installation, in the order they were made, a
rate-limited write's wait and retry included.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import gidgethub
import jwt
import pytest

from app.errors import GitHubAuthError
from app.github.client import GitHubApp, GitHubClient, RetryPolicy
from app.github.ratelimit import rate_limit_wait
from app.localforge import LocalForge
from app.localforge.state import Comment
from tests.conftest import APP_ID, INSTALLATION, REPO

OWNER, NAME = REPO.split("/")
PERMISSION = "/repos/{owner}/{repo}/collaborators/{username}/permission"
PERMISSION_RE = "/collaborators/alice/permission$"
COMMENT_REACTIONS = "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"
ISSUE_COMMENTS = "/repos/{owner}/{repo}/issues/{number}/comments"
ISSUE_COMMENTS_RE = r"/issues/\d+/comments$"
NOW = 1_700_000_000.0
ROOT = Path(__file__).resolve().parents[2]


# -- fixtures and helpers ------------------------------------------------------------------


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture
def make_app(
    forge: LocalForge, app_keys: tuple[str, str], session: aiohttp.ClientSession
) -> Callable[..., GitHubApp]:
    def make(**kwargs: Any) -> GitHubApp:
        return GitHubApp(
            app_id=APP_ID,
            private_key=app_keys[0],
            api_url=forge.url,
            session=session,
            **kwargs,
        )

    return make


class RecordingSleep:
    """Records the waits instead of sleeping them (for tests that must not wait)."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        await asyncio.sleep(0)


async def get_permission(gh: GitHubClient, username: str = "alice", repo: str = REPO) -> Any:
    owner, name = repo.split("/")
    return await gh.getitem(PERMISSION, {"owner": owner, "repo": name, "username": username})


async def react(gh: GitHubClient, comment_id: int, content: str = "eyes", repo: str = REPO) -> Any:
    owner, name = repo.split("/")
    return await gh.post(
        COMMENT_REACTIONS,
        {"owner": owner, "repo": name, "comment_id": comment_id},
        data={"content": content},
    )


async def new_comment(forge: LocalForge, repo: str = REPO) -> Comment:
    issue = forge.open_issue(repo, "t", author="alice")
    return await forge.post_comment(repo, issue.number, "hi", author="alice", send=False)


async def comment_on(gh: GitHubClient, number: int, body: str, repo: str = REPO) -> Any:
    owner, name = repo.split("/")
    return await gh.post(
        ISSUE_COMMENTS, {"owner": owner, "repo": name, "number": number}, data={"body": body}
    )


async def until_refused(
    forge: LocalForge, method: str = "GET", path_re: str = PERMISSION_RE
) -> None:
    """Until the forge has answered the request with its injected 429."""
    for _ in range(500):
        if [c for c in forge.calls(method, path_re) if c.status == 429]:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the forge never answered 429")


def mints(forge: LocalForge) -> int:
    return len(forge.calls("POST", "/access_tokens$"))


# -- 1. rate_limit_wait, pure --------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "headers", "message", "attempt", "base", "expected"),
    [
        pytest.param(
            403, {"retry-after": "30"}, "secondary rate limit", 1, 60.0, 30.0, id="403-ra"
        ),
        pytest.param(429, {"retry-after": "5"}, "", 1, 60.0, 5.0, id="429-ra"),
        pytest.param(429, {"Retry-After": "9"}, "", 1, 60.0, 9.0, id="ra-title-case"),
        pytest.param(403, {"retry-after": "0"}, "rate limit", 1, 60.0, 0.0, id="ra-zero"),
        pytest.param(
            403,
            {"retry-after": email.utils.formatdate(NOW + 120, usegmt=True)},
            "secondary rate limit",
            1,
            60.0,
            120.0,
            id="ra-http-date",
        ),
        pytest.param(
            429,
            {"retry-after": email.utils.formatdate(NOW - 300, usegmt=True)},
            "",
            1,
            60.0,
            0.0,
            id="ra-http-date-past",
        ),
        pytest.param(
            403,
            {
                "retry-after": "7",
                "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": str(int(NOW) + 500),
            },
            "API rate limit exceeded",
            1,
            60.0,
            7.0,
            id="ra-beats-reset",
        ),
        # Secondary limits with no headers: exponential from the base.
        pytest.param(403, {}, "You have exceeded a secondary rate limit", 1, 60.0, 60.0, id="s1"),
        pytest.param(403, {}, "You have exceeded a secondary rate limit", 2, 60.0, 120.0, id="s2"),
        pytest.param(403, {}, "You have exceeded a secondary rate limit", 3, 60.0, 240.0, id="s3"),
        pytest.param(
            403,
            {"x-ratelimit-remaining": "4999", "x-ratelimit-reset": str(int(NOW) + 3600)},
            "You have exceeded a secondary rate limit",
            1,
            60.0,
            60.0,
            id="secondary-with-quota-left",
        ),
        pytest.param(
            403, {"retry-after": "soon"}, "secondary rate limit", 2, 60.0, 120.0, id="ra-garbage"
        ),
        pytest.param(429, {}, "", 1, 0.5, 0.5, id="429-a1"),
        pytest.param(429, {}, "", 2, 0.5, 1.0, id="429-a2"),
        pytest.param(429, {}, "", 4, 0.5, 4.0, id="429-a4"),
        # Not rate limits: never retried.
        pytest.param(403, {}, "Resource not accessible by integration", 1, 60.0, None, id="403"),
        pytest.param(
            403,
            {"x-ratelimit-remaining": "4999", "x-ratelimit-reset": str(int(NOW) + 3600)},
            "Resource not accessible by integration",
            1,
            60.0,
            None,
            id="403-quota-left",
        ),
        pytest.param(404, {}, "Not Found", 1, 60.0, None, id="404"),
        pytest.param(500, {}, "Server Error", 1, 60.0, None, id="500"),
        pytest.param(401, {}, "Bad credentials", 1, 60.0, None, id="401"),
    ],
)
def test_rate_limit_wait_table(
    status: int,
    headers: dict[str, str],
    message: str,
    attempt: int,
    base: float,
    expected: float | None,
) -> None:
    wait = rate_limit_wait(status, headers, message, attempt=attempt, now=NOW, base_seconds=base)
    if expected is None:
        assert wait is None
    else:
        assert wait == pytest.approx(expected)


@pytest.mark.parametrize("ahead", [100, 1, 0, -30])
def test_rate_limit_wait_until_reset(ahead: int) -> None:
    reset = int(NOW) + ahead
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}
    wait = rate_limit_wait(403, headers, "API rate limit exceeded", attempt=1, now=NOW)
    assert wait is not None
    assert wait >= max(reset - NOW, 0.0)
    assert wait <= max(reset - NOW, 0.0) + 5  # and not absurdly longer
    # The primary limit waits for the reset, not for the exponential secondary back-off.
    later = rate_limit_wait(403, headers, "API rate limit exceeded", attempt=4, now=NOW)
    assert later == wait


# -- 2. rate limits honoured over HTTP, with real sleeps -----------------------------------


@pytest.mark.parametrize(
    ("status", "headers", "message", "min_gap"),
    [
        pytest.param(403, {"retry-after": "1"}, "secondary rate limit", 1.0, id="403-retry-after"),
        pytest.param(429, {"retry-after": "1"}, "Too Many Requests", 1.0, id="429-retry-after"),
        pytest.param(429, {}, "Too Many Requests", 0.2, id="429-no-headers"),
        pytest.param(
            403,
            {},
            "You have exceeded a secondary rate limit. Please wait a few minutes.",
            0.2,
            id="403-secondary-message",
        ),
    ],
)
async def test_rate_limited_call_waits_then_succeeds(
    forge: LocalForge,
    make_app: Callable[..., GitHubApp],
    status: int,
    headers: dict[str, str],
    message: str,
    min_gap: float,
) -> None:
    forge.add_user(REPO, "alice", "write")
    app = make_app(policy=RetryPolicy(base_seconds=0.2))
    gh = app.installation(INSTALLATION)
    forge.fail("GET", PERMISSION_RE, status, headers=headers, message=message)

    answer = await get_permission(gh)

    assert answer["permission"] == "write"
    calls = forge.calls("GET", PERMISSION_RE)
    assert [c.status for c in calls] == [status, 200]
    assert calls[1].at - calls[0].at >= min_gap
    assert len(gh.waits) == 1
    assert gh.waits[0] >= min_gap


async def test_primary_rate_limit_waits_until_reset(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    forge.add_user(REPO, "alice", "write")
    gh = make_app(policy=RetryPolicy(base_seconds=0.2)).installation(INSTALLATION)
    reset = int(time.time()) + 2
    forge.fail(
        "GET",
        PERMISSION_RE,
        403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
        message="API rate limit exceeded for installation ID 7.",
    )

    answer = await get_permission(gh)

    assert answer["permission"] == "write"
    calls = forge.calls("GET", PERMISSION_RE)
    assert [c.status for c in calls] == [403, 200]
    assert calls[1].at >= reset  # not one request before GitHub resets the quota


async def test_a_rate_limit_holds_every_request_of_the_installation_until_the_reset(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    """Issue 32: a second write left 0.01 s after the first request's 429, and a
    `retry-after: 1.5` was read as no header (the base wait was used). GitHub asks an
    integration to stop every request until the reset: the installation's gate holds
    them; the App's own calls (another gate) are not held."""
    forge.add_user(REPO, "alice", "write")
    app = make_app(policy=RetryPolicy(base_seconds=30.0))
    gh = app.installation(INSTALLATION)
    comment = await new_comment(forge)
    await get_permission(gh)  # the token minted: only the two requests below remain
    forge.fail("GET", PERMISSION_RE, 429, headers={"retry-after": "1.5"}, message="Slow down")
    first = asyncio.create_task(get_permission(gh))
    await until_refused(forge)
    await app.as_app().getitem("/app")  # the App's JWT: not this installation's limit
    await react(gh, comment.id)  # another write of the same installation, meanwhile
    assert (await first)["permission"] == "write"
    limited = next(c.at for c in forge.calls("GET", PERMISSION_RE) if c.status == 429)
    (wrote,) = forge.calls("POST", "/reactions$")
    (own,) = forge.calls("GET", "/app$")
    assert wrote.at >= limited + 1.4  # held until GitHub's reset, not sent beside it
    assert own.at < limited + 1.0
    assert gh.waits == [1.5]  # GitHub's number, not the 30 s base wait
    gate = app.gates[INSTALLATION]
    assert (gate.pauses, gate.held) == (1, 1)
    assert rate_limit_wait(429, {"Retry-After": "0.25"}, "", attempt=1, now=NOW) == 0.25


async def test_a_rate_limit_one_process_meets_holds_the_installation_in_another(
    forge: LocalForge,
    make_app: Callable[..., GitHubApp],
    tmp_path: Any,
) -> None:
    """Two processes of one deployment (two Apps, each with its own gates) share only the
    store: the 429 the first meets holds the second's request of the same installation
    until GitHub's reset."""
    from app.store import store_for_url

    store = store_for_url(f"sqlite:///{tmp_path / 'pw.db'}")
    await store.open()
    try:
        forge.add_user(REPO, "alice", "write")
        one, two = make_app(shared=store.repos), make_app(shared=store.repos)
        first, second = one.installation(INSTALLATION), two.installation(INSTALLATION)
        comment = await new_comment(forge)
        await get_permission(first)
        await get_permission(second)  # both have tokens; both read the store once
        forge.fail("GET", PERMISSION_RE, 429, headers={"retry-after": "1.5"}, message="Slow")
        task = asyncio.create_task(get_permission(first))
        await until_refused(forge)
        await asyncio.sleep(1.0)  # the other process looks at the store once a second
        await react(second, comment.id)
        await task
    finally:
        await store.close()
    limited = next(c.at for c in forge.calls("GET", PERMISSION_RE) if c.status == 429)
    (wrote,) = forge.calls("POST", "/reactions$")
    assert wrote.at >= limited + 1.4
    assert two.gates[INSTALLATION].held == 1


async def test_a_rate_limit_holds_the_installation_in_another_worker_process(
    forge: LocalForge,
    make_app: Callable[..., GitHubApp],
    app_keys: tuple[str, str],
    tmp_path: Any,
) -> None:
    """Issue 32, as deployed: two OS processes share the SQLite store file. The 429 this
    process meets holds the other process's write until GitHub's reset, though that
    process never saw the 429."""
    import json
    import os
    import sys

    from app.store import store_for_url

    root = ROOT
    db, key = tmp_path / "pw.db", tmp_path / "app.pem"
    key.write_text(app_keys[0])
    key.chmod(0o600)
    store = store_for_url(f"sqlite:///{db}")
    await store.open()
    forge.add_user(REPO, "alice", "write")
    comment = await new_comment(forge)
    first = make_app(shared=store.repos).installation(INSTALLATION)
    await get_permission(first)
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.github.second_process",
        forge.url, str(key), str(db), str(comment.id),
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert child.stdin is not None
        assert child.stdout is not None
        ready = await asyncio.wait_for(child.stdout.readline(), 60)
        assert ready.strip() == b"ready"
        forge.fail("GET", PERMISSION_RE, 429, headers={"retry-after": "1.5"}, message="Slow")
        task = asyncio.create_task(get_permission(first))
        await until_refused(forge)
        child.stdin.write(b"go\n")
        await child.stdin.drain()
        report = json.loads(await asyncio.wait_for(child.stdout.readline(), 60))
        await task
        assert await child.wait() == 0
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
        await store.close()
    limited = next(c.at for c in forge.calls("GET", PERMISSION_RE) if c.status == 429)
    (wrote,) = forge.calls("POST", "/reactions$")
    assert report["asked"] < limited + 1.4  # it asked to write before the reset ...
    assert wrote.at >= limited + 1.4  # ... and its gate held the request until then
    assert report["held"] == 1


class BrokenStore:
    """A store that cannot be reached: every read and write of a pause fails."""

    def __init__(self) -> None:
        self.asked = 0

    async def pause_requests(self, scope: str, until: float) -> None:
        self.asked += 1
        raise OSError("database is locked")

    async def requests_paused_until(self, scope: str) -> float:
        self.asked += 1
        raise OSError("database is locked")


async def test_a_store_that_fails_leaves_the_processs_own_gate(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    """The shared pauses are a courtesy between processes: when the database blinks, a
    request still goes, and a rate limit still holds this process's requests."""
    store = BrokenStore()
    forge.add_user(REPO, "alice", "write")
    gh = make_app(policy=RetryPolicy(base_seconds=0.2), shared=store).installation(INSTALLATION)
    forge.fail("GET", PERMISSION_RE, 429, headers={"retry-after": "0.3"}, message="Slow")
    assert (await get_permission(gh))["permission"] == "write"
    calls = forge.calls("GET", PERMISSION_RE)
    assert [c.status for c in calls] == [429, 200]
    assert calls[1].at - calls[0].at >= 0.3
    assert store.asked >= 2  # it was asked, and its failures were not the request's


# -- 3. bounded retries --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "headers", "message", "exc_type"),
    [
        pytest.param(429, {}, "Too Many Requests", gidgethub.BadRequest, id="429"),
        pytest.param(
            403,
            {},
            "You have exceeded a secondary rate limit",
            gidgethub.BadRequest,
            id="403-secondary",
        ),
        pytest.param(
            403,
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "0"},
            "API rate limit exceeded",
            gidgethub.RateLimitExceeded,
            id="403-primary",
        ),
    ],
)
@pytest.mark.parametrize("max_retries", [0, 2])
async def test_retries_are_bounded(
    forge: LocalForge,
    make_app: Callable[..., GitHubApp],
    status: int,
    headers: dict[str, str],
    message: str,
    exc_type: type[Exception],
    max_retries: int,
) -> None:
    forge.add_user(REPO, "alice", "write")
    sleep = RecordingSleep()
    app = make_app(policy=RetryPolicy(base_seconds=0.01, max_retries=max_retries), sleep=sleep)
    gh = app.installation(INSTALLATION)
    forge.fail("GET", PERMISSION_RE, status, headers=headers, message=message, times=50)

    with pytest.raises(exc_type) as raised:
        await asyncio.wait_for(get_permission(gh), timeout=10)

    assert int(raised.value.status_code) == status  # type: ignore[attr-defined]
    assert len(forge.calls("GET", PERMISSION_RE)) == max_retries + 1
    assert len(sleep.calls) == max_retries
    if not headers:  # exponential: each wait doubles the one before
        assert sleep.calls == pytest.approx([0.01 * 2**i for i in range(max_retries)])


@pytest.mark.parametrize(
    ("status", "headers", "exc_type"),
    [
        pytest.param(403, {"retry-after": "3600"}, gidgethub.BadRequest, id="403-retry-after"),
        pytest.param(429, {"retry-after": "3600"}, gidgethub.BadRequest, id="429-retry-after"),
        pytest.param(
            403,
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 3600)},
            gidgethub.RateLimitExceeded,
            id="reset-in-an-hour",
        ),
    ],
)
async def test_wait_longer_than_allowed_raises_at_once(
    forge: LocalForge,
    make_app: Callable[..., GitHubApp],
    status: int,
    headers: dict[str, str],
    exc_type: type[Exception],
) -> None:
    forge.add_user(REPO, "alice", "write")
    sleep = RecordingSleep()
    gh = make_app(sleep=sleep).installation(INSTALLATION)
    assert gh.policy.max_wait_seconds < 3600
    forge.fail("GET", PERMISSION_RE, status, headers=headers, message="rate limit")

    with pytest.raises(exc_type):
        await asyncio.wait_for(get_permission(gh), timeout=10)

    assert len(forge.calls("GET", PERMISSION_RE)) == 1
    assert sleep.calls == []
    assert gh.waits == []


# -- 4. real refusals are not retried ------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message", "exc_type"),
    [
        pytest.param(403, "Resource not accessible by integration", gidgethub.BadRequest, id="403"),
        pytest.param(404, "Not Found", gidgethub.BadRequest, id="404"),
        pytest.param(500, "Server Error", gidgethub.GitHubBroken, id="500"),
    ],
)
async def test_plain_errors_are_not_retried(
    forge: LocalForge,
    make_app: Callable[..., GitHubApp],
    status: int,
    message: str,
    exc_type: type[Exception],
) -> None:
    forge.add_user(REPO, "alice", "write")
    sleep = RecordingSleep()
    gh = make_app(sleep=sleep).installation(INSTALLATION)
    forge.fail("GET", PERMISSION_RE, status, message=message)

    with pytest.raises(exc_type) as raised:
        await get_permission(gh)

    assert int(raised.value.status_code) == status  # type: ignore[attr-defined]
    assert message in str(raised.value)
    assert len(forge.calls("GET", PERMISSION_RE)) == 1
    assert sleep.calls == []
    # The fault was one-off: the next call goes through.
    assert (await get_permission(gh))["permission"] == "write"


# -- 5. 401: refresh the token once, retry once --------------------------------------------


async def test_401_mints_a_new_token_and_retries_once(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    forge.add_user(REPO, "alice", "write")
    gh = make_app().installation(INSTALLATION)
    forge.fail("GET", "permission", 401, message="Bad credentials")

    answer = await get_permission(gh)

    assert answer["permission"] == "write"
    assert [c.status for c in forge.calls("GET", PERMISSION_RE)] == [401, 200]
    assert mints(forge) == 2
    assert len(forge.state.tokens) == 2
    # The fresh token is cached: the next call neither mints nor fails.
    await get_permission(gh)
    assert mints(forge) == 2


async def test_two_401s_in_a_row_raise(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    forge.add_user(REPO, "alice", "write")
    sleep = RecordingSleep()
    gh = make_app(sleep=sleep).installation(INSTALLATION)
    forge.fail("GET", "permission", 401, message="Bad credentials", times=5)

    with pytest.raises(gidgethub.BadRequest) as raised:
        await asyncio.wait_for(get_permission(gh), timeout=10)

    assert int(raised.value.status_code) == 401
    assert len(forge.calls("GET", PERMISSION_RE)) == 2
    assert mints(forge) == 2
    assert sleep.calls == []
    assert "ghs_" not in str(raised.value)


async def test_401_on_a_mutation_refreshes_without_deadlock(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    comment = await new_comment(forge)
    gh = make_app().installation(INSTALLATION)
    forge.fail("POST", "reactions", 401, message="Bad credentials")

    await asyncio.wait_for(react(gh, comment.id), timeout=5)

    assert forge.comment_reactions(comment.id) == ["eyes"]
    assert [c.status for c in forge.calls("POST", "reactions")] == [401, 201]
    assert mints(forge) == 2


# -- 6. the App JWT ------------------------------------------------------------------------


async def test_app_jwt_is_what_github_accepts(
    make_app: Callable[..., GitHubApp], app_keys: tuple[str, str]
) -> None:
    app = make_app()
    token = app.auth.jwt()
    now = time.time()

    assert jwt.get_unverified_header(token)["alg"] == "RS256"
    claims = jwt.decode(token, app_keys[1], algorithms=["RS256"])
    assert claims["iss"] == str(APP_ID)
    assert claims["iat"] <= now - 59  # backdated for clock drift
    assert claims["exp"] - now <= 600  # GitHub's maximum
    assert claims["exp"] > now + 60
    assert claims["exp"] - claims["iat"] <= 660


async def test_app_client_authenticates_with_the_jwt(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    gh = make_app().as_app()
    answer = await gh.post(
        "/app/installations/{installation_id}/access_tokens",
        {"installation_id": INSTALLATION},
        data=b"",
    )
    assert answer["token"].startswith("ghs_")
    assert [c.auth_kind for c in forge.calls("POST", "access_tokens")] == ["app"]


@pytest.mark.parametrize(
    "private_key",
    [
        pytest.param("not a key", id="garbage"),
        pytest.param("", id="empty"),
        pytest.param(
            "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
            id="truncated-pem",
        ),
        pytest.param(None, id="public-key-instead"),
    ],
)
async def test_bad_private_key_gives_a_readable_auth_error(
    forge: LocalForge,
    session: aiohttp.ClientSession,
    app_keys: tuple[str, str],
    private_key: str | None,
) -> None:
    # A bad key is refused when the App is set up (at start), not at the first delivery.
    with pytest.raises(GitHubAuthError, match="private key") as caught:
        GitHubApp(
            app_id=APP_ID,
            private_key=app_keys[1] if private_key is None else private_key,
            api_url=forge.url,
            session=session,
        )
    assert ".pem" in str(caught.value)
    assert mints(forge) == 0


# -- 7. installation token cache -----------------------------------------------------------


async def test_installation_token_is_cached(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    forge.add_user(REPO, "alice", "write")
    app = make_app()
    first = await app.auth.installation_token(INSTALLATION)
    second = await app.auth.installation_token(INSTALLATION)

    assert first == second
    assert first.startswith("ghs_")
    assert mints(forge) == 1
    gh = app.installation(INSTALLATION)
    await get_permission(gh)
    await get_permission(gh)
    assert mints(forge) == 1


async def test_short_lived_tokens_are_minted_anew(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    forge.state.token_lifetime_seconds = 200  # under the five-minute renew margin
    app = make_app()
    tokens = [await app.auth.installation_token(INSTALLATION) for _ in range(3)]

    assert len(set(tokens)) == 3
    assert mints(forge) == 3


async def test_concurrent_callers_share_one_mint(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    forge.delay("access_tokens", 0.05)
    app = make_app()
    tokens = await asyncio.gather(*(app.auth.installation_token(INSTALLATION) for _ in range(10)))

    assert len(set(tokens)) == 1
    assert mints(forge) == 1


async def test_unknown_installation_is_a_clear_error_without_secrets(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    app = make_app()
    good = await app.auth.installation_token(INSTALLATION)

    with pytest.raises(GitHubAuthError) as raised:
        await app.auth.installation_token(987654)

    text = f"{raised.value} {raised.value!r}"
    assert "987654" in text
    assert "404" in text
    assert good not in text
    assert "ghs_" not in text
    assert app.auth.jwt() not in text
    # The client surfaces the same error.
    with pytest.raises(GitHubAuthError, match="987654"):
        await get_permission(app.installation(987654))


# -- 8. mutations serialised per installation ----------------------------------------------


async def test_mutations_are_serialised_per_installation(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    comment = await new_comment(forge)
    app = make_app()
    await app.auth.installation_token(INSTALLATION)  # keep minting out of the timing
    forge.delay("reactions", 0.2)
    contents = ["eyes", "rocket", "heart"]

    start = time.monotonic()
    await asyncio.gather(*(react(app.installation(INSTALLATION), comment.id, c) for c in contents))
    elapsed = time.monotonic() - start

    assert elapsed >= 0.58
    assert sorted(forge.comment_reactions(comment.id)) == sorted(contents)
    finished = sorted(c.at for c in forge.calls("POST", "reactions"))
    assert len(finished) == 3
    assert all(b - a >= 0.18 for a, b in itertools.pairwise(finished))


@pytest.mark.serial  # an upper bound on the time taken
async def test_reads_are_not_serialised(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    forge.add_user(REPO, "alice", "write")
    app = make_app()
    await app.auth.installation_token(INSTALLATION)
    forge.delay("permission", 0.2)
    gh = app.installation(INSTALLATION)

    start = time.monotonic()
    answers = await asyncio.gather(*(get_permission(gh) for _ in range(3)))
    elapsed = time.monotonic() - start

    assert [a["permission"] for a in answers] == ["write"] * 3
    assert elapsed < 0.5


@pytest.mark.serial  # an upper bound on the time taken
async def test_mutations_of_different_installations_run_together(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    other = "octo-org/gadgets"
    forge.add_repo(other, installation_id=INSTALLATION + 1)
    ours, theirs = await new_comment(forge), await new_comment(forge, other)
    app = make_app()
    await app.auth.installation_token(INSTALLATION)
    await app.auth.installation_token(INSTALLATION + 1)
    forge.delay("reactions", 0.3)

    start = time.monotonic()
    await asyncio.gather(
        react(app.installation(INSTALLATION), ours.id),
        react(app.installation(INSTALLATION + 1), theirs.id, repo=other),
    )
    elapsed = time.monotonic() - start

    assert forge.comment_reactions(ours.id) == ["eyes"]
    assert forge.comment_reactions(theirs.id) == ["eyes"]
    assert elapsed < 0.55


@pytest.mark.parametrize("made", ["before-its-answer", "during-its-pause"])
async def test_a_rate_limited_write_keeps_its_place_before_later_writes(
    forge: LocalForge, make_app: Callable[..., GitHubApp], made: str
) -> None:
    """Issue 55: at the end of a 429's pause a later comment reached GitHub before the
    earlier one's retry. The write that met the limit keeps the installation's turn
    through its wait and retry; a write made after it goes after it."""
    issue = forge.open_issue(REPO, "t", author="alice")
    app = make_app(policy=RetryPolicy(base_seconds=30.0))
    await app.auth.installation_token(INSTALLATION)  # keep minting out of the timing
    forge.fail("POST", ISSUE_COMMENTS_RE, 429, headers={"retry-after": "0.2"}, message="Slow")
    first = asyncio.create_task(comment_on(app.installation(INSTALLATION), issue.number, "A"))
    if made == "during-its-pause":
        await until_refused(forge, "POST", ISSUE_COMMENTS_RE)
    second = asyncio.create_task(comment_on(app.installation(INSTALLATION), issue.number, "B"))
    await asyncio.wait_for(asyncio.gather(first, second), timeout=10)

    received = forge.calls("POST", ISSUE_COMMENTS_RE)
    assert [(c.body["body"], c.status) for c in received] == [("A", 429), ("A", 201), ("B", 201)]
    refused, retried, later = received
    assert retried.at - refused.at >= 0.2  # GitHub's retry-after, honoured
    assert later.at >= retried.at  # B left after A's retry was answered, not beside it
    assert [c.body for c in forge.comments(REPO, issue.number)] == ["A", "B"]


async def test_a_rate_limited_write_does_not_hold_another_installations_writes(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    other = "octo-org/gadgets"
    forge.add_repo(other, installation_id=INSTALLATION + 1)
    ours = forge.open_issue(REPO, "t", author="alice")
    theirs = forge.open_issue(other, "t", author="alice")
    app = make_app()
    await app.auth.installation_token(INSTALLATION)
    await app.auth.installation_token(INSTALLATION + 1)
    ours_re = f"/repos/{REPO}{ISSUE_COMMENTS_RE}"
    forge.fail("POST", ours_re, 429, headers={"retry-after": "1"}, message="Slow")
    first = asyncio.create_task(comment_on(app.installation(INSTALLATION), ours.number, "A"))
    await until_refused(forge, "POST", ours_re)
    await comment_on(app.installation(INSTALLATION + 1), theirs.number, "C", repo=other)
    await asyncio.wait_for(first, timeout=10)

    refused, retried = forge.calls("POST", ours_re)
    (elsewhere,) = forge.calls("POST", f"/repos/{other}/issues/")
    assert elsewhere.status == 201
    assert elsewhere.at < refused.at + 0.5  # not held for the other installation's limit
    assert retried.at - refused.at >= 1.0


@pytest.mark.parametrize("ends", ["refused", "cancelled-in-its-pause", "cancelled-queued"])
async def test_a_write_that_ends_unsent_lets_the_next_write_go(
    forge: LocalForge, make_app: Callable[..., GitHubApp], ends: str
) -> None:
    """The installation's turn passes on when a write is refused for good (not a rate
    limit: no wait, no retry), cancelled while it waits out a rate limit, or cancelled
    while queued behind another write."""
    issue = forge.open_issue(REPO, "t", author="alice")
    app = make_app()
    await app.auth.installation_token(INSTALLATION)

    def write(body: str) -> asyncio.Task[Any]:
        return asyncio.create_task(comment_on(app.installation(INSTALLATION), issue.number, body))

    if ends == "refused":
        forge.fail("POST", ISSUE_COMMENTS_RE, 403, message="Resource not accessible by integration")
        first, second = write("A"), write("B")
        with pytest.raises(gidgethub.BadRequest):
            await first
        await asyncio.wait_for(second, timeout=5)
        expected = [("A", 403), ("B", 201)]
    elif ends == "cancelled-in-its-pause":
        forge.fail("POST", ISSUE_COMMENTS_RE, 429, headers={"retry-after": "0.3"})
        first, second = write("A"), write("B")
        await until_refused(forge, "POST", ISSUE_COMMENTS_RE)
        first.cancel()
        await asyncio.wait_for(second, timeout=5)
        expected = [("A", 429), ("B", 201)]
    else:
        forge.fail("POST", ISSUE_COMMENTS_RE, 429, headers={"retry-after": "0.3"})
        first, second, third = write("A"), write("B"), write("C")
        await until_refused(forge, "POST", ISSUE_COMMENTS_RE)
        second.cancel()
        await asyncio.wait_for(asyncio.gather(first, third), timeout=5)
        expected = [("A", 429), ("A", 201), ("C", 201)]

    received = forge.calls("POST", ISSUE_COMMENTS_RE)
    assert [(c.body["body"], c.status) for c in received] == expected


# -- 9. tokens never in URLs ---------------------------------------------------------------


async def test_tokens_travel_in_headers_never_in_urls(
    forge: LocalForge, make_app: Callable[..., GitHubApp]
) -> None:
    forge.add_user(REPO, "alice", "write")
    comment = await new_comment(forge)
    app = make_app()
    gh = app.installation(INSTALLATION)
    await get_permission(gh)
    await react(gh, comment.id)
    forge.fail("GET", "permission", 401, message="Bad credentials")
    await get_permission(gh)
    forge.fail("GET", "permission", 429, headers={"retry-after": "0"})
    await get_permission(gh)

    assert forge.state.tokens  # tokens were minted and used
    assert len(forge.requests) >= 7
    for recorded in forge.requests:
        assert "ghs_" not in recorded.path
        for token in forge.state.tokens:
            assert token not in recorded.path
    repo_calls = [r for r in forge.requests if r.path.startswith("/repos/")]
    assert {r.auth_kind for r in repo_calls} == {"installation"}
