"""The analytics page's access token: with one set, every request must carry it.

A request is let through when it has `Authorization: Bearer <token>` or, for a browser, the
query parameter `?token=<token>` (the page then sends the header on its own `/api/*` requests;
no cookie or other state is set). Anything else, unknown paths included, is answered 401 with
`WWW-Authenticate: Bearer` before any handler runs. Tokens are compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable
from typing import Any

from partita.errors import ConfigError

Handler = Callable[[Any], Awaitable[Any]]
Middleware = Callable[[Any, Handler], Awaitable[Any]]

MIN_LENGTH = 16


def check_token(token: str) -> str:
    """`token` stripped of surrounding blanks; ConfigError when it is too short to guess-proof."""
    token = token.strip()
    if len(token) < MIN_LENGTH:
        raise ConfigError(
            f"the analytics token (PARTITA_ANALYTICS_TOKEN or --token) has {len(token)}"
            f" characters; use at least {MIN_LENGTH}, e.g. `python -c 'import secrets;"
            " print(secrets.token_urlsafe(32))'`"
        )
    return token


def authorized(authorization: str | None, query_token: str | None, token: str) -> bool:
    """True when the Authorization header is `Bearer <token>` or the query token is `token`.

    Both candidates are always compared, digest against digest, so the answer takes the same
    time whatever part of the token a guess gets right, and whichever carrier it uses."""
    expected = _digest(token)
    offered = ""
    if authorization is not None:
        scheme, _, value = authorization.strip().partition(" ")
        offered = value.strip() if scheme.lower() == "bearer" else ""
    by_header = hmac.compare_digest(_digest(offered), expected) and bool(offered)
    by_query = hmac.compare_digest(_digest(query_token or ""), expected) and bool(query_token)
    return by_header or by_query


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def token_middleware(token: str) -> Middleware:
    """An aiohttp middleware answering 401 to every request without `token` (see the module
    docs). It never reveals whether a path exists to a request without the token."""
    from aiohttp import web

    @web.middleware
    async def require_token(request: web.Request, handler: Handler) -> Any:
        if authorized(request.headers.get("Authorization"), request.query.get("token"), token):
            return await handler(request)
        return web.json_response(
            {"error": "this analytics page needs its token: Authorization: Bearer <token>"},
            status=401,
            headers={"WWW-Authenticate": 'Bearer realm="partita analytics"'},
        )

    result: Middleware = require_token
    return result
