from __future__ import annotations

from pathlib import Path

import pytest

from partita.config import Config
from partita.errors import ConfigError


def test_defaults_use_a_local_broker_on_9092() -> None:
    config = Config.from_env({})
    assert config.uses_local_broker
    assert config.bootstrap == "127.0.0.1:9092"
    assert (config.namespace, config.partitions) == ("partita", 3)
    assert config.log_topic == "partita.log"


def test_environment_sets_every_field() -> None:
    config = Config.from_env(
        {
            "KAFKA_BOOTSTRAP_SERVERS": "kafka:9092",
            "PARTITA_NAMESPACE": "orders",
            "PARTITA_PARTITIONS": "12",
            "PARTITA_REPLICATION_FACTOR": "3",
            "PARTITA_HOME": "/tmp/p",
            "PARTITA_KAFKA_PORT": "19092",
            "PARTITA_CONTROLLER_PORT": "19093",
        }
    )
    assert not config.uses_local_broker
    assert config.bootstrap == "kafka:9092"
    assert (config.namespace, config.partitions, config.replication_factor) == ("orders", 12, 3)
    assert config.home == Path("/tmp/p")
    assert config.replies_topic == "orders.replies"


def test_partita_bootstrap_wins_over_kafka_bootstrap() -> None:
    env = {"KAFKA_BOOTSTRAP_SERVERS": "a:1", "PARTITA_BOOTSTRAP_SERVERS": "b:2"}
    assert Config.from_env(env).bootstrap == "b:2"


def test_flags_override_environment_and_none_keeps_the_value() -> None:
    config = Config.from_env({"PARTITA_NAMESPACE": "env"})
    assert config.with_overrides(namespace="flag", partitions=None).namespace == "flag"
    assert config.with_overrides(namespace=None).namespace == "env"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PARTITA_PARTITIONS": "three"}, "PARTITA_PARTITIONS='three' is not an integer"),
        ({"PARTITA_PARTITIONS": "0"}, "partitions must be at least 1"),
        ({"PARTITA_NAMESPACE": "a b"}, "not a valid topic prefix"),
        ({"PARTITA_KAFKA_PORT": "70000"}, "kafka_port must be a TCP port"),
        ({"PARTITA_REPLICATION_FACTOR": "0"}, "replication factor must be -1"),
        ({"PARTITA_KAFKA_PORT": "9093"}, "both 9093"),
    ],
)
def test_invalid_settings_name_the_setting(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Config.from_env(env)


def test_snapshot_and_truncation_settings_come_from_the_environment() -> None:
    config = Config.from_env(
        {
            "PARTITA_SNAPSHOT_RECORDS": "500",
            "PARTITA_SNAPSHOT_INTERVAL": "PT30S",
            "PARTITA_DOWNSTREAM_GROUPS": "analytics, export ,",
            "PARTITA_TRUNCATE": "false",
            "PARTITA_MESSAGE_TTL": "60000",
        }
    )
    assert config.snapshot_every_records == 500 and config.snapshot_interval_ms == 30_000
    assert config.downstream_groups == ("analytics", "export")
    assert config.truncate is False and config.message_ttl_ms == 60_000
    with pytest.raises(ConfigError, match="PARTITA_SNAPSHOT_INTERVAL"):
        Config.from_env({"PARTITA_SNAPSHOT_INTERVAL": "often"})
