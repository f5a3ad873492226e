"""`partita tail`: the log as readable lines, live.

Each record is one line: partition and offset, time, record type, value type, intent, key, and
the value's few telling fields (the element and instance of a PROCESS_INSTANCE record, a job's
type and retries, a rejection's reason). Filters on record type, value type and intent use the
headers, so records that do not match are never decoded. A matching record that cannot be
shown (its body does not decode behind valid headers) is reported in its place, a line naming
topic, partition, offset, value type, intent and what failed, counted and skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import TopicPartition

from partita.analytics.skipped import SkippedRecords
from partita.config import Config, KafkaRole
from partita.log.clients import consume_available, new_consumer
from partita.log.security import kafka_access
from partita.protocol.codec import RecordCodec
from partita.protocol.headers import INTENT, RECORD_TYPE, VALUE_TYPE
from partita.protocol.records import Record

_SUMMARY_FIELDS = (
    ("bpmn_process_id", "process"),
    ("element_id", "element"),
    ("bpmn_element_type", "type"),
    ("process_instance_key", "instance"),
    ("type", "jobType"),
    ("retries", "retries"),
    ("name", "name"),
    ("correlation_key", "correlationKey"),
    ("message_name", "message"),
    ("error_type", "errorType"),
    ("error_message", "error"),
    ("scope_key", "scope"),
    ("target_element_id", "target"),
)


@dataclass(frozen=True, slots=True)
class TailFilter:
    partitions: Collection[int] = ()
    record_types: Collection[str] = ()
    value_types: Collection[str] = ()
    intents: Collection[str] = ()
    key: int | None = None
    """Matches the record key or the process instance key."""

    def headers_match(self, headers: list[tuple[str, bytes]] | None) -> bool:
        found = {name: value for name, value in headers or ()}

        def ok(wanted: Collection[str], name: str) -> bool:
            value = found.get(name)
            return not wanted or (value is not None and value.decode() in wanted)

        return (
            ok(self.record_types, RECORD_TYPE)
            and ok(self.value_types, VALUE_TYPE)
            and ok(self.intents, INTENT)
        )

    def record_matches(self, record: Record) -> bool:
        if self.key is None:
            return True
        instance = getattr(record.value, "process_instance_key", None)
        return self.key in (record.key, instance)


def describe(record: Record, partition: int) -> str:
    """One line for a record."""
    when = datetime.fromtimestamp(record.timestamp / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]
    parts = [
        f"p{partition}@{record.position:<7}",
        when,
        f"{record.record_type.name:<17}",
        f"{record.value_type.name} {record.intent.name}",
        f"key={record.key}",
    ]
    for attribute, label in _SUMMARY_FIELDS:
        value = getattr(record.value, attribute, None)
        if value in (None, "", -1) or (attribute == "retries" and value == 0):
            continue
        parts.append(f"{label}={getattr(value, 'name', value)}")
    if record.rejection_type is not None:
        parts.append(f"rejected={record.rejection_type.name}: {record.rejection_reason}")
    return "  ".join(parts)


def tail(
    config: Config,
    where: TailFilter,
    *,
    last: int = 10,
    from_beginning: bool = False,
    follow: bool = True,
    out: Callable[[str], None] = print,
    stop: Callable[[], bool] = lambda: False,
    skipped: SkippedRecords | None = None,
) -> int:
    """Print matching records from `last` records before each partition's end (or from the
    beginning), then follow new ones unless `follow` is False. Returns the records printed;
    records that cannot be shown are reported through `out` and counted in `skipped`."""
    codec = RecordCodec()
    skipped = skipped if skipped is not None else SkippedRecords("tail")
    if skipped.emit is None:
        skipped.emit = out
    consumer = new_consumer(
        kafka_access(config, KafkaRole.OPERATOR),
        {
            "group.id": f"{config.namespace}.tail",  # assign only: never joins, never commits
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 100,
        },
    )
    printed = 0
    try:
        topic = config.log_topic
        metadata = consumer.list_topics(topic, timeout=30).topics[topic]
        partitions = sorted(where.partitions or metadata.partitions)
        ends: dict[int, int] = {}
        assignment = []
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=30, cached=False
            )
            ends[partition] = high
            start = low if from_beginning else max(low, high - last)
            assignment.append(TopicPartition(topic, partition, start))
        consumer.assign(assignment)
        positions = {p: int(tp.offset or 0) for p, tp in zip(partitions, assignment, strict=True)}
        while not stop():
            messages = consume_available(consumer, 500, 0.5)
            for message in messages:
                if message.error() is not None:
                    continue
                positions[int(message.partition() or 0)] = int(message.offset() or 0) + 1
                line = _line(codec, where, message, skipped)
                if line is not None:
                    out(line)
                    printed += 1
            # the end may be a transaction marker, which never arrives as a message
            if not (follow or messages) and all(positions[p] >= ends[p] - 1 for p in partitions):
                break
    finally:
        consumer.close()
        if skipped.count:
            out(f"{skipped.count} records could not be shown and were skipped")
    return printed


def _line(
    codec: RecordCodec, where: TailFilter, message: Any, skipped: SkippedRecords
) -> str | None:
    if not where.headers_match(message.headers()):
        return None
    try:
        record = codec.decode(
            message.value(),
            topic=message.topic(),
            partition=message.partition(),
            offset=message.offset(),
        )
        if not where.record_matches(record):
            return None
        return describe(record, message.partition())
    except Exception as error:  # one record that cannot be shown must not end the tail
        skipped.report(
            message.topic(), message.partition(), message.offset(), message.headers(), error
        )
        return None
