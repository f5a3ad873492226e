"""`partita bench recovery`: memory, snapshots and failover, measured on a running broker.

For each size, N one-task instances are created and left waiting (in flight) on a one-
partition namespace with an engine worker in a child process. Then:
- memory: the worker's resident set holding them (now and at its peak) and the store's size
  on disk;
- replay without a snapshot: the whole log applied to an empty store (events, seconds);
- snapshot: a checkpoint of that worker's store uploaded to the snapshots topic (size, time);
- restore: the newest snapshot downloaded, verified and opened on an empty machine;
- failover, from `kill -9` of the owner until a command sent right after the kill is answered:
  cold (a new worker with an empty data directory: snapshot + tail), warm (the killed worker
  restarted on its own data), standby (a second worker already keeping a warm copy).
Failover includes Kafka's group session timeout (6 s): the time the group needs to notice the
owner is gone. One JSON line.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from partita.bench.procstats import rss_mb, sample
from partita.bench.replaying import replay_partition
from partita.bench.scratch import scratch_namespace
from partita.client import Client
from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.clients import new_consumer
from partita.log.security import kafka_access
from partita.log.topics import apply_topics, load_specs
from partita.protocol.intents import ProcessInstanceCreationIntent
from partita.protocol.values import ProcessInstanceCreationValue
from partita.snapshots import restore, store
from partita.state import PartitionDb
from partita.state.db import LAST_APPLIED_POSITION, LAST_PROCESSED_POSITION, STATE_FORMAT
from partita.stream.partition.task import state_dir

BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="bench" targetNamespace="bench">
  <bpmn:process id="bench-one-task" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:serviceTask id="work">
      <bpmn:extensionElements><zeebe:taskDefinition type="bench.work" /></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />
    <bpmn:endEvent id="end" />
  </bpmn:process>
</bpmn:definitions>
"""


class _Worker:
    def __init__(self, config: Config, home: Path, name: str, env: dict[str, str]) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.log = (home / f"{name}.log").open("ab")
        args = [
            sys.executable,
            "-m",
            "partita.cli",
            "worker",
            "--bootstrap-servers",
            config.bootstrap,
            "--namespace",
            config.namespace,
            "--home",
            str(home),
        ]
        self.process = subprocess.Popen(
            args, stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **env}
        )

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(30)
        self.log.close()


_QUIET = {"PARTITA_SNAPSHOT_RECORDS": "1000000000", "PARTITA_SNAPSHOT_INTERVAL": "PT24H"}


def _create(client: Client, count: int) -> None:
    value = ProcessInstanceCreationValue(bpmn_process_id="bench-one-task")
    for start in range(0, count, 1000):
        pending = [
            client.submit(ProcessInstanceCreationIntent.CREATE, value)
            for _ in range(min(1000, count - start))
        ]
        for correlation in pending:
            client.result(correlation, timeout=300)


def _wait_for_standby(config: Config, home: Path, timeout: float = 300) -> None:
    """Until the standby's store has applied the log up to (about) its end."""
    probe = new_consumer(kafka_access(config, KafkaRole.OPERATOR), {"group.id": "bench-probe"})
    path = state_dir(home, config.namespace, 0)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            _, end = probe.get_watermark_offsets(
                TopicPartition(config.log_topic, 0), timeout=10, cached=False
            )
            if path.exists():
                try:
                    with PartitionDb(path, read_only=True) as view:
                        if view.position(LAST_APPLIED_POSITION) >= end - 3:
                            return
                except Exception:  # the standby is creating it
                    pass
            time.sleep(0.5)
    finally:
        probe.close()


def _answered(client: Client) -> None:
    value = ProcessInstanceCreationValue(bpmn_process_id="bench-one-task")
    client.send(ProcessInstanceCreationIntent.CREATE, value, timeout=300)


def _failover(client: Client, owner: _Worker, start: Callable[[], Any]) -> float:
    """Seconds from `kill -9` of the owner until a command sent right after is answered."""
    owner.kill()
    began = time.monotonic()
    start()
    _answered(client)
    return round(time.monotonic() - began, 2)


def _one_size(
    base: Config, instances: int, progress: Callable[[str], None], keep_topics: bool
) -> dict[str, Any]:
    with scratch_namespace(base, "bench", keep=keep_topics, partitions=1) as config:
        return _measure(config, instances, progress)


def _measure(config: Config, instances: int, progress: Callable[[str], None]) -> dict[str, Any]:
    apply_topics(admin_client(kafka_access(config, KafkaRole.OPERATOR)), load_specs(config))
    work = Path(tempfile.mkdtemp(prefix="partita-bench-recovery-"))
    bpmn = work / "bench.bpmn"
    bpmn.write_text(BPMN)
    result: dict[str, Any] = {"instances": instances}
    workers: list[_Worker] = []

    def worker(home: str, env: dict[str, str] = _QUIET) -> _Worker:
        workers.append(_Worker(config, work / home, home, env))
        return workers[-1]

    try:
        owner = worker("a")
        with Client(config, timeout=300) as client:
            client.deploy(bpmn)
            progress(f"  {instances} instances in flight...")
            _create(client, instances)
            result["worker_rss_mb"] = round(rss_mb(owner.process.pid), 1)
            result["worker_peak_rss_mb"] = round(sample(owner.process.pid).peak_rss_mb, 1)
        owner.stop()
        result["state_disk_mb"] = round(_disk_mb(state_dir(work / "a", config.namespace, 0)), 1)
        progress("  replay of the whole log without a snapshot...")
        result["replay_without_snapshot"] = replay_partition(config, 0)
        progress("  snapshot and restore...")
        result |= _snapshot_and_restore(config, work)
        progress("  failover: cold, warm, standby...")
        standby_env = {**_QUIET, "PARTITA_STANDBY": "true"}
        with Client(config, timeout=300) as client:
            owner = worker("a")
            _answered(client)  # it owns the partition
            result["failover_cold_s"] = _failover(client, owner, lambda: worker("cold"))
            workers[-1].stop()
            owner = worker("a")  # its own data: warm
            _answered(client)
            result["failover_warm_s"] = _failover(client, owner, lambda: worker("a"))
            workers[-1].stop()
            owner = worker("a", standby_env)
            _answered(client)
            worker("b", standby_env)
            _wait_for_standby(config, work / "b")
            result["failover_standby_s"] = _failover(client, owner, lambda: None)
    finally:
        for running in workers:
            if running.process.poll() is None:
                running.stop()
        shutil.rmtree(work, ignore_errors=True)
    return result


def _disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def _snapshot_and_restore(config: Config, work: Path) -> dict[str, Any]:
    with PartitionDb(state_dir(work / "a", config.namespace, 0)) as db:
        processed = db.position(LAST_PROCESSED_POSITION)
        applied = db.position(LAST_APPLIED_POSITION)
        checkpoint = db.checkpoint(work / "checkpoint")
    producer = store.snapshot_producer(kafka_access(config, KafkaRole.ENGINE))
    began = time.monotonic()
    manifest = store.upload(
        producer,
        config.snapshots_topic,
        0,
        checkpoint,
        processed_position=processed,
        applied_position=applied,
        state_format=STATE_FORMAT,
    )
    figures = {
        "snapshot_bytes": sum(c.size for c in manifest.chunks),
        "snapshot_s": round(time.monotonic() - began, 2),
    }
    began = time.monotonic()
    restore(kafka_access(config, KafkaRole.ENGINE), config.namespace, 0, work / "restored" / "p")
    with PartitionDb(work / "restored" / "p"):
        pass
    figures["restore_s"] = round(time.monotonic() - began, 2)
    return figures


def run(
    config: Config,
    sizes: list[int],
    progress: Callable[[str], None] = print,
    *,
    keep_topics: bool = False,
) -> dict[str, Any]:
    results = []
    for size in sizes:
        progress(f"Recovery bench at {size} in-flight instances...")
        results.append(_one_size(config, size, progress, keep_topics))
    return {"bench": "recovery", "runs": results}
