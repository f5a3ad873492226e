"""Paths through gateways and mappings: parallel branches that finish at different times join
once; an exclusive gateway with no true condition and no default raises an incident that a
variable update plus a resolution gets past; a failing input mapping raises an incident."""

from __future__ import annotations

from typing import Any

from partita.processing.instance import state as instance_state
from partita.protocol.enums import ErrorType
from partita.protocol.intents import DeploymentIntent, IncidentIntent, VariableDocumentIntent
from partita.protocol.records import command
from partita.protocol.values import (
    DeploymentResource,
    DeploymentValue,
    IncidentValue,
    VariableDocumentValue,
)
from tests.support.paths import BPMN_FIXTURES
from tests.support.scenario_steps import complete, create, jobs_of, lifecycle, send


def _deploy(engine: Any, *names: str) -> None:
    resources = tuple(DeploymentResource(n, (BPMN_FIXTURES / n).read_bytes()) for n in names)
    send(engine, command(DeploymentIntent.CREATE, DeploymentValue(resources=resources)))


def _job(engine: Any, instance: int, job_type: str) -> Any:
    (job,) = [j for j in jobs_of(engine, instance) if j.value.type == job_type]
    return job


def test_parallel_branches_finishing_at_different_times_join_once(engine: Any) -> None:
    _deploy(engine, "paths.bpmn")
    instance = create(engine, "paths", total=50)
    assert sorted(j.value.type for j in jobs_of(engine, instance)) == ["a", "b"]
    complete(engine, _job(engine, instance, "a"), result=1)
    steps = lifecycle(engine, instance)
    assert ("f-a-join", "SEQUENCE_FLOW_TAKEN") in steps
    assert ("join", "ELEMENT_ACTIVATING") not in steps  # waits for the other branch
    assert steps[-1] != ("paths", "ELEMENT_COMPLETED")

    complete(engine, _job(engine, instance, "b"), fromB=True)
    steps = lifecycle(engine, instance)
    assert steps.count(("join", "ELEMENT_ACTIVATING")) == 1
    assert ("medium", "ELEMENT_COMPLETED") in steps and ("big", "ELEMENT_ACTIVATING") not in steps
    assert steps[-1] == ("paths", "ELEMENT_COMPLETED")
    assert instance_state.instance(engine.dbs[0], instance) is None


def test_no_true_condition_and_no_default_is_an_incident_until_variables_change(
    engine: Any,
) -> None:
    _deploy(engine, "paths.bpmn")
    instance = create(engine, "paths", total=5)
    complete(engine, _job(engine, instance, "a"), result=1)
    complete(engine, _job(engine, instance, "b"))
    (incident,) = [r for r in engine.events(0) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.CONDITION_ERROR
    assert incident.value.element_id == "route"
    assert "no outgoing flow of route has a true condition" in incident.value.error_message

    update = VariableDocumentValue(scope_key=instance, variables='{"total": 500}')
    send(engine, command(VariableDocumentIntent.UPDATE, update))
    send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    steps = lifecycle(engine, instance)
    assert ("f-big", "SEQUENCE_FLOW_TAKEN") in steps and (
        "medium",
        "ELEMENT_ACTIVATING",
    ) not in steps
    assert steps[-1] == ("paths", "ELEMENT_COMPLETED")


def test_a_failing_input_mapping_is_an_incident_and_no_job(engine: Any) -> None:
    _deploy(engine, "bad-mapping.bpmn")
    instance = create(engine, "bad-mapping")
    (incident,) = [r for r in engine.events(0) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.IO_MAPPING_ERROR
    assert incident.value.element_id == "work"
    assert "nosuch" in incident.value.error_message
    assert jobs_of(engine, instance) == []
    assert ("work", "ELEMENT_ACTIVATED") not in lifecycle(engine, instance)
