"""Crashes, rebalances and zombies against the real broker: nothing lost, nothing twice, and
the live state always equals a replay of the log."""

from __future__ import annotations

import random
import re
import signal
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from msgspec.structs import replace

from partita.config import Config, KafkaRole
from partita.log import clients
from partita.log.admin import admin_client
from partita.log.security import kafka_access
from partita.protocol.enums import BpmnElementType, RecordType
from partita.protocol.headers import processed_positions, record_headers
from partita.protocol.intents import ProcessInstanceCreationIntent as Creation
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.intents import TimerIntent
from partita.protocol.keys import encode_key
from partita.protocol.records import command, event
from partita.protocol.values import ProcessInstanceValue, TimerValue
from partita.stream.processing.transaction import command_key
from tests.support.worker_processes import (
    CODEC,
    Load,
    WorkerProcess,
    assert_exactly_once,
    committed_messages,
    create_topics,
    creation,
    produce,
    unanswered,
    wait_answered,
    wait_until,
)

pytestmark = pytest.mark.kafka

KILL_ROUNDS = 10


def _config(bootstrap: str, home: Path, partitions: int = 3) -> Config:
    config = Config(
        bootstrap_servers=bootstrap,
        namespace=f"f{uuid.uuid4().hex[:8]}",
        home=home,
        partitions=partitions,
    )
    create_topics(config)
    return config


def _verify(worker: WorkerProcess, partitions: int) -> None:
    result = worker.verify_replay()
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(": equal") == partitions, result.stdout


def test_kill_9_at_random_moments_loses_and_repeats_nothing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    rng = random.Random(20261130)
    worker = WorkerProcess(config, tmp_path).start()
    with Load(config) as load:
        for _ in range(KILL_ROUNDS):
            time.sleep(rng.uniform(1.5, 6.0))
            worker.kill()
            worker.start()
        sent = load.stop()
    log = wait_answered(config, sent, 120, worker)
    assert assert_exactly_once(log, 3) == sent
    assert worker.stop() == 0, worker.tail()
    _verify(worker, 3)


def test_workers_joining_and_leaving_during_load_share_six_partitions(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path, partitions=6)
    a = WorkerProcess(config, tmp_path / "a", "a").start()
    b = WorkerProcess(config, tmp_path / "b", "b").start()
    with Load(config) as load:
        time.sleep(6)
        c = WorkerProcess(config, tmp_path / "c", "c").start()  # 2 -> 3 workers
        time.sleep(6)
        assert a.stop() == 0, a.tail()  # 3 -> 2
        time.sleep(4)
        b.kill()  # 2 -> 1, hard
        time.sleep(4)
        b.start()  # 1 -> 2
        time.sleep(4)
        sent = load.stop()
    log = wait_answered(config, sent, 120, c)
    assert assert_exactly_once(log, 6) == sent
    assert b.stop() == 0, b.tail()  # c now owns all six partitions
    wait_until(
        lambda: "assigned partitions [0, 1, 2, 3, 4, 5]" in c.tail(200), 60, "c to own all", c.tail
    )
    assert c.stop() == 0, c.tail()
    _verify(c, 6)


def test_a_frozen_worker_that_resumes_after_its_partitions_moved_commits_nothing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    zombie = WorkerProcess(config, tmp_path / "zombie", "zombie").start()
    wait_until(
        lambda: "assigned partitions [0, 1, 2]" in zombie.tail(),
        60,
        "zombie to own all",
        zombie.tail,
    )
    other = WorkerProcess(config, tmp_path / "other", "other").start()
    with Load(config, per_tick=5) as load:
        time.sleep(3)
        zombie.signal(signal.SIGSTOP)
        # the group drops the frozen member after session.timeout.ms (10 s); other takes over
        wait_until(
            lambda: "assigned partitions [0, 1, 2]" in other.tail(), 60, "takeover", other.tail
        )
        time.sleep(2)
        zombie.signal(signal.SIGCONT)
        time.sleep(8)
        sent = load.stop()
    log = wait_answered(config, sent, 120, other)
    assert assert_exactly_once(log, 3) == sent
    assert zombie.stop() == 0, zombie.tail()
    assert other.stop() == 0, other.tail()


def test_commands_appended_before_earlier_events_wait_for_replay(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Log of partition 0: CREATE@0, CANCEL@1, then the events of CREATE written by a previous
    owner that committed offset 1 and crashed before its state reached disk. A new owner with
    no state must apply those events before it processes CANCEL@1."""
    config = _config(kafka_bootstrap, tmp_path)
    instance = encode_key(1, 1)
    create = creation(0)
    cancel = command(
        Instance.CANCEL, ProcessInstanceValue(process_instance_key=instance), key=instance
    )
    plain = Producer({"bootstrap.servers": config.bootstrap})
    for record in (create, cancel):
        plain.produce(
            config.log_topic, CODEC.encode(record), partition=0, headers=record_headers(record)
        )
    assert plain.flush(30) == 0

    previous_owner = clients.transactional_producer(
        kafka_access(config, KafkaRole.ENGINE), config.namespace, 0
    )
    previous_owner.init_transactions(30)
    previous_owner.begin_transaction()
    created = replace(create.value, process_instance_key=instance)
    element = ProcessInstanceValue(
        bpmn_process_id="order",
        process_instance_key=instance,
        element_id="order",
        bpmn_element_type=BpmnElementType.PROCESS,
    )
    events = [event(Creation.CREATED, created, instance)] + [
        event(intent, element, instance)
        for intent in (
            Instance.ELEMENT_ACTIVATING,
            Instance.ELEMENT_ACTIVATED,
            Instance.ELEMENT_COMPLETING,
            Instance.ELEMENT_COMPLETED,
        )
    ]
    for written in events:
        record = replace(written, partition_id=1, source_record_position=0)
        previous_owner.produce(
            config.log_topic, CODEC.encode(record), partition=0, headers=record_headers(record)
        )
    group = Consumer(
        {"bootstrap.servers": config.bootstrap, "group.id": clients.engine_group(config.namespace)}
    )
    previous_owner.send_offsets_to_transaction(
        [TopicPartition(config.log_topic, 0, 1)], group.consumer_group_metadata(), 30
    )
    previous_owner.commit_transaction(30)
    group.close()

    worker = WorkerProcess(config, tmp_path / "new-machine").start()
    log = wait_answered(config, 2, 60, worker)
    (answer,) = log.results_of(0)[1]
    assert answer.record_type is RecordType.EVENT, answer.rejection_reason
    assert answer.intent is Instance.ELEMENT_TERMINATED and answer.key == instance
    assert len(log.results_of(0)[0]) == 5  # CREATE was not processed again
    assert not unanswered(log)
    assert worker.stop() == 0
    _verify(worker, 3)


def test_a_fenced_task_makes_the_worker_rejoin_and_nothing_is_lost(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    worker = WorkerProcess(config, tmp_path).start()
    wait_until(
        lambda: "assigned partitions [0, 1, 2]" in worker.tail(), 60, "assignment", worker.tail
    )
    plain = Producer({"bootstrap.servers": config.bootstrap})

    def send(first: int, count: int) -> None:
        for i in range(first, first + count):
            record = creation(i)
            plain.produce(
                config.log_topic, CODEC.encode(record), partition=0, headers=record_headers(record)
            )
        assert plain.flush(30) == 0

    send(0, 10)
    wait_answered(config, 10, 60, worker)
    usurper = clients.transactional_producer(
        kafka_access(config, KafkaRole.ENGINE), config.namespace, 0
    )
    usurper.init_transactions(30)  # the worker's producer for partition 0 is now fenced
    send(10, 10)

    log = wait_answered(config, 20, 90, worker)
    assert assert_exactly_once(log, 3) == 20
    assert "leaving the group and joining again" in worker.tail(400)
    assert worker.stop() == 0, worker.tail()
    _verify(worker, 3)


def test_a_reset_or_expired_group_offset_never_reprocesses_what_the_store_processed(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """The engine group's offsets are deleted while no worker runs (as offsets expire after
    offsets.retention.minutes, or an operator resets the group): the worker resumes past the
    store's last processed positions on the log and on ingress, says so loudly, and no client
    command is copied or answered twice."""
    config = _config(kafka_bootstrap, tmp_path)
    worker = WorkerProcess(config, tmp_path).start()
    produce(config, [(i % 3, creation(i)) for i in range(12)])
    wait_answered(config, 12, 60, worker)
    assert worker.stop() == 0, worker.tail()

    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    group = clients.engine_group(config.namespace)
    for future in admin.delete_consumer_groups([group], request_timeout=30).values():
        future.result()

    worker.start()
    produce(config, [(i % 3, creation(100 + i)) for i in range(6)])
    log = wait_answered(config, 18, 60, worker)
    assert worker.stop() == 0, worker.tail()
    copies = [c for p in range(3) for c in log.commands(p)]
    assert len(copies) == 18  # each client command copied into the log once
    assert assert_exactly_once(log, 3) == 18
    warned = re.findall(
        rf"partition (\d): the engine group's committed offset on {re.escape(config.log_topic)}"
        r" is missing but the state store processed up to (\d+); resuming at (\d+)",
        worker.log.read_text(),
    )
    # said loudly for every partition's log, resuming right after what the store processed
    assert sorted(int(p) for p, _, _ in warned) == [0, 1, 2], worker.tail()
    assert all(int(at) == int(upto) + 1 for _, upto, at in warned), warned
    _verify(worker, 3)


def test_after_replay_keys_stay_above_those_of_spilled_follow_up_commands(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A previous owner spilled a follow-up command carrying a key it had just taken (no event
    of that key exists yet) and died. The new owner replays from the log alone: the key
    generator must already be past that key, or a new entity would get the same key."""
    config = _config(kafka_bootstrap, tmp_path)
    taken = encode_key(1, 5_000)
    spilled = command(TimerIntent.TRIGGER, TimerValue(), key=taken)
    previous_owner = clients.transactional_producer(
        kafka_access(config, KafkaRole.ENGINE), config.namespace, 0
    )
    previous_owner.init_transactions(30)
    previous_owner.begin_transaction()
    previous_owner.produce(
        config.log_topic,
        CODEC.encode(replace(spilled, partition_id=1)),
        key=command_key(spilled),
        partition=0,
        headers=record_headers(spilled),
    )
    previous_owner.commit_transaction(30)

    worker = WorkerProcess(config, tmp_path / "new-machine").start()
    produce(config, [(0, creation(1))])
    log = wait_answered(config, 2, 60, worker)
    (created,) = [r for r in log.partitions[0] if r.intent is Creation.CREATED]
    assert created.key > taken
    assert worker.stop() == 0, worker.tail()
    _verify(worker, 3)


def test_a_new_machine_resumes_after_the_last_batch_while_the_group_offsets_trail(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Offsets go to the engine group only every 60 s here (PARTITA_OFFSETS_COMMIT_MS), so
    they trail the log from each owner's second batch on. Each owner, once it processed for a
    while, is killed with -9 and replaced by a worker on a new machine (no local state, no
    snapshot): it must take from the log's PROCESSED headers where processing resumes.
    Nothing is copied or answered twice, nothing is lost, and replay equals the live state."""
    config = _config(kafka_bootstrap, tmp_path)
    env = {"PARTITA_OFFSETS_COMMIT_MS": "60000"}
    rng = random.Random(20261203)
    trailing = []
    worker = WorkerProcess(config, tmp_path / "machine-0", env=env)
    try:
        with Load(config) as load:
            for machine in range(4):
                worker = WorkerProcess(config, tmp_path / f"machine-{machine}", env=env).start()
                wait_until(
                    lambda w=worker: "assigned partitions [0, 1, 2]" in w.log.read_text(),
                    90,
                    "the new machine owning every partition",
                    worker.tail,
                )
                time.sleep(rng.uniform(1.0, 2.5))  # batches under load, offsets trailing
                if machine < 3:
                    worker.kill()
                    trailing.append(_trailing_partitions(config))
            sent = load.stop()
        log = wait_answered(config, sent, 120, worker)
        assert assert_exactly_once(log, 3) == sent
        assert all(trailing), f"the group's offsets did not trail the log at each kill: {trailing}"
        assert worker.stop() == 0, worker.tail()
    finally:
        worker.kill()
    assert not _trailing_partitions(config), "a graceful stop leaves the group's offsets current"
    _verify(worker, 3)


def _trailing_partitions(config: Config) -> list[int]:
    """The log partitions whose committed engine-group offset is behind the positions the
    last PROCESSED header on the log names."""
    consumer = clients.new_consumer(
        kafka_access(config, KafkaRole.OPERATOR),
        {
            "group.id": clients.engine_group(config.namespace),  # never joins: offsets only
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        },
    )
    trailing = []
    try:
        partitions = [TopicPartition(config.log_topic, p) for p in range(config.partitions)]
        committed = {tp.partition: tp.offset for tp in consumer.committed(partitions, timeout=30)}
        for partition in range(config.partitions):
            newest = None
            for _, message in committed_messages(config, config.log_topic, partition):
                newest = processed_positions(message.headers()) or newest
            if newest is not None and committed[partition] < newest[0] + 1:
                trailing.append(partition)
    finally:
        consumer.close()
    return trailing
