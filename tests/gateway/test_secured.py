"""A secured `partita gateway` on the real broker: TLS on both listeners, and client
authentication with a static bearer token, JWTs from a JWKS, and Basic users over mutual TLS.
pyzeebe 4.7 (its own process) sends the token as gRPC call credentials; the REST side is
plain HTTPS. Without the right credentials a call is UNAUTHENTICATED / 401, and the health
endpoints stay open."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from partita.config import Config
from partita.gateway.auth import hash_password
from tests.support.gateway import GatewayCertificates, make_certificates, running_gateway
from tests.support.paths import BPMN_FIXTURES, ROOT

pytestmark = pytest.mark.kafka

SECURED = ROOT / "tests" / "interop" / "pyzeebe" / "secured.py"
TOKEN = "static-token-of-the-test-0123456789"
BPMN = str(BPMN_FIXTURES / "gateway" / "double.bpmn")


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> GatewayCertificates:
    return make_certificates(tmp_path_factory.mktemp("certificates"))


def pyzeebe(address: str, ca: Path, token: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(SECURED), address, str(ca), token, BPMN],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def https(
    url: str,
    context: ssl.SSLContext,
    authorization: str | None = None,
    body: dict[str, Any] | None = None,
) -> tuple[int, dict[str, str], Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode() if body is not None else None,
        headers={
            **({"Authorization": authorization} if authorization else {}),
            **({"Content-Type": "application/json"} if body is not None else {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            text = response.read()
            return response.status, dict(response.headers), json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read() or b"null")


def test_tls_and_a_static_token(
    engine: Config, certificates: GatewayCertificates, tmp_path: Path
) -> None:
    tls = ["--tls-cert", str(certificates.cert), "--tls-key", str(certificates.key)]
    with running_gateway(engine, tmp_path, *tls, env={"PARTITA_GATEWAY_TOKEN": TOKEN}) as gateway:
        assert pyzeebe(gateway.grpc, certificates.ca, TOKEN) == {
            "version": "8.8.0",
            "deployed": ["gw-double"],
        }
        refused = pyzeebe(gateway.grpc, certificates.ca, "wrong-token-of-the-same-length-00")
        assert refused["code"] == "UNAUTHENTICATED"
        assert "not this gateway's" in refused["details"]

        context = ssl.create_default_context(cafile=str(certificates.ca))
        rest = gateway.rest.replace("http://", "https://")
        status, _, body = https(f"{rest}/v2/topology", context, f"Bearer {TOKEN}")
        assert status == 200 and body["gatewayVersion"] == "8.8.0"
        status, headers, problem = https(f"{rest}/v2/topology", context)
        assert status == 401 and problem["title"] == "UNAUTHENTICATED"
        assert headers["WWW-Authenticate"].startswith("Bearer")
        assert https(f"{rest}/v2/status", context)[0] in (204, 503)  # open, as the health

        with pytest.raises((urllib.error.URLError, ConnectionError)):  # plaintext to TLS
            urllib.request.urlopen(f"{gateway.rest}/v2/topology", timeout=10)


def test_jwts_checked_against_a_jwks(
    engine: Config, certificates: GatewayCertificates, tmp_path: Path
) -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**public, "kid": "idp-1", "alg": "RS256"}]}))
    env = {
        "PARTITA_GATEWAY_JWKS": str(jwks),
        "PARTITA_GATEWAY_JWT_ISSUER": "https://idp.test",
        "PARTITA_GATEWAY_JWT_AUDIENCE": "zeebe-api",
    }

    def token(**claims: Any) -> str:
        body = {
            "iss": "https://idp.test",
            "aud": "zeebe-api",
            "sub": "orders",
            "exp": time.time() + 300,
        }
        return jwt.encode({**body, **claims}, private, algorithm="RS256", headers={"kid": "idp-1"})

    tls = ["--tls-cert", str(certificates.cert), "--tls-key", str(certificates.key)]
    with running_gateway(engine, tmp_path, *tls, env=env) as gateway:
        assert pyzeebe(gateway.grpc, certificates.ca, token())["version"] == "8.8.0"
        expired = pyzeebe(gateway.grpc, certificates.ca, token(exp=time.time() - 600))
        assert expired["code"] == "UNAUTHENTICATED" and "expired" in expired["details"]
        stranger = pyzeebe(gateway.grpc, certificates.ca, token(aud="another-api"))
        assert stranger["code"] == "UNAUTHENTICATED"


def test_basic_users_over_mutual_tls(
    engine: Config, certificates: GatewayCertificates, tmp_path: Path
) -> None:
    users = tmp_path / "users.txt"
    users.write_text(f"alice:{hash_password('wonderland', 1000)}\n")
    tls = [
        "--tls-cert",
        str(certificates.cert),
        "--tls-key",
        str(certificates.key),
        "--tls-client-ca",
        str(certificates.ca),
    ]
    env = {"PARTITA_GATEWAY_USERS": str(users)}
    with running_gateway(engine, tmp_path, *tls, env=env) as gateway:
        rest = gateway.rest.replace("http://", "https://")
        alice = "Basic " + base64.b64encode(b"alice:wonderland").decode()
        with_certificate = ssl.create_default_context(cafile=str(certificates.ca))
        with_certificate.load_cert_chain(certificates.client_cert, certificates.client_key)
        status, _, body = https(f"{rest}/v2/topology", with_certificate, alice)
        assert status == 200 and body["gatewayVersion"] == "8.8.0"
        wrong = "Basic " + base64.b64encode(b"alice:guess").decode()
        status, headers, problem = https(f"{rest}/v2/topology", with_certificate, wrong)
        assert status == 401 and "wrong password" in problem["detail"]
        assert headers["WWW-Authenticate"].startswith("Basic")

        without_certificate = ssl.create_default_context(cafile=str(certificates.ca))
        with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
            https(f"{rest}/v2/topology", without_certificate, alice)
