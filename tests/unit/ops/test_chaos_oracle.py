"""The chaos oracle (`partita.ops.chaos_log`, `partita.ops.chaos.passed`) on doctored logs.

A chaos run is only as good as its oracle: if the tracker stopped counting something, every
run would pass. Each test writes a small log by hand onto the in-memory log, lets a
`LogTracker` read it through its ordinary `poll` (the Kafka consumer factory is swapped for one
over that log), and asserts the exact finding; a clean control log must find nothing. The
read_committed behaviour itself, on a real broker with an aborted transaction, is in
tests/integration/test_chaos_oracle.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from partita.config import KafkaRole
from partita.log.security import KafkaAccess
from partita.ops import chaos_log
from partita.ops.chaos import passed
from partita.ops.chaos_log import Findings, LogTracker, replay_seen
from partita.processing.builtin import build_engine
from partita.protocol.enums import BpmnElementType
from partita.protocol.headers import INGRESS_OFFSET, RECORD_TYPE, record_headers
from partita.protocol.intents import (
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    VariableIntent,
)
from partita.protocol.keys import partition_id_of_kafka
from partita.protocol.records import Record, event
from partita.protocol.values import (
    JobValue,
    ProcessInstanceCreationValue,
    ProcessInstanceValue,
    VariableValue,
)
from partita.state import KeyGenerator, PartitionDb
from tests.support.memory import CODEC, MemoryKafka
from tests.support.memory_consumer import MemoryConsumer

TOPIC = "chaos.log"
INGRESS = "chaos.commands"
PARTITIONS = 2
NO_DUPLICATES = {
    "instances_created_twice": 0,
    "instances_completed_twice": 0,
    "jobs_completed_twice": 0,
    "events_written_twice": 0,
    "commands_copied_twice": 0,
}


class _TrackedConsumer(MemoryConsumer):
    """The tracker's consumer over the in-memory log; remembers the settings it was made
    with and accepts the tracker's offset commits."""

    def __init__(self, kafka: MemoryKafka, settings: dict[str, Any]) -> None:
        super().__init__(kafka)
        self.settings = settings

    def commit(self, **_: Any) -> None:
        pass


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch) -> MemoryKafka:
    """The log the tracker reads: what `new_consumer` in chaos_log returns reads this."""
    log = MemoryKafka()

    def new_consumer(_access: KafkaAccess, settings: dict[str, Any]) -> _TrackedConsumer:
        return _TrackedConsumer(log, settings)

    monkeypatch.setattr(chaos_log, "new_consumer", new_consumer)
    return log


@pytest.fixture
def tracker(kafka: MemoryKafka) -> Iterator[LogTracker]:
    tracked = LogTracker(KafkaAccess("unused:9092", KafkaRole.OPERATOR), TOPIC, INGRESS, PARTITIONS)
    yield tracked
    tracked.close()


def _key(partition: int, counter: int) -> int:
    return (partition_id_of_kafka(partition) << 51) | counter


def _write(kafka: MemoryKafka, partition: int, record: Record) -> int:
    """Append `record` as the engine writes it; returns its offset."""
    headers = list(record_headers(record))
    return kafka.append(TOPIC, partition, CODEC.encode(record), headers).offset()


def _copy(kafka: MemoryKafka, partition: int, ingress_offset: int) -> int:
    """Append the engine's copy of the client command at `ingress_offset` (the tracker reads
    only its headers); returns its log offset."""
    headers: list[tuple[str, Any]] = [
        (RECORD_TYPE, b"COMMAND"),
        (INGRESS_OFFSET, str(ingress_offset).encode()),
    ]
    return kafka.append(TOPIC, partition, b"", headers).offset()


def _created(kafka: MemoryKafka, partition: int, n: int, instance: int, source: int) -> None:
    value = ProcessInstanceCreationValue(
        bpmn_process_id="chaos", variables=json.dumps({"n": n}), process_instance_key=instance
    )
    record = event(
        ProcessInstanceCreationIntent.CREATED, value, instance, source_record_position=source
    )
    _write(kafka, partition, record)


def _completed(
    kafka: MemoryKafka,
    partition: int,
    key: int,
    source: int,
    element: BpmnElementType = BpmnElementType.PROCESS,
) -> None:
    value = ProcessInstanceValue(
        bpmn_process_id="chaos",
        process_instance_key=key,
        element_id="chaos",
        bpmn_element_type=element,
    )
    record = event(
        ProcessInstanceIntent.ELEMENT_COMPLETED, value, key, source_record_position=source
    )
    _write(kafka, partition, record)


def _job_completed(kafka: MemoryKafka, partition: int, job: int, source: int) -> None:
    value = JobValue(type="chaos.task", process_instance_key=_key(partition, 1))
    _write(kafka, partition, event(JobIntent.COMPLETED, value, job, source_record_position=source))


def _an_instance(kafka: MemoryKafka, partition: int, n: int, counter: int) -> int:
    """A clean run of creation number `n`: its client command copied once, the instance
    created for it, one job completed, the process completed once. Returns the instance key."""
    instance, job = _key(partition, counter), _key(partition, counter + 1)
    copy = _copy(kafka, partition, ingress_offset=n)
    _created(kafka, partition, n, instance, source=copy)
    _job_completed(kafka, partition, job, source=copy + 10)
    _completed(kafka, partition, instance, source=copy + 20)
    return instance


def _read(tracker: LogTracker) -> Findings:
    tracker.drain(quiet_s=0)
    return tracker.findings


def test_a_clean_log_shows_nothing_lost_or_duplicated(
    kafka: MemoryKafka, tracker: LogTracker
) -> None:
    """The control for every test below: a clean log passes, so their findings come from the
    doctoring alone."""
    for n in range(4):
        _an_instance(kafka, n % PARTITIONS, n, counter=10 * n + 1)
    found = _read(tracker)
    assert found.lost({0, 1, 2, 3}) == []
    assert found.duplicated() == NO_DUPLICATES
    assert {p: len(offsets) for p, offsets in found.offsets.items()} == {0: 8, 1: 8}


def test_a_job_completed_twice_is_a_duplicate(kafka: MemoryKafka, tracker: LogTracker) -> None:
    """Protects the per-job count of JOB COMPLETED events: a second COMPLETE accepted for a
    job already completed (say, after a worker's retry raced a failover) is caught even though
    each completion came from its own command and the instance itself completed once."""
    _an_instance(kafka, 0, n=0, counter=1)
    _job_completed(kafka, 0, job=_key(0, 2), source=99)  # the job of instance 0, again
    found = _read(tracker)
    assert found.duplicated() == {**NO_DUPLICATES, "jobs_completed_twice": 1}
    assert found.jobs_completed[_key(0, 2)] == 2
    assert found.lost({0}) == []


def test_an_instance_completed_twice_is_a_duplicate(
    kafka: MemoryKafka, tracker: LogTracker
) -> None:
    """Protects the per-instance count of the PROCESS's ELEMENT_COMPLETED: an instance that
    completes twice, from two different commands, is caught."""
    instance = _an_instance(kafka, 1, n=0, counter=1)
    _completed(kafka, 1, instance, source=77)
    found = _read(tracker)
    assert found.duplicated() == {**NO_DUPLICATES, "instances_completed_twice": 1}
    assert found.completed[instance] == 2


def test_only_the_process_completing_counts_as_the_instance_completing(
    kafka: MemoryKafka, tracker: LogTracker
) -> None:
    """Protects the PROCESS filter: a task element that completes (its key is its element
    instance, never the process instance) neither completes the instance nor duplicates it.
    Without the filter the instance would count as completed and its loss would be hidden."""
    instance = _key(0, 1)
    _created(kafka, 0, n=0, instance=instance, source=_copy(kafka, 0, ingress_offset=0))
    _completed(kafka, 0, instance, source=5, element=BpmnElementType.SERVICE_TASK)
    found = _read(tracker)
    assert found.completed[instance] == 0
    assert found.lost({0}) == [0]


def test_an_instance_created_twice_for_one_creation_is_a_duplicate(
    kafka: MemoryKafka, tracker: LogTracker
) -> None:
    """Protects the creation-number index: the one creation command n=0 giving two instances
    (its copy processed twice under two keys) is caught, though both instances completed."""
    _an_instance(kafka, 0, n=0, counter=1)
    _an_instance(kafka, 0, n=0, counter=50)  # its own copy of ingress offset 0, too
    found = _read(tracker)
    assert len(found.created[0]) == 2
    assert found.duplicated() == {
        **NO_DUPLICATES,
        "instances_created_twice": 1,
        "commands_copied_twice": 1,
    }


def test_a_creation_acknowledged_but_never_completed_is_lost(
    kafka: MemoryKafka, tracker: LogTracker
) -> None:
    """Protects `Findings.lost`: a creation the client got acknowledged (n=1: created, its job
    done, but the process never completed) and one that never reached the log at all (n=2)
    are both lost, while n=0 is not. A `lost` that looked only at creations would miss n=1."""
    _an_instance(kafka, 0, n=0, counter=1)
    instance = _key(1, 1)
    copy = _copy(kafka, 1, ingress_offset=1)
    _created(kafka, 1, n=1, instance=instance, source=copy)
    _job_completed(kafka, 1, job=_key(1, 2), source=copy + 10)
    found = _read(tracker)
    assert found.lost({0, 1, 2}) == [1, 2]
    assert found.duplicated() == NO_DUPLICATES


def test_a_visible_aborted_transaction_shows_as_events_written_twice(
    kafka: MemoryKafka, tracker: LogTracker
) -> None:
    """Protects the two defences against records of aborted transactions: the tracker reads
    read_committed, and a command's events seen twice are counted. A fenced zombie's aborted
    transaction holds the same events (same source command, intent and key) as the new
    owner's committed one; if a reader saw it, this log is what it would read, and the oracle
    must report it."""
    consumer = tracker.consumer
    assert isinstance(consumer, _TrackedConsumer)
    assert consumer.settings["isolation.level"] == "read_committed"
    instance = _an_instance(kafka, 0, n=0, counter=1)
    _completed(kafka, 0, instance, source=20)  # the zombie's copy of the last command's events
    found = _read(tracker)
    assert found.results[(0, 20, "ELEMENT_COMPLETED", instance)] == 2
    assert found.duplicated() == {
        **NO_DUPLICATES,
        "events_written_twice": 1,
        "instances_completed_twice": 1,
    }


def test_a_client_command_copied_twice_is_a_duplicate(
    kafka: MemoryKafka, tracker: LogTracker
) -> None:
    """Protects the per-ingress-offset count of the engine's copies: the same client command
    appended to the log twice is caught even when only one copy caused anything."""
    _an_instance(kafka, 0, n=0, counter=1)
    _copy(kafka, 0, ingress_offset=0)
    found = _read(tracker)
    assert found.copies[(0, 0)] == [0, 4]
    assert found.duplicated() == {**NO_DUPLICATES, "commands_copied_twice": 1}


def _clean_result() -> dict[str, Any]:
    return {
        "lost": 0,
        "duplicated": 0,
        "hostile": {"sent": 3, "rejected": 3},
        "replies_on_log": 0,
        "records_in_other_namespace": 0,
        "replay": "equal",
    }


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("lost", 1),
        ("duplicated", 1),
        ("hostile", {"sent": 3, "rejected": 2}),
        ("replies_on_log", 1),
        ("records_in_other_namespace", 1),
        ("replay", "DIFFERENT"),
    ],
)
def test_the_verdict_fails_a_run_on_any_single_finding(field: str, bad: object) -> None:
    """Protects `passed`: each finding alone fails the run (a verdict that dropped one of its
    conditions would pass a run that lost, duplicated or leaked something)."""
    assert passed(_clean_result())
    assert not passed({**_clean_result(), field: bad})


def _variable(counter: int) -> Record:
    key = _key(0, counter)
    return event(VariableIntent.CREATED, VariableValue(f"v{counter}", "1", 7), key).with_position(
        counter
    )


def test_replay_of_the_seen_events_tells_a_diverged_store(tmp_path: Path) -> None:
    """Protects `replay_seen`: a live store that matches the events the tracker saw is equal;
    one holding an event the log does not (or missing one it does) is DIFFERENT; events the
    tracker read past the live store's last applied position are left out, not counted as a
    difference."""
    engine = build_engine()
    events = [_variable(i) for i in range(1, 4)]
    found = Findings()
    found.events[0].extend(events)

    def live_store(path: Path, applied: list[Record]) -> Path:
        with PartitionDb(path) as db:
            keys = KeyGenerator(db, partition_id_of_kafka(0))
            for record in applied:
                engine.apply(record, db)
                keys.set_key_if_higher(record.key)
            db.commit(last_applied_position=events[-1].position)
        return path

    assert replay_seen(found, engine, 0, live_store(tmp_path / "same", events)) == (3, True)
    extra = live_store(tmp_path / "extra", [*events, _variable(9)])
    assert replay_seen(found, engine, 0, extra) == (3, False)
    missing = live_store(tmp_path / "missing", events[:-1])
    assert replay_seen(found, engine, 0, missing) == (3, False)
    found.events[0].append(_variable(4))  # read after the live store's last applied position
    assert replay_seen(found, engine, 0, live_store(tmp_path / "behind", events)) == (3, True)
