"""Snapshots in Kafka, stored and restored on the real broker: an upload that died half-way and
a corrupted chunk are both passed over for an older complete snapshot; a store larger than one
chunk round-trips; forged snapshots are refused naming why and write nothing. Snapshots taken
and restored by workers: test_snapshots.py."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from partita.config import Config, KafkaRole
from partita.log.security import kafka_access
from partita.snapshots import restore, store
from partita.state import ColumnFamilies, PartitionDb
from partita.state.db import STATE_FORMAT
from tests.support.snapshot_topics import manifests, snapshot_config

pytestmark = pytest.mark.kafka


@pytest.fixture
def snapshot_topic(kafka_bootstrap: str, tmp_path: Path) -> Iterator[tuple[Config, Producer]]:
    config = snapshot_config(kafka_bootstrap, tmp_path)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    yield config, producer
    producer.flush(10)


def _store_with(tmp_path: Path, name: str, jobs: int) -> Path:
    """A real store with `jobs` job states, checkpointed; the checkpoint's path."""
    with PartitionDb(tmp_path / name) as db:
        for key in range(jobs):
            db.column(ColumnFamilies.JOB_STATE).upsert(key, "ACTIVATABLE")
        db.commit(last_processed_position=jobs, last_applied_position=jobs)
        return db.checkpoint(tmp_path / f"{name}-checkpoint")


def _upload(config: Config, producer: Producer, checkpoint: Path, position: int) -> Any:
    return store.upload(
        producer,
        config.snapshots_topic,
        0,
        checkpoint,
        processed_position=position,
        applied_position=position,
        state_format=STATE_FORMAT,
    )


def test_incomplete_and_corrupt_snapshots_are_passed_over(
    snapshot_topic: tuple[Config, Producer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, producer = snapshot_topic
    good = _upload(config, producer, _store_with(tmp_path, "good", 10), 10)

    # an upload that dies after its chunks: no manifest, so never a candidate
    for _, _, data in store._chunks_of(_store_with(tmp_path, "partial", 20)):
        producer.produce(
            config.snapshots_topic,
            data,
            partition=0,
            headers=[(store.KIND, b"chunk"), ("snapshotId", b"dead"), ("chunkName", b"x:0")],
        )
    producer.flush(10)

    # a complete upload whose chunk bytes were damaged after their checksums were taken
    real = store._chunks_of
    calls = {"n": 0}

    def damaged(checkpoint: Path) -> Iterator[tuple[str, int, bytes]]:
        calls["n"] += 1
        for name, index, data in real(checkpoint):
            flip = calls["n"] == 2 and name.endswith(".sst") and bool(data)
            yield name, index, bytes([data[0] ^ 0xFF]) + data[1:] if flip else data

    monkeypatch.setattr(store, "_chunks_of", damaged)
    corrupt = _upload(config, producer, _store_with(tmp_path, "corrupt", 30), 30)
    monkeypatch.setattr(store, "_chunks_of", real)
    assert [m.snapshot_id for m in manifests(config)][:2] == [
        corrupt.snapshot_id,
        good.snapshot_id,
    ]

    target = tmp_path / "restored"
    restored = restore(kafka_access(config, KafkaRole.ENGINE), config.namespace, 0, target)
    assert restored is not None and restored.snapshot_id == good.snapshot_id
    with PartitionDb(target) as db:
        assert db.position("last_processed_position") == 10
        states = list(db.column(ColumnFamilies.JOB_STATE).items())
        assert len(states) == 10


def test_a_store_larger_than_one_chunk_round_trips(
    snapshot_topic: tuple[Config, Producer], tmp_path: Path
) -> None:
    config, _ = snapshot_topic
    with PartitionDb(tmp_path / "big") as db:
        for key in range(9000):  # ~9 MB of incompressible values: several 4 MiB chunks
            db.column(ColumnFamilies.VARIABLE).upsert((key, "blob"), os.urandom(1000).hex())
        db.commit(last_processed_position=7, last_applied_position=7)
        digest = db.digest()
        checkpoint = db.checkpoint(tmp_path / "big-checkpoint")
    manifest = _upload(
        config, store.snapshot_producer(kafka_access(config, KafkaRole.ENGINE)), checkpoint, 7
    )
    assert max(c.size for c in manifest.chunks) == store.CHUNK_BYTES  # really chunked
    restored = restore(
        kafka_access(config, KafkaRole.ENGINE), config.namespace, 0, tmp_path / "restored"
    )
    assert restored is not None and restored.snapshot_id == manifest.snapshot_id
    with PartitionDb(tmp_path / "restored") as db:
        assert db.digest() == digest


MARK = b"forged-" + uuid.uuid4().hex.encode()
"""In every forged file: found nowhere on disk after a restore."""


def _forge(
    config: Config,
    producer: Producer,
    snapshot_id: str,
    files: dict[str, bytes],
    *,
    created_ms: int,
    wrong_checksum_of: str | None = None,
) -> None:
    """A complete snapshot in the project's own chunk encoding (one chunk per file, then the
    manifest), at a position above every real one so that restore tries it first (newest
    `created_ms` first). The chunk of `wrong_checksum_of` claims, in its header and in the
    manifest, a checksum its bytes do not have."""
    chunks = []
    for name, data in files.items():
        checksum = hashlib.sha256(data).hexdigest()
        if name == wrong_checksum_of:
            checksum = hashlib.sha256(b"something else").hexdigest()
        chunks.append(store.ChunkInfo(name, 0, len(data), checksum))
    total = store._snapshot_checksum(chunks)
    for info, data in zip(chunks, files.values(), strict=True):
        producer.produce(
            config.snapshots_topic,
            data,
            key=f"{snapshot_id}/{info.file}/0".encode(),
            partition=0,
            headers=[
                (store.KIND, b"chunk"),
                ("snapshotId", snapshot_id.encode()),
                ("chunkName", f"{info.file}:0".encode()),
                ("totalCount", str(len(chunks)).encode()),
                ("chunkChecksum", info.checksum.encode()),
                ("snapshotChecksum", total.encode()),
            ],
        )
    manifest = store.Manifest(
        snapshot_id=snapshot_id,
        partition=0,
        processed_position=1000,
        applied_position=1000,
        state_format=STATE_FORMAT,
        checksum=total,
        chunks=tuple(chunks),
        first_offset=0,
        created_ms=created_ms,
    )
    producer.produce(
        config.snapshots_topic,
        manifest.to_json(),
        key=f"{snapshot_id}/manifest".encode(),
        partition=0,
        headers=[(store.KIND, b"manifest"), ("snapshotId", snapshot_id.encode())],
    )
    assert producer.flush(10) == 0


def test_forged_snapshots_are_refused_naming_why_and_write_nothing(
    snapshot_topic: tuple[Config, Producer], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config, producer = snapshot_topic
    good = _upload(config, producer, _store_with(tmp_path, "good", 10), 10)
    outside = tmp_path / "outside" / "x"  # absolute and outside the target, like /etc/x
    current = b"MANIFEST-000001\n"
    forged = {
        "forged-parent": {"CURRENT": current, "../evil": MARK},
        "forged-absolute": {"CURRENT": current, str(outside): MARK},
        "forged-checksum": {"CURRENT": current, "000009.sst": MARK},
    }
    for n, (snapshot_id, files) in enumerate(forged.items()):
        wrong = "000009.sst" if snapshot_id == "forged-checksum" else None
        _forge(config, producer, snapshot_id, files, created_ms=3 - n, wrong_checksum_of=wrong)
    assert [m.snapshot_id for m in manifests(config)][:4] == [*forged, good.snapshot_id]

    target = tmp_path / "machine" / "state" / "partition-0"
    target.parent.mkdir(parents=True)
    with caplog.at_level("WARNING", logger="partita.snapshots"):
        restored = restore(kafka_access(config, KafkaRole.ENGINE), config.namespace, 0, target)
    assert restored is not None and restored.snapshot_id == good.snapshot_id  # the fallback
    refusals = [r.getMessage() for r in caplog.records if "snapshot refused" in r.getMessage()]
    assert len(refusals) == 3, refusals
    parent, absolute, checksum = refusals
    assert "snapshot forged-parent: file name '../evil' has a '..' component" in parent
    assert f"snapshot forged-absolute: file name '{outside}' is an absolute path" in absolute
    assert "snapshot forged-checksum: chunk 000009.sst:0 fails its checksum" in checksum

    assert not (tmp_path / "outside").exists()
    assert not list(tmp_path.rglob("evil"))
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and MARK in p.read_bytes()]
    assert [p.name for p in target.parent.iterdir()] == ["partition-0"]  # no staging left
    with PartitionDb(target) as db:
        assert db.position("last_processed_position") == 10
