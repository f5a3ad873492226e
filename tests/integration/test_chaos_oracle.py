"""The chaos oracle against an aborted transaction on the real broker.

Partition 0 of the log gets, by a plain transactional producer: a committed event, the same
event again in a transaction that is aborted (what a fenced zombie leaves behind), and a
committed event. The tracker must not see the aborted record, `uncommitted_offsets` must, and
the difference is exactly the aborted record. A tracker that did see aborted records (its
reader made read_uncommitted) must report the zombie's event as written twice. The oracle's
findings on logs written by hand without a broker are in tests/unit/ops/test_chaos_oracle.py.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import KafkaError, Message, Producer

from partita.config import Config, KafkaRole
from partita.log.clients import new_consumer
from partita.log.security import KafkaAccess, kafka_access
from partita.ops import chaos_log
from partita.ops.chaos_log import Findings, LogTracker, uncommitted_offsets
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import BpmnElementType
from partita.protocol.headers import record_headers
from partita.protocol.intents import ProcessInstanceIntent
from partita.protocol.records import event
from partita.protocol.values import ProcessInstanceValue
from tests.support.worker_processes import create_topics

pytestmark = pytest.mark.kafka

CODEC = RecordCodec()
INSTANCE = (1 << 51) | 7
SOURCE = 5
"""The log position of the command whose events both transactions hold."""


def _completed(source: int) -> tuple[bytes, Any]:
    value = ProcessInstanceValue(
        bpmn_process_id="chaos",
        process_instance_key=INSTANCE,
        element_id="chaos",
        bpmn_element_type=BpmnElementType.PROCESS,
    )
    record = event(
        ProcessInstanceIntent.ELEMENT_COMPLETED, value, INSTANCE, source_record_position=source
    )
    return CODEC.encode(record), record_headers(record)


def _in_transaction(producer: Producer, topic: str, source: int, *, commit: bool) -> int:
    """Write one event in a transaction of its own, committed or aborted; returns its offset."""
    offsets: list[int] = []

    def delivered(error: KafkaError | None, message: Message) -> None:
        assert error is None, error
        offsets.append(int(message.offset() or 0))

    producer.begin_transaction()
    value, headers = _completed(source)
    producer.produce(topic, value, partition=0, headers=headers, on_delivery=delivered)
    assert producer.flush(30) == 0
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)
    (offset,) = offsets
    return offset


@pytest.fixture
def doctored(config: Config) -> tuple[Config, dict[str, int]]:
    """The log of `config` with a committed, an aborted and a committed event on partition 0
    (offsets by name)."""
    create_topics(config)
    producer = Producer(
        {"bootstrap.servers": config.bootstrap, "transactional.id": f"zombie-{uuid.uuid4()}"}
    )
    producer.init_transactions(30)
    offsets = {
        "committed": _in_transaction(producer, config.log_topic, SOURCE, commit=True),
        "aborted": _in_transaction(producer, config.log_topic, SOURCE, commit=False),
        "later": _in_transaction(producer, config.log_topic, SOURCE + 10, commit=True),
    }
    return config, offsets


def _track(config: Config, records: int) -> Findings:
    """What a tracker finds on the log once it has read `records` records (and a second more,
    to see nothing else arrives)."""
    access = kafka_access(config, KafkaRole.OPERATOR)
    tracker = LogTracker(access, config.log_topic, config.commands_topic, config.partitions)
    try:
        deadline = time.monotonic() + 30
        while len(tracker.findings.offsets[0]) < records and time.monotonic() < deadline:
            tracker.poll(0.5)
        tracker.drain(quiet_s=1.0)
        return tracker.findings
    finally:
        tracker.close()


def test_the_tracker_never_sees_an_aborted_record_and_the_second_read_does(
    doctored: tuple[Config, dict[str, int]],
) -> None:
    """Protects the read_committed view and the aborted-records count of `partita chaos`: the
    aborted record is missing from what the tracker saw (so the zombie's copy of the events
    is not counted twice) and present in `uncommitted_offsets`; their difference, the run's
    `aborted_records`, is that one record."""
    config, offsets = doctored
    found = _track(config, records=2)
    assert found.offsets[0] == {offsets["committed"], offsets["later"]}
    assert found.results[(0, SOURCE, "ELEMENT_COMPLETED", INSTANCE)] == 1
    starts, everything = uncommitted_offsets(
        kafka_access(config, KafkaRole.OPERATOR), config.log_topic, config.partitions
    )
    assert starts == dict.fromkeys(range(config.partitions), 0)
    assert everything[0] == set(offsets.values())
    assert everything[0] - found.offsets[0] == {offsets["aborted"]}


def test_a_tracker_that_saw_aborted_records_reports_the_zombies_events_twice(
    doctored: tuple[Config, dict[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Protects the oracle's catch of a visible aborted record: were the tracker's reader to
    see aborted transactions, the zombie's event (same source command, intent and key as the
    committed one) is counted twice and the run reports a duplicate."""
    config, offsets = doctored

    def reading_uncommitted(access: KafkaAccess, settings: dict[str, Any]) -> Any:
        return new_consumer(access, {**settings, "isolation.level": "read_uncommitted"})

    monkeypatch.setattr(chaos_log, "new_consumer", reading_uncommitted)
    found = _track(config, records=3)
    assert found.offsets[0] == set(offsets.values())
    assert found.results[(0, SOURCE, "ELEMENT_COMPLETED", INSTANCE)] == 2
    assert found.duplicated()["events_written_twice"] == 1
    assert found.duplicated()["instances_completed_twice"] == 1
