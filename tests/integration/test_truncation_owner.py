"""Only the current owner truncates the log: a partition task whose snapshot finished uploading
after a newer owner fenced it (a zombie: frozen, then resumed) never deletes records. The owner
truncates in the background, beside its batches.

Two partition tasks of the same partition run in this process against the real broker, as two
workers on two machines would: A processes and snapshots, B takes the partition over
(`init_transactions` fences A), then A finds its finished upload."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from partita import snapshots
from partita.config import Config, KafkaRole
from partita.log import clients
from partita.log.security import kafka_access
from partita.protocol.codec import RecordCodec
from partita.snapshots import SnapshotSettings
from partita.state.db import LAST_PROCESSED_POSITION
from partita.stream.errors import TaskFencedError
from partita.stream.partition.task import PartitionTask
from tests.support.processors import build_engine
from tests.support.worker_processes import create_topics, creation, produce, wait_until

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


def _config(kafka_bootstrap: str, tmp_path: Path) -> Config:
    config = Config(
        bootstrap_servers=kafka_bootstrap,
        namespace=f"z{uuid.uuid4().hex[:8]}",
        home=tmp_path,
        partitions=1,
    )
    create_topics(config)
    return config


def _process_and_upload(config: Config, task: PartitionTask, consumer: Consumer) -> None:
    """`task` processes 20 commands and reads its log back, then takes a snapshot (which the
    log can be truncated up to) and waits for its upload."""
    task.open()
    consumer.assign(
        [
            TopicPartition(config.log_topic, 0, task.next_offset),
            TopicPartition(config.commands_topic, 0, task.next_ingress_offset),
        ]
    )
    produce(config, [(0, creation(n)) for n in range(20)])
    deadline = time.monotonic() + 60
    assert task.db is not None
    while (
        task.next_ingress_offset < 20 or task.db.position(LAST_PROCESSED_POSITION) < 0
    ) and time.monotonic() < deadline:
        messages = [m for m in consumer.consume(100, timeout=0.5) if m.error() is None]
        log = [m for m in messages if m.topic() == config.log_topic]
        ingress = [m for m in messages if m.topic() == config.commands_topic]
        task.process(log, ingress)
        task.commit_read_only(wait=False)  # as the worker does: the log read back, committed
    assert task.next_ingress_offset == 20, "the task did not process the commands"
    assert task.db.position(LAST_PROCESSED_POSITION) >= 0, "the task did not read its log"
    assert task.snapshotter is not None and task.db is not None
    task.snapshotter.take(task.db)
    assert task.snapshotter._thread is not None
    task.snapshotter._thread.join(60)


def test_a_fenced_task_never_truncates_after_its_snapshot_uploads(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    consumer_a = clients.group_consumer(kafka_access(config, KafkaRole.ENGINE), config.namespace)
    consumer_b = clients.group_consumer(kafka_access(config, KafkaRole.ENGINE), config.namespace)
    a = _task(config, tmp_path / "a", consumer_a)
    b = _task(config, tmp_path / "b", consumer_b)
    try:
        _process_and_upload(config, a, consumer_a)  # uploaded while A is "frozen"

        b.fence()  # a new owner: A's producer is fenced from here on

        with pytest.raises(TaskFencedError):
            a.maybe_snapshot()  # finds its finished upload, tries to prove it still owns
        assert _log_start(consumer_b, config) == 0, "a fenced task deleted log records"
    finally:
        a.close()
        b.close()
        consumer_a.close()
        consumer_b.close()


def test_the_owner_truncates_beside_its_batches_and_a_failed_truncation_is_only_logged(
    kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    """The truncation's admin requests run in a thread of their own: `maybe_snapshot` returns
    to the batches while they are held up, and the log is truncated once they go on."""
    config = _config(kafka_bootstrap, tmp_path)
    consumer = clients.group_consumer(kafka_access(config, KafkaRole.ENGINE), config.namespace)
    task = _task(config, tmp_path / "a", consumer)
    held, real_admin = threading.Event(), clients.new_admin

    def slow_admin(*args: Any, **kwargs: Any) -> Any:
        assert held.wait(60)
        return real_admin(*args, **kwargs)

    monkeypatch.setattr(snapshots.clients, "new_admin", slow_admin)
    try:
        _process_and_upload(config, task, consumer)
        task.maybe_snapshot()  # the owner: proves it with a commit, then starts truncating
        assert task.snapshotter is not None and task.snapshotter.busy
        assert _log_start(consumer, config) == 0  # held up: nothing deleted yet
        held.set()
        wait_until(lambda: _log_start(consumer, config) > 0, 60, "the log to be truncated")
        wait_until(lambda: not task.snapshotter.busy, 60, "the truncation to end")  # type: ignore[union-attr]

        def failing_admin(*_: Any, **__: Any) -> Any:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "broker gone"))

        monkeypatch.setattr(snapshots.clients, "new_admin", failing_admin)
        task.snapshotter.pending = task.snapshotter.taken[-1]
        with caplog.at_level(logging.WARNING, logger="partita.snapshots"):
            task.maybe_snapshot()
            wait_until(lambda: not task.snapshotter.busy, 60, "the truncation to fail")  # type: ignore[union-attr]
        assert "partition 0: truncation failed" in caplog.text
        assert "broker gone" in caplog.text
    finally:
        task.close()
        consumer.close()
