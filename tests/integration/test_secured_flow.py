"""The whole flow on the secured local broker (SASL_SSL, ACLs enforced), every part under its
own principal with only its role's ACLs (`partita acls --apply`, run by the admin):

- operator: `partita topics apply` (job topics and export topics too);
- engine: a real `partita worker`, snapshots every 40 records, truncation held back by the
  exporter's group;
- client: deploys, creates instances awaiting their results, publishes messages whose
  correlation keys route them to the other partition than the instance;
- job-worker: a push worker and an exactly-once push worker;
- exporter: `partita export --once`; analytics: `partita analytics`, whose figures must equal
  the instances run here.

And Kafka itself refuses the client principal a record on the log or a job topic."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

from partita.client import Client, JobWorker, commands
from partita.config import Config, KafkaRole
from partita.localkafka.credentials import user_of
from partita.localkafka.secure import SecureKafka
from partita.log.clients import new_consumer, new_producer
from partita.log.security import kafka_access
from partita.log.topics import export_topic_name
from partita.protocol.enums import ValueType
from partita.protocol.keys import kafka_partition_of_key
from partita.protocol.routing import partition_for_correlation_key
from tests.support.local_kafka import free_port
from tests.support.paths import ROOT
from tests.support.worker_processes import (
    BUILTIN_ENGINE,
    WorkerProcess,
    clean_kafka_env,
    wait_until,
)

pytestmark = pytest.mark.kafka

PARTITIONS = 2
INSTANCES = 6
TOKEN = f"secured-flow-{uuid.uuid4().hex}"
BPMN = b"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d" targetNamespace="t">
  <bpmn:message id="m" name="paid">
    <bpmn:extensionElements>
      <zeebe:subscription correlationKey="=orderId" />
    </bpmn:extensionElements>
  </bpmn:message>
  <bpmn:process id="secured-order" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="ship" />
    <bpmn:serviceTask id="ship">
      <bpmn:extensionElements><zeebe:taskDefinition type="ship" /></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="ship" targetRef="wait" />
    <bpmn:intermediateCatchEvent id="wait"><bpmn:messageEventDefinition messageRef="m" />
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="wait" targetRef="pack" />
    <bpmn:serviceTask id="pack">
      <bpmn:extensionElements><zeebe:taskDefinition type="pack" /></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f4" sourceRef="pack" targetRef="end" />
    <bpmn:endEvent id="end" />
  </bpmn:process>
</bpmn:definitions>
"""


@dataclass(frozen=True, slots=True)
class Secured:
    """One namespace on the secured broker and each role's configuration."""

    kafka: SecureKafka
    admin: Config
    home: Path

    def as_role(self, role: KafkaRole) -> Config:
        """The namespace as the principal of `role` sees it (its own properties file only)."""
        return replace(self.admin, kafka_config=self.kafka.role(role), kafka_role_configs=())

    def env(self, role: KafkaRole, **extra: str) -> dict[str, str]:
        return {**clean_kafka_env(), "PARTITA_KAFKA_CONFIG": str(self.kafka.role(role)), **extra}

    def flags(self) -> list[str]:
        return ["--bootstrap-servers", self.kafka.bootstrap, "--namespace", self.admin.namespace]

    def partita(self, args: list[str], env: dict[str, str]) -> str:
        result = subprocess.run(
            [sys.executable, "-m", "partita.cli", *args, *self.flags()],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert result.returncode == 0, f"partita {args}:\n{result.stdout}{result.stderr}"
        return result.stdout


@pytest.fixture(scope="module")
def secured(
    secure_kafka: SecureKafka, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Secured]:
    home = tmp_path_factory.mktemp("secured-flow")
    namespace = f"sf{uuid.uuid4().hex[:8]}"
    admin = Config(
        bootstrap_servers=secure_kafka.bootstrap,
        namespace=namespace,
        partitions=PARTITIONS,
        home=home,
        kafka_config=secure_kafka.admin,
        downstream_groups=(f"{namespace}.export", f"{namespace}.analytics"),
    )
    yield Secured(secure_kafka, admin, home)


def _grant(secured: Secured) -> None:
    """The admin grants each role's principal exactly `partita acls --role` of it."""
    admin_env = {
        **secured.env(KafkaRole.OPERATOR),
        "PARTITA_KAFKA_CONFIG": str(secured.kafka.admin),
        "PARTITA_DOWNSTREAM_GROUPS": ",".join(secured.admin.downstream_groups),
    }
    for role in KafkaRole:
        out = secured.partita(
            ["acls", "--role", str(role), "--principal", f"User:{user_of(role)}", "--apply"],
            admin_env,
        )
        assert "created" in out or "exists" in out, out


def _published_elsewhere(keys: dict[str, int]) -> list[str]:
    """The order ids whose messages route to another partition than their instance."""
    return [
        order
        for order, key in keys.items()
        if partition_for_correlation_key(order, PARTITIONS) != kafka_partition_of_key(key)
    ]


def _pick_orders() -> list[str]:
    """Order ids whose messages route to each partition (so both directions are crossed)."""
    by_partition: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    n = 0
    while min(len(v) for v in by_partition.values()) < INSTANCES // PARTITIONS:
        order = f"order-{n}"
        by_partition[partition_for_correlation_key(order, PARTITIONS)].append(order)
        n += 1
    return [order for orders in by_partition.values() for order in orders[: INSTANCES // 2]]


def _refusal(config: Config, topic: str) -> int | None:
    """The error code Kafka gives the client principal for one record on `topic`."""
    producer = new_producer(kafka_access(config, KafkaRole.CLIENT), {"message.timeout.ms": 15000})
    seen: list[int | None] = []
    producer.produce(
        topic, b"forged", partition=0, on_delivery=lambda e, _m: seen.append(e and e.code())
    )
    producer.flush(30)
    return seen[0] if seen else None


def _log_start(config: Config, partition: int) -> int:
    consumer = new_consumer(kafka_access(config, KafkaRole.OPERATOR), {"group.id": "probe"})
    try:
        low, _ = consumer.get_watermark_offsets(
            TopicPartition(config.log_topic, partition), timeout=10, cached=False
        )
        return int(low)
    finally:
        consumer.close()


def _served(url: str) -> str:
    try:
        return json.dumps(_get(url))
    except OSError as error:
        return f"GET {url}: {error}"


def _get(url: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_every_part_runs_under_its_own_principal(secured: Secured) -> None:  # noqa: PLR0915
    _grant(secured)
    ns = secured.admin.namespace
    secured.partita(
        ["topics", "apply", "--job-type", "ship", "--job-type", "pack", "--export"],
        {**secured.env(KafkaRole.OPERATOR), "PARTITA_PARTITIONS": str(PARTITIONS)},
    )
    client_config = secured.as_role(KafkaRole.CLIENT)
    assert _refusal(client_config, secured.admin.log_topic) == (
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    )
    assert _refusal(client_config, f"{ns}.jobs.ship") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _refusal(client_config, secured.admin.snapshots_topic) == (
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    )

    analytics_port = free_port()
    analytics_log = secured.home / "analytics.log"
    with analytics_log.open("ab") as out:
        analytics = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "partita.cli",
                "analytics",
                *secured.flags(),
                "--port",
                str(analytics_port),
                "--data-dir",
                str(secured.home / "tables"),
            ],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=secured.env(
                KafkaRole.ANALYTICS,
                PARTITA_ANALYTICS_TOKEN=TOKEN,
                PARTITA_DOWNSTREAM_GROUPS=",".join(secured.admin.downstream_groups),
            ),
        )
    engine = WorkerProcess(
        secured.as_role(KafkaRole.ENGINE),
        secured.home / "engine",
        engine=BUILTIN_ENGINE,
        env=secured.env(
            KafkaRole.ENGINE,
            PARTITA_SNAPSHOT_RECORDS="40",
            PARTITA_DOWNSTREAM_GROUPS=",".join(secured.admin.downstream_groups),
        ),
    ).start()
    worker_config = secured.as_role(KafkaRole.JOB_WORKER)
    shipper = JobWorker(worker_config, "shipper")
    packer = JobWorker(worker_config, "packer", exactly_once=True)

    @shipper.task("ship")
    def ship(orderId: str) -> dict[str, object]:  # noqa: N803 - the process variable
        return {"shipped": orderId}

    @packer.task("pack")
    def pack(orderId: str) -> dict[str, object]:  # noqa: N803
        return {"packed": orderId}

    threads = [threading.Thread(target=w.run, daemon=True) for w in (shipper, packer)]
    for thread in threads:
        thread.start()
    try:
        with Client(client_config, timeout=120) as client:
            client.deploy(("secured-order.bpmn", BPMN))
            orders = _pick_orders()
            pending = {
                order: client.connection.produce(
                    commands.create_instance("secured-order", {"orderId": order}, await_result=True)
                )
                for order in orders
            }
            for order in orders:
                client.publish_message("paid", order, {"paidBy": "card"}, ttl_ms=600_000)
            results = {order: client.result(c, 120) for order, c in pending.items()}
            keys: dict[str, int] = {}
            assert sorted(results) == sorted(orders)
            for order, reply in results.items():
                keys[order] = reply.value.process_instance_key
                variables = json.loads(reply.value.variables)
                assert variables["shipped"] == order and variables["packed"] == order
                assert variables["paidBy"] == "card"
            crossed = _published_elsewhere(keys)
            assert crossed, "no message had to cross partitions"

        secured.partita(["export", "--once", "--name", "secured"], secured.env(KafkaRole.EXPORTER))
        exported = _exported_instances(secured)
        assert set(keys.values()) <= exported

        late: list[int] = []
        with Client(client_config, timeout=120) as client:

            def truncated() -> bool:
                """Another instance (more records, so another snapshot) until truncation
                passes the offsets the exporter and the analytics committed."""
                if any(_log_start(secured.admin, p) > 0 for p in range(PARTITIONS)):
                    return True
                order = f"late-{len(late)}"
                client.publish_message("paid", order, ttl_ms=600_000)
                reply = client.create_instance(
                    "secured-order", {"orderId": order}, await_result=True
                )
                late.append(reply.value.process_instance_key)
                return False

            wait_until(
                truncated,
                120,
                "the engine to snapshot and truncate its log below the downstream groups",
                engine.tail,
            )
        secured.partita(["export", "--once", "--name", "secured"], secured.env(KafkaRole.EXPORTER))
        assert _exported_instances(secured) == {*keys.values(), *late}

        url = f"http://127.0.0.1:{analytics_port}/api/processes"

        def counted() -> bool:
            try:
                processes = _get(url)
            except OSError:
                return False
            return any(
                p["bpmnProcessId"] == "secured-order" and p["completed"] == len(keys) + len(late)
                for p in processes
            )

        wait_until(
            counted,
            120,
            "the analytics to count every instance",
            lambda: f"{_served(url)}\n{analytics_log.read_text()}",
        )
    finally:
        shipper.stop()
        packer.stop()
        for thread in threads:
            thread.join(60)
        analytics.send_signal(signal.SIGTERM)
        try:
            analytics.wait(30)
        except subprocess.TimeoutExpired:
            analytics.kill()
        assert engine.stop() == 0, engine.tail()
    verify = engine.verify_replay()
    assert verify.returncode == 0, verify.stdout + verify.stderr


def _exported_instances(secured: Secured) -> set[int]:
    """Process instance keys of the exported PROCESS_INSTANCE events (read as the admin)."""
    topic = export_topic_name(secured.admin.namespace, ValueType.PROCESS_INSTANCE)
    consumer = new_consumer(
        kafka_access(secured.admin, KafkaRole.OPERATOR),
        {
            "group.id": "export-reader",
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        },
    )
    keys: set[int] = set()
    try:
        for partition in range(PARTITIONS):
            consumer.assign([TopicPartition(topic, partition, 0)])
            while True:
                message = consumer.poll(10)
                assert message is not None, f"no end of {topic}/{partition}"
                if message.error() is not None:
                    break
                document = json.loads(message.value())
                keys.add(int(document["value"]["processInstanceKey"]))
    finally:
        consumer.close()
    return keys
