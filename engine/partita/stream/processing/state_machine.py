"""The processing state machine of one partition.

For each batch of consumed records of one partition: engine-written commands from the log,
client commands from the ingress topic `<ns>.commands` (each in offset order):

1. ADMIT client commands (`partita.stream.processing.admission`): a record that is not a valid
   command a
   client may send is rejected, naming its ingress offset, and never reaches the log. An
   admitted command for another partition is written to that partition of the log (it is
   processed there); one for this partition is APPENDED to the log at once, in the batch's
   transaction, so the command is on the log before its events and its log offset is the
   events' `sourceRecordPosition` (command sourcing, as in Zeebe). The batch does not wait
   for the copies: it processes them at the positions they are predicted to land at (checked
   before the commit; a miss aborts the batch and processes it again), or at provisional
   positions while they travel, put right once they are delivered
   (`partita.stream.processing.transaction`, `partita.stream.processing.provisional`).
2. SKIP log events, rejections and already processed copies of client commands by header,
   without decoding; skip offsets already processed. DECODE the log's commands; an
   undecodable one is answered by a rejection naming its offset.
3. FORWARD a log command that belongs to another partition, unchanged, to that partition
   (steps 2 and 3: `partita.stream.processing.log_commands`).
4. PROCESS each command through its processor inside a savepoint, then its follow-up commands
   depth-first, up to `max_commands_in_batch` of them; follow-ups beyond it are written to
   the log as commands. A rejection or an exception rolls back only that command
   (`partita.stream.processing.commands`).
5. COMMIT one Kafka transaction with every output, then write the state overlay and positions
   to RocksDB in one batch. The batch's processed log and ingress positions ride on its last
   record on this partition (PROCESSED header); the offsets themselves go to the engine group
   in the transaction only now and then (`partita.stream.processing.offset_commits`). Replay and
   standbys take the positions from the headers, so a new owner resumes exactly after the
   last committed batch however far the group's offsets trail. Replies go only to allow-listed
   topics (`partita.stream.processing.replies`); one that cannot be written is dropped and counted.
   A READ-ONLY batch (log records only, all skipped: mostly the engine reading back its own
   events) writes nothing and changes no state, so it commits nothing either: its offsets ride
   on the next batch's transaction, or on one of their own once `READ_ONLY_COMMIT_S` passed
   without one (`commit_read_only`). Reading them again after a crash changes nothing. Once
   every offset from where the log consumer stands to the batch's last record is known to be
   its own (`partita.stream.processing.own_records`), the consumer is moved past them instead:
   nothing to read back.

Kafka errors: retriable -> retry; abortable -> abort, drop the overlay, rewind to the committed
offset; fatal or fenced -> TaskFencedError, the task is dropped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaException, Message, Producer, TopicPartition

from partita.processing import Engine, ProcessingContext, ProcessingOutput
from partita.processing.awaiting import AwaitedResults
from partita.processing.context import DEFAULT_MESSAGE_TTL_MS
from partita.processing.dispatch import TopicHook
from partita.protocol.codec import RecordCodec
from partita.protocol.records import Record
from partita.protocol.routing import partition_for_command
from partita.state import KeyGenerator, PartitionDb
from partita.stream import counters
from partita.stream.metrics import ProcessingMetrics
from partita.stream.processing.admission import Admission
from partita.stream.processing.backpressure import Backpressure
from partita.stream.processing.commands import CommandRunner
from partita.stream.processing.log_commands import LogCommands
from partita.stream.processing.offset_commits import OFFSETS_COMMIT_S, OffsetCommits, writes_on
from partita.stream.processing.provisional import provisional, settle
from partita.stream.processing.replies import ReplyRoutes
from partita.stream.processing.transaction import BatchTransaction

_LOG = logging.getLogger("partita.processing")
_TXN_TIMEOUT_S = 30.0
READ_ONLY_COMMIT_S = 0.1
"""The longest the offsets of read-only batches wait for a transaction to ride on, as Kafka
Streams' `commit.interval.ms` under exactly-once: what `partita status` shows as lag."""


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
        message_ttl_ms: int = DEFAULT_MESSAGE_TTL_MS,
        skipped: frozenset[int] = frozenset(),
        offsets_commit_s: float = OFFSETS_COMMIT_S,
        skip_log: Callable[[int], None] | None = None,
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
        self.skip_log = skip_log
        """Moves the log consumer of this partition to an offset (Kafka errors raised): past
        the batch's own records, which then are never read back."""
        self.next_offset = next_offset
        """The first log offset not yet processed: the group's committed offset."""
        self.ingress_topic = ingress_topic
        self.next_ingress_offset = next_ingress_offset
        """The first ingress offset not yet processed."""
        self.replies = replies if replies is not None else ReplyRoutes(frozenset())
        self.metrics = ProcessingMetrics()
        self.admission = Admission(
            codec,
            topic=ingress_topic,
            partition=partition,
            partition_count=partition_count,
            route=self._route,
            metrics=self.metrics,
            backpressure=backpressure
            if backpressure is not None and backpressure.enabled
            else None,
        )
        self.ingress_end = ingress_end
        """The end of this partition's ingress (as last fetched; -1 when unknown)."""
        self.clock = clock
        self.message_ttl_ms = message_ttl_ms
        self._last_event_offset = -1
        self.offset_commits = OffsetCommits(offsets_commit_s)
        """When the offsets go to the engine group (`partita.stream.processing.offset_commits`)."""
        self.log = LogCommands(
            codec, topic, partition, self._route, self.metrics, clock, skipped=skipped
        )
        """The log's records of a batch: what to process
        (`partita.stream.processing.log_commands`)."""
        self._read_only_since: float | None = None
        """When the first read-only batch since the last commit was read (monotonic)."""
        self.awaiting = AwaitedResults()
        self._batch_awaiting = 0
        self.commands = CommandRunner(
            engine, db, codec, partition, self.metrics, self.awaiting, clock, max_commands_in_batch
        )
        self.transaction = BatchTransaction(
            producer,
            topic,
            partition,
            codec,
            self.replies,
            group_metadata,
            forget=self._forget,
            rewind=self._rewind,
            metrics=self.metrics,
        )

    @property
    def max_commands_in_batch(self) -> int:
        """A command and its follow-ups processed in one batch, at most."""
        return self.commands.max_commands_in_batch

    @max_commands_in_batch.setter
    def max_commands_in_batch(self, value: int) -> None:
        self.commands.max_commands_in_batch = value

    def _route(self, record: Record) -> int:
        return partition_for_command(record, self.partition_count, self.partition)

    # -- one batch ----------------------------------------------------------------------------

    def process(
        self,
        messages: Sequence[Message],
        *,
        ingress: Sequence[Message] = (),
        due: Sequence[Record] = (),
        due_check: Callable[[], Sequence[Record]] | None = None,
        catch_up: Sequence[tuple[TopicHook, Sequence[str]]] = (),
    ) -> int:
        """Process one batch (log records and ingress records of this partition, and due-date
        commands: `due`, and those `due_check` finds once the batch's commands are processed,
        seeing their changes), then the catch-up of topic hooks whose topics just appeared
        (`catch_up`: hook and topic names). Returns the number of commands processed."""
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
        for hook in self.engine.topic_hooks:
            hook.bind(context)
        context.message_ttl_ms = self.message_ttl_ms
        self._batch_awaiting = self.awaiting.mark()
        processed = 0
        copies, last_ingress = (
            self.admission.take(
                context,
                ingress,
                self.next_ingress_offset,
                self.ingress_end() if self.admission.backpressure is not None else -1,
                int(self.clock() * 1000),
                position=self._copies_start(),
            )
            if ingress
            else ([], -1)
        )
        if copies:
            self.transaction.send_copies(copies)
        pending, last_offset = self.log.pending(messages, self.next_offset)
        if pending:
            for record, reply in self.log.commands(context, pending):
                processed += self.commands.process(context, record, reply)
        for copy in copies:
            processed += self.commands.process(context, copy.record, copy.reply)
        if due_check is not None and (last_offset >= 0 or copies):
            due = [*due, *due_check()]
        for record in due:
            processed += self.commands.process(context, record, None)
        for hook, names in catch_up:
            self._catch_up(context, hook, names)
        if last_offset < 0 and last_ingress < 0 and not len(output):
            return processed
        if last_ingress < 0 and not len(output) and not len(self.db.overlay):
            self.next_offset = last_offset + 1  # read-only: committed with what comes next
            if self._read_only_since is None:
                self._read_only_since = time.monotonic()
            return processed
        self._commit(output, last_offset, last_ingress, copies=bool(copies))
        return processed

    def commit_read_only(self, *, now: float | None = None, wait: bool = True) -> bool:
        """Commit the offsets of the read-only batches since the last commit in a transaction
        of their own, once they waited `READ_ONLY_COMMIT_S`, and offsets that trail the
        committed batches (their positions rode on the log) once they trailed
        `offsets_commit_s` (`wait` False: at once, as a graceful stop does). True when it
        committed."""
        since, trailing = self._read_only_since, self.offset_commits
        if since is None and trailing.behind_since is None:
            return False
        now = time.monotonic() if now is None else now
        due = (since is not None and now - since >= READ_ONLY_COMMIT_S) or (
            trailing.trailed_long_enough(now)
        )
        if wait and not due:
            return False
        self._commit(ProcessingOutput(), -1, -1, copies=False)
        return True

    def _copies_start(self) -> int:
        """The log position of the batch's first client-command copy: predicted when the
        transaction can predict it (it checks where they landed before it commits), else
        provisional (`settle` replaces it once they are delivered). The copies carry
        `INGRESS_OFFSET`, so the log consumer skips them later."""
        start = self.transaction.landing.start()
        return provisional(0) if start is None else start

    def _catch_up(self, context: ProcessingContext, hook: TopicHook, names: Sequence[str]) -> None:
        """The work a topic hook kept waiting for topics that exist now, in this batch."""
        self.db.overlay.savepoint()
        hook.catch_up(context, names, int(self.clock() * 1000))
        self.db.overlay.release_savepoint()

    # -- the transaction ----------------------------------------------------------------------

    def _commit(
        self, output: ProcessingOutput, last_offset: int, last_ingress: int, *, copies: bool
    ) -> None:
        """Commit the batch's transaction (its outputs and both offsets), then its state. The
        boundary's counters ride on the ingress offset, counted once the replies that cannot
        be written are dropped (a dropped one counts in this batch). With `copies`, the
        copies' real positions go into `output` once they are delivered. The offsets of
        read-only batches before it ride along."""
        if last_offset < 0 and self._read_only_since is not None:
            last_offset = self.next_offset - 1
        processed = max(last_offset, self.next_offset - 1)
        ingested = max(last_ingress, self.next_ingress_offset - 1)
        rides = writes_on(output, self.partition)
        now = time.monotonic()
        sent: dict[str, int] | None = None

        def offsets() -> list[TopicPartition]:
            """Both positions, when `OffsetCommits.needed` says so (called once the replies
            that cannot be written were dropped and counted)."""
            nonlocal sent
            boundary = self.metrics.boundary_counters()
            if not self.offset_commits.needed(rides, now, boundary):
                return []
            sent = boundary
            found = []
            if processed >= 0:
                found.append(TopicPartition(self.topic, self.partition, processed + 1))
            if ingested >= 0:
                metadata = counters.encode(boundary)
                found.append(
                    TopicPartition(
                        self.ingress_topic, self.partition, ingested + 1, metadata=metadata
                    )
                )
            return found

        def settle_copies() -> None:  # delivered meanwhile, most often
            settle(output, self.transaction.copy_positions())

        events = self.transaction.commit(
            output, offsets, settle_copies if copies else None, positions=(processed, ingested)
        )
        if self.transaction.landing.written is not None:
            self.log.own.add(self.transaction.landing.written, self.transaction.landing.own_from)
        self.offset_commits.committed(now, sent)
        self.awaiting.commit()
        self.metrics.batches += 1
        self.metrics.last_batch_committed = time.monotonic()
        if events:
            self._last_event_offset = max(self._last_event_offset, *events)
        applied = self._last_event_offset if self._last_event_offset >= 0 else None
        if last_offset >= 0:
            self.next_offset = last_offset + 1
        own_end = -1
        if self.skip_log is not None and self.transaction.landing.own_from is not None:
            own_end = self.log.own.end_from(self.next_offset)  # past the batch's own records?
        processed_now = max(last_offset, own_end - 1)  # the records passed over are processed
        self.db.commit(
            last_processed_position=processed_now if processed_now >= 0 else None,
            last_applied_position=applied,
            last_ingress_position=last_ingress if last_ingress >= 0 else None,
        )
        self._read_only_since = None
        if last_ingress >= 0:
            self.next_ingress_offset = last_ingress + 1
        if own_end > self.next_offset and self.skip_log is not None:
            self._skip_own(self.skip_log, own_end)

    def _skip_own(self, skip_log: Callable[[int], None], position: int) -> None:
        """Move the log consumer to `position`: reading back the records before it would only
        pass them over. A move Kafka refuses (e.g. the partition is being revoked) changes
        nothing: they are read back and passed over by offset. After a move the group's
        offsets trail (no read-back batch will carry them): they are committed once they
        trailed long enough (`commit_read_only`), or with the next batch."""
        self.next_offset = position
        try:
            skip_log(position)
        except KafkaException:
            return
        self.metrics.not_read_back += 1
        self.offset_commits.trail(time.monotonic())

    def _forget(self) -> None:
        """Forget the batch's changes to state and to the map of awaited results."""
        self.db.rollback()
        self.awaiting.rollback(self._batch_awaiting)

    def _rewind(self) -> None:
        self.rewind(self.next_offset, self.next_ingress_offset)
