"""The user-facing examples in examples/, end to end on the real broker.

A real engine worker runs; the Java job worker (examples/java-worker) works `price` jobs, the
Node.js job worker (examples/node/worker.js) works `notify` jobs, and the Node.js producer
deploys examples/order-pricing.bpmn and creates instances that await their results. None of the
three programs uses Partita code: only avro/record.avsc and the conventions of the docs. They
write commands to the ingress topic `<ns>.commands`; the engine copies each one into the log
and answers there.

The same walkthrough runs on the secured local broker (SASL_SSL and mTLS, ACLs enforced), each
program reading a Kafka client properties file of its own principal, with only its role's ACLs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engine.cli import main
from engine.config import Config, KafkaRole
from engine.localkafka import SecureKafka
from engine.localkafka.credentials import Login, user_of
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
from tests.integration.workers import (
    BUILTIN_ENGINE,
    WorkerProcess,
    clean_kafka_env,
    committed_messages,
    engine_namespace,
    read_log,
)

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


@pytest.fixture(scope="module")
def secure_engine(
    secure_kafka: SecureKafka, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Config]:
    """A namespace on the secured broker: topics made by the admin, who also grants the engine,
    client and job-worker principals their roles' ACLs with `partita acls --apply`, and a real
    engine worker running as the engine principal. Programs read the log as the admin."""
    home = tmp_path_factory.mktemp("examples-secure")
    config = Config(
        bootstrap_servers=secure_kafka.bootstrap,
        namespace=f"xs{uuid.uuid4().hex[:8]}",
        home=home,
        kafka_config=secure_kafka.admin,
    )
    admin = Access(_cluster(config), {"PARTITA_KAFKA_CONFIG": str(secure_kafka.admin)})
    jobs = ["--job-type", "price", "--job-type", "notify"]
    _partita(["topics", "apply", *jobs], admin)
    for role, only in (
        (KafkaRole.ENGINE, []),
        (KafkaRole.CLIENT, []),
        (KafkaRole.JOB_WORKER, jobs),
    ):
        principal = f"User:{user_of(role)}"
        _partita(["acls", "--role", str(role), "--principal", principal, *only, "--apply"], admin)
    engine = {"PARTITA_KAFKA_CONFIG": str(secure_kafka.role(KafkaRole.ENGINE))}
    worker = WorkerProcess(config, home / "engine", engine=BUILTIN_ENGINE, env=engine).start()
    try:
        yield config
    finally:
        assert worker.stop() == 0, worker.tail()
    _partita(["verify-replay", *worker.args()], Access([], engine))


def _partita(args: list[str], access: Access) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "engine.cli", *args, *access.flags],
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


def _cluster(config: Config) -> list[str]:
    return ["--bootstrap-servers", config.bootstrap, "--namespace", config.namespace]


def _producer(node_project: Path, access: Access, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", "producer.js", *access.flags, *args],
        cwd=node_project,
        env=access.environment(),
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
    plain = Access(_cluster(engine))
    _walkthrough(
        engine, java_worker, node_project, tmp_path, java=plain, node=plain, producer=plain
    )


def test_the_walkthrough_on_a_secured_cluster_each_program_its_own_principal(
    secure_engine: Config,
    secure_kafka: SecureKafka,
    java_worker: list[str],
    node_project: Path,
    tmp_path: Path,
) -> None:
    """The Java worker as job-worker over SASL_SSL SCRAM-SHA-512 (PARTITA_KAFKA_CONFIG_JOB_WORKER,
    the cluster from the file), the Node worker as job-worker with a client certificate on the
    mTLS listener (--kafka-config), the producer as client over SCRAM-SHA-256
    (PARTITA_KAFKA_CONFIG); each has only its role's ACLs."""
    config = secure_engine
    namespace = ["--namespace", config.namespace]
    worker_scram = secure_kafka.role(KafkaRole.JOB_WORKER)
    worker_mtls = secure_kafka.role(KafkaRole.JOB_WORKER, Login.MTLS)
    client = secure_kafka.role(KafkaRole.CLIENT, Login.SCRAM_SHA_256)
    java, node = _walkthrough(
        config,
        java_worker,
        node_project,
        tmp_path,
        java=Access(namespace, {"PARTITA_KAFKA_CONFIG_JOB_WORKER": str(worker_scram)}),
        node=Access([*namespace, "--kafka-config", str(worker_mtls)]),
        producer=Access(_cluster(config), {"PARTITA_KAFKA_CONFIG": str(client)}),
    )
    assert (
        f"at {secure_kafka.bootstrap} over SASL_SSL (SCRAM-SHA-512), settings from"
        f" PARTITA_KAFKA_CONFIG_JOB_WORKER={worker_scram}" in java
    )
    assert (
        f"at {secure_kafka.mtls_bootstrap} over SSL, settings from --kafka-config={worker_mtls}"
        in node
    )


def _walkthrough(
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
        produced = _producer(
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
    return java_output, node_output


def test_an_unknown_process_is_rejected_not_found(engine: Config, node_project: Path) -> None:
    produced = _producer(
        node_project, Access(_cluster(engine)), "--process", "no-such-process", "--count", "1"
    )
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


@pytest.mark.parametrize("refusal", ["wrong password", "untrusted CA"])
def test_on_the_secured_cluster_a_refused_login_or_certificate_says_what_to_check(
    refusal: str,
    secure_kafka: SecureKafka,
    java_worker: list[str],
    node_project: Path,
    tmp_path: Path,
) -> None:
    good = secure_kafka.role(KafkaRole.JOB_WORKER).read_text()
    if refusal == "wrong password":
        bad = re.sub(r'password="[^"]*"', 'password="not-the-password"', good)
        advice = "check sasl.mechanism and the user and password in sasl.jaas.config"
    else:
        bad = re.sub(
            r"(?m)^ssl.truststore.location=.*$",
            f"ssl.truststore.location={secure_kafka.untrusted_ca_pem}",
            good,
        )
        advice = "is the broker's CA in ssl.truststore.location"
    assert bad != good
    properties = tmp_path / "refused.properties"
    properties.write_text(bad)
    access = Access(["--namespace", "refused"], {"PARTITA_KAFKA_CONFIG": str(properties)})
    programs = [
        ([*java_worker, *access.flags], EXAMPLES / "java-worker", "price worker"),
        (["node", "worker.js", *access.flags], node_project, "node worker"),
    ]
    for cmd, cwd, name in programs:
        started = time.monotonic()
        result = subprocess.run(
            cmd,
            cwd=cwd,
            env=access.environment(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        last = result.stderr.strip().splitlines()[-1]
        assert result.returncode == 1, result.stdout + result.stderr
        assert last.startswith(f"{name}: ") and advice in last, result.stderr
        assert f"PARTITA_KAFKA_CONFIG={properties}" in last
        assert "not-the-password" not in result.stdout + result.stderr
        assert time.monotonic() - started < 60, f"{name} took too long to give up"
