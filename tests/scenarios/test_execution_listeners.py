"""Execution listeners (`zeebe:executionListeners`): the listener jobs between an element's
input mappings and its work and between its output mappings and its end, where their
variables go, their failures and incidents, cancellation, and Zeebe's deploy-time refusals;
replay rebuilds the same state (the fixture checks it after every scenario)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from partita.bpmn import BpmnValidationError, parse_bpmn
from partita.protocol.enums import ErrorType, JobKind, JobListenerEventType, RejectionType
from partita.protocol.intents import (
    IncidentIntent,
    JobIntent,
    ProcessInstanceIntent,
    VariableDocumentIntent,
    VariableIntent,
)
from partita.protocol.records import Record, command
from partita.protocol.values import (
    IncidentValue,
    JobValue,
    ProcessInstanceValue,
    VariableDocumentValue,
)
from tests.support.paths import CONFORMANCE
from tests.support.scenario_steps import complete, create, deploy, jobs_of, send

LISTENERS = (CONFORMANCE / "bpmn" / "execution-listeners.bpmn").read_bytes()


def _start(engine: Any, **variables: object) -> int:
    deploy(engine, "el.bpmn", content={"el.bpmn": LISTENERS})
    return create(engine, "execution-listeners", **({"amount": 5, "desk": "front"} | variables))


def _job(engine: Any, instance: int, job_type: str) -> Record:
    (job,) = [j for j in jobs_of(engine, instance) if j.value.type == job_type]
    return job


def _variables(engine: Any, instance: int) -> dict[tuple[str, int], Any]:
    """(name, scope key) -> last value, of the instance's variables."""
    return {
        (r.value.name, r.value.scope_key): json.loads(r.value.value)
        for r in engine.events(0)
        if r.intent in (VariableIntent.CREATED, VariableIntent.UPDATED)
        and r.value.process_instance_key == instance
    }


def test_start_listeners_run_between_the_input_mappings_and_the_work(engine: Any) -> None:
    instance = _start(engine)
    opened = _job(engine, instance, "open-file")
    assert opened.value.job_kind is JobKind.EXECUTION_LISTENER
    assert opened.value.listener_event_type is JobListenerEventType.START
    assert (opened.value.element_id, opened.value.element_instance_key) == (
        "execution-listeners",
        instance,
    )
    complete(engine, opened, origin="web")
    prepare = _job(engine, instance, "prepare")
    task_key = prepare.value.element_instance_key
    assert prepare.value.element_id == "work" and prepare.value.retries == 1
    assert prepare.value.custom_headers == {"desk": "claims"}  # the element's headers
    complete(engine, prepare, prepared=True)
    check = _job(engine, instance, "check-front")  # a FEEL type, seeing the process's variables
    complete(engine, check)
    work = _job(engine, instance, "work")
    assert work.value.job_kind is JobKind.BPMN_ELEMENT
    assert work.value.listener_event_type is JobListenerEventType.UNSPECIFIED
    steps = [
        (r.value_type.name, r.intent.name, getattr(r.value, "type", ""))
        for r in engine.records(0)
        if r.key == task_key or getattr(r.value, "element_instance_key", 0) == task_key
    ]
    activating = steps.index(("PROCESS_INSTANCE", "ELEMENT_ACTIVATING", ""))
    assert steps[activating:] == [
        ("PROCESS_INSTANCE", "ELEMENT_ACTIVATING", ""),
        ("JOB", "CREATED", "prepare"),
        ("JOB", "COMPLETED", "prepare"),
        ("JOB", "CREATED", "check-front"),
        ("JOB", "COMPLETED", "check-front"),
        ("JOB", "CREATED", "work"),
        ("PROCESS_INSTANCE", "ELEMENT_ACTIVATED", ""),
    ]
    variables = _variables(engine, instance)
    assert variables[("doubled", task_key)] == 10  # the input mapping, before the listeners
    assert variables[("prepared", task_key)] is True  # a start listener's: local
    assert variables[("origin", instance)] == "web"  # the process's start listener's


def test_end_listeners_run_after_the_output_and_set_the_flow_scope(engine: Any) -> None:
    instance = _start(engine)
    for job_type in ("open-file", "prepare", "check-front"):
        complete(engine, _job(engine, instance, job_type))
    complete(engine, _job(engine, instance, "work"), result=42)
    audit = _job(engine, instance, "audit")
    assert audit.value.listener_event_type is JobListenerEventType.END
    task_key = audit.value.element_instance_key
    states = [
        r.intent
        for r in engine.events(0)
        if r.key == task_key and r.value_type.name == "PROCESS_INSTANCE"
    ]
    assert states[-1] is ProcessInstanceIntent.ELEMENT_COMPLETING  # waits for the listener
    complete(engine, audit, audited=True)
    route = _job(engine, instance, "route")  # the gateway's start listener
    complete(engine, route, large=True)  # local to the gateway, which its conditions see
    closing = _job(engine, instance, "close-file")
    complete(engine, closing, closed=True)
    variables = _variables(engine, instance)
    assert variables[("audited", instance)] is True
    assert variables[("large", route.value.element_instance_key)] is True
    assert ("large", instance) not in variables
    assert variables[("closed", instance)] is True
    passed = {
        r.value.element_id
        for r in engine.events(0)
        if r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
        and r.value.process_instance_key == instance
    }
    assert {"big-end", "execution-listeners"} <= passed and "small-end" not in passed


def test_a_listener_job_cannot_throw_a_bpmn_error(engine: Any) -> None:
    instance = _start(engine)
    opened = _job(engine, instance, "open-file")
    (rejection,) = send(
        engine,
        command(JobIntent.THROW_ERROR, JobValue(error_code="oops"), key=opened.key),
    )
    assert rejection.rejection_type is RejectionType.INVALID_STATE
    assert rejection.rejection_reason == (
        f"Cannot throw BPMN error from EXECUTION_LISTENER job with key '{opened.key}',"
        f" type 'open-file' and processInstanceKey '{instance}'"
    )


def test_a_listener_out_of_retries_is_an_incident_that_retries_only_that_listener(
    engine: Any,
) -> None:
    instance = _start(engine)
    complete(engine, _job(engine, instance, "open-file"))
    prepare = _job(engine, instance, "prepare")
    send(
        engine, command(JobIntent.FAIL, JobValue(retries=0, error_message="down"), key=prepare.key)
    )
    (incident,) = [r for r in engine.events(0) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.EXECUTION_LISTENER_NO_RETRIES
    assert incident.value.job_key == prepare.key and incident.value.error_message == "down"
    send(engine, command(JobIntent.UPDATE_RETRIES, JobValue(retries=1), key=prepare.key))
    send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    complete(engine, prepare)  # the same job again, not a new one
    complete(engine, _job(engine, instance, "check-front"))
    assert _job(engine, instance, "work").value.job_kind is JobKind.BPMN_ELEMENT
    created = [r.value.type for r in engine.events(0) if r.intent is JobIntent.CREATED]
    assert created.count("prepare") == 1


def test_a_listener_type_that_cannot_be_evaluated_reruns_every_start_listener(
    engine: Any,
) -> None:
    instance = _start(engine, desk=None)
    complete(engine, _job(engine, instance, "open-file"))
    complete(engine, _job(engine, instance, "prepare"))
    (incident,) = [r for r in engine.events(0) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.EXTRACT_VALUE_ERROR
    assert incident.value.element_id == "work" and "work:" in incident.value.error_message
    document = VariableDocumentValue(scope_key=instance, variables=json.dumps({"desk": "back"}))
    results = send(engine, command(VariableDocumentIntent.UPDATE, document))
    assert VariableDocumentIntent.UPDATED in [r.intent for r in results]
    send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    complete(engine, _job(engine, instance, "prepare"))  # from the first listener again
    complete(engine, _job(engine, instance, "check-back"))
    assert _job(engine, instance, "work").value.job_kind is JobKind.BPMN_ELEMENT


def test_cancelling_an_instance_cancels_the_open_listener_job(engine: Any) -> None:
    instance = _start(engine)
    opened = _job(engine, instance, "open-file")
    send(engine, command(ProcessInstanceIntent.CANCEL, ProcessInstanceValue(), key=instance))
    assert [r.intent for r in engine.events(0) if r.key == opened.key][-1] is JobIntent.CANCELED
    assert not [j for j in jobs_of(engine, instance) if j.key != opened.key]


def test_listeners_are_refused_where_zeebe_refuses_them() -> None:
    def listeners(*pairs: tuple[str, str]) -> str:
        inner = "".join(
            f'<zeebe:executionListener eventType="{event}" type="{job_type}"/>'
            for event, job_type in pairs
        )
        return (
            "<bpmn:extensionElements><zeebe:executionListeners>"
            f"{inner}</zeebe:executionListeners></bpmn:extensionElements>"
        )

    xml = (
        '<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"'
        ' xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">'
        '<bpmn:error id="e" errorCode="E"/>'
        '<bpmn:process id="p" isExecutable="true">'
        f'<bpmn:startEvent id="s">{listeners(("start", "a"))}</bpmn:startEvent>'
        f'<bpmn:manualTask id="t">{listeners(("end", "a"), ("end", "a"))}</bpmn:manualTask>'
        f'<bpmn:boundaryEvent id="b" attachedToRef="t">{listeners(("start", "a"))}'
        "<bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration>"
        "</bpmn:timerEventDefinition></bpmn:boundaryEvent>"
        f'<bpmn:parallelGateway id="g">{listeners(("end", "a"))}</bpmn:parallelGateway>'
        f'<bpmn:endEvent id="x">{listeners(("end", "a"))}'
        '<bpmn:errorEventDefinition errorRef="e"/></bpmn:endEvent>'
        f'<bpmn:endEvent id="y">{listeners(("finish", "a"))}</bpmn:endEvent>'
        "</bpmn:process></bpmn:definitions>"
    )
    with pytest.raises(BpmnValidationError) as error:
        parse_bpmn(xml.encode())
    problems = {str(p) for p in error.value.problems}
    assert {
        "s: Execution listeners of type 'start' are not supported by start events",
        "b: Execution listeners of type 'start' are not supported by boundary events",
        "g: Execution listeners of type 'end' are not supported by gateway element",
        "x: Execution listeners of type 'end' are not supported by [error] end events",
        "t: Found '2' duplicates based on eventType[end] and type[a], these combinations"
        " should be unique.",
        "y: an execution listener's eventType must be start or end, not 'finish'",
    } <= problems


MULTI = b"""<?xml version="1.0"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
 xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
<bpmn:process id="multi" isExecutable="true"><bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="each"/>
<bpmn:serviceTask id="each"><bpmn:extensionElements><zeebe:taskDefinition type="each"/>
<zeebe:executionListeners><zeebe:executionListener eventType="start" type="before-each"/>
</zeebe:executionListeners></bpmn:extensionElements>
<bpmn:multiInstanceLoopCharacteristics isSequential="false"><bpmn:extensionElements>
<zeebe:loopCharacteristics inputCollection="=items" inputElement="item"/></bpmn:extensionElements>
</bpmn:multiInstanceLoopCharacteristics></bpmn:serviceTask>
<bpmn:sequenceFlow id="f2" sourceRef="each" targetRef="e"/><bpmn:endEvent id="e"/>
</bpmn:process></bpmn:definitions>"""


def test_a_multi_instance_activity_runs_its_listeners_on_each_inner_instance(engine: Any) -> None:
    deploy(engine, "multi.bpmn", content={"multi.bpmn": MULTI})
    instance = create(engine, "multi", items=[1, 2])
    listeners = [j for j in jobs_of(engine, instance) if j.value.type == "before-each"]
    bodies = {
        r.key
        for r in engine.events(0)
        if r.value_type.name == "PROCESS_INSTANCE"
        and r.value.bpmn_element_type.name == "MULTI_INSTANCE_BODY"
    }
    assert len(listeners) == 2  # one per inner instance, none for the body
    assert not {j.value.element_instance_key for j in listeners} & bodies
    for job in listeners:
        complete(engine, job)
    for job in [j for j in jobs_of(engine, instance) if j.value.type == "each"]:
        complete(engine, job)
    ended = [
        r.value.element_id
        for r in engine.events(0)
        if r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
        and r.value.process_instance_key == instance
    ]
    assert ended[-1] == "multi"
