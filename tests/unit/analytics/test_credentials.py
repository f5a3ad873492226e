"""The analytics' Kafka properties translated to faust credentials: the settings aiokafka gets,
and what the SSL context does in a real TLS handshake on the loopback (trust, host name,
client certificate), with certificates made by the `openssl` command for the test session."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from faust.auth import SASLCredentials, SSLCredentials
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

from partita.analytics.credentials import broker_credentials, faust_broker_settings, ssl_context
from partita.config import Config, KafkaRole
from partita.errors import ConfigError
from partita.log.security import KafkaAccess, kafka_access

BOOTSTRAP = "kafka-1:9094,kafka-2:9094"


@dataclass(frozen=True)
class Pki:
    ca: Path
    other_ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    client_key_encrypted: Path


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def _ca(folder: Path, name: str) -> tuple[Path, Path]:
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    return cert, key


def _leaf(folder: Path, name: str, ca: tuple[Path, Path], extensions: str) -> tuple[Path, Path]:
    cert, key, csr = folder / f"{name}.pem", folder / f"{name}.key", folder / f"{name}.csr"
    ext = folder / f"{name}.ext"
    ext.write_text(extensions + "\n")
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", csr, "-subj", f"/CN={name}",
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-set_serial", "7",
        "-days", "2", "-out", cert, "-extfile", ext,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    if shutil.which("openssl") is None:
        pytest.fail("the openssl command makes the test certificates: install openssl")
    folder = tmp_path_factory.mktemp("pki")
    ca = _ca(folder, "partita-test-ca")
    other_ca, _ = _ca(folder, "someone-elses-ca")
    server = _leaf(folder, "localhost", ca, "subjectAltName=DNS:localhost,IP:127.0.0.1")
    client = _leaf(folder, "analytics", ca, "extendedKeyUsage=clientAuth")
    encrypted = folder / "analytics-encrypted.key"
    _openssl("pkey", "-in", client[1], "-aes256", "-passout", "pass:key-secret", "-out", encrypted)
    return Pki(ca[0], other_ca, *server, *client, encrypted)


def _access(tmp_path: Path, properties: str) -> KafkaAccess:
    """The analytics' access from a Kafka client properties file, as a user writes it."""
    path = tmp_path / "client.properties"
    path.write_text(properties)
    config = Config(bootstrap_servers=BOOTSTRAP, kafka_config=path)
    return kafka_access(config, KafkaRole.ANALYTICS)


def _scram(mechanism: str, extra: str = "") -> str:
    return (
        f"security.protocol=SASL_SSL\nsasl.mechanism={mechanism}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required"
        ' username="analytics" password="s3cret";\n' + extra
    )


# -- the settings faust and aiokafka get --------------------------------------------------------


def test_plaintext_has_no_credentials_and_every_bootstrap_server(tmp_path: Path) -> None:
    settings = faust_broker_settings(_access(tmp_path, "client.id=ignored-by-faust\n"))
    assert settings == {
        "broker": ["kafka://kafka-1:9094", "kafka://kafka-2:9094"],
        "broker_credentials": None,
    }
    assert credentials_to_aiokafka_auth(settings["broker_credentials"]) == {
        "security_protocol": "PLAINTEXT"
    }


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_sasl_ssl_gives_aiokafka_the_mechanism_user_and_a_verifying_context(
    tmp_path: Path, pki: Pki, mechanism: str
) -> None:
    access = _access(
        tmp_path, _scram(mechanism, f"ssl.truststore.type=PEM\nssl.truststore.location={pki.ca}\n")
    )
    credentials = broker_credentials(access)
    assert isinstance(credentials, SASLCredentials)
    auth = credentials_to_aiokafka_auth(credentials)
    context = auth.pop("ssl_context")
    assert auth == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "analytics",
        "sasl_plain_password": "s3cret",
    }
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2
    issuers = [dict(field[0] for field in ca["subject"]) for ca in context.get_ca_certs()]
    assert issuers == [{"commonName": "partita-test-ca"}]  # only the file's CA, as librdkafka


def test_sasl_plaintext_has_no_ssl_context(tmp_path: Path) -> None:
    properties = _scram("SCRAM-SHA-256").replace("SASL_SSL", "SASL_PLAINTEXT")
    auth = credentials_to_aiokafka_auth(broker_credentials(_access(tmp_path, properties)))
    assert auth["security_protocol"] == "SASL_PLAINTEXT"
    assert auth["sasl_mechanism"] == "SCRAM-SHA-256" and auth["ssl_context"] is None


def test_ssl_without_a_ca_file_trusts_the_system_store_and_java_empty_algorithm_skips_host(
    tmp_path: Path,
) -> None:
    access = _access(tmp_path, "security.protocol=SSL\nssl.endpoint.identification.algorithm=\n")
    credentials = broker_credentials(access)
    assert isinstance(credentials, SSLCredentials)
    auth = credentials_to_aiokafka_auth(credentials)
    assert auth["security_protocol"] == "SSL"
    context = auth["ssl_context"]
    assert context.verify_mode == ssl.CERT_REQUIRED and not context.check_hostname


@pytest.mark.parametrize("mechanism", ["OAUTHBEARER", "GSSAPI"])
def test_mechanisms_faust_cannot_use_are_refused_naming_the_supported_ones(
    tmp_path: Path, mechanism: str
) -> None:
    properties = f"security.protocol=SASL_SSL\nsasl.mechanism={mechanism}\n"
    if mechanism == "OAUTHBEARER":
        properties += "sasl.oauthbearer.client.id=partita\nsasl.oauthbearer.method=oidc\n"
    with pytest.raises(ConfigError) as refused:
        faust_broker_settings(_access(tmp_path, properties))
    message = str(refused.value)
    assert f"sasl.mechanism={mechanism}" in message
    assert "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512" in message
    assert "PARTITA_KAFKA_CONFIG_ANALYTICS" in message and str(tmp_path) in message


def test_a_pkcs12_keystore_is_refused_with_the_conversion_to_pem(tmp_path: Path) -> None:
    access = _access(
        tmp_path,
        "security.protocol=SSL\nssl.keystore.type=PKCS12\nssl.keystore.location=client.p12\n"
        "ssl.keystore.password=changeit\n",
    )
    with pytest.raises(ConfigError, match=r"openssl pkcs12 -in client\.p12 -out client\.pem"):
        broker_credentials(access)


def test_settings_the_analytics_cannot_apply_are_refused_by_name(tmp_path: Path) -> None:
    access = _access(tmp_path, "security.protocol=SSL\nssl.curves.list=P-384\n")
    with pytest.raises(ConfigError, match=r"ssl\.curves\.list .*cannot apply"):
        broker_credentials(access)


def test_unreadable_trust_and_half_a_client_certificate_name_the_setting(
    tmp_path: Path, pki: Pki
) -> None:
    missing = _access(tmp_path, "security.protocol=SSL\nssl.ca.location=/nonexistent/ca.pem\n")
    with pytest.raises(ConfigError, match=r"ssl\.ca\.location .*cannot load the CA"):
        ssl_context(missing)
    not_pem = tmp_path / "not.pem"
    not_pem.write_text("hello\n")
    with pytest.raises(ConfigError, match=r"must be PEM"):
        ssl_context(_access(tmp_path, f"security.protocol=SSL\nssl.ca.location={not_pem}\n"))
    half = _access(tmp_path, f"security.protocol=SSL\nssl.certificate.location={pki.client_cert}\n")
    with pytest.raises(ConfigError, match=r"needs both a certificate and its key"):
        ssl_context(half)
    wrong_password = _access(
        tmp_path,
        f"security.protocol=SSL\nssl.certificate.location={pki.client_cert}\n"
        f"ssl.key.location={pki.client_key_encrypted}\nssl.key.password=not-it\n",
    )
    with pytest.raises(ConfigError, match=r"client certificate .*cannot be loaded"):
        ssl_context(wrong_password)


# -- what the context does in a handshake -------------------------------------------------------


def _handshake(pki: Pki, client: ssl.SSLContext, server_hostname: str) -> dict[str, str] | None:
    """Connect to a loopback TLS server with `pki`'s localhost certificate that asks for a
    client certificate signed by the test CA. The client's subject as the server saw it (None
    without one); ssl.SSLError when the handshake fails."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki.server_cert, pki.server_key)
    server.load_verify_locations(cafile=pki.ca)
    server.verify_mode = ssl.CERT_OPTIONAL
    seen: list[dict[str, str] | None] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            connection, _ = listener.accept()
            try:
                with server.wrap_socket(connection, server_side=True) as tls:
                    peer = tls.getpeercert()
                    seen.append(dict(f[0] for f in peer["subject"]) if peer else None)
                    tls.recv(1)
            except (ssl.SSLError, OSError):
                pass

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            with (
                socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
                client.wrap_socket(raw, server_hostname=server_hostname) as tls,
            ):
                tls.sendall(b"x")
        finally:
            thread.join(5)
    return seen[0] if seen else None


def test_mtls_presents_the_client_certificate_from_pem_files(tmp_path: Path, pki: Pki) -> None:
    access = _access(
        tmp_path,
        f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={pki.ca}\n"
        f"ssl.certificate.location={pki.client_cert}\n"
        f"ssl.key.location={pki.client_key_encrypted}\nssl.key.password=key-secret\n",
    )
    assert _handshake(pki, ssl_context(access), "localhost") == {"commonName": "analytics"}


def test_mtls_presents_the_client_certificate_from_inline_pem(tmp_path: Path, pki: Pki) -> None:
    def inline(path: Path) -> str:
        return path.read_text().strip().replace("\n", "\\n\\\n")

    access = _access(
        tmp_path,
        f"security.protocol=SSL\nssl.truststore.certificates={inline(pki.ca)}\n"
        f"ssl.keystore.type=PEM\nssl.keystore.certificate.chain={inline(pki.client_cert)}\n"
        f"ssl.keystore.key={inline(pki.client_key)}\n",
    )
    assert access.librdkafka["ssl.key.pem"].startswith("-----BEGIN PRIVATE KEY-----\n")
    assert _handshake(pki, ssl_context(access), "localhost") == {"commonName": "analytics"}


def test_the_host_name_is_checked_unless_the_algorithm_is_none(tmp_path: Path, pki: Pki) -> None:
    trust = f"security.protocol=SSL\nssl.ca.location={pki.ca}\n"
    checking = ssl_context(_access(tmp_path, trust))
    assert _handshake(pki, checking, "localhost") is None  # no client certificate configured
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        _handshake(pki, checking, "kafka.example.com")
    lenient = ssl_context(_access(tmp_path, trust + "ssl.endpoint.identification.algorithm=none\n"))
    assert _handshake(pki, lenient, "kafka.example.com") is None


def test_a_broker_signed_by_another_ca_is_not_trusted(tmp_path: Path, pki: Pki) -> None:
    context = ssl_context(
        _access(tmp_path, f"security.protocol=SSL\nssl.ca.location={pki.other_ca}\n")
    )
    with pytest.raises(ssl.SSLCertVerificationError, match="certificate verify failed"):
        _handshake(pki, context, "localhost")
