"""The user-facing examples in examples/, end to end on the real broker.

A real engine worker runs; the Java job worker (examples/java-worker) works `price` jobs, the
Node.js job worker (examples/node/worker.js) works `notify` jobs, and the Node.js producer
deploys examples/order-pricing.bpmn and creates instances that await their results. None of the
three programs uses Partita code: only avro/record.avsc and the conventions of the docs. They
write commands to the ingress topic `<ns>.commands`; the engine copies each one into the log
and answers there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.cli import main
from engine.config import Config
from engine.protocol.enums import BpmnElementType, RecordType, RejectionType, ValueType
from engine.protocol.headers import INGRESS_OFFSET, header
from engine.protocol.intents import (
    DeploymentIntent,
    Intent,
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
)
from engine.protocol.records import Record
from tests.integration.workers import committed_messages, engine_namespace, read_log

pytestmark = [pytest.mark.kafka, pytest.mark.interop]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BPMN = EXAMPLES / "order-pricing.bpmn"
INSTANCES = 5
COMPLETED = re.compile(r"^order (\d+): instance (\d+) completed with (\{.*\})$")


def _build(cmd: list[str], cwd: Path, what: str) -> None:
    assert shutil.which(cmd[0]), f"{cmd[0]} is needed to build {what}"
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, f"{what}: {cmd} failed:\n{result.stdout}\n{result.stderr}"


@pytest.fixture(scope="module")
def java_worker() -> list[str]:
    """The Java example built as its README says; the command that runs it."""
    project = EXAMPLES / "java-worker"
    _build(["mvn", "-B", "-q", "package", "-DskipTests"], project, "the Java worker")
    return ["java", "-jar", str(project / "target" / "price-worker.jar")]


@pytest.fixture(scope="module")
def node_project() -> Path:
    """The Node example's dependencies installed from its lock file."""
    project = EXAMPLES / "node"
    _build(["npm", "ci", "--no-audit", "--no-fund", "--silent"], project, "the Node example")
    return project


@pytest.fixture(scope="module")
def engine(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Config]:
    """A namespace with push topics for both job types and a real engine worker; at the end the
    worker stops cleanly and its state equals a replay of the log."""
    with engine_namespace(kafka_bootstrap, tmp_path_factory.mktemp("examples"), "x") as config:
        flags = ["--bootstrap-servers", kafka_bootstrap, "--namespace", config.namespace]
        jobs = ["--job-type", "price", "--job-type", "notify"]
        assert main(["topics", "apply", *jobs, *flags]) == 0
        yield config


class Program:
    """An example program in the background, its output in a file."""

    def __init__(self, cmd: list[str], cwd: Path, log: Path) -> None:
        self.log = log
        with log.open("wb") as out:
            self.process = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM (what Ctrl-C does) and wait; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def _cluster(config: Config) -> list[str]:
    return ["--bootstrap-servers", config.bootstrap, "--namespace", config.namespace]


def _producer(node_project: Path, config: Config, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", "producer.js", *_cluster(config), *args],
        cwd=node_project,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _events(config: Config) -> list[Record]:
    return [r for records in read_log(config).partitions.values() for r in records]


def _topic(config: Config, topic: str) -> dict[int, list[tuple[Record, bytes | None]]]:
    """Every committed record of `topic` by partition, in offset order, with the value of its
    `partitaIngressOffset` header (None when it has none)."""
    return {
        partition: [
            (record, header(msg.headers(), INGRESS_OFFSET))
            for record, msg in committed_messages(config, topic, partition)
        ]
        for partition in range(config.partitions)
    }


@dataclass(frozen=True, slots=True)
class Answered:
    """A command an example program wrote to `<ns>.commands`, as a client finds it on the log."""

    sent: Record
    copy: Record
    """The engine's copy on the same partition of the log (header `partitaIngressOffset`)."""
    results: list[Record]
    """The events or rejection whose sourceRecordPosition is the copy's log offset."""


def _answered(config: Config) -> list[Answered]:
    """Every command on the ingress topic with its copy and results; no client wrote the log."""
    ingress = _topic(config, config.commands_topic)
    log = _topic(config, config.log_topic)
    out = []
    for partition, sent in ingress.items():
        records = log.get(partition, [])
        copies = {int(offset): r for r, offset in records if offset is not None}
        assert len(copies) == len(sent), f"partition {partition}: one copy per command"
        for command, _ in sent:
            copy = copies[command.position]
            assert copy.record_type is RecordType.COMMAND
            assert (copy.value_type, copy.intent, copy.value) == (
                command.value_type,
                command.intent,
                command.value,
            )
            results = [r for r, _ in records if r.source_record_position == copy.position]
            out.append(Answered(command, copy, results))
    for records in log.values():
        for record, offset in records:
            if record.engine_version.endswith("-example/1.0"):
                assert offset is not None, f"a client wrote the log: {record}"
    return out


def test_java_and_node_workers_complete_every_instance_the_producer_awaits(
    engine: Config, java_worker: list[str], node_project: Path, tmp_path: Path
) -> None:
    config = engine
    java = Program(
        [*java_worker, *_cluster(config), "--max-jobs", str(INSTANCES)],
        EXAMPLES / "java-worker",
        tmp_path / "java-worker.log",
    )
    node = Program(
        ["node", "worker.js", *_cluster(config)], node_project, tmp_path / "node-worker.log"
    )
    try:
        produced = _producer(node_project, config, "--deploy", str(BPMN), "--count", str(INSTANCES))
        outputs = (
            f"producer:\n{produced.stdout}{produced.stderr}\njava worker:\n{java.output()}"
            f"\nnode worker:\n{node.output()}"
        )
        assert produced.returncode == 0, outputs
        assert java.process.wait(60) == 0, java.output()  # stops by itself after 5 jobs
        assert node.stop() == 0, node.output()
    finally:
        java.kill()
        node.kill()

    lines = produced.stdout.splitlines()
    assert lines[0].startswith("deployed order-pricing.bpmn: process order-pricing now version 1")
    assert lines[-1] == f"{INSTANCES} of {INSTANCES} instances completed"
    results = {}
    for match in filter(None, map(COMPLETED.match, lines)):
        order, instance, variables = match.groups()
        results[int(instance)] = (int(order), json.loads(variables))
    assert sorted(order for order, _ in results.values()) == list(range(1, INSTANCES + 1))
    for order, variables in results.values():
        price = round(25 * order * 1.19, 2)
        assert variables == {
            "orderId": order,
            "amount": 25 * order,
            "tax": round(25 * order * 0.19, 2),
            "price": price,
            "notified": True,
            "notification": f"Order {order}: {price:.2f} charged, tax included",
        }
    assert f"price worker stopped: {INSTANCES} jobs answered: {INSTANCES} completed" in (
        java.output()
    )
    assert f"node worker stopped: {INSTANCES} jobs answered: {INSTANCES} completed" in (
        node.output()
    )

    records = _events(config)
    created = {r.key: r.value.type for r in records if r.intent is JobIntent.CREATED}
    completed = Counter(r.key for r in records if r.intent is JobIntent.COMPLETED)
    assert Counter(created.values()) == {"price": INSTANCES, "notify": INSTANCES}
    assert completed == Counter(created.keys()), "every job COMPLETED exactly once"
    ended = {
        r.value.process_instance_key
        for r in records
        if r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
        and r.value.bpmn_element_type is BpmnElementType.PROCESS
    }
    assert ended == set(results)

    # the programs wrote only the ingress topic; each command answered on the log via its copy
    answered = _answered(config)
    kinds = Counter((a.sent.value_type, a.sent.intent) for a in answered)
    assert kinds == {
        (ValueType.DEPLOYMENT, DeploymentIntent.CREATE): 1,
        (
            ValueType.PROCESS_INSTANCE_CREATION,
            ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT,
        ): INSTANCES,
        (ValueType.JOB, JobIntent.COMPLETE): 2 * INSTANCES,
    }
    expected: dict[Intent, Intent] = {
        DeploymentIntent.CREATE: DeploymentIntent.CREATED,
        ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT: (
            ProcessInstanceCreationIntent.CREATED
        ),
        JobIntent.COMPLETE: JobIntent.COMPLETED,
    }
    for a in answered:
        assert expected[a.sent.intent] in [r.intent for r in a.results], a


def test_an_unknown_process_is_rejected_not_found(engine: Config, node_project: Path) -> None:
    produced = _producer(node_project, engine, "--process", "no-such-process", "--count", "1")
    assert produced.returncode == 1, produced.stdout + produced.stderr
    assert produced.stdout.splitlines() == [
        "order 1: rejected NOT_FOUND process 'no-such-process' is not deployed",
        "0 of 1 instances completed",
    ]
    (asked,) = [
        a
        for a in _answered(engine)
        if getattr(a.sent.value, "bpmn_process_id", None) == "no-such-process"
        and a.sent.intent is ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT
    ]
    (rejection,) = asked.results
    assert rejection.record_type is RecordType.COMMAND_REJECTION
    assert rejection.rejection_type is RejectionType.NOT_FOUND
    assert rejection.intent is ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT


def test_a_kafka_properties_file_that_cannot_be_read_is_named(
    java_worker: list[str], node_project: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-client.properties"
    env = {**os.environ, "PARTITA_KAFKA_CONFIG": str(missing)}
    programs = [
        (java_worker, EXAMPLES / "java-worker", "price worker"),
        (["node", "producer.js"], node_project, "producer"),
        (["node", "worker.js"], node_project, "node worker"),
    ]
    for cmd, cwd, name in programs:
        result = subprocess.run(
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert (result.returncode, result.stderr.strip()) == (
            1,
            f"{name}: PARTITA_KAFKA_CONFIG={missing}: cannot read the Kafka client properties"
            " file (no such file)",
        ), result.stdout
