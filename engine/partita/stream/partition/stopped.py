"""The "stopped" marker: how a partition the engine stopped says so to `partita status`.

A partition task that stops at a record it cannot apply (UnappliableRecordError) commits the
engine group's (`<ns>.engine`) offset of its log partition unchanged, with this marker as the
offset's `metadata` string:

    partita-stopped:<offset>:<value type>:<intent>:<reason>

Kafka keeps the metadata with the committed offset (up to the broker's
`offset.metadata.max.bytes`, 4096 by default; `encode` stays well below), every client reads
it back (`Consumer.committed`, `AdminClient.list_consumer_group_offsets`), and the next commit
of the partition, without metadata, clears it. So the marker needs no topic of its own, stays
while the partition is stopped (also across worker restarts), and disappears once the partition
processes again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TopicPartition

from partita.log.clients import fatal_errors
from partita.stream.errors import UnappliableRecordError
from partita.stream.partition.wedged import WATCH

PREFIX = "partita-stopped:"
MAX_REASON_CHARS = 1000
"""The reason is cut to this many characters, so the marker fits any broker's metadata limit."""
_NAME = re.compile(r"[^A-Za-z0-9_?]")


@dataclass(frozen=True, slots=True)
class StoppedMarker:
    """A partition stopped at the record at `offset` (its value type and intent) for `reason`."""

    offset: int
    value_type: str
    intent: str
    reason: str

    @classmethod
    def of(cls, error: UnappliableRecordError) -> StoppedMarker:
        return cls(error.offset, error.value_type, error.intent, error.cause)

    def encode(self) -> str:
        """The committed offset's metadata string. Never more than about 1.2 KB."""
        value_type = _NAME.sub("_", self.value_type)[:64] or "?"
        intent = _NAME.sub("_", self.intent)[:64] or "?"
        reason = " ".join(self.reason.split())[:MAX_REASON_CHARS]
        return f"{PREFIX}{self.offset}:{value_type}:{intent}:{reason}"


def encode(error: UnappliableRecordError) -> str:
    """The metadata to commit with the partition's offset when `error` stopped it."""
    return StoppedMarker.of(error).encode()


def commit_stopped(
    producer: Any,
    group_metadata: Any,
    *,
    topic: str,
    partition: int,
    offset: int,
    error: UnappliableRecordError,
    timeout: float = 30.0,
) -> None:
    """Mark `topic/partition` stopped by `error`: in one transaction of the partition's
    transactional producer (after `init_transactions`, so a fenced zombie cannot mark it),
    commit the engine group's offset `offset` (where processing would resume; committing the
    same offset changes nothing else) with the marker as its metadata. Raises what
    confluent-kafka raises; the marker becomes visible once the transaction's markers are
    written (usually milliseconds)."""
    marked = TopicPartition(topic, partition, offset, metadata=encode(error))
    commit_offset(producer, group_metadata, marked, timeout)


def commit_offset(
    producer: Any, group_metadata: Any, offset: TopicPartition, timeout: float = 30.0
) -> None:
    """Commit the engine group's `offset` (with its metadata) in a transaction of its own of
    the partition's transactional producer, under the wedged-call watch. Raises what
    confluent-kafka raises, a fatal error as the KafkaException it is."""
    partition = offset.partition
    with fatal_errors():
        producer.begin_transaction()
        with WATCH.guard(f"partition {partition}: send_offsets_to_transaction", timeout):
            producer.send_offsets_to_transaction([offset], group_metadata, timeout)
        with WATCH.guard(f"partition {partition}: commit_transaction", timeout):
            producer.commit_transaction(timeout)


def decode(metadata: str | None) -> StoppedMarker | None:
    """The marker in a committed offset's metadata; None for any other metadata (none, empty,
    or written by something else)."""
    if not metadata or not metadata.startswith(PREFIX):
        return None
    parts = metadata[len(PREFIX) :].split(":", 3)
    if len(parts) != 4:
        return None
    offset, value_type, intent, reason = parts
    try:
        return StoppedMarker(int(offset), value_type, intent, reason)
    except ValueError:
        return None
