"""The Kafka transaction of one partition's batch, from its first write to its commit.

A batch's transaction opens when it first writes: the copies of admitted client commands, which
go first because their log offsets are the `sourceRecordPosition` of the events processing
writes (the batch processes them meanwhile, at provisional positions: `engine.stream.
provisional`), or, without client commands, the batch's outputs. `commit` then sends the
consumed offsets (while the copies may still travel), names the copies' positions, writes every
output (own events and rejections, commands for other partitions, forwarded commands, pushed
jobs, the replies that may be written), sends the consumed offsets, and commits.

Kafka errors: retriable -> retried; abortable -> `forget` (the caller drops the batch's state),
the transaction is aborted, `rewind` (the caller's consumer goes back to what is committed) and
AbortedBatchError (TaskFencedError when the rewind itself fails); fatal or fenced -> `forget`
and TaskFencedError. Either way nothing of the batch is visible.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition

from engine.processing import ProcessingOutput
from engine.protocol.codec import RecordCodec
from engine.protocol.enums import RecordType
from engine.protocol.headers import CORRELATION_ID, ReplyTo, record_headers
from engine.protocol.records import Record
from engine.stream.errors import AbortedBatchError, TaskFencedError
from engine.stream.ingress import Copy
from engine.stream.metrics import ProcessingMetrics
from engine.stream.replies import ReplyRoutes

_LOG = logging.getLogger("partita.processing")
TXN_TIMEOUT_S = 30.0


def command_key(record: Record) -> bytes | None:
    """The Kafka key of an engine-written command: its record key, 8 bytes big-endian, so
    replay raises the key generator past the keys of spilled follow-ups without decoding."""
    return record.key.to_bytes(8, "big", signed=True) if record.key > 0 else None


def offset_of(message: Message) -> int:
    offset = message.offset()
    assert offset is not None, "consumed and delivered messages have offsets"
    return offset


class BatchTransaction:
    """The transactions of one partition's transactional producer, one batch at a time."""

    def __init__(  # noqa: PLR0917 - built in one place, by the processing state machine
        self,
        producer: Producer,
        topic: str,
        partition: int,
        codec: RecordCodec,
        replies: ReplyRoutes,
        group_metadata: Callable[[], Any],
        forget: Callable[[], None],
        rewind: Callable[[], None],
        metrics: ProcessingMetrics,
    ) -> None:
        self.producer = producer
        self.topic = topic
        self.partition = partition
        self.codec = codec
        self.replies = replies
        self.group_metadata = group_metadata
        self.forget = forget
        self.rewind = rewind
        self.metrics = metrics
        self._open = False
        self._copies = 0
        self._copy_positions: list[int] = []

    def _begin(self) -> None:
        if not self._open:
            self.producer.begin_transaction()
            self._open = True

    def send_copies(self, copies: Sequence[Copy]) -> None:
        """Open the transaction and produce `copies` to this partition of the log, without
        waiting: `copy_positions` waits for their offsets."""
        self._copies = len(copies)
        self._copy_positions = []
        positions = self._copy_positions

        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is None:
                positions.append(offset_of(message))

        try:
            self._begin()
            for copy in copies:
                self.producer.produce(
                    self.topic,
                    copy.value,
                    partition=self.partition,
                    headers=copy.headers,
                    on_delivery=on_delivery,
                )
        except KafkaException as exc:
            self._fail(exc)

    def copy_positions(self) -> list[int]:
        """The log offsets of the copies `send_copies` produced, in order, once Kafka assigned
        them (nothing else of the batch is produced before this returns)."""
        try:
            self.producer.flush(TXN_TIMEOUT_S)
        except KafkaException as exc:
            self._fail(exc)
        positions = self._copy_positions
        if len(positions) != self._copies:
            self.forget()
            self._abort("client commands could not be appended to the log")
        positions.sort()  # one partition, one producer: offsets follow the produce order
        return positions

    def commit(
        self,
        output: ProcessingOutput,
        offsets: list[TopicPartition] | Callable[[], list[TopicPartition]],
        settle: Callable[[], None] | None = None,
    ) -> list[int]:
        """Decide which replies may be written, send `offsets` (a function: built once that is
        decided, so their metadata can count the replies dropped), call `settle` (the batch
        names its copies' real positions in `output`, once they are delivered: the offsets'
        round trip overlapped their journey), write `output` and commit. Returns the log
        offsets of this partition's events written (the last one is enough: offsets grow in
        produce order)."""
        producer = self.producer
        events: list[int] = []

        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is None and message.partition() == self.partition:
                events.append(offset_of(message))

        encode = self.codec.encode
        try:
            self._begin()
            dropped = self._drop_refused_replies(output.replies)
            if callable(offsets):
                offsets = offsets()
            if offsets:
                producer.send_offsets_to_transaction(offsets, self.group_metadata(), TXN_TIMEOUT_S)
            if settle is not None:
                settle()
            own = self.partition
            last_event = -1
            for index, (partition, record) in enumerate(output.records):
                if partition == own and record.record_type is RecordType.EVENT:
                    last_event = index
            for index, (partition, record) in enumerate(output.records):
                producer.produce(
                    self.topic,
                    encode(record),
                    key=command_key(record) if record.record_type is RecordType.COMMAND else None,
                    partition=partition,
                    headers=record_headers(record),
                    on_delivery=on_delivery if index == last_event else None,
                )
            for partition, raw, headers in output.forwarded:
                producer.produce(self.topic, raw, partition=partition, headers=headers)
            for topic, partition, job_key, record in output.pushed:
                producer.produce(
                    topic,
                    encode(record),
                    key=str(job_key).encode(),
                    partition=partition,
                    headers=record_headers(record),
                )
            self._produce_replies(output.replies, dropped)
            self._commit_transaction()
            producer.poll(0)  # serve delivery reports: our events' offsets
        except KafkaException as exc:
            self._fail(exc)
        return events

    def _drop_refused_replies(self, replies: list[tuple[ReplyTo, Record]]) -> set[int]:
        """The indexes of the batch's replies that may not be written, dropped and counted,
        so a hostile or mistaken reply address never aborts or stalls the batch."""
        dropped: set[int] = set()
        for index, (address, _) in enumerate(replies):
            refusal = self.replies.refusal(address)
            if refusal is not None:
                self.replies.drop(self.partition, address, refusal)
                self.metrics.replies_dropped += 1
                dropped.add(index)
        return dropped

    def _produce_replies(self, replies: list[tuple[ReplyTo, Record]], dropped: set[int]) -> None:
        for index, (address, record) in enumerate(replies):
            if index in dropped:
                continue
            reply_headers = [*record_headers(record), (CORRELATION_ID, address.correlation_id)]
            if address.partition is None:
                self.producer.produce(
                    address.topic, self.codec.encode(record), headers=reply_headers
                )
            else:
                self.producer.produce(
                    address.topic,
                    self.codec.encode(record),
                    partition=address.partition,
                    headers=reply_headers,
                )

    def _commit_transaction(self) -> None:
        """Commit, retrying retriable errors for a while. A commit that stays retriable (the
        broker restarted under it) is given up: the caller then treats the task as fenced,
        and the worker joins again with a new producer, whose initialisation aborts it."""
        deadline = time.monotonic() + 2 * TXN_TIMEOUT_S
        while True:
            try:
                self.producer.commit_transaction(TXN_TIMEOUT_S)
                self._open = False
                return
            except KafkaException as exc:
                if exc.args[0].retriable() and time.monotonic() < deadline:
                    continue
                raise

    def _fail(self, exc: KafkaException) -> None:
        """Never returns: AbortedBatchError after an abort, TaskFencedError otherwise."""
        error: KafkaError = exc.args[0]
        self.forget()
        if error.txn_requires_abort() and not error.fatal() and error.code() not in _FENCED:
            self._abort(error.str())
        raise TaskFencedError(f"partition {self.partition}: {error.str()}") from None

    def _abort(self, reason: str) -> None:
        """Abort the open transaction and rewind; raises AbortedBatchError."""
        self.metrics.aborted += 1
        _LOG.warning("partition %d: aborting batch: %s", self.partition, reason)
        try:
            self.producer.abort_transaction(TXN_TIMEOUT_S)
        except KafkaException as abort_error:
            raise TaskFencedError(
                f"partition {self.partition}: abort failed: {abort_error.args[0].str()}"
            ) from None
        self._open = False
        try:
            self.rewind()
        except KafkaException as seek_error:
            # e.g. a rebalance outdated the partition's fetch position (Local: Outdated). Not
            # rewound, the consumer would go on after the aborted batch and skip its records,
            # so the task cannot go on: the worker joins again and reopens from what committed
            raise TaskFencedError(
                f"partition {self.partition}: cannot rewind after aborting the batch:"
                f" {seek_error.args[0].str()}"
            ) from None
        raise AbortedBatchError(reason)


_FENCED = (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)
