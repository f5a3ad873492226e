"""The replay state machine: rebuild a partition's state by applying its EVENTs.

States: SEEKING (find the start and the end of the log) -> APPLYING (read events from the last
applied position + 1 to the end, apply them, commit every `chunk` events) -> DONE.
Commands and rejections are skipped by header; appliers are the only code that runs, so the
result is independent of the clock and equal byte for byte to the state the processing built.
Called after the producer fenced any previous owner, so no new event can appear meanwhile.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, TopicPartition

from engine.processing import Engine
from engine.protocol.codec import RecordCodec
from engine.protocol.headers import EVENT, RECORD_TYPE, header
from engine.state import KeyGenerator, PartitionDb
from engine.state.db import LAST_APPLIED_POSITION

_LOG = logging.getLogger("partita.replay")


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
    ) -> None:
        self.consumer = consumer
        self.topic = topic
        self.partition = partition
        self.engine = engine
        self.codec = codec
        self.db = db
        self.keys = keys
        self.chunk = chunk
        self._last = -1

    def run(self, until: int | None = None) -> ReplayResult:
        """Apply every event after the store's last applied position up to the end of the
        log (or up to and including position `until`)."""
        started = time.monotonic()
        tp = TopicPartition(self.topic, self.partition)
        low, high = self.consumer.get_watermark_offsets(tp, timeout=30, cached=False)
        start = max(self.db.position(LAST_APPLIED_POSITION) + 1, low)
        end = high if until is None else min(high, until + 1)
        applied = 0
        if start < end:
            self.consumer.assign([TopicPartition(self.topic, self.partition, start)])
            applied = self._apply(end)
            self.consumer.unassign()
        self.db.commit()
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
        decode, apply = self.codec.decode, self.engine.apply
        while True:
            messages = self.consumer.consume(num_messages=1000, timeout=0.05)
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return self._finish(applied, pending)
                    raise RuntimeError(f"replay of partition {self.partition}: {error.str()}")
                offset = message.offset()
                assert offset is not None
                if offset >= end:
                    return self._finish(applied, pending)
                if header(message.headers(), RECORD_TYPE) != EVENT:
                    continue
                record = decode(
                    message.value() or b"",
                    topic=self.topic,
                    partition=self.partition,
                    offset=offset,
                )
                apply(record, self.db)
                self.keys.set_key_if_higher(record.key)
                applied += 1
                pending += 1
                if pending >= self.chunk:
                    self.db.commit(last_applied_position=offset)
                    pending = 0
                self._last = offset
            # the end may be a transaction marker, which is never delivered: ask the position
            position = self.consumer.position([TopicPartition(self.topic, self.partition)])
            if position[0].offset >= end:
                return self._finish(applied, pending)

    def _finish(self, applied: int, pending: int) -> int:
        if pending:
            self.db.commit(last_applied_position=self._last)
        return applied
