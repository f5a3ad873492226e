"""Snapshots of partition state in `<ns>.snapshots` (same partition number as the log).

A snapshot is a RocksDB checkpoint cut into chunks. Each chunk is one record: its key names
the snapshot, file and chunk index; its headers carry the snapshot id, chunk name, total chunk
count, the chunk's SHA-256 and the snapshot's checksum (SHA-256 over every chunk checksum, in
order). The manifest (JSON) comes last and makes the snapshot complete: an upload that dies
half-way leaves chunks without a manifest, which no restore ever uses.

The snapshots topic is input like any other, so restoring trusts nothing in it. Before anything
is written, every file name of the manifest is checked (relative, no `.` or `..` component, no
empty or NUL-containing name, inside the target folder) and so is the manifest itself (chunk
indices 0..n-1 per file, sizes within CHUNK_BYTES, the snapshot checksum over its chunk
checksums). Chunks are then streamed to a staging folder one record at a time, each checked
against its checksum and size in the manifest as it arrives, so memory stays at about one
chunk whatever the snapshot's size. Only a snapshot whose every chunk arrived and verified is
renamed into place; any failure removes the staging folder and names the snapshot, the chunk
and what was wrong, and the caller falls back to the next older complete snapshot.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from partita.errors import PartitaError
from partita.log.clients import consume_available, new_producer
from partita.log.security import KafkaAccess

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


def snapshot_producer(access: KafkaAccess) -> Producer:
    """A producer whose record limit fits the chunks (librdkafka's default is 1 MB)."""
    return new_producer(
        access,
        {
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.max.bytes": 2 * CHUNK_BYTES,
            "compression.type": "lz4",
        },
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
    """Every record of the partition from `start` to its current end, one at a time: the
    caller holds at most the record it is at (chunks are up to CHUNK_BYTES each)."""
    tp = TopicPartition(topic, partition)
    low, high = consumer.get_watermark_offsets(tp, timeout=30, cached=False)
    begin = max(start, low)
    if begin >= high:
        return
    consumer.assign([TopicPartition(topic, partition, begin)])
    try:
        while True:
            for message in consume_available(consumer, 1, 1.0):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return
                    raise SnapshotError(f"reading {topic}/{partition}: {error.str()}")
                offset = message.offset() or 0
                yield message
                if offset >= high - 1:
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


def checked_name(snapshot_id: str, name: str) -> PurePosixPath:
    """`name`, a file name from a snapshot's manifest, as a relative path that stays inside
    any folder it is joined to; SnapshotError naming the snapshot, the name and the reason
    otherwise. Never touches the file system."""

    def refuse(why: str) -> SnapshotError:
        return SnapshotError(f"snapshot {snapshot_id}: file name {name!r} {why}")

    if not name:
        raise refuse("is empty")
    if "\0" in name:
        raise refuse("contains a NUL character")
    if "\\" in name:
        raise refuse("contains a backslash")
    path = PurePosixPath(name)
    if path.is_absolute():
        raise refuse("is an absolute path")
    parts = name.split("/")
    if ".." in parts:
        raise refuse("has a '..' component")
    if any(part in ("", ".") for part in parts):
        raise refuse("has an empty or '.' component")
    return path


def _inside(root: Path, name: PurePosixPath, snapshot_id: str) -> Path:
    """`root / name`, which must resolve (symbolic links followed) inside `root`."""
    path = root / name
    if not path.resolve().is_relative_to(root.resolve()):
        raise SnapshotError(
            f"snapshot {snapshot_id}: file name {str(name)!r} resolves outside the target folder"
        )
    return path


def _checked_manifest(manifest: Manifest) -> dict[tuple[str, int], tuple[ChunkInfo, int]]:
    """The manifest's chunks by (file, index), each with its byte offset in its file, once
    the manifest itself is sound: file names safe, indices 0..n-1 per file, sizes within
    CHUNK_BYTES (all but a file's last chunk exactly that), the snapshot checksum right."""
    sid = manifest.snapshot_id
    if not isinstance(sid, str) or not sid:
        raise SnapshotError(f"a snapshot manifest has the snapshot id {sid!r}, not a name")
    for chunk in manifest.chunks:
        types = (type(chunk.file), type(chunk.index), type(chunk.size), type(chunk.checksum))
        if types != (str, int, int, str) or not isinstance(manifest.first_offset, int):
            raise SnapshotError(
                f"snapshot {sid}: manifest entry {chunk!r} has a field of the wrong type"
            )
    if _snapshot_checksum(list(manifest.chunks)) != manifest.checksum:
        raise SnapshotError(
            f"snapshot {sid}: the snapshot checksum is {manifest.checksum}, but its chunk"
            f" checksums hash to {_snapshot_checksum(list(manifest.chunks))}"
        )
    by_file: dict[str, list[ChunkInfo]] = {}
    for chunk in manifest.chunks:
        checked_name(sid, chunk.file)
        by_file.setdefault(chunk.file, []).append(chunk)
    placed: dict[tuple[str, int], tuple[ChunkInfo, int]] = {}
    for file, chunks in by_file.items():
        chunks.sort(key=lambda c: c.index)
        if [c.index for c in chunks] != list(range(len(chunks))):
            raise SnapshotError(
                f"snapshot {sid}: file {file!r} has chunk indices that are not 0..n-1"
            )
        offset = 0
        for chunk in chunks:
            last = chunk is chunks[-1]
            if not 0 <= chunk.size <= CHUNK_BYTES or (not last and chunk.size != CHUNK_BYTES):
                raise SnapshotError(
                    f"snapshot {sid}: chunk {file}:{chunk.index} claims {chunk.size} bytes"
                    f" (chunks are {CHUNK_BYTES} bytes, a file's last one at most that)"
                )
            placed[(file, chunk.index)] = (chunk, offset)
            offset += chunk.size
    return placed


def download(
    consumer: Consumer, topic: str, partition: int, manifest: Manifest, target: Path
) -> None:
    """Write the snapshot's files to `target` (which must not exist), or raise SnapshotError
    naming the snapshot, the chunk and what was wrong, leaving nothing behind. Guarantees: no
    byte is written before the whole manifest is checked, none outside `target` (and its
    staging folder next to it), and `target` appears only once every chunk has verified
    against its checksum and size and the snapshot checksum; memory stays at about one
    chunk."""
    placed = _checked_manifest(manifest)
    staging = target.with_name(target.name + ".restoring")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _stream(consumer, topic, partition, manifest, placed, staging)
        staging.rename(target)
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise SnapshotError(
            f"snapshot {manifest.snapshot_id}: writing it failed: {error}"
        ) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _stream(  # noqa: PLR0917 - one download, spelled out
    consumer: Consumer,
    topic: str,
    partition: int,
    manifest: Manifest,
    placed: dict[tuple[str, int], tuple[ChunkInfo, int]],
    staging: Path,
) -> None:
    """Each chunk record of the snapshot, verified and written at its place in its file."""
    sid = manifest.snapshot_id
    staging.mkdir(parents=True)
    for file in {file for file, _ in placed}:  # every file exists, an empty one too
        path = _inside(staging, PurePosixPath(file), sid)
        path.parent.mkdir(parents=True, exist_ok=True)
        _inside(staging, PurePosixPath(file), sid)  # again: a parent may be a link now
        path.touch(exist_ok=False)
    written: set[tuple[str, int]] = set()
    for message in _read(consumer, topic, partition, manifest.first_offset):
        if _header(message, "snapshotId") != sid.encode():
            continue
        if _header(message, KIND) == b"manifest":
            break
        name = (_header(message, "chunkName") or b"").decode(errors="replace")
        file, _, number = name.rpartition(":")
        index = int(number) if number.isdigit() else -1
        found = placed.get((file, index))
        if found is None:
            raise SnapshotError(f"snapshot {sid}: chunk {name!r} is not in its manifest")
        info, offset = found
        data = message.value() or b""
        checksum = hashlib.sha256(data).hexdigest()
        if len(data) != info.size or checksum != info.checksum:
            raise SnapshotError(
                f"snapshot {sid}: chunk {name} fails its checksum: {len(data)} bytes hashing"
                f" to {checksum}, the manifest says {info.size} bytes hashing to {info.checksum}"
            )
        claimed = _header(message, "chunkChecksum")
        if claimed is not None and claimed != info.checksum.encode():
            raise SnapshotError(
                f"snapshot {sid}: chunk {name} carries checksum {claimed.decode(errors='replace')}"
                f" in its header, the manifest {info.checksum}"
            )
        if (file, index) in written:
            continue  # a duplicate of a chunk already written (same checksum)
        descriptor = os.open(
            _inside(staging, PurePosixPath(file), sid), os.O_WRONLY | os.O_NOFOLLOW
        )
        try:
            os.pwrite(descriptor, data, offset)
        finally:
            os.close(descriptor)
        written.add((file, index))
        del data, message
    missing = sorted(set(placed) - written)
    if missing:
        first = ", ".join(f"{f}:{i}" for f, i in missing[:3])
        raise SnapshotError(f"snapshot {sid}: {len(missing)} chunks missing (first: {first})")
