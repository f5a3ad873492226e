"""Escalations: the ESCALATION records of a caught and an uncaught escalation, and the
validation of escalation events."""

from __future__ import annotations

from typing import Any

import pytest

from partita.bpmn import BpmnValidationError, parse_bpmn
from partita.protocol.intents import EscalationIntent
from tests.support.paths import CONFORMANCE
from tests.support.scenario_steps import all_events, create, deploy

ESCALATIONS = (CONFORMANCE / "bpmn" / "escalations.bpmn").read_bytes()


def test_caught_and_uncaught_escalations_are_recorded(engine: Any) -> None:
    deploy(engine, "escalations.bpmn", content={"escalations.bpmn": ESCALATIONS})
    instance = create(engine, "escalations", stuck=False)
    thrown = [
        (r.intent, r.value.escalation_code, r.value.throw_element_id, r.value.catch_element_id)
        for r in all_events(engine)
        if r.value_type.name == "ESCALATION" and r.value.process_instance_key == instance
    ]
    assert thrown == [
        (EscalationIntent.ESCALATED, "late", "running-late", "on-late"),
        (EscalationIntent.NOT_ESCALATED, "unheard", "shout", ""),
    ]


def test_escalation_events_are_validated() -> None:
    head = (
        '<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">'
        '<bpmn:escalation id="e" escalationCode="c"/><bpmn:escalation id="blank"/>'
        '<bpmn:message id="m" name="m"/>'
        '<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s"/>'
    )
    body = (
        '<bpmn:manualTask id="t"/>'
        '<bpmn:boundaryEvent id="b" attachedToRef="t"><bpmn:escalationEventDefinition '
        'escalationRef="e"/></bpmn:boundaryEvent>'
        '<bpmn:endEvent id="x"><bpmn:escalationEventDefinition escalationRef="blank"/>'
        "</bpmn:endEvent>"
        '<bpmn:endEvent id="y"><bpmn:escalationEventDefinition escalationRef="nope"/>'
        "</bpmn:endEvent>"
    )
    with pytest.raises(BpmnValidationError) as error:
        parse_bpmn((head + body + "</bpmn:process></bpmn:definitions>").encode())
    problems = [str(p) for p in error.value.problems]
    assert (
        "b: escalation boundary events can be attached to subprocesses and call activities"
        " only" in problems
    )
    assert "x: escalation 'blank' has no escalationCode" in problems
    assert "y: escalationRef 'nope' is not a bpmn:escalation" in problems
