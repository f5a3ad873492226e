"""A record on the log that cannot be used, on the real broker: the exporter, `partita tail`
and the analytics appliers report it (topic, partition, offset, value type, intent, what
failed), count it and go on with the next one; `partita status` shows a partition the engine
stopped at such a record as STOPPED, from the marker in the engine group's committed offset.

The garbage record is produced with a plain producer straight to `<ns>.log`, as a buggy
engine version or a producer from before ACLs would have written it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from partita.analytics.appliers import Tables, fold, wanted
from partita.analytics.export import Exporter
from partita.analytics.skipped import SkippedRecords
from partita.cli import main
from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.clients import engine_group, transactional_producer
from partita.log.security import kafka_access
from partita.log.topics import apply_topics, export_topic_name, export_topic_specs
from partita.ops.status import collect, render
from partita.ops.tail import TailFilter, tail
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import BpmnElementType, ValueType
from partita.protocol.headers import INTENT, RECORD_TYPE, VALUE_TYPE, header, record_headers
from partita.protocol.intents import ProcessInstanceCreationIntent, ProcessInstanceIntent
from partita.protocol.records import event
from partita.protocol.values import ProcessInstanceValue
from partita.stream.errors import UnappliableRecordError
from partita.stream.partition.stopped import StoppedMarker, commit_stopped, encode
from tests.support.worker_processes import (
    WorkerProcess,
    create_topics,
    creation,
    produce,
    read_log,
    wait_until,
)

pytestmark = [pytest.mark.kafka, pytest.mark.codec]  # also run with the pure-Python codec

CODEC = RecordCodec()
GARBAGE = 1
"""The offset of the garbage record on partition 0, between two good events."""


def _activated(counter: int) -> tuple[bytes, list[tuple[str, bytes | str | None]]]:
    key = (1 << 51) | counter
    value = ProcessInstanceValue(
        bpmn_process_id="order",
        version=1,
        process_instance_key=key,
        element_id="order",
        bpmn_element_type=BpmnElementType.PROCESS,
    )
    record = event(ProcessInstanceIntent.ELEMENT_ACTIVATED, value, key, timestamp=1_700_000_000_000)
    return CODEC.encode(record), list(record_headers(record))


def _produce_with_garbage(config: Config) -> None:
    """Partition 0: a good event, an EVENT header in front of a body that is not a record, a
    good event."""
    create_topics(config)
    producer = Producer({"bootstrap.servers": config.bootstrap})
    good, headers = _activated(1)
    producer.produce(config.log_topic, good, partition=0, headers=headers)
    producer.produce(config.log_topic, b"\xc3\x01not a record", partition=0, headers=headers)
    good, headers = _activated(2)
    producer.produce(config.log_topic, good, partition=0, headers=headers)
    assert producer.flush(30) == 0


def _reported(caplog: pytest.LogCaptureFixture, config: Config, reader: str) -> list[str]:
    where = f"{config.log_topic}/0@{GARBAGE}"
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "partita.skipped" and r.getMessage().startswith(f"{reader}: skipped {where}")
    ]


def test_the_exporter_reports_and_skips_a_garbage_event(
    config: Config, caplog: pytest.LogCaptureFixture
) -> None:
    _produce_with_garbage(config)
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    apply_topics(admin, export_topic_specs(config))  # `partita topics apply --export`
    with caplog.at_level(logging.WARNING, "partita.skipped"):
        stats = Exporter(config, name="unreadable").run(once=True)
    assert (stats.exported, stats.skipped) == (2, 1)
    (line,) = _reported(caplog, config, "export")
    assert "(PROCESS_INSTANCE ELEMENT_ACTIVATED)" in line and "Error" in line
    exported = read_log(config, export_topic_name(config.namespace, ValueType.PROCESS_INSTANCE))
    assert sum(len(n) for n in exported.raw_commands.values()) == 2  # JSON: not records


def test_tail_reports_and_skips_a_garbage_event(config: Config) -> None:
    _produce_with_garbage(config)
    lines: list[str] = []
    skipped = SkippedRecords("tail")
    tail(
        config,
        TailFilter(partitions=[0]),
        from_beginning=True,
        follow=False,
        out=lines.append,
        skipped=skipped,
    )
    assert skipped.count == 1 and dict(skipped.by_partition) == {0: 1}
    assert len(lines) == 4, lines  # two records, the report, the count
    assert "PROCESS_INSTANCE ELEMENT_ACTIVATED" in lines[0]
    assert lines[1].startswith(f"tail: skipped {config.log_topic}/0@{GARBAGE}")
    assert "(PROCESS_INSTANCE ELEMENT_ACTIVATED)" in lines[1]
    assert "PROCESS_INSTANCE ELEMENT_ACTIVATED" in lines[2] and "@2" in lines[2]
    assert lines[3] == "1 records could not be shown and were skipped"


def test_the_analytics_appliers_report_and_skip_a_garbage_event(
    config: Config, caplog: pytest.LogCaptureFixture
) -> None:
    _produce_with_garbage(config)
    consumer = Consumer(
        {
            "bootstrap.servers": config.bootstrap,
            "group.id": "unreadable-analytics",
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    tables, skipped = Tables.in_memory(), SkippedRecords("analytics")
    folded = []
    try:
        consumer.assign([TopicPartition(config.log_topic, 0, 0)])
        with caplog.at_level(logging.WARNING, "partita.skipped"):
            while True:
                message = consumer.poll(10)
                assert message is not None, "no end of the log within 10 s"
                if message.error() is not None:
                    assert message.error().code() == KafkaError._PARTITION_EOF
                    break
                headers = message.headers()
                kinds = (header(headers, n) for n in (RECORD_TYPE, VALUE_TYPE, INTENT))
                if wanted(*kinds):
                    folded.append(
                        fold(
                            tables,
                            CODEC,
                            skipped,
                            config.log_topic,
                            0,
                            message.offset(),
                            message.value(),
                            headers,
                        )
                    )
    finally:
        consumer.close()
    assert folded == [True, False, True]
    assert skipped.to_json()["records"] == 1
    assert len(_reported(caplog, config, "analytics")) == 1
    assert tables.processes["0|order|1"]["started"] == 2
    assert tables.progress["0"]["position"] == 2


def test_status_shows_a_stopped_partition(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topics(config)
    error = UnappliableRecordError(
        config.log_topic, 1, 17, "JOB_BATCH", "ACTIVATED", "its applier raised KeyNotFoundError"
    )
    committer = Consumer(
        {"bootstrap.servers": config.bootstrap, "group.id": engine_group(config.namespace)}
    )
    try:
        committer.commit(
            offsets=[
                TopicPartition(config.log_topic, 0, 4),
                TopicPartition(config.log_topic, 1, 12, metadata=encode(error)),
            ],
            asynchronous=False,
        )
    finally:
        committer.close()

    status = collect(config)
    stopped = {p.partition: p.stopped for p in status.partitions if p.stopped is not None}
    assert stopped == {
        1: StoppedMarker(17, "JOB_BATCH", "ACTIVATED", "its applier raised KeyNotFoundError")
    }
    assert [p.state for p in status.partitions] == ["unowned", "STOPPED", "unowned"]
    text = render(status)
    assert (
        "partition 1 STOPPED at offset 17 (JOB_BATCH ACTIVATED): its applier raised"
        " KeyNotFoundError" in text
    )

    flags = ["--bootstrap-servers", config.bootstrap, "--namespace", config.namespace]
    assert main(["status", "--json", *flags]) == 0
    partitions = json.loads(capsys.readouterr().out)["partitions"]
    assert partitions[1]["state"] == "STOPPED"
    assert partitions[1]["stopped"] == {
        "offset": 17,
        "value_type": "JOB_BATCH",
        "intent": "ACTIVATED",
        "reason": "its applier raised KeyNotFoundError",
    }
    assert partitions[0]["state"] == "unowned" and partitions[0]["stopped"] is None


def test_the_owner_marks_a_partition_stopped_in_a_transaction_and_its_next_commit_clears_it(
    config: Config,
) -> None:
    """What the partition task does: the marker through its fenced transactional producer."""
    create_topics(config)
    group = Consumer(
        {"bootstrap.servers": config.bootstrap, "group.id": engine_group(config.namespace)}
    )
    producer = transactional_producer(kafka_access(config, KafkaRole.ENGINE), config.namespace, 2)
    producer.init_transactions(30)
    error = UnappliableRecordError(config.log_topic, 2, 5, "JOB", "COMPLETED", "its body does not")

    def state() -> str:
        return collect(config).partitions[2].state

    try:
        commit_stopped(
            producer,
            group.consumer_group_metadata(),
            topic=config.log_topic,
            partition=2,
            offset=3,
            error=error,
        )
        wait_until(lambda: state() == "STOPPED", 30, "the marker")
        assert collect(config).partitions[2].stopped == StoppedMarker.of(error)
        producer.begin_transaction()  # the next batch commits its offset without metadata
        producer.send_offsets_to_transaction(
            [TopicPartition(config.log_topic, 2, 4)], group.consumer_group_metadata(), 30
        )
        producer.commit_transaction(30)
        wait_until(lambda: state() != "STOPPED", 30, "the marker to be cleared")
    finally:
        group.close()


def test_a_worker_stops_only_the_partition_it_cannot_replay_and_the_skip_list_restarts_it(
    config: Config, tmp_path: Path
) -> None:
    """A garbage EVENT on partition 0 (as a buggy engine version could have written it): the
    worker keeps partition 0 STOPPED (status shows it, nothing crash-loops), partitions 1 and 2
    keep processing; listed in PARTITA_SKIP_RECORDS, the next start replays past it."""
    _produce_with_garbage(config)
    worker = WorkerProcess(config, tmp_path / "w").start()
    try:
        wait_until(
            lambda: "partition 0: STOPPED" in worker.log.read_text(errors="replace"),
            60,
            "partition 0 to stop",
            worker.tail,
        )
        produce(config, [(1, creation(1)), (2, creation(2))])  # the others still work

        def answered() -> bool:
            log = read_log(config)
            return all(
                any(r.intent is ProcessInstanceCreationIntent.CREATED for r in log.partitions[p])
                for p in (1, 2)
            )

        wait_until(answered, 60, "partitions 1 and 2 to process", worker.tail)
        wait_until(
            lambda: collect(config).partitions[0].state == "STOPPED",
            30,
            "status to show partition 0 STOPPED",
        )
        status = collect(config)
        marker = status.partitions[0].stopped
        assert marker is not None and marker.offset == GARBAGE
        assert marker.value_type == "PROCESS_INSTANCE" and marker.intent == "ELEMENT_ACTIVATED"
        assert [p.stopped for p in status.partitions][1:] == [None, None]
        assert worker.process is not None and worker.process.poll() is None  # no crash loop
    finally:
        assert worker.stop() == 0, worker.tail()
    assert worker.log.read_text().count("partition 0: STOPPED") == 1

    skipping = WorkerProcess(
        config, tmp_path / "w", env={"PARTITA_SKIP_RECORDS": f"0:{GARBAGE}"}
    ).start()
    try:
        wait_until(
            lambda: "partition 0: processing from log offset" in skipping.log.read_text(),
            60,
            "partition 0 to process again",
            skipping.tail,
        )
        wait_until(
            lambda: collect(config).partitions[0].stopped is None,
            30,
            "the stopped marker to clear",
        )
    finally:
        assert skipping.stop() == 0, skipping.tail()
