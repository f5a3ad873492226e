"""The Kafka transaction of one partition's batch, from its first write to its commit.

A batch's events name the log positions of the client commands' copies (`sourceRecordPosition`)
before the copies are on the log, in one of two ways:

- PREDICTED: the engine is its partition's main writer, so the copies land where its last
  transaction ended (past that transaction's commit marker) unless another producer (another
  partition's engine writing a command here) wrote first. Once the last batches' copies landed
  where predicted, `send_copies` returns those positions and the batch processes at them;
  `commit` writes the copies first, then every output and the consumed offsets, and once all
  is delivered checks the copies' positions. A copy that landed elsewhere aborts the batch
  (`forget`, abort, `rewind`, AbortedBatchError); the batch is processed again at settled
  positions, and each such miss doubles how many batches must land as predicted before the
  next prediction. Nothing is written at the batch's start, so the coordinator has finished
  the last transaction's markers by its first write (otherwise CONCURRENT_TRANSACTIONS,
  retried after a fixed 20 ms).
- SETTLED: the copies open the transaction and travel while the batch processes at provisional
  positions (`partita.stream.processing.provisional`); `commit` sends the consumed offsets, names
  the copies' real positions once delivered (`settle`), writes every output (own events and
  rejections, commands for other partitions, forwarded commands, pushed jobs, the replies that
  may be written) and commits.

Kafka errors: retriable -> retried; abortable -> `forget` (the caller drops the batch's state),
the transaction is aborted, `rewind` (the caller's consumer goes back to what is committed) and
AbortedBatchError (TaskFencedError when the rewind itself fails); fatal or fenced -> `forget`
and TaskFencedError. Either way nothing of the batch is visible.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition

from partita.log.clients import ANY_PARTITION, NOW, fatal_errors, offset_of
from partita.processing import ProcessingOutput
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import RecordType
from partita.protocol.headers import (
    CORRELATION_ID,
    Headers,
    ReplyTo,
    processed_header,
    record_headers,
)
from partita.protocol.records import Record
from partita.stream.errors import AbortedBatchError, TaskFencedError
from partita.stream.metrics import ProcessingMetrics
from partita.stream.partition.wedged import WATCH
from partita.stream.processing.admission import Copy
from partita.stream.processing.landing import Landing
from partita.stream.processing.replies import ReplyRoutes

_LOG = logging.getLogger("partita.processing")
TXN_TIMEOUT_S = 30.0
# Enum members read off their class cost ~130 ns each on Python 3.11 (see partita.protocol.enums):
# the per-record path compares against module names bound once.
_EVENT, _COMMAND = RecordType.EVENT, RecordType.COMMAND


def command_key(record: Record) -> bytes | None:
    """The Kafka key of an engine-written command: its record key, 8 bytes big-endian, so
    replay raises the key generator past the keys of spilled follow-ups without decoding."""
    return record.key.to_bytes(8, "big", signed=True) if record.key > 0 else None


Report = Callable[[KafkaError | None, Message], None]
"""A delivery report callback, as `Producer.produce` takes it."""


class _Delivered:
    """The log offsets of a batch's last event and last record on its own partition."""

    __slots__ = ("events", "last_own")

    def __init__(self) -> None:
        self.events: list[int] = []
        self.last_own: list[int] = []

    def on_event(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            self.events.append(offset_of(message))

    def on_own(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            self.last_own.append(offset_of(message))

    def on_both(self, error: KafkaError | None, message: Message) -> None:
        self.on_event(error, message)
        self.on_own(error, message)


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
        self.landing = Landing()
        """Where this producer's records land on its partition
        (`partita.stream.processing.landing`)."""
        self._predicted: list[int] | None = None
        self._held: Sequence[Copy] = ()
        """Copies at predicted positions, produced by `commit` ahead of the batch's records:
        meanwhile the coordinator finishes the last transaction, which a new transaction's
        first write must otherwise wait for (CONCURRENT_TRANSACTIONS, retried after 20 ms)."""

    def _begin(self) -> None:
        if not self._open:
            self.producer.begin_transaction()
            self._open = True

    def send_copies(self, copies: Sequence[Copy]) -> list[int] | None:
        """Returns the positions `copies` will land at on this partition of the log when they
        can be predicted (the last batches' copies landed where predicted): `commit` then
        produces them first, before the batch's other records, and checks where they landed
        before it commits, aborting the batch if they landed elsewhere. Otherwise opens the
        transaction, produces them without waiting and returns None: `copy_positions` waits
        for their offsets."""
        self._predicted = self.landing.predict(len(copies))
        if self._predicted is not None:
            self._held = copies
            return self._predicted
        self._produce_copies(copies)
        return None

    def _produce_copies(self, copies: Sequence[Copy], *, ends_only: bool = False) -> None:
        """Produce `copies` in order, each reporting its offset to the landing's positions
        once delivered; with `ends_only`, only the first and the last do
        (`Landing.as_predicted`)."""
        positions = self.landing.positions

        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is None:
                positions.append(offset_of(message))

        between = None if ends_only else on_delivery
        try:
            self._begin()
            produce, topic, partition = self.producer.produce, self.topic, self.partition
            # positional: see partita.log.clients. The first, those between, the last
            for copy in copies[:1]:
                produce(topic, copy.value, None, partition, on_delivery, None, NOW, copy.headers)
            for copy in copies[1:-1]:
                produce(topic, copy.value, None, partition, between, None, NOW, copy.headers)
            for copy in copies[1:][-1:]:
                produce(topic, copy.value, None, partition, on_delivery, None, NOW, copy.headers)
        except KafkaException as exc:
            self._fail(exc)

    def copy_positions(self) -> list[int]:
        """The log offsets of the copies `send_copies` produced, in order, once Kafka assigned
        them (nothing else of the batch is produced before this returns)."""
        try:
            with fatal_errors():
                self.producer.flush(TXN_TIMEOUT_S)
        except KafkaException as exc:
            self._fail(exc)
        positions = self.landing.delivered()
        if positions is None:
            self.forget()
            self._abort("client commands could not be appended to the log")
        return positions

    def commit(
        self,
        output: ProcessingOutput,
        offsets: list[TopicPartition] | Callable[[], list[TopicPartition]],
        settle: Callable[[], None] | None = None,
        positions: tuple[int, int] | None = None,
    ) -> list[int]:
        """Decide which replies may be written, send `offsets` (a function: built once that is
        decided, so their metadata can count the replies dropped), write `output` and commit.
        With copies at predicted positions (`send_copies`), they are written first, then
        `output` and the offsets, and once everything is delivered the copies' positions are
        checked before the commit. Otherwise `settle` is called after the offsets (the batch
        names its copies' real positions in `output`, once they are delivered: the offsets'
        round trip overlapped their journey) and `output` is written after it. Returns the
        log offsets of this partition's events written (the last one is enough: offsets grow
        in produce order). `positions` (processed log and ingress offsets) go on the last
        record of `output` on this partition, as its PROCESSED header."""
        producer = self.producer
        predicted, self._predicted = self._predicted, None
        self.landing.begin_commit()
        written = -1
        if predicted is not None:
            held, self._held = self._held, ()
            self._produce_copies(held, ends_only=True)
        delivered = _Delivered()
        try:
            with fatal_errors():
                self._begin()
                dropped = self._drop_refused_replies(output.replies)
                if callable(offsets):
                    offsets = offsets()
                if predicted is None:
                    self._send_offsets(offsets)
                    if settle is not None:
                        settle()
                written = self._produce_output(output, dropped, delivered, positions)
                if predicted is not None:
                    self._send_offsets(offsets)
                    producer.flush(TXN_TIMEOUT_S)
                    self._check_predicted(predicted)
                self._commit_transaction()
                producer.poll(0)  # serve delivery reports: our events' offsets
        except KafkaException as exc:
            self._fail(exc)
        self.landing.committed(delivered.last_own, written)
        return delivered.events

    def _send_offsets(self, offsets: list[TopicPartition]) -> None:
        if offsets:
            with WATCH.guard(
                f"partition {self.partition}: send_offsets_to_transaction", TXN_TIMEOUT_S
            ):
                self.producer.send_offsets_to_transaction(
                    offsets, self.group_metadata(), TXN_TIMEOUT_S
                )

    def _produce_output(
        self,
        output: ProcessingOutput,
        dropped: set[int],
        delivered: _Delivered,
        positions: tuple[int, int] | None = None,
    ) -> int:
        """Everything the batch writes but its copies: the offsets of this partition's last
        event and last record of any kind are reported to `delivered`; that last record
        carries `positions` (PROCESSED). Returns how many records it wrote to this partition,
        -1 when one of them is a command to process when read back."""
        producer = self.producer
        own = self.partition
        records = output.records
        last_event = last_record = -1
        for index in range(len(records) - 1, -1, -1):  # from the end: most often one step
            partition, record = records[index]
            if partition == own:
                if last_record < 0:
                    last_record = index
                if record.record_type is _EVENT:
                    last_event = index
                    break
        callbacks = {last_event: delivered.on_event, last_record: delivered.on_own}
        if last_event == last_record:
            callbacks = {last_event: delivered.on_both}
        processed = None
        if positions is not None and last_record >= 0:
            processed = [*record_headers(records[last_record][1]), processed_header(*positions)]
        command_left = any(partition == own for partition, _, _ in output.forwarded)
        produce, log = producer.produce, self.topic
        produce_all = self.codec.produce_all
        if produce_all is not None:  # the loop below, compiled
            specials: dict[int, tuple[Report | None, Headers | None]] = {
                index: (callback, None) for index, callback in callbacks.items()
            }
            if processed is not None:
                specials[last_record] = (callbacks.get(last_record), processed)
            try:
                written, commands = produce_all(
                    produce,
                    log,
                    records,
                    0,
                    len(records),
                    own,
                    record_headers,
                    _COMMAND,
                    NOW,
                    [(index, *specials[index]) for index in sorted(specials) if index >= 0],
                )
            except ValueError:  # raised before any record is produced: a record `encode`
                pass  # refuses, which the loop below names, saying why
            else:
                return self._produce_rest(output, dropped, written, command_left or commands)
        written = 0
        values = self.codec.encode_all([record for _, record in records])
        # positional arguments throughout (see partita.log.clients): (topic, value, key,
        # partition, on_delivery, callback, timestamp, headers)
        for index, (partition, record) in enumerate(records):
            headers = record_headers(record)
            if index == last_record and processed is not None:
                headers = processed
            key = None
            if partition == own:
                written += 1
                if record.record_type is _COMMAND:
                    key = command_key(record)
                    command_left = True  # to process when read back
            elif record.record_type is _COMMAND:
                key = command_key(record)
            produce(log, values[index], key, partition, callbacks.get(index), None, NOW, headers)
        return self._produce_rest(output, dropped, written, command_left)

    def _produce_rest(
        self, output: ProcessingOutput, dropped: set[int], written: int, command_left: bool
    ) -> int:
        """The batch's writes after its records (`_produce_output`)."""
        encode, produce, log = self.codec.encode, self.producer.produce, self.topic
        for partition, raw, headers in output.forwarded:
            produce(log, raw, None, partition, None, None, NOW, headers)
        for topic, partition, job_key, record in output.pushed:
            key = str(job_key).encode()
            produce(topic, encode(record), key, partition, None, None, NOW, record_headers(record))
        self._produce_replies(output.replies, dropped)
        return -1 if command_left else written

    def _check_predicted(self, predicted: list[int]) -> None:
        """Abort the batch unless its copies landed at their predicted positions, which its
        events already name (another producer wrote to the partition in between)."""
        landing = self.landing
        if landing.as_predicted(predicted):
            self.metrics.predicted += 1
            return
        self.forget()
        if not landing.all_reported(predicted):
            self._abort("client commands could not be appended to the log")
        landed = min(landing.positions)
        landing.mispredicted()
        self.metrics.mispredicted += 1
        self._abort(
            f"its copies landed at {landed}, not at the predicted {predicted[0]} (another"
            " producer wrote to the partition first): processing it again",
            level=logging.INFO,
        )

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
            partition = ANY_PARTITION if address.partition is None else address.partition
            self.producer.produce(  # positional: see partita.log.clients
                address.topic,
                self.codec.encode(record),
                None,
                partition,
                None,
                None,
                NOW,
                reply_headers,
            )

    def _commit_transaction(self) -> None:
        """Commit, retrying retriable errors for a while. A commit that stays retriable (the
        broker restarted under it) is given up: the caller then treats the task as fenced,
        and the worker joins again with a new producer, whose initialisation aborts it."""
        deadline = time.monotonic() + 2 * TXN_TIMEOUT_S
        while True:
            try:
                with WATCH.guard(f"partition {self.partition}: commit_transaction", TXN_TIMEOUT_S):
                    self.producer.commit_transaction(TXN_TIMEOUT_S)
                self._open = False
                return
            except KafkaException as exc:
                if exc.args[0].retriable() and time.monotonic() < deadline:
                    continue
                raise

    def _fail(self, exc: KafkaException) -> NoReturn:
        """Never returns: AbortedBatchError after an abort, TaskFencedError otherwise."""
        error: KafkaError = exc.args[0]
        self.forget()
        if error.txn_requires_abort() and not error.fatal() and error.code() not in _FENCED:
            self._abort(error.str())
        raise TaskFencedError(f"partition {self.partition}: {error.str()}") from None

    def _abort(self, reason: str, level: int = logging.WARNING) -> NoReturn:
        """Abort the open transaction and rewind; raises AbortedBatchError."""
        self.metrics.aborted += 1
        self.landing.unknown()
        _LOG.log(level, "partition %d: aborting batch: %s", self.partition, reason)
        try:
            with (
                fatal_errors(),
                WATCH.guard(f"partition {self.partition}: abort_transaction", TXN_TIMEOUT_S),
            ):
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
