"""The engine calls confluent-kafka's `Producer.produce` with positional arguments on its
per-record paths (`partita.log.clients`: keywords cost about a microsecond more per call).
Against the test broker: each position lands where the engine means it to, so a release of
confluent-kafka that changed the order fails here, not in production."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic

from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.clients import ANY_PARTITION, NOW, new_consumer, new_producer
from partita.log.security import kafka_access

pytestmark = [pytest.mark.kafka, pytest.mark.codec]  # also run with the pure-Python codec


def test_positional_produce_sets_key_partition_callback_and_headers(config: Config) -> None:
    topic = f"{config.namespace}.order"
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    producer = new_producer(kafka_access(config, KafkaRole.ENGINE), {})
    delivered: list[tuple[Any, int | None, bytes | None]] = []
    headers = [("recordType", b"EVENT"), ("intent", b"CREATED")]
    producer.produce(
        topic,
        b"first",
        b"key-1",
        2,
        lambda error, message: delivered.append((error, message.partition(), message.key())),
        None,
        NOW,
        headers,
    )
    producer.produce(topic, b"second", None, 1, None, None, NOW, None)
    producer.produce(topic, b"third", b"key-3", ANY_PARTITION, None, None, NOW, None)
    assert producer.flush(30) == 0
    assert delivered == [(None, 2, b"key-1")]

    consumer = new_consumer(
        kafka_access(config, KafkaRole.OPERATOR), {"group.id": f"{config.namespace}.order"}
    )
    try:
        consumer.assign([TopicPartition(topic, partition, 0) for partition in range(3)])
        seen = {}
        while len(seen) < 3:
            message = consumer.poll(30)
            assert message is not None and message.error() is None
            seen[message.value()] = (message.partition(), message.key(), message.headers())
    finally:
        consumer.close()
    assert seen[b"first"] == (2, b"key-1", headers)
    assert seen[b"second"] == (1, None, None)
    partition, key, _ = seen[b"third"]
    assert key == b"key-3" and partition in range(3)  # the partitioner chose
