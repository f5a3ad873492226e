"""On the real broker: once a partition's copies landed where predicted, the engine processes
client commands at predicted log positions, and a record another producer writes to the
partition in between is caught before the commit. That batch is aborted and processed again,
so every command is on the log once and its events name its copy's real position."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

import pytest

from partita.bench import loop
from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.clients import new_producer
from partita.log.security import kafka_access
from partita.log.topics import apply_topics, load_specs
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import RecordType
from partita.protocol.headers import INGRESS_OFFSET, header, record_headers
from partita.protocol.intents import ProcessInstanceIntent
from partita.protocol.records import Record, event
from partita.protocol.values import ProcessInstanceValue
from partita.stream.metrics import ProcessingMetrics
from partita.stream.worker import Worker
from tests.support.worker_processes import committed_messages

pytestmark = [pytest.mark.kafka, pytest.mark.codec]  # also run with the pure-Python codec
CODEC = RecordCodec()


def _until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:g} s: {what}"
        time.sleep(0.01)


class _Engine:
    """A worker of the bench engine on one partition, fed one client command at a time."""

    def __init__(self, config: Config) -> None:
        self.config = replace(config, partitions=1)
        apply_topics(
            admin_client(kafka_access(self.config, KafkaRole.OPERATOR)), load_specs(self.config)
        )
        self.worker = Worker(self.config, loop.bench_engine())
        self.thread = threading.Thread(target=self.worker.run, daemon=True)
        self.thread.start()
        self.client = new_producer(
            kafka_access(self.config, KafkaRole.CLIENT), {"enable.idempotence": True}
        )
        self.sent = 0
        _until(lambda: self.metrics() is not None, "partition 0 open")

    def metrics(self) -> ProcessingMetrics | None:
        task = self.worker.tasks.get(0)
        return None if task is None or task.processing is None else task.processing.metrics

    def processed(self) -> int:
        task = self.worker.tasks.get(0)
        return 0 if task is None or task.processing is None else task.processing.next_ingress_offset

    def send_one(self) -> ProcessingMetrics:
        """Send the next command and wait until its batch committed; the task's counters."""
        record = loop.bench_command(self.sent)
        self.client.produce(
            self.config.commands_topic,
            CODEC.encode(record),
            partition=0,
            headers=record_headers(record),
        )
        self.client.flush(30)
        self.sent += 1
        _until(lambda: self.processed() == self.sent, f"command {self.sent - 1} committed")
        return self.counted()

    def counted(self) -> ProcessingMetrics:
        found = self.metrics()
        assert found is not None
        return found

    def write_to_log(self, record: Record) -> None:
        """Write `record` to the log partition as another producer (another engine) would."""
        other = new_producer(
            kafka_access(self.config, KafkaRole.ENGINE), {"enable.idempotence": True}
        )
        other.produce(
            self.config.log_topic, CODEC.encode(record), partition=0, headers=record_headers(record)
        )
        assert other.flush(30) == 0

    def stop(self) -> None:
        self.worker.stopping.set()
        self.thread.join(60)


def test_a_record_written_between_batches_aborts_the_predicted_batch_and_it_runs_again(
    config: Config, gc_restored: None
) -> None:
    engine = _Engine(config)
    config = engine.config
    try:
        for _ in range(3):  # the first one learns where the log ends, the second lands there
            counted = engine.send_one()
        assert (counted.predicted, counted.mispredicted) == (1, 0)

        engine.write_to_log(
            event(
                ProcessInstanceIntent.ELEMENT_ACTIVATED,
                ProcessInstanceValue(bpmn_process_id="x"),
                9,
            )
        )
        counted = engine.send_one()
        assert (counted.predicted, counted.mispredicted, counted.aborted) == (1, 1, 1)
        for _ in range(3):  # twice as many batches must land as expected before predicting
            counted = engine.send_one()
        assert (counted.predicted, counted.mispredicted) == (2, 1)
    finally:
        engine.stop()

    log = [(record, message) for record, message in committed_messages(config, config.log_topic, 0)]
    copies = {
        message.offset(): int(header(message.headers(), INGRESS_OFFSET) or b"-1")
        for record, message in log
        if record.record_type is RecordType.COMMAND
    }
    assert sorted(copies.values()) == list(range(engine.sent))  # each command once, none lost
    events = [record for record, _ in log if record.record_type is RecordType.EVENT]
    by_source = {}
    for record in events:
        by_source.setdefault(record.source_record_position, []).append(record)
    by_source.pop(-1, None)  # the foreign record names no command
    assert set(by_source) == set(copies)  # every event names a copy's real position
    assert {len(each) for each in by_source.values()} == {loop.EVENTS_PER_COMMAND}


def test_the_log_consumer_moves_past_own_records_and_never_past_another_producers_command(
    config: Config, gc_restored: None
) -> None:
    """Once its copies land where predicted, the engine moves its log consumer past what it
    just committed instead of reading it back; a command another partition's engine writes
    in between is still read and processed, its events naming its own position."""
    engine = _Engine(config)
    config = engine.config
    try:
        for _ in range(5):
            counted = engine.send_one()
        assert counted.predicted >= 2
        _until(lambda: engine.counted().not_read_back >= 1, "own records not read back")
        engine.write_to_log(loop.bench_command(1000))  # as another partition's engine forwards one
        _until(lambda: engine.counted().commands == engine.sent + 1, "the forwarded command")
        for _ in range(4):
            engine.send_one()
    finally:
        engine.stop()

    log = committed_messages(config, config.log_topic, 0)
    (forwarded_at,) = [
        message.offset()
        for record, message in log
        if record.record_type is RecordType.COMMAND
        and header(message.headers(), INGRESS_OFFSET) is None
    ]
    answered = [r for r, _ in log if r.source_record_position == forwarded_at]
    assert [r.record_type for r in answered] == [RecordType.EVENT] * loop.EVENTS_PER_COMMAND
