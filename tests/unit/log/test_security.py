"""Kafka client properties files: parsing, translation to librdkafka, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaError

from partita.config import Config, KafkaRole
from partita.errors import ConfigError
from partita.log.clients import ErrorReporter, client_settings, explain, new_admin
from partita.log.properties import parse_properties
from partita.log.security import KafkaAccess, kafka_access, librdkafka_settings

SCRAM = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required"
    ' username="engine" password="p=w;d";'
)


def test_properties_format_follows_java() -> None:
    text = (
        "# comment\n! also a comment\n"
        "a=1\nb : two words\nc three\n"
        "long=first \\\n    second\n"
        "escaped\\=key=x\\ty\n"
        "unicode=caf\\u00e9\n"
        "empty=\n"
    )
    assert parse_properties(text, "t") == {
        "a": "1",
        "b": "two words",
        "c": "three",
        "long": "first second",
        "escaped=key": "x\ty",
        "unicode": "café",
        "empty": "",
    }


def test_a_java_client_file_becomes_librdkafka_settings(tmp_path: Path) -> None:
    path = tmp_path / "engine.properties"
    path.write_text(
        "bootstrap.servers=broker:9094\n"
        "security.protocol=sasl_ssl\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        f"sasl.jaas.config={SCRAM}\n"
        "ssl.truststore.type=PEM\n"
        "ssl.truststore.location=/etc/kafka/ca.pem\n"
        "ssl.endpoint.identification.algorithm=\n"
        "key.serializer=org.apache.kafka.common.serialization.StringSerializer\n"
        "linger.ms=7\n"
    )
    config = Config.from_env({"PARTITA_KAFKA_CONFIG": str(path)})
    assert config.bootstrap == "broker:9094" and not config.uses_local_broker
    access = kafka_access(config, KafkaRole.ENGINE)
    assert access.librdkafka == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "engine",
        "sasl.password": "p=w;d",
        "ssl.ca.location": "/etc/kafka/ca.pem",
        "ssl.endpoint.identification.algorithm": "none",
        "linger.ms": "7",
    }
    assert "p=w;d" not in repr(access)
    assert access.describe() == "SASL_SSL SCRAM-SHA-512 as 'engine' at broker:9094"


def test_the_environment_address_wins_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("bootstrap.servers=file:9094\n")
    env = {"PARTITA_KAFKA_CONFIG": str(path), "KAFKA_BOOTSTRAP_SERVERS": "env:9092"}
    assert Config.from_env(env).bootstrap == "env:9092"


def test_a_role_file_changes_the_principal_of_that_role_only(tmp_path: Path) -> None:
    base = tmp_path / "base.properties"
    base.write_text(
        "bootstrap.servers=b:1\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required"
        ' username="app" password="x";\n'
    )
    worker = tmp_path / "worker.properties"
    worker.write_text("bootstrap.servers=b:1\nsasl.username=worker\nsasl.password=y\n")
    config = Config.from_env(
        {"PARTITA_KAFKA_CONFIG": str(base), "PARTITA_KAFKA_CONFIG_JOB_WORKER": str(worker)}
    )
    assert kafka_access(config, KafkaRole.JOB_WORKER).username == "worker"
    assert kafka_access(config, KafkaRole.CLIENT).username == "app"
    assert kafka_access(config, KafkaRole.JOB_WORKER).sources == (base, worker)
    elsewhere = tmp_path / "elsewhere.properties"
    elsewhere.write_text("bootstrap.servers=other:1\n")
    moved = Config.from_env(
        {"PARTITA_KAFKA_CONFIG": str(base), "PARTITA_KAFKA_CONFIG_ENGINE": str(elsewhere)}
    )
    with pytest.raises(ConfigError, match="may only change credentials"):
        kafka_access(moved, KafkaRole.ENGINE)


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"group.id": "mine"}, "group.id is chosen by Partita"),
        ({"transactional.id": "t"}, "transactional.id is chosen by Partita"),
        ({"security.protocol": "TLS"}, "security.protocol='TLS'"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-1"}, "SCRAM-SHA-1"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, "needs a user"),
        ({"sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": "p"}, "not use SASL"),
        ({"ssl.truststore.location": "trust.jks"}, "JKS truststore"),
        ({"ssl.keystore.location": "client.jks"}, "JKS keystore"),
        (
            {"sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;"},
            "Krb5LoginModule",
        ),
        ({"sasl.jaas.config": "not jaas"}, "is not of the form"),
    ],
)
def test_settings_that_cannot_work_are_refused_naming_the_key(
    properties: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        librdkafka_settings(properties, "PARTITA_KAFKA_CONFIG (x.properties)")
    assert "x.properties" in str(raised.value)


def test_keystores_and_oauthbearer_translate() -> None:
    mtls = librdkafka_settings(
        {
            "security.protocol": "SSL",
            "ssl.keystore.location": "/k/client.p12",
            "ssl.keystore.password": "secret",
            "ssl.truststore.location": "/k/ca.crt",
        },
        "t",
    )
    assert mtls == {
        "security.protocol": "SSL",
        "ssl.keystore.location": "/k/client.p12",
        "ssl.keystore.password": "secret",
        "ssl.ca.location": "/k/ca.crt",
    }
    oidc = librdkafka_settings(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
            "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer"
            '.OAuthBearerLoginModule required clientId="partita" clientSecret="s3" scope="kafka";',
        },
        "t",
    )
    assert oidc["sasl.oauthbearer.method"] == "oidc"
    assert oidc["sasl.oauthbearer.client.id"] == "partita"
    assert oidc["sasl.oauthbearer.client.secret"] == "s3"
    assert oidc["sasl.oauthbearer.token.endpoint.url"] == "https://idp/token"


def test_every_client_gets_the_access_over_its_own_settings() -> None:
    access = KafkaAccess("h:1", KafkaRole.CLIENT, (("linger.ms", "9"),))
    settings = client_settings(access, {"linger.ms": 1, "bootstrap.servers": "ignored:2"})
    assert settings["linger.ms"] == "9" and settings["bootstrap.servers"] == "h:1"
    assert isinstance(settings["error_cb"], ErrorReporter)


def test_a_property_librdkafka_does_not_know_names_the_file(tmp_path: Path) -> None:
    access = KafkaAccess("h:1", KafkaRole.OPERATOR, (("no.such.setting", "1"),), (tmp_path,))
    with pytest.raises(ConfigError, match=str(tmp_path)):
        new_admin(access)


def test_errors_are_explained_with_the_setting_to_check_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    access = KafkaAccess(
        "h:9094",
        KafkaRole.ENGINE,
        (
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.username", "engine"),
            ("security.protocol", "SASL_SSL"),
        ),
        (Path("/etc/partita/engine.properties"),),
    )
    failed = KafkaError(
        KafkaError._AUTHENTICATION, "SASL authentication error: invalid credentials"
    )
    text = explain(failed, access)
    assert "password" in text and "/etc/partita/engine.properties" in text and "'engine'" in text
    untrusted = KafkaError(
        KafkaError._SSL, "SSL handshake failed: certificate verify failed: unable to get issuer"
    )
    assert "ssl.truststore.location" in explain(untrusted, access)
    denied = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed")
    assert "partita acls --role engine --principal User:engine" in explain(denied, access)
    reporter = ErrorReporter(access)
    with caplog.at_level("ERROR", logger="partita.kafka"):
        for _ in range(50):
            reporter(failed)
    assert len(caplog.records) == 1 and reporter.fatal and reporter.problem == text
