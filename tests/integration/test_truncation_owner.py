"""Only the current owner truncates the log: a partition task whose snapshot finished uploading
after a newer owner fenced it (a zombie: frozen, then resumed) never deletes records.

Two partition tasks of the same partition run in this process against the real broker, as two
workers on two machines would: A processes and snapshots, B takes the partition over
(`init_transactions` fences A), then A finds its finished upload."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from engine.config import Config, KafkaRole
from engine.log import clients
from engine.log.security import kafka_access
from engine.protocol.codec import RecordCodec
from engine.snapshots import SnapshotSettings
from engine.stream.errors import TaskFencedError
from engine.stream.task import PartitionTask
from tests.integration.workers import create_topics, creation, produce
from tests.support.processors import build_engine

pytestmark = pytest.mark.kafka


def _task(config: Config, home: Path, consumer: Consumer) -> PartitionTask:
    return PartitionTask(
        access=kafka_access(config, KafkaRole.ENGINE),
        namespace=config.namespace,
        topic=config.log_topic,
        partition=0,
        partition_count=1,
        home=home,
        engine=build_engine(),
        codec=RecordCodec(),
        consumer=consumer,
        snapshots=SnapshotSettings(every_records=10**9, interval_s=10**9),
    )


def _log_start(consumer: Consumer, config: Config) -> int:
    low, _ = consumer.get_watermark_offsets(
        TopicPartition(config.log_topic, 0), timeout=10, cached=False
    )
    return int(low)


def test_a_fenced_task_never_truncates_after_its_snapshot_uploads(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = Config(
        bootstrap_servers=kafka_bootstrap,
        namespace=f"z{uuid.uuid4().hex[:8]}",
        home=tmp_path,
        partitions=1,
    )
    create_topics(config)
    consumer_a = clients.group_consumer(kafka_access(config, KafkaRole.ENGINE), config.namespace)
    consumer_b = clients.group_consumer(kafka_access(config, KafkaRole.ENGINE), config.namespace)
    a = _task(config, tmp_path / "a", consumer_a)
    b = _task(config, tmp_path / "b", consumer_b)
    try:
        a.open()
        consumer_a.assign(
            [
                TopicPartition(config.log_topic, 0, a.next_offset),
                TopicPartition(config.commands_topic, 0, a.next_ingress_offset),
            ]
        )
        produce(config, [(0, creation(n)) for n in range(20)])
        deadline = time.monotonic() + 60
        while a.next_ingress_offset < 20 and time.monotonic() < deadline:
            messages = [m for m in consumer_a.consume(100, timeout=0.5) if m.error() is None]
            log = [m for m in messages if m.topic() == config.log_topic]
            ingress = [m for m in messages if m.topic() == config.commands_topic]
            a.process(log, ingress)
        assert a.next_ingress_offset == 20, "A did not process the commands"
        assert a.snapshotter is not None and a.db is not None
        a.snapshotter.take(a.db)
        assert a.snapshotter._thread is not None
        a.snapshotter._thread.join(60)  # uploaded while A is "frozen"

        b.fence()  # a new owner: A's producer is fenced from here on

        with pytest.raises(TaskFencedError):
            a.maybe_snapshot()  # finds its finished upload, tries to prove it still owns
        assert _log_start(consumer_b, config) == 0, "a fenced task deleted log records"
    finally:
        a.close()
        b.close()
        consumer_a.close()
        consumer_b.close()
