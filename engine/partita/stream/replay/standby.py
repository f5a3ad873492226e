"""Standby replicas: warm copies of partitions this worker does not own.

With standbys on (`PARTITA_STANDBY=true`), a worker keeps the state store of every partition
it does not own up to date by applying that partition's EVENTs as they are committed (a
read_committed, assign-only consumer; events only, as replay does). The store is the one a
task would open, so when the partition moves here the task finds its state current and
replays only the last few records. The store is opened under the rules every reader of the log
follows (`partita.stream.replay.restorer`: a snapshot when it is empty, older than the log start, or
from another log). Taking a partition over closes its standby first (RocksDB
allows one owner of a store).

A standby that meets an event it cannot apply (UnappliableRecordError: the body does not
decode or the applier raised) stops: it logs the error once, discards the uncommitted changes
of its last catch-up, and applies nothing more; its store stays at its last commit. Events at
the positions of the skip list (PARTITA_SKIP_RECORDS) are not applied.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from partita.log import clients
from partita.log.security import KafkaAccess
from partita.processing import Engine
from partita.protocol.codec import RecordCodec
from partita.protocol.keys import partition_id_of_kafka
from partita.state import KeyGenerator
from partita.state.db import LAST_APPLIED_POSITION
from partita.stream.errors import UnappliableRecordError
from partita.stream.replay.restorer import Mode, Restorer
from partita.stream.replay.state_machine import APPLIED, SKIPPED, ProcessedPositions, apply_logged
from partita.stream.skips import NO_SKIPS, SkipList

_LOG = logging.getLogger("partita.standby")


class Standby:
    def __init__(
        self,
        *,
        access: KafkaAccess,
        namespace: str,
        topic: str,
        partition: int,
        path: Path,
        engine: Engine,
        codec: RecordCodec,
        skips: SkipList = NO_SKIPS,
    ) -> None:
        """`skips`: the namespace's PARTITA_SKIP_RECORDS (`skips.of_config`)."""
        self.topic = topic
        self.partition = partition
        self.engine = engine
        self.codec = codec
        self.path = path
        self.applied = 0
        self.skipped = skips.offsets(partition)
        self.stopped: UnappliableRecordError | None = None
        self.positions = ProcessedPositions()
        self.consumer: Consumer = clients.restore_consumer(access, namespace, partition)
        restorer = Restorer(access, namespace, topic, partition, engine, codec, Mode.STANDBY, skips)
        try:
            self.db = restorer.open(path, self.consumer).db
        except Exception:
            self.consumer.close()
            raise
        tp = TopicPartition(topic, partition)
        log_start, _ = self.consumer.get_watermark_offsets(tp, timeout=30, cached=False)
        self.keys = KeyGenerator(self.db, partition_id_of_kafka(partition))
        start = max(self.db.position(LAST_APPLIED_POSITION) + 1, log_start)
        self.consumer.assign([TopicPartition(topic, partition, start)])
        _LOG.info("standby for partition %d from offset %d", partition, start)

    def catch_up(self, max_records: int = 5000) -> int:
        """Apply the events that arrived since the last call (without waiting); returns how
        many. Never raises UnappliableRecordError: the standby stops instead (`stopped`)."""
        if self.stopped is not None:
            return 0
        try:
            return self._catch_up(max_records)
        except UnappliableRecordError as error:
            self._stop(error)
            return 0

    def _catch_up(self, max_records: int) -> int:
        messages = self.consumer.consume(num_messages=max_records, timeout=0)
        last = -1
        applied = skipped = 0
        decode, apply, skipped_offsets = self.codec.decode, self.engine.apply, self.skipped
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    _LOG.warning("standby %d: %s", self.partition, error.str())
                continue
            offset = message.offset()
            assert offset is not None
            last = offset
            outcome = apply_logged(
                message, offset, self.topic, self.partition, decode, apply, self.db, self.keys,
                skipped_offsets, self.positions,
            )  # fmt: skip
            applied += outcome is APPLIED
            skipped += outcome is SKIPPED
        if last >= 0:
            self.keys.write_noted()
            self.db.commit(
                last_applied_position=last if applied or skipped else None,
                **self.positions.for_commit(self.db),
            )
        self.applied += applied
        return applied

    def _stop(self, error: UnappliableRecordError) -> None:
        self.stopped = error
        self.db.rollback()
        with contextlib.suppress(KafkaException):
            self.consumer.unassign()  # read nothing more
        _LOG.error("standby for partition %d stopped: %s", self.partition, error)

    def close(self) -> None:
        self.consumer.close()
        self.db.close()
