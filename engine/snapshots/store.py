"""Snapshots of partition state in `<ns>.snapshots` (same partition number as the log).

A snapshot is a RocksDB checkpoint cut into chunks. Each chunk is one record: its key names
the snapshot, file and chunk index; its headers carry the snapshot id, chunk name, total chunk
count, the chunk's SHA-256 and the snapshot's checksum (SHA-256 over every chunk checksum, in
order). The manifest (JSON) comes last and makes the snapshot complete: an upload that dies
half-way leaves chunks without a manifest, which no restore ever uses. Restoring verifies every
checksum and falls back to the next older complete snapshot when one does not verify.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from engine.errors import PartitaError
from engine.log.clients import consume_available

_LOG = logging.getLogger("partita.snapshots")

CHUNK_BYTES = 4 * 1024 * 1024
"""Chunk size: well under the snapshots topic's 8 MiB record limit."""

KIND = "partita_snapshot"
"""Header: `chunk` or `manifest`."""


class SnapshotError(PartitaError):
    """A snapshot could not be written, found or verified; the message says which and why."""


@dataclass(frozen=True, slots=True)
class ChunkInfo:
    file: str
    index: int
    size: int
    checksum: str


@dataclass(frozen=True, slots=True)
class Manifest:
    snapshot_id: str
    partition: int
    processed_position: int
    """The last log offset whose command the state includes."""
    applied_position: int
    """The last log offset whose event the state includes: replay starts after it."""
    state_format: int
    checksum: str
    chunks: tuple[ChunkInfo, ...] = field(default_factory=tuple)
    first_offset: int = -1
    """Offset of the snapshot's first chunk in the snapshots topic partition."""
    created_ms: int = 0

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Manifest:
        raw: dict[str, Any] = json.loads(data)
        raw["chunks"] = tuple(ChunkInfo(**c) for c in raw["chunks"])
        return cls(**raw)


def snapshot_producer(bootstrap: str) -> Producer:
    """A producer whose record limit fits the chunks (librdkafka's default is 1 MB)."""
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.max.bytes": 2 * CHUNK_BYTES,
            "compression.type": "lz4",
        }
    )


def _chunks_of(checkpoint: Path) -> Iterator[tuple[str, int, bytes]]:
    for path in sorted(p for p in checkpoint.rglob("*") if p.is_file()):
        name = path.relative_to(checkpoint).as_posix()
        with path.open("rb") as handle:
            index = 0
            while True:
                data = handle.read(CHUNK_BYTES)
                if not data and index > 0:
                    break
                yield name, index, data
                index += 1
                if len(data) < CHUNK_BYTES:
                    break


def _snapshot_checksum(chunks: list[ChunkInfo]) -> str:
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(f"{chunk.file}:{chunk.index}:{chunk.checksum}".encode())
    return digest.hexdigest()


def upload(
    producer: Producer,
    topic: str,
    partition: int,
    checkpoint: Path,
    *,
    processed_position: int,
    applied_position: int,
    state_format: int,
) -> Manifest:
    """Upload the checkpoint at `checkpoint`: every chunk, then the manifest."""
    snapshot_id = f"{processed_position:020d}-{time.time_ns():x}"
    infos = [
        ChunkInfo(name, index, len(data), hashlib.sha256(data).hexdigest())
        for name, index, data in _chunks_of(checkpoint)
    ]
    checksum = _snapshot_checksum(infos)
    offsets: list[int] = []
    failures: list[str] = []

    def delivered(error: KafkaError | None, message: Any) -> None:
        if error is not None:
            failures.append(error.str())
        elif message.offset() is not None:
            offsets.append(message.offset())

    for info, (_, _, data) in zip(infos, _chunks_of(checkpoint), strict=True):
        headers: list[tuple[str, str | bytes | None]] = [
            (KIND, b"chunk"),
            ("snapshotId", snapshot_id.encode()),
            ("chunkName", f"{info.file}:{info.index}".encode()),
            ("totalCount", str(len(infos)).encode()),
            ("chunkChecksum", info.checksum.encode()),
            ("snapshotChecksum", checksum.encode()),
        ]
        key = f"{snapshot_id}/{info.file}/{info.index}".encode()
        _produce(producer, topic, partition, key, data, headers, delivered)
    if producer.flush(120) or failures:
        raise SnapshotError(f"uploading snapshot {snapshot_id} failed: {failures or 'timeout'}")
    manifest = Manifest(
        snapshot_id=snapshot_id,
        partition=partition,
        processed_position=processed_position,
        applied_position=applied_position,
        state_format=state_format,
        checksum=checksum,
        chunks=tuple(infos),
        first_offset=min(offsets) if offsets else -1,
        created_ms=int(time.time() * 1000),
    )
    _produce(
        producer,
        topic,
        partition,
        f"{snapshot_id}/manifest".encode(),
        manifest.to_json(),
        [(KIND, b"manifest"), ("snapshotId", snapshot_id.encode())],
        delivered,
    )
    if producer.flush(60) or failures:
        raise SnapshotError(f"writing the manifest of {snapshot_id} failed: {failures}")
    return manifest


def _produce(  # noqa: PLR0917 - one record, spelled out
    producer: Producer,
    topic: str,
    partition: int,
    key: bytes,
    value: bytes,
    headers: list[tuple[str, str | bytes | None]],
    callback: Any,
) -> None:
    while True:
        try:
            producer.produce(
                topic, value, key=key, partition=partition, headers=headers, on_delivery=callback
            )
            return
        except BufferError:
            producer.poll(0.1)


def _header(message: Any, name: str) -> bytes | None:
    for key, value in message.headers() or []:
        if key == name:
            return bytes(value) if value is not None else None
    return None


def _read(consumer: Consumer, topic: str, partition: int, start: int) -> Iterator[Any]:
    """Every record of the partition from `start` to its current end."""
    tp = TopicPartition(topic, partition)
    low, high = consumer.get_watermark_offsets(tp, timeout=30, cached=False)
    begin = max(start, low)
    if begin >= high:
        return
    consumer.assign([TopicPartition(topic, partition, begin)])
    try:
        while True:
            for message in consume_available(consumer, 100, 1.0):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return
                    raise SnapshotError(f"reading {topic}/{partition}: {error.str()}")
                yield message
                if (message.offset() or 0) >= high - 1:
                    return
    finally:
        consumer.unassign()


def manifests(consumer: Consumer, topic: str, partition: int) -> list[Manifest]:
    """The complete snapshots of a partition, newest first."""
    found = []
    for message in _read(consumer, topic, partition, 0):
        if _header(message, KIND) == b"manifest":
            try:
                found.append(Manifest.from_json(message.value() or b""))
            except (ValueError, TypeError, KeyError) as error:
                _LOG.warning("partition %d: unreadable snapshot manifest: %s", partition, error)
    return sorted(found, key=lambda m: (m.processed_position, m.created_ms), reverse=True)


def download(
    consumer: Consumer, topic: str, partition: int, manifest: Manifest, target: Path
) -> None:
    """Write the snapshot's files to `target` (which must not exist), verifying every chunk
    and the snapshot checksum; SnapshotError when anything is missing or wrong."""
    wanted = {(c.file, c.index): c for c in manifest.chunks}
    got: dict[tuple[str, int], bytes] = {}
    for message in _read(consumer, topic, partition, manifest.first_offset):
        if _header(message, "snapshotId") != manifest.snapshot_id.encode():
            continue
        if _header(message, KIND) == b"manifest":
            break
        file, _, number = (_header(message, "chunkName") or b"").decode().rpartition(":")
        index = int(number) if number.isdigit() else -1
        info = wanted.get((file, index))
        data = message.value() or b""
        if info is None:
            raise SnapshotError(f"snapshot {manifest.snapshot_id}: unexpected chunk {file}:{index}")
        if hashlib.sha256(data).hexdigest() != info.checksum or len(data) != info.size:
            raise SnapshotError(
                f"snapshot {manifest.snapshot_id}: chunk {file}:{index} fails its checksum"
            )
        got[(file, info.index)] = data
    missing = sorted(set(wanted) - set(got))
    if missing:
        raise SnapshotError(f"snapshot {manifest.snapshot_id}: {len(missing)} chunks missing")
    if _snapshot_checksum(list(manifest.chunks)) != manifest.checksum:
        raise SnapshotError(f"snapshot {manifest.snapshot_id}: the snapshot checksum differs")
    staging = target.with_name(target.name + ".restoring")
    shutil.rmtree(staging, ignore_errors=True)
    for (file, index), data in sorted(got.items()):
        path = staging / file
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab" if index else "wb") as handle:
            handle.write(data)
    staging.rename(target)
