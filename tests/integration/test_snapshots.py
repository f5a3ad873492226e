"""Snapshots in Kafka and log truncation on the real broker: a worker on an empty machine takes
over a truncated partition from a snapshot and reaches the same digest; an upload that died
half-way and a corrupted chunk are both passed over for an older complete snapshot; a lagging
downstream group holds truncation back."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from engine.client import Client, CommandRejectedError
from engine.config import Config, KafkaRole
from engine.log.security import kafka_access
from engine.protocol.enums import RejectionType
from engine.snapshots import restore, store
from engine.state import ColumnFamilies, PartitionDb
from engine.state.db import STATE_FORMAT
from tests.integration.workers import BUILTIN_ENGINE, WorkerProcess, create_topics, wait_until

pytestmark = pytest.mark.kafka

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bpmn"
FAST_SNAPSHOTS = {"PARTITA_SNAPSHOT_RECORDS": "40", "PARTITA_SNAPSHOT_INTERVAL": "PT1S"}


def _config(bootstrap: str, home: Path) -> Config:
    config = Config(
        bootstrap_servers=bootstrap, namespace=f"s{uuid.uuid4().hex[:8]}", home=home, partitions=1
    )
    create_topics(config)
    return config


def _log_start(config: Config, topic: str | None = None) -> int:
    consumer = Consumer({"bootstrap.servers": config.bootstrap, "group.id": "probe"})
    try:
        low, _ = consumer.get_watermark_offsets(
            TopicPartition(topic or config.log_topic, 0), timeout=10, cached=False
        )
        return int(low)
    finally:
        consumer.close()


def _load(client: Client, instances: int) -> None:
    for n in range(instances):
        client.create_instance("one-task", {"n": n})
    for key, _job in client.activate_jobs("work", max_jobs=instances // 2):
        client.complete_job(key, {"done": True})


def test_an_empty_machine_takes_over_a_truncated_partition_from_a_snapshot(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    first = WorkerProcess(config, tmp_path / "a", "a", BUILTIN_ENGINE, env=FAST_SNAPSHOTS).start()
    with Client(config, timeout=90) as client:
        client.deploy(FIXTURES / "one-task.bpmn")
        _load(client, 40)
        wait_until(lambda: _log_start(config) > 0, 60, "the log to be truncated", first.tail)
        _load(client, 40)  # more snapshots: beyond the two kept, old ones are deleted
        wait_until(
            lambda: _log_start(config, config.snapshots_topic) > 0,
            60,
            "old snapshots to be deleted",
            first.tail,
        )
    assert first.stop() == 0
    truncated_at = _log_start(config)

    fresh = WorkerProcess(config, tmp_path / "b", "b", BUILTIN_ENGINE, env=FAST_SNAPSHOTS).start()
    with Client(config, timeout=90) as client:
        jobs = client.activate_jobs("work", max_jobs=100)  # state from before the move
        assert len(jobs) == 40
        client.complete_job(jobs[0][0], {"done": True})
        client.create_instance("one-task", {"n": "after"})
    assert fresh.stop() == 0, fresh.tail()
    assert "restored snapshot" in fresh.log.read_text()
    assert _log_start(config) >= truncated_at
    verify = fresh.verify_replay()
    assert verify.returncode == 0 and ": equal" in verify.stdout, verify.stdout + verify.stderr


@pytest.fixture
def snapshot_topic(kafka_bootstrap: str, tmp_path: Path) -> Iterator[tuple[Config, Producer]]:
    config = _config(kafka_bootstrap, tmp_path)
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
    assert [m.snapshot_id for m in _manifests(config)][:2] == [
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


def _manifests(config: Config) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": config.bootstrap, "group.id": "m", "enable.partition.eof": True}
    )
    try:
        return store.manifests(consumer, config.snapshots_topic, 0)
    finally:
        consumer.close()


def test_a_lagging_downstream_group_holds_truncation_back(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    analytics = f"{config.namespace}.analytics"
    reader = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": analytics})
    reader.commit(offsets=[TopicPartition(config.log_topic, 0, 5)], asynchronous=False)
    env = {**FAST_SNAPSHOTS, "PARTITA_DOWNSTREAM_GROUPS": analytics}
    worker = WorkerProcess(config, tmp_path, engine=BUILTIN_ENGINE, env=env).start()
    try:
        with Client(config, timeout=90) as client:
            client.deploy(FIXTURES / "one-task.bpmn")
            _load(client, 40)
            wait_until(
                lambda: _log_start(config) == 5, 60, "truncation up to the group", worker.tail
            )
            reader.commit(offsets=[TopicPartition(config.log_topic, 0, 60)], asynchronous=False)
            _load(client, 20)
            wait_until(lambda: _log_start(config) == 60, 60, "truncation to follow the group")
    finally:
        reader.close()
        assert worker.stop() == 0, worker.tail()


def _replayed(log: Path) -> list[int]:
    """The `replayed N events` counts a worker logged when it opened partitions."""
    found = []
    for line in log.read_text().splitlines():
        if "processing from log offset" in line and "replayed" in line:
            found.append(int(line.split("replayed ")[1].split(" ")[0]))
    return found


def test_a_standby_takes_over_with_only_the_last_records_to_replay(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    env = {"PARTITA_STANDBY": "true"}
    owner = WorkerProcess(config, tmp_path / "a", "a", BUILTIN_ENGINE, env=env).start()
    with Client(config, timeout=90) as client:
        client.deploy(FIXTURES / "one-task.bpmn")  # the owner is in place
        standby = WorkerProcess(config, tmp_path / "b", "b", BUILTIN_ENGINE, env=env).start()
        wait_until(lambda: "standby for partition 0" in standby.log.read_text(), 60, "a standby")
        _load(client, 40)
        warm = tmp_path / "b" / "state" / config.namespace / "partition-0"

        def applied() -> int:  # a read-only view sees the store as of its opening: reopen
            with PartitionDb(warm, read_only=True) as view:
                return view.position("last_applied_position")

        wait_until(lambda: applied() > 100, 30, "the standby to apply the load")
        owner.kill()  # -9: the standby's worker takes the partition
        jobs = client.activate_jobs("work", max_jobs=100)
        assert len(jobs) == 20
    assert standby.stop() == 0, standby.tail()
    replayed = _replayed(standby.log)
    assert replayed and replayed[-1] < 20, replayed  # warm: only the last few records
    verify = standby.verify_replay()
    assert verify.returncode == 0 and ": equal" in verify.stdout, verify.stdout + verify.stderr


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


def test_local_state_of_a_recreated_log_is_rebuilt_not_reused(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    worker = WorkerProcess(config, tmp_path, engine=BUILTIN_ENGINE).start()
    with Client(config, timeout=90) as client:
        client.deploy(FIXTURES / "one-task.bpmn")
        _load(client, 10)
    assert worker.stop() == 0
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.delete_topics([config.log_topic], operation_timeout=30).values():
        future.result()
    wait_until(
        lambda: config.log_topic not in admin.list_topics(timeout=10).topics, 30, "the deletion"
    )
    create_topics(config)  # the same name, an empty log: the store on disk is from the old one
    worker = WorkerProcess(config, tmp_path, engine=BUILTIN_ENGINE).start()
    try:
        with Client(config, timeout=90) as client:
            with pytest.raises(CommandRejectedError) as raised:
                client.create_instance("one-task")  # the old deployment must be gone
            assert raised.value.rejection_type is RejectionType.NOT_FOUND
            client.deploy(FIXTURES / "one-task.bpmn")
            client.create_instance("one-task")
            assert len(client.activate_jobs("work", max_jobs=100)) == 1
    finally:
        assert worker.stop() == 0, worker.tail()
    assert "belongs to another log" in worker.log.read_text()


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
    assert [m.snapshot_id for m in _manifests(config)][:4] == [*forged, good.snapshot_id]

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


def test_a_warm_store_below_the_log_start_restores_a_snapshot_instead_of_jumping(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Machine a processes, then stops; machine b carries on until the log is truncated past
    a's store. When a takes the partition again, its store ends below the log start: it is
    replaced by a snapshot (never replayed from wherever the log now starts), and the state is
    complete."""
    config = _config(kafka_bootstrap, tmp_path)
    a = WorkerProcess(config, tmp_path / "a", "a", BUILTIN_ENGINE, env=FAST_SNAPSHOTS).start()
    with Client(config, timeout=90) as client:
        client.deploy(FIXTURES / "one-task.bpmn")
        _load(client, 10)
    assert a.stop() == 0, a.tail()
    with PartitionDb(tmp_path / "a" / "state" / config.namespace / "partition-0") as stale:
        stale_position = stale.position("last_applied_position")

    b = WorkerProcess(config, tmp_path / "b", "b", BUILTIN_ENGINE, env=FAST_SNAPSHOTS).start()
    with Client(config, timeout=90) as client:
        _load(client, 40)
        wait_until(lambda: _log_start(config) > stale_position + 1, 60, "truncation past a", b.tail)
    assert b.stop() == 0, b.tail()

    a.start()
    with Client(config, timeout=90) as client:
        jobs = client.activate_jobs("work", max_jobs=200)  # every unfinished job, from b too
        assert len(jobs) == 10 - 5 + 40 - 20
    assert a.stop() == 0, a.tail()
    assert "restored snapshot" in a.log.read_text()
    verify = a.verify_replay()
    assert verify.returncode == 0 and ": equal" in verify.stdout, verify.stdout + verify.stderr
