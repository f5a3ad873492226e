"""Kafka transactions on the local broker: committed records are visible, aborted ones never."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.security import kafka_access

pytestmark = pytest.mark.kafka


def _topic(config: Config) -> str:
    name = f"{config.namespace}.txn"
    admin = admin_client(
        kafka_access(config, KafkaRole.OPERATOR)
    )  # keep a reference until the future resolves
    admin.create_topics([NewTopic(name, 1, 1)])[name].result()
    return name


def _producer(config: Config) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": config.bootstrap,
            "transactional.id": f"test-{uuid.uuid4()}",
            "retry.backoff.ms": 10,
        }
    )
    producer.init_transactions(30)
    return producer


def _read_all(config: Config, topic: str, isolation: str) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": config.bootstrap,
            "group.id": f"reader-{uuid.uuid4()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    try:
        while True:
            msg = consumer.poll(10)
            assert msg is not None, "no end-of-partition within 10 s"
            if msg.error():
                assert msg.error().code() == -191, msg.error()  # _PARTITION_EOF
                return values
            values.append(msg.value())
    finally:
        consumer.close()


def test_committed_transaction_round_trips_to_a_read_committed_consumer(config: Config) -> None:
    topic = _topic(config)
    producer = _producer(config)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, value=f"committed-{i}".encode())
    producer.commit_transaction(30)

    assert _read_all(config, topic, "read_committed") == [
        f"committed-{i}".encode() for i in range(5)
    ]


def test_records_of_an_aborted_transaction_are_invisible_to_read_committed(config: Config) -> None:
    topic = _topic(config)
    producer = _producer(config)
    producer.begin_transaction()
    producer.produce(topic, value=b"before")
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"aborted-1")
    producer.produce(topic, value=b"aborted-2")
    producer.flush(30)  # the aborted records really reach the log
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"after")
    producer.commit_transaction(30)

    assert _read_all(config, topic, "read_committed") == [b"before", b"after"]
    assert _read_all(config, topic, "read_uncommitted") == [
        b"before",
        b"aborted-1",
        b"aborted-2",
        b"after",
    ]


def test_a_new_producer_with_the_same_transactional_id_fences_the_old_one(config: Config) -> None:
    from confluent_kafka import KafkaException

    topic = _topic(config)
    txn_id = f"fence-{uuid.uuid4()}"
    conf = {"bootstrap.servers": config.bootstrap, "transactional.id": txn_id}
    zombie = Producer(conf)
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie")
    zombie.flush(30)

    successor = Producer(conf)
    successor.init_transactions(30)  # aborts the zombie's open transaction

    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(30)
    assert raised.value.args[0].fatal() or raised.value.args[0].txn_requires_abort()
    assert _read_all(config, topic, "read_committed") == []
