"""A partition task: the unit of ownership of one log partition.

Lifecycle: OPENING (open the state store, create the transactional producer and fence any
previous owner with `init_transactions`) -> REPLAYING (apply events up to the end of the log)
-> PROCESSING (batches of commands) -> CLOSED. A record replay cannot apply puts the task in
STOPPED instead of PROCESSING: it keeps the partition (no other worker crash-loops on it),
processes nothing, and marks the partition stopped in the engine group's committed offsets,
where `partita status` shows it (docs/operations.md says how to get past the record). A task
that loses its partition (revoked, fenced, fatal error) goes to CLOSED and its uncommitted
overlay is discarded; the state store keeps the last committed batch, which the next owner on
this machine continues from.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from partita.log import clients
from partita.log.security import KafkaAccess
from partita.processing import Engine, ProcessingOutput
from partita.processing.context import DEFAULT_MESSAGE_TTL_MS
from partita.processing.dispatch import TopicHook
from partita.protocol.codec import RecordCodec
from partita.protocol.records import Record
from partita.snapshots import Manifest, SnapshotSettings, Snapshotter
from partita.state import PartitionDb
from partita.state.db import LAST_INGRESS_POSITION, LAST_PROCESSED_POSITION
from partita.state.migrate import open_current
from partita.stream import counters
from partita.stream.errors import AbortedBatchError, UnappliableRecordError
from partita.stream.partition.stopped import commit_offset, commit_stopped
from partita.stream.partition.stopped import decode as decode_stopped
from partita.stream.processing.backpressure import Backpressure
from partita.stream.processing.offset_commits import OFFSETS_COMMIT_S
from partita.stream.processing.replies import ReplyRoutes
from partita.stream.processing.state_machine import ProcessingStateMachine
from partita.stream.replay.restorer import Mode, Restorer
from partita.stream.replay.state_machine import ReplayResult
from partita.stream.skips import NO_SKIPS, SkipList

_LOG = logging.getLogger("partita.task")
_LOCK_WAIT_S = 120.0
"""How long a new owner waits for the previous one on this machine to close the store: a
process the group dropped notices at its next poll, after a replay that may take minutes."""


class TaskState(enum.Enum):
    CREATED = "created"
    OPENING = "opening"
    REPLAYING = "replaying"
    PROCESSING = "processing"
    STOPPED = "stopped"
    CLOSED = "closed"


_TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    TaskState.CREATED: frozenset({TaskState.OPENING, TaskState.CLOSED}),
    TaskState.OPENING: frozenset({TaskState.REPLAYING, TaskState.CLOSED}),
    TaskState.REPLAYING: frozenset({TaskState.PROCESSING, TaskState.STOPPED, TaskState.CLOSED}),
    TaskState.PROCESSING: frozenset({TaskState.STOPPED, TaskState.CLOSED}),
    TaskState.STOPPED: frozenset({TaskState.CLOSED}),
    TaskState.CLOSED: frozenset(),
}
"""Where each state may go next; any other move is a bug (IllegalTaskStateError)."""


class IllegalTaskStateError(RuntimeError):
    """A task was asked to move between states its lifecycle does not connect."""


def state_dir(home: Path, namespace: str, partition: int) -> Path:
    return home / "state" / namespace / f"partition-{partition}"


class PartitionTask:
    def __init__(
        self,
        *,
        access: KafkaAccess,
        namespace: str,
        topic: str,
        partition: int,
        partition_count: int,
        home: Path,
        engine: Engine,
        codec: RecordCodec,
        consumer: Consumer,
        max_commands_in_batch: int = 100,
        clock: Callable[[], float] = time.time,
        message_ttl_ms: int = DEFAULT_MESSAGE_TTL_MS,
        offsets_commit_s: float = OFFSETS_COMMIT_S,
        snapshots: SnapshotSettings | None = None,
        ingress_topic: str = "",
        replies: ReplyRoutes | None = None,
        backpressure: Backpressure | None = None,
        skips: SkipList = NO_SKIPS,
    ) -> None:
        self.access = access
        self.namespace = namespace
        self.topic = topic
        self.partition = partition
        self.partition_count = partition_count
        self.home = home
        self.engine = engine
        self.codec = codec
        self.consumer = consumer
        self.max_commands_in_batch = max_commands_in_batch
        self.clock = clock
        self.message_ttl_ms = message_ttl_ms
        self.offsets_commit_s = offsets_commit_s
        self.snapshot_settings = snapshots
        self.ingress_topic = ingress_topic or f"{namespace}.commands"
        self.replies = replies
        self.backpressure = backpressure
        self.snapshotter: Snapshotter | None = None
        self.restored: Manifest | None = None
        self.state = TaskState.CREATED
        self.db: PartitionDb | None = None
        self.producer: Any = None
        self.processing: ProcessingStateMachine | None = None
        self.replay: ReplayResult | None = None
        self.stopped: UnappliableRecordError | None = None
        self.skips = skips
        self._resume = (0, 0)
        self._marked_stopped = False
        self._counters: dict[str, int] = {}
        self._next_due_check = 0.0
        self._started = time.monotonic()

    def __repr__(self) -> str:
        return f"PartitionTask({self.topic}/{self.partition}, {self.state.value})"

    def _move(self, state: TaskState) -> None:
        if state not in _TRANSITIONS[self.state]:
            raise IllegalTaskStateError(
                f"partition {self.partition}: a task cannot go from {self.state.name} to"
                f" {state.name}"
            )
        self.state = state

    def fence(self) -> None:
        """OPENING: open the store and fence the previous owner (`init_transactions` aborts
        its open batch and makes its producer unusable). Safe to run for several tasks in
        parallel threads."""
        self._started = time.monotonic()
        self._move(TaskState.OPENING)
        self.producer = clients.transactional_producer(self.access, self.namespace, self.partition)
        self.producer.init_transactions(60)  # first: a fenced previous owner lets go sooner
        self.db = self._open_store()

    def _open_store(self) -> PartitionDb:
        """The partition's store, waiting while a previous owner on this machine (another
        process, dropped by the group but not yet aware of it) still holds its lock."""
        path = state_dir(self.home, self.namespace, self.partition)

        def waiting(left: float) -> None:
            _LOG.warning(
                "partition %d: its store %s is still locked by its previous owner on this"
                " machine; waiting up to %.0f s for it to let go",
                self.partition,
                path,
                left,
            )

        return open_current(path, lock_wait_s=_LOCK_WAIT_S, waiting=waiting)

    def open(self) -> None:
        """OPENING -> REPLAYING -> PROCESSING. Blocks until the state is current."""
        if self.state is TaskState.CREATED:
            self.fence()
        assert self.db is not None
        self._move(TaskState.REPLAYING)
        restore = clients.restore_consumer(self.access, self.namespace, self.partition)
        restorer = Restorer(
            self.access,
            self.namespace,
            self.topic,
            self.partition,
            self.engine,
            self.codec,
            Mode.ACTIVE,
            self.skips,
        )
        path = state_dir(self.home, self.namespace, self.partition)
        db, self.db = self.db, None
        try:
            opened, keys, self.replay = restorer.replay(path, restore, db=db)
            self.db, self.restored = opened.db, opened.manifest
        except UnappliableRecordError as error:
            assert restorer.opened is not None
            self.db = restorer.opened.db  # still open, its last replay chunk uncommitted
            self._stop(error)
            return
        finally:
            restore.close()
        assert self.replay is not None
        next_offset, next_ingress = self._resume = self._resume_offsets()
        self.processing = ProcessingStateMachine(
            topic=self.topic,
            partition=self.partition,
            partition_count=self.partition_count,
            engine=self.engine,
            codec=self.codec,
            db=self.db,
            keys=keys,
            producer=self.producer,
            group_metadata=self.consumer.consumer_group_metadata,
            rewind=self._rewind,
            next_offset=next_offset,
            ingress_topic=self.ingress_topic,
            next_ingress_offset=next_ingress,
            replies=self.replies,
            backpressure=self.backpressure,
            ingress_end=self._ingress_end,
            max_commands_in_batch=self.max_commands_in_batch,
            clock=self.clock,
            message_ttl_ms=self.message_ttl_ms,
            offsets_commit_s=self.offsets_commit_s,
            skipped=self.skips.offsets(self.partition),
            skip_log=self._skip_log,
        )
        for name, value in self._counters.items():  # keep counting where the last owner was
            setattr(self.processing.metrics, name, value)
        if self._marked_stopped:
            self._clear_stopped_marker()
        if self.snapshot_settings is not None:
            self.snapshotter = Snapshotter(
                access=self.access,
                namespace=self.namespace,
                topic=self.topic,
                partition=self.partition,
                work_dir=self.home / "snapshots" / self.namespace / f"partition-{self.partition}",
                settings=self.snapshot_settings,
            )
        self._move(TaskState.PROCESSING)
        _LOG.info(
            "partition %d: processing from log offset %d and ingress offset %d (replayed %d"
            " events, opened in %.2f s)",
            self.partition,
            next_offset,
            next_ingress,
            self.replay.events,
            time.monotonic() - self._started,
        )

    def _stop(self, error: UnappliableRecordError) -> None:
        """REPLAYING -> STOPPED: keep the partition, process nothing, say so where operators
        look (the log, and the committed offset's metadata that `partita status` reads)."""
        assert self.db is not None
        self.db.rollback()
        self._resume = self._resume_offsets()
        self.stopped = error
        self._move(TaskState.STOPPED)
        _LOG.error("partition %d: STOPPED: %s", self.partition, error)
        try:
            commit_stopped(
                self.producer,
                self.consumer.consumer_group_metadata(),
                topic=self.topic,
                partition=self.partition,
                offset=self._resume[0],
                error=error,
            )
        except KafkaException as exc:
            _LOG.warning(
                "partition %d: could not mark the partition stopped in the group's offsets: %s",
                self.partition,
                exc.args[0].str(),
            )

    def _clear_stopped_marker(self) -> None:
        """A partition that processes again is no longer STOPPED: commit its offset without
        the marker (processing's own commits would, but only once a record arrives)."""
        commit_offset(
            self.producer,
            self.consumer.consumer_group_metadata(),
            TopicPartition(self.topic, self.partition, self._resume[0]),
        )
        _LOG.info("partition %d: processing again; the STOPPED mark is cleared", self.partition)

    def _resume_offsets(self) -> tuple[int, int]:
        """Where processing resumes on the log and on ingress: past both the group's committed
        offset and the store's last processed position. They differ when the group's offsets
        expired (`offsets.retention.minutes`) or an operator reset the group; the store, whose
        positions are written only after their transaction committed, never runs ahead of
        what was really processed, so the larger of the two is always safe."""
        assert self.db is not None
        committed = self.consumer.committed(
            [
                TopicPartition(self.topic, self.partition),
                TopicPartition(self.ingress_topic, self.partition),
            ],
            timeout=30,
        )
        self._marked_stopped = decode_stopped(committed[0].metadata) is not None
        self._counters = counters.decode(committed[1].metadata)
        resumed = []
        for tp, position in zip(
            committed, (LAST_PROCESSED_POSITION, LAST_INGRESS_POSITION), strict=True
        ):
            group = tp.offset if tp.offset >= 0 else -1
            store = self.db.position(position) + 1 if self.db.position(position) >= 0 else -1
            if group < store:  # ahead of the group is normal (a restored snapshot is older)
                _LOG.warning(
                    "partition %d: the engine group's committed offset on %s is %s but the"
                    " state store processed up to %d; resuming at %d (group offsets expire after"
                    " offsets.retention.minutes, or the group was reset)",
                    self.partition,
                    tp.topic,
                    "missing" if group < 0 else group,
                    store - 1,
                    max(group, store),
                )
            resumed.append(max(group, store, 0))
        return resumed[0], resumed[1]

    def maybe_snapshot(self) -> None:
        """Between batches: start a snapshot when one is due; after one uploaded, truncate
        what it made unnecessary, as the proven owner."""
        if self.snapshotter is None or self.db is None or self.processing is None:
            return
        self.snapshotter.poll()
        if self.snapshotter.pending is not None:
            self._truncate_as_owner()
        if self.snapshotter.due(self.db.position(LAST_PROCESSED_POSITION)):
            self.snapshotter.take(self.db)

    def _truncate_as_owner(self) -> None:
        """Truncate only once a transaction committed after the upload: a fenced zombie's
        commit fails, so it never deletes records. Without a batch since, an empty
        transaction (the same committed offset) proves ownership."""
        assert self.snapshotter is not None and self.processing is not None
        if self.processing.metrics.last_batch_committed <= self.snapshotter.pending_since:
            try:
                self.processing.transaction.commit(
                    ProcessingOutput(),
                    [TopicPartition(self.topic, self.partition, self.processing.next_offset)],
                )
            except AbortedBatchError:
                return  # tried again after the next batch
            self.processing.metrics.last_batch_committed = time.monotonic()
        self.snapshotter.truncate()

    def _ingress_end(self) -> int:
        """The end of this partition's ingress as the consumer last fetched it (no request)."""
        tp = TopicPartition(self.ingress_topic, self.partition)
        _, high = self.consumer.get_watermark_offsets(tp, cached=True)
        return int(high)

    def _skip_log(self, offset: int) -> None:
        self.consumer.seek(TopicPartition(self.topic, self.partition, offset))

    def _rewind(self, offset: int, ingress_offset: int) -> None:
        self._skip_log(offset)
        self.consumer.seek(TopicPartition(self.ingress_topic, self.partition, ingress_offset))

    @property
    def next_offset(self) -> int:
        """Where the group consumer must start reading this partition."""
        return self._resume[0] if self.processing is None else self.processing.next_offset

    @property
    def next_ingress_offset(self) -> int:
        """Where the group consumer must start reading this partition of ingress."""
        if self.processing is None:
            return self._resume[1]
        return self.processing.next_ingress_offset

    def process(self, messages: Sequence[Message], ingress: Sequence[Message] = ()) -> int:
        """Process a consumed batch; the commands that fell due join it (one transaction)."""
        assert self.processing is not None
        return self.processing.process(messages, ingress=ingress, due_check=self._due)

    def check_due_dates(self, now: float) -> int:
        """For a partition that got no records: process what fell due, in a batch of its own."""
        assert self.processing is not None
        due = self._due(now)
        return self.processing.process((), due=due) if due else 0

    def commit_read_only(self, *, wait: bool = True) -> None:
        """Commit the offsets of read-only batches that waited long enough for a transaction
        to ride on (`wait` False: at once); see `ProcessingStateMachine.commit_read_only`."""
        assert self.processing is not None
        self.processing.commit_read_only(wait=wait)

    def _due(self, now: float | None = None) -> list[Record]:
        """The commands the due-date checkers find, at most every 100 ms (at once again after
        a checker returned its cap, MAX_DUE_COMMANDS: more may be due). Read through the
        batch's overlay, so what the batch just did (a job completed, a timer cancelled) is
        seen."""
        now = time.time() if now is None else now
        if now < self._next_due_check or not self.engine.due_date_checkers:
            return []
        self._next_due_check = now + 0.1
        assert self.db is not None
        due: list[Record] = []
        for checker in self.engine.due_date_checkers:
            found = list(checker(self.db, int(now * 1000)))
            if len(found) >= self.engine.MAX_DUE_COMMANDS:
                self._next_due_check = now
            due.extend(found)
        return due

    def catch_up(self, hook: TopicHook, names: Sequence[str]) -> None:
        """A batch of `hook`'s work that waited for the topics `names`, which exist now."""
        assert self.processing is not None
        self.processing.process((), catch_up=[(hook, names)])

    def close(self) -> None:
        """Discard uncommitted changes and release the store and the producer."""
        if self.state is TaskState.CLOSED:
            return
        self._move(TaskState.CLOSED)
        if self.snapshotter is not None:
            self.snapshotter.close()
        if self.db is not None:
            self.db.rollback()
            self.db.close()
        if self.producer is not None:
            with contextlib.suppress(KafkaException), clients.fatal_errors():
                self.producer.flush(5)
        _LOG.info("partition %d: closed", self.partition)
