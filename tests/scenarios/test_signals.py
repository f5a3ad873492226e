"""Signals on three partitions: a broadcast sent to one partition reaches what waits on every
other (BROADCASTED on each, the copies sent inside the first partition's transaction), a signal
start event starts exactly one instance, and subscriptions close with their element. Replay
rebuilds the same state after every scenario."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from partita.protocol.enums import RecordType, RejectionType
from partita.protocol.intents import (
    DeploymentIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    SignalIntent,
    SignalSubscriptionIntent,
)
from partita.protocol.records import Record, command
from partita.protocol.values import (
    DeploymentResource,
    DeploymentValue,
    ProcessInstanceCreationValue,
    SignalValue,
)
from tests.support.harnesses import HARNESSES, make_harness
from tests.support.memory import MemoryEngine
from tests.support.paths import CONFORMANCE

SIGNALS = CONFORMANCE / "bpmn" / "signals.bpmn"


@pytest.fixture(params=HARNESSES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryEngine]:
    harness = make_harness(request, tmp_path, partitions=3)
    value = DeploymentValue(resources=(DeploymentResource(SIGNALS.name, SIGNALS.read_bytes()),))
    harness.send(0, command(DeploymentIntent.CREATE, value))
    harness.run()
    yield harness
    harness.assert_replay_matches(tmp_path)
    harness.close()


def _send(engine: MemoryEngine, partition: int, record: Record) -> list[Record]:
    position = engine.send(partition, record)
    engine.run()
    return engine.results_of(partition, position)


def _started(engine: MemoryEngine, process_id: str) -> list[int]:
    return [
        r.key
        for partition in range(3)
        for r in engine.events(partition)
        if r.intent is ProcessInstanceIntent.ELEMENT_ACTIVATED
        and r.value.bpmn_element_type.name == "PROCESS"
        and r.value.bpmn_process_id == process_id
    ]


def test_a_broadcast_reaches_every_partition_and_starts_one_instance(
    engine: MemoryEngine,
) -> None:
    creation = ProcessInstanceCreationValue(
        bpmn_process_id="signals", variables=json.dumps({"order": "o-7"})
    )
    (created, *_) = _send(engine, 2, command(ProcessInstanceCreationIntent.CREATE, creation))
    instance = created.value.process_instance_key
    # its throw event broadcast "order-started" from partition 2: one instance, on partition 0
    assert len(_started(engine, "signal-started")) == 1
    waiting = [r for r in engine.events(2) if r.intent is SignalSubscriptionIntent.CREATED]
    assert [r.value.signal_name for r in waiting] == ["go"]
    (answer, *_) = _send(engine, 0, command(SignalIntent.BROADCAST, SignalValue(signal_name="go")))
    assert answer.intent is SignalIntent.BROADCASTED
    for partition in range(3):
        broadcasted = [
            r.key
            for r in engine.events(partition)
            if r.intent is SignalIntent.BROADCASTED and r.value.signal_name == "go"
        ]
        assert broadcasted == [answer.key], partition
    passed = {
        r.value.element_id
        for r in engine.events(2)
        if r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
        and r.value.process_instance_key == instance
    }
    assert "wait-go" in passed
    closed = [r for r in engine.events(2) if r.intent is SignalSubscriptionIntent.DELETED]
    assert [r.value.signal_name for r in closed] == ["go"]
    _send(engine, 1, command(SignalIntent.BROADCAST, SignalValue(signal_name="order-started")))
    assert len(_started(engine, "signal-started")) == 2  # one more, not three


def test_a_broadcast_needs_a_name_and_object_variables(engine: MemoryEngine) -> None:
    (refused,) = _send(engine, 0, command(SignalIntent.BROADCAST, SignalValue()))
    assert refused.record_type is RecordType.COMMAND_REJECTION
    assert refused.rejection_type is RejectionType.INVALID_ARGUMENT
    bad = SignalValue(signal_name="go", variables="[1]")
    (refused,) = _send(engine, 0, command(SignalIntent.BROADCAST, bad))
    assert "variables must be a JSON object" in refused.rejection_reason
