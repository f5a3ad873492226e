"""`partita topics apply` against the real broker: idempotent, and refuses conflicting topics."""

from __future__ import annotations

from dataclasses import replace

import pytest
from confluent_kafka.admin import NewTopic

from partita.cli import main
from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.security import kafka_access
from partita.log.topics import TopicConflictError, TopicOutcome, apply_topics, load_specs
from tests.support.worker_processes import wait_until

pytestmark = pytest.mark.kafka


def _describe(config: Config, topic: str) -> dict[str, str]:
    from confluent_kafka.admin import ConfigResource

    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result()
    return {k: v.value for k, v in entries.items()}


def test_apply_creates_every_topic_with_its_spec_then_is_idempotent(config: Config) -> None:
    config = replace(config, partitions=4)
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    specs = load_specs(config)

    first = apply_topics(admin, specs)
    second = apply_topics(admin, specs)

    names = {
        config.log_topic,
        config.commands_topic,
        config.snapshots_topic,
        config.replies_topic,
    }
    assert first == dict.fromkeys(names, TopicOutcome.CREATED)
    assert second == dict.fromkeys(names, TopicOutcome.EXISTS)
    metadata = admin.list_topics(timeout=10)
    assert len(metadata.topics[config.log_topic].partitions) == 4
    assert len(metadata.topics[config.snapshots_topic].partitions) == 4
    assert len(metadata.topics[config.commands_topic].partitions) == 4  # ingress p for log p
    log_config = _describe(config, config.log_topic)
    assert log_config["retention.ms"] == "-1"
    assert log_config["cleanup.policy"] == "delete"
    assert int(log_config["max.message.bytes"]) >= 4 * 1024 * 1024


def test_apply_refuses_a_log_topic_with_another_partition_count(config: Config) -> None:
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    admin.create_topics([NewTopic(config.log_topic, 1, 1)])[config.log_topic].result()

    with pytest.raises(TopicConflictError) as raised:
        apply_topics(admin, load_specs(config))

    message = str(raised.value)
    assert f"{config.log_topic}: has 1 partitions, the spec needs 3" in message
    # the other topics were still created (a created topic reaches the metadata a moment
    # later), and the conflicting one was left untouched
    wait_until(
        lambda: config.replies_topic in admin.list_topics(timeout=10).topics,
        30,
        "the replies topic in the cluster's metadata",
    )
    metadata = admin.list_topics(timeout=10)
    assert len(metadata.topics[config.log_topic].partitions) == 1


def test_apply_refuses_a_topic_with_a_conflicting_config(config: Config) -> None:
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    topic = NewTopic(config.log_topic, 3, 1, config={"retention.ms": "60000"})
    admin.create_topics([topic])[config.log_topic].result()

    with pytest.raises(TopicConflictError, match=r"retention\.ms='60000', the spec needs '-1'"):
        apply_topics(admin, load_specs(config))


def test_cli_topics_apply_reports_and_exits_nonzero_on_conflict(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--bootstrap-servers", config.bootstrap, "--namespace", config.namespace]
    assert main(["topics", "apply", *flags]) == 0
    assert f"created  {config.log_topic} (3 partitions)" in capsys.readouterr().out

    assert main(["topics", "apply", *flags, "--partitions", "5"]) == 1
    err = capsys.readouterr().err
    assert "has 3 partitions, the spec needs 5" in err
    assert "PARTITA_NAMESPACE" in err


def test_partita_up_against_an_existing_cluster_applies_topics_and_says_what_runs(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--bootstrap-servers", config.bootstrap, "--namespace", config.namespace]
    assert main(["up", *flags]) == 0
    out = capsys.readouterr().out
    assert f"created  {config.log_topic} (3 partitions)" in out
    assert "Partita is ready." in out and config.bootstrap in out
    assert main(["up", *flags]) == 0  # again: everything exists, nothing changes
    assert f"exists   {config.log_topic}" in capsys.readouterr().out
