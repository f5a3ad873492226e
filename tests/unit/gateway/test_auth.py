"""Client authentication of the gateway: Basic users, a static bearer token and JWTs checked
against a JWKS, issuer and audience; every refusal is UNAUTHENTICATED with what to send."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from partita.errors import ConfigError
from partita.gateway.auth import Authenticator, hash_password, read_users
from partita.gateway.errors import GatewayError, Status

ISSUER, AUDIENCE = "https://idp.test", "zeebe-api"


def check(authenticator: Authenticator, header: str | None) -> str:
    return asyncio.run(authenticator.check(header))


def refused(authenticator: Authenticator, header: str | None) -> str:
    with pytest.raises(GatewayError) as caught:
        check(authenticator, header)
    assert caught.value.status is Status.UNAUTHENTICATED
    return caught.value.message


def basic(name: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()


def test_no_authentication_serves_everyone() -> None:
    assert check(Authenticator(), None) == "anonymous"


def test_basic_users_from_a_file(tmp_path: Path) -> None:
    users = tmp_path / "users.txt"
    users.write_text(f"# who may call\nalice:{hash_password('s3cret', 1000)}\n")
    authenticator = Authenticator(users=read_users(users))
    assert check(authenticator, basic("alice", "s3cret")) == "alice"
    assert "wrong password" in refused(authenticator, basic("alice", "guess"))
    assert "wrong password" in refused(authenticator, basic("mallory", "s3cret"))
    assert "send an Authorization header (Basic)" in refused(authenticator, None)
    assert "Basic" in refused(authenticator, "Bearer abc")
    assert "not base64" in refused(authenticator, "Basic %%%")


def test_a_users_file_line_that_is_wrong_is_named(tmp_path: Path) -> None:
    users = tmp_path / "users.txt"
    users.write_text("alice:plaintext-password\n")
    with pytest.raises(ConfigError, match=r"users.txt:1: expected name:pbkdf2_sha256"):
        read_users(users)


def test_a_static_bearer_token() -> None:
    token = "t" * 24
    authenticator = Authenticator(token=token)
    assert check(authenticator, f"Bearer {token}") == "token"
    assert "not this gateway's" in refused(authenticator, "Bearer " + "x" * 24)
    assert "Bearer <token>" in refused(authenticator, basic("a", "b"))
    with pytest.raises(ConfigError, match="at least 16"):
        Authenticator(token="short")


def test_one_kind_of_authentication_at_a_time(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="one kind of authentication"):
        Authenticator(users={"a": hash_password("b", 1000)}, token="t" * 20)


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Any, Path]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**public, "kid": "k1", "alg": "RS256", "use": "sig"}]}))
    return private, jwks


def token(private: Any, kid: str = "k1", **claims: Any) -> str:
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "orders-app", "exp": time.time() + 300}
    body.update(claims)
    return jwt.encode(body, private, algorithm="RS256", headers={"kid": kid})


def test_jwts_signed_by_the_jwks_for_the_issuer_and_audience(keys: tuple[Any, Path]) -> None:
    private, jwks = keys
    authenticator = Authenticator(jwks=str(jwks), issuer=ISSUER, audience=AUDIENCE)
    assert check(authenticator, f"Bearer {token(private)}") == "orders-app"
    assert "Signature has expired" in refused(
        authenticator, f"Bearer {token(private, exp=time.time() - 120)}"
    )
    assert "Audience doesn't match" in refused(
        authenticator, f"Bearer {token(private, aud='other')}"
    )
    assert "Invalid issuer" in refused(authenticator, f"Bearer {token(private, iss='https://x')}")
    assert "signing key 'k9' is not in the gateway's JWKS" in refused(
        authenticator, f"Bearer {token(private, kid='k9')}"
    )
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert "Signature verification failed" in refused(authenticator, f"Bearer {token(other)}")
    assert "not a JWT" in refused(authenticator, "Bearer not.a.jwt")


def test_a_jwks_needs_issuer_and_audience(keys: tuple[Any, Path]) -> None:
    with pytest.raises(ConfigError, match="needs PARTITA_GATEWAY_JWT_ISSUER"):
        Authenticator(jwks=str(keys[1]))
