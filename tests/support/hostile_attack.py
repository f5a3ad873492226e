"""What the hostile-producer tests (tests/integration/test_hostile_*.py) share: the worker
under attack in a namespace of its own, a raw producer of ingress records, and readers of the
log and of what `partita status` counts.

Whatever a client writes to `<ns>.commands`, the log holds only what the engine chose to write,
the worker keeps processing, and a warm and a cold restart replay to the same state: each test
module's `attack` fixture (tests/integration/conftest.py) checks the last two at its end.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import Producer

from partita.client import Client
from partita.config import Config
from partita.ops.status import collect
from partita.protocol.codec import PRODUCER_MAX_BYTES
from partita.protocol.enums import RecordType
from partita.protocol.headers import INGRESS_OFFSET, record_headers
from partita.protocol.intents import ProcessInstanceCreationIntent
from partita.protocol.records import Record
from partita.protocol.values import JobValue
from tests.support.worker_processes import (
    BUILTIN_ENGINE,
    CODEC,
    WorkerProcess,
    committed_messages,
    create_topics,
    read_log,
    wait_until,
)

TASK_PROCESS = b"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d" targetNamespace="t">
  <bpmn:process id="hostile" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="task"/>
    <bpmn:serviceTask id="task">
      <bpmn:extensionElements><zeebe:taskDefinition type="hostile-task"/></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="task" targetRef="end"/>
    <bpmn:endEvent id="end"/>
  </bpmn:process>
</bpmn:definitions>
"""

REGEX_PROCESS = b"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="r" targetNamespace="t">
  <bpmn:process id="regex" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="check"/>
    <bpmn:exclusiveGateway id="check" default="f3"/>
    <bpmn:sequenceFlow id="f2" sourceRef="check" targetRef="matched">
      <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression"
        >=matches(text, pattern)</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="f3" sourceRef="check" targetRef="other"/>
    <bpmn:endEvent id="matched"/>
    <bpmn:endEvent id="other"/>
  </bpmn:process>
</bpmn:definitions>
"""

BACKPRESSURE_LAG = 50


def log_messages(config: Config, partition: int) -> list[tuple[int, dict[str, bytes], Record]]:
    """(offset, headers, record) of every committed record of one log partition; a record
    the engine wrote that does not decode fails the test."""
    return [
        (record.position, {k: v for k, v in msg.headers() or [] if isinstance(v, bytes)}, record)
        for record, msg in committed_messages(config, config.log_topic, partition)
    ]


def copy_of(config: Config, partition: int, ingress_offset: int) -> Record | None:
    """The engine's copy on the log of the client command at `ingress_offset`, if any."""
    wanted = str(ingress_offset).encode()
    for _, headers, record in log_messages(config, partition):
        if headers.get(INGRESS_OFFSET) == wanted:
            return record
    return None


class Attack:
    """The worker under attack and a raw producer of ingress records."""

    def __init__(self, config: Config, worker: WorkerProcess) -> None:
        self.config = config
        self.worker = worker
        self.producer = Producer(
            {
                "bootstrap.servers": config.bootstrap,
                "linger.ms": 2,
                "message.max.bytes": PRODUCER_MAX_BYTES,
            }
        )

    def send(
        self,
        partition: int,
        value: bytes,
        headers: list[tuple[str, bytes | str | None]] | None = None,
    ) -> int:
        """Produce one raw record to ingress partition `partition`; its ingress offset."""
        offsets: list[int] = []
        self.producer.produce(
            self.config.commands_topic,
            value,
            partition=partition,
            headers=headers or [],
            on_delivery=lambda error, message: offsets.append(message.offset()),
        )
        assert self.producer.flush(30) == 0
        return offsets[0]

    def send_record(
        self, partition: int, record: Record, extra: list[tuple[str, bytes | str | None]] = ()
    ) -> int:
        return self.send(partition, CODEC.encode(record), [*record_headers(record), *extra])

    def rejection_of(self, partition: int, ingress_offset: int, timeout: float = 60) -> Record:
        """The rejection the engine wrote on log partition `partition` for the ingress record
        at `ingress_offset` (refused records never reach the log: the reason names them)."""
        where = f"offset {ingress_offset} of {self.config.commands_topic}/{partition}"
        found: list[Record] = []

        def rejected() -> bool:
            found[:] = [
                r
                for r in read_log(self.config).partitions[partition]
                if r.record_type is RecordType.COMMAND_REJECTION and where in r.rejection_reason
            ]
            return bool(found)

        wait_until(rejected, timeout, f"the rejection of {where}", self.worker.tail)
        assert len(found) == 1, found
        return found[0]


@contextmanager
def attacked_worker(kafka_bootstrap: str, home: Path) -> Iterator[Attack]:
    """One engine worker (the built-in BPMN engine) in a namespace of its own, with both
    processes deployed. Afterwards the worker restarts warm, then cold (no local state), still
    processes, and `verify-replay` gives the same digests each time."""
    config = Config(
        bootstrap_servers=kafka_bootstrap,
        namespace=f"h{uuid.uuid4().hex[:8]}",
        home=home,
        partitions=2,
    )
    create_topics(config)
    env = {
        "PARTITA_PARTITIONS": "2",
        "PARTITA_BACKPRESSURE_LAG": str(BACKPRESSURE_LAG),
        "PARTITA_REPLY_TOPICS": f"{config.namespace}.app-replies",  # never created
        "PARTITA_SNAPSHOT_RECORDS": "200",
        "PARTITA_TRUNCATE": "false",  # the tests read the whole log; chaos truncates
    }
    worker = WorkerProcess(config, home, engine=BUILTIN_ENGINE, env=env).start()
    with Client(config, timeout=60) as client:
        client.deploy(("hostile.bpmn", TASK_PROCESS), ("regex.bpmn", REGEX_PROCESS))
    yield Attack(config, worker)
    assert worker.stop() == 0, worker.tail()
    assert_replay_equal(worker, "after the attacks (warm)")
    # warm restart: the worker resumes from its store and reaches the same state
    worker.start()
    assert_still_processing(config, worker)
    assert worker.stop() == 0, worker.tail()
    assert_replay_equal(worker, "after a warm restart")
    # cold restart: no local state (snapshots restore it, the log tail replays)
    shutil.rmtree(home / "state", ignore_errors=True)
    worker.start()
    assert_still_processing(config, worker)
    assert worker.stop() == 0, worker.tail()
    assert_replay_equal(worker, "after a cold restart")
    assert "Traceback" not in worker.log.read_text(errors="replace"), worker.tail(80)


def assert_replay_equal(worker: WorkerProcess, when: str) -> None:
    result = worker.verify_replay()
    assert result.returncode == 0, f"{when}: {result.stdout}{result.stderr}"
    assert "differs" not in result.stdout, result.stdout


def assert_still_processing(config: Config, worker: WorkerProcess) -> None:
    """An honest client still gets its instance created and answered."""
    with Client(config, timeout=60) as client:
        created = client.create_instance("hostile", {"honest": True})
        assert created.intent is ProcessInstanceCreationIntent.CREATED, worker.tail()


def job_of(client: Client, instance: int) -> tuple[tuple[int, JobValue], ...]:
    """Activated jobs (key, job), polled until one of them belongs to `instance`."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        batch = client.activate_jobs("hostile-task", max_jobs=50, timeout_ms=60_000)
        if any(job.process_instance_key == instance for _, job in batch):
            return batch
        time.sleep(0.2)
    raise AssertionError(f"no job of instance {instance}")


def count_created(config: Config, partition: int) -> int:
    return sum(
        r.intent is ProcessInstanceCreationIntent.CREATED
        for _, _, r in log_messages(config, partition)
    )


def wait_for_copy(attack: Attack, partition: int, offset: int) -> None:
    """Until the command at ingress `offset` is copied into the log: its batch committed, and
    with it the boundary's counters `partita status` reads."""
    wait_until(
        lambda: copy_of(attack.config, partition, offset) is not None,
        60,
        f"the copy of ingress offset {offset} on log partition {partition}",
        attack.worker.tail,
    )


def turned_away(config: Config) -> dict[str, int]:
    """What `partita status` says the trust boundary turned away, summed over the partitions
    (refused, backpressured, replies_dropped)."""
    totals: dict[str, int] = {}
    for partition in collect(config).partitions:
        for name, value in partition.turned_away.items():
            totals[name] = totals.get(name, 0) + value
    return totals
