"""Producers and consumers in other languages, with nothing but avro/ and the docs.

A Java program (Apache Avro's BinaryMessageEncoder + kafka-clients) and a Node.js program (avsc +
kafkajs) produce commands to the ingress topic `<ns>.commands` of the real broker that the
Python codec decodes exactly and a real engine worker admits, copies into the log and
processes; they also decode records that Python wrote. Both compute the schema fingerprint and
Kafka's default partition of correlation keys themselves, which must agree with Python's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.security import kafka_access
from partita.log.topics import apply_topics, load_specs
from partita.protocol import headers
from partita.protocol.codec import RecordCodec
from partita.protocol.convert import short_name
from partita.protocol.enums import RecordType, RejectionType, ValueType
from partita.protocol.intents import JobIntent, MessageIntent, ProcessInstanceCreationIntent
from partita.protocol.records import Record
from partita.protocol.routing import partition_for_correlation_key
from partita.protocol.schemas import current_schema
from partita.protocol.values import JobValue, MessageValue, ProcessInstanceCreationValue
from tests.support.paths import ROOT
from tests.support.sample_records import sample_record
from tests.support.worker_processes import committed_messages, engine_namespace, wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.interop]

SCHEMA = str(ROOT / "avro" / "record.avsc")
CODEC = RecordCodec()
Runner = Callable[..., list[str]]


def _run(cmd: list[str], cwd: Path, timeout: float = 120) -> list[str]:
    result = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, f"{cmd} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout.splitlines()


@pytest.fixture(scope="session")
def java() -> Runner:
    project = ROOT / "tests" / "interop" / "java"
    assert shutil.which("mvn"), "Maven is needed to build the Java interop program"
    _run(["mvn", "-B", "-q", "package", "-DskipTests"], project, timeout=600)
    classpath = f"{project / 'target' / 'classes'}:{project / 'target' / 'lib' / '*'}"

    def run(*args: str) -> list[str]:
        cmd = ["java", "-Dfile.encoding=UTF-8", "-Dsun.stdout.encoding=UTF-8", "-cp", classpath]
        return _run([*cmd, "io.partita.interop.Interop", *args], project)

    return run


@pytest.fixture(scope="session")
def node() -> Runner:
    project = ROOT / "tests" / "interop" / "node"
    assert shutil.which("npm"), "Node.js and npm are needed for the Node interop program"
    _run(["npm", "install", "--no-audit", "--no-fund", "--silent"], project, timeout=600)

    def run(*args: str) -> list[str]:
        return _run(["node", "interop.js", *args], project)

    return run


@pytest.fixture(params=["java", "node"])
def other(request: pytest.FixtureRequest) -> Runner:
    runner: Runner = request.getfixturevalue(request.param)
    return runner


@pytest.fixture
def log_topic(config: Config) -> str:
    """The log of a namespace no engine runs in: the test writes it as the engine would."""
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    apply_topics(admin, load_specs(config))
    return config.log_topic


@pytest.fixture(scope="module")
def engine(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Config]:
    """A namespace with a real engine worker; at the end it stops cleanly and its state equals
    a replay of the log."""
    with engine_namespace(kafka_bootstrap, tmp_path_factory.mktemp("interop"), "i") as config:
        yield config


def test_fingerprint_and_partitioner_agree_with_python(other: Runner) -> None:
    assert other("fingerprint", SCHEMA) == [current_schema().fingerprint_bytes.hex()]
    keys = ["21", "order-4711", "order-0815", "ünïcödé", "x" * 40]
    assert other("partition", "7", *keys) == [
        str(partition_for_correlation_key(k, 7)) for k in keys
    ]


def _read(config: Config, topic: str, at: list[tuple[int, int]]) -> list[tuple[Record, Any]]:
    consumer = Consumer(
        {
            "bootstrap.servers": config.bootstrap,
            "group.id": f"t-{uuid.uuid4()}",
            "enable.auto.commit": False,
        }
    )
    out = []
    try:
        for partition, offset in at:
            consumer.assign([TopicPartition(topic, partition, offset)])
            msg = consumer.poll(15)
            assert msg is not None and not msg.error(), msg and msg.error()
            record = CODEC.decode(msg.value(), topic=topic, partition=partition, offset=offset)
            out.append((record, msg))
    finally:
        consumer.close()
    return out


def _processed(
    config: Config, partition: int, ingress_offset: int, timeout: float = 60
) -> tuple[Record, Any, list[Record]]:
    """What a client finds on the log for the command it wrote at `ingress_offset` of
    `<ns>.commands`/`partition`: the engine's copy of it (header `partitaIngressOffset`) and
    the events or rejection whose sourceRecordPosition is the copy's log offset."""
    found: dict[str, tuple[Record, Any, list[Record]]] = {}

    def done() -> bool:
        records = committed_messages(config, config.log_topic, partition)
        for record, msg in records:
            offset = headers.header(msg.headers(), headers.INGRESS_OFFSET)
            if record.record_type is RecordType.COMMAND and offset == str(ingress_offset).encode():
                results = [
                    r
                    for r, _ in records
                    if r.record_type is not RecordType.COMMAND
                    and r.source_record_position == record.position
                ]
                found["it"] = (record, msg, results)
                return bool(results)
        return False

    wait_until(
        done, timeout, f"the results of {config.commands_topic}/{partition}@{ingress_offset}"
    )
    return found["it"]


def test_commands_produced_by_another_language_decode_exactly_and_are_processed(
    other: Runner, engine: Config
) -> None:
    config = engine
    placed = [
        json.loads(line) for line in other("produce", config.bootstrap, config.namespace, SCHEMA)
    ]
    records = _read(config, config.commands_topic, [(p["partition"], p["offset"]) for p in placed])
    (message, message_raw), (creation, _), (job, _) = records
    source = "java" if message.engine_version.startswith("java") else "node"
    correlation_key = "order-4711" if source == "java" else "order-0815"

    assert message.record_type is RecordType.COMMAND and message.intent is MessageIntent.PUBLISH
    sent_message = MessageValue(
        name="payment-received",
        correlation_key=correlation_key,
        time_to_live=60000 if source == "java" else 0,
        variables='{"amount": 99.5}' if source == "java" else '{"amount": 12}',
        message_id="m-1" if source == "java" else "n-1",
    )
    assert message.value == sent_message
    # the producer's own default partitioner put the message where the engine routes it
    assert placed[0]["partition"] == partition_for_correlation_key(
        correlation_key, config.partitions
    )
    assert headers.header(message_raw.headers(), "intent") == b"PUBLISH"

    assert creation.intent is ProcessInstanceCreationIntent.CREATE
    assert creation.value == ProcessInstanceCreationValue(
        bpmn_process_id="order-process",
        variables='{"orderId": 4711}' if source == "java" else '{"orderId": 815}',
        fetch_variables=("total",),
    )
    assert job.intent is JobIntent.COMPLETE and job.partition_id == 1
    assert job.key == 2251799813685249 + (41 if source == "java" else 42)
    assert job.value == JobValue(variables='{"paid": true}', custom_headers={"source": source})
    assert placed[2]["partition"] == 0

    # what the client sees: each command copied into the same partition of the log, then the
    # engine's answer pointing at that copy
    (copy, copy_raw, (published, *_)), (_, _, (not_deployed,)), (_, _, (no_job,)) = (
        _processed(config, p["partition"], p["offset"]) for p in placed
    )
    assert copy.intent is MessageIntent.PUBLISH and copy.value == sent_message
    assert copy.partition_id == placed[0]["partition"] + 1
    assert copy.source_record_position == -1
    assert headers.header(copy_raw.headers(), "intent") == b"PUBLISH"
    assert published.record_type is RecordType.EVENT
    assert published.intent is MessageIntent.PUBLISHED
    assert published.value.correlation_key == correlation_key
    assert not_deployed.rejection_type is RejectionType.NOT_FOUND
    assert "order-process" in not_deployed.rejection_reason
    assert no_job.intent is JobIntent.COMPLETE
    assert no_job.rejection_type is RejectionType.NOT_FOUND


def _expected_json(record: Record) -> dict[str, Any]:
    """The record as Avro's JSON-ish rendering shows it: plain values, enums as names."""
    converter = CODEC._by_class[type(record.value)]
    value = converter.to_avro(record.value)
    return {
        "key": record.key,
        "recordType": record.record_type.name,
        "valueType": record.value_type.name,
        "intent": record.intent.name,
        "value": value,
    }


def _same(expected: Any, got: Any) -> bool:
    """Equal across languages: Java prints bytes as Latin-1 text, Node as {"type": "Buffer"},
    and Node prints 64-bit longs (BigInt) as decimal strings."""
    if isinstance(expected, bytes):
        if isinstance(got, str):
            return got.encode("latin-1") == expected
        if isinstance(got, dict):
            return bytes(got.get("data", [])) == expected
        return False
    if isinstance(expected, bool) or expected is None:
        return got == expected
    if isinstance(expected, int):
        return (int(got) if isinstance(got, str) else got) == expected
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and set(got) == set(expected)
            and all(_same(expected[k], got[k]) for k in expected)
        )
    if isinstance(expected, list | tuple):
        return len(got) == len(expected) and all(
            _same(e, g) for e, g in zip(expected, got, strict=True)
        )
    return bool(got == expected)


def test_records_written_by_python_decode_exactly_in_another_language(
    other: Runner, config: Config, log_topic: str
) -> None:
    producer = Producer({"bootstrap.servers": config.bootstrap})
    sent = [sample_record(value_type) for value_type in ValueType]
    for record in sent:
        producer.produce(
            log_topic, CODEC.encode(record), partition=0, headers=headers.record_headers(record)
        )
    assert producer.flush(30) == 0

    lines = other("consume", config.bootstrap, log_topic, SCHEMA, str(len(sent)))

    decoded = [json.loads(line) for line in lines]
    assert [d["headerIntent"] for d in decoded] == [r.intent.name for r in sent]
    for record, seen in zip(sent, decoded, strict=True):
        got = seen["record"]
        if isinstance(got["value"], dict) and len(got["value"]) == 1:
            ((branch, inner),) = got["value"].items()  # avsc's wrapped union
            if short_name(branch).endswith("Value"):
                got["value"] = inner
        expected = _expected_json(record)
        actual = {k: got[k] for k in expected}
        assert _same(expected, actual), (record.value_type, expected, actual)
