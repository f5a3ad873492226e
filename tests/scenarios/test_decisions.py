"""Decisions on three partitions: DMN resources deployed beside processes (graphs and decisions
versioned, distributed to every partition), business rule tasks evaluating them with Zeebe's
records and incidents, and a client's EVALUATE. Replay rebuilds the same state every time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from partita.protocol.enums import ErrorType, RecordType, RejectionType
from partita.protocol.intents import (
    DecisionEvaluationIntent,
    DecisionIntent,
    DecisionRequirementsIntent,
    DeploymentIntent,
    IncidentIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
)
from partita.protocol.records import Record, command
from partita.protocol.values import (
    DecisionEvaluationValue,
    DeploymentResource,
    DeploymentValue,
    IncidentValue,
    ProcessInstanceCreationValue,
)
from tests.support.harnesses import HARNESSES, make_harness
from tests.support.memory import MemoryEngine
from tests.support.paths import BPMN_FIXTURES, ROOT

DISH = ROOT / "tests" / "fixtures" / "dmn" / "dish.dmn"
DINNER = BPMN_FIXTURES / "decisions" / "dinner.bpmn"


@pytest.fixture(params=HARNESSES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryEngine]:
    harness = make_harness(request, tmp_path, partitions=3)
    yield harness
    harness.assert_replay_matches(tmp_path)
    harness.close()


def _send(engine: MemoryEngine, partition: int, record: Record) -> list[Record]:
    position = engine.send(partition, record)
    engine.run()
    return engine.results_of(partition, position)


def _deploy(engine: MemoryEngine, *paths: Path, content: bytes | None = None) -> list[Record]:
    resources = tuple(
        DeploymentResource(p.name, content if content and p == DISH else p.read_bytes())
        for p in paths
    )
    return _send(engine, 0, command(DeploymentIntent.CREATE, DeploymentValue(resources=resources)))


def _create(engine: MemoryEngine, partition: int, **variables: object) -> int:
    value = ProcessInstanceCreationValue(bpmn_process_id="dinner", variables=json.dumps(variables))
    (created, *_) = _send(engine, partition, command(ProcessInstanceCreationIntent.CREATE, value))
    key: int = created.value.process_instance_key
    return key


def test_a_dmn_deploys_versioned_graphs_and_decisions_on_every_partition(
    engine: MemoryEngine,
) -> None:
    results = _deploy(engine, DISH, DINNER)
    (created,) = [r for r in results if r.intent is DeploymentIntent.CREATED]
    (drg,) = created.value.decision_requirements_metadata
    assert (drg.decision_requirements_id, drg.decision_requirements_version) == ("dinner", 1)
    ids = [d.decision_id for d in created.value.decisions_metadata]
    assert ids == ["dish", "season", "drinks", "discount", "points"]
    for partition in (1, 2):
        intents = [r.intent for r in engine.events(partition)]
        assert intents.count(DecisionRequirementsIntent.CREATED) == 1
        assert intents.count(DecisionIntent.CREATED) == 5
    again = _deploy(engine, DISH)
    (duplicate,) = [r for r in again if r.intent is DeploymentIntent.CREATED]
    assert duplicate.value.decision_requirements_metadata[0].is_duplicate
    assert all(d.is_duplicate for d in duplicate.value.decisions_metadata)
    changed = DISH.read_bytes().replace(b'"Roastbeef"</text>', b'"Beef Wellington"</text>')
    newer = _deploy(engine, DISH, content=changed)
    (v2,) = [r for r in newer if r.intent is DeploymentIntent.CREATED]
    assert v2.value.decision_requirements_metadata[0].decision_requirements_version == 2
    assert {d.version for d in v2.value.decisions_metadata} == {2}


def test_business_rule_tasks_evaluate_and_set_their_results(engine: MemoryEngine) -> None:
    _deploy(engine, DISH, DINNER)
    instance = _create(engine, 1, month=12, guests=10, kids=False)
    events = engine.events(1)
    evaluations = [r for r in events if r.intent is DecisionEvaluationIntent.EVALUATED]
    assert [e.value.decision_id for e in evaluations] == ["dish", "drinks"]
    dish = evaluations[0].value
    assert (dish.decision_output, dish.element_id, dish.process_instance_key) == (
        '"Stew"',
        "choose-dish",
        instance,
    )
    assert [d.decision_id for d in dish.evaluated_decisions] == ["season", "dish"]
    assert dish.evaluated_decisions[1].decision_evaluation_instance_key.endswith("-2")
    (rule,) = dish.evaluated_decisions[1].matched_rules
    assert (rule.rule_id, rule.evaluated_outputs[0].output_value) == ("r2", '"Stew"')
    variables = {
        r.value.name: json.loads(r.value.value)
        for r in events
        if r.value_type.name == "VARIABLE" and r.value.scope_key == instance
    }
    assert variables["dish"] == "Stew" and variables["drinkCount"] == 2
    assert "drinks" not in variables  # local to the task: its output mapping decides
    assert any(
        r.key == instance and r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED for r in events
    )


def test_a_failing_decision_is_an_incident_and_a_missing_one_too(engine: MemoryEngine) -> None:
    _deploy(engine, DINNER)
    _create(engine, 0, month=7, guests=4)
    (missing,) = [r.value for r in engine.events(0) if r.intent is IncidentIntent.CREATED]
    assert missing.error_type is ErrorType.CALLED_DECISION_ERROR
    assert missing.error_message == (
        "Expected to evaluate decision 'dish', but no decision found for id 'dish'"
    )
    _deploy(engine, DISH)
    incident = next(r for r in engine.events(0) if r.intent is IncidentIntent.CREATED)
    _send(engine, 0, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    (failed,) = [r.value for r in engine.events(0) if r.intent is DecisionEvaluationIntent.FAILED]
    assert failed.failed_decision_id == "dish"
    assert "multiple values aren't allowed for UNIQUE hit policy" in (
        failed.evaluation_failure_message
    )
    incidents = [r.value for r in engine.events(0) if r.intent is IncidentIntent.CREATED]
    assert incidents[-1].error_type is ErrorType.DECISION_EVALUATION_ERROR
    assert incidents[-1].error_message == failed.evaluation_failure_message


def test_a_client_evaluates_a_decision_by_id_or_key(engine: MemoryEngine) -> None:
    results = _deploy(engine, DISH)
    (created,) = [r for r in results if r.intent is DeploymentIntent.CREATED]
    points_key = next(
        d.decision_key for d in created.value.decisions_metadata if d.decision_id == "points"
    )
    asked = DecisionEvaluationValue(decision_id="discount", variables='{"total": 150}')
    (answer,) = _send(engine, 2, command(DecisionEvaluationIntent.EVALUATE, asked))[:1]
    assert answer.intent is DecisionEvaluationIntent.EVALUATED
    assert json.loads(answer.value.decision_output) == {"level": "silver", "rate": 0.05}
    by_key = DecisionEvaluationValue(decision_key=points_key, variables='{"items": 2}')
    (answer,) = _send(engine, 1, command(DecisionEvaluationIntent.EVALUATE, by_key))[:1]
    assert json.loads(answer.value.decision_output) == 10
    failing = DecisionEvaluationValue(decision_id="dish", variables='{"month": 7, "guests": 4}')
    (answer,) = _send(engine, 0, command(DecisionEvaluationIntent.EVALUATE, failing))[:1]
    assert answer.intent is DecisionEvaluationIntent.FAILED  # an answer, not a rejection
    nothing = DecisionEvaluationValue(variables="{}")
    (refused,) = _send(engine, 0, command(DecisionEvaluationIntent.EVALUATE, nothing))
    assert refused.record_type is RecordType.COMMAND_REJECTION
    assert refused.rejection_type is RejectionType.INVALID_ARGUMENT
    unknown = DecisionEvaluationValue(decision_id="cake")
    (refused,) = _send(engine, 0, command(DecisionEvaluationIntent.EVALUATE, unknown))
    assert refused.rejection_type is RejectionType.NOT_FOUND
    assert refused.rejection_reason == (
        "Expected to evaluate decision 'cake', but no decision found for id 'cake'"
    )
