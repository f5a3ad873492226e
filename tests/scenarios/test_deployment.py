"""Deployments on the engine core: versions, duplicates, distribution, rejections."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from partita.processing.deployment import state as deployment_state
from partita.protocol.enums import RecordType, RejectionType
from partita.protocol.intents import DeploymentIntent, ProcessIntent
from partita.protocol.records import Record, command
from partita.protocol.values import DeploymentResource, DeploymentValue
from tests.support.harnesses import HARNESSES, make_harness
from tests.support.memory import MemoryEngine
from tests.support.paths import BPMN_FIXTURES

ORDER = (BPMN_FIXTURES / "order-process.bpmn").read_bytes()


@pytest.fixture(params=HARNESSES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryEngine]:
    memory = make_harness(request, tmp_path, partitions=3)
    yield memory
    memory.assert_replay_matches(tmp_path)  # every scenario: replay rebuilds the same state
    memory.close()


def deploy(*resources: tuple[str, bytes]) -> Record:
    value = DeploymentValue(resources=tuple(DeploymentResource(n, c) for n, c in resources))
    return command(DeploymentIntent.CREATE, value)


def test_deploying_creates_version_1_on_every_partition(engine: MemoryEngine) -> None:
    position = engine.send(0, deploy(("order.bpmn", ORDER)))
    engine.run()

    results = engine.results_of(0, position)
    created = [r for r in results if r.intent is DeploymentIntent.CREATED]
    assert len(created) == 1
    (meta,) = created[0].value.processes_metadata
    assert (meta.bpmn_process_id, meta.version, meta.is_duplicate) == ("order-process", 1, False)
    assert [r.intent for r in results] == [
        ProcessIntent.CREATED,
        DeploymentIntent.CREATED,
        DeploymentIntent.FULLY_DISTRIBUTED,
    ]
    for partition in range(3):
        deployed = deployment_state.latest(engine.dbs[partition], "order-process")
        assert deployed is not None and deployed.key == meta.process_definition_key
        assert deployed.model(engine.dbs[partition]).element("charge").name == "Charge card"
    for partition in (1, 2):
        intents = [r.intent for r in engine.events(partition)]
        assert intents == [ProcessIntent.CREATED, DeploymentIntent.DISTRIBUTED]


def test_an_identical_redeploy_creates_no_version_a_changed_one_does(engine: MemoryEngine) -> None:
    engine.send(0, deploy(("order.bpmn", ORDER)))
    again = engine.send(0, deploy(("order.bpmn", ORDER)))
    changed = engine.send(0, deploy(("order.bpmn", ORDER.replace(b"Charge card", b"Charge"))))
    engine.run()

    (meta,) = next(
        r for r in engine.results_of(0, again) if r.intent is DeploymentIntent.CREATED
    ).value.processes_metadata
    assert (meta.version, meta.is_duplicate) == (1, True)
    assert not [r for r in engine.results_of(0, again) if r.intent is ProcessIntent.CREATED]
    (meta2,) = next(
        r for r in engine.results_of(0, changed) if r.intent is DeploymentIntent.CREATED
    ).value.processes_metadata
    assert (meta2.version, meta2.is_duplicate) == (2, False)
    assert deployment_state.latest(engine.dbs[2], "order-process").version == 2  # type: ignore[union-attr]


def test_invalid_resources_are_rejected_with_every_problem(engine: MemoryEngine) -> None:
    broken = ORDER.replace(
        b'<zeebe:taskDefinition type="payment-service" retries="5" />', b""
    ).replace(b"=orderPaid = true", b"=orderPaid = = true")
    position = engine.send(0, deploy(("order.bpmn", broken), ("notes.txt", b"hello")))
    engine.run()
    (rejection,) = engine.results_of(0, position)
    assert rejection.record_type is RecordType.COMMAND_REJECTION
    assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT
    reason = rejection.rejection_reason
    assert "'notes.txt': only BPMN (.bpmn), DMN (.dmn) and form (.form) resources" in reason
    assert 'charge: a bpmn:serviceTask needs <zeebe:taskDefinition type="..."/>' in reason
    assert "Flow_ship: invalid expression '=orderPaid = = true'" in reason
    assert deployment_state.latest(engine.dbs[0], "order-process") is None


def test_a_deployment_sent_to_another_partition_is_forwarded_to_partition_0(
    engine: MemoryEngine,
) -> None:
    engine.send(2, deploy(("order.bpmn", ORDER)))
    engine.run()
    assert (
        next(r.intent for r in engine.records(0) if r.record_type is RecordType.COMMAND)
        is DeploymentIntent.CREATE
    )
    assert deployment_state.latest(engine.dbs[1], "order-process") is not None


def test_an_xml_bomb_is_rejected_and_the_partition_goes_on(engine: MemoryEngine) -> None:
    bomb = b"""<?xml version="1.0"?>
<!DOCTYPE d [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL">&lol3;</bpmn:definitions>"""
    position = engine.send(0, deploy(("bomb.bpmn", bomb)))
    engine.run()
    (rejection,) = engine.results_of(0, position)
    assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT
    assert "bomb.bpmn" in rejection.rejection_reason
    assert "DOCTYPE is not allowed" in rejection.rejection_reason
    after = engine.send(0, deploy(("order.bpmn", ORDER)))  # the next deployment still works
    engine.run()
    assert [r.intent for r in engine.results_of(0, after)][:2] == [
        ProcessIntent.CREATED,
        DeploymentIntent.CREATED,
    ]
