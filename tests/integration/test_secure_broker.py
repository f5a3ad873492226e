"""The secured local broker: every login works from its ready properties file, ACLs are enforced,
and a wrong credential or certificate fails within seconds with what to check."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from partita.cli import main
from partita.config import Config, KafkaRole
from partita.localkafka import SecureKafka
from partita.localkafka.credentials import ADMIN, Login
from partita.log.admin import (
    KafkaAccessError,
    KafkaUnavailableError,
    admin_client,
    wait_for_metadata,
)
from partita.log.security import KafkaAccess, kafka_access
from tests.support.paths import ROOT

pytestmark = pytest.mark.kafka

FAST_S = 10.0
"""A refused credential must be reported well before any retry loop would give up."""


def access_of(path: Path, role: KafkaRole = KafkaRole.OPERATOR) -> KafkaAccess:
    return kafka_access(Config.from_env({"PARTITA_KAFKA_CONFIG": str(path)}), role)


def variant(source: Path, target: Path, old: str, new: str) -> Path:
    """A copy of a properties file with one thing changed."""
    text = source.read_text()
    assert re.search(old, text), f"{old!r} not in {source}"
    target.write_text(re.sub(old, new, text))
    return target


def create_topic(access: KafkaAccess, topic: str) -> None:
    admin = admin_client(access)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)


def refused_within(access: KafkaAccess) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(KafkaAccessError) as refused:
        wait_for_metadata(access, timeout=15.0)
    return str(refused.value), time.monotonic() - started


# -- logins and ACLs --------------------------------------------------------------------------


@pytest.mark.parametrize("login", [Login.SCRAM_SHA_512, Login.MTLS])
def test_admin_creates_a_topic(secure_kafka: SecureKafka, namespace: str, login: Login) -> None:
    access = access_of(secure_kafka.properties(ADMIN, login))
    topic = f"{namespace}.by-admin"
    create_topic(access, topic)
    assert topic in admin_client(access).list_topics(timeout=10).topics


@pytest.mark.parametrize("login", [Login.SCRAM_SHA_512, Login.MTLS])
def test_a_role_user_without_acls_cannot_create_a_topic(
    secure_kafka: SecureKafka, namespace: str, login: Login
) -> None:
    access = access_of(secure_kafka.role(KafkaRole.ENGINE, login), KafkaRole.ENGINE)
    with pytest.raises(KafkaException) as refused:
        create_topic(access, f"{namespace}.by-engine")
    assert refused.value.args[0].code() in (
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    )


@pytest.mark.parametrize("login", list(Login))
@pytest.mark.parametrize("role", list(KafkaRole))
def test_every_role_logs_in_with_every_mechanism(
    secure_kafka: SecureKafka, role: KafkaRole, login: Login
) -> None:
    path = secure_kafka.role(role, login)
    assert path.stat().st_mode & 0o777 == 0o600
    access = access_of(path, role)
    settings = access.librdkafka
    if login is Login.MTLS:
        assert access.bootstrap == secure_kafka.mtls_bootstrap
        assert settings["security.protocol"] == "SSL"
        assert Path(settings["ssl.keystore.location"]).is_file()
        assert settings["ssl.keystore.password"]
    else:
        assert access.bootstrap == secure_kafka.bootstrap
        assert (access.protocol, access.mechanism, access.username) == (
            "SASL_SSL",
            login.mechanism,
            role.value,
        )
        assert settings["sasl.password"]
    assert settings["ssl.ca.location"] == str(secure_kafka.ca_pem)
    wait_for_metadata(access, timeout=20.0)


# -- refused logins: fast and saying what to check --------------------------------------------


def test_a_wrong_password_is_refused_within_seconds(
    secure_kafka: SecureKafka, tmp_path: Path
) -> None:
    path = variant(
        secure_kafka.role(KafkaRole.CLIENT),
        tmp_path / "wrong-password.properties",
        r'password="[^"]*"',
        'password="not-the-password"',
    )
    message, elapsed = refused_within(access_of(path, KafkaRole.CLIENT))
    assert elapsed < FAST_S
    assert "password" in message
    assert str(path) in message


def test_an_unknown_user_is_refused_within_seconds(
    secure_kafka: SecureKafka, tmp_path: Path
) -> None:
    path = variant(
        secure_kafka.role(KafkaRole.CLIENT, Login.PLAIN),
        tmp_path / "unknown-user.properties",
        r'username="[^"]*"',
        'username="nobody"',
    )
    message, elapsed = refused_within(access_of(path, KafkaRole.CLIENT))
    assert elapsed < FAST_S
    assert "user name and password" in message
    assert str(path) in message


@pytest.mark.parametrize("login", [Login.SCRAM_SHA_512, Login.MTLS])
def test_a_truststore_of_another_ca_is_refused_within_seconds(
    secure_kafka: SecureKafka, tmp_path: Path, login: Login
) -> None:
    path = variant(
        secure_kafka.role(KafkaRole.ENGINE, login),
        tmp_path / "untrusted.properties",
        r"ssl\.truststore\.location=.*",
        f"ssl.truststore.location={secure_kafka.untrusted_ca_pem}",
    )
    message, elapsed = refused_within(access_of(path, KafkaRole.ENGINE))
    assert elapsed < FAST_S
    assert "ssl.truststore.location" in message
    assert str(path) in message


def test_a_plaintext_client_on_the_sasl_ssl_port_fails_without_hanging(
    secure_kafka: SecureKafka, tmp_path: Path
) -> None:
    path = tmp_path / "plaintext.properties"
    path.write_text(f"bootstrap.servers={secure_kafka.bootstrap}\n")
    started = time.monotonic()
    with pytest.raises(KafkaUnavailableError) as failed:
        wait_for_metadata(access_of(path), timeout=5.0)
    assert time.monotonic() - started < 5.0 + 3.0
    message = str(failed.value)
    assert secure_kafka.bootstrap in message
    assert "PLAINTEXT" in message


def test_the_controller_port_answers_no_client_without_the_brokers_certificate(
    secure_kafka: SecureKafka, tmp_path: Path
) -> None:
    """A role user's valid certificate on the controller listener is not a super user."""
    path = variant(
        secure_kafka.role(KafkaRole.OPERATOR, Login.MTLS),
        tmp_path / "controller.properties",
        r"bootstrap\.servers=.*",
        f"bootstrap.servers={secure_kafka.controller_bootstrap}",
    )
    with pytest.raises(KafkaUnavailableError):
        wait_for_metadata(access_of(path), timeout=3.0)


# -- the CLI ----------------------------------------------------------------------------------


def test_deploy_with_a_refused_password_exits_within_seconds_saying_what_to_check(
    secure_kafka: SecureKafka, tmp_path: Path
) -> None:
    path = variant(
        secure_kafka.role(KafkaRole.CLIENT),
        tmp_path / "wrong-password.properties",
        r'password="[^"]*"',
        'password="not-the-password"',
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PARTITA_", "KAFKA_"))}
    env["PARTITA_HOME"] = str(tmp_path / "home")
    bpmn = ROOT / "tests" / "fixtures" / "bpmn" / "one-task.bpmn"
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "partita.cli", "deploy", str(bpmn), "--kafka-config", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert result.returncode != 0
    assert elapsed < FAST_S
    assert "password" in result.stderr
    assert str(path) in result.stderr
    assert len((result.stdout + result.stderr).strip().splitlines()) <= 5  # no retry storm


def test_the_cli_reports_the_running_secured_broker_and_its_files(
    secure_kafka: SecureKafka, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = [
        "--secure",
        "--home",
        str(secure_kafka.home),
        "--port",
        secure_kafka.bootstrap.rsplit(":", 1)[1],
        "--mtls-port",
        secure_kafka.mtls_bootstrap.rsplit(":", 1)[1],
        "--controller-port",
        secure_kafka.controller_bootstrap.rsplit(":", 1)[1],
    ]
    assert main(["kafka", "status", *flags]) == 0
    assert f"SASL_SSL at {secure_kafka.bootstrap}" in capsys.readouterr().out

    assert main(["kafka", "up", *flags]) == 0
    out = capsys.readouterr().out
    assert "already running" in out
    assert f"PARTITA_KAFKA_CONFIG={secure_kafka.admin}" in out
    for role in KafkaRole:
        assert str(secure_kafka.role(role)) in out
    assert str(secure_kafka.ca_pem) in out
