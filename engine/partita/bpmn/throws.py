"""Throw and end events: none, error, terminate, escalation, signal, link and message ones (a
message throw or end event is a job, as in Zeebe)."""

from __future__ import annotations

from typing import Any

from partita.bpmn import activities, links
from partita.bpmn.errors import Problem
from partita.bpmn.events import (
    Errors,
    error_definition,
    escalation_definition,
    signal_definition,
)
from partita.bpmn.model import EventNode, FlowNode
from partita.bpmn.xml import BPMN, Node
from partita.elements import BpmnElementType, BpmnEventType


def throw_event(
    node: Node,
    common: dict[str, Any],
    errors: Errors,
    problems: list[Problem],
    *,
    escalations: Errors | None = None,
    signals: Errors | None = None,
) -> FlowNode | None:
    """End events (none, error, terminate, message) and none and message intermediate throw
    events (a message one is a job, as in Zeebe)."""
    element_id = node.attributes["id"]
    end = node.local == "endEvent"
    element_type = BpmnElementType.END_EVENT if end else BpmnElementType.INTERMEDIATE_THROW_EVENT
    definitions = [
        c
        for c in node.children
        if c.namespace == BPMN[1:-1] and c.local.endswith("EventDefinition")
    ]
    if not definitions:
        return FlowNode(element_type=element_type, event_type=BpmnEventType.NONE, **common)
    local = definitions[0].local
    if end and local == "errorEventDefinition":
        error = error_definition(element_id, definitions[0], errors, problems, catch=False)
        if error is None:
            return None
        return EventNode(
            element_type=element_type, event_type=BpmnEventType.ERROR, error=error, **common
        )
    if end and local == "terminateEventDefinition":
        return FlowNode(element_type=element_type, event_type=BpmnEventType.TERMINATE, **common)
    if local == "escalationEventDefinition":
        escalation = escalation_definition(
            element_id, definitions[0], escalations or {}, problems, catch=False
        )
        if escalation is None:
            return None
        return EventNode(
            element_type=element_type,
            event_type=BpmnEventType.ESCALATION,
            escalation=escalation,
            **common,
        )
    if local == "signalEventDefinition":  # broadcast when the event activates
        signal = signal_definition(element_id, definitions[0], signals or {}, problems)
        if signal is None:
            return None
        return EventNode(
            element_type=element_type, event_type=BpmnEventType.SIGNAL, signal=signal, **common
        )
    if local == "linkEventDefinition" and not end:
        return links.link_event(node, definitions[0], common, problems)
    if local == "messageEventDefinition":  # Zeebe runs message throw and end events as jobs
        if not activities.has_task_definition(node):
            problems.append(
                Problem(
                    element_id,
                    f'a message {node.local} needs <zeebe:taskDefinition type="..."/>: its'
                    " message is sent by a job worker",
                )
            )
            return None
        return activities.job_worker(node, problems, common, element_type, BpmnEventType.MESSAGE)
    kind = local.removesuffix("EventDefinition")
    problems.append(Problem(element_id, f"{kind} {node.local}s are not supported yet"))
    return None
