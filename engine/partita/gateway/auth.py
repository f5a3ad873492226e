"""Who may use the gateway: the `Authorization` a client sends, checked one of four ways.

- **none** (default): every request is served; keep the listeners on a trusted network.
- **basic**: `Authorization: Basic` with a user of a file of `name:pbkdf2_sha256$iterations$salt
  $hash` lines (`partita gateway --hash-password` makes a line), as Camunda's clients send
  with their basic-auth credentials provider.
- **bearer**: `Authorization: Bearer <token>` equal to one static token (16+ characters).
- **jwt**: `Authorization: Bearer <JWT>` signed by a key of a JWKS (a file, or an https URL
  fetched again for an unknown key id at most every 10 s), with the configured issuer and
  audience, not expired: what Zeebe's and Camunda's OAuth credentials providers send.

Both listeners ask the same `Authenticator`; a refusal is UNAUTHENTICATED (gRPC) or 401 with a
problem document (REST), and never says more than what to send.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import secrets
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from partita.errors import ConfigError
from partita.gateway.errors import GatewayError, Status

_ITERATIONS = 310_000
_MIN_TOKEN = 16
_REFETCH_S = 10.0
_MAX_HEADER = 16 << 10


def hash_password(password: str, iterations: int = _ITERATIONS) -> str:
    """The stored form of a password for a users file."""
    salt = secrets.token_hex(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), bytes.fromhex(salt), iterations)
    return f"pbkdf2_sha256${iterations}${salt}${digest.hex()}"


def _password_matches(password: str, stored: str) -> bool:
    try:
        scheme, iterations, salt, expected = stored.split("$")
        if scheme != "pbkdf2_sha256":
            return False
        digest = hashlib.pbkdf2_hmac(
            "sha256", password.encode(), bytes.fromhex(salt), int(iterations)
        )
    except ValueError:
        return False
    return hmac.compare_digest(digest.hex(), expected)


def read_users(path: Path) -> dict[str, str]:
    """name -> stored password, from `path`; ConfigError naming the line that is wrong."""
    try:
        lines = path.read_text().splitlines()
    except OSError as error:
        raise ConfigError(f"PARTITA_GATEWAY_USERS: cannot read {path}: {error}") from None
    users = {}
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        name, sep, stored = text.partition(":")
        if not sep or not name or not stored.startswith("pbkdf2_sha256$"):
            raise ConfigError(
                f"{path}:{number}: expected name:pbkdf2_sha256$..., as"
                " `partita gateway --hash-password` prints it"
            )
        users[name] = stored
    if not users:
        raise ConfigError(f"PARTITA_GATEWAY_USERS: {path} names no user")
    return users


@dataclass
class _Jwks:
    source: str
    keys: dict[str, Any] = field(default_factory=dict)
    fetched_at: float = 0.0

    def load(self) -> None:
        import jwt  # the gateway extra

        if self.source.startswith(("https://", "http://")):
            with urllib.request.urlopen(self.source, timeout=10) as response:
                text = response.read(1 << 20).decode()
        else:
            text = Path(self.source).read_text()
        keys = jwt.PyJWKSet.from_dict(json.loads(text)).keys
        self.keys = {key.key_id or "": key for key in keys}
        self.fetched_at = time.monotonic()


class Authenticator:
    def __init__(
        self,
        *,
        users: dict[str, str] | None = None,
        token: str | None = None,
        jwks: str | None = None,
        issuer: str | None = None,
        audience: str | None = None,
    ) -> None:
        chosen = [n for n, v in (("users", users), ("token", token), ("jwks", jwks)) if v]
        if len(chosen) > 1:
            raise ConfigError(
                f"the gateway takes one kind of authentication, not {' and '.join(chosen)}:"
                " set one of PARTITA_GATEWAY_USERS, PARTITA_GATEWAY_TOKEN, PARTITA_GATEWAY_JWKS"
            )
        if token is not None and len(token) < _MIN_TOKEN:
            raise ConfigError(f"PARTITA_GATEWAY_TOKEN must be at least {_MIN_TOKEN} characters")
        if jwks and not (issuer and audience):
            raise ConfigError(
                "PARTITA_GATEWAY_JWKS needs PARTITA_GATEWAY_JWT_ISSUER and"
                " PARTITA_GATEWAY_JWT_AUDIENCE: a token is checked against both"
            )
        self.users = users
        self.token = token
        self.issuer = issuer
        self.audience = audience
        self._jwks = _Jwks(jwks) if jwks else None
        if self._jwks is not None:
            try:
                self._jwks.load()
            except Exception as error:
                raise ConfigError(f"PARTITA_GATEWAY_JWKS: cannot load {jwks}: {error}") from None
        self.mode = chosen[0] if chosen else "none"

    async def check(self, authorization: str | None) -> str:
        """The principal of a request with this `Authorization` header; GatewayError
        UNAUTHENTICATED otherwise."""
        if self.mode == "none":
            return "anonymous"
        if not authorization or len(authorization) > _MAX_HEADER:
            raise _refused(f"send an Authorization header ({self._expected()})")
        scheme, _, credentials = authorization.strip().partition(" ")
        scheme = scheme.lower()
        if self.users is not None:
            if scheme != "basic":
                raise _refused("send Authorization: Basic with a user of this gateway")
            return self._basic(credentials.strip())
        if scheme != "bearer" or not credentials.strip():
            raise _refused("send Authorization: Bearer <token>")
        if self.token is not None:
            if hmac.compare_digest(credentials.strip().encode(), self.token.encode()):
                return "token"
            raise _refused("the bearer token is not this gateway's")
        return await self._jwt(credentials.strip())

    def _expected(self) -> str:
        return {"users": "Basic", "token": "Bearer", "jwks": "Bearer with a JWT"}[self.mode]

    def _basic(self, credentials: str) -> str:
        assert self.users is not None
        try:
            name, _, password = base64.b64decode(credentials, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise _refused("the Basic credentials are not base64 of name:password") from None
        stored = self.users.get(name)
        if stored is None or not _password_matches(password, stored):
            raise _refused("unknown user or wrong password")
        return name

    async def _jwt(self, token: str) -> str:
        import jwt  # the gateway extra

        jwks = self._jwks
        assert jwks is not None
        try:
            kid = jwt.get_unverified_header(token).get("kid") or ""
        except jwt.PyJWTError as error:
            raise _refused(f"the bearer token is not a JWT: {error}") from None
        key = jwks.keys.get(kid)
        if key is None and time.monotonic() - jwks.fetched_at > _REFETCH_S:
            with contextlib.suppress(Exception):  # the key stays unknown; the refusal says so
                await asyncio.to_thread(jwks.load)
            key = jwks.keys.get(kid)
        if key is None:
            raise _refused(f"the JWT's signing key '{kid}' is not in the gateway's JWKS")
        try:
            claims = jwt.decode(
                token,
                key=key.key,
                algorithms=[key.algorithm_name],
                audience=self.audience,
                issuer=self.issuer,
                leeway=30,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as error:
            raise _refused(f"the JWT was refused: {error}") from None
        return str(claims.get("sub") or claims.get("client_id") or "jwt")


def _refused(message: str) -> GatewayError:
    return GatewayError(Status.UNAUTHENTICATED, message)
