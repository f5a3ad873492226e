"""The replay state machine: rebuild a partition's state by applying its EVENTs.

States: SEEKING (find the start and the end of the log) -> APPLYING (read events from the last
applied position + 1 to the end, apply them, commit every `chunk` events) -> DONE.
Commands and rejections are skipped by header; appliers are the only code that runs, so the
result is independent of the clock and equal byte for byte to the state the processing built.
The processed positions the batches' last records name (PROCESSED header) are taken along, so
processing resumes after the last committed batch even when the engine group's offsets trail.
Called after the producer fenced any previous owner, so no new event can appear meanwhile.

An event that does not decode or whose applier raises stops the replay with
UnappliableRecordError (partition, offset, value type, intent, cause); the changes of the
events before it since the last chunk commit stay in the overlay, uncommitted. Events at the
positions of the skip list (PARTITA_SKIP_RECORDS) are not applied, with a warning each time.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from partita.processing import Engine
from partita.protocol.codec import RecordCodec
from partita.protocol.headers import INTENT, VALUE_TYPE, is_event, processed_positions
from partita.state import KeyGenerator, PartitionDb
from partita.state.db import LAST_APPLIED_POSITION, LAST_INGRESS_POSITION, LAST_PROCESSED_POSITION
from partita.stream.errors import LogTruncatedError, UnappliableRecordError, header_text
from partita.stream.skips import NO_SKIPS, SKIP_RECORDS_ENV, SkipList

_LOG = logging.getLogger("partita.replay")


class ProcessedPositions:
    """The newest processed positions read from the log's PROCESSED headers, for the store."""

    __slots__ = ("ingress", "log")

    def __init__(self) -> None:
        self.log = -1
        self.ingress = -1

    def see(self, headers: Any) -> None:
        found = processed_positions(headers)
        if found is not None:
            self.log = max(self.log, found[0])
            self.ingress = max(self.ingress, found[1])

    def for_commit(self, db: PartitionDb) -> dict[str, int | None]:
        """`PartitionDb.commit` arguments that raise the store's positions to these (never
        lower them)."""
        return {
            "last_processed_position": (
                self.log if self.log > db.position(LAST_PROCESSED_POSITION) else None
            ),
            "last_ingress_position": (
                self.ingress if self.ingress > db.position(LAST_INGRESS_POSITION) else None
            ),
        }


@dataclass(frozen=True, slots=True)
class ReplayResult:
    start: int
    end: int
    events: int
    seconds: float


class ReplayStateMachine:
    def __init__(  # noqa: PLR0917
        self,
        consumer: Consumer,
        topic: str,
        partition: int,
        engine: Engine,
        codec: RecordCodec,
        db: PartitionDb,
        keys: KeyGenerator,
        chunk: int = 10_000,
        *,
        skips: SkipList = NO_SKIPS,
    ) -> None:
        """`skips`: the namespace's PARTITA_SKIP_RECORDS (`skips.of_config`)."""
        self.consumer = consumer
        self.topic = topic
        self.partition = partition
        self.engine = engine
        self.codec = codec
        self.db = db
        self.keys = keys
        self.chunk = chunk
        self.skipped = skips.offsets(partition)
        self._last = -1
        self.positions = ProcessedPositions()

    def run(self, until: int | None = None) -> ReplayResult:
        """Apply every event after the store's last applied position up to the end of the
        log (or up to and including position `until`). UnappliableRecordError at an event
        that cannot be applied."""
        started = time.monotonic()
        tp = TopicPartition(self.topic, self.partition)
        low, high = self.consumer.get_watermark_offsets(tp, timeout=30, cached=False)
        applied_position = self.db.position(LAST_APPLIED_POSITION)
        if 0 <= applied_position < low - 1:
            raise LogTruncatedError(
                f"partition {self.partition}: the store has applied events up to offset"
                f" {applied_position}, but {self.topic} now starts at {low}"
            )
        start = max(applied_position + 1, low)
        end = high if until is None else min(high, until + 1)
        applied = 0
        if start < end:
            self.consumer.assign([TopicPartition(self.topic, self.partition, start)])
            applied = self._apply(end)
            self.consumer.unassign()
        self.db.commit(**self.positions.for_commit(self.db))
        result = ReplayResult(start, end, applied, time.monotonic() - started)
        if applied:
            _LOG.info(
                "partition %d: replayed %d events [%d, %d) in %.2f s",
                self.partition,
                applied,
                start,
                end,
                result.seconds,
            )
        return result

    def _apply(self, end: int) -> int:
        applied = 0
        pending = 0
        decode, apply, skipped = self.codec.decode, self.engine.apply, self.skipped
        while True:
            messages = self.consumer.consume(num_messages=1000, timeout=0.05)
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return self._finish(applied, pending)
                    if error.code() in (
                        KafkaError._AUTO_OFFSET_RESET,
                        KafkaError.OFFSET_OUT_OF_RANGE,
                    ):
                        raise LogTruncatedError(
                            f"partition {self.partition}: {self.topic} was truncated during"
                            f" replay: {error.str()}"
                        )
                    raise KafkaException(error)  # the worker rejoins on transient ones
                offset = message.offset()
                assert offset is not None
                if offset >= end:
                    return self._finish(applied, pending)
                outcome = apply_logged(
                    message, offset, self.topic, self.partition, decode, apply, self.db,
                    self.keys, skipped, self.positions,
                )  # fmt: skip
                if outcome is NOT_AN_EVENT:
                    continue
                applied += outcome is APPLIED
                pending += 1
                if pending >= self.chunk:
                    self.keys.write_noted()
                    self.db.commit(
                        last_applied_position=offset, **self.positions.for_commit(self.db)
                    )
                    pending = 0
                self._last = offset
            # the end may be a transaction marker, which is never delivered: ask the position
            position = self.consumer.position([TopicPartition(self.topic, self.partition)])
            if position[0].offset >= end:
                return self._finish(applied, pending)

    def _finish(self, applied: int, pending: int) -> int:
        if pending:  # every key noted belongs to a pending event
            self.keys.write_noted()
            self.db.commit(last_applied_position=self._last, **self.positions.for_commit(self.db))
        return applied


NOT_AN_EVENT, APPLIED, SKIPPED = "not an event", "applied", "skipped"


def apply_logged(  # noqa: PLR0917 - the per-record step of replay and standbys
    message: Any,
    offset: int,
    topic: str,
    partition: int,
    decode: Any,
    apply: Any,
    db: PartitionDb,
    keys: KeyGenerator,
    skipped: frozenset[int],
    positions: ProcessedPositions,
) -> str:
    """Replay one log record into `db`, the same way for replay and standbys: an EVENT is
    applied (or left out when the skip list names its offset); an engine-written command
    raises the key generator past its key (its Kafka key: a spilled follow-up whose events
    are not on the log yet); anything else is passed over. An event's key is only noted
    (`KeyGenerator.note_key`): the caller writes the noted keys before it commits. The
    record's PROCESSED header, if any, goes to `positions`.
    UnappliableRecordError when an event does not decode or its applier fails."""
    headers = message.headers()
    positions.see(headers)
    if not is_event(headers):
        key = message.key()
        if key is not None and len(key) == 8:
            keys.set_key_if_higher(int.from_bytes(key, "big", signed=True))
        return NOT_AN_EVENT
    if offset in skipped:
        skip(topic, partition, offset, message)
        return SKIPPED
    record = None
    try:
        record = decode(message.value() or b"", topic=topic, partition=partition, offset=offset)
        apply(record, db)
        keys.note_key(record.key)
    except Exception as failure:
        raise UnappliableRecordError.of(message, record, failure) from failure
    return APPLIED


def skip(topic: str, partition: int, offset: int, message: Any) -> None:
    """Log, loudly, that the EVENT `message` at `offset` is not applied as the skip list says."""
    _LOG.warning(
        "partition %d: NOT applying the %s %s event at offset %d of %s: it is in %s",
        partition,
        header_text(message.headers(), VALUE_TYPE),
        header_text(message.headers(), INTENT),
        offset,
        topic,
        SKIP_RECORDS_ENV,
    )
