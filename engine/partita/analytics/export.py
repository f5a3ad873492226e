"""`partita export`: the log's EVENTs re-published as JSON, one topic per value type.

Records go to `<ns>.export.<value-type>` (e.g. `partita.export.process-instance`, see
`records_json` for the document), keyed by process instance key. The exporter never creates
topics: `partita topics apply --export` does (`partita.log.topics.export_topic_specs`), and
`Exporter.run` stops with ExportTopicsMissingError, naming that command, when one it would
write is missing. Its clients use the exporter role's Kafka access (PARTITA_KAFKA_CONFIG, then
PARTITA_KAFKA_CONFIG_EXPORTER); `run` first waits for the cluster to answer with it, so a
refused credential fails within seconds.

Exactly once: the exporter reads the log read_committed in the consumer group `<ns>.export`
and commits each batch's JSON records together with the consumed offsets in one Kafka
transaction (transactional id `<ns>.export.<name>`). Killed at any point, a rerun resumes at the
last committed batch and nothing is written twice; read the export topics with
`isolation.level=read_committed` to see exactly the committed records.

Log truncation: the engine deletes log records only below the committed offsets of the groups in
PARTITA_DOWNSTREAM_GROUPS, so list `<ns>.export` there. If it is not listed and the log was
truncated past the exporter's position, the exporter stops with ExportGapError naming the
missing offsets instead of silently skipping them (`skip_truncated=True` accepts the gap).

A record that cannot be exported (its body does not decode behind a valid EVENT header, or its
conversion to JSON fails) is reported (a warning of the `partita.skipped` logger naming topic,
partition, offset, value type, intent and what failed) and skipped; `ExportStats.skipped`
counts them.
"""

from __future__ import annotations

import json
import socket
import time
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    Producer,
    TopicPartition,
)

from partita.analytics.records_json import export_key, record_json
from partita.analytics.skipped import SkippedRecords
from partita.config import Config, KafkaRole
from partita.errors import PartitaError
from partita.log.admin import admin_client, wait_for_metadata
from partita.log.clients import consume_available, new_consumer, new_producer
from partita.log.security import kafka_access
from partita.log.topics import export_topic_name, export_topic_specs
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import ValueType
from partita.protocol.headers import EVENT, RECORD_TYPE, VALUE_TYPE

Progress = Callable[[str], None]
TRANSACTION_TIMEOUT_MS = 30_000


class ExportGapError(PartitaError):
    """The log was truncated past the exporter's committed position."""


class ExportTopicsMissingError(PartitaError):
    """An export topic does not exist (or the exporter's principal cannot see it)."""


def export_group(namespace: str) -> str:
    return f"{namespace}.export"


@dataclass(slots=True)
class ExportStats:
    read: int = 0
    exported: int = 0
    transactions: int = 0
    by_value_type: Counter[str] = field(default_factory=Counter)
    skipped_gaps: list[str] = field(default_factory=list)
    skipped: int = 0
    """Records that could not be exported (reported and left out)."""


class Exporter:
    def __init__(
        self,
        config: Config,
        *,
        value_types: Collection[ValueType] = (),
        name: str | None = None,
        batch_size: int = 500,
        skip_truncated: bool = False,
        progress: Progress = lambda _: None,
        connect_timeout: float = 30.0,
    ) -> None:
        self.config = config
        self.access = kafka_access(config, KafkaRole.EXPORTER)
        self.connect_timeout = connect_timeout
        self.value_types = frozenset(value_types)
        self._wanted = frozenset(t.name.encode() for t in self.value_types)
        self.name = name or socket.gethostname()
        self.batch_size = batch_size
        self.skip_truncated = skip_truncated
        self.progress = progress
        self.codec = RecordCodec()
        self.stats = ExportStats()
        self.skipped = SkippedRecords("export")
        self._assigned: list[TopicPartition] = []

    @property
    def topics(self) -> list[str]:
        """The export topics this exporter writes: those of the value types it exports."""
        wanted = {export_topic_name(self.config.namespace, t) for t in self.value_types}
        return [
            spec.name
            for spec in export_topic_specs(self.config)
            if not wanted or spec.name in wanted
        ]

    def check(self) -> None:
        """Wait for the cluster to answer the exporter's access and verify its topics exist.
        KafkaUnavailableError/KafkaAccessError (partita.log.admin) or ExportTopicsMissingError,
        each saying what to do; never creates anything."""
        wait_for_metadata(self.access, self.connect_timeout)
        visible = admin_client(self.access).list_topics(timeout=self.connect_timeout).topics
        missing = [name for name in [self.config.log_topic, *self.topics] if name not in visible]
        if missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" * (len(missing) > 3))
            raise ExportTopicsMissingError(
                f"{shown} not found at {self.access.bootstrap}: run `partita topics"
                f" apply --export --namespace {self.config.namespace}` (it creates the export"
                " topics; the exporter does not). If they exist, the exporter's principal"
                " cannot see them: `partita acls --role exporter` prints what it needs."
            )

    def run(self, *, once: bool = False, stop: Callable[[], bool] = lambda: False) -> ExportStats:
        """Export until `stop()` returns True, or (with `once`) until every partition of the
        log is exported up to where it ended when the exporter got it. `check()` first."""
        self.check()
        consumer = new_consumer(
            self.access,
            {
                "group.id": export_group(self.config.namespace),
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "error",  # a committed offset below the log start: a gap
                "fetch.wait.max.ms": 50,
                "session.timeout.ms": 10_000,
                # static membership: a restarted exporter of the same name takes its partitions
                # back at once instead of waiting for its predecessor's session to expire
                "group.instance.id": self.name,
            },
        )
        producer = new_producer(
            self.access,
            {
                "transactional.id": f"{export_group(self.config.namespace)}.{self.name}",
                "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
                "linger.ms": 5,
            },
        )
        producer.init_transactions(30)
        consumer.subscribe([self.config.log_topic], on_assign=self._on_assign)
        ends: dict[int, int] = {}
        last_report = time.monotonic()
        try:
            while not stop():
                messages = consume_available(consumer, self.batch_size, 0.2)
                messages = [m for m in messages if not self._is_gap(consumer, m)]
                if messages:
                    self._export(consumer, producer, messages)
                if once and self._caught_up(consumer, ends):
                    break
                if time.monotonic() - last_report > 5:
                    last_report = time.monotonic()
                    self.progress(
                        f"exported {self.stats.exported} events of {self.stats.read} records read"
                    )
        finally:
            consumer.close()
            producer.flush(10)
        return self.stats

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Partitions without a committed offset start at the log start; others resume."""
        committed = consumer.committed(partitions, timeout=30)
        for tp in committed:
            if tp.offset == OFFSET_INVALID:
                tp.offset = OFFSET_BEGINNING
        self._assigned = committed
        consumer.assign(committed)

    def _is_gap(self, consumer: Consumer, message: Any) -> bool:
        error = message.error()
        if error is None:
            return False
        if error.code() != KafkaError._AUTO_OFFSET_RESET:
            if error.code() != KafkaError._PARTITION_EOF:
                self.progress(f"log consumer: {error.str()}")
            return True
        partition = message.partition()
        tp = TopicPartition(self.config.log_topic, partition)
        committed = consumer.committed([tp], timeout=30)[0].offset
        low, _ = consumer.get_watermark_offsets(tp, timeout=30, cached=False)
        gap = (
            f"{self.config.log_topic}/{partition}: the exporter's position {committed} is below"
            f" the log start {low}; offsets {committed}..{low - 1} were truncated before they"
            " were exported"
        )
        if not self.skip_truncated:
            raise ExportGapError(
                f"{gap}. List {export_group(self.config.namespace)} in PARTITA_DOWNSTREAM_GROUPS"
                " of the engine workers so truncation waits for the exporter; rerun with"
                " --skip-truncated to accept the gap and go on from the log start."
            )
        self.progress(f"skipping a gap: {gap}")
        self.stats.skipped_gaps.append(gap)
        # the partition is in an error state after the failed reset: assign it afresh
        positions = consumer.position(list(self._assigned))
        fresh = []
        for current, first in zip(positions, self._assigned, strict=True):
            offset = current.offset if current.offset >= 0 else first.offset
            if current.partition == partition:
                offset = low
            fresh.append(TopicPartition(current.topic, current.partition, offset))
        self._assigned = fresh
        consumer.assign(fresh)
        return True

    def _wanted_event(self, message: Any) -> bool:
        record_type = value_type = None
        for name, value in message.headers() or ():
            if name == RECORD_TYPE:
                record_type = value
            elif name == VALUE_TYPE:
                value_type = value
        return record_type == EVENT and (not self._wanted or value_type in self._wanted)

    def _export(self, consumer: Consumer, producer: Producer, messages: list[Any]) -> None:
        """One transaction: the batch's JSON records and the offsets past the batch."""
        out: list[tuple[str, bytes, bytes]] = []
        offsets: dict[int, int] = {}
        for message in messages:
            offsets[message.partition()] = message.offset() + 1
            if not self._wanted_event(message):
                continue
            try:
                record = self.codec.decode(
                    message.value(),
                    topic=message.topic(),
                    partition=message.partition(),
                    offset=message.offset(),
                )
                topic = export_topic_name(self.config.namespace, record.value_type)
                document = json.dumps(record_json(self.codec, record)).encode()
            except Exception as error:  # a record we cannot export must not stop the others
                self.skipped.report(
                    message.topic(), message.partition(), message.offset(), message.headers(), error
                )
                self.stats.skipped += 1
                continue
            out.append((topic, export_key(record), document))
            self.stats.by_value_type[record.value_type.name] += 1
        producer.begin_transaction()
        for topic, key, value in out:
            while True:
                try:
                    producer.produce(topic, value, key)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.send_offsets_to_transaction(
            [TopicPartition(self.config.log_topic, p, o) for p, o in offsets.items()],
            consumer.consumer_group_metadata(),
        )
        producer.commit_transaction(60)
        self.stats.read += len(messages)
        self.stats.exported += len(out)
        self.stats.transactions += 1

    def _caught_up(self, consumer: Consumer, ends: dict[int, int]) -> bool:
        """Every assigned partition is read up to the end it had when first checked."""
        if not self._assigned:
            return False
        positions = consumer.position(list(self._assigned))
        for tp in positions:
            if tp.partition not in ends:
                low, high = consumer.get_watermark_offsets(tp, timeout=30, cached=False)
                ends[tp.partition] = high if high > low else -1  # -1: nothing to read
            end = ends[tp.partition]
            # the last record may be a transaction marker, which has no message of its own
            if end >= 0 and tp.offset < end - 1:
                return False
        return True
