"""The processing state machine of one partition.

For each batch of consumed records of one partition: engine-written commands from the log,
client commands from the ingress topic `<ns>.commands` (each in offset order):

1. ADMIT client commands (`engine.stream.ingress`): a record that is not a valid command a
   client may send is rejected, naming its ingress offset, and never reaches the log. An
   admitted command for another partition is written to that partition of the log (it is
   processed there); one for this partition is APPENDED to the log at once, in the batch's
   transaction, so the command is on the log before its events and its log offset is the
   events' `sourceRecordPosition` (command sourcing, as in Zeebe).
2. SKIP log events, rejections and already processed copies of client commands by header,
   without decoding; skip offsets already processed. DECODE the log's commands; an
   undecodable one is answered by a rejection naming its offset.
3. FORWARD a log command that belongs to another partition, unchanged, to that partition.
4. PROCESS each command through its processor inside a savepoint, then its follow-up commands
   depth-first, up to `max_commands_in_batch` per batch; follow-ups beyond it are written to
   the log as commands. A rejection or an exception rolls back only that command.
5. COMMIT one Kafka transaction with every output and the log and ingress offsets, then write
   the state overlay and positions to RocksDB in one batch. Replies go only to allow-listed
   topics (`engine.stream.replies`); one that cannot be written is dropped and counted.

A processor exception is retried once alone; if it fails again an ERROR event is written and
the process instance is banned. Kafka errors: retriable -> retry; abortable -> abort, drop the
overlay, rewind to the committed offset; fatal or fenced -> TaskFencedError, the task is dropped.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition

from engine.processing import Engine, ProcessingContext, ProcessingOutput, RejectionError, job_push
from engine.processing.awaiting import AwaitedResults
from engine.processing.banning import is_banned
from engine.processing.context import DEFAULT_MESSAGE_TTL_MS
from engine.processing.job_push import JobPush
from engine.protocol.codec import RecordCodec
from engine.protocol.enums import RecordType, RejectionType, ValueType
from engine.protocol.errors import DecodeError, ProtocolError, RecordTooLargeError
from engine.protocol.headers import (
    CORRELATION_ID,
    INGRESS_OFFSET,
    INTENT,
    VALUE_TYPE,
    Headers,
    ReplyTo,
    header,
    is_pending_command,
    record_headers,
    reply_to,
)
from engine.protocol.intents import ErrorIntent, JobBatchIntent, intent_for
from engine.protocol.records import Record
from engine.protocol.routing import partition_for_command
from engine.protocol.values import VALUE_CLASSES, ErrorValue, JobBatchValue
from engine.state import KeyGenerator, PartitionDb
from engine.stream import counters
from engine.stream.backpressure import Backpressure, applies_to
from engine.stream.errors import AbortedBatchError, TaskFencedError
from engine.stream.ingress import Admitted, Refused, admit
from engine.stream.replies import ReplyRoutes
from engine.stream.sizes import oversized_records

_LOG = logging.getLogger("partita.processing")
_TXN_TIMEOUT_S = 30.0


def command_key(record: Record) -> bytes | None:
    """The Kafka key of an engine-written command: its record key, 8 bytes big-endian."""
    return record.key.to_bytes(8, "big", signed=True) if record.key > 0 else None


def _offset(message: Message) -> int:
    offset = message.offset()
    assert offset is not None, "consumed and delivered messages have offsets"
    return offset


@dataclass(slots=True)
class ProcessingMetrics:
    commands: int = 0
    follow_ups: int = 0
    rejections: int = 0
    errors: int = 0
    forwarded: int = 0
    ingress: int = 0
    """Client commands read from the ingress topic (admitted or refused)."""
    refused: int = 0
    backpressured: int = 0
    """New instances and messages refused RESOURCE_EXHAUSTED while ingress lagged."""
    replies_dropped: int = 0
    """Replies not written: topic not allowed or missing, partition out of range."""

    def boundary_counters(self) -> dict[str, int]:
        """What the trust boundary turned away (engine.stream.counters)."""
        return {
            "refused": self.refused,
            "backpressured": self.backpressured,
            "replies_dropped": self.replies_dropped,
        }

    """Ingress records refused before reaching the log (not commands, internal intents, ...)."""
    undecodable: int = 0
    batches: int = 0
    aborted: int = 0
    first_batch_started: float = 0.0
    """time.monotonic() when the first batch began (0 before), for throughput figures."""
    last_batch_committed: float = 0.0


class ProcessingStateMachine:
    def __init__(
        self,
        *,
        topic: str,
        partition: int,
        partition_count: int,
        engine: Engine,
        codec: RecordCodec,
        db: PartitionDb,
        keys: KeyGenerator,
        producer: Producer,
        group_metadata: Callable[[], Any],
        rewind: Callable[[int, int], None],
        next_offset: int,
        ingress_topic: str = "",
        next_ingress_offset: int = 0,
        replies: ReplyRoutes | None = None,
        backpressure: Backpressure | None = None,
        ingress_end: Callable[[], int] = lambda: -1,
        max_commands_in_batch: int = 100,
        clock: Callable[[], float] = time.time,
        job_push: JobPush | None = None,
        message_ttl_ms: int = DEFAULT_MESSAGE_TTL_MS,
        skipped: frozenset[int] = frozenset(),
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.partition_count = partition_count
        self.engine = engine
        self.codec = codec
        self.db = db
        self.keys = keys
        self.producer = producer
        self.group_metadata = group_metadata
        self.rewind = rewind
        self.next_offset = next_offset
        """The first log offset not yet processed: the group's committed offset."""
        self.ingress_topic = ingress_topic
        self.next_ingress_offset = next_ingress_offset
        """The first ingress offset not yet processed."""
        self.replies = replies if replies is not None else ReplyRoutes(frozenset())
        self.backpressure = (
            backpressure if backpressure is not None and backpressure.enabled else None
        )
        self.ingress_end = ingress_end
        """The end of this partition's ingress (as last fetched; -1 when unknown)."""
        self.max_commands_in_batch = max_commands_in_batch
        self.clock = clock
        self.job_push = job_push
        self.message_ttl_ms = message_ttl_ms
        self.skipped = skipped
        """Log offsets an operator listed in PARTITA_SKIP_RECORDS: never processed."""
        self.metrics = ProcessingMetrics()
        self._last_event_offset = -1
        self.awaiting = AwaitedResults()
        self._in_transaction = False

    def _route(self, record: Record) -> int:
        return partition_for_command(record, self.partition_count, self.partition)

    # -- one batch ----------------------------------------------------------------------------

    def process(
        self,
        messages: Sequence[Message],
        *,
        ingress: Sequence[Message] = (),
        due: Sequence[Record] = (),
        push_types: Sequence[str] = (),
    ) -> int:
        """Process one batch (log records and ingress records of this partition, and due-date
        commands), and push waiting jobs of `push_types` (job types whose topic just
        appeared). Returns the number of commands processed."""
        if not self.metrics.first_batch_started:
            self.metrics.first_batch_started = time.monotonic()
        output = ProcessingOutput()
        context = ProcessingContext(
            self.engine,
            self.db,
            self.keys,
            self.partition,
            output,
            self._route,
            self.partition_count,
        )
        context.awaiting = self.awaiting
        context.job_push = self.job_push
        context.message_ttl_ms = self.message_ttl_ms
        self._batch_awaiting = self.awaiting.mark()
        last_offset = -1
        last_ingress = -1
        processed = 0
        admitted: list[Admitted] = []
        end = self.ingress_end() if ingress and self.backpressure is not None else -1
        for message in ingress:
            offset = _offset(message)
            if offset >= self.next_ingress_offset:
                last_ingress = offset
                self._admit(context, message, offset, admitted, end - offset - 1)
        copies = self._append_copies(admitted) if admitted else []
        for message in messages:
            offset = _offset(message)
            if offset < self.next_offset:
                continue
            last_offset = offset
            headers = message.headers()
            if not is_pending_command(headers):
                continue
            if self.skipped and offset in self.skipped:
                _LOG.warning(
                    "partition %d: skipping the command at offset %d (PARTITA_SKIP_RECORDS)",
                    self.partition,
                    offset,
                )
                continue
            try:
                record = self.codec.decode(
                    message.value(),  # type: ignore[arg-type]  # None is a typed DecodeError
                    topic=self.topic,
                    partition=self.partition,
                    offset=offset,
                )
            except (DecodeError, RecordTooLargeError) as exc:
                self._reject_undecodable(context, offset, headers, exc)
                continue
            if record.record_type is not RecordType.COMMAND:
                continue
            target = self._route(record)
            if target != self.partition:
                forward_headers: Headers = (
                    list(headers.items()) if isinstance(headers, dict) else list(headers or [])
                )
                output.forwarded.append((target, message.value() or b"", forward_headers))
                self.metrics.forwarded += 1
                continue
            processed += self._process_command(context, record, reply_to(headers))
        for record, reply in copies:
            processed += self._process_command(context, record, reply)
        for record in due:
            processed += self._process_command(context, record, None)
        if push_types and self.job_push is not None:
            self._push_waiting_jobs(context, push_types)
        if last_offset < 0 and last_ingress < 0 and not len(output):
            return processed
        self._commit(output, last_offset, last_ingress)
        return processed

    def _admit(
        self,
        context: ProcessingContext,
        message: Message,
        offset: int,
        admitted: list[Admitted],
        lag: int,
    ) -> None:
        """Admit one ingress record: into `admitted` when it is for this partition, to its
        partition of the log when it is for another, or refused with a rejection (also when
        it would start new work while `lag` commands wait behind it, over the limit)."""
        self.metrics.ingress += 1
        verdict = admit(
            self.codec,
            message,
            offset,
            topic=self.ingress_topic,
            partition=self.partition,
            partition_count=self.partition_count,
        )
        if (
            self.backpressure is not None
            and isinstance(verdict, Admitted)
            and applies_to(verdict.record.value_type, verdict.record.intent)
        ):
            overload = self.backpressure.check(self.partition, lag)
            if overload is not None:
                self.metrics.backpressured += 1
                verdict = Refused(
                    verdict.record, verdict.reply, RejectionType.RESOURCE_EXHAUSTED, overload
                )
        if not isinstance(verdict, Admitted):
            self.metrics.refused += 1
            self.metrics.rejections += 1
            context.begin(verdict.placeholder, verdict.reply, int(self.clock() * 1000))
            context.reject(verdict.rejection_type, verdict.reason)
            if verdict.rejection_type is not RejectionType.RESOURCE_EXHAUSTED:
                _LOG.warning("partition %d: refused: %s", self.partition, verdict.reason)
            return
        target = self._route(verdict.record)
        if target == self.partition:
            admitted.append(verdict)
            return
        forward = replace(
            verdict.record, partition_id=target + 1, timestamp=int(self.clock() * 1000)
        )
        headers: Headers = list(record_headers(forward))
        if verdict.reply is not None:
            headers.extend(verdict.reply.headers())
        context.output.forwarded.append((target, self.codec.encode(forward), headers))
        self.metrics.forwarded += 1

    def _append_copies(self, admitted: list[Admitted]) -> list[tuple[Record, ReplyTo | None]]:
        """Open the batch's transaction and append the admitted client commands to this
        partition of the log; returns them with their log positions, once Kafka assigned
        them. The copies carry `INGRESS_OFFSET`, so the log consumer skips them later."""
        positions: list[int] = []

        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is None:
                positions.append(_offset(message))

        now = int(self.clock() * 1000)
        records = [
            replace(item.record, partition_id=self.partition + 1, timestamp=now)
            for item in admitted
        ]
        try:
            self._begin()
            for item, record in zip(admitted, records, strict=True):
                self.producer.produce(
                    self.topic,
                    self.codec.encode(record),
                    partition=self.partition,
                    headers=[*record_headers(record), (INGRESS_OFFSET, str(item.offset))],
                    on_delivery=on_delivery,
                )
            self.producer.flush(_TXN_TIMEOUT_S)
        except KafkaException as exc:
            self._on_kafka_error(exc)
            raise AbortedBatchError(str(exc)) from None
        if len(positions) != len(admitted):
            self._rollback()
            self._abort("client commands could not be appended to the log")
            raise AbortedBatchError("client commands could not be appended to the log")
        positions.sort()  # one partition, one producer: offsets follow the produce order
        return [
            (record.with_position(position), item.reply)
            for item, record, position in zip(admitted, records, positions, strict=True)
        ]

    def _process_command(
        self,
        context: ProcessingContext,
        record: Record,
        reply: ReplyTo | None,
    ) -> int:
        """Process `record` and, depth-first, the follow-up commands it causes, up to
        `max_commands_in_batch` commands; further follow-ups go to the log as commands."""
        queue = [(record, reply)]
        processed = 0
        while queue:
            command, address = queue.pop()
            if processed >= self.max_commands_in_batch:
                context.output.records.append((self.partition, command))
                continue
            processed += 1
            context.follow_ups = []
            self._run_processor(context, command, address)
            self.metrics.follow_ups += len(context.follow_ups)
            queue.extend((follow_up, None) for follow_up in reversed(context.follow_ups))
        return processed

    def _run_processor(
        self, context: ProcessingContext, command: Record, address: ReplyTo | None
    ) -> None:
        self.metrics.commands += 1
        processor = self.engine.find_processor(command)
        context.begin(command, address, int(self.clock() * 1000))
        if processor is None:
            context.reject(
                RejectionType.INVALID_ARGUMENT,
                f"no processor for {command.value_type.name} {command.intent.name} in this engine",
            )
            self.metrics.rejections += 1
            return
        instance = getattr(command.value, "process_instance_key", -1)
        if is_banned(self.db, instance):
            context.reject(
                RejectionType.INVALID_STATE,
                f"process instance {instance} is banned after an unexpected processing error;"
                " see its ERROR event",
            )
            self.metrics.rejections += 1
            return
        for attempt in (1, 2):
            mark = (*context.output.mark(), self.awaiting.mark())
            self.db.overlay.savepoint()
            try:
                processor(command, context)
                for hook in self.engine.after_command_hooks:
                    hook(command, context)
            except RejectionError as rejection:
                self._undo(context, mark, command, address)
                context.reject(rejection.rejection_type, rejection.reason)
                self.metrics.rejections += 1
                return
            except Exception as exc:
                self._undo(context, mark, command, address)
                if attempt == 1:
                    continue
                self._write_error(context, command, instance, exc)
                return
            else:
                oversized = oversized_records(self.codec, context.output, mark[:4])
                if oversized is not None:
                    self._undo(context, mark, command, address)
                    context.reject(RejectionType.EXCEEDED_BATCH_RECORD_SIZE, oversized)
                    self.metrics.rejections += 1
                    return
                self.db.overlay.release_savepoint()
                return

    def _push_waiting_jobs(self, context: ProcessingContext, job_types: Sequence[str]) -> None:
        """Push jobs that were activatable before their type's job topic existed."""
        trigger = Record(
            RecordType.COMMAND, ValueType.JOB_BATCH, JobBatchIntent.ACTIVATE, JobBatchValue()
        )
        context.begin(trigger, None, int(self.clock() * 1000))
        self.db.overlay.savepoint()
        for job_type in job_types:
            job_push.push(context, job_type)
        self.db.overlay.release_savepoint()

    def _undo(
        self,
        context: ProcessingContext,
        mark: tuple[int, int, int, int, int],
        command: Record,
        address: ReplyTo | None,
    ) -> None:
        """Forget everything the failed attempt did: state, outputs, follow-ups, reply,
        awaited results."""
        self.db.overlay.rollback_to_savepoint()
        context.output.truncate(mark[:4])
        self.awaiting.rollback(mark[4])
        context.follow_ups = []
        context.begin(command, address, context.now)

    def _write_error(
        self, context: ProcessingContext, command: Record, instance: int, exc: Exception
    ) -> None:
        self.metrics.errors += 1
        _LOG.error(
            "partition %d: %s %s at offset %d failed twice; writing ERROR and banning instance %d",
            self.partition,
            command.value_type.name,
            command.intent.name,
            command.position,
            instance,
            exc_info=exc,
        )
        value = ErrorValue(
            exception_message=f"{type(exc).__name__}: {exc}",
            stacktrace="".join(traceback.format_exception(exc))[-4000:],
            error_event_position=command.position,
            process_instance_key=instance,
        )
        context.append_event(ErrorIntent.CREATED, value, command.key)
        context.reject(
            RejectionType.PROCESSING_ERROR,
            f"unexpected error processing {command.value_type.name} {command.intent.name}:"
            f" {type(exc).__name__}: {exc}",
        )

    def _reject_undecodable(
        self,
        context: ProcessingContext,
        offset: int,
        headers: Any,
        exc: ProtocolError,
    ) -> None:
        """Answer a record that is not a valid command with a rejection naming its offset.

        The rejection repeats the value type and intent from the headers when they are
        valid, so a producer's reply listener can match it; otherwise it is an ERROR value.
        """
        self.metrics.undecodable += 1
        self.metrics.rejections += 1
        value_type_name = (header(headers, VALUE_TYPE) or b"").decode("ascii", "replace")
        intent_name = (header(headers, INTENT) or b"").decode("ascii", "replace")
        value_type = ValueType.__members__.get(value_type_name)
        intent = intent_for(value_type, intent_name) if value_type else None
        reason = (
            f"record at offset {offset} of {self.topic}/{self.partition} is not a valid"
            f" command: {exc.reason}"
        )
        if value_type is not None and intent is not None:
            placeholder = Record(
                RecordType.COMMAND, value_type, intent, VALUE_CLASSES[value_type](), position=offset
            )
        else:
            placeholder = Record(
                RecordType.COMMAND,
                ValueType.ERROR,
                ErrorIntent.CREATED,
                ErrorValue(exception_message=reason, error_event_position=offset),
                position=offset,
            )
        context.begin(placeholder, reply_to(headers), int(self.clock() * 1000))
        context.reject(RejectionType.INVALID_ARGUMENT, reason)
        _LOG.warning("partition %d: %s", self.partition, reason)

    # -- the transaction ----------------------------------------------------------------------

    def _begin(self) -> None:
        if not self._in_transaction:
            self.producer.begin_transaction()
            self._in_transaction = True

    def _commit(self, output: ProcessingOutput, last_offset: int, last_ingress: int) -> None:
        producer = self.producer
        events: list[int] = []

        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is None and message.partition() == self.partition:
                events.append(_offset(message))

        # Offsets grow in produce order within a partition, so the delivery report of the
        # last own event is enough to know the batch's last applied position.
        own = self.partition
        last_event = -1
        for index, (partition, record) in enumerate(output.records):
            if partition == own and record.record_type is RecordType.EVENT:
                last_event = index
        encode = self.codec.encode
        try:
            self._begin()
            for index, (partition, record) in enumerate(output.records):
                producer.produce(
                    self.topic,
                    encode(record),
                    # a command's key as the Kafka key: replay raises the key generator past
                    # the keys of spilled follow-ups without decoding them
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
            self._produce_replies(output.replies)
            offsets = []
            if last_offset >= 0:
                offsets.append(TopicPartition(self.topic, self.partition, last_offset + 1))
            if last_ingress >= 0:
                offsets.append(
                    TopicPartition(
                        self.ingress_topic,
                        self.partition,
                        last_ingress + 1,
                        metadata=counters.encode(self.metrics.boundary_counters()),
                    )
                )
            if offsets:
                producer.send_offsets_to_transaction(offsets, self.group_metadata(), _TXN_TIMEOUT_S)
            self._commit_transaction()
            producer.poll(0)  # serve delivery reports: our events' offsets
        except KafkaException as exc:
            self._on_kafka_error(exc)
            raise AbortedBatchError(str(exc)) from None
        self.awaiting.commit()
        self.metrics.batches += 1
        self.metrics.last_batch_committed = time.monotonic()
        if events:
            self._last_event_offset = max(self._last_event_offset, *events)
        applied = self._last_event_offset if self._last_event_offset >= 0 else None
        self.db.commit(
            last_processed_position=last_offset if last_offset >= 0 else None,
            last_applied_position=applied,
            last_ingress_position=last_ingress if last_ingress >= 0 else None,
        )
        if last_offset >= 0:
            self.next_offset = last_offset + 1
        if last_ingress >= 0:
            self.next_ingress_offset = last_ingress + 1

    def _produce_replies(self, replies: list[tuple[ReplyTo, Record]]) -> None:
        """Write the batch's replies that may be written; drop and count the others, so a
        hostile or mistaken reply address never aborts or stalls the batch."""
        for address, record in replies:
            refusal = self.replies.refusal(address)
            if refusal is not None:
                self.replies.drop(self.partition, address, refusal)
                self.metrics.replies_dropped += 1
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
        deadline = time.monotonic() + 2 * _TXN_TIMEOUT_S
        while True:
            try:
                self.producer.commit_transaction(_TXN_TIMEOUT_S)
                self._in_transaction = False
                return
            except KafkaException as exc:
                if exc.args[0].retriable() and time.monotonic() < deadline:
                    continue
                raise

    def _rollback(self) -> None:
        """Forget the batch's changes to state and to the map of awaited results."""
        self.db.rollback()
        self.awaiting.rollback(self._batch_awaiting)

    def _on_kafka_error(self, exc: KafkaException) -> None:
        error: KafkaError = exc.args[0]
        self._rollback()
        if error.fatal() or error.code() in (
            KafkaError._FENCED,
            KafkaError.PRODUCER_FENCED,
            KafkaError.INVALID_PRODUCER_EPOCH,
        ):
            raise TaskFencedError(f"partition {self.partition}: {error.str()}") from None
        if error.txn_requires_abort():
            self._abort(error.str())
            return
        raise TaskFencedError(f"partition {self.partition}: {error.str()}") from None

    def _abort(self, reason: str) -> None:
        """Abort the open transaction and rewind both inputs to what is committed."""
        self.metrics.aborted += 1
        _LOG.warning("partition %d: aborting batch: %s", self.partition, reason)
        try:
            self.producer.abort_transaction(_TXN_TIMEOUT_S)
        except KafkaException as abort_error:
            raise TaskFencedError(
                f"partition {self.partition}: abort failed: {abort_error.args[0].str()}"
            ) from None
        self._in_transaction = False
        self.rewind(self.next_offset, self.next_ingress_offset)
