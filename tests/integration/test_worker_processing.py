"""The partition worker against the real broker: results, replies, rejections, errors,
undecodable records, forwarding, follow-ups, graceful shutdown and verify-replay."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from partita.config import Config, KafkaRole
from partita.log.clients import engine_group, new_consumer
from partita.log.security import kafka_access
from partita.protocol.enums import RecordType, RejectionType, ValueType
from partita.protocol.intents import (
    ErrorIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
)
from partita.protocol.keys import encode_key, kafka_partition_of_key
from partita.protocol.records import command
from partita.protocol.values import ProcessInstanceValue
from tests.support.worker_processes import (
    CODEC,
    WorkerProcess,
    create_topics,
    creation,
    produce,
    read_log,
    unanswered,
    wait_answered,
)

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def shared(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Config, WorkerProcess]]:
    """One worker for the module; each test uses commands of its own and reads its own."""
    home = tmp_path_factory.mktemp("worker")
    config = Config(
        bootstrap_servers=kafka_bootstrap, namespace=f"w{uuid.uuid4().hex[:8]}", home=home
    )
    create_topics(config)
    worker = WorkerProcess(config, home).start()
    yield config, worker
    assert worker.stop() == 0, worker.tail()
    # everything the tests did (bans, cancels, due-date work) is rebuilt exactly by replay
    result = worker.verify_replay()
    assert result.returncode == 0, result.stdout + result.stderr


def _replies(config: Config) -> dict[bytes, object]:
    """Replies on the replies topic by correlation id; a correlation id seen twice fails."""
    consumer = Consumer(
        {
            "bootstrap.servers": config.bootstrap,
            "group.id": "reply-reader",
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    out: dict[bytes, object] = {}
    try:
        for partition in range(3):
            consumer.assign([TopicPartition(config.replies_topic, partition, 0)])
            while (message := consumer.poll(10)) is not None and not message.error():
                headers = dict(message.headers() or [])
                correlation = headers["kafka_correlationId"]
                assert correlation not in out, f"two replies for {correlation!r}"
                out[correlation] = CODEC.decode(message.value())
    finally:
        consumer.close()
    return out


def _count(config: Config) -> int:
    log = read_log(config)
    return sum(len(log.commands(p)) + len(log.raw_commands[p]) for p in range(config.partitions))


def test_n_commands_give_exactly_n_results_in_log_order_with_replies(
    shared: tuple[Config, WorkerProcess],
) -> None:
    config, worker = shared
    before = _count(config)
    n = 60
    produce(config, [(i % 3, creation(i)) for i in range(n)], reply=True)

    log = wait_answered(config, before + n, 60, worker)

    for partition in range(3):
        results = log.results_of(partition)
        positions = [c.position for c in log.commands(partition)]
        for position in positions:
            created = [
                r for r in results[position] if r.intent is ProcessInstanceCreationIntent.CREATED
            ]
            assert len(created) == 1, (partition, position, results[position])
            assert len(results[position]) == 5  # CREATED + 4 element events
            assert kafka_partition_of_key(created[0].key) == partition
        events = [r for r in log.partitions[partition] if r.record_type is RecordType.EVENT]
        sources = [e.source_record_position for e in events]
        assert sources == sorted(sources), "results are in the log order of their commands"

    replies = _replies(config)
    sent = {f"corr-{i}".encode() for i in range(n)}
    answered = {corr: record for corr, record in replies.items() if corr in sent}
    assert set(answered) == sent  # every request answered once, correlation id echoed
    by_position = {c.position: c for p in range(3) for c in log.commands(p)}
    for record in answered.values():
        assert record.intent is ProcessInstanceCreationIntent.CREATED
        assert record.source_record_position in by_position


def test_rejections_errors_and_banning(shared: tuple[Config, WorkerProcess]) -> None:
    config, worker = shared
    before = _count(config)
    produce(
        config,
        [
            (0, creation(1, "reject-me")),
            (0, creation(2, "explode")),
            (0, creation(3, "fragile", explodeOnCancel=True)),
        ],
    )
    log = wait_answered(config, before + 3, 60, worker)
    results = log.results_of(0)
    commands = log.commands(0)[-3:]
    (rejected,) = results[commands[0].position]
    assert rejected.record_type is RecordType.COMMAND_REJECTION
    assert rejected.rejection_type is RejectionType.NOT_FOUND
    assert "reject-me" in rejected.rejection_reason
    exploded = results[commands[1].position]
    assert [r.value_type for r in exploded] == [
        ValueType.ERROR,
        ValueType.PROCESS_INSTANCE_CREATION,
    ]
    assert (
        exploded[0].intent is ErrorIntent.CREATED and "boom" in exploded[0].value.exception_message
    )
    assert exploded[1].rejection_type is RejectionType.PROCESSING_ERROR
    fragile_key = next(
        r.key
        for r in results[commands[2].position]
        if r.intent is ProcessInstanceCreationIntent.CREATED
    )

    cancel = command(
        ProcessInstanceIntent.CANCEL,
        ProcessInstanceValue(process_instance_key=fragile_key),
        key=fragile_key,
    )
    produce(config, [(0, cancel), (0, cancel)])
    log = wait_answered(config, before + 5, 60, worker)
    results = log.results_of(0)
    first, second = log.commands(0)[-2:]
    assert [r.intent for r in results[first.position]] == [
        ErrorIntent.CREATED,
        ProcessInstanceIntent.CANCEL,
    ]
    assert results[first.position][0].value.process_instance_key == fragile_key
    (banned,) = results[second.position]
    assert banned.rejection_type is RejectionType.INVALID_STATE
    assert f"process instance {fragile_key} is banned" in banned.rejection_reason


def test_an_undecodable_record_is_rejected_naming_its_offset_and_work_goes_on(
    shared: tuple[Config, WorkerProcess],
) -> None:
    config, worker = shared
    before = _count(config)
    produce(config, [], raw=[(1, b"not avro at all")])
    produce(config, [(1, creation(99))])
    log = wait_answered(config, before + 1, 60, worker)
    where = f"of {config.commands_topic}/1 is not a valid command"
    (rejection,) = [
        r
        for r in log.partitions[1]
        if r.record_type is RecordType.COMMAND_REJECTION and where in r.rejection_reason
    ]
    assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT
    assert rejection.source_record_position == -1  # the garbage never reached the log
    assert "single-object marker" in rejection.rejection_reason
    assert not log.raw_commands[1]
    assert not unanswered(log)


def test_a_command_on_the_wrong_partition_is_forwarded(
    shared: tuple[Config, WorkerProcess],
) -> None:
    config, worker = shared
    key = encode_key(3, 1)  # the first instance of Kafka partition 2 exists after the first test
    cancel = command(
        ProcessInstanceIntent.CANCEL, ProcessInstanceValue(process_instance_key=key), key=key
    )
    before = read_log(config)
    produce(config, [(0, cancel)])  # naive producer: partition 0

    def forwarded() -> bool:
        log = read_log(config)
        copies = [
            c for c in log.commands(2) if c.key == key and c.intent is ProcessInstanceIntent.CANCEL
        ]
        return bool(copies) and all(c.position in log.results_of(2) for c in copies)

    from tests.support.worker_processes import wait_until

    wait_until(forwarded, 60, "the forwarded cancel to be processed on partition 2", worker.tail)
    log = read_log(config)
    (copy,) = [
        c for c in log.commands(2) if c.key == key and c.intent is ProcessInstanceIntent.CANCEL
    ]
    assert copy.value == cancel.value
    (terminated,) = log.results_of(2)[copy.position]
    assert terminated.intent is ProcessInstanceIntent.ELEMENT_TERMINATED
    # the client's command stays on ingress partition 0; the log of partition 0 never held it
    assert len(log.commands(0)) == len(before.commands(0))


def test_follow_up_commands_are_processed_in_the_same_batch(
    shared: tuple[Config, WorkerProcess],
) -> None:
    config, worker = shared
    before = read_log(config)
    produce(config, [(1, creation(7, "parent", spawn=3))])

    def children_created() -> bool:
        log = read_log(config)
        return (
            len([r for r in log.partitions[1] if r.intent is ProcessInstanceCreationIntent.CREATED])
            >= len(
                [
                    r
                    for r in before.partitions[1]
                    if r.intent is ProcessInstanceCreationIntent.CREATED
                ]
            )
            + 4
        )

    from tests.support.worker_processes import wait_until

    wait_until(children_created, 60, "parent and 3 children", worker.tail)
    log = read_log(config)
    parent = log.commands(1)[-1]
    assert parent.value.bpmn_process_id == "parent"
    results = log.results_of(1)[parent.position]
    created = [r for r in results if r.intent is ProcessInstanceCreationIntent.CREATED]
    assert [c.value.bpmn_process_id for c in created] == ["parent", "child", "child", "child"]
    assert (
        len(log.commands(1)) == len(before.commands(1)) + 1
    )  # follow-ups were not written as commands


def test_the_due_date_checker_turns_due_work_into_commands(
    shared: tuple[Config, WorkerProcess],
) -> None:
    config, worker = shared
    produce(config, [(2, creation(5, "short-lived", expireAfterMs=300))])

    def terminated() -> bool:
        log = read_log(config)
        return any(
            r.intent is ProcessInstanceIntent.ELEMENT_TERMINATED and r.source_record_position == -1
            for r in log.partitions[2]
        )

    from tests.support.worker_processes import wait_until

    wait_until(terminated, 60, "the due-date checker's cancel", worker.tail)
    log = read_log(config)
    created = [
        r
        for r in log.partitions[2]
        if r.intent is ProcessInstanceCreationIntent.CREATED
        and r.value.bpmn_process_id == "short-lived"
    ]
    (ended,) = [
        r
        for r in log.partitions[2]
        if r.intent is ProcessInstanceIntent.ELEMENT_TERMINATED and r.key == created[0].key
    ]
    assert ended.timestamp >= created[0].timestamp + 300
    assert ended.source_record_position == -1  # an internal command, never on the log


def test_graceful_stop_then_verify_replay_matches_the_live_state(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = Config(
        bootstrap_servers=kafka_bootstrap, namespace=f"v{uuid.uuid4().hex[:8]}", home=tmp_path
    )
    create_topics(config)
    worker = WorkerProcess(config, tmp_path).start()
    produce(config, [(i % 3, creation(i)) for i in range(30)])
    wait_answered(config, 30, 60, worker)
    assert worker.stop() == 0
    assert "Worker stopped." in worker.tail()
    # a graceful stop commits what it read: the group resumes at the end of every partition
    # (past at most the last transaction's marker)
    group = new_consumer(
        kafka_access(config, KafkaRole.OPERATOR), {"group.id": engine_group(config.namespace)}
    )
    try:
        partitions = [TopicPartition(config.log_topic, p) for p in range(3)]
        for tp in group.committed(partitions, timeout=10):
            _, end = group.get_watermark_offsets(tp, timeout=10, cached=False)
            assert end - 1 <= tp.offset <= end, (tp, end)
    finally:
        group.close()

    result = worker.verify_replay()
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(": equal") == 3
