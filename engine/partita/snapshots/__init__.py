"""Snapshots and log truncation for one partition task (docs/architecture.md, "Snapshots and
log truncation").

Every `every_records` processed records or `interval_s` seconds (whichever comes first, and
only when something was processed), the task takes a RocksDB checkpoint (hard links, between
batches, so it is consistent with the committed positions) and a background thread uploads it
(`store.upload`). When the upload is complete, and a committed batch proved the task still
owns the partition, another background thread deletes snapshots older than the newest `keep`
from the snapshots topic and truncates the log below the oldest offset anyone still needs: the
snapshot's replay start, the engine group's committed offset, and the committed offsets of the
configured downstream consumer groups (as Zeebe's exporters hold back its log compaction). A
group that has never committed holds truncation at the log start.

`restore` gives a task with no usable local state the newest snapshot that verifies.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from partita.config.settings import SNAPSHOT_INTERVAL, SNAPSHOT_RECORDS
from partita.log import clients
from partita.log.security import KafkaAccess
from partita.snapshots import store
from partita.snapshots.store import Manifest, SnapshotError
from partita.state import PartitionDb, migrate
from partita.state.db import LAST_APPLIED_POSITION, LAST_PROCESSED_POSITION, STATE_FORMAT

__all__ = ["Manifest", "SnapshotError", "SnapshotSettings", "Snapshotter", "restore"]

_LOG = logging.getLogger("partita.snapshots")


@dataclass(frozen=True, slots=True)
class SnapshotSettings:
    every_records: int = SNAPSHOT_RECORDS.default
    interval_s: float = SNAPSHOT_INTERVAL.default / 1000
    keep: int = 2
    downstream_groups: tuple[str, ...] = ()
    truncate: bool = True


class Snapshotter:
    def __init__(
        self,
        *,
        access: KafkaAccess,
        namespace: str,
        topic: str,
        partition: int,
        work_dir: Path,
        settings: SnapshotSettings,
    ) -> None:
        self.access = access
        self.namespace = namespace
        self.log_topic = topic
        self.topic = f"{namespace}.snapshots"
        self.partition = partition
        self.work_dir = work_dir
        self.settings = settings
        self._producer: Producer | None = None
        self._thread: threading.Thread | None = None
        self._result: Manifest | SnapshotError | None = None
        self._last_position = -1
        self._last_time = time.monotonic()
        self.taken: list[Manifest] = []
        self.pending: Manifest | None = None
        """The last uploaded snapshot, whose truncation waits for a committed batch."""
        self.pending_since = 0.0
        self._truncation: threading.Thread | None = None

    @property
    def busy(self) -> bool:
        """An upload, or the truncation after one, is under way: no new snapshot yet."""
        return self._thread is not None or (
            self._truncation is not None and self._truncation.is_alive()
        )

    def due(self, processed_position: int) -> bool:
        if self.busy or processed_position < 0 or processed_position == self._last_position:
            return False
        if self._last_position < 0:
            self._last_position = processed_position  # count from the first batch we see
            return False
        records = processed_position - self._last_position
        elapsed = time.monotonic() - self._last_time
        return records >= self.settings.every_records or elapsed >= self.settings.interval_s

    def take(self, db: PartitionDb) -> None:
        """Checkpoint now (between batches) and upload in the background."""
        processed = db.position(LAST_PROCESSED_POSITION)
        applied = db.position(LAST_APPLIED_POSITION)
        checkpoint = self.work_dir / f"checkpoint-{processed}-{time.time_ns():x}"
        shutil.rmtree(self.work_dir, ignore_errors=True)
        db.checkpoint(checkpoint)
        self._last_position = processed
        self._last_time = time.monotonic()
        self._thread = threading.Thread(
            target=self._upload,
            args=(checkpoint, processed, applied),
            name=f"snapshot-{self.partition}",
            daemon=True,
        )
        self._thread.start()

    def _upload(self, checkpoint: Path, processed: int, applied: int) -> None:
        try:
            if self._producer is None:
                self._producer = store.snapshot_producer(self.access)
            started = time.monotonic()
            manifest = store.upload(
                self._producer,
                self.topic,
                self.partition,
                checkpoint,
                processed_position=processed,
                applied_position=applied,
                state_format=STATE_FORMAT,
            )
            size = sum(c.size for c in manifest.chunks)
            _LOG.info(
                "partition %d: snapshot %s (%d bytes, %d chunks) uploaded in %.2f s",
                self.partition,
                manifest.snapshot_id,
                size,
                len(manifest.chunks),
                time.monotonic() - started,
            )
            self._result = manifest
        except SnapshotError as error:
            self._result = error
        except Exception as error:  # keep the worker alive: the next snapshot tries again
            self._result = SnapshotError(f"snapshot upload failed: {error}")
        finally:
            shutil.rmtree(checkpoint, ignore_errors=True)

    def poll(self) -> Manifest | None:
        """After an upload finished: the new manifest (or None). Its truncation waits for
        `truncate`, which the owner calls once a batch committed after this (a fenced zombie
        commits nothing, so it never deletes records)."""
        if self._thread is None or self._thread.is_alive():
            return None
        self._thread = None
        result, self._result = self._result, None
        if isinstance(result, SnapshotError) or result is None:
            _LOG.warning("partition %d: %s", self.partition, result)
            return None
        self.taken.append(result)
        self.pending = result
        self.pending_since = time.monotonic()
        return result

    def truncate(self) -> None:
        """Delete what the last uploaded snapshot made unnecessary (older snapshots, and log
        records nobody needs), in the background: its admin requests (a connection, the
        groups' offsets, the deletions) would stall the batches for their round trips. Only
        the partition's current owner may call it, right after a committed batch proved it
        still is. A failure is logged; the next snapshot's truncation covers it."""
        manifest, self.pending = self.pending, None
        if manifest is None:
            return
        self._truncation = threading.Thread(
            target=self._truncate_logged,
            args=(manifest,),
            name=f"truncate-{self.partition}",
            daemon=True,
        )
        self._truncation.start()

    def _truncate_logged(self, manifest: Manifest) -> None:
        try:
            self._clean_up_and_truncate(manifest)
        except Exception as error:  # keep the worker alive: the next snapshot tries again
            _LOG.warning("partition %d: truncation failed: %s", self.partition, error)

    def _clean_up_and_truncate(self, manifest: Manifest) -> None:
        admin = clients.new_admin(self.access)
        kept = self.taken[-self.settings.keep :]
        oldest_kept = min(m.first_offset for m in kept if m.first_offset >= 0)
        if len(self.taken) > self.settings.keep and oldest_kept > 0:
            _delete_before(admin, self.topic, self.partition, oldest_kept)
        if not self.settings.truncate:
            return
        needed = [manifest.applied_position + 1, manifest.processed_position + 1]
        needed += self._committed(admin)
        before = min(needed)
        if before > 0:
            _delete_before(admin, self.log_topic, self.partition, before)
            _LOG.info("partition %d: log truncated below offset %d", self.partition, before)

    def _committed(self, admin: AdminClient) -> list[int]:
        """Committed offsets of the engine group and the downstream groups (0 when a group
        has none yet: it still needs everything)."""
        groups = [clients.engine_group(self.namespace), *self.settings.downstream_groups]
        found = []
        for group in groups:
            request = ConsumerGroupTopicPartitions(
                group, [TopicPartition(self.log_topic, self.partition)]
            )
            futures = admin.list_consumer_group_offsets([request], request_timeout=30)
            try:
                result = futures[group].result()
            except Exception as error:  # an unknown group holds everything back
                _LOG.warning("offsets of group %s: %s", group, error)
                found.append(0)
                continue
            offsets = [tp.offset for tp in result.topic_partitions if tp.error is None]
            found.append(max(offsets[0], 0) if offsets else 0)
        return found

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join(60)
        if self._truncation is not None:
            self._truncation.join(60)
        if self._producer is not None:
            self._producer.flush(10)


def _delete_before(admin: AdminClient, topic: str, partition: int, offset: int) -> None:
    futures = admin.delete_records([TopicPartition(topic, partition, offset)], request_timeout=30)
    for future in futures.values():
        future.result()


def restore(
    access: KafkaAccess,
    namespace: str,
    partition: int,
    target: Path,
    *,
    not_before: int = -1,
    up_to: int | None = None,
) -> Manifest | None:
    """Replace `target` with the newest snapshot that verifies, whose replay start is not below
    `not_before` (the log start: events before it are gone) and, with `up_to`, whose applied
    position is not beyond it; None when there is none. A snapshot that does not verify (an
    unsafe file name, a chunk missing or failing its checksum: `store.download`) is logged and
    passed over; nothing of it is written outside `target`'s staging folder, and `target` is
    only touched once a snapshot has verified completely."""
    consumer = clients.restore_consumer(access, namespace, partition)
    topic = f"{namespace}.snapshots"
    try:
        for manifest in store.manifests(consumer, topic, partition):
            if not migrate.readable(manifest.state_format):
                continue  # a layout this build can neither read nor upgrade
            if manifest.applied_position + 1 < not_before:
                continue
            if up_to is not None and manifest.applied_position > up_to:
                continue
            staging = target.with_name(target.name + ".snapshot")
            shutil.rmtree(staging, ignore_errors=True)
            try:
                store.download(consumer, topic, partition, manifest, staging)
            except SnapshotError as error:  # names the snapshot, the chunk and what failed
                _LOG.warning(
                    "partition %d: snapshot refused, trying an older one: %s", partition, error
                )
                shutil.rmtree(staging, ignore_errors=True)
                continue
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
            return manifest
    finally:
        consumer.close()
    return None
