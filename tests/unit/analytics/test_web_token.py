"""The analytics page's token check and the settings `partita analytics` resolves: where it
listens and which token it requires, from flags over PARTITA_ANALYTICS_* variables."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from partita.analytics.app import AnalyticsSettings
from partita.analytics.web_token import authorized, check_token, token_middleware
from partita.cli import build_parser
from partita.cli.analytics import analytics_settings
from partita.cli.common import build_config
from partita.config import KafkaRole
from partita.errors import ConfigError

TOKEN = "a-token-of-24-characters"


@pytest.mark.parametrize(
    ("authorization", "query", "allowed"),
    [
        (f"Bearer {TOKEN}", None, True),
        (f"bearer   {TOKEN} ", None, True),
        (None, TOKEN, True),
        ("Bearer wrong", TOKEN, True),  # the browser's ?token= alone suffices
        (None, None, False),
        ("Bearer ", "", False),
        (f"Basic {TOKEN}", None, False),
        (f"Bearer {TOKEN}x", None, False),
        (f"Bearer {TOKEN[:-1]}", TOKEN[:-1], False),
    ],
)
def test_only_the_exact_token_as_bearer_header_or_query_is_authorized(
    authorization: str | None, query: str | None, allowed: bool
) -> None:
    assert authorized(authorization, query, TOKEN) is allowed


def test_short_tokens_are_refused_and_blanks_stripped() -> None:
    assert check_token(f"  {TOKEN}\n") == TOKEN
    with pytest.raises(ConfigError, match="at least 16"):
        check_token("short")


def test_the_middleware_answers_401_before_any_route_even_unknown_ones() -> None:
    async def scenario() -> list[tuple[int, str | None]]:
        async def page(request: web.Request) -> web.Response:
            return web.Response(text="figures")

        app = web.Application(middlewares=[token_middleware(TOKEN)])
        app.router.add_get("/api/summary", page)
        async with TestClient(TestServer(app)) as client:
            answers = []
            for path, headers in (
                ("/api/summary", {}),
                ("/no-such-page", {}),
                ("/api/summary", {"Authorization": "Bearer wrong-token-wrong-token"}),
                ("/api/summary", {"Authorization": f"Bearer {TOKEN}"}),
                (f"/api/summary?token={TOKEN}", {}),
            ):
                response = await client.get(path, headers=headers)
                answers.append((response.status, response.headers.get("WWW-Authenticate")))
                assert "Set-Cookie" not in response.headers
            return answers

    assert asyncio.run(scenario()) == [
        (401, 'Bearer realm="partita analytics"'),
        (401, 'Bearer realm="partita analytics"'),
        (401, 'Bearer realm="partita analytics"'),
        (200, None),
        (200, None),
    ]


def _settings(argv: list[str], env: dict[str, str]) -> AnalyticsSettings:
    args = build_parser().parse_args(["analytics", *argv])
    return analytics_settings(build_config(args), args, env)


def test_the_page_binds_loopback_without_a_token_unless_told_otherwise(tmp_path: Path) -> None:
    flags = ["--bootstrap-servers", "kafka:9092", "--data-dir", str(tmp_path)]
    default = _settings(flags, {})
    assert (default.bind, default.port, default.token) == ("127.0.0.1", 6066, None)
    assert default.access.role is KafkaRole.ANALYTICS
    assert default.access.bootstrap == "kafka:9092"
    env = {"PARTITA_ANALYTICS_HOST": "0.0.0.0", "PARTITA_ANALYTICS_TOKEN": TOKEN}
    from_env = _settings([*flags, "--port", "7000"], env)
    assert (from_env.bind, from_env.port, from_env.token) == ("0.0.0.0", 7000, TOKEN)
    assert TOKEN not in repr(from_env)
    flagged = _settings([*flags, "--bind", "10.0.0.5", "--token", "x" * 20], env)
    assert (flagged.bind, flagged.token) == ("10.0.0.5", "x" * 20)
