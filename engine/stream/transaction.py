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
  positions (`engine.stream.provisional`); `commit` sends the consumed offsets, names the
  copies' real positions once delivered (`settle`), writes every output (own events and
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
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition

from engine.log.clients import ANY_PARTITION, NOW, fatal_errors
from engine.processing import ProcessingOutput
from engine.protocol.codec import RecordCodec
from engine.protocol.enums import RecordType
from engine.protocol.headers import CORRELATION_ID, ReplyTo, processed_header, record_headers
from engine.protocol.records import Record
from engine.stream.errors import AbortedBatchError, TaskFencedError
from engine.stream.ingress import Copy
from engine.stream.metrics import ProcessingMetrics
from engine.stream.replies import ReplyRoutes
from engine.stream.wedged import WATCH

_LOG = logging.getLogger("partita.processing")
TXN_TIMEOUT_S = 30.0
# Enum members read off their class cost ~130 ns each on Python 3.11 (see engine.protocol.enums):
# the per-record path compares against module names bound once.
_EVENT, _COMMAND = RecordType.EVENT, RecordType.COMMAND


def command_key(record: Record) -> bytes | None:
    """The Kafka key of an engine-written command: its record key, 8 bytes big-endian, so
    replay raises the key generator past the keys of spilled follow-ups without decoding."""
    return record.key.to_bytes(8, "big", signed=True) if record.key > 0 else None


def offset_of(message: Message) -> int:
    offset = message.offset()
    assert offset is not None, "consumed and delivered messages have offsets"
    return offset


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
        self._copies = 0
        self._copy_positions: list[int] = []
        self.next_position: int | None = None
        """Where this producer's next record on its partition lands if nothing else writes
        there first: past the last record it committed there and that transaction's commit
        marker (None: not known, e.g. after an abort)."""
        self._landed = 0
        """Batches in a row whose copies landed at `next_position` and on."""
        self._trusted_after = 1
        """`_landed` needed before a batch's copies get predicted positions; each miss
        doubles it (a partition other producers write to soon stops predicting)."""
        self.own_from: int | None = None
        """When the last committed transaction's copies landed where expected (predicted or
        not), right past this producer's last record before them: the offset between, that
        transaction's commit marker (nothing else fits there), so every offset from it to the
        end of `written` is this producer's own. None otherwise."""
        self._as_expected = False
        self.written: tuple[int, int] | None = None
        """The first and last log offset of the last committed transaction when every record
        between them is one it wrote and none of them is a command left to process (its
        copies came first, and nothing else landed among its records): read back, they need
        no look at their headers. None when not known."""
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
        self._copies = len(copies)
        self._copy_positions = []
        start = self.next_position
        if start is not None and self._landed >= self._trusted_after:
            self._predicted = list(range(start, start + len(copies)))
            self._held = copies
            return self._predicted
        self._predicted = None
        self._produce_copies(copies)
        return None

    def _produce_copies(self, copies: Sequence[Copy], *, ends_only: bool = False) -> None:
        """Produce `copies` in order, each reporting its offset to `_copy_positions` once
        delivered; with `ends_only`, only the first and the last do (`_check_predicted`)."""
        positions = self._copy_positions

        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is None:
                positions.append(offset_of(message))

        last = len(copies) - 1
        try:
            self._begin()
            produce, topic, partition = self.producer.produce, self.topic, self.partition
            for index, copy in enumerate(copies):  # positional: see engine.log.clients
                report = on_delivery if not ends_only or index in (0, last) else None
                produce(topic, copy.value, None, partition, report, None, NOW, copy.headers)
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
        positions = self._copy_positions
        if len(positions) != self._copies:
            self.forget()
            self._abort("client commands could not be appended to the log")
        positions.sort()  # one partition, one producer: offsets follow the produce order
        start = self.next_position
        if start is not None and positions == list(range(start, start + len(positions))):
            self._landed += 1
            self._as_expected = True
        else:
            self._landed = 0
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
        self.written = self.own_from = None
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
        self._committed_on_partition(delivered.last_own, written)
        as_expected, self._as_expected = self._as_expected, False
        if as_expected and self.written is not None:
            self.own_from = self.written[0] - 1
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
        written = 0
        command_left = any(partition == own for partition, _, _ in output.forwarded)
        encode, produce, log = self.codec.encode, producer.produce, self.topic
        values = self.codec.encode_all([record for _, record in records])
        # positional arguments throughout (see engine.log.clients): (topic, value, key,
        # partition, on_delivery, callback, timestamp, headers)
        for index, (partition, record) in enumerate(records):
            headers = record_headers(record)
            if index == last_record and positions is not None:
                headers = [*headers, processed_header(*positions)]
            key = None
            if partition == own:
                written += 1
                if record.record_type is _COMMAND:
                    key = command_key(record)
                    command_left = True  # to process when read back
            elif record.record_type is _COMMAND:
                key = command_key(record)
            produce(log, values[index], key, partition, callbacks.get(index), None, NOW, headers)
        for partition, raw, headers in output.forwarded:
            produce(log, raw, None, partition, None, None, NOW, headers)
        for topic, partition, job_key, record in output.pushed:
            key = str(job_key).encode()
            produce(topic, encode(record), key, partition, None, None, NOW, record_headers(record))
        self._produce_replies(output.replies, dropped)
        return -1 if command_left else written

    def _check_predicted(self, predicted: list[int]) -> None:
        """Abort the batch unless its copies landed at their predicted positions, which its
        events already name (another producer wrote to the partition in between).

        Only the first and the last copy report where they landed (a delivery report costs
        a Python call and a message object per record): one producer's records on one
        partition land in the order produced, each past the one before, and the commit fails
        if any of them was not written. So the first at the first predicted offset and the
        last at the last one leave room for the copies between and nothing else."""
        landed = sorted(self._copy_positions)
        ends = [predicted[0], predicted[-1]] if len(predicted) > 1 else predicted
        if landed == ends:
            self._copy_positions = list(predicted)
            self.metrics.predicted += 1
            self._as_expected = True
            return
        self.forget()
        if len(landed) != len(ends):
            self._abort("client commands could not be appended to the log")
        self._trusted_after = min(self._trusted_after * 2, _MOST_TRUSTED_AFTER)
        self.metrics.mispredicted += 1
        self._abort(
            f"its copies landed at {landed[0]}, not at the predicted {predicted[0]} (another"
            " producer wrote to the partition first): processing it again",
            level=logging.INFO,
        )

    def _committed_on_partition(self, last_own: list[int], written: int) -> None:
        """Where the next record lands, from the last one this transaction put on the
        partition (past it: the commit marker). Unchanged by a transaction that wrote nothing
        there (it has no marker there). Names `written` when the copies and the `written`
        records that followed fill the offsets from the first to the last."""
        copies = self._copy_positions
        if last_own:
            self.next_position = last_own[-1] + 2
        elif copies:
            self.next_position = max(copies) + 2
        if copies and written >= 0:
            first, last = min(copies), (last_own[-1] if last_own else max(copies))
            if last - first + 1 == len(copies) + written:
                self.written = (first, last)
        self._copy_positions = []

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
            self.producer.produce(  # positional: see engine.log.clients
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

    def _fail(self, exc: KafkaException) -> None:
        """Never returns: AbortedBatchError after an abort, TaskFencedError otherwise."""
        error: KafkaError = exc.args[0]
        self.forget()
        if error.txn_requires_abort() and not error.fatal() and error.code() not in _FENCED:
            self._abort(error.str())
        raise TaskFencedError(f"partition {self.partition}: {error.str()}") from None

    def _unknown_position(self) -> None:
        self.next_position = None
        self._as_expected = False
        self._landed = 0
        self._copy_positions = []

    def _abort(self, reason: str, level: int = logging.WARNING) -> None:
        """Abort the open transaction and rewind; raises AbortedBatchError."""
        self.metrics.aborted += 1
        self._unknown_position()  # the abort's marker, and whatever else landed meanwhile
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


_MOST_TRUSTED_AFTER = 4096
_FENCED = (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)
