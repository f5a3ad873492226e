"""Snapshots and log truncation with real workers on the real broker: a worker on an empty
machine takes over a truncated partition from a snapshot and reaches the same digest; a lagging
downstream group holds truncation back; a standby takes over with only the last records to
replay; the local state of a recreated log is rebuilt; a warm store below the log start is
replaced by a snapshot. How snapshots are stored and chosen: test_snapshot_store.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from partita.client import Client, CommandRejectedError
from partita.config import Config
from partita.protocol.enums import RejectionType
from partita.state import PartitionDb
from tests.support.paths import BPMN_FIXTURES
from tests.support.snapshot_topics import manifests, snapshot_config
from tests.support.worker_processes import BUILTIN_ENGINE, WorkerProcess, create_topics, wait_until

pytestmark = pytest.mark.kafka

FAST_SNAPSHOTS = {"PARTITA_SNAPSHOT_RECORDS": "40", "PARTITA_SNAPSHOT_INTERVAL": "PT1S"}
RESTORED = re.compile(r"restored snapshot (\S+) \(processed position (-?\d+)\)")


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


def _restored(log: Path, since: int = 0) -> list[tuple[str, int]]:
    """(snapshot id, processed position) of every `restored snapshot` line a worker logged
    past character `since` of its log."""
    text = log.read_text(errors="replace")[since:]
    return [(found, int(position)) for found, position in RESTORED.findall(text)]


def test_an_empty_machine_takes_over_a_truncated_partition_from_a_snapshot(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = snapshot_config(kafka_bootstrap, tmp_path)
    first = WorkerProcess(config, tmp_path / "a", "a", BUILTIN_ENGINE, env=FAST_SNAPSHOTS).start()
    with Client(config, timeout=90) as client:
        client.deploy(BPMN_FIXTURES / "one-task.bpmn")
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
    kept = {m.snapshot_id: m for m in manifests(config)}

    fresh = WorkerProcess(config, tmp_path / "b", "b", BUILTIN_ENGINE, env=FAST_SNAPSHOTS).start()
    with Client(config, timeout=90) as client:
        jobs = client.activate_jobs("work", max_jobs=100)  # state from before the move
        assert len(jobs) == 40
        client.complete_job(jobs[0][0], {"done": True})
        client.create_instance("one-task", {"n": "after"})
    assert fresh.stop() == 0, fresh.tail()
    assert "restored snapshot" in fresh.log.read_text()
    # what it restored is one of the snapshots the first machine left, as its manifest says,
    # and one that reaches the log start (the events before it are gone)
    (restored,) = _restored(fresh.log)
    snapshot_id, position = restored
    assert snapshot_id in kept, (restored, sorted(kept))
    assert position == kept[snapshot_id].processed_position
    assert kept[snapshot_id].applied_position + 1 >= truncated_at, (kept[snapshot_id], truncated_at)
    assert _log_start(config) >= truncated_at
    verify = fresh.verify_replay()
    assert verify.returncode == 0 and ": equal" in verify.stdout, verify.stdout + verify.stderr


def test_a_lagging_downstream_group_holds_truncation_back(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = snapshot_config(kafka_bootstrap, tmp_path)
    analytics = f"{config.namespace}.analytics"
    reader = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": analytics})
    reader.commit(offsets=[TopicPartition(config.log_topic, 0, 5)], asynchronous=False)
    env = {**FAST_SNAPSHOTS, "PARTITA_DOWNSTREAM_GROUPS": analytics}
    worker = WorkerProcess(config, tmp_path, engine=BUILTIN_ENGINE, env=env).start()
    try:
        with Client(config, timeout=90) as client:
            client.deploy(BPMN_FIXTURES / "one-task.bpmn")
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
    config = snapshot_config(kafka_bootstrap, tmp_path)
    env = {"PARTITA_STANDBY": "true"}
    owner = WorkerProcess(config, tmp_path / "a", "a", BUILTIN_ENGINE, env=env).start()
    with Client(config, timeout=90) as client:
        client.deploy(BPMN_FIXTURES / "one-task.bpmn")  # the owner is in place
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


def test_local_state_of_a_recreated_log_is_rebuilt_not_reused(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = snapshot_config(kafka_bootstrap, tmp_path)
    worker = WorkerProcess(config, tmp_path, engine=BUILTIN_ENGINE).start()
    with Client(config, timeout=90) as client:
        client.deploy(BPMN_FIXTURES / "one-task.bpmn")
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
            client.deploy(BPMN_FIXTURES / "one-task.bpmn")
            client.create_instance("one-task")
            assert len(client.activate_jobs("work", max_jobs=100)) == 1
    finally:
        assert worker.stop() == 0, worker.tail()
    assert "belongs to another log" in worker.log.read_text()


def test_a_warm_store_below_the_log_start_restores_a_snapshot_instead_of_jumping(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Machine a processes, then stops; machine b carries on until the log is truncated past
    a's store. When a takes the partition again, its store ends below the log start: it is
    replaced by a snapshot (never replayed from wherever the log now starts), and the state is
    complete."""
    config = snapshot_config(kafka_bootstrap, tmp_path)
    a = WorkerProcess(config, tmp_path / "a", "a", BUILTIN_ENGINE, env=FAST_SNAPSHOTS).start()
    with Client(config, timeout=90) as client:
        client.deploy(BPMN_FIXTURES / "one-task.bpmn")
        _load(client, 10)
    assert a.stop() == 0, a.tail()
    with PartitionDb(tmp_path / "a" / "state" / config.namespace / "partition-0") as stale:
        stale_position = stale.position("last_applied_position")

    b = WorkerProcess(config, tmp_path / "b", "b", BUILTIN_ENGINE, env=FAST_SNAPSHOTS).start()
    with Client(config, timeout=90) as client:
        _load(client, 40)
        wait_until(lambda: _log_start(config) > stale_position + 1, 60, "truncation past a", b.tail)
    assert b.stop() == 0, b.tail()
    kept = {m.snapshot_id: m for m in manifests(config)}
    log_start = _log_start(config)
    before = len(a.log.read_text(errors="replace"))

    a.start()
    with Client(config, timeout=90) as client:
        jobs = client.activate_jobs("work", max_jobs=200)  # every unfinished job, from b too
        assert len(jobs) == 10 - 5 + 40 - 20
    assert a.stop() == 0, a.tail()
    assert "restored snapshot" in a.log.read_text()
    # the snapshot replacing a's store is one of b's, newer than that store, reaching the log start
    (restored,) = _restored(a.log, since=before)
    snapshot_id, position = restored
    assert snapshot_id in kept, (restored, sorted(kept))
    assert position == kept[snapshot_id].processed_position
    assert kept[snapshot_id].applied_position > stale_position, (kept[snapshot_id], stale_position)
    assert kept[snapshot_id].applied_position + 1 >= log_start, (kept[snapshot_id], log_start)
    verify = a.verify_replay()
    assert verify.returncode == 0 and ": equal" in verify.stdout, verify.stdout + verify.stderr
