"""What the examples tests (tests/integration/test_examples*.py) share: how an example program
reaches the cluster, runs in the background and is read back, and the README's walkthrough with
everything it checks on the log.

The examples are the Java job worker (examples/java-worker), the Node.js job worker and producer
(examples/node). None of them uses Partita code: only avro/record.avsc and the conventions of
the docs. They write commands to the ingress topic `<ns>.commands`; the engine copies each one
into the log and answers there.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from partita.config import Config
from partita.protocol.enums import BpmnElementType, RecordType, ValueType
from partita.protocol.headers import INGRESS_OFFSET, header
from partita.protocol.intents import (
    DeploymentIntent,
    Intent,
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
)
from partita.protocol.records import Record
from tests.support.paths import EXAMPLES, ROOT
from tests.support.worker_processes import clean_kafka_env, committed_messages, read_log

BPMN = EXAMPLES / "order-pricing.bpmn"
INSTANCES = 5
COMPLETED = re.compile(r"^order (\d+): instance (\d+) completed with (\{.*\})$")


def build(cmd: list[str], cwd: Path, what: str) -> None:
    assert shutil.which(cmd[0]), f"{cmd[0]} is needed to build {what}"
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, f"{what}: {cmd} failed:\n{result.stdout}\n{result.stderr}"


def run_partita(args: list[str], access: Access) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "partita.cli", *args, *access.flags],
        cwd=ROOT,
        env=access.environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"partita {args}:\n{result.stdout}{result.stderr}"


@dataclass(frozen=True, slots=True)
class Access:
    """How an example program reaches the cluster: its flags and its environment variables."""

    flags: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def environment(self) -> dict[str, str]:
        return {**clean_kafka_env(), **self.env}


class Program:
    """An example program in the background, its output in a file."""

    def __init__(self, cmd: list[str], cwd: Path, log: Path, access: Access) -> None:
        self.log = log
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [*cmd, *access.flags],
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=access.environment(),
            )

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


def cluster_flags(config: Config) -> list[str]:
    return ["--bootstrap-servers", config.bootstrap, "--namespace", config.namespace]


def run_producer(
    node_project: Path, access: Access, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", "producer.js", *access.flags, *args],
        cwd=node_project,
        env=access.environment(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def log_events(config: Config) -> list[Record]:
    return [r for records in read_log(config).partitions.values() for r in records]


def topic_records(config: Config, topic: str) -> dict[int, list[tuple[Record, bytes | None]]]:
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


def answered_commands(config: Config) -> list[Answered]:
    """Every command on the ingress topic with its copy and results; no client wrote the log."""
    ingress = topic_records(config, config.commands_topic)
    log = topic_records(config, config.log_topic)
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


def walkthrough(
    config: Config,
    java_worker: list[str],
    node_project: Path,
    tmp_path: Path,
    *,
    java: Access,
    node: Access,
    producer: Access,
) -> tuple[str, str]:
    """The README's walkthrough: both workers, five orders; every instance completes with the
    expected variables, every job once, and the programs wrote only the ingress topic.
    Returns the workers' outputs."""
    java_program = Program(
        [*java_worker, "--max-jobs", str(INSTANCES)],
        EXAMPLES / "java-worker",
        tmp_path / "java-worker.log",
        java,
    )
    node_program = Program(["node", "worker.js"], node_project, tmp_path / "node-worker.log", node)
    try:
        produced = run_producer(
            node_project, producer, "--deploy", str(BPMN), "--count", str(INSTANCES)
        )
        outputs = (
            f"producer:\n{produced.stdout}{produced.stderr}\njava worker:\n"
            f"{java_program.output()}\nnode worker:\n{node_program.output()}"
        )
        assert produced.returncode == 0, outputs
        assert java_program.process.wait(60) == 0, outputs  # stops by itself after 5 jobs
        assert node_program.stop() == 0, outputs
    finally:
        java_program.kill()
        node_program.kill()
    java_output, node_output = java_program.output(), node_program.output()

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
    assert f"price worker stopped: {INSTANCES} jobs answered: {INSTANCES} completed" in java_output
    assert f"node worker stopped: {INSTANCES} jobs answered: {INSTANCES} completed" in node_output

    records = log_events(config)
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
    answered = answered_commands(config)
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
    return java_output, node_output
