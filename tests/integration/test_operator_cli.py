"""Operator commands on the real broker: `partita tail` prints exactly the log's matching
records, `partita status` reports partitions, owners, lag and snapshots as Kafka has them, and
`partita export` republishes every EVENT once as JSON to the topics `partita topics apply
--export` made (never creating one itself), resumes, survives a kill -9, and refuses a gap left
by truncation."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from partita.cli import main
from partita.client import Client
from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.security import kafka_access
from partita.log.topics import export_topic_name
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import RecordType, ValueType
from partita.protocol.headers import record_headers
from partita.protocol.intents import JobIntent, ProcessInstanceIntent
from partita.protocol.records import Record
from partita.protocol.values import ProcessInstanceValue
from tests.support.paths import BPMN_FIXTURES, ROOT
from tests.support.worker_processes import create_topics, engine_namespace, read_log, wait_until

pytestmark = pytest.mark.kafka


def _flags(config: Config) -> list[str]:
    return ["--bootstrap-servers", config.bootstrap, "--namespace", config.namespace]


@pytest.fixture(scope="module")
def config(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Config]:
    home = tmp_path_factory.mktemp("operator")
    env = {"PARTITA_SNAPSHOT_RECORDS": "30", "PARTITA_TRUNCATE": "false"}
    with engine_namespace(kafka_bootstrap, home, "o", env) as config:
        with Client(config, timeout=60) as client:
            client.deploy(BPMN_FIXTURES / "one-task.bpmn")
            _run_instances(client, 6)
        yield config


def _run_instances(client: Client, count: int) -> None:
    for n in range(count):
        client.create_instance("one-task", {"n": n})
    done = 0
    while done < count:
        jobs = client.activate_jobs("work", max_jobs=count)
        for key, _ in jobs:
            client.complete_job(key, {"ok": True})
        done += len(jobs)


def _events(config: Config) -> list[Record]:
    log = read_log(config)
    return [
        r
        for records in log.partitions.values()
        for r in records
        if r.record_type is RecordType.EVENT
    ]


def test_tail_prints_exactly_the_matching_records(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    log = read_log(config)
    records = [r for rs in log.partitions.values() for r in rs]
    flags = [*_flags(config), "--from-beginning", "--no-follow"]
    assert main(["tail", "--value-type", "job", "--intent", "completed", *flags]) == 0
    lines = capsys.readouterr().out.splitlines()
    completed = [r for r in records if r.intent is JobIntent.COMPLETED]
    assert len(lines) == len(completed) == 6
    assert all("JOB COMPLETED" in line and "jobType=work" in line for line in lines)

    instance = next(
        r.key
        for r in records
        if r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
        and isinstance(r.value, ProcessInstanceValue)
        and r.value.element_id == "one-task"
    )
    assert main(["tail", "--key", str(instance), *flags]) == 0
    lines = capsys.readouterr().out.splitlines()
    about = [
        r for r in records if instance in (r.key, getattr(r.value, "process_instance_key", None))
    ]
    assert len(lines) == len(about) > 10
    assert f"key={instance}" in lines[0] and "PROCESS_INSTANCE_CREATION" in "".join(lines)
    assert main(["tail", "--value-type", "no-such-type", *flags]) == 1
    assert "unknown value type NO_SUCH_TYPE" in capsys.readouterr().err


def test_status_reports_partitions_owners_lag_and_snapshots(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    def snapshotted() -> bool:
        assert main(["status", "--json", *_flags(config)]) == 0
        status = json.loads(capsys.readouterr().out)
        return all(p["snapshot_position"] is not None for p in status["partitions"])

    wait_until(snapshotted, 60, "a snapshot of every partition")
    assert main(["status", "--json", *_flags(config)]) == 0
    status = json.loads(capsys.readouterr().out)
    consumer = Consumer({"bootstrap.servers": config.bootstrap, "group.id": "status-test"})
    try:
        for partition in status["partitions"]:
            tp = TopicPartition(config.log_topic, partition["partition"])
            low, high = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
            assert (partition["start"], partition["end"]) == (low, high)
            assert partition["owner"] != "-", "every partition has an engine worker"
            assert partition["engine_lag"] is not None and partition["engine_lag"] <= 1
            assert 0 <= partition["snapshot_age_s"] < 120
    finally:
        consumer.close()
    engine = [g for g in status["groups"] if g["group"] == f"{config.namespace}.engine"]
    assert len(engine) == 1 and engine[0]["members"] == 1
    assert main(["status", *_flags(config)]) == 0
    text = capsys.readouterr().out
    assert "log partitions:" in text and f"{config.namespace}.engine" in text


def _exported(config: Config) -> list[tuple[bytes, dict[str, object]]]:
    """Every committed record of every export topic: (key, JSON document)."""
    consumer = Consumer(
        {
            "bootstrap.servers": config.bootstrap,
            "group.id": "export-reader",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    found = []
    try:
        topics = consumer.list_topics(timeout=10).topics
        assignment = [
            TopicPartition(topic, partition, 0)
            for topic in topics
            if topic.startswith(f"{config.namespace}.export.")
            for partition in topics[topic].partitions
        ]
        consumer.assign(assignment)
        at_end = 0
        while at_end < len(assignment):
            message = consumer.poll(10)
            assert message is not None, "no end of the export topics within 10 s"
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF
                at_end += 1
                continue
            found.append((message.key(), json.loads(message.value())))
    finally:
        consumer.close()
    return found


def _assert_exported_once(config: Config) -> int:
    events = {(r.partition_id, r.position): r for r in _events(config)}
    exported = _exported(config)
    seen = [(d["partition"], d["position"]) for _, d in exported]
    assert len(seen) == len(set(seen)), "an event was exported twice"
    assert set(seen) == set(events)
    for key, document in exported:
        record = events[(document["partition"], document["position"])]  # type: ignore[index]
        assert document["intent"] == record.intent.name
        assert document["valueType"] == record.value_type.name
        instance = getattr(record.value, "process_instance_key", -1)
        assert key == str(instance if instance > 0 else record.key).encode()
        if isinstance(record.value, ProcessInstanceValue):
            assert document["value"]["elementId"] == record.value.element_id  # type: ignore[index]
    return len(seen)


def test_export_publishes_every_event_once_and_resumes(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "--once", "--name", "exp-a", *_flags(config)]) == 1
    err = capsys.readouterr().err
    assert f"{config.namespace}.export.deployment" in err and "not found" in err
    assert f"run `partita topics apply --export --namespace {config.namespace}`" in err
    assert main(["topics", "apply", "--export", *_flags(config)]) == 0
    capsys.readouterr()

    assert main(["export", "--once", "--name", "exp-a", *_flags(config)]) == 0
    assert "note: " in capsys.readouterr().err  # the group is not in PARTITA_DOWNSTREAM_GROUPS
    first = _assert_exported_once(config)
    topic = export_topic_name(config.namespace, ValueType.PROCESS_INSTANCE)
    assert topic == f"{config.namespace}.export.process-instance"

    with Client(config, timeout=60) as client:
        _run_instances(client, 40)
    killed = subprocess.Popen(
        [sys.executable, "-m", "partita.cli", "export", "--name", "exp-a", *_flags(config)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: len(_exported(config)) > first, 60, "the exporter to make progress")
    finally:
        killed.kill()
        killed.wait(10)
    started = time.monotonic()
    assert main(["export", "--once", "--name", "exp-a", *_flags(config)]) == 0
    assert time.monotonic() - started < 60
    assert _assert_exported_once(config) > first


def test_export_refuses_a_gap_left_by_truncation(
    kafka_bootstrap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = Config(
        bootstrap_servers=kafka_bootstrap, namespace=f"g{uuid.uuid4().hex[:8]}", home=tmp_path
    )
    create_topics(config)
    codec = RecordCodec()
    producer = Producer({"bootstrap.servers": config.bootstrap})

    def produce(count: int) -> None:
        for n in range(count):
            record = Record(
                RecordType.EVENT,
                ValueType.PROCESS_INSTANCE,
                ProcessInstanceIntent.ELEMENT_ACTIVATED,
                ProcessInstanceValue(bpmn_process_id="p", element_id=f"e{n}"),
                key=2251799813685249 + n,
            )
            producer.produce(
                config.log_topic, codec.encode(record), partition=0, headers=record_headers(record)
            )
        assert producer.flush(10) == 0

    produce(5)
    flags = _flags(config)
    assert main(["topics", "apply", "--export", *flags]) == 0
    assert main(["export", "--once", *flags]) == 0
    assert "exported 5 events" in capsys.readouterr().out
    exported = sorted(document["value"]["elementId"] for _, document in _exported(config))
    assert exported == ["e0", "e1", "e2", "e3", "e4"]  # the five events, each once
    produce(5)  # offsets 5..9, then truncated without waiting for the exporter
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    futures = admin.delete_records([TopicPartition(config.log_topic, 0, 8)], request_timeout=30)
    for future in futures.values():
        future.result()
    assert main(["export", "--once", *flags]) == 1
    err = capsys.readouterr().err
    assert "position 5 is below the log start 8" in err and "PARTITA_DOWNSTREAM_GROUPS" in err
    assert main(["export", "--once", "--skip-truncated", *flags]) == 0
    captured = capsys.readouterr()
    assert "skipping a gap" in captured.err and "exported 2 events" in captured.out
    elements = sorted(d["value"]["elementId"] for _, d in _exported(config))  # type: ignore[index]
    # offsets 0-4 (e0-e4) from the first run, then 8 and 9 (e3, e4): 5-7 were truncated
    assert elements == ["e0", "e1", "e2", "e3", "e3", "e4", "e4"]
