"""Compensation: the COMPENSATION_SUBSCRIPTION records of completed compensable activities, a
compensation end event invoking every handler of its scope (inside completed subprocesses too)
and completing after the last, a throw event naming one activity, the subscriptions deleted
when the instance ends, and Zeebe's deploy-time refusals; replay rebuilds the same state (the
fixture checks it after every scenario)."""

from __future__ import annotations

from typing import Any

import pytest

from partita.bpmn import BpmnValidationError, parse_bpmn
from partita.protocol.enums import BpmnEventType
from partita.protocol.intents import CompensationSubscriptionIntent as Compensation
from partita.protocol.intents import ProcessInstanceIntent
from partita.protocol.records import Record, command
from partita.protocol.values import ProcessInstanceValue
from tests.support.paths import CONFORMANCE
from tests.support.scenario_steps import all_events, complete, create, deploy, jobs_of, send

MODEL = (CONFORMANCE / "bpmn" / "compensation.bpmn").read_bytes()


def _start(engine: Any, failed: bool) -> int:
    deploy(engine, "compensation.bpmn", content={"compensation.bpmn": MODEL})
    instance = create(engine, "compensation", failed=failed)
    for job_type in ("book-hotel", "charge"):
        (job,) = [j for j in jobs_of(engine, instance) if j.value.type == job_type]
        complete(engine, job)
    return instance


def _subscriptions(engine: Any, instance: int) -> list[Record]:
    return [
        r
        for r in all_events(engine)
        if r.value_type.name == "COMPENSATION_SUBSCRIPTION"
        and r.value.process_instance_key == instance
    ]


def test_completed_activities_leave_subscriptions_a_compensation_end_event_triggers(
    engine: Any,
) -> None:
    instance = _start(engine, failed=True)
    records = _subscriptions(engine, instance)
    created = [
        (r.value.compensable_activity_id, r.value.compensation_handler_id)
        for r in records
        if r.intent is Compensation.CREATED
    ]
    assert created == [("book-hotel", "cancel-hotel"), ("charge", "refund"), ("payment", "")]
    by_id = {
        r.value.compensable_activity_id: r for r in records if r.intent is Compensation.CREATED
    }
    assert by_id["book-hotel"].value.compensable_activity_scope_key == instance
    assert (
        by_id["charge"].value.compensable_activity_scope_key
        == by_id["payment"].value.compensable_activity_instance_key
    )
    triggered = [r for r in records if r.intent is Compensation.TRIGGERED]
    assert sorted(r.value.compensable_activity_id for r in triggered) == [
        "book-hotel",
        "charge",
        "payment",
    ]
    assert {r.value.throw_event_id for r in triggered} == {"undo-all"}
    handlers = [j for j in jobs_of(engine, instance)]
    assert sorted(j.value.type for j in handlers) == ["cancel-hotel", "refund"]  # at once
    steps = [
        (r.value.element_id, r.intent.name)
        for r in all_events(engine)
        if r.value_type.name == "PROCESS_INSTANCE"
        and r.value.process_instance_key == instance
        and r.value.bpmn_event_type is BpmnEventType.COMPENSATION
    ]
    assert ("hotel-booked", "ELEMENT_COMPLETED") in steps  # the boundary event's four records
    assert ("undo-all", "ELEMENT_ACTIVATED") in steps
    assert ("undo-all", "ELEMENT_COMPLETED") not in steps  # waits for the handlers
    for job in handlers:
        complete(engine, job)
    records = _subscriptions(engine, instance)
    completed = [
        r.value.compensable_activity_id for r in records if r.intent is Compensation.COMPLETED
    ]
    assert sorted(completed) == ["book-hotel", "charge", "payment"]
    ended = [
        r.value.element_id
        for r in all_events(engine)
        if r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
        and r.value.process_instance_key == instance
    ]
    assert ended[-2:] == ["undo-all", "compensation"]
    handler = next(
        r
        for r in all_events(engine)
        if r.value_type.name == "PROCESS_INSTANCE" and r.value.element_id == "refund"
    )
    assert handler.value.flow_scope_key == instance  # in the throw event's scope, as in Zeebe


def test_an_instance_that_needs_no_compensation_deletes_its_subscriptions(engine: Any) -> None:
    instance = _start(engine, failed=False)
    deleted = [
        r.value.compensable_activity_id
        for r in _subscriptions(engine, instance)
        if r.intent is Compensation.DELETED
    ]
    assert sorted(deleted) == ["book-hotel", "charge", "payment"]


def test_cancelling_during_compensation_deletes_the_triggered_subscriptions(engine: Any) -> None:
    instance = _start(engine, failed=True)
    send(engine, command(ProcessInstanceIntent.CANCEL, ProcessInstanceValue(), key=instance))
    records = _subscriptions(engine, instance)
    deleted = sorted(
        r.value.compensable_activity_id for r in records if r.intent is Compensation.DELETED
    )
    assert deleted == ["book-hotel", "charge", "payment"]
    cancelled = {r.key for r in all_events(engine) if r.intent.name == "CANCELED"}
    handlers = [j for j in jobs_of(engine, instance) if j.value.type in ("refund", "cancel-hotel")]
    assert len(handlers) == 2 and all(j.key in cancelled for j in handlers)


def test_compensation_is_checked_at_deploy() -> None:
    xml = (
        '<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">'
        '<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s"/>'
        '<bpmn:sequenceFlow id="f" sourceRef="s" targetRef="t"/>'
        '<bpmn:manualTask id="t"/>'
        '<bpmn:boundaryEvent id="lonely" attachedToRef="t"><bpmn:compensateEventDefinition/>'
        "</bpmn:boundaryEvent>"
        '<bpmn:boundaryEvent id="soft" attachedToRef="t" cancelActivity="false">'
        "<bpmn:compensateEventDefinition/></bpmn:boundaryEvent>"
        '<bpmn:manualTask id="h" isForCompensation="true"/>'
        '<bpmn:association id="a" sourceRef="soft" targetRef="h"/>'
        '<bpmn:sequenceFlow id="g" sourceRef="h" targetRef="t"/>'
        '<bpmn:intermediateThrowEvent id="ghost"><bpmn:compensateEventDefinition'
        ' activityRef="nothing"/></bpmn:intermediateThrowEvent>'
        '<bpmn:endEvent id="quick"><bpmn:compensateEventDefinition waitForCompletion="false"/>'
        "</bpmn:endEvent>"
        "</bpmn:process></bpmn:definitions>"
    )
    with pytest.raises(BpmnValidationError) as error:
        parse_bpmn(xml.encode())
    problems = {str(p) for p in error.value.problems}
    assert {
        "lonely: Compensation boundary events must have a compensation association and no"
        " outgoing sequence flows",
        "soft: Non-Interrupting event of this type is not allowed",
        "h: A compensation handler should have no outgoing sequence flows",
        "ghost: The referenced compensation activity 'nothing' doesn't exist",
        "quick: A compensation end event waitForCompletion attribute must be true or not present",
    } <= problems
