"""Hostile and buggy producers on the real broker: whatever a client writes to `<ns>.commands`,
the log holds only what the engine chose to write, the worker keeps processing, and a warm and
a cold restart replay to the same state.

One engine worker (the built-in BPMN engine) serves the module; each test attacks it and then
checks that honest work still gets through. The module's teardown restarts the worker warm,
then cold (no local state), and compares `verify-replay` digests each time.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from engine.cli import main
from engine.client import Client
from engine.config import Config
from engine.protocol.codec import PRODUCER_MAX_BYTES
from engine.protocol.enums import RecordType, RejectionType, ValueType
from engine.protocol.headers import (
    CORRELATION_ID,
    INGRESS_OFFSET,
    RECORD_TYPE,
    REPLY_PARTITION,
    REPLY_TOPIC,
    ReplyTo,
    record_headers,
)
from engine.protocol.intents import (
    JobBatchIntent,
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    TimerIntent,
)
from engine.protocol.keys import encode_key
from engine.protocol.records import Record, command
from engine.protocol.values import (
    JobBatchValue,
    JobValue,
    ProcessInstanceCreationValue,
    ProcessInstanceValue,
    TimerValue,
)
from tests.integration.workers import (
    BUILTIN_ENGINE,
    CODEC,
    WorkerProcess,
    committed_messages,
    create_topics,
    read_log,
    wait_until,
)

pytestmark = pytest.mark.kafka

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


@pytest.fixture(scope="module")
def attack(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Attack]:
    home = tmp_path_factory.mktemp("hostile")
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
    _assert_replay_equal(worker, "after the attacks (warm)")
    # warm restart: the worker resumes from its store and reaches the same state
    worker.start()
    _assert_still_processing(config, worker)
    assert worker.stop() == 0, worker.tail()
    _assert_replay_equal(worker, "after a warm restart")
    # cold restart: no local state (snapshots restore it, the log tail replays)
    shutil.rmtree(home / "state", ignore_errors=True)
    worker.start()
    _assert_still_processing(config, worker)
    assert worker.stop() == 0, worker.tail()
    _assert_replay_equal(worker, "after a cold restart")
    assert "Traceback" not in worker.log.read_text(errors="replace"), worker.tail(80)


def _assert_replay_equal(worker: WorkerProcess, when: str) -> None:
    result = worker.verify_replay()
    assert result.returncode == 0, f"{when}: {result.stdout}{result.stderr}"
    assert "differs" not in result.stdout, result.stdout


def _assert_still_processing(config: Config, worker: WorkerProcess) -> None:
    """An honest client still gets its instance created and answered."""
    with Client(config, timeout=60) as client:
        created = client.create_instance("hostile", {"honest": True})
        assert created.intent is ProcessInstanceCreationIntent.CREATED, worker.tail()


def _job_of(client: Client, instance: int) -> tuple[tuple[int, JobValue], ...]:
    """Activated jobs (key, job), polled until one of them belongs to `instance`."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        batch = client.activate_jobs("hostile-task", max_jobs=50, timeout_ms=60_000)
        if any(job.process_instance_key == instance for _, job in batch):
            return batch
        time.sleep(0.2)
    raise AssertionError(f"no job of instance {instance}")


def test_a_reply_naming_the_log_writes_nothing_there(attack: Attack) -> None:
    """The reported attack: JOB_BATCH ACTIVATE whose reply topic is the log itself."""
    config = attack.config
    before = read_log(config)
    activate = command(
        JobBatchIntent.ACTIVATE,
        JobBatchValue(type="hostile-task", worker="x", timeout=60_000, max_jobs_to_activate=5),
    )
    reply = ReplyTo(config.log_topic, 1, b"evil")
    attack.send_record(0, activate, reply.headers())
    for topic in (config.commands_topic, config.snapshots_topic, "other.log", "other.replies"):
        attack.send_record(0, activate, ReplyTo(topic, 0, b"evil").headers())
    _assert_still_processing(config, attack.worker)
    after = read_log(config)
    # partition 1 got no record at all from partition 0's batches (no reply, no event)
    new_on_1 = after.partitions[1][len(before.partitions[1]) :]
    assert all(r.partition_id == 2 for r in new_on_1), new_on_1
    assert "dropped the reply" in attack.worker.log.read_text()


def test_replies_to_missing_topics_or_partitions_are_dropped_without_stalling(
    attack: Attack,
) -> None:
    config = attack.config
    creation = command(
        ProcessInstanceCreationIntent.CREATE,
        ProcessInstanceCreationValue(bpmn_process_id="hostile"),
    )
    # allowed but never created; a partition past the replies topic's; a hostile partition
    addresses = [
        ReplyTo(f"{config.namespace}.app-replies", 0, b"missing"),
        ReplyTo(config.replies_topic, 99, b"out-of-range"),
        ReplyTo(config.replies_topic, -5, b"negative"),
    ]
    started = time.monotonic()
    for address in addresses:
        attack.send_record(1, creation, address.headers())
    attack.send_record(
        1, creation, [(REPLY_TOPIC, b"\xff\xfe"), (REPLY_PARTITION, b"\x00"), (CORRELATION_ID, b"")]
    )
    _assert_still_processing(config, attack.worker)
    # well inside the 30 s transaction timeout that a refused produce used to cost
    assert time.monotonic() - started < 25
    assert "aborting batch" not in attack.worker.log.read_text()


def test_forged_events_rejections_and_garbage_never_reach_the_log(attack: Attack) -> None:
    config = attack.config
    key = encode_key(1, 10**6)
    forged_event = Record(
        RecordType.EVENT,
        ValueType.PROCESS_INSTANCE,
        ProcessInstanceIntent.ELEMENT_ACTIVATED,
        ProcessInstanceValue(process_instance_key=key, element_id="x"),
        key,
    )
    forged_rejection = Record(
        RecordType.COMMAND_REJECTION,
        ValueType.JOB,
        JobIntent.COMPLETE,
        JobValue(),
        key,
        rejection_type=RejectionType.NOT_FOUND,
        rejection_reason="forged",
    )
    offsets = {
        "event": attack.send_record(0, forged_event),
        "rejection": attack.send_record(0, forged_rejection),
        # a forged event whose headers say COMMAND: caught after decoding
        "disguised": attack.send(0, CODEC.encode(forged_event), [(RECORD_TYPE, b"COMMAND")]),
        "garbage behind an EVENT header": attack.send(
            0, b"\xc3\x01garbage", [(RECORD_TYPE, b"EVENT")]
        ),
        "garbage": attack.send(0, b"\x00" * 64),
        "empty": attack.send(0, b""),
    }
    for what, offset in offsets.items():
        rejection = attack.rejection_of(0, offset)
        assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT, what
        assert rejection.source_record_position == -1, what
    log = read_log(config)
    assert not log.raw_commands[0]
    events = [r for r in log.partitions[0] if r.record_type is RecordType.EVENT]
    assert all(r.key != key for r in events)
    copies = [r for r in log.partitions[0] if r.record_type is RecordType.COMMAND]
    assert all(r.key != key for r in copies)


def test_internal_intents_and_foreign_keys_are_refused_naming_them(attack: Attack) -> None:
    config = attack.config
    with Client(config, timeout=60) as client:
        created = client.create_instance("hostile", {})
        instance = created.key
        job_key = next(
            k for k, j in _job_of(client, instance) if j.process_instance_key == instance
        )
        partition = (instance >> 51) - 1
        element = next(
            r
            for r in read_log(config).partitions[partition]
            if r.record_type is RecordType.EVENT
            and r.value_type is ValueType.PROCESS_INSTANCE
            and r.intent is ProcessInstanceIntent.ELEMENT_ACTIVATED
            and r.value.element_id == "task"  # type: ignore[union-attr]
            and r.value.process_instance_key == instance  # type: ignore[union-attr]
        )
        internal = [
            command(ProcessInstanceIntent.COMPLETE_ELEMENT, element.value, element.key),
            command(TimerIntent.TRIGGER, TimerValue(process_instance_key=instance), key=instance),
            command(JobIntent.TIME_OUT, JobValue(), key=job_key),
        ]
        for record in internal:
            offset = attack.send_record(partition, record)
            rejection = attack.rejection_of(partition, offset)
            assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT
            assert f"{record.value_type.name} {record.intent.name}" in rejection.rejection_reason
            assert "only the engine may write" in rejection.rejection_reason
        foreign = command(JobIntent.COMPLETE, JobValue(variables="{}"), key=encode_key(77, 1))
        offset = attack.send_record(0, foreign)
        rejection = attack.rejection_of(0, offset)
        assert "belongs to partition 76, but the log has 2" in rejection.rejection_reason
        # the task was not completed behind its job's back: the job still completes it
        completed = client.complete_job(job_key, {"done": True})
        assert completed.intent is JobIntent.COMPLETED


def test_oversized_and_deeply_nested_variables_are_rejected(attack: Attack) -> None:
    config = attack.config
    documents = {
        "deep": '{"a":' * 100_000 + "1" + "}" * 100_000,
        "huge integer": '{"n": ' + "9" * 5000 + "}",
        "too large": json.dumps({"blob": "x" * (4 * 1024 * 1024)}),
    }
    offsets = {}
    for what, variables in documents.items():
        record = command(
            ProcessInstanceCreationIntent.CREATE,
            ProcessInstanceCreationValue(bpmn_process_id="hostile", variables=variables),
        )
        if what == "too large":  # past the record limit: refused before it is decoded
            offsets[what] = attack.send(1, b"\xc3\x01" + b"x" * (4 * 1024 * 1024 - 40 * 1024))
        else:
            offsets[what] = attack.send_record(1, record)
    for what, offset in offsets.items():
        copy: list[Record | None] = [None]

        def answered(offset: int = offset, copy: list[Record | None] = copy) -> bool:
            copy[0] = copy_of(config, 1, offset)
            if copy[0] is None:
                return any(
                    r.record_type is RecordType.COMMAND_REJECTION
                    and f"offset {offset} of {config.commands_topic}/1" in r.rejection_reason
                    for _, _, r in log_messages(config, 1)
                )
            return any(
                r.source_record_position == copy[0].position for _, _, r in log_messages(config, 1)
            )

        wait_until(answered, 60, f"the answer to the {what} command", attack.worker.tail)
        results = [
            r
            for _, _, r in log_messages(config, 1)
            if r.record_type is RecordType.COMMAND_REJECTION
            and (
                (copy[0] is not None and r.source_record_position == copy[0].position)
                or f"offset {offset} of {config.commands_topic}/1" in r.rejection_reason
            )
        ]
        assert [r.rejection_type for r in results] == [RejectionType.INVALID_ARGUMENT], what
    _assert_still_processing(config, attack.worker)


def test_a_flood_past_the_backpressure_limit_is_refused_and_jobs_still_complete(
    attack: Attack,
) -> None:
    config = attack.config
    with Client(config, timeout=60) as client:
        created = client.create_instance("hostile", {})
        batch = _job_of(client, created.key)
        job_key = next(k for k, j in batch if j.process_instance_key == created.key)
        flood = 10 * BACKPRESSURE_LAG
        created_before = _count_created(config, 0)
        creation = command(
            ProcessInstanceCreationIntent.CREATE,
            ProcessInstanceCreationValue(bpmn_process_id="hostile"),
        )
        producer = Producer({"bootstrap.servers": config.bootstrap, "linger.ms": 20})
        value, headers = CODEC.encode(creation), record_headers(creation)
        for _ in range(flood):
            producer.produce(config.commands_topic, value, partition=0, headers=headers)
        assert producer.flush(30) == 0
        # a job completion in the middle of the flood is always accepted
        completed = client.complete_job(job_key, {})
        assert completed.intent is JobIntent.COMPLETED
        exhausted: list[Record] = []

        def every_command_answered() -> bool:
            records = [r for _, _, r in log_messages(config, 0)]
            exhausted[:] = [
                r for r in records if r.rejection_type is RejectionType.RESOURCE_EXHAUSTED
            ]
            created_now = sum(r.intent is ProcessInstanceCreationIntent.CREATED for r in records)
            return len(exhausted) + created_now - created_before >= flood

        wait_until(every_command_answered, 120, "an answer to every flooded command")
        assert exhausted, "the flood never met backpressure"
        reason = exhausted[0].rejection_reason
        assert f"waiting on {config.commands_topic}" in reason
        assert f"over the limit of {BACKPRESSURE_LAG}" in reason
        # and once the flood has drained, new instances are accepted again
        again = client.create_instance("hostile", {})
        assert again.intent is ProcessInstanceCreationIntent.CREATED


def _count_created(config: Config, partition: int) -> int:
    return sum(
        r.intent is ProcessInstanceCreationIntent.CREATED
        for _, _, r in log_messages(config, partition)
    )


def test_a_catastrophic_regular_expression_ends_at_once(attack: Attack) -> None:
    """`(a+)+$` against a long run of a's and a '!' backtracks for ever in a backtracking
    engine; the instance must complete (on the default flow) well within the request time."""
    with Client(attack.config, timeout=60) as client:
        started = time.monotonic()
        result = client.create_instance(
            "regex", {"text": "a" * 5000 + "!", "pattern": "(a+)+$"}, await_result=True
        )
        assert result.value_type is ValueType.PROCESS_INSTANCE_RESULT, result
        assert time.monotonic() - started < 30
    _assert_still_processing(attack.config, attack.worker)


def test_status_shows_what_the_boundary_turned_away(
    attack: Attack, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs last: the attacks above were refused, backpressured and their replies dropped,
    and `partita status` says so per partition (from the engine group's committed offsets)."""
    config = attack.config
    flags = ["--bootstrap-servers", config.bootstrap, "--namespace", config.namespace]

    def counted() -> dict[str, int]:
        assert main(["status", "--json", *flags]) == 0
        partitions = json.loads(capsys.readouterr().out)["partitions"]
        totals: dict[str, int] = {}
        for partition in partitions:
            for name, value in partition["turned_away"].items():
                totals[name] = totals.get(name, 0) + value
        return totals

    wait_until(
        lambda: all(
            counted().get(name, 0) > 0 for name in ("refused", "backpressured", "replies_dropped")
        ),
        30,
        "status to count refusals, backpressure and dropped replies",
    )
    assert main(["status", *flags]) == 0
    assert "turned away:" in capsys.readouterr().out
