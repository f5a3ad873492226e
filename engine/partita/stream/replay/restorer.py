"""Bringing a partition's state store to the log: one set of rules for every reader.

Three readers rebuild state from the log, each in its mode:

- ACTIVE: a task about to process its partition (`partita.stream.partition.task`);
- STANDBY: a warm copy of a partition this worker does not own (`partita.stream.replay.standby`);
- VERIFY: a scratch store rebuilt up to the live store's position (`partita verify-replay`).

`decide` is the rule all three follow, from the store's positions and the log's bounds:

- the store reaches the log's end or beyond: AHEAD, it belongs to another log (the topic was
  recreated) and is replaced;
- the store is empty: EMPTY, the newest snapshot, else the whole log;
- the store ends before the log starts (truncated since): BEHIND, the newest snapshot that
  reaches the log start;
- otherwise: KEEP, replay the tail.

A store that is replaced takes the newest snapshot that verifies, applied no further than the
log's end (a snapshot past it is from another log) and, with VERIFY, no further than the live
store. Without one, the store is rebuilt from the log when the log is whole (starts at 0); when
the log is truncated that is impossible and SnapshotError says what to do. VERIFY differs in one
rule, on purpose: with a whole log it ignores snapshots and replays everything, the strongest
check there is.

After `open`, `replay` applies the events after the store's last applied position, and when
the log was truncated between the check and the read (LogTruncatedError), restores once more.
"""

from __future__ import annotations

import enum
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from partita.log.security import KafkaAccess
from partita.processing import Engine
from partita.protocol.codec import RecordCodec
from partita.protocol.keys import partition_id_of_kafka
from partita.snapshots import Manifest, SnapshotError
from partita.snapshots import restore as restore_snapshot
from partita.state import KeyGenerator, PartitionDb
from partita.state.db import LAST_APPLIED_POSITION, LAST_PROCESSED_POSITION
from partita.state.migrate import open_current
from partita.stream.errors import LogTruncatedError
from partita.stream.replay.state_machine import ReplayResult, ReplayStateMachine
from partita.stream.skips import NO_SKIPS, SkipList

_LOG = logging.getLogger("partita.restore")


class Mode(enum.Enum):
    ACTIVE = "active"
    STANDBY = "standby"
    VERIFY = "verify"


class Plan(enum.Enum):
    KEEP = "keep"
    EMPTY = "empty"
    BEHIND = "behind"
    AHEAD = "ahead"


def decide(applied: int, processed: int, log_start: int, log_end: int) -> Plan:
    """The plan for a store whose last applied and processed positions are `applied` and
    `processed` (-1: none), on a log holding offsets [log_start, log_end)."""
    reached = max(applied, processed)
    if reached >= 0 and reached >= log_end:
        return Plan.AHEAD
    if reached < 0:
        return Plan.EMPTY
    if applied + 1 < log_start:
        return Plan.BEHIND
    return Plan.KEEP


@dataclass(frozen=True, slots=True)
class Opened:
    """A store ready to replay into, and how it got there."""

    db: PartitionDb
    plan: Plan
    manifest: Manifest | None
    """The snapshot it was restored from, if any."""


class Restorer:
    """Opens and replays one partition's store under the rules of the module docs."""

    def __init__(  # noqa: PLR0917 - what a restore needs, spelled out
        self,
        access: KafkaAccess,
        namespace: str,
        topic: str,
        partition: int,
        engine: Engine,
        codec: RecordCodec,
        mode: Mode,
        skips: SkipList = NO_SKIPS,
    ) -> None:
        self.access = access
        self.namespace = namespace
        self.topic = topic
        self.partition = partition
        self.engine = engine
        self.codec = codec
        self.mode = mode
        self.skips = skips
        self.opened: Opened | None = None
        """The store the last `open` left, also when `replay` raised afterwards."""

    def open(
        self,
        path: Path,
        consumer: Consumer,
        *,
        up_to: int | None = None,
        db: PartitionDb | None = None,
    ) -> Opened:
        """The store at `path` (`db` when the caller holds it open already), kept or replaced
        by a snapshot (or emptied to be rebuilt from the log) as `decide` says. `up_to`
        (VERIFY): the newest position a snapshot may have. SnapshotError when the log is
        truncated and no snapshot reaches its start."""
        tp = TopicPartition(self.topic, self.partition)
        log_start, log_end = consumer.get_watermark_offsets(tp, timeout=30, cached=False)
        db = db or open_current(path)
        applied = db.position(LAST_APPLIED_POSITION)
        processed = db.position(LAST_PROCESSED_POSITION)
        plan = decide(applied, processed, log_start, log_end)
        if plan is Plan.KEEP or (self.mode is Mode.VERIFY and plan is Plan.EMPTY and not log_start):
            self.opened = Opened(db, plan, None)
            return self.opened
        if plan is Plan.AHEAD:
            _LOG.warning(
                "partition %d: local state reaches offset %d but the log ends at %d: it belongs"
                " to another log (the topic was recreated); rebuilding it",
                self.partition,
                max(applied, processed),
                log_end,
            )
        db.close()
        newest = log_end - 1 if up_to is None else min(log_end - 1, up_to)
        manifest = restore_snapshot(
            self.access, self.namespace, self.partition, path, not_before=log_start, up_to=newest
        )
        if manifest is None:
            shutil.rmtree(path, ignore_errors=True)  # rebuilt from the log, or not at all
            if log_start > 0:
                raise SnapshotError(
                    f"partition {self.partition}: the log starts at offset {log_start} and no"
                    " snapshot reaches it; the state cannot be rebuilt (restore the snapshots"
                    " topic or reset the namespace)"
                )
        else:
            _LOG.info(
                "partition %d (%s): restored snapshot %s (processed position %d)",
                self.partition,
                self.mode.value,
                manifest.snapshot_id,
                manifest.processed_position,
            )
        self.opened = Opened(open_current(path), plan, manifest)
        return self.opened

    def replay(
        self,
        path: Path,
        consumer: Consumer,
        *,
        until: int | None = None,
        db: PartitionDb | None = None,
    ) -> tuple[Opened, KeyGenerator, ReplayResult]:
        """`open` the store, then apply the log's events to it (up to `until` with VERIFY).
        A log truncated between the check and the read is met with one more restore.
        UnappliableRecordError (the store left open, its last chunk uncommitted) at an event
        that cannot be applied."""
        for attempt in (1, 2):
            opened = self.open(path, consumer, up_to=until, db=db)
            db = None
            keys = KeyGenerator(opened.db, partition_id_of_kafka(self.partition))
            machine = ReplayStateMachine(
                consumer,
                self.topic,
                self.partition,
                self.engine,
                self.codec,
                opened.db,
                keys,
                skips=self.skips,
            )
            try:
                return opened, keys, machine.run(until=until)
            except LogTruncatedError as truncated:
                opened.db.rollback()
                if attempt == 2:
                    opened.db.close()
                    raise
                opened.db.close()
                _LOG.warning("partition %d: %s; restoring a snapshot", self.partition, truncated)
        raise AssertionError("unreachable")
