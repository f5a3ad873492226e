"""Message and timer events: start events, intermediate catch events, boundary events, receive
tasks and the event-based gateway, with their validation.

Messages are declared at the definitions level (`<bpmn:message id name>` with
`<zeebe:subscription correlationKey>`) and referenced by `messageRef`. Timers carry exactly one
of `timeDuration`, `timeDate`, `timeCycle`.
"""

from __future__ import annotations

from typing import Any

from partita.bpmn import links
from partita.bpmn.errors import Problem
from partita.bpmn.model import (
    ErrorDefinition,
    EscalationDefinition,
    EventBasedGateway,
    EventNode,
    FlowNode,
    MessageDefinition,
    SequenceFlow,
    SignalDefinition,
    TimerDefinition,
)
from partita.bpmn.xml import BPMN, ZEEBE, Node
from partita.elements import BpmnElementType, BpmnEventType

Messages = dict[str, tuple[str, str]]
"""Message id -> (name, correlation key) of the definitions' `bpmn:message` elements."""

_TIMER_KINDS = {"timeDuration": "duration", "timeDate": "date", "timeCycle": "cycle"}
_UNSUPPORTED_DEFINITIONS = {
    "terminateEventDefinition": "terminate",
    "linkEventDefinition": "link",
    "conditionalEventDefinition": "conditional",
}
ACTIVITIES = {
    BpmnElementType.SERVICE_TASK,
    BpmnElementType.SEND_TASK,
    BpmnElementType.SCRIPT_TASK,
    BpmnElementType.BUSINESS_RULE_TASK,
    BpmnElementType.USER_TASK,
    BpmnElementType.RECEIVE_TASK,
    BpmnElementType.SUB_PROCESS,
    BpmnElementType.CALL_ACTIVITY,
}
"""Activities boundary events may be attached to (so far)."""

_SCOPES = {BpmnElementType.SUB_PROCESS, BpmnElementType.CALL_ACTIVITY}
"""Where an escalation can come from: what escalation boundary events attach to."""

Errors = dict[str, str]
"""Error id -> errorCode of the definitions' `bpmn:error` elements."""


def escalations_of(definitions: Node) -> Errors:
    """Escalation id -> escalationCode of the definitions' `bpmn:escalation` elements."""
    return {
        node.attributes.get("id", ""): node.attributes.get("escalationCode", "").strip()
        for node in definitions.find_all(BPMN + "escalation")
    }


def escalation_definition(
    element_id: str, definition: Node, escalations: Errors, problems: list[Problem], *, catch: bool
) -> EscalationDefinition | None:
    ref = definition.attributes.get("escalationRef", "")
    if not ref:
        if catch:
            return EscalationDefinition("")  # catches every escalation
        problems.append(Problem(element_id, "an escalation throw event needs an escalationRef"))
        return None
    if ref not in escalations:
        problems.append(Problem(element_id, f"escalationRef '{ref}' is not a bpmn:escalation"))
        return None
    if not escalations[ref] and not catch:
        problems.append(Problem(element_id, f"escalation '{ref}' has no escalationCode"))
        return None
    return EscalationDefinition(escalations[ref])


def signals_of(definitions: Node) -> Errors:
    """Signal id -> name of the definitions' `bpmn:signal` elements."""
    return {
        node.attributes.get("id", ""): node.attributes.get("name", "").strip()
        for node in definitions.find_all(BPMN + "signal")
    }


def signal_definition(
    element_id: str, definition: Node, signals: Errors, problems: list[Problem]
) -> SignalDefinition | None:
    ref = definition.attributes.get("signalRef", "")
    if ref not in signals:
        what = (
            f"signalRef '{ref}' is not a bpmn:signal" if ref else "a signal event needs a signalRef"
        )
        problems.append(Problem(element_id, what))
        return None
    if not signals[ref]:
        problems.append(Problem(element_id, f"signal '{ref}' has no name"))
        return None
    return SignalDefinition(signals[ref])


def errors_of(definitions: Node) -> Errors:
    return {
        node.attributes.get("id", ""): node.attributes.get("errorCode", "").strip()
        for node in definitions.find_all(BPMN + "error")
    }


def error_definition(
    element_id: str, definition: Node, errors: Errors, problems: list[Problem], *, catch: bool
) -> ErrorDefinition | None:
    ref = definition.attributes.get("errorRef", "")
    if not ref:
        if catch:
            return ErrorDefinition("")  # catches every error
        problems.append(Problem(element_id, "an error end event needs an errorRef"))
        return None
    if ref not in errors:
        problems.append(Problem(element_id, f"errorRef '{ref}' is not a bpmn:error"))
        return None
    if not errors[ref] and not catch:
        problems.append(Problem(element_id, f"error '{ref}' has no errorCode"))
        return None
    return ErrorDefinition(errors[ref])


def messages_of(definitions: Node) -> Messages:
    found: Messages = {}
    for node in definitions.find_all(BPMN + "message"):
        extensions = node.find(BPMN + "extensionElements")
        subscription = extensions.find(ZEEBE + "subscription") if extensions is not None else None
        key = subscription.attributes.get("correlationKey", "") if subscription is not None else ""
        found[node.attributes.get("id", "")] = (node.attributes.get("name", ""), key.strip())
    return found


def _message(
    element_id: str, message_id: str, messages: Messages, problems: list[Problem], *, start: bool
) -> MessageDefinition | None:
    if not message_id:
        problems.append(Problem(element_id, "a message event needs a messageRef"))
        return None
    if message_id not in messages:
        problems.append(Problem(element_id, f"messageRef '{message_id}' is not a bpmn:message"))
        return None
    name, correlation_key = messages[message_id]
    if not name.strip():
        problems.append(Problem(element_id, f"message '{message_id}' has no name"))
        return None
    if not start and not correlation_key:
        problems.append(
            Problem(
                element_id,
                f"message '{message_id}' needs <zeebe:subscription correlationKey=\"...\"/>",
            )
        )
        return None
    return MessageDefinition(name.strip(), correlation_key)


def _timer(element_id: str, definition: Node, problems: list[Problem]) -> TimerDefinition | None:
    found = [
        (kind, child.text.strip())
        for child in definition.children
        if (kind := _TIMER_KINDS.get(child.local)) is not None
    ]
    if len(found) != 1 or not found[0][1]:
        problems.append(
            Problem(element_id, "a timer needs exactly one of timeDuration, timeDate, timeCycle")
        )
        return None
    return TimerDefinition(*found[0])


def event_node(
    node: Node,
    common: dict[str, Any],
    messages: Messages,
    errors: Errors,
    problems: list[Problem],
    *,
    escalations: Errors | None = None,
    signals: Errors | None = None,
) -> FlowNode | None:
    """The model of a start, intermediate catch or boundary event, or a receive task; None
    (with a problem) when it is not supported or not valid."""
    element_id = node.attributes["id"]
    local = node.local
    if local == "receiveTask":
        message = _message(
            element_id, node.attributes.get("messageRef", ""), messages, problems, start=False
        )
        if message is None:
            return None
        return EventNode(
            element_type=BpmnElementType.RECEIVE_TASK,
            event_type=BpmnEventType.UNSPECIFIED,
            message=message,
            **common,
        )
    definitions = [c for c in node.children if c.namespace == BPMN[1:-1]]
    link = next((c for c in definitions if c.local == "linkEventDefinition"), None)
    if link is not None and local == "intermediateCatchEvent":
        return links.link_event(node, link, common, problems)
    for child in definitions:
        if child.local in _UNSUPPORTED_DEFINITIONS:
            kind = _UNSUPPORTED_DEFINITIONS[child.local]
            problems.append(Problem(element_id, f"{kind} {local}s are not supported yet"))
            return None
    message_node = next((c for c in definitions if c.local == "messageEventDefinition"), None)
    timer_node = next((c for c in definitions if c.local == "timerEventDefinition"), None)
    error_node = next((c for c in definitions if c.local == "errorEventDefinition"), None)
    start = local == "startEvent"
    element_type = {
        "startEvent": BpmnElementType.START_EVENT,
        "intermediateCatchEvent": BpmnElementType.INTERMEDIATE_CATCH_EVENT,
        "boundaryEvent": BpmnElementType.BOUNDARY_EVENT,
    }[local]
    extra: dict[str, Any] = {}
    if local == "boundaryEvent":
        extra["attached_to"] = node.attributes.get("attachedToRef", "")
        extra["interrupting"] = node.attributes.get("cancelActivity", "true").lower() != "false"
    if start:
        extra["interrupting"] = node.attributes.get("isInterrupting", "true").lower() != "false"
    if error_node is not None:
        if local == "intermediateCatchEvent":
            problems.append(
                Problem(element_id, "error intermediate catch events do not exist in BPMN")
            )
            return None
        error = error_definition(element_id, error_node, errors, problems, catch=True)
        if error is None:
            return None
        if local == "boundaryEvent" and not extra["interrupting"]:
            problems.append(Problem(element_id, "an error boundary event is always interrupting"))
        return EventNode(
            element_type=element_type,
            event_type=BpmnEventType.ERROR,
            error=error,
            **{**extra, "interrupting": True},
            **common,
        )
    escalation_node = next((c for c in definitions if c.local == "escalationEventDefinition"), None)
    if escalation_node is not None:
        if local == "intermediateCatchEvent":
            problems.append(
                Problem(element_id, "escalation intermediate catch events do not exist in BPMN")
            )
            return None
        escalation = escalation_definition(
            element_id, escalation_node, escalations or {}, problems, catch=True
        )
        if escalation is None:
            return None
        return EventNode(
            element_type=element_type,
            event_type=BpmnEventType.ESCALATION,
            escalation=escalation,
            **extra,
            **common,
        )
    signal_node = next((c for c in definitions if c.local == "signalEventDefinition"), None)
    if signal_node is not None:
        signal = signal_definition(element_id, signal_node, signals or {}, problems)
        if signal is None:
            return None
        return EventNode(
            element_type=element_type,
            event_type=BpmnEventType.SIGNAL,
            signal=signal,
            **extra,
            **common,
        )
    if message_node is not None:
        ref = message_node.attributes.get("messageRef", "")
        message = _message(element_id, ref, messages, problems, start=start)
        if message is None:
            return None
        return EventNode(
            element_type=element_type,
            event_type=BpmnEventType.MESSAGE,
            message=message,
            **extra,
            **common,
        )
    if timer_node is not None:
        timer = _timer(element_id, timer_node, problems)
        if timer is None:
            return None
        return EventNode(
            element_type=element_type,
            event_type=BpmnEventType.TIMER,
            timer=timer,
            **extra,
            **common,
        )
    if start:
        return FlowNode(element_type=element_type, event_type=BpmnEventType.NONE, **common)
    what = "boundary events" if local == "boundaryEvent" else "intermediate catch events"
    problems.append(Problem(element_id, f"{what} need a message, timer or signal definition"))
    return None


def event_based_gateway(common: dict[str, Any]) -> EventBasedGateway:
    return EventBasedGateway(element_type=BpmnElementType.EVENT_BASED_GATEWAY, **common)


def validate_events(
    elements: dict[str, FlowNode],
    flows: dict[str, SequenceFlow],
    problems: list[Problem],
) -> dict[str, tuple[str, ...]]:
    """Check boundary events and event-based gateways; returns activity -> boundary ids."""
    boundaries: dict[str, list[str]] = {}
    for element in elements.values():
        if isinstance(element, EventNode) and element.attached_to is not None:
            activity = elements.get(element.attached_to)
            if activity is None:
                problems.append(
                    Problem(element.id, f"attachedToRef '{element.attached_to}' is not an element")
                )
            elif element.compensation:
                boundaries.setdefault(activity.id, []).append(element.id)
            elif element.escalation is not None and activity.element_type not in _SCOPES:
                problems.append(
                    Problem(
                        element.id,
                        "escalation boundary events can be attached to subprocesses and call"
                        " activities only",
                    )
                )
            elif activity.element_type not in ACTIVITIES:
                problems.append(
                    Problem(
                        element.id,
                        "boundary events can be attached to service and receive tasks only"
                        f" (so far), not to {activity.element_type.name.lower()}",
                    )
                )
            else:
                boundaries.setdefault(activity.id, []).append(element.id)
            if element.incoming:
                problems.append(Problem(element.id, "a boundary event cannot have incoming flows"))
        if isinstance(element, EventBasedGateway):
            _validate_event_gateway(element, elements, flows, problems)
    for activity_id, ids in boundaries.items():
        _unique_messages(activity_id, [elements[i] for i in ids], problems)
    return {activity: tuple(ids) for activity, ids in boundaries.items()}


def _validate_event_gateway(
    gateway: EventBasedGateway,
    elements: dict[str, FlowNode],
    flows: dict[str, SequenceFlow],
    problems: list[Problem],
) -> None:
    if len(gateway.outgoing) < 2:
        problems.append(
            Problem(gateway.id, "an event-based gateway needs two or more outgoing flows")
        )
    targets = []
    for flow_id in gateway.outgoing:
        target = elements.get(flows[flow_id].target)
        if (
            not isinstance(target, EventNode)
            or target.element_type is not BpmnElementType.INTERMEDIATE_CATCH_EVENT
        ):
            problems.append(
                Problem(
                    flow_id,
                    "an event-based gateway's flows must lead to message, timer or signal"
                    " intermediate catch events",
                )
            )
            continue
        if len(target.incoming) > 1:
            problems.append(
                Problem(
                    target.id, "a catch event after an event-based gateway needs one incoming flow"
                )
            )
        targets.append(target)
    _unique_messages(gateway.id, targets, problems)


def _unique_messages(owner: str, events: list[Any], problems: list[Problem]) -> None:
    names = [e.message.name for e in events if isinstance(e, EventNode) and e.message]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        problems.append(
            Problem(owner, f"waits for the same message twice: {', '.join(duplicates)}")
        )
