"""Compensation, as Zeebe 8.5+ models it: a compensation boundary event on an activity, joined by
an association to its handler (an activity with `isForCompensation="true"`, no sequence flows);
compensation intermediate throw and end events (`compensateEventDefinition`, optionally naming
one `activityRef`, always waiting for the handlers). Refused with Zeebe's reasons where Zeebe
refuses them; compensation event subprocesses are not supported (nor are they in Zeebe 8.8)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from partita.bpmn.errors import Problem
from partita.bpmn.model import EventNode, FlowNode, SubProcess
from partita.bpmn.xml import BPMN, Node
from partita.elements import BpmnElementType, BpmnEventType

_KINDS = {
    "boundaryEvent": BpmnElementType.BOUNDARY_EVENT,
    "intermediateThrowEvent": BpmnElementType.INTERMEDIATE_THROW_EVENT,
    "endEvent": BpmnElementType.END_EVENT,
}
_TASKS = {
    BpmnElementType.SERVICE_TASK,
    BpmnElementType.SEND_TASK,
    BpmnElementType.SCRIPT_TASK,
    BpmnElementType.BUSINESS_RULE_TASK,
    BpmnElementType.USER_TASK,
    BpmnElementType.RECEIVE_TASK,
    BpmnElementType.MANUAL_TASK,
    BpmnElementType.TASK,
}


def definition(node: Node) -> Node | None:
    """The node's `compensateEventDefinition`, if it has one."""
    return next(
        (
            c
            for c in node.children
            if c.namespace == BPMN[1:-1] and c.local == "compensateEventDefinition"
        ),
        None,
    )


def compensation_event(
    node: Node, found: Node, common: dict[str, Any], problems: list[Problem]
) -> EventNode | None:
    """A compensation boundary, intermediate throw or end event (`found`: its definition)."""
    element_id = node.attributes["id"]
    kind = _KINDS.get(node.local)
    if kind is None:
        problems.append(
            Problem(element_id, f"compensation {node.local}s are not supported (nor in Zeebe 8.8)")
        )
        return None
    extra: dict[str, Any] = {}
    if kind is BpmnElementType.BOUNDARY_EVENT:
        extra["attached_to"] = node.attributes.get("attachedToRef", "")
        if node.attributes.get("cancelActivity", "true").lower() == "false":
            problems.append(
                Problem(element_id, "Non-Interrupting event of this type is not allowed")
            )
    else:
        wait = found.attributes.get("waitForCompletion", "true").strip().lower()
        if wait != "true":
            what = "intermediate throwing event" if node.local != "endEvent" else "end event"
            problems.append(
                Problem(
                    element_id,
                    f"A compensation {what} waitForCompletion attribute must be true or not"
                    " present",
                )
            )
        extra["activity_ref"] = found.attributes.get("activityRef", "").strip()
    return EventNode(
        element_type=kind,
        event_type=BpmnEventType.COMPENSATION,
        compensation=True,
        **extra,
        **common,
    )


def associations(process: Node) -> dict[str, str]:
    """Source -> target of every `bpmn:association` in the process, subprocesses' included."""
    found: dict[str, str] = {}

    def walk(node: Node) -> None:
        for child in node.children:
            if child.namespace != BPMN[1:-1]:
                continue
            if child.local == "association":
                found[child.attributes.get("sourceRef", "")] = child.attributes.get("targetRef", "")
            elif child.local in ("subProcess", "adHocSubProcess"):
                walk(child)

    walk(process)
    return found


def resolve(elements: dict[str, FlowNode], linked: dict[str, str], problems: list[Problem]) -> None:
    """Give each compensation boundary event its handler and check the handlers and the
    throw events' `activityRef`, in place."""
    for element in list(elements.values()):
        if not isinstance(element, EventNode) or not element.compensation:
            continue
        if element.attached_to is not None:
            _boundary(element, elements, linked, problems)
        elif element.activity_ref:
            _reference(element, elements, problems)
    for element in elements.values():
        if not element.for_compensation:
            continue
        if element.incoming:
            problems.append(
                Problem(element.id, "A compensation handler should have no incoming sequence flows")
            )
        if element.outgoing:
            problems.append(
                Problem(element.id, "A compensation handler should have no outgoing sequence flows")
            )
        if element.element_type in _TASKS and any(
            isinstance(e, EventNode) and e.attached_to == element.id for e in elements.values()
        ):
            problems.append(
                Problem(element.id, "A compensation handler should have no boundary events")
            )


def _boundary(
    event: EventNode,
    elements: dict[str, FlowNode],
    linked: dict[str, str],
    problems: list[Problem],
) -> None:
    handler = linked.get(event.id, "")
    if event.outgoing or not handler:
        problems.append(
            Problem(
                event.id,
                "Compensation boundary events must have a compensation association and no"
                " outgoing sequence flows",
            )
        )
        return
    target = elements.get(handler)
    if target is None or not target.for_compensation:
        problems.append(
            Problem(
                event.id,
                f"the association leads to '{handler}', which is not an activity with"
                ' isForCompensation="true"',
            )
        )
        return
    if event.start_listeners or event.end_listeners:
        problems.append(
            Problem(
                event.id,
                "Execution listeners of type 'start' and 'end' are not supported by"
                " [compensation] boundary events",
            )
        )
    elements[event.id] = replace(event, compensation_handler=handler)


def _reference(event: EventNode, elements: dict[str, FlowNode], problems: list[Problem]) -> None:
    ref = event.activity_ref
    activity = elements.get(ref)
    if activity is None:
        problems.append(
            Problem(event.id, f"The referenced compensation activity '{ref}' doesn't exist")
        )
        return
    scopes = {event.scope}
    parent = elements.get(event.scope)
    if isinstance(parent, SubProcess) and parent.triggered_by_event:
        scopes.add(parent.scope)  # an event subprocess compensates its parent's scope too
    if activity.scope not in scopes:
        problems.append(
            Problem(
                event.id,
                f"The referenced compensation activity '{ref}' must be in the same scope as the"
                " compensation throw event",
            )
        )
        return
    compensable = any(
        isinstance(e, EventNode) and e.compensation and e.attached_to == ref
        for e in elements.values()
    )
    is_subprocess = isinstance(activity, SubProcess) and not activity.triggered_by_event
    if not compensable and not is_subprocess:
        problems.append(
            Problem(
                event.id,
                f"The referenced compensation activity '{ref}' must have either a compensation"
                " boundary event or be a subprocess",
            )
        )
